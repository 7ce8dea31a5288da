//! What a run will need, estimated from the config's numbers before
//! anything is allocated, and the limits a run may not exceed.
//!
//! A config can ask for far more than a machine has (`leaves = 200000`
//! asks for hundreds of GB of routing tables; a 1 ps queue sample interval
//! for billions of samples). Allocation failure aborts the process
//! (and a Python interpreter with it), so [`Config::prepare`] compares an
//! estimate with [`Limits`] first and refuses with an error that names the
//! field responsible, the estimate and how to raise the limit.
//!
//! The limits: `max_memory` (default: 16 GB or the machine's physical
//! memory, whichever is smaller) and `max_events` (default 10^12, a day or
//! more of wall time). Each is set, first match wins, by the command line
//! (`--max-memory`, `--max-events`), the config's `[limits]` table, or the
//! environment (`PKTSIM_MAX_MEMORY`, `PKTSIM_MAX_EVENTS`). Whatever is
//! set, the memory limit never exceeds what the operating system lets the
//! process have ([`os_limits`]: the address-space and cgroup limits).
//!
//! [`Config::prepare`]: crate::config::Config::prepare

pub mod os_limits;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Default memory limit when the machine's memory is unknown, bytes.
pub const DEFAULT_MAX_MEMORY: u64 = 16_000_000_000;
/// Default event limit.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000_000;
/// Environment variable for the memory limit (e.g. `64GB`).
pub const ENV_MAX_MEMORY: &str = "PKTSIM_MAX_MEMORY";
/// Environment variable for the event limit.
pub const ENV_MAX_EVENTS: &str = "PKTSIM_MAX_EVENTS";

// Bytes per item, rounded up from the structs (and their share of the
// vectors that hold them) so that the estimate errs on the high side.
/// A node: its name, ports list and random stream.
const NODE_BYTES: u64 = 160;
/// A port: its state (queue, counters), the inbox of the link it feeds
/// (the packets on the wire) and its priority rate; from the structs, so
/// that the estimate follows them (a fixed 320 had fallen to half of 648).
const PORT_BYTES: u64 = (std::mem::size_of::<crate::net::port::Port>()
    + std::mem::size_of::<crate::net::inbox::LinkInbox>()
    + std::mem::size_of::<u64>()) as u64;
/// A routing entry (switch × leaf switch, and two per host).
const ROUTE_BYTES: u64 = 12;
/// What [`Estimate::topology`] calls the routing tables: one set for all
/// copies of the network ([`crate::net::routing::Routing`] shares them).
const ROUTING_TABLES: &str = "routing entries (switches × leaves)";
/// A flow: its spec while generated, transport state and its result row.
const FLOW_BYTES: u64 = 400;
/// A queue sample, with the doubling of the vector that collects them.
const SAMPLE_BYTES: u64 = 48;
/// Events per data packet (one per hop and a few at the ends), an upper
/// estimate for the shallow trees pktsim builds.
const EVENTS_PER_PACKET: u64 = 8;
/// Bytes of one queue sample in `queues.parquet` before compression
/// (time 8, node 4, port 4, bytes 8, packets 4).
const SAMPLE_FILE_BYTES: u64 = 28;
/// A link sample ([`crate::metrics::LinkSample`], 144 bytes), with the
/// doubling of the vector that collects them.
const LINK_SAMPLE_BYTES: u64 = 216;
/// Bytes of one row of `links.parquet` before compression (20 columns of
/// 4 or 8 bytes).
const LINK_SAMPLE_FILE_BYTES: u64 = 148;
/// Queue samples above this many bytes on disk get a warning at validate:
/// the run may be allowed, but the user should know before it starts.
pub const SAMPLE_WARN_BYTES: u64 = 2_000_000_000;

/// The warning for `samples` queue samples, when they would fill more
/// than [`SAMPLE_WARN_BYTES`] of `queues.parquet`.
pub fn sample_warning(samples: u64) -> Option<String> {
    let bytes = samples.saturating_mul(SAMPLE_FILE_BYTES);
    (bytes > SAMPLE_WARN_BYTES).then(|| {
        format!(
            "output.queue_sample_interval: {samples} queue samples would write about {} to \
             queues.parquet; sample less often, or only the ports you need",
            human_bytes(bytes)
        )
    })
}

/// The warning for `samples` link samples, when they would fill more than
/// [`SAMPLE_WARN_BYTES`] of `links.parquet`.
pub fn link_sample_warning(samples: u64) -> Option<String> {
    let bytes = samples.saturating_mul(LINK_SAMPLE_FILE_BYTES);
    (bytes > SAMPLE_WARN_BYTES).then(|| {
        format!(
            "output.links.interval: {samples} link samples would write about {} to \
             links.parquet; take a longer interval",
            human_bytes(bytes)
        )
    })
}

/// The `[limits]` table of a config: both optional.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Memory a run may use, e.g. `"64GB"` or `"512GiB"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory: Option<String>,
    /// Events a run may take (queue samples and an estimate per packet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u64>,
}

impl LimitsConfig {
    /// True when nothing is set (the table is then left out of the resolved config).
    pub fn is_default(&self) -> bool {
        *self == LimitsConfig::default()
    }

    /// The limits in force: this table, else the environment, else the defaults.
    pub fn resolve(&self) -> Result<Limits> {
        let mem = match &self.max_memory {
            Some(s) => parse_bytes(s).map_err(|m| Error::config("limits.max_memory", m))?,
            None => match std::env::var(ENV_MAX_MEMORY) {
                Ok(s) => parse_bytes(&s).map_err(|m| Error::config(ENV_MAX_MEMORY, m))?,
                Err(_) => default_max_memory(),
            },
        };
        let events = match self.max_events {
            Some(n) => n,
            None => match std::env::var(ENV_MAX_EVENTS) {
                Ok(s) => s.trim().replace('_', "").parse().map_err(|_| {
                    Error::config(ENV_MAX_EVENTS, format!("{s:?} is not a whole number"))
                })?,
                Err(_) => DEFAULT_MAX_EVENTS,
            },
        };
        let (mem, os_cap) = under_os_cap(mem, os_limits::tightest());
        Ok(Limits {
            max_memory_bytes: mem,
            max_events: events,
            os_cap,
        })
    }
}

/// `mem`, or the operating system's cap when that is smaller (with the
/// cap's description).
pub fn under_os_cap(mem: u64, cap: Option<os_limits::MemoryCap>) -> (u64, Option<&'static str>) {
    match cap {
        Some(c) if c.bytes < mem => (c.bytes, Some(c.source)),
        _ => (mem, None),
    }
}

/// 16 GB, or the machine's physical memory when that is smaller.
pub fn default_max_memory() -> u64 {
    physical_memory().map_or(DEFAULT_MAX_MEMORY, |m| m.min(DEFAULT_MAX_MEMORY))
}

/// Physical memory (Linux `MemTotal`), bytes.
fn physical_memory() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Parse a byte count such as `"16GB"`, `"512 GiB"`, `"2e9"` or `"800MB"`.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        u => {
            return Err(format!(
                "unknown size unit {u:?} in {s:?} (use e.g. \"64GB\")"
            ))
        }
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("cannot read a size in {s:?} (use e.g. \"64GB\")"))?;
    let b = v * mult;
    if !(b.is_finite() && b >= 1.0 && b < u64::MAX as f64) {
        return Err(format!("size {s:?} is out of range"));
    }
    Ok(b as u64)
}

/// Limits a run may not exceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Memory, bytes.
    pub max_memory_bytes: u64,
    /// Events.
    pub max_events: u64,
    /// When the memory limit is the operating system's (address space,
    /// cgroup), which one: no pktsim setting can raise it.
    pub os_cap: Option<&'static str>,
}

/// One part of an estimate: how much of what, and the config field that asks for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The config field responsible, e.g. `topology` or `output.queue_sample_interval`.
    pub field: String,
    /// What is counted, e.g. `routing entries (nodes × hosts)`.
    pub what: String,
    /// How many.
    pub count: u64,
    /// Bytes each.
    pub bytes_each: u64,
}

impl Part {
    /// Memory of this part, saturating.
    pub fn bytes(&self) -> u64 {
        self.count.saturating_mul(self.bytes_each)
    }
}

/// A resource estimate: memory parts and events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    /// What takes memory.
    pub parts: Vec<Part>,
    /// Events the run will take, at least (0 when not estimated).
    pub events: u64,
    /// The field that asks for most of the events.
    pub events_field: String,
}

impl Estimate {
    /// Add a part.
    pub fn add(&mut self, field: &str, what: &str, count: u64, bytes_each: u64) {
        self.parts.push(Part {
            field: field.to_string(),
            what: what.to_string(),
            count,
            bytes_each,
        });
    }

    /// Memory for nodes, ports and routing tables of a topology. Routing
    /// keeps one entry per (switch, leaf switch) and two per host
    /// ([`crate::net::routing`]); leaves are at most min(switches, hosts).
    pub fn topology(&mut self, hosts: u64, nodes: u64, links: u64) {
        self.add("topology", "nodes", nodes, NODE_BYTES);
        self.add("topology", "ports", links.saturating_mul(2), PORT_BYTES);
        let switches = nodes.saturating_sub(hosts);
        self.add(
            "topology",
            ROUTING_TABLES,
            switches
                .saturating_mul(switches.min(hosts))
                .saturating_add(hosts.saturating_mul(2)),
            ROUTE_BYTES,
        );
    }

    /// Count the network's memory (the parts [`Estimate::topology`] and
    /// [`Estimate::round_robin`] added) `copies` times: a run on several
    /// threads keeps one copy of the network per thread. The routing tables
    /// are counted once: the copies share them.
    pub fn copies_of_network(&mut self, copies: u64) {
        for p in &mut self.parts {
            let per_copy = p.field == "topology" && p.what != ROUTING_TABLES;
            if per_copy || p.field == "network.load_balancing" {
                p.count = p.count.saturating_mul(copies);
            }
        }
    }

    /// Memory of round-robin spraying's counters, one per (switch,
    /// destination host).
    pub fn round_robin(&mut self, hosts: u64, nodes: u64) {
        self.add(
            "network.load_balancing",
            "round-robin counters (switches × hosts)",
            nodes.saturating_sub(hosts).saturating_mul(hosts),
            4,
        );
    }

    /// Memory for `n` flows asked for by `field`.
    pub fn flows(&mut self, field: &str, n: u64) {
        self.add(field, "flows", n, FLOW_BYTES);
    }

    /// Memory and events of queue sampling: `ticks` samples of `ports` ports.
    pub fn queue_samples(&mut self, ticks: u64, ports: u64) {
        let field = "output.queue_sample_interval";
        self.add(
            field,
            "queue samples",
            ticks.saturating_mul(ports),
            SAMPLE_BYTES,
        );
        self.add_events(field, ticks);
    }

    /// Memory and events of link series: `ticks` samples of `ports` ports.
    pub fn link_samples(&mut self, ticks: u64, ports: u64) {
        let field = "output.links.interval";
        self.add(
            field,
            "link samples",
            ticks.saturating_mul(ports),
            LINK_SAMPLE_BYTES,
        );
        self.add_events(field, ticks);
    }

    /// Events of `packets` data packets.
    pub fn packets(&mut self, field: &str, packets: u64) {
        self.add_events(field, packets.saturating_mul(EVENTS_PER_PACKET));
    }

    fn add_events(&mut self, field: &str, n: u64) {
        if n > self.events {
            self.events_field = field.to_string();
        }
        self.events = self.events.saturating_add(n);
    }

    /// Total memory, bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |a, p| a.saturating_add(p.bytes()))
    }

    /// Refuse an estimate above `limits`, naming the largest part's field.
    pub fn check(&self, limits: &Limits) -> Result<()> {
        let mem = self.memory_bytes();
        if mem > limits.max_memory_bytes {
            let Some(big) = self.parts.iter().max_by_key(|p| p.bytes()) else {
                return Ok(());
            };
            let (limit, remedy) = match limits.os_cap {
                Some(source) => (
                    format!(
                        "the {} that {source} leaves",
                        human_bytes(limits.max_memory_bytes)
                    ),
                    "raise that limit or ask for less".to_string(),
                ),
                None => (
                    format!("the limit of {}", human_bytes(limits.max_memory_bytes)),
                    format!(
                        "raise it with [limits] max_memory, --max-memory or {ENV_MAX_MEMORY} \
                         if the machine has it"
                    ),
                ),
            };
            return Err(Error::config(
                big.field.clone(),
                format!(
                    "this run needs about {} of memory ({} {} alone take {}), above {limit}; {remedy}",
                    human_bytes(mem),
                    big.count,
                    big.what,
                    human_bytes(big.bytes()),
                ),
            ));
        }
        if self.events > limits.max_events {
            return Err(Error::config(
                self.events_field.clone(),
                format!(
                    "this run needs about {:.1e} events, above the limit of {:.1e}; \
                     raise it with [limits] max_events, --max-events or {ENV_MAX_EVENTS}",
                    self.events as f64, limits.max_events as f64,
                ),
            ));
        }
        Ok(())
    }
}

/// `1.2 GB`, `320 GB`, `15 TB`: bytes for people.
pub fn human_bytes(b: u64) -> String {
    let v = b as f64;
    for (unit, div) in [
        ("EB", 1e18),
        ("PB", 1e15),
        ("TB", 1e12),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
    ] {
        if v >= div {
            // Three significant digits.
            let x = v / div;
            let n = match x {
                x if x >= 100.0 => format!("{x:.0}"),
                x if x >= 10.0 => format!("{x:.1}"),
                x => format!("{x:.2}"),
            };
            let n = if n.contains('.') {
                n.trim_end_matches('0').trim_end_matches('.')
            } else {
                &n
            };
            return format!("{n} {unit}");
        }
    }
    format!("{b} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_parse_with_units() {
        assert_eq!(parse_bytes("16GB").unwrap(), 16_000_000_000);
        assert_eq!(parse_bytes("2 GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("2e9").unwrap(), 2_000_000_000);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("-1GB").is_err());
        assert!(parse_bytes("3 furlongs").is_err());
    }

    #[test]
    fn threads_count_the_ports_once_per_copy_and_the_routes_and_flows_once() {
        let total = |e: &Estimate| e.parts.iter().map(Part::bytes).sum::<u64>();
        let mut one = Estimate::default();
        one.topology(16, 20, 32);
        let network = total(&one);
        // 4 switches × 4 leaves, and two entries per host.
        let routes = (4 * 4 + 2 * 16) * ROUTE_BYTES;
        assert_eq!(network, 20 * NODE_BYTES + 64 * PORT_BYTES + routes);
        one.flows("workload[0].flows", 1000);
        let flows = total(&one) - network;
        let mut three = Estimate::default();
        three.topology(16, 20, 32);
        three.flows("workload[0].flows", 1000);
        three.copies_of_network(3);
        assert_eq!(total(&three), 3 * (network - routes) + routes + flows);
    }

    #[test]
    fn an_estimate_above_the_limit_names_its_largest_part() {
        let mut e = Estimate::default();
        // leaves = 200000 (4 hosts each) under 2 spines: 200,002 switches
        // by 200,000 leaves.
        e.topology(800_000, 1_000_002, 800_000 + 400_000);
        e.flows("workload[0].flows", 200);
        let limits = Limits {
            max_memory_bytes: 16_000_000_000,
            max_events: DEFAULT_MAX_EVENTS,
            os_cap: None,
        };
        let err = e.check(&limits).unwrap_err().to_string();
        assert!(err.starts_with("topology: "), "{err}");
        assert!(
            err.contains("routing entries") && err.contains("480 GB"),
            "{err}"
        );
        assert!(err.contains("--max-memory"), "{err}");
        let roomy = Limits {
            max_memory_bytes: 1 << 40,
            ..limits
        };
        assert!(e.check(&roomy).is_ok());
    }

    #[test]
    fn events_above_the_limit_are_refused() {
        let mut e = Estimate::default();
        e.queue_samples(2_000_000_000_000, 1);
        let limits = Limits {
            max_memory_bytes: u64::MAX,
            max_events: DEFAULT_MAX_EVENTS,
            os_cap: None,
        };
        let err = e.check(&limits).unwrap_err().to_string();
        assert!(err.starts_with("output.queue_sample_interval: "), "{err}");
        assert!(err.contains("events"), "{err}");
    }

    #[test]
    fn an_os_cap_below_the_limit_binds_and_is_named() {
        let cap = os_limits::MemoryCap {
            bytes: 2_000_000_000,
            source: "the process's address-space limit (ulimit -v)",
        };
        assert_eq!(under_os_cap(16_000_000_000, None), (16_000_000_000, None));
        assert_eq!(
            under_os_cap(16_000_000_000, Some(cap)),
            (2_000_000_000, Some(cap.source))
        );
        assert_eq!(
            under_os_cap(1_000_000_000, Some(cap)),
            (1_000_000_000, None)
        );
        let mut e = Estimate::default();
        e.queue_samples(100_000_000, 1);
        let limits = Limits {
            max_memory_bytes: 2_000_000_000,
            max_events: DEFAULT_MAX_EVENTS,
            os_cap: Some(cap.source),
        };
        let err = e.check(&limits).unwrap_err().to_string();
        assert!(err.starts_with("output.queue_sample_interval: "), "{err}");
        assert!(
            err.contains("ulimit -v") && !err.contains("--max-memory"),
            "{err}"
        );
    }

    #[test]
    fn gigabytes_of_queue_samples_are_warned_about() {
        assert_eq!(sample_warning(1_000_000), None);
        let w = sample_warning(500_000_000).unwrap();
        assert!(w.starts_with("output.queue_sample_interval: "), "{w}");
        assert!(w.contains("14 GB"), "{w}");
    }

    #[test]
    fn gigabytes_of_link_samples_are_warned_about_and_counted() {
        assert_eq!(link_sample_warning(1_000_000), None);
        let w = link_sample_warning(100_000_000).unwrap();
        assert!(w.starts_with("output.links.interval: "), "{w}");
        assert!(w.contains("14.8 GB"), "{w}");
        // The memory per sample covers the vector's doubling.
        let size = std::mem::size_of::<crate::metrics::LinkSample>() as u64;
        assert!(size * 3 / 2 <= LINK_SAMPLE_BYTES, "{size}");
        let mut e = Estimate::default();
        e.link_samples(1_000, 10);
        assert_eq!(e.events, 1_000);
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(480_000_000_000), "480 GB");
        assert_eq!(human_bytes(1_500_000), "1.5 MB");
        assert_eq!(human_bytes(12), "12 B");
    }
}
