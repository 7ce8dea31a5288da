//! Fastpass as the pHost paper's simulator modelled it (NetSys/simulator
//! `ext/fastpass*`; `../shared/specs/fastpass.md` §8), to reproduce pHost's
//! comparison ("3.8× better mean slowdown than Fastpass").
//!
//! The arbiter is a host with a host-rate link (the extra host the config
//! adds beside host 0). A new flow's source sends an RTS with its packet
//! count. Every epoch of `epoch_slots` timeslots (duration `epoch_slots +
//! 0.5` slot times: half a slot of slack) the arbiter computes the slots of
//! the next epoch: per slot, a greedy maximal matching over flows sorted by
//! fewest remaining packets (SRPT), one packet per flow, each source and
//! destination once. Each source with something scheduled gets one
//! header-sized schedule packet. The source sends slot `i`'s packet at
//! `arrival + i × epoch / epoch_slots` (the 2015 code applies schedules on
//! arrival, not at the epoch start), choosing packets round-robin over
//! those not yet acknowledged. The receiver ACKs every data packet. When a
//! source has sent as many packets as it asked for it waits one epoch, then
//! re-requests the unacknowledged ones; when every packet is acknowledged it
//! tells the arbiter to forget the flow. No path selection (packets follow
//! the network's load balancing) and no compute time.

use super::mailbox::{Mailbox, MessageSeq};
use super::wire::EpochMsg;
use super::{ctrl, n_packets, RecvFlow, NO_FLOW};
use crate::packet::{FlowId, Message, NodeId, Packet};
use crate::time::{Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::per_host::{FlowEnd, FlowSlots, HostProtocol, PerHost};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Host timer: a scheduled packet is due.
const T_SEND: u8 = 0;
/// Arbiter timer: an epoch boundary.
const T_TICK: u8 = 1;
/// Flow timer: one epoch after the last requested packet was sent.
const T_REREQ: u8 = 2;

/// Parameters of the pHost paper's Fastpass model.
#[derive(Clone, Debug)]
pub struct EpochParams {
    /// Timeslots per epoch (`FASTPASS_EPOCH_PKTS` = 8).
    pub epoch_slots: u32,
    /// Bytes per timeslot (1500 in the 2015 code).
    pub slot_bytes: u32,
    /// The arbiter host (`None`: the last host, an extra one the config adds).
    pub arbiter: Option<NodeId>,
    /// Start a schedule at the beginning of the epoch it was computed for
    /// (one epoch after the arbiter's tick), as earlier versions of the 2015
    /// code did, instead of when the schedule packet arrives (spec §8).
    pub at_epoch_start: bool,
}

impl Default for EpochParams {
    /// [`super::FastpassConfig`]'s defaults (the one place they are written).
    fn default() -> Self {
        super::FastpassConfig::default().epoch_params()
    }
}

/// One flow as the arbiter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contender {
    /// Packets still to schedule.
    pub remaining: u32,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// The flow.
    pub flow: FlowId,
}

/// Schedule `slots` timeslots: per slot, a greedy maximal matching over the
/// flows in SRPT order (fewest remaining first, then flow id). Decrements
/// `remaining` of every flow scheduled. Returns, per slot, the flows sent.
pub fn match_epoch(flows: &mut [Contender], slots: u32, n_hosts: usize) -> Vec<Vec<FlowId>> {
    let mut src_used = vec![u32::MAX; n_hosts];
    let mut dst_used = vec![u32::MAX; n_hosts];
    let mut out = Vec::with_capacity(slots as usize);
    for slot in 0..slots {
        flows.sort_by_key(|c| (c.remaining, c.flow));
        let mut chosen = Vec::new();
        for c in flows.iter_mut() {
            let (s, d) = (c.src as usize, c.dst as usize);
            if c.remaining == 0 || src_used[s] == slot || dst_used[d] == slot {
                continue;
            }
            src_used[s] = slot;
            dst_used[d] = slot;
            c.remaining -= 1;
            chosen.push(c.flow);
        }
        out.push(chosen);
    }
    out
}

#[derive(Clone, Debug, Default)]
struct SendFlow {
    acked: Vec<bool>,
    n_acked: u32,
    /// Packets the source asked for and has not sent yet.
    remaining: u32,
    /// Round-robin pointer over packet indices.
    next: u32,
    rereq_at: Option<Time>,
    active: bool,
}

impl SendFlow {
    /// The next unacknowledged packet, round-robin.
    fn pick(&mut self) -> Option<u32> {
        let n = self.acked.len() as u32;
        if self.n_acked >= n {
            return None;
        }
        for k in 0..n {
            let i = (self.next + k) % n;
            if !self.acked[i as usize] {
                self.next = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }
}

/// The arbiter's state: part of the arbiter host's state.
#[derive(Clone, Debug, Default)]
struct EpochArbiter {
    /// Flows it schedules, with its view of their remaining packets.
    active: Vec<Contender>,
    ticking: bool,
}

/// A schedule message: the epoch it is for, and (slot, flow) pairs.
type Schedule = (Time, Vec<(u32, FlowId)>);

/// The pHost paper's Fastpass model, for every host and flow of a run: the
/// run loop's transport ([`EpochProtocol`] with one [`EpochHost`] per host).
pub type EpochModel = PerHost<EpochProtocol>;

/// The run-wide part of the epoch model: its settings, the tables built at
/// setup and the mailbox of schedules in flight.
pub struct EpochProtocol {
    params: EpochParams,
    epoch: Duration,
    spacing: Duration,
    arbiter: NodeId,
    n_hosts: usize,
    /// Each flow's place in its source's sender and its destination's
    /// receiver table.
    slots: FlowSlots,
    /// Schedules on the wire (see [`Mailbox`]).
    schedules: std::sync::Arc<Mailbox<Schedule>>,
}

/// One host's state: its due packets, the flows it sends and receives, its
/// message numbering, and, on the arbiter host, the arbiter.
#[derive(Clone, Debug, Default)]
pub struct EpochHost {
    due: BinaryHeap<Reverse<(Time, FlowId)>>,
    send_at: Option<Time>,
    /// Senders of this host's outgoing flows, by [`FlowSlots::send`].
    send: Vec<SendFlow>,
    /// Receivers of this host's incoming flows, by [`FlowSlots::recv`].
    recv: Vec<RecvFlow>,
    /// Sequence numbers of the schedules this host sends.
    seq: MessageSeq,
    /// The arbiter, on the arbiter host.
    arb: Option<EpochArbiter>,
    /// Schedule packets sent by this host (the arbiter).
    pub schedules_sent: u64,
    /// Re-requests of this host's flows after the one-epoch wait.
    pub rerequests: u64,
}

impl EpochProtocol {
    /// A protocol with these parameters.
    pub fn new(params: EpochParams) -> Self {
        EpochProtocol {
            params,
            epoch: Duration::ZERO,
            spacing: Duration::ZERO,
            arbiter: NodeId(0),
            n_hosts: 0,
            slots: FlowSlots::default(),
            schedules: Default::default(),
        }
    }

    /// Epoch duration in force (after setup).
    pub fn epoch(&self) -> Duration {
        self.epoch
    }

    fn rts(&self, ctx: &mut Ctx, f: FlowId, remaining: u32, done: bool) {
        let src = ctx.flow(f).src;
        let header = ctx.format().header;
        let rts = EpochMsg::Rts { remaining, done }.header();
        ctx.send(ctrl(ctx, f, src, self.arbiter, header, rts));
    }

    fn on_rts(&self, h: &mut EpochHost, ctx: &mut Ctx, f: FlowId, remaining: u32, done: bool) {
        let Some(arb) = h.arb.as_mut() else {
            debug_assert!(false, "an RTS reached a host that is not the arbiter");
            return;
        };
        let pos = arb.active.iter().position(|c| c.flow == f);
        match (pos, done) {
            (Some(i), true) => {
                arb.active.swap_remove(i);
            }
            (Some(i), false) => arb.active[i].remaining = remaining,
            (None, false) => {
                let s = ctx.flow(f);
                arb.active.push(Contender {
                    remaining,
                    src: s.src.0,
                    dst: s.dst.0,
                    flow: f,
                });
            }
            (None, true) => {}
        }
        if !arb.ticking && arb.active.iter().any(|c| c.remaining > 0) {
            arb.ticking = true;
            // The arbiter's epochs are on a global clock.
            let e = self.epoch.ps();
            let next = Time(ctx.now().ps().div_ceil(e) * e);
            ctx.set_timer(next, self.arbiter.0, T_TICK);
        }
    }

    /// An epoch boundary: schedule the next epoch and tell the sources.
    fn tick(&self, h: &mut EpochHost, ctx: &mut Ctx) {
        let Some(arb) = h.arb.as_mut() else { return };
        let plan = match_epoch(&mut arb.active, self.params.epoch_slots, self.n_hosts);
        let mut per_src: Vec<(u32, u32, FlowId)> = Vec::new();
        for (slot, flows) in plan.iter().enumerate() {
            for &f in flows {
                per_src.push((ctx.flow(f).src.0, slot as u32, f));
            }
        }
        per_src.sort_unstable();
        let header = ctx.format().header;
        let mut i = 0;
        while i < per_src.len() {
            let s = per_src[i].0;
            let mut j = i;
            while j < per_src.len() && per_src[j].0 == s {
                j += 1;
            }
            let seq = h.seq.next();
            let list = per_src[i..j].iter().map(|&(_, k, f)| (k, f)).collect();
            self.schedules
                .post(self.arbiter, seq, (ctx.now() + self.epoch, list));
            let schedule = EpochMsg::Schedule { seq }.header();
            let p = ctrl(ctx, NO_FLOW, self.arbiter, NodeId(s), header, schedule);
            ctx.send(p);
            h.schedules_sent += 1;
            i = j;
        }
        if arb.active.iter().any(|c| c.remaining > 0) {
            ctx.set_timer(ctx.now() + self.epoch, self.arbiter.0, T_TICK);
        } else {
            arb.ticking = false;
        }
    }

    fn on_schedule(&self, h: &mut EpochHost, ctx: &mut Ctx, from: NodeId, seq: u64) {
        let Some((epoch_start, list)) = self.schedules.take(from, seq) else {
            return;
        };
        let now = if self.params.at_epoch_start {
            epoch_start.max(ctx.now())
        } else {
            ctx.now()
        };
        for (k, f) in list {
            let at = now + self.spacing.times(k as u64);
            h.due.push(Reverse((at, f)));
            if h.send_at.is_none_or(|t| at < t) {
                h.send_at = Some(at);
                ctx.set_timer(at, ctx.host().0, T_SEND);
            }
        }
    }

    fn on_send_timer(&self, h: &mut EpochHost, ctx: &mut Ctx) {
        let now = ctx.now();
        if h.send_at != Some(now) {
            return;
        }
        h.send_at = None;
        while let Some(&Reverse((at, f))) = h.due.peek() {
            if at > now {
                h.send_at = Some(at);
                ctx.set_timer(at, ctx.host().0, T_SEND);
                break;
            }
            h.due.pop();
            self.send_one(h, ctx, f);
        }
    }

    fn send_one(&self, h: &mut EpochHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if !s.active {
            return;
        }
        let Some(i) = s.pick() else { return };
        s.remaining = s.remaining.saturating_sub(1);
        if s.remaining == 0 {
            let at = ctx.now() + self.epoch;
            s.rereq_at = Some(at);
            ctx.set_timer(at, f.0, T_REREQ);
        }
        let first = i as u64 * ctx.format().mss as u64;
        let header = EpochMsg::Data { pkt: i }.header();
        let mut p = ctx.data_packet(f, first, u64::MAX, header);
        p.prio = 1;
        ctx.send(p);
    }

    fn on_rereq(&self, h: &mut EpochHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if s.rereq_at != Some(ctx.now()) || !s.active {
            return;
        }
        s.rereq_at = None;
        let missing = s.acked.len() as u32 - s.n_acked;
        if missing == 0 {
            return;
        }
        s.remaining = missing;
        for _ in 0..missing {
            ctx.count_retransmit(f);
        }
        h.rerequests += 1;
        self.rts(ctx, f, missing, false);
    }
}

impl HostProtocol for EpochProtocol {
    type Host = EpochHost;

    fn name(&self) -> &'static str {
        "fastpass"
    }

    fn setup(&mut self, env: &Setup) -> crate::Result<()> {
        let n = env.n_hosts();
        self.n_hosts = n as usize;
        self.arbiter = self.params.arbiter.unwrap_or(NodeId(n.saturating_sub(1)));
        let rate = env.host_rate(self.arbiter);
        let es = self.params.epoch_slots as u64;
        // (epoch_slots + 0.5) slots, computed on twice the bytes.
        let twice = rate.tx_time(self.params.slot_bytes as u64 * (2 * es + 1));
        self.epoch = Duration::from_ps(twice.ps() / 2);
        self.spacing = Duration::from_ps(self.epoch.ps() / es);
        self.slots = FlowSlots::new(env);
        Ok(())
    }

    fn new_host(&self, _env: &Setup, host: NodeId) -> EpochHost {
        EpochHost {
            send: vec![SendFlow::default(); self.slots.n_send(host)],
            recv: vec![RecvFlow::default(); self.slots.n_recv(host)],
            arb: (host == self.arbiter).then(EpochArbiter::default),
            ..EpochHost::default()
        }
    }

    fn start_flow(&self, h: &mut EpochHost, ctx: &mut Ctx, f: FlowId) {
        let n = n_packets(ctx.flow(f).size, ctx.format().mss);
        let s = &mut h.send[self.slots.send(f)];
        s.acked = vec![false; n as usize];
        s.remaining = n;
        s.active = true;
        self.rts(ctx, f, n, false);
    }

    fn on_packet(&self, h: &mut EpochHost, ctx: &mut Ctx, pkt: Packet) {
        let Some(msg) = EpochMsg::parse(&pkt.header) else {
            debug_assert!(false, "Fastpass got a foreign or unknown packet");
            return;
        };
        match msg {
            EpochMsg::Rts { remaining, done } => self.on_rts(h, ctx, pkt.flow, remaining, done),
            EpochMsg::Schedule { seq } => self.on_schedule(h, ctx, pkt.src, seq),
            EpochMsg::Data { pkt: idx } => {
                let f = pkt.flow;
                let size = ctx.flow(f).size;
                let mss = ctx.format().mss;
                let got =
                    h.recv[self.slots.recv(f)].take(idx, n_packets(size, mss), mss as u64, size);
                ctx.set_received(f, got);
                let header = ctx.format().header;
                let ack = EpochMsg::DataAck { pkt: idx }.header();
                ctx.send(ctrl(ctx, f, pkt.dst, pkt.src, header, ack));
            }
            EpochMsg::DataAck { pkt: idx } => {
                let f = pkt.flow;
                let s = &mut h.send[self.slots.send(f)];
                let i = idx as usize;
                if s.active && i < s.acked.len() && !s.acked[i] {
                    s.acked[i] = true;
                    s.n_acked += 1;
                    if s.n_acked as usize == s.acked.len() {
                        s.active = false;
                        s.acked = Vec::new();
                        self.rts(ctx, f, 0, true);
                    }
                }
            }
        }
    }

    /// At the source, from the flow's start until every packet is
    /// acknowledged: its demand (packets asked for and not yet sent), the
    /// packets scheduled and not yet due, and its packets acknowledged. At
    /// the destination, from the first packet until the last: packets
    /// received.
    fn flow_state(
        &self,
        h: &EpochHost,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        match self.slots.end_at(at, f, &h.send, &h.recv) {
            Some(FlowEnd::Sender(s)) if s.active => {
                let scheduled = h.due.iter().filter(|d| d.0 .1 == f).count();
                out("demand_packets", f64::from(s.remaining));
                out("scheduled_packets", scheduled as f64);
                out("acked_packets", f64::from(s.n_acked));
            }
            Some(FlowEnd::Receiver(r)) => {
                let got = r.received.count();
                if got > 0 && got < r.received.len() {
                    out("received_packets", f64::from(got));
                }
            }
            _ => {}
        }
    }

    fn on_timer(&self, h: &mut EpochHost, ctx: &mut Ctx, id: u32, kind: u8) {
        // Host and arbiter timers carry the host, flow timers the flow.
        match kind {
            T_SEND => self.on_send_timer(h, ctx),
            T_TICK => self.tick(h, ctx),
            T_REREQ => self.on_rereq(h, ctx, FlowId(id)),
            _ => debug_assert!(false, "unknown Fastpass timer"),
        }
    }

    fn copy_for_group(&self) -> Option<Self> {
        // Hosts share nothing but packets and the mailbox their schedules
        // ride in, which the copies share (the arbiter is its host's).
        let mut copy = EpochProtocol::new(self.params.clone());
        copy.schedules = self.schedules.clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(remaining: u32, src: u32, dst: u32, flow: u32) -> Contender {
        Contender {
            remaining,
            src,
            dst,
            flow: FlowId(flow),
        }
    }

    #[test]
    fn srpt_matching_serves_the_shortest_flow_first_and_is_maximal() {
        // Flows 0 (5 left) and 1 (2 left) share destination 9; flow 2 is
        // disjoint. SRPT: flow 1 takes the destination until it is done.
        let mut flows = vec![c(5, 0, 9, 0), c(2, 1, 9, 1), c(3, 2, 8, 2)];
        let plan = match_epoch(&mut flows, 4, 10);
        let ids = |v: &Vec<FlowId>| v.iter().map(|f| f.0).collect::<Vec<_>>();
        assert_eq!(ids(&plan[0]), vec![1, 2]);
        assert_eq!(ids(&plan[1]), vec![1, 2]);
        // Flow 1 is done: flow 0 gets the destination; flow 2 (1 left)
        // sorts first now.
        assert_eq!(ids(&plan[2]), vec![2, 0]);
        assert_eq!(ids(&plan[3]), vec![0]);
        let left: Vec<u32> = flows.iter().map(|c| c.remaining).collect();
        assert_eq!(
            flows.iter().map(|c| c.flow.0).collect::<Vec<_>>(),
            vec![1, 2, 0]
        );
        assert_eq!(left, vec![0, 0, 3]);
    }

    #[test]
    fn a_source_sends_one_packet_per_slot() {
        let mut flows = vec![c(4, 0, 1, 0), c(4, 0, 2, 1)];
        let plan = match_epoch(&mut flows, 8, 3);
        assert!(plan.iter().all(|s| s.len() == 1));
        assert_eq!(flows.iter().map(|c| c.remaining).sum::<u32>(), 0);
    }

    #[test]
    fn packets_are_picked_round_robin_over_unacked_ones() {
        let mut s = SendFlow {
            acked: vec![false, true, false, false],
            n_acked: 1,
            ..SendFlow::default()
        };
        assert_eq!(s.pick(), Some(0));
        assert_eq!(s.pick(), Some(2));
        assert_eq!(s.pick(), Some(3));
        assert_eq!(s.pick(), Some(0));
        s.acked = vec![true; 4];
        s.n_acked = 4;
        assert_eq!(s.pick(), None);
    }
}
