//! The run summary written to `summary.json`: FCT and slowdown statistics
//! overall and per flow-size bucket, throughput, drops, speed, and for a
//! run with scheduled network changes the same per phase (see
//! [`super::phases`]).
//!
//! Percentiles are nearest-rank: the p-th percentile of n sorted values is
//! the value at rank ⌈p/100 · n⌉ (1-based). Statistics of empty sets are
//! `null`, never NaN.

use super::phases::{phases, FaultEntry, Phase};
use super::{Counters, DropReason, DropSite, FlowResult, RunOutput};
use serde::Serialize;
use std::collections::BTreeMap;

/// What `packets.parquet` holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceStats {
    /// Rows written.
    pub rows: u64,
    /// More rows passed the trace's filters than `max_rows` kept (the
    /// earliest were kept).
    pub truncated: bool,
}

/// Default upper edges of the size buckets: (0, 100 KB], (100 KB, 1 MB],
/// (1 MB, 10 MB], (10 MB, ∞) — the buckets pFabric and pHost report.
pub const DEFAULT_BUCKETS: &[u64] = &[100_000, 1_000_000, 10_000_000];

/// Flows smaller than this are "short" (the pHost and pFabric papers'
/// short-flow breakdown: < 100 KB).
pub const SHORT_FLOW_BYTES: u64 = 100_000;

/// Flows of at least this size are "long" (the papers' [10 MB, ∞) class).
pub const LONG_FLOW_BYTES: u64 = 10_000_000;

/// Count, mean and percentiles of one metric.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    /// Number of values.
    pub count: usize,
    /// Mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
}

impl Stats {
    /// Statistics of `values` (any order).
    pub fn of(mut values: Vec<f64>) -> Stats {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        // Ranks in integer per-mille, so that p99.9 of 1000 values is the
        // 999th, not the 1000th through floating-point rounding.
        let pct = |per_mille: usize| {
            if n == 0 {
                None
            } else {
                let rank = (per_mille * n).div_ceil(1000).max(1);
                Some(values[rank.min(n) - 1])
            }
        };
        Stats {
            count: n,
            mean: (n > 0).then(|| values.iter().sum::<f64>() / n as f64),
            p50: pct(500),
            p99: pct(990),
            p999: pct(999),
            max: values.last().copied(),
        }
    }
}

/// Statistics of the flows in one size bucket.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Bucket {
    /// Label such as `"100KB-1MB"`.
    pub label: String,
    /// Sizes above this (bytes) ...
    pub above_bytes: u64,
    /// ... and at most this (`None`: no upper bound).
    pub up_to_bytes: Option<u64>,
    /// Flows in the bucket.
    pub flows: usize,
    /// Slowdown of the finished ones.
    pub slowdown: Stats,
    /// FCT of the finished ones, microseconds.
    pub fct_us: Stats,
}

/// Statistics of one class of flows (short or long), finished flows only.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowClass {
    /// Which sizes belong to the class, e.g. `"< 100KB"`.
    pub sizes: String,
    /// Flows in the class.
    pub flows: usize,
    /// Slowdown of its finished flows.
    pub slowdown: Stats,
    /// FCT of its finished flows, microseconds.
    pub fct_us: Stats,
}

impl FlowClass {
    fn of(flows: &[&FlowResult], all: usize, sizes: String) -> FlowClass {
        FlowClass {
            sizes,
            flows: all,
            slowdown: Stats::of(flows.iter().filter_map(|f| f.slowdown()).collect()),
            fct_us: Stats::of(flows.iter().filter_map(|f| fct_us(f)).collect()),
        }
    }
}

/// Per-host delivery: each sending host's bytes delivered over bytes it
/// offered, summarised over the hosts that offered any.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PerHostThroughput {
    /// Hosts that offered traffic.
    pub hosts: usize,
    /// Mean over those hosts of delivered / offered.
    pub mean_fraction: Option<f64>,
    /// The worst host's delivered / offered.
    pub min_fraction: Option<f64>,
}

impl PerHostThroughput {
    fn of(flows: &[FlowResult]) -> PerHostThroughput {
        let mut by_host: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for f in flows {
            let e = by_host.entry(f.src.0).or_default();
            e.0 += f.size_bytes;
            e.1 += f.bytes_received;
        }
        let fractions: Vec<f64> = by_host
            .values()
            .filter(|(offered, _)| *offered > 0)
            .map(|&(offered, received)| received as f64 / offered as f64)
            .collect();
        let n = fractions.len();
        PerHostThroughput {
            hosts: n,
            mean_fraction: (n > 0).then(|| fractions.iter().sum::<f64>() / n as f64),
            min_fraction: fractions.iter().copied().reduce(f64::min),
        }
    }
}

/// Bytes offered and received.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Throughput {
    /// Sum of flow sizes.
    pub bytes_offered: u64,
    /// Payload bytes delivered in order.
    pub bytes_received: u64,
    /// Received / offered.
    pub fraction_received: Option<f64>,
    /// Received payload over the simulated time, Gbit/s.
    pub goodput_gbps: Option<f64>,
    /// Delivered / offered per sending host.
    pub per_host: PerHostThroughput,
}

/// The packet books: sent + made = delivered + dropped + in flight.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Conservation {
    /// Whether the books balance for data and control packets.
    pub ok: bool,
    /// Sent, by kind (`data`, `control`).
    pub sent: BTreeMap<String, u64>,
    /// Made by switches (notices to sources), by kind.
    pub made: BTreeMap<String, u64>,
    /// Delivered, by kind.
    pub delivered: BTreeMap<String, u64>,
    /// Still in queues or on links at the end, by kind.
    pub in_flight: BTreeMap<String, u64>,
}

/// Everything `summary.json` says about a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Protocol name.
    pub protocol: String,
    /// Run seed.
    pub seed: u64,
    /// Why the run ended.
    pub stop_reason: String,
    /// Number of flows.
    pub flows: usize,
    /// Flows that finished.
    pub finished: usize,
    /// Flows that did not.
    pub unfinished: usize,
    /// Of those, flows whose start the run never reached (they start at or
    /// after its end: a time limit before their start).
    pub not_started: usize,
    /// Slowdown (FCT / ideal FCT) of finished flows.
    pub slowdown: Stats,
    /// FCT of finished flows, microseconds.
    pub fct_us: Stats,
    /// mean(FCT) / mean(ideal FCT) over finished flows.
    pub normalized_fct: Option<f64>,
    /// Per size bucket.
    pub buckets: Vec<Bucket>,
    /// Flows under [`SHORT_FLOW_BYTES`].
    pub short_flows: FlowClass,
    /// Flows of [`LONG_FLOW_BYTES`] or more.
    pub long_flows: FlowClass,
    /// Offered and received bytes.
    pub throughput: Throughput,
    /// Drops by packet kind and reason.
    pub drops: BTreeMap<String, BTreeMap<String, u64>>,
    /// The same drops by packet kind and where: a host's NIC queue
    /// (`host_nic`), a switch port towards a switch (`fabric`) or towards
    /// a host (`last_hop`).
    pub drop_sites: BTreeMap<String, BTreeMap<String, u64>>,
    /// All drops.
    pub drops_total: u64,
    /// Data packets retransmitted.
    pub retransmits: u64,
    /// Protocol event counts (TCP: timeouts, spurious_timeouts,
    /// fast_recoveries, duplicate_deliveries, nic_waits).
    pub protocol_counters: BTreeMap<String, u64>,
    /// Packets marked ECN CE.
    pub ecn_marked: u64,
    /// Packet-hops (a packet crossing one link).
    pub packet_hops: u64,
    /// Packets switches deflected to another port (each deflection once).
    pub deflected: u64,
    /// Data packets switches trimmed to their headers.
    pub trimmed: u64,
    /// The conservation check.
    pub conservation: Conservation,
    /// Events processed.
    pub events: u64,
    /// Events per wall-clock second.
    pub events_per_sec: f64,
    /// Packet-hops per wall-clock second.
    pub packet_hops_per_sec: f64,
    /// Wall-clock time of the event loop, seconds.
    pub wall_time_s: f64,
    /// Simulated time at the end, microseconds.
    pub sim_time_us: f64,
    /// Query completion (runs with a `queries` workload only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries: Option<super::queries::QueryStats>,
    /// The packet trace (runs with `[output.trace]` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceStats>,
    /// The scheduled network changes the run applied, in time order
    /// (runs with `[[event]]`s only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultEntry>,
    /// The run cut at those changes: per phase, its flows' FCT, slowdown
    /// and goodput, and the drops while it lasted (runs with `[[event]]`s
    /// only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// `true` when the config opted out of the protocol/network
    /// compatibility checks (`[network] allow_mismatch = true`); absent
    /// otherwise. Set by whoever knows the config (the run command), since
    /// the run's own output does not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_mismatch: bool,
    /// The rules such a run broke, `field: what does not fit and what to
    /// use`; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<String>,
}

fn label(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => format!("{}GB", b / 1_000_000_000),
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{}MB", b / 1_000_000),
        b if b >= 1_000 && b % 1_000 == 0 => format!("{}KB", b / 1_000),
        b => format!("{b}B"),
    }
}

/// The size buckets that `upper_edges` make, in order: each one's lower
/// edge (sizes above it), upper edge (sizes up to it; `None` for the last,
/// unbounded one) and label (`"100KB-1MB"`, `"10MB+"`). The one definition
/// of buckets: `summary.json`'s and the Python report's.
pub fn size_buckets(upper_edges: &[u64]) -> Vec<(u64, Option<u64>, String)> {
    let mut out = Vec::with_capacity(upper_edges.len() + 1);
    let mut lo = 0;
    for &b in upper_edges {
        out.push((lo, Some(b), format!("{}-{}", label(lo), label(b))));
        lo = b;
    }
    out.push((lo, None, format!("{}+", label(lo))));
    out
}

/// Whether a flow of `size` bytes falls in the bucket (`lo`, `hi`].
pub fn in_bucket(size: u64, lo: u64, hi: Option<u64>) -> bool {
    size > lo && hi.is_none_or(|h| size <= h)
}

fn kinds(v: [u64; 2]) -> BTreeMap<String, u64> {
    BTreeMap::from([("data".to_string(), v[0]), ("control".to_string(), v[1])])
}

/// A flow's FCT in microseconds, if it finished.
pub(super) fn fct_us(f: &FlowResult) -> Option<f64> {
    f.fct().map(|d| d.ps() as f64 / 1e6)
}

/// Drop counts by kind ("data", "control") and by reason or site name.
type DropTable = BTreeMap<String, BTreeMap<String, u64>>;

impl Summary {
    /// Summarise a run; `buckets` are the upper edges of the size buckets.
    pub fn from_run(run: &RunOutput, buckets: &[u64]) -> Summary {
        let done: Vec<&FlowResult> = run.flows.iter().filter(|f| f.finish.is_some()).collect();
        let c = &run.counters;
        let (drops, drop_sites) = drop_tables(c);
        let wall = run.wall_time.as_secs_f64();
        Summary {
            protocol: run.protocol.clone(),
            seed: run.seed,
            stop_reason: run.stop_reason.clone(),
            flows: run.flows.len(),
            finished: done.len(),
            unfinished: run.flows.len() - done.len(),
            not_started: run
                .flows
                .iter()
                .filter(|f| f.finish.is_none() && f.start >= run.sim_time)
                .count(),
            slowdown: Stats::of(done.iter().filter_map(|f| f.slowdown()).collect()),
            fct_us: Stats::of(done.iter().filter_map(|f| fct_us(f)).collect()),
            normalized_fct: normalized_fct(&done),
            buckets: bucket_stats(run, &done, buckets),
            short_flows: flow_class(
                run,
                &done,
                |s| s < SHORT_FLOW_BYTES,
                format!("< {}", label(SHORT_FLOW_BYTES)),
            ),
            long_flows: flow_class(
                run,
                &done,
                |s| s >= LONG_FLOW_BYTES,
                format!(">= {}", label(LONG_FLOW_BYTES)),
            ),
            throughput: Throughput::of(run),
            drops,
            drop_sites,
            drops_total: c.dropped_total(0) + c.dropped_total(1),
            retransmits: run.flows.iter().map(|f| f.retransmits as u64).sum(),
            protocol_counters: run.protocol_counters.clone(),
            ecn_marked: c.ecn_marked,
            packet_hops: c.packet_hops,
            deflected: c.deflected,
            trimmed: c.trimmed,
            conservation: Conservation::of(c),
            events: run.events,
            events_per_sec: per_sec(run.events, wall),
            packet_hops_per_sec: per_sec(c.packet_hops, wall),
            wall_time_s: wall,
            sim_time_us: run.sim_time.ps() as f64 / 1e6,
            queries: super::queries::QueryStats::of(&run.flows),
            trace: run.trace.as_ref().map(|(rows, truncated)| TraceStats {
                rows: rows.len() as u64,
                truncated: *truncated,
            }),
            faults: FaultEntry::list(&run.faults),
            phases: phases(run),
            allow_mismatch: false,
            mismatches: Vec::new(),
        }
    }
}

/// The finished flows' total FCT over their total ideal FCT.
fn normalized_fct(done: &[&FlowResult]) -> Option<f64> {
    let sum_fct: f64 = done
        .iter()
        .filter_map(|f| f.fct())
        .map(|d| d.ps() as f64)
        .sum();
    let sum_ideal: f64 = done.iter().map(|f| f.ideal_fct.ps() as f64).sum();
    (sum_ideal > 0.0).then(|| sum_fct / sum_ideal)
}

/// Per size bucket: how many flows fall in it and how the finished ones did.
fn bucket_stats(run: &RunOutput, done: &[&FlowResult], buckets: &[u64]) -> Vec<Bucket> {
    size_buckets(buckets)
        .into_iter()
        .map(|(lo, hi, label)| {
            let inside = |f: &&FlowResult| in_bucket(f.size_bytes, lo, hi);
            let fin: Vec<&FlowResult> = done.iter().copied().filter(inside).collect();
            Bucket {
                label,
                above_bytes: lo,
                up_to_bytes: hi,
                flows: run.flows.iter().filter(inside).count(),
                slowdown: Stats::of(fin.iter().filter_map(|f| f.slowdown()).collect()),
                fct_us: Stats::of(fin.iter().filter_map(|f| fct_us(f)).collect()),
            }
        })
        .collect()
}

/// The flows whose size passes `sizes`: how many, and how the finished
/// ones did; `label` describes the sizes.
fn flow_class(
    run: &RunOutput,
    done: &[&FlowResult],
    sizes: impl Fn(u64) -> bool,
    label: String,
) -> FlowClass {
    let fin: Vec<&FlowResult> = done
        .iter()
        .copied()
        .filter(|f| sizes(f.size_bytes))
        .collect();
    let all = run.flows.iter().filter(|f| sizes(f.size_bytes)).count();
    FlowClass::of(&fin, all, label)
}

/// Drops by kind and reason, and by kind and site.
fn drop_tables(c: &Counters) -> (DropTable, DropTable) {
    let mut drops = BTreeMap::new();
    let mut drop_sites = BTreeMap::new();
    for (k, name) in ["data", "control"].iter().enumerate() {
        let by_reason = DropReason::ALL
            .iter()
            .map(|r| (r.name().to_string(), c.dropped[k][*r as usize]))
            .collect();
        drops.insert(name.to_string(), by_reason);
        let by_site = DropSite::ALL
            .iter()
            .map(|s| (s.name().to_string(), c.dropped_at[k][*s as usize]))
            .collect();
        drop_sites.insert(name.to_string(), by_site);
    }
    (drops, drop_sites)
}

/// `n` per second of `wall` seconds; 0 for no time.
fn per_sec(n: u64, wall: f64) -> f64 {
    if wall > 0.0 {
        n as f64 / wall
    } else {
        0.0
    }
}

impl Throughput {
    /// Bytes offered and received over the run, in all and per host.
    fn of(run: &RunOutput) -> Throughput {
        let offered: u64 = run.flows.iter().map(|f| f.size_bytes).sum();
        let received: u64 = run.flows.iter().map(|f| f.bytes_received).sum();
        let sim_s = run.sim_time.as_secs_f64();
        Throughput {
            bytes_offered: offered,
            bytes_received: received,
            fraction_received: (offered > 0).then(|| received as f64 / offered as f64),
            goodput_gbps: (sim_s > 0.0).then(|| received as f64 * 8.0 / sim_s / 1e9),
            per_host: PerHostThroughput::of(&run.flows),
        }
    }
}

impl Conservation {
    /// The conservation books of `c`, by packet kind.
    fn of(c: &Counters) -> Conservation {
        Conservation {
            ok: c.conserved(),
            sent: kinds(c.sent),
            made: kinds(c.made),
            delivered: kinds(c.delivered),
            in_flight: kinds(c.in_flight),
        }
    }
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²), 1 when all are equal.
pub fn jain_index(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let q: f64 = xs.iter().map(|x| x * x).sum();
    if q == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Counters;
    use crate::packet::NodeId;
    use crate::time::{Duration, Time};

    fn flow(id: u32, size: u64, fct_us: Option<u64>, ideal_us: u64) -> FlowResult {
        FlowResult {
            id,
            src: NodeId(0),
            dst: NodeId(1),
            size_bytes: size,
            start: Time::ZERO,
            finish: fct_us.map(|u| Time::ZERO + Duration::from_us(u)),
            ideal_fct: Duration::from_us(ideal_us),
            bytes_received: if fct_us.is_some() { size } else { 0 },
            retransmits: 0,
            drops: 0,
            tag: String::new(),
            query: None,
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let s = Stats::of((1..=100).map(|x| x as f64).collect());
        assert_eq!(
            (s.mean, s.p50, s.p99, s.p999, s.max),
            (Some(50.5), Some(50.0), Some(99.0), Some(100.0), Some(100.0))
        );
        let k = Stats::of((1..=1000).map(|x| x as f64).collect());
        assert_eq!((k.p99, k.p999), (Some(990.0), Some(999.0)));
        let e = Stats::of(vec![]);
        assert_eq!((e.count, e.mean, e.p99), (0, None, None));
        let one = Stats::of(vec![7.0]);
        assert_eq!((one.p50, one.p999), (Some(7.0), Some(7.0)));
    }

    #[test]
    fn buckets_split_at_their_upper_edges() {
        let run = RunOutput::of_flows(vec![
            flow(0, 100_000, Some(20), 10),
            flow(1, 100_001, Some(30), 10),
            flow(2, 20_000_000, None, 10),
            flow(3, 50, Some(10), 10),
        ]);
        let s = Summary::from_run(&run, DEFAULT_BUCKETS);
        let labels: Vec<&str> = s.buckets.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["0B-100KB", "100KB-1MB", "1MB-10MB", "10MB+"]);
        assert_eq!(s.buckets[0].flows, 2);
        assert_eq!(s.buckets[0].slowdown.mean, Some(1.5));
        assert_eq!(s.buckets[1].flows, 1);
        assert_eq!(s.buckets[3].flows, 1);
        assert_eq!(s.buckets[3].slowdown.count, 0);
        assert_eq!((s.finished, s.unfinished), (3, 1));
        assert_eq!(s.normalized_fct, Some(2.0));
        assert!(serde_json::to_string(&s).unwrap().contains("\"p99\":null"));
    }

    #[test]
    fn short_long_classes_and_per_host_delivery() {
        let mut other_host = flow(4, 10_000_000, Some(50), 10);
        other_host.src = NodeId(7);
        let run = RunOutput::of_flows(vec![
            flow(0, 99_999, Some(20), 10),
            flow(1, 100_000, Some(30), 10),
            flow(2, 20_000_000, None, 10),
            flow(3, 50, Some(40), 10),
            other_host,
        ]);
        let s = Summary::from_run(&run, DEFAULT_BUCKETS);
        // Short is strictly below 100 KB: flows 0 and 3 (slowdowns 2 and 4).
        assert_eq!(
            (s.short_flows.flows, s.short_flows.slowdown.mean),
            (2, Some(3.0))
        );
        assert_eq!(s.short_flows.slowdown.p99, Some(4.0));
        assert_eq!(s.short_flows.sizes, "< 100KB");
        // Long is 10 MB and up: flow 4 finished (slowdown 5), flow 2 did not.
        assert_eq!((s.long_flows.flows, s.long_flows.slowdown.count), (2, 1));
        assert_eq!(s.long_flows.fct_us.mean, Some(50.0));
        // Host 0 got 200,049 of 20,200,049 bytes; host 7 all of its own.
        let host0 = 200_049.0 / 20_200_049.0;
        let per_host = &s.throughput.per_host;
        assert_eq!(per_host.hosts, 2);
        assert_eq!(per_host.min_fraction, Some(host0));
        assert_eq!(per_host.mean_fraction, Some((host0 + 1.0) / 2.0));
    }

    #[test]
    fn phases_and_faults_only_for_runs_with_changes() {
        let mut run = RunOutput {
            stop_reason: "all_flows_done".into(),
            ..RunOutput::of_flows(vec![flow(0, 1000, Some(20), 10)])
        };
        let plain = serde_json::to_string(&Summary::from_run(&run, DEFAULT_BUCKETS)).unwrap();
        assert!(!plain.contains("\"phases\"") && !plain.contains("\"faults\""));
        run.faults.push(crate::metrics::FaultMark {
            at: Time::ZERO + Duration::from_us(40),
            what: "down link a-b".into(),
            counters_before: Counters::default(),
        });
        let s = Summary::from_run(&run, DEFAULT_BUCKETS);
        assert_eq!(s.faults.len(), 1);
        assert_eq!(s.phases.len(), 2);
        assert_eq!((s.phases[0].flows, s.phases[1].flows), (1, 0));
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"faults\":[{\"at_us\":40.0,\"what\":\"down link a-b\"}]"));
        assert!(json.contains("\"phases\":[{\"start_us\":0.0,\"end_us\":40.0,\"what\":null"));
    }

    #[test]
    fn jain_index_values() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
        assert_eq!(jain_index(&[1.0, 0.0]), 0.5);
        assert!((jain_index(&[1.0, 2.0]) - 0.9).abs() < 1e-12);
    }
}
