//! Traffic: which flows run, between which hosts, how big, and when.
//!
//! A config holds one or more `[[workload]]` tables; each generates flows
//! with its own tag and its own random streams (named by kind and index),
//! so adding a workload never changes the draws of another. The flows of all
//! workloads are merged in start-time order and numbered 0, 1, 2, ...

pub mod cdf;
pub mod csv;
pub mod incast;
pub mod patterns;
pub mod poisson;
pub mod queries;

use crate::engine::{Rng, RngStreams};
use crate::error::{Error, Result};
use crate::packet::{FlowId, NodeId};
use crate::time::{parse_duration, Duration, Rate, Time};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub use cdf::Cdf;

/// One flow to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// Index in the run's flow table.
    pub id: FlowId,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Payload bytes.
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Index into [`Workload::tags`].
    pub tag: u16,
    /// The query this flow belongs to (`queries` workloads only).
    pub query: Option<u32>,
}

/// The flows of a run, sorted by start time, plus the names of their tags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// Flows sorted by (start, generation order); `id` equals the index.
    pub flows: Vec<FlowSpec>,
    /// Tag names.
    pub tags: Vec<String>,
}

/// What generators need to know about the network.
pub struct WorkloadEnv<'a> {
    /// Hosts are `NodeId(0)..NodeId(n_hosts)`.
    pub n_hosts: u32,
    /// Host access-link rate (the reference for offered load).
    pub host_rate: Rate,
    /// Payload bytes per full packet.
    pub mss: u32,
    /// Header bytes per packet.
    pub header_bytes: u32,
    /// Relative file paths resolve against this folder first.
    pub base_dir: &'a Path,
    /// Host names, for flow lists that name hosts.
    pub host_names: &'a [String],
    /// The run's random streams.
    pub streams: RngStreams,
}

/// One `[[workload]]` table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadConfig {
    /// Poisson arrivals at a target load, sizes from a CDF, uniform random
    /// source and destination (source ≠ destination).
    Poisson {
        /// CDF file or built-in name (`websearch`, `datamining`, `imc10`, `cache_follower`).
        cdf: String,
        /// Offered load as a fraction of host link capacity, in (0, 1).
        load: f64,
        /// Stop after this many flows...
        flows: Option<u64>,
        /// ...or after this much time.
        duration: Option<String>,
        /// Offset of the first arrival window.
        start: Option<String>,
        /// Send every flow to this host (sources uniform among the others);
        /// `load` is then the fraction of its link. Default: all-to-all.
        receiver: Option<u32>,
        /// Hosts form groups of this many consecutive ids (e.g. one per
        /// datacenter) and every flow crosses groups: the destination is
        /// uniform among the hosts outside the source's group.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_size: Option<u32>,
        /// Each host sends only to one fixed partner, a random derangement
        /// drawn once (the pHost paper's permutation traffic matrix).
        /// Written to the resolved config only when true, so that configs
        /// without it keep their hash.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        permutation: bool,
        /// Tag of these flows (default: the kind).
        tag: Option<String>,
    },
    /// Many-to-one queries: `senders` hosts each send `size` bytes to one
    /// receiver, all starting together; repeated `queries` times.
    Incast {
        /// Senders per query.
        senders: u32,
        /// Bytes each sender sends.
        size: u64,
        /// Number of queries.
        queries: u32,
        /// Time between queries (fixed, or the mean if `poisson = true`).
        interval: String,
        /// Exponential gaps between queries instead of fixed ones.
        #[serde(default)]
        poisson: bool,
        /// Fixed receiver host (default: random per query).
        receiver: Option<u32>,
        /// Time of the first query.
        start: Option<String>,
        /// Tag (default `incast`).
        tag: Option<String>,
    },
    /// One flow of `size` bytes between every ordered pair of hosts.
    AllToAll {
        /// Bytes per flow.
        size: u64,
        /// Start time of all flows.
        start: Option<String>,
        /// Tag (default `all_to_all`).
        tag: Option<String>,
    },
    /// Each host sends `size` bytes to one other host; each host receives
    /// one flow (a random derangement).
    Permutation {
        /// Bytes per flow.
        size: u64,
        /// Start time of all flows.
        start: Option<String>,
        /// Tag (default `permutation`).
        tag: Option<String>,
    },
    /// Long flows starting together, given as pairs or as senders plus one
    /// receiver.
    Static {
        /// `[[src, dst], ...]` host index pairs.
        pairs: Option<Vec<[u32; 2]>>,
        /// Sender host indices (with `receiver`).
        senders: Option<Vec<u32>>,
        /// Receiver host index (with `senders`).
        receiver: Option<u32>,
        /// Bytes per flow.
        size: u64,
        /// Start time of all flows.
        start: Option<String>,
        /// Tag (default `static`).
        tag: Option<String>,
    },
    /// Partition/aggregate queries at Poisson times: a client asks
    /// `servers` other hosts (a `request_bytes` flow to each), and each
    /// replies with `reply_bytes` (see [`queries`]). The flows carry their
    /// query's id; summaries report query completion times.
    Queries {
        /// Share of host link capacity the replies offer, in (0, 1).
        load: f64,
        /// Servers per query (default 100).
        #[serde(default = "d_servers")]
        servers: u32,
        /// Request bytes (default 250; 0: no request flows).
        #[serde(default = "d_request")]
        request_bytes: u64,
        /// Reply bytes per server (default 40,000).
        #[serde(default = "d_reply")]
        reply_bytes: u64,
        /// From a query to its replies' start (default "20us").
        #[serde(default = "d_reply_delay")]
        reply_delay: String,
        /// Stop after this many queries...
        queries: Option<u32>,
        /// ...or after this much time.
        duration: Option<String>,
        /// Offset of the first arrival window.
        start: Option<String>,
        /// Tag (default `queries`).
        tag: Option<String>,
    },
    /// Flows from a CSV file: `src,dst,size_bytes,start_ns` (hosts by index
    /// or name).
    Csv {
        /// The file (relative to the config's folder, then the working dir).
        file: String,
        /// Tag (default `csv`).
        tag: Option<String>,
    },
}

fn d_servers() -> u32 {
    100
}
fn d_request() -> u64 {
    250
}
fn d_reply() -> u64 {
    40_000
}
fn d_reply_delay() -> String {
    "20us".into()
}

impl WorkloadConfig {
    fn kind(&self) -> &'static str {
        match self {
            WorkloadConfig::Poisson { .. } => "poisson",
            WorkloadConfig::Incast { .. } => "incast",
            WorkloadConfig::AllToAll { .. } => "all_to_all",
            WorkloadConfig::Permutation { .. } => "permutation",
            WorkloadConfig::Static { .. } => "static",
            WorkloadConfig::Csv { .. } => "csv",
            WorkloadConfig::Queries { .. } => "queries",
        }
    }

    /// The field that sets this workload's flow sizes (for errors about
    /// a flow too large): the CDF, the flow list or the size.
    pub fn size_field(&self) -> &'static str {
        match self {
            WorkloadConfig::Poisson { .. } => "cdf",
            WorkloadConfig::Csv { .. } => "file",
            WorkloadConfig::Queries { .. } => "reply_bytes",
            WorkloadConfig::Incast { .. }
            | WorkloadConfig::AllToAll { .. }
            | WorkloadConfig::Permutation { .. }
            | WorkloadConfig::Static { .. } => "size",
        }
    }

    /// The tag of this workload's flows (default: the kind).
    pub fn tag(&self) -> String {
        let t = match self {
            WorkloadConfig::Poisson { tag, .. }
            | WorkloadConfig::Incast { tag, .. }
            | WorkloadConfig::AllToAll { tag, .. }
            | WorkloadConfig::Permutation { tag, .. }
            | WorkloadConfig::Static { tag, .. }
            | WorkloadConfig::Csv { tag, .. }
            | WorkloadConfig::Queries { tag, .. } => tag,
        };
        t.clone().unwrap_or_else(|| self.kind().to_string())
    }
}

/// Flows each `[[workload]]` table will generate, counted (or, for Poisson
/// arrivals over a duration, expected) before generating any, for the
/// resource estimate: `(field, flows)` per table. Flow lists from files
/// count as 0 here; they are counted when read.
pub fn planned_flows(
    cfgs: &[WorkloadConfig],
    n_hosts: u64,
    host_rate: Rate,
    mss: u32,
    header_bytes: u32,
    base_dir: &Path,
) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::with_capacity(cfgs.len());
    for (i, cfg) in cfgs.iter().enumerate() {
        let field = |f: &str| format!("workload[{i}].{f}");
        let planned = match cfg {
            WorkloadConfig::Poisson { flows: Some(f), .. } => (field("flows"), *f),
            WorkloadConfig::Poisson {
                cdf,
                load,
                flows: None,
                duration: Some(d),
                ..
            } if *load > 0.0 && *load < 1.0 => {
                let d = parse_duration(d).map_err(|m| Error::config(field("duration"), m))?;
                let mean = Cdf::load(cdf, base_dir)?.mean();
                let wire = mean + (mean / mss.max(1) as f64).ceil().max(1.0) * header_bytes as f64;
                let n = poisson::expected_flows(wire, *load, n_hosts, host_rate, d.ps());
                (field("duration"), n.min(u64::MAX as f64) as u64)
            }
            WorkloadConfig::Poisson { .. } | WorkloadConfig::Csv { .. } => (field("kind"), 0),
            WorkloadConfig::Queries {
                load,
                servers,
                request_bytes,
                reply_bytes,
                queries,
                duration,
                ..
            } => {
                let per_query = *servers as u64 * if *request_bytes > 0 { 2 } else { 1 };
                let n = match (queries, duration) {
                    (Some(q), _) => *q as u64,
                    (None, Some(d)) if *load > 0.0 && *load < 1.0 && *servers > 0 => {
                        let d =
                            parse_duration(d).map_err(|m| Error::config(field("duration"), m))?;
                        let r = *reply_bytes as f64;
                        let wire = (r
                            + (r / mss.max(1) as f64).ceil().max(1.0) * header_bytes as f64)
                            * *servers as f64;
                        poisson::expected_flows(wire, *load, n_hosts, host_rate, d.ps()) as u64
                    }
                    _ => 0,
                };
                (field("queries"), n.saturating_mul(per_query))
            }
            WorkloadConfig::Incast {
                senders, queries, ..
            } => (field("queries"), *senders as u64 * *queries as u64),
            WorkloadConfig::AllToAll { .. } => (
                field("kind"),
                n_hosts.saturating_mul(n_hosts.saturating_sub(1)),
            ),
            WorkloadConfig::Permutation { .. } => (field("kind"), n_hosts),
            WorkloadConfig::Static { pairs, senders, .. } => (
                field("pairs"),
                pairs.as_ref().map_or(0, Vec::len) as u64
                    + senders.as_ref().map_or(0, Vec::len) as u64,
            ),
        };
        out.push(planned);
    }
    Ok(out)
}

/// A flow before ids are assigned: (src, dst, size, start).
pub type RawFlow = (NodeId, NodeId, u64, Time);

/// Helpers for one workload's field checks and random streams.
pub struct Gen<'a> {
    /// The environment.
    pub env: &'a WorkloadEnv<'a>,
    /// Index of this `[[workload]]` table.
    pub index: usize,
}

impl Gen<'_> {
    /// Dotted config path of a field of this workload.
    pub fn field(&self, name: &str) -> String {
        format!("workload[{}].{name}", self.index)
    }
    /// A config error on a field of this workload.
    pub fn err(&self, name: &str, msg: impl Into<String>) -> Error {
        Error::config(self.field(name), msg)
    }
    /// The random stream `purpose` of this workload.
    pub fn rng(&self, purpose: &str) -> Rng {
        self.env
            .streams
            .stream(&format!("workload.{purpose}"), self.index as u64)
    }
    /// Parse an optional start offset.
    pub fn start(&self, s: &Option<String>) -> Result<Time> {
        match s {
            None => Ok(Time::ZERO),
            Some(s) => Ok(Time::ZERO + self.duration(s, "start")?),
        }
    }
    /// Parse a duration field.
    pub fn duration(&self, s: &str, name: &str) -> Result<Duration> {
        parse_duration(s).map_err(|m| self.err(name, m))
    }
    /// Check a host index.
    pub fn host(&self, h: u32, name: &str) -> Result<NodeId> {
        if h >= self.env.n_hosts {
            return Err(self.err(
                name,
                format!(
                    "host {h} does not exist (hosts are 0..{})",
                    self.env.n_hosts - 1
                ),
            ));
        }
        Ok(NodeId(h))
    }
    /// Check a flow size.
    pub fn size(&self, s: u64) -> Result<u64> {
        if s == 0 {
            return Err(self.err("size", "must be at least 1 byte"));
        }
        Ok(s)
    }
    /// Wire bytes of a flow of `size` payload bytes (headers included).
    pub fn wire_bytes(&self, size: f64) -> f64 {
        let mss = self.env.mss as f64;
        size + (size / mss).ceil().max(1.0) * self.env.header_bytes as f64
    }
}

/// A generated flow before numbering: the raw flow, its tag's index and
/// its query id (`queries` workloads).
type Tagged = (RawFlow, u16, Option<u32>);

/// Generate every workload's flows, merged in start order.
pub fn generate(cfgs: &[WorkloadConfig], env: &WorkloadEnv) -> Result<Workload> {
    if env.n_hosts < 2 {
        return Err(Error::config(
            "topology",
            "need at least 2 hosts for traffic",
        ));
    }
    let mut tags: Vec<String> = Vec::new();
    let mut all: Vec<Tagged> = Vec::new();
    // Query ids run on across `queries` workloads.
    let mut next_query = 0u32;
    for (index, cfg) in cfgs.iter().enumerate() {
        let g = Gen { env, index };
        let (raw, query_ids) = generate_one(&g, cfg, &mut next_query)?;
        let t = tag_index(&mut tags, cfg.tag());
        if query_ids.is_empty() {
            all.extend(raw.into_iter().map(|f| (f, t, None)));
        } else {
            all.extend(raw.into_iter().zip(query_ids).map(|(f, q)| (f, t, Some(q))));
        }
    }
    check_totals(&all)?;
    Ok(Workload {
        flows: number_in_start_order(all),
        tags,
    })
}

/// One workload's flows, and with `queries` their query ids (numbered on
/// from `next_query`, which moves past them; empty for other kinds).
fn generate_one(
    g: &Gen,
    cfg: &WorkloadConfig,
    next_query: &mut u32,
) -> Result<(Vec<RawFlow>, Vec<u32>)> {
    let raw = match cfg {
        WorkloadConfig::Poisson {
            cdf,
            load,
            flows,
            duration,
            start,
            receiver,
            group_size,
            permutation,
            ..
        } => poisson::generate(
            g,
            &poisson::PoissonSpec {
                cdf,
                load: *load,
                flows: *flows,
                duration: duration.as_deref(),
                start,
                receiver: *receiver,
                group_size: *group_size,
                permutation: *permutation,
            },
        )?,
        WorkloadConfig::Incast {
            senders,
            size,
            queries,
            interval,
            poisson,
            receiver,
            start,
            ..
        } => incast::generate(
            g, *senders, *size, *queries, interval, *poisson, *receiver, start,
        )?,
        WorkloadConfig::AllToAll { size, start, .. } => patterns::all_to_all(g, *size, start)?,
        WorkloadConfig::Permutation { size, start, .. } => patterns::permutation(g, *size, start)?,
        WorkloadConfig::Static {
            pairs,
            senders,
            receiver,
            size,
            start,
            ..
        } => patterns::static_flows(
            g,
            pairs.as_deref(),
            senders.as_deref(),
            *receiver,
            *size,
            start,
        )?,
        WorkloadConfig::Csv { file, .. } => csv::load(g, file)?,
        WorkloadConfig::Queries {
            load,
            servers,
            request_bytes,
            reply_bytes,
            reply_delay,
            queries,
            duration,
            start,
            ..
        } => {
            let spec = queries::QuerySpec {
                load: *load,
                servers: *servers,
                request_bytes: *request_bytes,
                reply_bytes: *reply_bytes,
                reply_delay,
                queries: *queries,
                duration: duration.as_deref(),
                start,
            };
            return Ok(number_queries(queries::generate(g, &spec)?, next_query));
        }
    };
    Ok((raw, Vec::new()))
}

/// Split a `queries` workload's flows from their query ids, which become
/// run-wide: numbered on from `next_query`, which moves past the last.
fn number_queries(flows: Vec<(RawFlow, u32)>, next_query: &mut u32) -> (Vec<RawFlow>, Vec<u32>) {
    let base = *next_query;
    let mut top = base;
    let (raw, ids) = flows
        .into_iter()
        .map(|(f, q)| {
            top = top.max(base + q + 1);
            (f, base + q)
        })
        .unzip();
    *next_query = top;
    (raw, ids)
}

/// The index of `tag` in `tags`, added at the end if new.
fn tag_index(tags: &mut Vec<String>, tag: String) -> u16 {
    (match tags.iter().position(|x| *x == tag) {
        Some(i) => i,
        None => {
            tags.push(tag);
            tags.len() - 1
        }
    }) as u16
}

/// Flows must be few enough to number, and their bytes must add up within
/// a u64 (offered load, summaries).
fn check_totals(all: &[Tagged]) -> Result<()> {
    if all.len() >= u32::MAX as usize {
        return Err(Error::config(
            "workload",
            "too many flows (at most 2^32 - 2)",
        ));
    }
    all.iter()
        .try_fold(0u64, |acc, ((_, _, size, _), _, _)| acc.checked_add(*size))
        .ok_or_else(|| {
            Error::config(
                "workload",
                "the flows add up to more than 2^64 bytes; use smaller flows or fewer of them",
            )
        })?;
    Ok(())
}

/// Sort by start and number the flows in that order; the sort is stable,
/// so equal starts keep generation order.
fn number_in_start_order(mut all: Vec<Tagged>) -> Vec<FlowSpec> {
    all.sort_by_key(|((_, _, _, start), _, _)| *start);
    all.into_iter()
        .enumerate()
        .map(|(i, ((src, dst, size, start), tag, query))| FlowSpec {
            id: FlowId(i as u32),
            src,
            dst,
            size,
            start,
            tag,
            query,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn env(n: u32, names: &[String]) -> WorkloadEnv<'_> {
        WorkloadEnv {
            n_hosts: n,
            host_rate: Rate::gbps(10),
            mss: 1460,
            header_bytes: 40,
            base_dir: Path::new("."),
            host_names: names,
            streams: RngStreams::new(1),
        }
    }

    fn parse(t: &str) -> std::result::Result<Vec<WorkloadConfig>, toml::de::Error> {
        #[derive(Deserialize)]
        struct W {
            workload: Vec<WorkloadConfig>,
        }
        toml::from_str::<W>(t).map(|w| w.workload)
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(parse("[[workload]]\nkind = \"permutation\"\nsize = 10\n").is_ok());
        let e = parse("[[workload]]\nkind = \"permutation\"\nsize = 10\nsise = 3\n").unwrap_err();
        assert!(e.to_string().contains("sise"), "{e}");
    }

    #[test]
    fn a_second_workload_does_not_change_the_first() {
        let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
        let e = env(16, &names);
        let a = parse(
            "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 100\n",
        )
        .unwrap();
        let mut b = a.clone();
        b.extend(
            parse("[[workload]]\nkind = \"permutation\"\nsize = 1000\ntag = \"perm\"\n").unwrap(),
        );
        let wa = generate(&a, &e).unwrap();
        let wb = generate(&b, &e).unwrap();
        let only_a: Vec<_> = wb
            .flows
            .iter()
            .filter(|f| wb.tags[f.tag as usize] == "poisson")
            .map(|f| (f.src, f.dst, f.size, f.start))
            .collect();
        let orig: Vec<_> = wa
            .flows
            .iter()
            .map(|f| (f.src, f.dst, f.size, f.start))
            .collect();
        assert_eq!(only_a, orig);
        assert_eq!(wb.flows.len(), 116);
        assert!(wb.flows.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(wb.flows.iter().enumerate().all(|(i, f)| f.id.idx() == i));
    }

    #[test]
    fn seeds_change_the_flows() {
        let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
        let w = parse(
            "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50\n",
        )
        .unwrap();
        let e1 = env(16, &names);
        let mut e2 = env(16, &names);
        e2.streams = RngStreams::new(2);
        assert_eq!(generate(&w, &e1).unwrap(), generate(&w, &e1).unwrap());
        assert_ne!(generate(&w, &e1).unwrap(), generate(&w, &e2).unwrap());
    }
}
