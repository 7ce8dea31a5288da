//! The network state and the per-packet hot path: enqueue at a port, start
//! transmissions, carry packets over links, forward at switches.

use crate::engine::{EventQueue, Rng, RngStreams};
use crate::error::{Error, Result};
use crate::metrics::{Counters, DropReason, QueueSample};
use crate::net::packet::{flags, NodeId, Packet, PortId};
use crate::net::port::{Port, PortStats};
use crate::net::queue::{Discipline, Drops, QueueConfig};
use crate::net::routing::Routing;
use crate::net::topology::TopologySpec;
use crate::sim::Event;
use crate::time::{Rate, Time};
use std::collections::VecDeque;

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

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancing {
    /// Hash of the flow (and the packet's `path` entropy): one path per flow.
    #[default]
    Ecmp,
    /// Per packet, uniformly at random.
    Spray,
    /// Per packet, round-robin per (switch, destination).
    SprayRoundRobin,
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
}

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
    n_hosts: u32,
    params: NetworkParams,
    spray_rng: Vec<Rng>,
    rr: Vec<u32>,
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
                let queue = qcfg.build();
                // Only switch ports: host NICs must report when they run dry
                // to transports that pull (see `nic_pull`).
                let fifo = match qcfg.eager_fifo() {
                    Some(ecn)
                        if !from_host && pool_of[from.idx()].is_none() && params.eager_fifo =>
                    {
                        Some(crate::net::eager_fifo::EagerFifo::new(ecn))
                    }
                    _ => None,
                };
                ports.push(Port {
                    owner: from,
                    peer: to,
                    rate: l.rate,
                    delay: l.delay,
                    header_time: l.rate.tx_time(params.header_bytes as u64),
                    cut_through: params.forwarding == Forwarding::CutThrough && to_switch,
                    queue,
                    fifo,
                    limit: l.buffer.unwrap_or(default_limit),
                    pool: pool_of[from.idx()],
                    busy_until: Time::ZERO,
                    tx_pending: false,
                    in_flight: VecDeque::new(),
                    stats: PortStats::default(),
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
        let routing = Routing::compute(n_hosts, &adj, &topo.names)?;
        let spray_rng = (0..n)
            .map(|i| streams.stream("net.spray", i as u64))
            .collect();
        let rr = vec![0u32; routing.n_entries()];
        Ok(Network {
            nodes,
            ports,
            routing,
            pools,
            counters: Counters::default(),
            flow_drops: Vec::new(),
            n_hosts: n_hosts as u32,
            params,
            spray_rng,
            rr,
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
        self.nodes[host.idx()].ports[0]
    }

    /// Rate of a host's access link.
    pub fn host_rate(&self, host: NodeId) -> Rate {
        self.ports[self.nic(host).idx()].rate
    }

    /// A transport hands `pkt` to its host's NIC.
    #[inline]
    pub fn send(&mut self, pkt: Packet, now: Time, ev: &mut EventQueue<Event>) {
        self.counters.sent[pkt.kind as usize] += 1;
        let nic = self.nic(pkt.src);
        self.enqueue(nic, pkt, now, ev);
    }

    /// Record the packets a discipline dropped.
    #[inline]
    fn account_drops(&mut self) {
        let mut drops = std::mem::take(&mut self.drops);
        for (p, reason) in drops.drain(..) {
            self.count_drop(&p, reason);
        }
        self.drops = drops;
    }

    /// Count one dropped packet, network-wide and against its flow.
    #[inline]
    fn count_drop(&mut self, p: &Packet, reason: DropReason) {
        self.counters.dropped[p.kind as usize][reason as usize] += 1;
        if let Some(d) = self.flow_drops.get_mut(p.flow.idx()) {
            *d += 1;
        }
    }

    /// Offer a packet to a port's queue and start transmitting if idle.
    #[inline]
    pub fn enqueue(&mut self, pid: PortId, pkt: Packet, now: Time, ev: &mut EventQueue<Event>) {
        let port = &mut self.ports[pid.idx()];
        port.touch(now);
        if port.fifo.is_some() {
            self.enqueue_eager(pid, pkt, now, ev);
            return;
        }
        let before = port.queue.bytes();
        let limit = match port.pool {
            Some(pool) => port.limit.min(self.pools[pool as usize].threshold()),
            None => port.limit,
        };
        let marked = port.queue.enqueue(pkt, now, limit, &mut self.drops);
        let after = port.queue.bytes();
        port.note_size();
        if let Some(pool) = port.pool {
            self.pools[pool as usize].adjust(before, after);
        }
        self.counters.ecn_marked += marked as u64;
        if !self.drops.is_empty() {
            self.account_drops();
        }
        self.try_start(pid, now, ev);
    }

    /// Enqueue on an eager FIFO port: admit or drop, mark, and schedule the
    /// departure right away. The port was touched at `now`.
    #[inline]
    fn enqueue_eager(
        &mut self,
        pid: PortId,
        mut pkt: Packet,
        now: Time,
        ev: &mut EventQueue<Event>,
    ) {
        let port = &mut self.ports[pid.idx()];
        let Some(fifo) = port.fifo.as_mut() else {
            return;
        };
        if fifo.bytes + pkt.size as u64 > port.limit {
            self.count_drop(&pkt, DropReason::BufferFull);
            return;
        }
        if let Some(k) = fifo.ecn {
            if k.apply(&mut pkt, fifo.len, fifo.bytes) {
                self.counters.ecn_marked += 1;
            }
        }
        // It leaves the queue when the transmitter frees up.
        let leaves = now.max(port.busy_until);
        if leaves > now {
            fifo.push(leaves, pkt.size);
            port.note_size();
        }
        Self::transmit(port, pkt, leaves, ev, pid, &mut self.counters);
    }

    /// Put `pkt` on `port`'s link, starting no earlier than `at` (and its
    /// cut-through ready time).
    #[inline]
    fn transmit(
        port: &mut Port,
        mut pkt: Packet,
        at: Time,
        ev: &mut EventQueue<Event>,
        pid: PortId,
        counters: &mut Counters,
    ) {
        let start = at.max(pkt.ready_at);
        let tx = port.rate.tx_time(pkt.size as u64);
        let end = start + tx;
        let tail = end + port.delay;
        let arrival = if port.cut_through {
            start + port.header_time + port.delay
        } else {
            tail
        };
        pkt.ready_at = tail;
        pkt.hops = pkt.hops.wrapping_add(1);
        if port.in_flight.is_empty() {
            ev.schedule(arrival, Event::Arrive(pid));
        }
        port.in_flight.push_back((arrival, pkt));
        port.busy_until = end;
        port.stats.busy += tx;
        port.stats.tx_bytes += pkt.size as u64;
        port.stats.tx_packets += 1;
        counters.packet_hops += 1;
    }

    /// Start the next transmission on a port if it is idle and has packets.
    #[inline]
    fn try_start(&mut self, pid: PortId, now: Time, ev: &mut EventQueue<Event>) {
        let port = &mut self.ports[pid.idx()];
        if port.tx_pending {
            return;
        }
        if port.busy_until > now {
            if !port.queue.is_empty() {
                port.tx_pending = true;
                ev.schedule(port.busy_until, Event::TxDone(pid));
            }
            return;
        }
        port.touch(now);
        let before = port.queue.bytes();
        let got = port.queue.dequeue(now, &mut self.drops);
        if let Some(pool) = port.pool {
            self.pools[pool as usize].adjust(before, port.queue.bytes());
        }
        if !self.drops.is_empty() {
            self.account_drops();
        }
        let port = &mut self.ports[pid.idx()];
        let Some(pkt) = got else { return };
        Self::transmit(port, pkt, now, ev, pid, &mut self.counters);
        let end = port.busy_until;
        if !port.queue.is_empty() {
            port.tx_pending = true;
            ev.schedule(end, Event::TxDone(pid));
        } else if self.params.nic_pull && port.owner.0 < self.n_hosts {
            ev.schedule(end, Event::NicIdle(port.owner));
        }
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
    pub fn on_tx_done(&mut self, pid: PortId, now: Time, ev: &mut EventQueue<Event>) {
        self.ports[pid.idx()].tx_pending = false;
        self.try_start(pid, now, ev);
    }

    /// The head packet of a link reached the far end. Switches forward it;
    /// for a host, the packet is returned for its transport.
    #[inline]
    pub fn on_arrive(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<Event>,
    ) -> Option<Packet> {
        let port = &mut self.ports[pid.idx()];
        let (_, mut pkt) = port.in_flight.pop_front()?;
        if let Some(&(next, _)) = port.in_flight.front() {
            ev.schedule(next, Event::Arrive(pid));
        }
        let node = port.peer;
        let cut_through = port.cut_through;
        if node.0 < self.n_hosts {
            debug_assert_eq!(node, pkt.dst, "packet delivered to the wrong host");
            self.counters.delivered[pkt.kind as usize] += 1;
            return Some(pkt);
        }
        let egress = self.route(node, &pkt);
        if cut_through {
            // Start no earlier than the moment that lets the transmission end
            // exactly when the last bit has arrived.
            let out = self.ports[egress.idx()].rate.tx_time(pkt.size as u64);
            pkt.ready_at = Time(pkt.ready_at.ps().saturating_sub(out.ps()));
        }
        self.enqueue(egress, pkt, now, ev);
        None
    }

    /// Pick the egress port at switch `sw` for `pkt`.
    #[inline]
    fn route(&mut self, sw: NodeId, pkt: &Packet) -> PortId {
        let hops = self.routing.next_hops(sw, pkt.dst);
        let n = hops.len();
        debug_assert!(n > 0, "no route");
        if n == 1 {
            return hops[0];
        }
        let i = if pkt.has(flags::SOURCE_ROUTED) {
            pkt.path as usize % n
        } else {
            match self.params.load_balancing {
                LoadBalancing::Ecmp => {
                    let key = (pkt.flow.0 as u64) << 32
                        | (pkt.path as u64) << 16
                        | (pkt.src.0 as u64 ^ (pkt.dst.0 as u64) << 8);
                    (mix64(key ^ (sw.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % n as u64)
                        as usize
                }
                LoadBalancing::Spray => self.spray_rng[sw.idx()].below(n as u64) as usize,
                LoadBalancing::SprayRoundRobin => {
                    let e = self.routing.entry_index(sw, pkt.dst);
                    let c = self.rr[e];
                    self.rr[e] = c.wrapping_add(1);
                    c as usize % n
                }
            }
        };
        hops[i]
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

/// A 64-bit integer mixer (SplitMix64 finalizer), for ECMP hashing.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
