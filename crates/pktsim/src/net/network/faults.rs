//! Scheduled changes applied to the network ([`crate::net::fault`]): what a
//! failure, a recovery, a rate, delay or loss change does to ports, links
//! and routes.
//!
//! Everything here is off the per-hop path. A down port's queue is swapped
//! for one that refuses everything ([`LinkDownQueue`]); packets on a down
//! link's wire are marked lost in its inbox and counted when they would
//! have arrived; a lossy link marks the packets it loses the same way when
//! it sends them ([`Port::detour`]). So a network without failures runs
//! the same instructions as before.
//!
//! In a partitioned run every group applies every step, to the state it
//! owns: the sending side of a port (its queue, the packets it put on the
//! link but has not yet handed over), the receiving side of a link (its
//! inbox). The up/down state and the routes are kept whole in every copy
//! and change identically in each.

use super::*;
use crate::net::fault::{
    loses, FaultAction, FaultPlan, LinkChange, LOST_MARK, LOST_TO_LINK_DOWN, LOST_TO_LINK_LOSS,
};
use crate::net::queue::{FifoQueue, LinkDownQueue, Queue};
use std::sync::Arc;

/// The network's side of a fault plan.
#[derive(Clone, Debug)]
pub(crate) struct Faults {
    plan: Arc<FaultPlan>,
    /// The plan's moments in run order ([`FaultPlan::actions`]).
    actions: Vec<(Time, FaultAction)>,
    /// Per port: its link was taken down (by a link step).
    link_down: Vec<bool>,
    /// Per node: the switch was taken down.
    switch_down: Vec<bool>,
    /// The same two, as routing knows them (behind by the detection delay).
    known_link_down: Vec<bool>,
    known_switch_down: Vec<bool>,
    /// Per port: (loss threshold, stream key); threshold 0: lossless.
    loss: Vec<(u64, u64)>,
    /// The routes as built: kept for destinations a failure cuts off, so
    /// their packets still go to the (down) links they used and are
    /// dropped there, and the flow waits for the recovery.
    built_routes: Routing,
    /// How many times routing learned of a step (its routes recomputed).
    route_changes: u32,
}

impl Faults {
    /// The state for `plan` on a network of `n_ports` ports and `n_nodes`
    /// nodes routed by `routes`.
    pub(super) fn new(
        plan: Arc<FaultPlan>,
        n_ports: usize,
        n_nodes: usize,
        routes: &Routing,
    ) -> Self {
        Faults {
            actions: plan.actions(),
            plan,
            link_down: vec![false; n_ports],
            switch_down: vec![false; n_nodes],
            known_link_down: vec![false; n_ports],
            known_switch_down: vec![false; n_nodes],
            loss: vec![(0, 0); n_ports],
            built_routes: routes.clone(),
            route_changes: 0,
        }
    }

    /// Whether port `p` (from `owner` to `peer`) is down now.
    fn down(&self, p: PortId, owner: NodeId, peer: NodeId) -> bool {
        self.link_down[p.idx()] || self.switch_down[owner.idx()] || self.switch_down[peer.idx()]
    }

    /// Whether routing believes port `p` is down.
    fn known_down(&self, p: PortId, owner: NodeId, peer: NodeId) -> bool {
        self.known_link_down[p.idx()]
            || self.known_switch_down[owner.idx()]
            || self.known_switch_down[peer.idx()]
    }

    /// Whether port `p` loses its `n`-th packet.
    #[inline]
    pub(super) fn loses(&self, p: PortId, n: u64) -> bool {
        let (threshold, stream) = self.loss[p.idx()];
        threshold != 0 && loses(threshold, stream, p, n)
    }
}

/// The port that carries link `p`'s other direction: the two directions of
/// a link are built one after the other ([`Network::build`]).
fn reverse(p: PortId) -> PortId {
    PortId(p.0 ^ 1)
}

impl Network {
    /// The moments of the fault plan the network was built with, in run
    /// order (none without one).
    pub fn fault_actions(&self) -> &[(Time, FaultAction)] {
        self.faults.as_ref().map_or(&[], |f| &f.actions)
    }

    /// The fault plan the network was built with, if any.
    pub fn fault_plan(&self) -> Option<&FaultPlan> {
        self.faults.as_ref().map(|f| &*f.plan)
    }

    /// How many times routing has recomputed its routes around what it
    /// learned of failures and recoveries (0 without a fault plan): a
    /// component that reads routes (Fastpass's arbiter) rereads them when
    /// this changes.
    pub fn route_changes(&self) -> u32 {
        self.faults.as_ref().map_or(0, |f| f.route_changes)
    }

    /// The routes as the network was built, before any failure.
    pub fn built_routing(&self) -> &Routing {
        self.faults
            .as_ref()
            .map_or(&self.routing, |f| &f.built_routes)
    }

    /// Whether port `pid`'s link is down now.
    pub fn port_down(&self, pid: PortId) -> bool {
        let p = &self.ports[pid.idx()];
        self.faults
            .as_ref()
            .is_some_and(|f| f.down(pid, p.owner, p.peer))
    }

    /// Run moment `i` of the fault plan at `now`, for the nodes `ours`
    /// selects (every node in one queue; a group's own in a partitioned
    /// run). Returns what an applied step did, in words; `None` when
    /// routing learned of a step.
    #[cold]
    pub fn run_fault<E: From<NetEvent> + Copy>(
        &mut self,
        i: usize,
        now: Time,
        ours: &dyn Fn(NodeId) -> bool,
        ev: &mut EventQueue<E>,
    ) -> Option<String> {
        let faults = self.faults.as_ref()?;
        let (_, action) = *faults.actions.get(i)?;
        let plan = Arc::clone(&faults.plan);
        match action {
            FaultAction::Apply(s) => {
                let step = &plan.steps[s as usize];
                self.apply_step(step, now, ours, ev);
                Some(step.what.clone())
            }
            FaultAction::Learn(s) => {
                self.learn_step(&plan.steps[s as usize]);
                None
            }
        }
    }

    /// Apply one step to the ports and links it touches.
    fn apply_step<E: From<NetEvent> + Copy>(
        &mut self,
        step: &crate::net::fault::FaultStep,
        now: Time,
        ours: &dyn Fn(NodeId) -> bool,
        ev: &mut EventQueue<E>,
    ) {
        match step.change {
            LinkChange::Down | LinkChange::Up => {
                let touched = self.touched_ports(step);
                let before: Vec<bool> = touched.iter().map(|&p| self.port_down(p)).collect();
                let down = step.change == LinkChange::Down;
                if let Some(f) = self.faults.as_mut() {
                    for p in &step.ports {
                        f.link_down[p.idx()] = down;
                    }
                    for s in &step.switches {
                        f.switch_down[s.idx()] = down;
                    }
                }
                for (&p, was) in touched.iter().zip(before) {
                    match (was, self.port_down(p)) {
                        (false, true) => self.take_down(p, now, ours),
                        (true, false) => self.bring_up(p, now, ours, ev),
                        _ => {}
                    }
                }
            }
            LinkChange::Rate(rate) => {
                for &p in &step.ports {
                    self.set_rate(p, rate);
                }
                self.refresh_waits_at_peer();
            }
            LinkChange::Delay(d) => {
                for &p in &step.ports {
                    self.set_delay(p, d, now);
                }
            }
            LinkChange::Loss { threshold, stream } => {
                if let Some(f) = self.faults.as_mut() {
                    for p in &step.ports {
                        f.loss[p.idx()] = (threshold, stream);
                    }
                }
                for &p in &step.ports {
                    self.refresh_detour(p);
                }
            }
        }
    }

    /// The ports a failure or recovery step may change: its links' and
    /// every link of its switches, both directions, each once, in order.
    fn touched_ports(&self, step: &crate::net::fault::FaultStep) -> Vec<PortId> {
        let mut out: Vec<PortId> = step.ports.clone();
        for s in &step.switches {
            for &p in &self.nodes[s.idx()].ports {
                out.push(p);
                out.push(reverse(p));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Port `pid`'s link fails at `now`: the sending side drops what its
    /// queue holds and swaps in a queue that refuses everything, and marks
    /// lost the packets it put on the link but has not yet handed to
    /// another group; the receiving side marks lost what is on the wire.
    fn take_down(&mut self, pid: PortId, now: Time, ours: &dyn Fn(NodeId) -> bool) {
        let (owner, peer) = {
            let p = &self.ports[pid.idx()];
            (p.owner, p.peer)
        };
        if ours(owner) {
            let port = &mut self.ports[pid.idx()];
            port.touch(now);
            let before = port.queue.bytes();
            let placeholder = Queue::Fifo(FifoQueue::new(1, None));
            let mut queue = std::mem::replace(&mut port.queue, placeholder);
            let held = queue.drain();
            port.queue = Queue::LinkDown(Box::new(LinkDownQueue::new(queue)));
            if let Some(pool) = port.pool {
                self.pools[pool as usize].adjust(before, 0);
            }
            let at_host = owner.0 < self.n_hosts;
            for pkt in held {
                if at_host {
                    self.left_nic(&pkt);
                }
                self.count_drop(pid, &pkt, DropReason::LinkDown, now);
            }
            for c in self.crossings.iter_mut().filter(|c| c.link == pid) {
                if c.hops < LOST_MARK {
                    c.hops = LOST_TO_LINK_DOWN;
                }
            }
        }
        if ours(peer) {
            self.inboxes[pid.idx()].lose_all();
        }
    }

    /// Port `pid`'s link recovers at `now`: its own discipline comes back,
    /// empty, and a host whose NIC came back hears that it is idle if its
    /// transport waits for that.
    fn bring_up<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ours: &dyn Fn(NodeId) -> bool,
        ev: &mut EventQueue<E>,
    ) {
        let owner = self.ports[pid.idx()].owner;
        if !ours(owner) {
            return;
        }
        let port = &mut self.ports[pid.idx()];
        port.touch(now);
        let placeholder = Queue::Fifo(FifoQueue::new(1, None));
        if let Queue::LinkDown(down) = std::mem::replace(&mut port.queue, placeholder) {
            port.queue = down.into_saved();
        }
        if owner.0 < self.n_hosts && self.nic_idle(owner, now) {
            self.nic_idle
                .on_last_packet(owner, now, self.params.nic_pull, ev);
        }
    }

    /// Port `pid`'s link trains to `rate` (from its next transmission).
    fn set_rate(&mut self, pid: PortId, rate: Rate) {
        let header = self.params.header_bytes as u64;
        let port = &mut self.ports[pid.idx()];
        port.rate = rate;
        port.ps_per_byte = Port::exact_ps_per_byte(rate);
        port.header_time = rate.tx_time(header);
        if self.priority_rate[pid.idx()] != 0 {
            self.priority_rate[pid.idx()] = rate.bps();
        }
    }

    /// Which ports' packets must wait at their peer for their last bits
    /// (see [`Port::waits_at_peer`]), after a rate change.
    fn refresh_waits_at_peer(&mut self) {
        for i in 0..self.ports.len() {
            let (peer, rate, cut) = {
                let p = &self.ports[i];
                (p.peer, p.rate.bps(), p.cut_through)
            };
            let waits = cut
                && self.nodes[peer.idx()]
                    .ports
                    .iter()
                    .any(|q| self.priority_rate[q.idx()] > rate);
            self.ports[i].waits_at_peer = waits;
        }
    }

    /// Port `pid`'s link gets propagation delay `d` (for packets sent from
    /// now on). A shorter delay would let a packet overtake those already
    /// on the wire, which a link does not do: the transmitter waits the
    /// difference first, so arrivals stay in order.
    fn set_delay(&mut self, pid: PortId, d: Duration, now: Time) {
        let port = &mut self.ports[pid.idx()];
        if d < port.delay {
            let shorter = port.delay - d;
            port.busy_until = port.busy_until.max(now) + shorter;
        }
        port.delay = d;
    }

    /// Whether a packet put on port `pid`'s link takes the slow road
    /// ([`Port::detour`]): into another group, or over a lossy link.
    pub(super) fn refresh_detour(&mut self, pid: PortId) {
        let lossy = self
            .faults
            .as_ref()
            .is_some_and(|f| f.loss[pid.idx()].0 != 0);
        let port = &mut self.ports[pid.idx()];
        port.detour = port.remote || lossy;
    }

    /// Routing learns of `step`: the links as it left them. Routes avoid
    /// every link it believes down; a destination no route reaches keeps
    /// the routes it was built with.
    fn learn_step(&mut self, step: &crate::net::fault::FaultStep) {
        let Some(f) = self.faults.as_mut() else {
            return;
        };
        let down = step.change == LinkChange::Down;
        for p in &step.ports {
            f.known_link_down[p.idx()] = down;
        }
        for s in &step.switches {
            f.known_switch_down[s.idx()] = down;
        }
        f.route_changes += 1;
        let f = &*f;
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); self.nodes.len()];
        for (i, p) in self.ports.iter().enumerate() {
            let pid = PortId(i as u32);
            if !f.known_down(pid, p.owner, p.peer) {
                adj[p.owner.idx()].push((pid, p.peer));
            }
        }
        self.routing = Routing::compute_around(self.n_hosts as usize, &adj, &f.built_routes);
    }

    /// Count and discard a packet marked lost, arriving over port `pid`'s
    /// link at `now`.
    #[cold]
    #[inline(never)]
    pub(super) fn lost_on_arrival(&mut self, pid: PortId, pkt: &Packet, now: Time) {
        let (reason, kind) = if pkt.hops == LOST_TO_LINK_LOSS {
            (DropReason::LinkLoss, ArrivalDrop::LinkLoss)
        } else {
            (DropReason::LinkDown, ArrivalDrop::LinkDown)
        };
        self.count_drop_by(pid, pkt, reason, Some(kind), now);
    }
}
