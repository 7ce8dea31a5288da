//! The network state, split by job:
//!
//! - here: the state itself, its parameters and the small queries on it;
//!   the fields are private, read through accessors, so that each part of
//!   the state can move to the component that owns it (a link's packets in
//!   flight to its receiving side, [`LinkInbox`]; what the run records to
//!   [`NetRecords`]);
//! - `build`: construction from a topology;
//! - `admission`: the admission rule (the byte limit a port applies to an
//!   offer, and whether it takes a packet under it);
//! - `hop`: the per-hop path (enqueue at a port, start transmissions, carry
//!   packets over links, forward at switches through the switch stage,
//!   [`crate::net::switch`]);
//! - `refusal`: the refusal executor (what happens to a refused packet);
//! - `nic`: host-NIC bookkeeping.
//!
//! The network schedules its own events ([`NetEvent`]) into the run loop's
//! queue, whatever the loop's event type is, so it depends on the engine's
//! queue but on nothing above itself.

use crate::engine::{EventQueue, RngStreams};
use crate::error::{Error, Result};
use crate::metrics::{Counters, DropReason, DropSite, LinkSample, QueueSample};
use crate::net::event::NetEvent;
use crate::net::inbox::{ArrivalDrop, LinkInbox};
use crate::net::nic_idle::NicIdleRequests;
use crate::net::port::{Port, PortStats};
use crate::net::queue::{Dequeue, Discipline, Drops, QueueConfig};
use crate::net::records::NetRecords;
use crate::net::routing::Routing;
use crate::net::switch::{
    Egress, FastLaneConfig, LoadBalancing, Refusal, RefusalHook, Refused, SwitchPlugin, SwitchView,
    Verdict,
};
use crate::net::topology::TopologySpec;
use crate::net::trace::{PacketTrace, TraceEvent, TraceSpec};
use crate::packet::{flags, FlowId, NodeId, Packet, PacketKind, PortId};
use crate::time::{Duration, Rate, Time};

pub use crossing::Crossing;

mod admission;
mod build;
mod crossing;
mod faults;
mod hop;
mod nic;
mod refusal;
mod tracing;

/// Hint the CPU to load the memory of `x` into cache (a no-op off x86-64).
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = x as *const T as *const i8;
        for line in 0..std::mem::size_of::<T>().div_ceil(64) {
            // SAFETY: a prefetch is a hint; it reads nothing into the
            // program and cannot fault, whatever the address. SSE, which it
            // needs, is part of every x86-64 CPU.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(line * 64)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// How switches forward packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Forwarding {
    /// A switch sees a packet once its last bit has arrived.
    #[default]
    StoreAndForward,
    /// A switch sees a packet once its header has arrived.
    CutThrough,
}

/// Network parameters, validated.
#[derive(Clone, Debug)]
pub struct NetworkParams {
    /// Store-and-forward or cut-through.
    pub forwarding: Forwarding,
    /// Next-hop choice.
    pub load_balancing: LoadBalancing,
    /// Header bytes per packet (what cut-through waits for).
    pub header_bytes: u32,
    /// Queue discipline of switch ports.
    pub switch_queue: QueueConfig,
    /// Per-port byte limit of switch ports.
    pub switch_buffer: u64,
    /// Shared buffer per switch: (total bytes, alpha) for dynamic thresholds.
    pub shared_buffer: Option<(u64, f64)>,
    /// Queue discipline of host NICs.
    pub host_queue: QueueConfig,
    /// Byte limit of host NIC queues.
    pub host_buffer: u64,
    /// Tell the transport when a host NIC runs dry (for transports that
    /// choose the next packet at the last moment, e.g. pHost's SRPT over
    /// tokens). Costs one event per packet sent, so it is off by default.
    pub nic_pull: bool,
    /// Schedule FIFO departures at enqueue time (see
    /// [`crate::net::eager_fifo`]); same results, fewer events. On by default.
    pub eager_fifo: bool,
    /// A packet that reaches a switch having crossed this many links is
    /// dropped ([`DropReason::HopLimit`]): a TTL that bounds the loops
    /// deflection can make. Shortest paths never come near the default.
    pub hop_limit: u8,
    /// What switches do with a packet an output queue refuses.
    pub refusal: Refusal,
    /// FastLane drop notifications (replaces `refusal`); `None`: off.
    pub fastlane: Option<FastLaneConfig>,
    /// The packet trace's filter; `None`: no trace.
    pub trace: Option<TraceSpec>,
    /// Scheduled failures and changes (`[[event]]`); `None`: none.
    pub faults: Option<std::sync::Arc<crate::net::fault::FaultPlan>>,
}

impl NetworkParams {
    /// The default hop limit (IPv4's customary initial TTL).
    pub const DEFAULT_HOP_LIMIT: u8 = 64;
}

/// A second offer of a packet, after a refusal verdict: its refusal is
/// final, and a trimmed header may use some room beyond the buffer limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Offer {
    /// A refusal of this offer is not put to the hook again.
    final_refusal: bool,
    /// Bytes beyond the port's limit this packet may use.
    extra_room: u64,
}

impl Offer {
    /// A packet offered for the first time.
    const FIRST: Offer = Offer {
        final_refusal: false,
        extra_room: 0,
    };
    /// A notice or a deflected packet: refused again, it is dropped.
    const LAST: Offer = Offer {
        final_refusal: true,
        extra_room: 0,
    };
}

/// Room for trimmed headers beyond a port's buffer limit, in headers: NDP
/// queues headers apart from data, in a small queue of their own.
const TRIM_HEADER_ROOM: u64 = 64;

/// A switch's shared buffer with dynamic thresholds (Choudhury and Hahne):
/// a port may hold up to `alpha × (total − used)` bytes.
#[derive(Clone, Debug)]
pub struct SharedBuffer {
    /// Buffer size.
    pub total: u64,
    /// Bytes in use over all ports of the switch.
    pub used: u64,
    /// Dynamic threshold factor.
    pub alpha: f64,
}

impl SharedBuffer {
    /// Current per-port threshold.
    #[inline]
    pub fn threshold(&self) -> u64 {
        (self.alpha * self.total.saturating_sub(self.used) as f64) as u64
    }

    /// Account for one port's queue going from `before` to `after` bytes.
    #[inline]
    pub fn adjust(&mut self, before: u64, after: u64) {
        self.used = (self.used + after).saturating_sub(before);
    }
}

/// A node: host or switch.
#[derive(Clone, Debug)]
pub struct Node {
    /// Name (from the topology).
    pub name: String,
    /// Output ports of the node.
    pub ports: Vec<PortId>,
    /// Whether the node is a host.
    pub is_host: bool,
}

/// All network state.
pub struct Network {
    /// Nodes, hosts first.
    nodes: Vec<Node>,
    /// All output ports.
    ports: Vec<Port>,
    /// Each link's packets in flight, by the port that feeds it: held for
    /// the node the link leads to, which alone takes them out.
    inboxes: Vec<LinkInbox>,
    /// Equal-cost routes.
    routing: Routing,
    /// Shared buffers (one per switch when configured).
    pools: Vec<SharedBuffer>,
    /// Counters and per-flow drops.
    records: NetRecords,
    /// Data bytes per flow id queued in the sender's host NIC (for
    /// transports that limit their own NIC backlog).
    nic_flow_bytes: Vec<u64>,
    /// When the last data packet of each flow left its sender's NIC queue
    /// for the wire, and how long it had waited there.
    nic_flow_departed: Vec<(Time, Duration)>,
    /// Run-dry events asked for and noted, per host.
    nic_idle: NicIdleRequests,
    /// Per port, its link rate in bit/s if its queue picks by priority, else
    /// 0 (see [`Network::priority_tx`]).
    priority_rate: Vec<u64>,
    /// Each host's NIC port, by host: every send looks it up, and the
    /// node's own port list is two dependent loads away.
    nic_ports: Vec<PortId>,
    n_hosts: u32,
    params: NetworkParams,
    egress: Egress,
    /// The refusal hook; `None`: every refused packet is dropped.
    hook: Option<Box<dyn RefusalHook>>,
    /// The switch-stage plug-in the parameters asked for, if any.
    plugin: Option<Box<dyn SwitchPlugin>>,
    drops: Drops,
    /// Packets put on remote links ([`Port::remote`]) since the last
    /// [`Network::take_crossings`].
    crossings: Vec<Crossing>,
    /// The packet trace, when one was asked for.
    trace: Option<Box<PacketTrace>>,
    /// The scheduled failures and changes, when the run has any.
    faults: Option<Box<faults::Faults>>,
}

impl Network {
    /// Number of hosts.
    pub fn n_hosts(&self) -> u32 {
        self.n_hosts
    }

    /// Parameters the network was built with.
    pub fn params(&self) -> &NetworkParams {
        &self.params
    }

    /// The NIC port of a host.
    #[inline]
    pub fn nic(&self, host: NodeId) -> PortId {
        self.nic_ports[host.idx()]
    }

    /// Rate of a host's access link.
    pub fn host_rate(&self, host: NodeId) -> Rate {
        self.ports[self.nic(host).idx()].rate
    }

    /// The nodes, hosts first (a node's id is its index).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every output port (a port's id is its index).
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    /// Port `pid`.
    #[inline]
    pub fn port(&self, pid: PortId) -> &Port {
        &self.ports[pid.idx()]
    }

    /// The packets in flight on the link port `pid` feeds.
    pub fn inbox(&self, pid: PortId) -> &LinkInbox {
        &self.inboxes[pid.idx()]
    }

    /// Equal-cost routes.
    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    /// Counters and per-flow drops so far.
    pub fn records(&self) -> &NetRecords {
        &self.records
    }

    /// Packet counters so far.
    pub fn counters(&self) -> &Counters {
        self.records.counters()
    }

    /// Make room for the records and the NIC bookkeeping of `n_flows`
    /// flows (ids `0..n_flows`), starting from zero. Call before the run
    /// starts; flows without room are not counted.
    pub fn set_flow_count(&mut self, n_flows: usize) {
        self.records.set_flow_count(n_flows);
        self.nic_flow_bytes = vec![0; n_flows];
        self.nic_flow_departed = vec![(Time::ZERO, Duration::ZERO); n_flows];
    }

    /// Data bytes of flow `f` queued in its sender's NIC (not yet on the
    /// wire).
    #[inline]
    pub fn nic_flow_bytes(&self, f: FlowId) -> u64 {
        self.nic_flow_bytes.get(f.idx()).copied().unwrap_or(0)
    }

    /// When the last data packet of flow `f` left its sender's NIC queue,
    /// and how long it waited there (from its `sent_at`).
    #[inline]
    pub fn nic_flow_departed(&self, f: FlowId) -> (Time, Duration) {
        self.nic_flow_departed
            .get(f.idx())
            .copied()
            .unwrap_or((Time::ZERO, Duration::ZERO))
    }

    /// Forget the largest queue every port has seen ([`PortStats::max_bytes`]
    /// and [`PortStats::max_packets`]), to measure the peaks of the next
    /// stretch of the run alone.
    pub fn reset_queue_peaks(&mut self) {
        for p in &mut self.ports {
            p.stats.max_bytes = 0;
            p.stats.max_packets = 0;
        }
    }

    /// Install a refusal hook (replacing the configured behaviour); `None`
    /// restores plain drops. Call before the run starts.
    pub fn set_refusal_hook(&mut self, hook: Option<Box<dyn RefusalHook>>) {
        self.hook = hook;
    }

    /// Serve every FIFO port with end-of-transmission events instead of
    /// scheduling departures at enqueue time: slower, same results (tests
    /// use it to check exactly that). Call before the run starts.
    pub fn disable_eager_fifo(&mut self) {
        self.params.eager_fifo = false;
        for p in &mut self.ports {
            p.fifo = None;
        }
    }

    /// The egress policy in force.
    pub fn load_balancing(&self) -> LoadBalancing {
        self.egress.policy
    }

    /// One queue sample per port of the selected nodes.
    pub fn sample_queues(&mut self, now: Time, switches_only: bool, out: &mut Vec<QueueSample>) {
        self.sample_queues_of(now, switches_only, &|_| true, out);
    }

    /// [`Network::sample_queues`] for the ports of the nodes `ours(node)`
    /// selects (a group of a partitioned run samples its own).
    pub fn sample_queues_of(
        &mut self,
        now: Time,
        switches_only: bool,
        ours: &dyn Fn(NodeId) -> bool,
        out: &mut Vec<QueueSample>,
    ) {
        for (i, p) in self.ports.iter_mut().enumerate() {
            if (switches_only && p.owner.0 < self.n_hosts) || !ours(p.owner) {
                continue;
            }
            p.touch(now);
            out.push(QueueSample {
                time: now,
                node: p.owner,
                port: i as u32,
                bytes: p.queued_bytes(),
                packets: p.queued_packets() as u32,
            });
        }
    }

    /// Take a link sample ([`LinkSample`]) at `now`, into `out` in port
    /// order, of every port whose sending or receiving node `ours`
    /// selects. A port's counts are its sending node's but for the drops
    /// on arrival for the hop count, which its receiving node makes; where
    /// only one of the two is ours (a link between two groups of a
    /// partitioned run), the sample holds that side's counts and zeros for
    /// the other's, and the two samples add up ([`LinkSample::add`]).
    pub fn sample_links_of(
        &mut self,
        now: Time,
        ours: &dyn Fn(NodeId) -> bool,
        out: &mut Vec<LinkSample>,
    ) {
        for (i, (p, inbox)) in self.ports.iter_mut().zip(&self.inboxes).enumerate() {
            let (sends, receives) = (ours(p.owner), ours(p.peer));
            if !sends && !receives {
                continue;
            }
            let mut s = LinkSample {
                time: now,
                node: p.owner,
                port: i as u32,
                peer: p.peer,
                rate_bps: p.rate.bps(),
                ..LinkSample::default()
            };
            if sends {
                p.touch(now);
                (s.bytes, s.packets, s.busy) = p.link_totals(now);
                s.ecn_marked = p.stats.ecn_marked;
                s.deflected_in = p.stats.deflected_in;
                s.notices = p.stats.notices;
                s.dropped = p.stats.dropped;
            }
            if receives {
                for kind in ArrivalDrop::ALL {
                    s.dropped[kind.reason() as usize] += inbox.arrival_drops(kind);
                }
            }
            out.push(s);
        }
    }

    /// Bring every port's statistics up to `now`.
    pub fn touch_all(&mut self, now: Time) {
        for p in &mut self.ports {
            p.touch(now);
        }
    }

    /// Count the packets still in queues and on links into
    /// `counters.in_flight`, emptying the network (end of run at `now`).
    /// A packet on a link marked lost (its link failed, or lost it) is
    /// counted as the drop it is.
    pub fn drain_in_flight(&mut self, now: Time) {
        let mut in_flight = [0u64; 2];
        for p in &mut self.ports {
            for pkt in p.queue.drain() {
                in_flight[pkt.kind as usize] += 1;
            }
            // Eager FIFO packets are already in the inboxes below.
            if let Some(f) = p.fifo.as_mut() {
                f.clear();
            }
        }
        let mut lost = Vec::new();
        for (i, inbox) in self.inboxes.iter_mut().enumerate() {
            for pkt in inbox.drain() {
                if pkt.hops >= crate::net::fault::LOST_MARK {
                    lost.push((PortId(i as u32), pkt));
                } else {
                    in_flight[pkt.kind as usize] += 1;
                }
            }
        }
        for (pid, pkt) in lost {
            self.lost_on_arrival(pid, &pkt, now);
        }
        self.records.counters.in_flight = in_flight;
    }

    /// Ports along the first shortest path from host `src` to host `dst`.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Vec<PortId> {
        let mut out = vec![self.nic(src)];
        let mut at = self.ports[out[0].idx()].peer;
        while at != dst && out.len() < 64 {
            let p = self.routing.next_hops(at, dst)[0];
            out.push(p);
            at = self.ports[p.idx()].peer;
        }
        out
    }
}
