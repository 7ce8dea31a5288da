//! The data path both credit designs share: one data packet per credit,
//! the receiver's bookkeeping, and loss recovery by NACKs, re-NACKs and the
//! sender's retransmission timeout (see the module doc of [`super`]).
//! What differs between the designs reaches it through the
//! [`CreditDesign`](super::CreditDesign) hooks.

use super::aeolus::FirstRtt;
use super::expresspass::CreditLoop;
use super::flashpass::Emulation;
use super::wire::{to_receiver, to_sender, CreditMsg, Lane, CREDIT_BYTES, SMALL_BYTES};
use super::{CreditHost, CreditProtocol, T_RENACK, T_RTO};
use crate::packet::{flags, FlowId, Message, NodeId, Packet};
use crate::time::{Duration, Time};
use crate::transport::contract::Ctx;
use std::collections::VecDeque;

/// The sender side of one flow.
#[derive(Clone, Debug, Default)]
pub(super) struct Sender {
    pub(super) n: u32,
    pub(super) active: bool,
    pub(super) next_new: u32,
    pub(super) retx: VecDeque<u32>,
    pub(super) queued: Vec<bool>,
    pub(super) first: FirstRtt,
    pub(super) stop_sent: bool,
    pub(super) last_activity: Time,
    pub(super) rto_at: Option<Time>,
    pub(super) emu: Emulation,
    /// Send times of credited data (FlashPass: T + T_wait), in order.
    pub(super) sched: VecDeque<Time>,
    pub(super) send_timer_at: Option<Time>,
}

impl Sender {
    /// Packets still to send that no credit covers yet.
    pub(super) fn uncovered(&self) -> i64 {
        (self.n - self.next_new) as i64 + self.retx.len() as i64 - self.sched.len() as i64
    }
    pub(super) fn has_work(&self) -> bool {
        self.next_new < self.n || !self.retx.is_empty()
    }
    /// The time series' shared sender variables: new packets sent,
    /// packets waiting to be resent (found lost), and packets still to send
    /// that no credit covers yet.
    pub(super) fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("sent_packets", f64::from(self.next_new));
        out("retx_queued_packets", self.retx.len() as f64);
        out("uncovered_packets", self.uncovered() as f64);
    }
    pub(super) fn push_retx(&mut self, idx: u32) {
        let i = idx as usize;
        if i < self.queued.len() && !self.queued[i] {
            self.queued[i] = true;
            self.retx.push_back(idx);
        }
    }
}

/// The receiver side of one flow.
#[derive(Clone, Debug, Default)]
pub(super) struct Receiver {
    pub(super) started: bool,
    pub(super) done: bool,
    pub(super) received: Vec<bool>,
    pub(super) n_received: u32,
    pub(super) until: u32,
    /// Index after the highest new scheduled packet received.
    pub(super) sched_next: u32,
    /// Pending re-NACK timer, if any.
    pub(super) renack_at: Option<Time>,
    pub(super) credits: CreditLoop,
}

impl Receiver {
    /// The time series' shared receiver variables: packets received, and
    /// received in order (the first `until`).
    pub(super) fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("received_packets", f64::from(self.n_received));
        out("in_order_packets", f64::from(self.until));
    }
}

/// Packets of a flow of `size` bytes (at least one).
pub(super) fn n_packets(size: u64, mss: u32) -> u32 {
    size.div_ceil(mss as u64).max(1) as u32
}

impl CreditProtocol {
    pub(super) fn credit_bits() -> f64 {
        CREDIT_BYTES as f64 * 8.0
    }

    pub(super) fn max_credit_rate(&self, ctx: &Ctx, host: NodeId) -> f64 {
        ctx.host_rate(host).bps() as f64 * self.common.credit_share
    }

    /// The gap before the host's next credit or emulation packet at `rate`
    /// bit/s, jittered from the host's own stream.
    pub(super) fn gap(&self, h: &mut CreditHost, rate: f64) -> Duration {
        let j = self.common.jitter;
        let scale = if j > 0.0 {
            1.0 + j * (2.0 * h.rng.uniform() - 1.0)
        } else {
            1.0
        };
        let secs = Self::credit_bits() / rate * scale;
        Duration(((secs * 1e12).round() as u64).max(1))
    }

    pub(super) fn arm_rto(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        s.last_activity = ctx.now();
        if s.rto_at.is_none() {
            let at = ctx.now() + self.common.rto;
            s.rto_at = Some(at);
            ctx.set_timer(at, f.0, T_RTO);
        }
    }

    /// Set up the sender of a new flow; returns its Aeolus first-RTT
    /// allowance in packets (0 without Aeolus).
    pub(super) fn start_sender(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) -> u32 {
        let spec = ctx.flow(f);
        let (src, size) = (spec.src, spec.size);
        let mss = ctx.format().mss;
        let n = n_packets(size, mss);
        let cap = match self.common.aeolus_bdp {
            Some(k) => {
                let bdp = ctx.host_rate(src).bps() as f64 / 8.0
                    * self.base_rtt[f.idx()].as_secs_f64()
                    * k;
                (bdp / mss as f64).ceil() as u32
            }
            None => 0,
        };
        let max_rate = self.max_credit_rate(ctx, src);
        let rtt = self.base_rtt[f.idx()].max(Duration::from_us(1));
        let now = ctx.now();
        let s = &mut h.send[self.slots.send(f)];
        s.n = n;
        s.active = true;
        s.queued = vec![false; n as usize];
        s.first = FirstRtt::new(cap);
        s.emu.start(max_rate, rtt, now);
        cap
    }

    /// Send one data packet of `f` for a credit (`credit_seq`, `credit_time`):
    /// returns false if nothing was left (a wasted credit).
    pub(super) fn send_scheduled(
        &self,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        credit_seq: u32,
        echo: Time,
    ) -> bool {
        let s = &mut h.send[self.slots.send(f)];
        if !s.active {
            return false;
        }
        let (idx, retx) = if let Some(i) = s.retx.pop_front() {
            s.queued[i as usize] = false;
            (i, true)
        } else if s.next_new < s.n {
            s.next_new += 1;
            (s.next_new - 1, false)
        } else {
            return false;
        };
        // The receiver finds lost scheduled packets as gaps from here on.
        let first_scheduled = s.first.sent;
        let mss = ctx.format().mss as u64;
        let data = CreditMsg::Data {
            pkt: idx,
            first_scheduled,
            credit_seq,
        };
        let mut p = ctx.data_packet(f, idx as u64 * mss, u64::MAX, data.header());
        p.flags |= flags::ECT;
        p.sent_at = echo;
        if retx {
            p.flags |= flags::RETX;
            ctx.count_retransmit(f);
        }
        ctx.send(p);
        h.stats.credits_used += 1;
        self.arm_rto(h, ctx, f);
        self.after_send(h, ctx, f);
        true
    }

    pub(super) fn open_recv(&self, h: &mut CreditHost, ctx: &Ctx, f: FlowId) {
        let r = &mut h.recv[self.slots.recv(f)];
        if !r.started {
            r.started = true;
            let spec = ctx.flow(f);
            r.received = vec![false; n_packets(spec.size, ctx.format().mss) as usize];
        }
    }

    /// Receiver: a small control message back to the sender.
    pub(super) fn reply(&self, ctx: &mut Ctx, f: FlowId, msg: CreditMsg) {
        let p = to_sender(ctx, f, msg, SMALL_BYTES, Lane::Control);
        ctx.send(p);
    }

    /// NACK every missing packet in `lo..hi`, one message per run.
    fn nack_range(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, lo: u32, hi: u32) -> bool {
        let ri = self.slots.recv(f);
        let mut any = false;
        let mut i = lo;
        while i < hi {
            if h.recv[ri].received[i as usize] {
                i += 1;
                continue;
            }
            let start = i;
            while i < hi && !h.recv[ri].received[i as usize] {
                i += 1;
            }
            let nack = CreditMsg::Nack {
                first: start,
                count: i - start,
            };
            self.reply(ctx, f, nack);
            h.stats.nacked += (i - start) as u64;
            any = true;
        }
        if any && !h.recv[ri].credits.on {
            self.restart_credits(h, ctx, f);
        }
        if any && h.recv[ri].renack_at.is_none() {
            let at = ctx.now() + self.common.rto;
            h.recv[ri].renack_at = Some(at);
            ctx.set_timer(at, f.0, T_RENACK);
        }
        any
    }

    /// Receiver: data packet `idx` (see [`CreditMsg::Data`]).
    pub(super) fn on_data(
        &self,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        pkt: Packet,
        idx: u32,
        first_scheduled: u32,
        credit_seq: u32,
    ) {
        let f = pkt.flow;
        self.open_recv(h, ctx, f);
        let ri = self.slots.recv(f);
        let now = ctx.now();
        let unscheduled = !pkt.has(flags::ECT);
        h.recv[ri].credits.on_echo(credit_seq, now - pkt.sent_at);
        if unscheduled {
            self.reply(ctx, f, CreditMsg::Ack { pkt: idx });
        } else if !pkt.has(flags::RETX) {
            // New scheduled packets leave in index order on one FIFO path:
            // the ones skipped since the last arrival were lost.
            let lo = h.recv[ri].sched_next.max(first_scheduled);
            if lo < idx {
                self.nack_range(h, ctx, f, lo, idx);
            }
            let r = &mut h.recv[ri];
            r.sched_next = r.sched_next.max(idx + 1);
        }
        let mss = ctx.format().mss as u64;
        let size = ctx.flow(f).size;
        let r = &mut h.recv[ri];
        let i = idx as usize;
        if i >= r.received.len() || r.received[i] {
            return;
        }
        r.received[i] = true;
        r.n_received += 1;
        while (r.until as usize) < r.received.len() && r.received[r.until as usize] {
            r.until += 1;
        }
        let in_order = (r.until as u64 * mss).min(size);
        ctx.set_received(f, in_order);
        if r.n_received as usize == r.received.len() && !r.done {
            r.done = true;
            r.credits.on = false;
            self.reply(ctx, f, CreditMsg::Done);
        }
    }

    /// Receiver: Aeolus' probe behind the last unscheduled packet; its
    /// echo shows the sender the tail of the first RTT.
    pub(super) fn on_probe(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, last: u32) {
        self.open_recv(h, ctx, f);
        self.reply(ctx, f, CreditMsg::ProbeAck { last });
    }

    /// Receiver: a status request after the sender's timeout, answered with
    /// NACKs of what is missing of the first `sent` packets, or `Done`.
    pub(super) fn on_status(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, sent: u32) {
        self.open_recv(h, ctx, f);
        let ri = self.slots.recv(f);
        if h.recv[ri].done {
            self.reply(ctx, f, CreditMsg::Done);
            return;
        }
        // Only what the sender has sent: the rest is not missing, just not
        // sent yet.
        let n = h.recv[ri].received.len() as u32;
        let lo = h.recv[ri].until;
        self.nack_range(h, ctx, f, lo, n.min(sent));
        // ExpressPass: a lost request (or stop) left the flow without
        // credits; the probe restarts them.
        if !h.recv[ri].credits.on {
            self.restart_credits(h, ctx, f);
        }
    }

    /// Sender: the receiver misses `count` packets from index `first` on.
    pub(super) fn on_nack(
        &self,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        first: u32,
        count: u32,
    ) {
        let s = &mut h.send[self.slots.send(f)];
        s.last_activity = ctx.now();
        for i in first..first.saturating_add(count) {
            s.push_retx(i);
        }
        s.stop_sent = false;
        self.want_credits(h, ctx, f);
    }

    /// Sender: the receiver holds every packet.
    pub(super) fn on_done(&self, h: &mut CreditHost, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        s.active = false;
        s.retx.clear();
        s.sched.clear();
    }

    /// Receiver: NACK again, every RTO, what is still missing below the
    /// highest packet received (a lost retransmission leaves no gap for
    /// later arrivals to show; ExpressPass' receiver repeats its NACK every
    /// `retransmit_timeout_` while the gap persists).
    pub(super) fn on_renack(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let r = &mut h.recv[self.slots.recv(f)];
        r.renack_at = None;
        if r.done {
            return;
        }
        let (lo, hi) = (r.until, r.sched_next);
        if lo < hi {
            self.nack_range(h, ctx, f, lo, hi);
        }
    }

    /// Sender: the retransmission timeout. Without news for an RTO it asks
    /// the receiver for its status.
    pub(super) fn on_rto(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let rto = self.common.rto;
        let s = &mut h.send[self.slots.send(f)];
        s.rto_at = None;
        if !s.active {
            return;
        }
        let due = s.last_activity + rto;
        if due > now {
            s.rto_at = Some(due);
            ctx.set_timer(due, f.0, T_RTO);
            return;
        }
        let sent = s.next_new;
        h.stats.timeouts += 1;
        let status = CreditMsg::Status { sent };
        let p = to_receiver(ctx, f, status, SMALL_BYTES, Lane::Control);
        ctx.send(p);
        self.arm_rto(h, ctx, f);
    }
}
