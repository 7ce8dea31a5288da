//! A run cut into phases at its scheduled network changes (`[[event]]`),
//! so that what flows saw before, during and after a failure can be told
//! apart: `summary.json`'s `phases`.
//!
//! Phase 0 runs from time 0 to the first change; each distinct change time
//! opens the next phase, and the last one ends with the run. A flow belongs
//! to the phase its start falls in (`[start, end)`; the last phase includes
//! the run's end), wherever it finished: a flow that straddles a boundary
//! is judged with the flows that started beside it. Drops are those counted
//! while the phase lasted: the difference of the network's counters just
//! before the change that opens it and just before the next one (the run's
//! final counters for the last phase). Several changes at one time (every
//! uplink of a switch going down) open a single phase, and the drops they
//! cause at that instant count in it.

use super::summary::{fct_us, Stats};
use super::{Counters, DropReason, FaultMark, FlowResult, RunOutput};
use crate::time::Time;
use serde::Serialize;
use std::collections::BTreeMap;

/// A change as `summary.json` lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FaultEntry {
    /// When it took effect, microseconds.
    pub at_us: f64,
    /// What changed, in words.
    pub what: String,
}

impl FaultEntry {
    /// Every change of a run, in time order.
    pub fn list(faults: &[FaultMark]) -> Vec<FaultEntry> {
        faults
            .iter()
            .map(|f| FaultEntry {
                at_us: us(f.at),
                what: f.what.clone(),
            })
            .collect()
    }
}

/// What the flows that started in one phase did, and what the network
/// dropped while it lasted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Phase {
    /// Start, microseconds.
    pub start_us: f64,
    /// End, microseconds (the next change, or the run's end).
    pub end_us: f64,
    /// The change(s) that opened the phase, joined by `"; "`; `None` for
    /// the phase before the first change.
    pub what: Option<String>,
    /// Flows that started in the phase.
    pub flows: usize,
    /// Of those, the ones that finished (whenever they did).
    pub finished: usize,
    /// Of those, the ones that did not finish by the run's end.
    pub unfinished: usize,
    /// FCT of the finished ones, microseconds.
    pub fct_us: Stats,
    /// Slowdown of the finished ones.
    pub slowdown: Stats,
    /// The finished ones' bytes over their summed FCT, Gbit/s: how fast
    /// the phase's flows moved their data, weighted by size.
    pub goodput_gbps: Option<f64>,
    /// The mean over the finished ones of each flow's size over its FCT,
    /// Gbit/s (every flow counts alike, so short flows weigh in).
    pub mean_flow_goodput_gbps: Option<f64>,
    /// Drops while the phase lasted, by packet kind (`data`, `control`)
    /// and reason, as `summary.json`'s `drops`.
    pub drops: BTreeMap<String, BTreeMap<String, u64>>,
    /// All drops while the phase lasted.
    pub drops_total: u64,
}

/// A phase's bounds: start, end, what opened it and the counters at its
/// start.
struct Bounds<'a> {
    start: Time,
    end: Time,
    what: Option<String>,
    counters: &'a Counters,
}

/// The run's phases, empty when it applied no change (see the module doc).
pub fn phases(run: &RunOutput) -> Vec<Phase> {
    if run.faults.is_empty() {
        return Vec::new();
    }
    let zero = Counters::default();
    let bounds = bounds(&run.faults, &zero, run.sim_time);
    let ends: Vec<&Counters> = bounds
        .iter()
        .skip(1)
        .map(|b| b.counters)
        .chain([&run.counters])
        .collect();
    let last = bounds.len() - 1;
    bounds
        .iter()
        .zip(ends)
        .enumerate()
        .map(|(i, (b, end_counters))| {
            let inside = |f: &&FlowResult| {
                f.start >= b.start && (f.start < b.end || (i == last && f.start <= b.end))
            };
            let flows: Vec<&FlowResult> = run.flows.iter().filter(inside).collect();
            Phase::of(b, &flows, end_counters)
        })
        .collect()
}

/// The phases' bounds: one per distinct change time after 0, after the
/// phase from 0 (which a change at time 0 opens instead).
fn bounds<'a>(faults: &'a [FaultMark], zero: &'a Counters, end: Time) -> Vec<Bounds<'a>> {
    let mut out = vec![Bounds {
        start: Time::ZERO,
        end,
        what: None,
        counters: zero,
    }];
    for f in faults {
        let last = out.last_mut().expect("starts with phase 0");
        debug_assert!(f.at >= last.start, "changes come in time order");
        if f.at == last.start {
            match &mut last.what {
                // Another change at the same instant: the same phase.
                Some(what) => {
                    what.push_str("; ");
                    what.push_str(&f.what);
                }
                // A change at time 0 opens the first phase (nothing came before).
                None => {
                    last.what = Some(f.what.clone());
                    last.counters = &f.counters_before;
                }
            }
            continue;
        }
        last.end = f.at;
        out.push(Bounds {
            start: f.at,
            end: end.max(f.at),
            what: Some(f.what.clone()),
            counters: &f.counters_before,
        });
    }
    out
}

impl Phase {
    /// The phase `b` given the flows that started in it and the counters
    /// at its end.
    fn of(b: &Bounds, flows: &[&FlowResult], after: &Counters) -> Phase {
        let done: Vec<&FlowResult> = flows
            .iter()
            .copied()
            .filter(|f| f.finish.is_some())
            .collect();
        let bytes: u64 = done.iter().map(|f| f.size_bytes).sum();
        let fct_ps: u64 = done.iter().filter_map(|f| f.fct()).map(|d| d.ps()).sum();
        let rates: Vec<f64> = done
            .iter()
            .filter_map(|f| {
                f.fct()
                    .filter(|d| d.ps() > 0)
                    .map(|d| gbps(f.size_bytes, d.ps()))
            })
            .collect();
        let (drops, drops_total) = drops_between(b.counters, after);
        Phase {
            start_us: us(b.start),
            end_us: us(b.end),
            what: b.what.clone(),
            flows: flows.len(),
            finished: done.len(),
            unfinished: flows.len() - done.len(),
            fct_us: Stats::of(done.iter().filter_map(|f| fct_us(f)).collect()),
            slowdown: Stats::of(done.iter().filter_map(|f| f.slowdown()).collect()),
            goodput_gbps: (fct_ps > 0).then(|| gbps(bytes, fct_ps)),
            mean_flow_goodput_gbps: (!rates.is_empty())
                .then(|| rates.iter().sum::<f64>() / rates.len() as f64),
            drops,
            drops_total,
        }
    }
}

/// Drops counted between two snapshots of the counters, by kind and
/// reason, and their total.
fn drops_between(
    before: &Counters,
    after: &Counters,
) -> (BTreeMap<String, BTreeMap<String, u64>>, u64) {
    let mut total = 0;
    let mut out = BTreeMap::new();
    for (k, kind) in ["data", "control"].iter().enumerate() {
        let by_reason = DropReason::ALL
            .iter()
            .map(|r| {
                let i = *r as usize;
                debug_assert!(
                    after.dropped[k][i] >= before.dropped[k][i],
                    "counters only grow"
                );
                let n = after.dropped[k][i].saturating_sub(before.dropped[k][i]);
                total += n;
                (r.name().to_string(), n)
            })
            .collect();
        out.insert(kind.to_string(), by_reason);
    }
    (out, total)
}

fn us(t: Time) -> f64 {
    t.ps() as f64 / 1e6
}

/// `bytes` over `ps` picoseconds in Gbit/s (bits per picosecond × 1000).
fn gbps(bytes: u64, ps: u64) -> f64 {
    bytes as f64 * 8.0 * 1e3 / ps as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::time::Duration;

    fn at(us: u64) -> Time {
        Time::ZERO + Duration::from_us(us)
    }

    /// A flow of `size` bytes from `start_us`, finished after `fct_us`
    /// (`None`: unfinished), ideal FCT 10 µs.
    fn flow(id: u32, size: u64, start_us: u64, fct_us: Option<u64>) -> FlowResult {
        FlowResult {
            id,
            src: NodeId(0),
            dst: NodeId(1),
            size_bytes: size,
            start: at(start_us),
            finish: fct_us.map(|f| at(start_us + f)),
            ideal_fct: Duration::from_us(10),
            bytes_received: if fct_us.is_some() { size } else { 0 },
            retransmits: 0,
            drops: 0,
            tag: String::new(),
            query: None,
        }
    }

    /// Counters with `n` drops of `reason` for data and `c` for control.
    fn drops(reason: DropReason, n: u64, c: u64) -> Counters {
        let mut k = Counters::default();
        k.dropped[0][reason as usize] = n;
        k.dropped[1][reason as usize] = c;
        k
    }

    fn mark(at_us: u64, what: &str, counters_before: Counters) -> FaultMark {
        FaultMark {
            at: at(at_us),
            what: what.into(),
            counters_before,
        }
    }

    fn run(flows: Vec<FlowResult>, faults: Vec<FaultMark>, counters: Counters) -> RunOutput {
        RunOutput {
            counters,
            faults,
            ..RunOutput::of_flows(flows)
        }
    }

    fn reason(p: &Phase, kind: &str, r: DropReason) -> u64 {
        p.drops[kind][r.name()]
    }

    #[test]
    fn no_changes_no_phases() {
        let r = run(
            vec![flow(0, 1000, 0, Some(10))],
            vec![],
            Counters::default(),
        );
        assert!(phases(&r).is_empty());
    }

    #[test]
    fn flows_belong_to_the_phase_they_started_in() {
        // Down at 20 µs, up at 50 µs; the run ends at 100 µs.
        let flows = vec![
            // Starts before the failure, finishes long after it: phase 0.
            flow(0, 10_000, 10, Some(80)),
            flow(1, 5_000, 0, Some(10)),
            // Starts exactly at the failure: phase 1.
            flow(2, 20_000, 20, Some(40)),
            flow(3, 1_000, 49, None),
            // Exactly at the recovery, and at the run's very end: phase 2.
            flow(4, 2_000, 50, Some(20)),
            flow(5, 1_000, 100, None),
        ];
        let faults = vec![
            mark(20, "down link a-b", Counters::default()),
            mark(50, "up link a-b", Counters::default()),
        ];
        let p = phases(&run(flows, faults, Counters::default()));
        assert_eq!(p.len(), 3);
        let bounds: Vec<(f64, f64)> = p.iter().map(|x| (x.start_us, x.end_us)).collect();
        assert_eq!(bounds, [(0.0, 20.0), (20.0, 50.0), (50.0, 100.0)]);
        let what: Vec<Option<&str>> = p.iter().map(|x| x.what.as_deref()).collect();
        assert_eq!(what, [None, Some("down link a-b"), Some("up link a-b")]);
        let counts: Vec<(usize, usize, usize)> = p
            .iter()
            .map(|x| (x.flows, x.finished, x.unfinished))
            .collect();
        assert_eq!(counts, [(2, 2, 0), (2, 1, 1), (2, 1, 1)]);
        // Phase 0: FCTs 80 and 10 µs (slowdowns 8 and 1).
        assert_eq!(p[0].fct_us.mean, Some(45.0));
        assert_eq!((p[0].fct_us.p50, p[0].fct_us.p99), (Some(10.0), Some(80.0)));
        assert_eq!(p[0].slowdown.mean, Some(4.5));
        // 15,000 bytes in 90 µs of summed FCT: 120,000 bits / 90 µs.
        assert_eq!(p[0].goodput_gbps, Some(120_000.0 / 90_000.0));
        // Per flow: 80,000 bits in 80 µs = 1 Gbit/s; 40,000 in 10 µs = 4.
        assert_eq!(p[0].mean_flow_goodput_gbps, Some(2.5));
        // Phase 1: only flow 2 finished, 160,000 bits in 40 µs.
        assert_eq!(p[1].goodput_gbps, Some(4.0));
        assert_eq!(p[1].slowdown.p99, Some(4.0));
    }

    #[test]
    fn a_phase_without_flows_has_empty_statistics() {
        let flows = vec![flow(0, 1000, 0, Some(10)), flow(1, 1000, 70, Some(10))];
        let faults = vec![
            mark(30, "down link a-b", Counters::default()),
            mark(60, "up link a-b", Counters::default()),
        ];
        let p = phases(&run(flows, faults, Counters::default()));
        let quiet = &p[1];
        assert_eq!((quiet.flows, quiet.finished, quiet.unfinished), (0, 0, 0));
        assert_eq!((quiet.fct_us.count, quiet.fct_us.mean), (0, None));
        assert_eq!(
            (quiet.goodput_gbps, quiet.mean_flow_goodput_gbps),
            (None, None)
        );
        let json = serde_json::to_string(quiet).unwrap();
        assert!(json.contains("\"goodput_gbps\":null"), "{json}");
        assert!(!json.contains("NaN"));
        assert_eq!((p[0].flows, p[2].flows), (1, 1));
    }

    #[test]
    fn drops_are_the_differences_of_the_counters() {
        // 3 buffer drops before the failure; 7 link_down (5 data, 2
        // control) during it; 4 more buffer drops after recovery.
        let before_down = drops(DropReason::BufferFull, 3, 0);
        let mut before_up = before_down.clone();
        before_up.add(&drops(DropReason::LinkDown, 5, 2));
        let mut end = before_up.clone();
        end.add(&drops(DropReason::BufferFull, 4, 0));
        let faults = vec![mark(20, "down", before_down), mark(50, "up", before_up)];
        let p = phases(&run(vec![], faults, end));
        let totals: Vec<u64> = p.iter().map(|x| x.drops_total).collect();
        assert_eq!(totals, [3, 7, 4]);
        assert_eq!(reason(&p[0], "data", DropReason::BufferFull), 3);
        assert_eq!(reason(&p[1], "data", DropReason::LinkDown), 5);
        assert_eq!(reason(&p[1], "control", DropReason::LinkDown), 2);
        assert_eq!(reason(&p[1], "data", DropReason::BufferFull), 0);
        assert_eq!(reason(&p[2], "data", DropReason::BufferFull), 4);
        assert_eq!(reason(&p[2], "data", DropReason::LinkDown), 0);
        // Every reason is listed, dropped or not.
        assert_eq!(p[0].drops["data"].len(), DropReason::COUNT);
    }

    #[test]
    fn changes_at_one_instant_open_one_phase() {
        // Two uplinks down at 20 µs: the second one's counters already
        // hold the first's drops, which belong to the new phase.
        let first = drops(DropReason::BufferFull, 1, 0);
        let mut second = first.clone();
        second.add(&drops(DropReason::LinkDown, 6, 0));
        let mut end = second.clone();
        end.add(&drops(DropReason::LinkDown, 2, 0));
        let faults = vec![mark(20, "down l1", first), mark(20, "down l2", second)];
        let p = phases(&run(vec![flow(0, 1000, 20, Some(5))], faults, end));
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].what.as_deref(), Some("down l1; down l2"));
        assert_eq!((p[0].drops_total, p[1].drops_total), (1, 8));
        assert_eq!(p[1].flows, 1);
    }

    #[test]
    fn a_change_at_time_zero_opens_the_first_phase() {
        let faults = vec![
            mark(0, "loss 1% link a-b", Counters::default()),
            mark(40, "loss 0% link a-b", drops(DropReason::LinkLoss, 9, 0)),
        ];
        let end = drops(DropReason::LinkLoss, 9, 0);
        let p = phases(&run(vec![flow(0, 1000, 0, Some(5))], faults, end));
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].start_us, p[0].end_us), (0.0, 40.0));
        assert_eq!(p[0].what.as_deref(), Some("loss 1% link a-b"));
        assert_eq!((p[0].flows, p[0].drops_total, p[1].drops_total), (1, 9, 0));
        assert_eq!(reason(&p[0], "data", DropReason::LinkLoss), 9);
    }

    #[test]
    fn fault_entries_in_microseconds() {
        let e = FaultEntry::list(&[mark(20, "down link a-b", Counters::default())]);
        assert_eq!(
            e,
            [FaultEntry {
                at_us: 20.0,
                what: "down link a-b".into()
            }]
        );
    }
}
