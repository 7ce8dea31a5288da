//! What a run measures: one record per flow, optional queue samples, network
//! counters, and the summary computed from them.

#[cfg(test)]
pub(crate) mod fixtures;
pub mod flows_table;
pub mod ideal;
pub mod phases;
pub mod queries;
pub mod reference;
pub mod summary;
pub mod timeseries;

use crate::packet::NodeId;
use crate::time::{Duration, Time};

/// The outcome of one flow.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResult {
    /// Flow id (its index in the workload).
    pub id: u32,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Flow size in payload bytes.
    pub size_bytes: u64,
    /// When the flow started.
    pub start: Time,
    /// When the receiver had every byte (`None` if the run ended first).
    pub finish: Option<Time>,
    /// FCT on an idle network at line rate (see [`ideal`]).
    pub ideal_fct: Duration,
    /// Payload bytes delivered in order to the receiver by the end of the run.
    pub bytes_received: u64,
    /// Data packets the sender retransmitted.
    pub retransmits: u32,
    /// Packets of this flow (data or control) dropped in the network.
    pub drops: u32,
    /// Workload tag (which `[[workload]]` entry made the flow).
    pub tag: String,
    /// The query the flow belongs to (`queries` workloads; see [`queries`]).
    pub query: Option<u32>,
}

impl FlowResult {
    /// Flow completion time, if the flow finished.
    pub fn fct(&self) -> Option<Duration> {
        self.finish.map(|f| f - self.start)
    }
    /// FCT divided by the ideal FCT (≥ 1 by construction of the ideal).
    pub fn slowdown(&self) -> Option<f64> {
        self.fct()
            .map(|f| f.ps() as f64 / self.ideal_fct.ps().max(1) as f64)
    }
}

/// One sample of one port's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSample {
    /// Sample time.
    pub time: Time,
    /// Node owning the port.
    pub node: NodeId,
    /// Port index within the network.
    pub port: u32,
    /// Bytes queued (excluding the packet being transmitted).
    pub bytes: u64,
    /// Packets queued.
    pub packets: u32,
}

/// One port's link counters as of one instant (`[output.links]`): totals
/// since the run began, so that any two samples of a port give what the
/// link did between them. A transmission counts when it starts; busy time
/// counts as it passes, so a packet on the wire at the sample is busy up
/// to the sample and not after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkSample {
    /// Sample time.
    pub time: Time,
    /// Node that transmits on the port.
    pub node: NodeId,
    /// Port index within the network.
    pub port: u32,
    /// Node at the other end of the link.
    pub peer: NodeId,
    /// Link rate in bit/s.
    pub rate_bps: u64,
    /// Bytes whose transmission started.
    pub bytes: u64,
    /// Packets whose transmission started.
    pub packets: u64,
    /// Time spent transmitting.
    pub busy: Duration,
    /// Packets the port marked with ECN CE.
    pub ecn_marked: u64,
    /// Packets the switch deflected into this port.
    pub deflected_in: u64,
    /// Notices the switch sent back to sources for packets this port
    /// refused (FastLane, `refusal = "notify"`).
    pub notices: u64,
    /// Packets dropped at this port, by [`DropReason`] index.
    pub dropped: [u64; DropReason::COUNT],
}

impl LinkSample {
    /// Add the counts of `other`, a sample of the same port at the same
    /// time taken on the link's other side (see
    /// [`crate::net::Network::sample_links_of`]).
    pub fn add(&mut self, other: &LinkSample) {
        debug_assert_eq!((self.time, self.port), (other.time, other.port));
        self.bytes += other.bytes;
        self.packets += other.packets;
        self.busy += other.busy;
        self.ecn_marked += other.ecn_marked;
        self.deflected_in += other.deflected_in;
        self.notices += other.notices;
        for (d, o) in self.dropped.iter_mut().zip(other.dropped) {
            *d += o;
        }
    }
}

/// Packet counters for the whole network, checked by the conservation
/// invariant: `sent + made = delivered + dropped + in_flight`, per packet
/// kind (`made`: packets switches create, such as notices to a source).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Packets handed to a host NIC by a transport, per kind (data, control).
    pub sent: [u64; 2],
    /// Packets that reached their destination host, per kind.
    pub delivered: [u64; 2],
    /// Packets dropped, per kind and reason (see [`DropReason`]).
    pub dropped: [[u64; DropReason::COUNT]; 2],
    /// The same drops per kind and where they happened (see [`DropSite`]).
    pub dropped_at: [[u64; DropSite::COUNT]; 2],
    /// Packets still in a queue or on a link at the end, per kind.
    pub in_flight: [u64; 2],
    /// Packets marked with ECN CE.
    pub ecn_marked: u64,
    /// Packet-hops: a packet crossing one link counts one.
    pub packet_hops: u64,
    /// Packets made by switches (notices to sources), per kind.
    pub made: [u64; 2],
    /// Packets a switch sent out of another port than the one that refused
    /// them (each deflection counts once; the packet travels on).
    pub deflected: u64,
    /// Data packets a switch cut to their headers (the header travels on).
    pub trimmed: u64,
}

impl Counters {
    /// Add `other`'s counts to these: the counts of two parts of the
    /// network (pieces of a partitioned run) make those of the whole.
    /// Sums, so the result does not depend on the order of the parts.
    pub fn add(&mut self, other: &Counters) {
        // Named field by field, so that a new counter cannot be forgotten.
        let Counters {
            sent,
            delivered,
            dropped,
            dropped_at,
            in_flight,
            ecn_marked,
            packet_hops,
            made,
            deflected,
            trimmed,
        } = other;
        fn add_each<const N: usize>(to: &mut [u64; N], from: &[u64; N]) {
            for (t, f) in to.iter_mut().zip(from) {
                *t += f;
            }
        }
        add_each(&mut self.sent, sent);
        add_each(&mut self.delivered, delivered);
        for (to, from) in self.dropped.iter_mut().zip(dropped) {
            add_each(to, from);
        }
        for (to, from) in self.dropped_at.iter_mut().zip(dropped_at) {
            add_each(to, from);
        }
        add_each(&mut self.in_flight, in_flight);
        self.ecn_marked += ecn_marked;
        self.packet_hops += packet_hops;
        add_each(&mut self.made, made);
        self.deflected += deflected;
        self.trimmed += trimmed;
    }

    /// Total drops of one kind over all reasons.
    pub fn dropped_total(&self, kind: usize) -> u64 {
        self.dropped[kind].iter().sum()
    }
    /// Whether every packet is accounted for.
    pub fn conserved(&self) -> bool {
        (0..2).all(|k| {
            self.sent[k] + self.made[k]
                == self.delivered[k] + self.dropped_total(k) + self.in_flight[k]
        })
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The arriving packet found its queue (or the shared buffer) full.
    BufferFull = 0,
    /// A queued packet was pushed out to make room (e.g. pFabric's lowest priority).
    Evicted = 1,
    /// An AQM (e.g. CoDel) dropped it.
    Aqm = 2,
    /// A protocol rule dropped it (e.g. an expired token or a selective drop).
    Protocol = 3,
    /// It reached a switch having crossed the network's hop limit (a TTL).
    HopLimit = 4,
    /// It was queued for, or on the wire of, a link that went down, or was
    /// offered to a link while down (`[[event]]`, `action = "down"`).
    LinkDown = 5,
    /// A lossy link lost it (`[[event]]`, `action = "loss"`: a gray failure).
    LinkLoss = 6,
}

impl DropReason {
    /// Number of reasons.
    pub const COUNT: usize = Self::ALL.len();
    /// All reasons, in index order.
    pub const ALL: [DropReason; 7] = [
        DropReason::BufferFull,
        DropReason::Evicted,
        DropReason::Aqm,
        DropReason::Protocol,
        DropReason::HopLimit,
        DropReason::LinkDown,
        DropReason::LinkLoss,
    ];
    /// Name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::BufferFull => "buffer_full",
            DropReason::Evicted => "evicted",
            DropReason::Aqm => "aqm",
            DropReason::Protocol => "protocol",
            DropReason::HopLimit => "hop_limit",
            DropReason::LinkDown => "link_down",
            DropReason::LinkLoss => "link_loss",
        }
    }
}

/// Where a packet was dropped, by the port that refused it (a hop-limit
/// drop, made on arrival at a switch, by the link it arrived on): the
/// pHost paper's drops per hop (Gao et al., CoNEXT 2015, Fig. 5f) tell the
/// sender's NIC queue from the fabric and the last hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropSite {
    /// A host's NIC queue (the packet's first hop).
    HostNic = 0,
    /// A switch port towards another switch.
    Fabric = 1,
    /// A switch port towards a host (the packet's last hop).
    LastHop = 2,
}

impl DropSite {
    /// Number of sites.
    pub const COUNT: usize = Self::ALL.len();
    /// All sites, in index order.
    pub const ALL: [DropSite; 3] = [DropSite::HostNic, DropSite::Fabric, DropSite::LastHop];
    /// Name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            DropSite::HostNic => "host_nic",
            DropSite::Fabric => "fabric",
            DropSite::LastHop => "last_hop",
        }
    }
}

/// A scheduled change to the network (`[[event]]`) as the run applied it:
/// when, what, and the run's packet counters just before it, so that what
/// happened before, during and after a failure can be told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultMark {
    /// When the change took effect.
    pub at: Time,
    /// What changed, in words (e.g. `"down link leaf0-spine1"`).
    pub what: String,
    /// The network's counters just before the change.
    pub counters_before: Counters,
}

/// How a partitioned run's windows went: for benchmarks and the curious,
/// never written to a run's files (they are the same bytes whatever the
/// number of threads or groups).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Groups the network was dealt into.
    pub groups: usize,
    /// Threads that ran them.
    pub threads: usize,
    /// Windows run.
    pub windows: u64,
    /// Events run in the windows (the serial loop runs the rest).
    pub events: u64,
    /// The sum over the windows of the events of each window's busiest
    /// group ([`crate::engine::windows::WindowEnd::critical`]).
    pub critical: u64,
    /// The events each group ran in the windows, by group.
    pub events_by_group: Vec<u64>,
}

impl WindowStats {
    /// The most a thread per group could gain over one thread on the
    /// windows' events, from the balance of the groups alone:
    /// `events / critical` (1 when nothing ran).
    pub fn balance_bound(&self) -> f64 {
        if self.critical == 0 {
            1.0
        } else {
            self.events as f64 / self.critical as f64
        }
    }

    /// The busiest group's events over the mean group's, over the whole
    /// run (1: the groups shared the events evenly). The part of
    /// [`WindowStats::balance_bound`]'s shortfall that a better deal of
    /// the pieces could remove; the rest is how the load moves from one
    /// window to the next.
    pub fn busiest_over_mean(&self) -> f64 {
        let n = self.events_by_group.len().max(1) as f64;
        let busiest = self.events_by_group.iter().copied().max().unwrap_or(0) as f64;
        if self.events == 0 {
            1.0
        } else {
            busiest * n / self.events as f64
        }
    }
}

/// Everything a finished run hands to the output writer.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// One record per flow, in flow-id order.
    pub flows: Vec<FlowResult>,
    /// Queue samples, in time order (empty unless sampling was asked for).
    pub queue_samples: Vec<QueueSample>,
    /// Link samples, by time then port (empty unless `[output.links]`
    /// asked for them).
    pub link_samples: Vec<LinkSample>,
    /// The packet trace's rows in order, and whether more passed its
    /// filters than it kept (`None` unless `[output.trace]` asked for it).
    pub trace: Option<(Vec<crate::net::trace::TraceRow>, bool)>,
    /// The per-flow time series in order (empty unless
    /// `[output.timeseries]` asked for it).
    pub timeseries: Vec<timeseries::SeriesRow>,
    /// Network-wide packet counters.
    pub counters: Counters,
    /// The scheduled network changes the run applied, in time order (empty
    /// without `[[event]]`s).
    pub faults: Vec<FaultMark>,
    /// Events processed.
    pub events: u64,
    /// How the windows of a partitioned run went (`None`: the run was not
    /// split).
    pub windows: Option<WindowStats>,
    /// Simulated time at the end of the run.
    pub sim_time: Time,
    /// Wall-clock time of the event loop.
    pub wall_time: std::time::Duration,
    /// Protocol name (e.g. `"dctcp"`).
    pub protocol: String,
    /// Protocol event counts by name (see `Transport::counters`).
    pub protocol_counters: std::collections::BTreeMap<String, u64>,
    /// The run seed.
    pub seed: u64,
    /// Why the run stopped: `"all_flows_done"`, `"time_limit"` or `"event_limit"`.
    pub stop_reason: String,
}
