//! The network state and the per-packet hot path: enqueue at a port, start
//! transmissions, carry packets over links, forward at switches (through the
//! switch stage, [`crate::net::switch`]).
//!
//! The network schedules its own events ([`NetEvent`]) into the run loop's
//! queue, whatever the loop's event type is, so it depends on the engine's
//! queue but on nothing above itself.

use crate::engine::{EventQueue, RngStreams};
use crate::error::{Error, Result};
use crate::metrics::{Counters, DropReason, DropSite, QueueSample};
use crate::net::event::NetEvent;
use crate::net::nic_idle::NicIdleRequests;
use crate::net::port::{Port, PortStats};
use crate::net::queue::{Dequeue, Discipline, Drops, QueueConfig};
use crate::net::routing::Routing;
use crate::net::switch::{
    Egress, FastLaneConfig, FastLaneHook, LoadBalancing, Refusal, RefusalHook, Refused, SwitchView,
    Verdict,
};
use crate::net::topology::TopologySpec;
use crate::packet::{flags, NodeId, Packet, PacketKind, PortId};
use crate::time::{Rate, Time};
use std::collections::VecDeque;

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
    pub nodes: Vec<Node>,
    /// All output ports.
    pub ports: Vec<Port>,
    /// Equal-cost routes.
    pub routing: Routing,
    /// Shared buffers (one per switch when configured).
    pub pools: Vec<SharedBuffer>,
    /// Network-wide counters.
    pub counters: Counters,
    /// Drops per flow id.
    pub flow_drops: Vec<u32>,
    /// Data bytes per flow id queued in the sender's host NIC (for
    /// transports that limit their own NIC backlog).
    pub nic_flow_bytes: Vec<u64>,
    /// When the last data packet of each flow left its sender's NIC queue
    /// for the wire, and how long it had waited there.
    pub nic_flow_departed: Vec<(Time, crate::time::Duration)>,
    /// Run-dry events asked for and reserved, per host.
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
    drops: Drops,
}

impl Network {
    /// Build the network for a topology.
    pub fn build(
        topo: &TopologySpec,
        params: NetworkParams,
        streams: &RngStreams,
    ) -> Result<Network> {
        let n = topo.n_nodes();
        let n_hosts = topo.n_hosts as usize;
        let mut nodes: Vec<Node> = topo
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| Node {
                name: name.clone(),
                ports: Vec::new(),
                is_host: i < n_hosts,
            })
            .collect();
        let mut pools = Vec::new();
        let mut pool_of = vec![None; n];
        if let Some((total, alpha)) = params.shared_buffer {
            for p in pool_of.iter_mut().skip(n_hosts) {
                *p = Some(pools.len() as u32);
                pools.push(SharedBuffer {
                    total,
                    used: 0,
                    alpha,
                });
            }
        }
        let mut ports = Vec::with_capacity(topo.links.len() * 2);
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); n];
        let mut priority_rate = Vec::with_capacity(topo.links.len() * 2);
        for l in &topo.links {
            for (from, to) in [(l.a, l.b), (l.b, l.a)] {
                let id = PortId(ports.len() as u32);
                let from_host = from.idx() < n_hosts;
                let to_switch = to.idx() >= n_hosts;
                let qcfg = if from_host {
                    &params.host_queue
                } else {
                    &params.switch_queue
                };
                let default_limit = if from_host {
                    params.host_buffer
                } else {
                    params.switch_buffer
                };
                let limit = l.buffer.unwrap_or(default_limit);
                let queue = match &params.fastlane {
                    // FastLane: every switch port gets a notice lane.
                    Some(f) if !from_host => f.lane(qcfg.build_for_link(l.rate), l.rate, limit),
                    _ => qcfg.build_for_link(l.rate),
                };
                // Only switch ports: host NICs must report when they run dry
                // to transports that pull (see `nic_pull`).
                let fifo = match qcfg.eager_fifo() {
                    Some(ecn)
                        if !from_host
                            && pool_of[from.idx()].is_none()
                            && params.eager_fifo
                            && params.fastlane.is_none() =>
                    {
                        Some(crate::net::eager_fifo::EagerFifo::new(ecn))
                    }
                    _ => None,
                };
                ports.push(Port {
                    owner: from,
                    peer: to,
                    rate: l.rate,
                    ps_per_byte: Port::exact_ps_per_byte(l.rate),
                    delay: l.delay,
                    header_time: l.rate.tx_time(params.header_bytes as u64),
                    cut_through: params.forwarding == Forwarding::CutThrough && to_switch,
                    waits_at_peer: false,
                    queue,
                    fifo,
                    limit,
                    pool: pool_of[from.idx()],
                    busy_until: Time::ZERO,
                    tx_pending: false,
                    in_flight: VecDeque::new(),
                    stats: PortStats::default(),
                });
                priority_rate.push(if qcfg.schedules_by_priority() {
                    l.rate.bps()
                } else {
                    0
                });
                nodes[from.idx()].ports.push(id);
                adj[from.idx()].push((id, to));
            }
        }
        for (i, node) in nodes.iter().enumerate().take(n_hosts) {
            if node.ports.len() != 1 {
                return Err(Error::Topology(format!(
                    "host {} has {} links; every host needs exactly one",
                    node.name,
                    node.ports.len()
                )));
            }
            if adj[i][0].1.idx() < n_hosts {
                return Err(Error::Topology(format!(
                    "host {} links directly to another host; connect hosts through switches",
                    node.name
                )));
            }
        }
        for p in &mut ports {
            let rate = p.rate.bps();
            p.waits_at_peer = p.cut_through
                && nodes[p.peer.idx()]
                    .ports
                    .iter()
                    .any(|q| priority_rate[q.idx()] > rate);
        }
        let routing = Routing::compute(n_hosts, &adj, &topo.names)?;
        let egress = Egress::new(params.load_balancing, n, n_hosts, streams);
        let hook = match &params.fastlane {
            Some(f) => Some(Box::new(FastLaneHook::new(f.clone(), &ports)) as Box<dyn RefusalHook>),
            None => params.refusal.build(n, streams),
        };
        let nic_ports = nodes[..n_hosts].iter().map(|n| n.ports[0]).collect();
        Ok(Network {
            nic_ports,
            nodes,
            ports,
            routing,
            pools,
            counters: Counters::default(),
            flow_drops: Vec::new(),
            nic_flow_bytes: Vec::new(),
            nic_flow_departed: Vec::new(),
            nic_idle: NicIdleRequests::new(n_hosts),
            priority_rate,
            n_hosts: n_hosts as u32,
            params,
            egress,
            hook,
            drops: Drops::with_capacity(16),
        })
    }

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

    /// Install a refusal hook (replacing the configured behaviour); `None`
    /// restores plain drops. Call before the run starts.
    pub fn set_refusal_hook(&mut self, hook: Option<Box<dyn RefusalHook>>) {
        self.hook = hook;
    }

    /// A transport hands `pkt` to its host's NIC.
    #[inline]
    pub fn send<E: From<NetEvent> + Copy>(
        &mut self,
        pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.counters.sent[pkt.kind as usize] += 1;
        if pkt.kind == PacketKind::Data {
            if let Some(b) = self.nic_flow_bytes.get_mut(pkt.flow.idx()) {
                *b += pkt.size as u64;
            }
        }
        let nic = self.nic(pkt.src);
        self.enqueue(nic, pkt, now, ev);
    }

    /// Put the packets a discipline dropped at port `pid` through the
    /// refusal stage.
    #[cold]
    #[inline(never)]
    fn account_drops<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let mut drops = std::mem::take(&mut self.drops);
        let node = self.ports[pid.idx()].owner;
        let at_host = node.0 < self.n_hosts;
        for (p, reason) in drops.drain(..) {
            if at_host {
                // Dropped in its sender's NIC: it no longer waits there.
                self.left_nic(&p);
            }
            self.refuse(node, pid, p, reason, now, ev, offer);
        }
        self.drops = drops;
    }

    /// Every drop in the network comes here. Without a hook it is counted;
    /// with one, the hook decides (on a cold path of its own).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn refuse<E: From<NetEvent> + Copy>(
        &mut self,
        node: NodeId,
        pid: PortId,
        pkt: Packet,
        reason: DropReason,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        if self.hook.is_none() {
            self.count_drop(pid, &pkt, reason);
            return;
        }
        self.refuse_with_hook(node, pid, pkt, reason, now, ev, offer);
    }

    /// Ask the hook what to do with a refused packet and do it.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn refuse_with_hook<E: From<NetEvent> + Copy>(
        &mut self,
        node: NodeId,
        pid: PortId,
        pkt: Packet,
        reason: DropReason,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let Some(mut hook) = self.hook.take() else {
            self.count_drop(pid, &pkt, reason);
            return;
        };
        let at_host = node.0 < self.n_hosts;
        // The hook reads the node's queues as they are now.
        for i in 0..self.nodes[node.idx()].ports.len() {
            let p = self.nodes[node.idx()].ports[i];
            self.ports[p.idx()].touch(now);
        }
        let at = Refused {
            node,
            port: pid,
            reason,
            now,
            at_host,
            final_refusal: offer.final_refusal || reason == DropReason::HopLimit,
        };
        let verdict = hook.on_refused(&at, &pkt, &SwitchView::new(self, node));
        self.hook = Some(hook);
        let verdict = if at_host || at.final_refusal {
            Verdict::Drop
        } else {
            verdict
        };
        match verdict {
            Verdict::Drop => self.count_drop(pid, &pkt, reason),
            Verdict::NotifySource => {
                self.count_drop(pid, &pkt, reason);
                if !pkt.has(flags::NOTICE) {
                    let notice = self.notice_of(&pkt, now);
                    self.counters.made[PacketKind::Control as usize] += 1;
                    let egress = self.route(node, &notice, now);
                    self.enqueue_offer(egress, notice, now, ev, Offer::LAST);
                }
            }
            Verdict::Deflect(to) => {
                // Only to another port of the same switch: a packet cannot
                // jump, and re-offering to the refusing port would refuse it.
                match self.ports.get_mut(to.idx()) {
                    Some(port) if port.owner == node && to != pid => {
                        port.stats.deflected_in += 1;
                        self.counters.deflected += 1;
                        self.enqueue_offer(to, pkt, now, ev, Offer::LAST);
                    }
                    _ => self.count_drop(pid, &pkt, reason),
                }
            }
            Verdict::Trim => {
                if pkt.kind != PacketKind::Data || pkt.has(flags::TRIMMED) {
                    self.count_drop(pid, &pkt, reason);
                } else {
                    let mut header = pkt;
                    header.size = self.params.header_bytes;
                    header.payload = 0;
                    header.class = 0;
                    header.flags |= flags::TRIMMED;
                    self.counters.trimmed += 1;
                    let room = TRIM_HEADER_ROOM * self.params.header_bytes as u64;
                    self.enqueue_offer(
                        pid,
                        header,
                        now,
                        ev,
                        Offer {
                            final_refusal: true,
                            extra_room: room,
                        },
                    );
                }
            }
        }
    }

    /// The notice a switch sends back to the source of refused `pkt`: header
    /// size, top class, the refused packet's flow and header, direction
    /// swapped.
    fn notice_of(&self, pkt: &Packet, now: Time) -> Packet {
        let size = self
            .params
            .fastlane
            .as_ref()
            .map_or(self.params.header_bytes, |f| f.notice_bytes);
        let mut n = crate::net::switch::notice_to_source(pkt, size);
        n.ready_at = now;
        n
    }

    /// Counts of the switch stage for the run summary: the refusal hook's
    /// and, with FastLane, the notice lanes' overhead up to `now`.
    pub fn switch_counters(&self, now: Time) -> Vec<(&'static str, u64)> {
        let mut v = self.hook.as_ref().map(|h| h.counters()).unwrap_or_default();
        v.extend(crate::net::switch::fastlane::lane_counters(self, now));
        v
    }

    /// Whether port `pid` would admit `pkt` now. Its queue must be up to
    /// date (touched at the current time): see [`Network::would_admit`].
    pub fn admits(&self, pid: PortId, pkt: &Packet) -> bool {
        let port = &self.ports[pid.idx()];
        match &port.fifo {
            Some(f) => f.bytes + pkt.size as u64 <= port.limit,
            None => {
                let limit = match port.pool {
                    Some(pool) => port.limit.min(self.pools[pool as usize].threshold()),
                    None => port.limit,
                };
                port.queue.admits(pkt, limit)
            }
        }
    }

    /// Whether port `pid` would admit `pkt` at `now` ("would you take this
    /// packet now?"), bringing its queue up to `now` first.
    pub fn would_admit(&mut self, pid: PortId, pkt: &Packet, now: Time) -> bool {
        self.ports[pid.idx()].touch(now);
        self.admits(pid, pkt)
    }

    /// Count one packet dropped at port `pid`, network-wide, by where, and
    /// against its flow.
    #[inline]
    fn count_drop(&mut self, pid: PortId, p: &Packet, reason: DropReason) {
        self.counters.dropped[p.kind as usize][reason as usize] += 1;
        let port = &self.ports[pid.idx()];
        let site = if port.owner.0 < self.n_hosts {
            DropSite::HostNic
        } else if port.peer.0 < self.n_hosts {
            DropSite::LastHop
        } else {
            DropSite::Fabric
        };
        self.counters.dropped_at[p.kind as usize][site as usize] += 1;
        if let Some(d) = self.flow_drops.get_mut(p.flow.idx()) {
            *d += 1;
        }
    }

    /// Offer a packet to a port's queue and start transmitting if idle.
    #[inline(always)]
    pub fn enqueue<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.enqueue_offer(pid, pkt, now, ev, Offer::FIRST);
    }

    /// [`Network::enqueue`] for a first or a second offer.
    #[inline(always)]
    fn enqueue_offer<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let port = &mut self.ports[pid.idx()];
        port.touch(now);
        if port.fifo.is_some() {
            self.enqueue_eager(pid, pkt, now, ev, offer);
            return;
        }
        if port.busy_until <= now
            && !port.tx_pending
            && port.pool.is_none()
            && port.queue.is_empty_pass_through()
            && pkt.size as u64 <= port.limit + offer.extra_room
        {
            // An idle port with an empty queue that would take the packet
            // and hand it straight back: send it without the round trip
            // through the queue (most packet-hops below full load).
            port.note_size_with(pkt.size);
            self.start_transmission(pid, pkt, now, ev);
            return;
        }
        let before = port.queue.bytes();
        let limit = match port.pool {
            Some(pool) => port.limit.min(self.pools[pool as usize].threshold()),
            None => port.limit,
        } + offer.extra_room;
        let marked = port.queue.enqueue(pkt, now, limit, &mut self.drops);
        let after = port.queue.bytes();
        port.note_size();
        if let Some(pool) = port.pool {
            self.pools[pool as usize].adjust(before, after);
        }
        self.counters.ecn_marked += marked as u64;
        if !self.drops.is_empty() {
            self.account_drops(pid, now, ev, offer);
        }
        self.try_start(pid, now, ev);
    }

    /// Enqueue on an eager FIFO port: admit or drop, mark, and schedule the
    /// departure right away. The port was touched at `now`.
    #[inline(always)]
    fn enqueue_eager<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        mut pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let next_tx = self.next_tx(pid, &pkt);
        let port = &mut self.ports[pid.idx()];
        let Some(fifo) = port.fifo.as_mut() else {
            return;
        };
        if fifo.bytes + pkt.size as u64 > port.limit + offer.extra_room {
            let node = port.owner;
            self.refuse(node, pid, pkt, DropReason::BufferFull, now, ev, offer);
            return;
        }
        if let Some(k) = fifo.ecn {
            if k.apply(&mut pkt, fifo.len(), fifo.bytes) {
                self.counters.ecn_marked += 1;
            }
        }
        // It leaves the queue when the transmitter frees up.
        let leaves = now.max(port.busy_until);
        if leaves > now {
            fifo.push(leaves, pkt.size);
            port.note_size();
        }
        Self::transmit(port, pkt, leaves, next_tx, ev, pid, &mut self.counters);
    }

    /// Put `pkt` on `port`'s link, starting no earlier than `at` (and its
    /// cut-through ready time). `next_tx`: the packet's transmission time on
    /// its next hop when that hop's queue picks by priority and may be
    /// faster than this link, so that the packet arrives there only once it
    /// could start (see [`Network::next_tx`]); else 0.
    #[inline(always)]
    fn transmit<E: From<NetEvent> + Copy>(
        port: &mut Port,
        pkt: Packet,
        at: Time,
        next_tx: u64,
        ev: &mut EventQueue<E>,
        pid: PortId,
        counters: &mut Counters,
    ) {
        let start = at.max(pkt.ready_at);
        let tx = port.tx_time(pkt.size);
        let end = start + tx;
        let tail = end + port.delay;
        let arrival = if port.cut_through {
            let header = start + port.header_time + port.delay;
            if next_tx == 0 {
                header
            } else {
                header.max(Time(tail.ps().saturating_sub(next_tx)))
            }
        } else {
            tail
        };
        if port.in_flight.is_empty() {
            NetEvent::Arrive(pid).schedule_for(port.peer, arrival, ev);
        }
        // The packet is copied onto the link first and its ready time and
        // hop count are set there: changing the local copy's fields and
        // then copying it whole loads, in 16-byte pieces, bytes just
        // stored in smaller ones (a failed store forward). The new hop
        // count is computed from the local copy, since reading it back
        // from the link's slot would wait for that line to arrive.
        let hops = pkt.hops.saturating_add(1);
        port.in_flight.push_back((arrival, pkt));
        if let Some((_, sent)) = port.in_flight.back_mut() {
            sent.ready_at = tail;
            sent.hops = hops;
        }
        port.busy_until = end;
        port.stats.busy += tx;
        port.stats.tx_bytes += pkt.size as u64;
        port.stats.tx_packets += 1;
        counters.packet_hops += 1;
    }

    /// Start the next transmission on a port if it is idle and has packets.
    #[inline]
    fn try_start<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let port = &mut self.ports[pid.idx()];
        if port.tx_pending {
            return;
        }
        if port.busy_until > now {
            if !port.queue.is_empty() {
                port.tx_pending = true;
                NetEvent::TxDone(pid).schedule_for(port.owner, port.busy_until, ev);
            }
            return;
        }
        port.touch(now);
        let before = port.queue.bytes();
        let got = port.queue.poll(now, &mut self.drops);
        if let Some(pool) = port.pool {
            self.pools[pool as usize].adjust(before, port.queue.bytes());
        }
        match got {
            Dequeue::Packet(pkt) => self.start_transmission(pid, pkt, now, ev),
            Dequeue::NotBefore(t) => {
                // A rate limit holds the head back: come back then.
                let port = &mut self.ports[pid.idx()];
                port.tx_pending = true;
                NetEvent::TxDone(pid).schedule_for(port.owner, t, ev);
            }
            Dequeue::Empty => {}
        }
        // Drops at dequeue (AQMs) go to the refusal stage only now, when the
        // port's own transmission is settled: a verdict may offer packets to
        // ports, this one included.
        if !self.drops.is_empty() {
            self.account_drops(pid, now, ev, Offer::FIRST);
        }
    }

    /// Send `pkt`, which idle port `pid`'s queue just gave up (or would
    /// have), at `now`; come back when it ends if more packets wait; the
    /// NIC bookkeeping when the port is a host's.
    #[inline(always)]
    fn start_transmission<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let next_tx = self.next_tx(pid, &pkt);
        let port = &mut self.ports[pid.idx()];
        let owner = port.owner;
        Self::transmit(port, pkt, now, next_tx, ev, pid, &mut self.counters);
        let end = port.busy_until;
        let more = !port.queue.is_empty();
        if more {
            port.tx_pending = true;
            NetEvent::TxDone(pid).schedule_for(owner, end, ev);
        }
        if owner.0 < self.n_hosts {
            self.nic_sent(owner, &pkt, now, end, more, ev);
        }
    }

    /// The `next_tx` argument of [`Network::transmit`] for `pkt` leaving on
    /// port `pid`: its transmission time on the fastest of its next hops at
    /// a cut-through peer whose queues there pick by priority, when one of
    /// them may be faster than this link ([`Port::waits_at_peer`]); else 0.
    ///
    /// A packet from a slower link (a 10 Gbit/s host into a 40 Gbit/s
    /// uplink) cannot start before its tail arrives less its own
    /// transmission time at the faster rate. A FIFO port sends its head
    /// first anyway and waits for those bits (see `transmit`); a priority
    /// queue offered the packet at header time would pick it as the most
    /// urgent and hold the port idle for up to the difference of the two
    /// transmission times while complete packets wait, taking up to three
    /// quarters of a 40 Gbit/s uplink's time when one urgent flow feeds it,
    /// which pFabric's long flows paid for in timeouts (issue 20). So the
    /// packet arrives at such a queue only once it could start. The
    /// earliest start over the next hops (the fastest one) is used, since
    /// the choice among them is made when the packet arrives.
    #[inline(always)]
    fn next_tx(&self, pid: PortId, pkt: &Packet) -> u64 {
        let port = &self.ports[pid.idx()];
        if !port.waits_at_peer {
            return 0;
        }
        self.next_tx_at(port.peer, pkt)
    }

    /// [`Network::next_tx`] for a port whose peer, `peer`, may hold packets.
    #[inline(never)]
    fn next_tx_at(&self, peer: NodeId, pkt: &Packet) -> u64 {
        let hops = self.routing.next_hops(peer, pkt.dst);
        self.priority_tx(pkt.size, hops).unwrap_or(0)
    }

    /// Host `host`'s NIC started sending `pkt` at `now`, until `end`;
    /// `more`: packets wait behind it.
    #[inline(always)]
    fn nic_sent<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        pkt: &Packet,
        now: Time,
        end: Time,
        more: bool,
        ev: &mut EventQueue<E>,
    ) {
        self.left_nic(pkt);
        // Only the flow's data leaving its sender's NIC: an ACK of the same
        // flow leaving the receiver's NIC carries the data's echoed
        // `sent_at`, so its "wait" would be the data's one-way delay, not
        // time spent in a host queue.
        if pkt.kind == PacketKind::Data {
            if let Some(t) = self.nic_flow_departed.get_mut(pkt.flow.idx()) {
                *t = (now, now.since(pkt.sent_at.min(now)));
            }
        }
        if !more {
            self.nic_idle
                .on_last_packet(host, end, self.params.nic_pull, ev);
        }
    }

    /// A data packet left its sender's NIC queue (sent or dropped).
    #[inline]
    fn left_nic(&mut self, p: &Packet) {
        if p.kind == PacketKind::Data {
            if let Some(b) = self.nic_flow_bytes.get_mut(p.flow.idx()) {
                *b = b.saturating_sub(p.size as u64);
            }
        }
    }

    /// Ask for one [`NetEvent::NicIdle`] when `host`'s NIC next runs dry:
    /// at the end of the packet on the wire if nothing is queued behind it,
    /// else when the last queued packet ends.
    #[inline]
    pub fn request_nic_idle<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let p = &self.ports[self.nic(host).idx()];
        let last_packet_ends = (p.busy_until > now && p.queued_packets() == 0 && !p.tx_pending)
            .then_some(p.busy_until);
        self.nic_idle.request(host, last_packet_ends, ev);
    }

    /// Free bytes in `host`'s NIC queue.
    #[inline]
    pub fn nic_room(&self, host: NodeId) -> u64 {
        let p = &self.ports[self.nic(host).idx()];
        p.limit.saturating_sub(p.queue.bytes())
    }

    /// Whether a host's NIC is idle with nothing queued.
    #[inline]
    pub fn nic_idle(&self, host: NodeId, now: Time) -> bool {
        let p = &self.ports[self.nic(host).idx()];
        p.busy_until <= now && p.queued_packets() == 0 && !p.tx_pending
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

    /// Turn NIC-idle notifications on or off (see [`NetworkParams::nic_pull`]).
    pub fn set_nic_pull(&mut self, on: bool) {
        self.params.nic_pull = on;
    }

    /// A port finished a transmission and has more packets waiting.
    #[inline]
    pub fn on_tx_done<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.ports[pid.idx()].tx_pending = false;
        self.try_start(pid, now, ev);
    }

    /// Ask the CPU to start loading port `pid`, and with `packet` its link's
    /// head packet, for the event after the current one: the run loop calls
    /// this one event ahead, so that the cache misses of
    /// [`Network::on_arrive`] and [`Network::on_tx_done`] overlap the
    /// current event's work.
    #[inline]
    pub fn prefetch_port(&self, pid: PortId, packet: bool) {
        let Some(port) = self.ports.get(pid.idx()) else {
            return;
        };
        prefetch(port);
        if packet {
            if let Some(head) = port.in_flight.front() {
                prefetch(head);
            }
        }
    }

    /// The head packet of a link reached the far end. Switches forward it
    /// (a packet for a cut-through switch's priority queue arrives only once
    /// it could start, see [`Network::next_tx`]); for a host, the packet is
    /// returned for its transport.
    #[inline]
    pub fn on_arrive<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) -> Option<Packet> {
        let port = &mut self.ports[pid.idx()];
        let node = port.peer;
        if node.0 < self.n_hosts {
            let (_, pkt) = port.in_flight.pop_front()?;
            Self::next_arrival(port, pid, ev);
            debug_assert_eq!(node, pkt.dst, "packet delivered to the wrong host");
            self.counters.delivered[pkt.kind as usize] += 1;
            return Some(pkt);
        }
        let cut_through = port.cut_through;
        let (_, mut pkt) = port.in_flight.pop_front()?;
        Self::next_arrival(port, pid, ev);
        if pkt.hops >= self.params.hop_limit {
            self.refuse(node, pid, pkt, DropReason::HopLimit, now, ev, Offer::LAST);
            return None;
        }
        let egress = self.route(node, &pkt, now);
        if cut_through {
            // Start no earlier than the moment that lets the transmission end
            // exactly when the last bit has arrived.
            let out = self.ports[egress.idx()].tx_time(pkt.size);
            pkt.ready_at = Time(pkt.ready_at.ps().saturating_sub(out.ps()));
        }
        self.enqueue(egress, pkt, now, ev);
        None
    }

    /// After the head packet of `port`'s link arrived: schedule the next
    /// one's arrival, or, with the link empty, move its ring back to the
    /// start. A ring that kept going round would cycle through every slot
    /// it ever grew to, each one cold by the time it is written again; one
    /// that restarts when empty reuses the same few, still cached (most
    /// links hold one or two packets at a time).
    #[inline(always)]
    fn next_arrival<E: From<NetEvent> + Copy>(
        port: &mut Port,
        pid: PortId,
        ev: &mut EventQueue<E>,
    ) {
        match port.in_flight.front() {
            Some(&(next, _)) => NetEvent::Arrive(pid).schedule_for(port.peer, next, ev),
            None => port.in_flight.clear(),
        }
    }

    /// The transmission time of `size` bytes on the fastest of `hops` (in
    /// ps) if every one of them picks by priority, else `None`. Reads the
    /// dense `priority_rate` rather than the ports, which would be a cache
    /// line each.
    #[inline]
    fn priority_tx(&self, size: u32, hops: &[PortId]) -> Option<u64> {
        let (mut fastest, mut fastest_rate) = (*hops.first()?, 0);
        for &h in hops {
            let r = self.priority_rate[h.idx()];
            if r == 0 {
                return None;
            }
            if r > fastest_rate {
                (fastest, fastest_rate) = (h, r);
            }
        }
        Some(self.ports[fastest.idx()].tx_time(size).ps())
    }

    /// Pick the egress port at switch `sw` for `pkt` (the switch stage's
    /// egress choice, [`crate::net::switch::egress`]).
    #[inline(always)]
    fn route(&mut self, sw: NodeId, pkt: &Packet, now: Time) -> PortId {
        let hops = self.routing.next_hops(sw, pkt.dst);
        Self::choose_egress(&mut self.ports, &mut self.egress, sw, pkt, now, hops)
    }

    /// [`Network::route`] among `hops`, the equal-cost egress ports at `sw`
    /// towards `pkt`'s destination, already looked up.
    #[inline(always)]
    fn choose_egress(
        ports: &mut [Port],
        egress: &mut Egress,
        sw: NodeId,
        pkt: &Packet,
        now: Time,
        hops: &[PortId],
    ) -> PortId {
        let n = hops.len();
        debug_assert!(n > 0, "no route");
        if n == 1 {
            return hops[0];
        }
        if egress.policy.reads_queues() {
            for &p in hops {
                ports[p.idx()].touch(now);
            }
        }
        let ports = &*ports;
        let i = egress.choose(sw, pkt, n, |i| ports[hops[i].idx()].queued_bytes());
        hops[i]
    }

    /// The egress policy in force.
    pub fn load_balancing(&self) -> LoadBalancing {
        self.egress.policy
    }

    /// One queue sample per port of the selected nodes.
    pub fn sample_queues(&mut self, now: Time, switches_only: bool, out: &mut Vec<QueueSample>) {
        for (i, p) in self.ports.iter_mut().enumerate() {
            if switches_only && p.owner.0 < self.n_hosts {
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

    /// Bring every port's statistics up to `now`.
    pub fn touch_all(&mut self, now: Time) {
        for p in &mut self.ports {
            p.touch(now);
        }
    }

    /// Count the packets still in queues and on links into
    /// `counters.in_flight`, emptying the network (end of run).
    pub fn drain_in_flight(&mut self) {
        let mut in_flight = [0u64; 2];
        for p in &mut self.ports {
            for pkt in p.queue.drain() {
                in_flight[pkt.kind as usize] += 1;
            }
            // Eager FIFO packets are already on the link list below.
            if let Some(f) = p.fifo.as_mut() {
                f.clear();
            }
            for (_, pkt) in p.in_flight.drain(..) {
                in_flight[pkt.kind as usize] += 1;
            }
        }
        self.counters.in_flight = in_flight;
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
