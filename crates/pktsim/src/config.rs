//! The experiment file: a TOML schema (serde, unknown fields rejected),
//! validated into typed values before anything runs.
//!
//! ```toml
//! name = "leafspine-dctcp"
//! seed = 1
//!
//! [topology]
//! kind = "leaf_spine"
//! spines = 4
//! leaves = 9
//! hosts_per_leaf = 16
//! host_rate = "10Gbps"
//! fabric_rate = "40Gbps"
//! link_delay = "0.2us"
//!
//! [network]
//! switch_queue = { kind = "ecn", k_packets = 65 }
//! switch_buffer_bytes = 300000
//!
//! [transport]
//! protocol = "dctcp"
//!
//! [[workload]]
//! kind = "poisson"
//! cdf = "websearch"
//! load = 0.6
//! flows = 2000
//! ```

use crate::engine::RngStreams;
use crate::error::{Error, Result};
use crate::metrics::RunOutput;
use crate::net::partition::Partition;
use crate::net::queue::QueueConfig;
use crate::net::routing::Routing;
use crate::net::switch::{FastLaneConfig, Refusal};
use crate::net::topology::{TopologyConfig, TopologySpec};
use crate::net::{Forwarding, LoadBalancing, Network, NetworkParams};
use crate::resources::LimitsConfig;
use crate::sim::{PacketFormat, Progress, RunLimits, Simulation, Transport};
use crate::time::Duration;
use crate::transport::{run_to_end, SimSetup, TransportConfig};
use crate::workload::{Workload, WorkloadConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub mod events;
pub mod paths;
mod prepare;
pub mod sanity;
pub mod semantics;
pub mod timeseries;
pub mod trace;

/// A whole experiment file.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Name of the experiment (free text).
    #[serde(default)]
    pub name: Option<String>,
    /// Seed of every random stream.
    #[serde(default = "d_seed")]
    pub seed: u64,
    /// The network's shape.
    pub topology: TopologyConfig,
    /// Switch and NIC behaviour.
    #[serde(default)]
    pub network: NetworkConfig,
    /// The host protocol.
    pub transport: TransportConfig,
    /// Traffic: one or more `[[workload]]` tables.
    pub workload: Vec<WorkloadConfig>,
    /// When to stop.
    #[serde(default)]
    pub run: RunConfig,
    /// What to record.
    #[serde(default)]
    pub output: OutputConfig,
    /// Memory and event limits (see [`crate::resources`]).
    #[serde(default, skip_serializing_if = "LimitsConfig::is_default")]
    pub limits: LimitsConfig,
    /// Scheduled failures and changes: `[[event]]` tables (see
    /// [`events`]).
    #[serde(default, rename = "event", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<events::EventConfig>,
}

fn d_seed() -> u64 {
    1
}

/// The `[network]` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// `"store_and_forward"` (default) or `"cut_through"`.
    #[serde(default)]
    pub forwarding: Forwarding,
    /// `"ecmp"` (default), `"symmetric_ecmp"`, `"spray"`,
    /// `"spray_round_robin"`, `"power_of_two"` or `"least_loaded"`.
    #[serde(default)]
    pub load_balancing: LoadBalancing,
    /// Payload bytes per full data packet.
    #[serde(default = "d_mss")]
    pub mss: u32,
    /// Header bytes per packet.
    #[serde(default = "d_header")]
    pub header_bytes: u32,
    /// Switch port queue discipline.
    #[serde(default = "d_switch_queue")]
    pub switch_queue: QueueConfig,
    /// Per-port switch buffer, bytes (default 225,000; with
    /// `shared_buffer` none, and giving both is an error: the shared
    /// buffer's dynamic threshold is then each port's only limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_buffer_bytes: Option<u64>,
    /// Optional shared buffer per switch with dynamic thresholds.
    #[serde(default)]
    pub shared_buffer: Option<SharedBufferConfig>,
    /// Host NIC queue discipline (default: control packets before data).
    #[serde(default = "d_host_queue")]
    pub host_queue: QueueConfig,
    /// Host NIC buffer, bytes (default: [`TCP_HOST_BUFFER`] for the TCP
    /// family, unlimited for other protocols).
    #[serde(default)]
    pub host_buffer_bytes: Option<u64>,
    /// Packets reaching a switch after this many links are dropped (a TTL;
    /// default 64). Written to the resolved config only when not the default,
    /// so that configs without it keep their hash.
    #[serde(default = "d_hop_limit", skip_serializing_if = "is_default_hop_limit")]
    pub hop_limit: u8,
    /// What a switch does with a packet its queue refuses: `"drop"`
    /// (default), `"notify_source"`, `"trim"`, `"deflect"` (DIBS),
    /// `"deflect_two_choices"` (Vertigo) or `"deflect_two_admitting"`
    /// (Canary). Written to the resolved config only when not the default.
    #[serde(default, skip_serializing_if = "is_default_refusal")]
    pub refusal: Refusal,
    /// FastLane drop notifications with caps (`[network.fastlane]`, see
    /// [`crate::net::switch::fastlane`]); absent: off. Excludes `refusal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastlane: Option<FastLaneConfig>,
    /// Run even though the protocol and the network do not belong together
    /// (see [`semantics`]): for a deliberate experiment, such as a paper's
    /// own odd setup. The run records it, and the mismatches, in
    /// `summary.json`. Written to the resolved config only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_mismatch: bool,
    /// When routing reacts to `[[event]]` failures and recoveries: `"0"`
    /// (default: at once), a time such as `"1ms"`, or `"never"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_detection: Option<String>,
}

impl NetworkConfig {
    /// Fill in defaults that depend on other fields, for the resolved
    /// config: the per-port buffer when no shared buffer is given.
    pub fn resolve(&mut self) {
        if self.shared_buffer.is_none() {
            self.switch_buffer_bytes.get_or_insert(d_switch_buffer());
        }
    }

    /// The per-port limit of switch ports: the buffer given, else the
    /// default, else (with a shared buffer) none of their own.
    pub fn switch_port_buffer(&self) -> u64 {
        match (self.switch_buffer_bytes, &self.shared_buffer) {
            (Some(b), _) => b,
            (None, Some(_)) => u64::MAX,
            (None, None) => d_switch_buffer(),
        }
    }
}

fn d_hop_limit() -> u8 {
    NetworkParams::DEFAULT_HOP_LIMIT
}
fn is_default_hop_limit(h: &u8) -> bool {
    *h == NetworkParams::DEFAULT_HOP_LIMIT
}
fn is_default_refusal(r: &Refusal) -> bool {
    *r == Refusal::Drop
}

/// A switch's shared buffer: each port may use `alpha × free` bytes.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharedBufferConfig {
    /// Buffer of the whole switch, bytes.
    pub bytes: u64,
    /// Dynamic threshold factor (e.g. 1.0).
    pub alpha: f64,
}

/// Default host NIC buffer of the TCP family: 1 MiB (16 flows at the
/// default per-flow NIC limit of 64 KiB).
pub const TCP_HOST_BUFFER: u64 = 1 << 20;

fn d_mss() -> u32 {
    1460
}
fn d_header() -> u32 {
    40
}
fn d_switch_queue() -> QueueConfig {
    QueueConfig::DropTail
}
fn d_switch_buffer() -> u64 {
    // 150 full packets, as in pFabric's TCP and DCTCP baselines.
    225_000
}
fn d_host_queue() -> QueueConfig {
    QueueConfig::Priority {
        classes: 2,
        k_packets: None,
        k_bytes: None,
    }
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            forwarding: Forwarding::default(),
            load_balancing: LoadBalancing::default(),
            mss: d_mss(),
            header_bytes: d_header(),
            switch_queue: d_switch_queue(),
            switch_buffer_bytes: None,
            shared_buffer: None,
            host_queue: d_host_queue(),
            host_buffer_bytes: None,
            hop_limit: d_hop_limit(),
            refusal: Refusal::Drop,
            fastlane: None,
            allow_mismatch: false,
            failure_detection: None,
        }
    }
}

/// The `[run]` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Stop at this simulated time, e.g. `"100ms"`.
    #[serde(default)]
    pub time_limit: Option<String>,
    /// Stop after this many events.
    #[serde(default)]
    pub event_limit: Option<u64>,
    /// Stop (`no_progress`) when, with flows unfinished, no flow has
    /// started or received a new byte for this long, simulated: a run in
    /// which nothing can progress ends instead of running the clock out.
    /// Default [`DEFAULT_NO_PROGRESS_LIMIT`].
    #[serde(default)]
    pub no_progress_limit: Option<String>,
    /// Threads for this one run (default 1). The run's output is the same
    /// for every count (see docs/engine.md); designs whose hosts read each
    /// other's state run on one thread with a warning. Not written with the
    /// resolved config (results carry it): it does not change them, so a
    /// run's files are the same bytes whatever the count.
    #[serde(default, skip_serializing)]
    pub threads: Option<usize>,
    /// Groups the network is dealt into for a run on several threads
    /// (default: one per thread). Each group holds a whole copy of the
    /// network; more groups than threads are taken in turn, heaviest first,
    /// and show how evenly a finer cut balances (`pktsim bench` prints the
    /// bound). Not written with the resolved config, like `threads`.
    #[serde(default, skip_serializing)]
    pub groups: Option<usize>,
}

/// The default of `[run] no_progress_limit`: far beyond any retransmission
/// timeout a config may set (60 s is the largest the shipped ones use).
pub const DEFAULT_NO_PROGRESS_LIMIT: Duration = Duration::from_ms(1_000_000);

/// The `[output]` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Sample queues at this interval into `queues.parquet`, e.g. `"10us"`.
    #[serde(default)]
    pub queue_sample_interval: Option<String>,
    /// Sample host NIC queues as well as switch ports.
    #[serde(default)]
    pub sample_host_queues: bool,
    /// Upper edges of the flow-size buckets of the summary, bytes.
    #[serde(default)]
    pub size_buckets: Option<Vec<u64>>,
    /// Link series into `links.parquet` (`[output.links]`); off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<LinkSeriesConfig>,
    /// Packet trace into `packets.parquet` (`[output.trace]`); off when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceConfig>,
    /// Per-flow time series into `timeseries.parquet`
    /// (`[output.timeseries]`); off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<timeseries::TimeseriesConfig>,
}

/// `[output.links]`: what every port's link did, interval by interval.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSeriesConfig {
    /// Length of one interval, e.g. `"100us"`.
    pub interval: String,
}

/// Turn a TOML parse error into one line: `file:line: message`.
fn parse_error(file: &str, src: &str, e: serde_path_to_error::Error<toml::de::Error>) -> Error {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let line = inner
        .span()
        .map(|s| src[..s.start.min(src.len())].matches('\n').count() + 1)
        .unwrap_or(1);
    let msg = inner.message().trim().replace('\n', " ");
    // A missing top-level table has no line of its own: name the table,
    // not the key on the line the parser stopped at.
    if path.is_empty() || path == "." {
        if let Some(table) = missing_field(&msg) {
            return Error::Parse {
                file: file.to_string(),
                line: 1,
                msg: format!("{table}: missing: add a [{table}] table"),
            };
        }
    }
    // A value the TOML parser itself rejects (an integer above 2^63 − 1,
    // such as a seed) fails before serde has a path: take the key from
    // the line, under the table it sits in.
    let path = if path.is_empty() || path == "." {
        key_path_at(src, line).unwrap_or(path)
    } else {
        path
    };
    let msg = if msg.contains("number too large") {
        format!("{msg} (TOML integers are at most 2^63 - 1)")
    } else {
        msg
    };
    // Tagged enums are parsed from a buffered table: serde's path stops at
    // the table and toml's span points at its header. Find the key.
    let (path, key) = match unknown_key(&msg) {
        Some(k) => (path, Some(k.to_string())),
        None => match culprit_key(src, &path, &msg) {
            Some(k) => (format!("{path}.{k}"), Some(k)),
            None => (path, None),
        },
    };
    let line = key
        .as_deref()
        .and_then(|key| {
            src.lines().enumerate().skip(line - 1).find_map(|(i, l)| {
                let rest = l.trim_start().strip_prefix(key)?;
                rest.trim_start().starts_with('=').then_some(i + 1)
            })
        })
        .unwrap_or(line);
    let msg = if path.is_empty() || path == "." || msg.contains(&path) {
        msg
    } else {
        format!("{path}: {msg}")
    };
    Error::Parse {
        file: file.to_string(),
        line,
        msg,
    }
}

/// The key of the table at `path` that makes deserialization fail with
/// `msg`: the one whose removal changes the error. Serde visits a table's
/// keys before it checks for missing ones, so removing any other key leaves
/// the same type error, and removing the culprit turns it into another
/// (a missing field) or none. Only run on the error path, on small files.
fn culprit_key(src: &str, path: &str, msg: &str) -> Option<String> {
    if path.is_empty() || path == "." || msg.contains("missing field") {
        return None;
    }
    let doc: toml::Table = toml::from_str(src).ok()?;
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (name, rest) = part.split_once('[').unwrap_or((part, ""));
        segments.push((name.to_string(), None));
        for idx in rest.split('[') {
            if let Ok(i) = idx.trim_end_matches(']').parse::<usize>() {
                segments.push((String::new(), Some(i)));
            }
        }
    }
    fn table_at<'a>(
        v: &'a mut toml::Table,
        segs: &[(String, Option<usize>)],
    ) -> Option<&'a mut toml::Table> {
        let mut cur = v;
        let mut i = 0;
        while i < segs.len() {
            let mut val = cur.get_mut(&segs[i].0)?;
            i += 1;
            while let Some((_, Some(ix))) = segs.get(i) {
                val = val.as_array_mut()?.get_mut(*ix)?;
                i += 1;
            }
            cur = val.as_table_mut()?;
        }
        Some(cur)
    }
    let keys: Vec<String> = {
        let mut d = doc.clone();
        table_at(&mut d, &segments)?.keys().cloned().collect()
    };
    // Not the tag: without it serde cannot pick the variant at all.
    keys.into_iter()
        .filter(|k| k != "kind" && k != "protocol")
        .find(|k| {
            let mut d = doc.clone();
            let Some(t) = table_at(&mut d, &segments) else {
                return false;
            };
            t.remove(k);
            let Ok(text) = toml::to_string(&d) else {
                return false;
            };
            let de = toml::Deserializer::new(&text);
            match serde_path_to_error::deserialize::<_, Config>(de) {
                Ok(_) => true,
                Err(e) => e.into_inner().message().trim().replace('\n', " ") != msg,
            }
        })
}

/// The dotted path of the `key = value` on 1-based `line` of `src`, with
/// the `[table]` or `[[array]]` header above it (`workload[1].start`).
fn key_path_at(src: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = src.lines().collect();
    let text = lines.get(line.checked_sub(1)?)?;
    let (key, _) = text.split_once('=')?;
    let key = key.trim().trim_matches('"');
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    };
    if !bare(key) {
        return None;
    }
    // The nearest header above, and for an array of tables its index.
    for (i, l) in lines[..line - 1].iter().enumerate().rev() {
        let l = l.trim();
        if let Some(name) = l.strip_prefix("[[").and_then(|r| r.split_once("]]")) {
            let name = name.0.trim();
            let index = lines[..i]
                .iter()
                .filter(|x| {
                    x.trim()
                        .strip_prefix("[[")
                        .and_then(|r| r.split_once("]]"))
                        .map(|n| n.0.trim())
                        == Some(name)
                })
                .count();
            return Some(format!("{name}[{index}].{key}"));
        }
        if let Some(name) = l.strip_prefix('[').and_then(|r| r.split_once(']')) {
            return Some(format!("{}.{key}", name.0.trim()));
        }
    }
    Some(key.to_string())
}

/// The field named by a "missing field `name`" message.
fn missing_field(msg: &str) -> Option<&str> {
    let rest = &msg[msg.find("missing field `")? + "missing field `".len()..];
    Some(&rest[..rest.find('`')?])
}

/// The key named by an "unknown field `key`" message.
fn unknown_key(msg: &str) -> Option<&str> {
    let rest = &msg[msg.find("unknown field `")? + "unknown field `".len()..];
    Some(&rest[..rest.find('`')?])
}

impl Config {
    /// Parse a config from TOML text; `file` names it in errors.
    pub fn from_toml_str(src: &str, file: &str) -> Result<Config> {
        let de = toml::Deserializer::new(src);
        let mut cfg: Config =
            serde_path_to_error::deserialize(de).map_err(|e| parse_error(file, src, e))?;
        cfg.transport.resolve();
        cfg.network.resolve();
        Ok(cfg)
    }

    /// Read and parse a config file.
    pub fn load(path: &Path) -> Result<Config> {
        let src = std::fs::read_to_string(path).map_err(|e| Error::File {
            file: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        Config::from_toml_str(&src, &path.display().to_string())
    }

    /// The config as TOML with every default filled in.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

/// A validated experiment, ready to run.
pub struct Experiment {
    /// The config it came from (defaults filled in).
    pub config: Config,
    /// The built topology.
    pub topology: TopologySpec,
    /// The network, idle.
    pub net: Network,
    /// What the network was built with (a partitioned run builds one copy
    /// per group).
    pub net_params: NetworkParams,
    /// Threads for the run (`[run] threads`, at least 1).
    pub threads: usize,
    /// Groups the network is dealt into (`[run] groups`, at least 1;
    /// `None`: one per thread; 1: the run is not split).
    pub groups: Option<usize>,
    /// The flows.
    pub workload: Workload,
    /// Packet sizes.
    pub format: PacketFormat,
    /// Stop conditions and sampling.
    pub limits: RunLimits,
    /// The rules of [`semantics`] the config breaks and runs with anyway
    /// (`[network] allow_mismatch = true`), for `summary.json`.
    pub allowed_mismatches: Vec<String>,
    /// What is worth saying before the run but does not stop it (many GB
    /// of queue samples, an allowed mismatch), one line each.
    pub warnings: Vec<String>,
    /// Why the run cannot split although it asks for more than one group,
    /// so runs in one (a warning says so too); `None` when it can, or
    /// asks for one.
    pub unsplittable: Option<String>,
}

impl Experiment {
    /// Whether the run asks for more than one thread and cannot split, so
    /// runs on one ([`Experiment::unsplittable`] says why).
    pub fn keeps_to_one_thread(&self) -> bool {
        self.unsplittable.is_some()
    }
}

/// The most threads, and groups, a run may ask for: far above any core
/// count a run gains from, and low enough that their stacks and network
/// copies cannot exhaust the address space before the memory estimate
/// sees them.
pub const MAX_THREADS: usize = 1024;

/// Links shorter than this are never cut between the groups of a
/// partitioned run: a window lasts the shortest cut link's delay, and
/// windows much shorter than a packet's transmission would cost more in
/// synchronisation than they gain.
pub(crate) const MIN_CUT_DELAY: Duration = Duration::from_ns(100);

/// `n` copies of the network for the groups of a partitioned run, built
/// at once on threads of their own, sharing `routes` (the built network's
/// routing tables). Each copy is otherwise a whole network (its ports and
/// link inboxes: tens of MB on a large fat tree, most of its building
/// time spent having the system clear its fresh pages), and built one
/// after the other they were a serial start that grew with the thread
/// count (0.2 s each at k = 32 on this project's 2-core machine). The
/// copies are identical whatever thread builds them.
fn build_copies(
    topology: &TopologySpec,
    params: &NetworkParams,
    streams: &RngStreams,
    routes: &Routing,
    n: usize,
) -> Result<Vec<Network>> {
    std::thread::scope(|scope| {
        // A thread the system refuses (an address-space or process limit)
        // is a clean error, not a panic.
        let builders = (0..n)
            .map(|_| {
                let params = params.clone();
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || {
                        Network::build_sharing(topology, params, streams, routes)
                    })
                    .map_err(|e| {
                        Error::config(
                            "run.threads",
                            format!("cannot start a thread for each of {n} groups: {e}"),
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        builders
            .into_iter()
            .map(|b| {
                b.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

struct RunSetup<'a> {
    exp: Experiment,
    report: Option<&'a mut dyn FnMut(&Progress)>,
}

impl SimSetup for RunSetup<'_> {
    type Output = Result<RunOutput>;
    fn run<T: Transport>(self, t: T) -> Result<RunOutput> {
        let e = self.exp;
        let seed = e.config.seed;
        // The copies share the built network's routing tables.
        let routes = e.net.routing().clone();
        let mut sim = Simulation::new(e.net, t, e.workload, e.format, e.limits, seed);
        let groups = e.groups.unwrap_or(e.threads);
        if groups > 1 {
            sim.setup()?;
            let partition = Partition::natural(&e.topology, MIN_CUT_DELAY);
            let streams = RngStreams::new(seed);
            let nets = build_copies(&e.topology, &e.net_params, &streams, &routes, groups - 1)?;
            // What cannot split was said before the run (a warning); such a
            // run goes on in one group.
            let _ = sim.split(&partition, nets, e.threads);
        }
        run_to_end(sim, self.report)
    }
}

impl Experiment {
    /// Run the experiment to the end.
    pub fn run(self, report: Option<&mut dyn FnMut(&Progress)>) -> Result<RunOutput> {
        let transport = self.config.transport.clone();
        transport.run(RunSetup { exp: self, report })?
    }
}

/// The folder relative paths in a config file resolve against.
pub fn base_dir_of(config_path: &Path) -> PathBuf {
    config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
