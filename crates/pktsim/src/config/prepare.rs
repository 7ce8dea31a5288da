//! From a parsed [`Config`] to an [`Experiment`], in named steps: check the
//! settings that need no topology, estimate the memory the config asks for
//! before allocating any of it, build the topology and check the parts
//! belong together, build the network and the flows, resolve the run's
//! limits, and estimate again with what was generated. The steps run in
//! this order, so the first error a config hits stays the same.

use super::semantics::{self, Mismatch};
use super::{
    sanity, Config, Experiment, DEFAULT_NO_PROGRESS_LIMIT, MAX_THREADS, MIN_CUT_DELAY,
    TCP_HOST_BUFFER,
};
use crate::engine::RngStreams;
use crate::error::{Error, Result};
use crate::net::partition::Partition;
use crate::net::switch::Refusal;
use crate::net::topology::TopologySpec;
use crate::net::{LoadBalancing, Network, NetworkParams};
use crate::packet::NodeId;
use crate::resources::{Estimate, Limits};
use crate::sim::{PacketFormat, RunLimits};
use crate::time::{parse_duration, Duration, Time, MAX_DURATION, MAX_DURATION_DAYS};
use crate::workload::{self, Workload, WorkloadConfig, WorkloadEnv};
use std::path::Path;

/// The run's stop conditions and sampling, as given in `[run]` and
/// `[output]`.
struct Stops {
    time_limit: Option<Time>,
    no_progress_limit: Duration,
    sample: Option<Duration>,
    link_sample: Option<Duration>,
}

impl Config {
    /// Validate everything and build the topology, network and workload.
    /// Relative file paths resolve against `base_dir` (the config's folder).
    pub fn prepare(&self, base_dir: &Path) -> Result<Experiment> {
        self.check_network_and_transport()?;
        let limits = self.limits.resolve()?;
        self.estimate_as_configured(base_dir, &limits)?;
        let (topo, traffic_hosts) = self.build_topology()?;
        let mismatches = self.check_mismatches(&topo)?;
        let streams = RngStreams::new(self.seed);
        // Build the network first: it rejects disconnected topologies.
        let mut net_params = self.network_params();
        net_params.trace = match &self.output.trace {
            Some(t) => Some(t.spec(&topo)?),
            None => None,
        };
        let detection = super::events::detection(self.network.failure_detection.as_deref())?;
        net_params.faults = super::events::plan(&self.events, detection, &topo, self.seed)?
            .map(std::sync::Arc::new);
        let net = Network::build(&topo, net_params.clone(), &streams)?;
        sanity::check_hop_limit(&topo, self.network.hop_limit)?;
        if self.workload.is_empty() {
            return Err(Error::config("workload", "give at least one [[workload]]"));
        }
        let env = WorkloadEnv {
            n_hosts: traffic_hosts,
            host_rate: net.host_rate(NodeId(0)),
            mss: self.network.mss,
            header_bytes: self.network.header_bytes,
            base_dir,
            host_names: &topo.names[..traffic_hosts as usize],
            streams,
        };
        let workload = workload::generate(&self.workload, &env)?;
        if workload.flows.is_empty() {
            // A header-only flow list, a zero duration or zero load: a run
            // of nothing that would look like a run.
            return Err(Error::config(
                "workload",
                "makes no flows (an empty flow list, a zero duration or count?): \
                 nothing would run",
            ));
        }
        if let Some(t) = &self.output.trace {
            t.check_flows(workload.flows.len())?;
        }
        let timeseries = match &self.output.timeseries {
            Some(t) => Some(t.spec(&workload, self.seed)?),
            None => None,
        };
        let stops = self.stops()?;
        check_time_range(&topo, &workload, &self.workload)?;
        let mut warnings = self.estimate_as_generated(&topo, &workload, &stops, &limits)?;
        self.check_size_buckets()?;
        warnings.extend(self.initial_rto_below_rtt(&topo)?);
        if let Some(limit) = stops.time_limit {
            // Flows are sorted by start: those at or after the limit are
            // the tail. They never start (summary.json: not_started).
            let late = workload.flows.len() - workload.flows.partition_point(|f| f.start < limit);
            if late > 0 {
                warnings.push(format!(
                    "workload: {late} of {} flows start at or after run.time_limit ({}): \
                     they never start (summary.json counts them as not_started)",
                    workload.flows.len(),
                    limit.since(Time::ZERO)
                ));
            }
        }
        if let (Some(plan), Some(limit)) = (&net_params.faults, stops.time_limit) {
            if let Some(late) = plan.steps.iter().find(|s| s.at > limit) {
                warnings.push(format!(
                    "event: \"{}\" at {} comes after run.time_limit ({}): it never happens",
                    late.what,
                    late.at.since(Time::ZERO),
                    limit.since(Time::ZERO)
                ));
            }
        }
        let allowed_mismatches = self.allowed_mismatches(&mismatches, &mut warnings);
        let (threads, groups, unsplittable) = self.check_threads(&topo, &net)?;
        if let Some(why) = &unsplittable {
            warnings.push(format!("run.threads: {why}; the run uses one thread"));
        }
        Ok(Experiment {
            allowed_mismatches,
            warnings,
            unsplittable,
            config: self.clone(),
            topology: topo,
            net,
            net_params,
            threads,
            groups,
            workload,
            format: PacketFormat {
                mss: self.network.mss,
                header: self.network.header_bytes,
            },
            limits: RunLimits {
                time_limit: stops.time_limit,
                event_limit: self.run.event_limit,
                queue_sample_interval: stops.sample,
                sample_host_queues: self.output.sample_host_queues,
                link_sample_interval: stops.link_sample,
                timeseries,
                no_progress_limit: Some(stops.no_progress_limit),
                cancel: None,
            },
        })
    }

    /// A warning when a TCP-family run's initial RTO is below a base RTT
    /// of its topology: every first window (and SYN) would time out before
    /// its ACK could return. The defaults are a datacenter's (1 ms), so a
    /// WAN topology that keeps them gets this warning rather than silently
    /// spurious timeouts (the README's "Timers on a WAN").
    fn initial_rto_below_rtt(&self, topo: &TopologySpec) -> Result<Option<String>> {
        let Some(tcp) = self.transport.tcp()? else {
            return Ok(None);
        };
        let Some(rtt) = super::paths::long_base_rtt(topo) else {
            return Ok(None);
        };
        Ok((tcp.initial_rto < rtt).then(|| {
            format!(
                "transport.initial_rto ({}) is below a base RTT of this topology ({rtt}): \
                 first windows time out before their ACKs can return; set initial_rto above \
                 it (RFC 6298: 1s, with min_rto 200ms on a WAN)",
                tcp.initial_rto
            )
        }))
    }

    /// The run's threads and groups (`[run] threads` and `[run] groups`,
    /// at least 1; `None` groups: one per thread), and why the run cannot
    /// split when it asks to (it then uses one of each).
    fn check_threads(
        &self,
        topo: &TopologySpec,
        net: &Network,
    ) -> Result<(usize, Option<usize>, Option<String>)> {
        let threads = self.run.threads.unwrap_or(1);
        if threads == 0 {
            return Err(Error::config("run.threads", "must be at least 1"));
        }
        if self.run.groups == Some(0) {
            return Err(Error::config("run.groups", "must be at least 1"));
        }
        // Each group is a copy of the network built on a thread of its own:
        // bounded here, before any is spawned or allocated.
        for (field, n) in [
            ("run.threads", threads),
            ("run.groups", self.network_copies() as usize),
        ] {
            if n > MAX_THREADS {
                return Err(Error::config(
                    field,
                    format!("{n} is more than pktsim runs on (at most {MAX_THREADS})"),
                ));
            }
        }
        let why = if self.network_copies() < 2 {
            None
        } else if !self.transport.splits() {
            Some(format!(
                "{}'s hosts read each other's state",
                self.transport.name()
            ))
        } else if Partition::natural(topo, MIN_CUT_DELAY).len() < 2 {
            Some(format!(
                "the topology has no link between switches of at least {} to cut",
                MIN_CUT_DELAY
            ))
        } else {
            net.partition_blocker().map(str::to_string)
        };
        Ok((threads, self.run.groups, why))
    }

    /// Copies of the network a run keeps: one per group (`[run] groups`,
    /// by default one per thread).
    fn network_copies(&self) -> u64 {
        let threads = self.run.threads.unwrap_or(1).max(1);
        self.run.groups.unwrap_or(threads).max(1) as u64
    }

    /// Step 1: packets, buffers, queue disciplines, FastLane, the hop limit,
    /// the transport and its timers: everything that needs no topology.
    fn check_network_and_transport(&self) -> Result<()> {
        let n = &self.network;
        sanity::check_packets_and_buffers(self)?;
        n.switch_queue.validate("network.switch_queue")?;
        n.host_queue.validate("network.host_queue")?;
        if let Some(f) = &n.fastlane {
            f.validate()?;
            if n.refusal != Refusal::Drop {
                return Err(Error::config(
                    "network.fastlane",
                    "FastLane decides what switches do with refused packets: leave `refusal` out",
                ));
            }
        }
        if n.hop_limit > crate::net::fault::MAX_HOP_LIMIT {
            return Err(Error::config(
                "network.hop_limit",
                format!(
                    "must be at most {} (the counts above mark lost packets), got {}",
                    crate::net::fault::MAX_HOP_LIMIT,
                    n.hop_limit
                ),
            ));
        }
        if n.hop_limit < 2 {
            return Err(Error::config(
                "network.hop_limit",
                format!(
                    "must be at least 2 (host, switch, host), got {}",
                    n.hop_limit
                ),
            ));
        }
        self.transport.validate()?;
        sanity::check_timers(&self.transport)
    }

    /// Step 2: count what the config asks for (nodes, links, flows) before
    /// allocating any of it, and refuse what would not fit the limits.
    fn estimate_as_configured(&self, base_dir: &Path, limits: &Limits) -> Result<()> {
        let n = &self.network;
        let counts = self.topology.counts()?;
        let extra = self.transport.wants_extra_host() as u64;
        let mut estimate = Estimate::default();
        estimate.topology(
            counts.hosts + extra,
            counts.nodes + extra,
            counts.links + extra,
        );
        if n.load_balancing == LoadBalancing::SprayRoundRobin {
            estimate.round_robin(counts.hosts + extra, counts.nodes + extra);
        }
        estimate.copies_of_network(self.network_copies());
        let planned = workload::planned_flows(
            &self.workload,
            counts.hosts,
            self.topology.host_rate()?,
            n.mss,
            n.header_bytes,
            base_dir,
        )?;
        let total: u64 = planned.iter().fold(0, |a, (_, f)| a.saturating_add(*f));
        if total >= u32::MAX as u64 {
            let (field, _) = planned.iter().max_by_key(|(_, f)| *f).expect("flows");
            return Err(Error::config(
                field.clone(),
                format!("{total} flows: more than pktsim can number (at most 2^32 - 2 per run)"),
            ));
        }
        for (field, f) in &planned {
            estimate.flows(field, *f);
        }
        estimate.check(limits)
    }

    /// Step 3: the topology, with the extra server a transport asks for
    /// (Fastpass' arbiter), and the number of hosts the workload may use
    /// (not that server).
    fn build_topology(&self) -> Result<(TopologySpec, u32)> {
        let mut topo = self.topology.build()?;
        let traffic_hosts = topo.n_hosts;
        self.transport.validate_hosts(traffic_hosts)?;
        if self.transport.wants_extra_host() {
            topo = topo.with_extra_host(NodeId(0), "arbiter")?;
        }
        Ok((topo, traffic_hosts))
    }

    /// The run's node names by index, hosts first (as its results number
    /// them), without building anything else.
    pub fn node_names(&self) -> Result<Vec<String>> {
        Ok(self.topology_spec()?.names)
    }

    /// The topology this config builds: its nodes, hosts first, and links.
    pub fn topology_spec(&self) -> Result<TopologySpec> {
        Ok(self.build_topology()?.0)
    }

    /// Step 4: the parts must belong together unless the config says
    /// otherwise (`allow_mismatch`); returns what does not.
    fn check_mismatches(&self, topo: &TopologySpec) -> Result<Vec<Mismatch>> {
        let mismatches = semantics::mismatches(self, topo);
        if let (false, Some(m)) = (self.network.allow_mismatch, mismatches.first()) {
            return Err(Error::config(
                m.field.clone(),
                format!(
                    "{}; or, for a deliberate experiment, set [network] allow_mismatch = true",
                    m.msg
                ),
            ));
        }
        Ok(mismatches)
    }

    /// The network's settings from `[network]` and the transport.
    fn network_params(&self) -> NetworkParams {
        let n = &self.network;
        NetworkParams {
            forwarding: n.forwarding,
            load_balancing: n.load_balancing,
            header_bytes: n.header_bytes,
            switch_queue: n.switch_queue.clone(),
            switch_buffer: n.switch_port_buffer(),
            shared_buffer: n.shared_buffer.as_ref().map(|sb| (sb.bytes, sb.alpha)),
            host_queue: n.host_queue.clone(),
            // TCP-family senders wait for their NIC (per-flow backpressure),
            // so a finite buffer only bounds what many flows of one host
            // queue together; other protocols keep an unlimited NIC.
            host_buffer: n
                .host_buffer_bytes
                .unwrap_or(if self.transport.is_tcp_family() {
                    TCP_HOST_BUFFER
                } else {
                    u64::MAX
                }),
            nic_pull: false,
            eager_fifo: true,
            hop_limit: n.hop_limit,
            refusal: n.refusal,
            fastlane: n.fastlane.clone(),
            trace: None,
            faults: None,
        }
    }

    /// Step 5: the time limit, the no-progress limit, the event limit and
    /// the queue sampling interval.
    fn stops(&self) -> Result<Stops> {
        let time_limit = match &self.run.time_limit {
            Some(s) => Some(Time::ZERO + positive_duration(s, "run.time_limit")?),
            None => None,
        };
        let no_progress_limit = match &self.run.no_progress_limit {
            Some(s) => positive_duration(s, "run.no_progress_limit")?,
            None => DEFAULT_NO_PROGRESS_LIMIT,
        };
        if self.run.event_limit == Some(0) {
            return Err(Error::config(
                "run.event_limit",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        let sample = match &self.output.queue_sample_interval {
            Some(s) => Some(positive_duration(s, "output.queue_sample_interval")?),
            None => None,
        };
        let link_sample = match &self.output.links {
            Some(l) => Some(positive_duration(&l.interval, "output.links.interval")?),
            None => None,
        };
        Ok(Stops {
            time_limit,
            no_progress_limit,
            sample,
            link_sample,
        })
    }

    /// Step 6: the estimate again, with the flows as generated, queue
    /// samples and packets: the run allocates these as it goes. Returns the
    /// warnings worth giving before the run (many queue samples).
    fn estimate_as_generated(
        &self,
        topo: &TopologySpec,
        workload: &Workload,
        stops: &Stops,
        limits: &Limits,
    ) -> Result<Vec<String>> {
        let mut warnings: Vec<String> = Vec::new();
        let mut estimate = Estimate::default();
        estimate.topology(
            topo.n_hosts as u64,
            topo.n_nodes() as u64,
            topo.links.len() as u64,
        );
        if self.network.load_balancing == LoadBalancing::SprayRoundRobin {
            estimate.round_robin(topo.n_hosts as u64, topo.n_nodes() as u64);
        }
        estimate.copies_of_network(self.network_copies());
        estimate.flows("workload", workload.flows.len() as u64);
        if let Some(iv) = stops.sample {
            let ticks = sample_horizon(topo, workload, stops.time_limit).ps() / iv.ps() + 1;
            let ports = 2 * topo.links.len() as u64;
            let ports = if self.output.sample_host_queues {
                ports
            } else {
                ports - topo.n_hosts as u64
            };
            estimate.queue_samples(ticks, ports);
            warnings.extend(crate::resources::sample_warning(
                ticks.saturating_mul(ports),
            ));
        }
        if let Some(iv) = stops.link_sample {
            // One more at the run's end.
            let ticks = sample_horizon(topo, workload, stops.time_limit).ps() / iv.ps() + 1;
            let ports = 2 * topo.links.len() as u64;
            estimate.link_samples(ticks, ports);
            warnings.extend(crate::resources::link_sample_warning(
                ticks.saturating_mul(ports),
            ));
        }
        let mss = self.network.mss as u64;
        let packets = workload
            .flows
            .iter()
            .fold(0u64, |a, f| a.saturating_add(f.size.div_ceil(mss)));
        estimate.packets("workload", packets);
        estimate.check(limits)?;
        Ok(warnings)
    }

    /// `[output] size_buckets`: a strictly increasing list, if given.
    fn check_size_buckets(&self) -> Result<()> {
        if let Some(b) = &self.output.size_buckets {
            if b.is_empty() || b.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::config(
                    "output.size_buckets",
                    "must be a non-empty, strictly increasing list of byte sizes",
                ));
            }
        }
        Ok(())
    }

    /// The mismatches run with anyway (`allow_mismatch`), for
    /// `summary.json`; each is also a warning, as is an `allow_mismatch`
    /// that allows nothing.
    fn allowed_mismatches(
        &self,
        mismatches: &[Mismatch],
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        let allow = self.network.allow_mismatch;
        let allowed: Vec<String> = if allow {
            mismatches.iter().map(ToString::to_string).collect()
        } else {
            Vec::new()
        };
        if allow && allowed.is_empty() {
            warnings.push(
                "network.allow_mismatch: set, but nothing mismatches; leave it out".to_string(),
            );
        }
        for m in &allowed {
            warnings.push(format!("running with a mismatch (allow_mismatch): {m}"));
        }
        allowed
    }
}

/// A duration setting that must be positive; errors name `field`.
fn positive_duration(s: &str, field: &str) -> Result<Duration> {
    let d = parse_duration(s).map_err(|m| Error::config(field, m))?;
    if d == Duration::ZERO {
        return Err(Error::config(field, "must be positive"));
    }
    Ok(d)
}

/// Every flow must be able to finish inside the time range: sent alone
/// over the slowest link from its start. The error names the workload
/// field the flow came from and, in the message, the link.
fn check_time_range(
    topo: &TopologySpec,
    workload: &Workload,
    cfgs: &[WorkloadConfig],
) -> Result<()> {
    let Some(slowest) = topo.links.iter().map(|l| l.rate).min() else {
        return Ok(());
    };
    let end = Time::ZERO + MAX_DURATION;
    let late = workload.flows.iter().find(|f| {
        slowest
            .checked_tx_time(f.size)
            .is_none_or(|d| f.start > end || d > end.since(f.start))
    });
    let Some(f) = late else {
        return Ok(());
    };
    let tag = workload.tags.get(f.tag as usize);
    let field = cfgs
        .iter()
        .enumerate()
        .find(|(_, c)| Some(&c.tag()) == tag)
        .map_or_else(
            || "workload".to_string(),
            |(i, c)| format!("workload[{i}].{}", c.size_field()),
        );
    Err(Error::config(
        field,
        format!(
            "flow {} ({} bytes, starting at {:.3} s) cannot be sent over the topology's slowest \
             link ({slowest}) within the simulator's time range of {MAX_DURATION_DAYS} days",
            f.id.0,
            f.size,
            f.start.as_secs_f64(),
        ),
    ))
}

/// A lower bound on how long a run lasts, for the queue-sample estimate:
/// until the last flow starts, or the largest is sent at the host rate,
/// or the time limit if that is earlier.
fn sample_horizon(topo: &TopologySpec, workload: &Workload, limit: Option<Time>) -> Duration {
    let last = workload.flows.last().map_or(Time::ZERO, |f| f.start);
    let largest = workload.flows.iter().map(|f| f.size).max().unwrap_or(0);
    let fastest = topo.links.iter().map(|l| l.rate).max();
    let send = fastest
        .and_then(|r| r.checked_tx_time(largest))
        .unwrap_or(MAX_DURATION);
    let end = (last.since(Time::ZERO)).max(send);
    match limit {
        Some(t) => end.min(t.since(Time::ZERO)),
        None => end,
    }
}
