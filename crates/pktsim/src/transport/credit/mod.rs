//! Credit-scheduled transports: ExpressPass ([`expresspass`]), FlashPass
//! ([`flashpass`]) and the Aeolus first-RTT add-on ([`aeolus`]) that makes
//! them ExpressPass* and FlashPass*. One transport type runs both designs:
//! they share the data path (one data packet per credit, the receiver's
//! bookkeeping, loss recovery) and differ in who makes credits and when the
//! data leaves.
//!
//! Data path. Packet `i` carries payload bytes `[i·mss, min((i+1)·mss,
//! size))`. Each credit releases one packet: a lost one first (Aeolus'
//! order: lost unscheduled, then new data), else the next new one; a
//! credit with nothing to send is wasted (counted). Scheduled data are ECT,
//! so switches never selectively drop them.
//!
//! Loss recovery. A flow's packets share one FIFO path and new scheduled
//! packets leave in index order, so the receiver finds a scheduled packet
//! lost when a later new one arrives first (each carries the index of the
//! flow's first scheduled packet, so unscheduled ones are never mistaken)
//! and NACKs it; Aeolus' ACKs and probe find unscheduled losses. A tail loss is
//! found by the sender's retransmission timeout (200 ms in the FlashPass
//! paper, counted from the last data sent or ACK/NACK received, not from
//! credits, which keep coming while a hole is open): it sends a status
//! probe and the receiver NACKs every missing packet the sender has sent.
//! A lost retransmission leaves no gap: the receiver repeats its NACKs of
//! what is still missing every RTO while a hole stays open. The receiver sends `DONE` when it holds every packet; ExpressPass
//! senders send `STOP` once everything is sent, and a receiver that NACKs
//! restarts its credits.

pub mod aeolus;
pub mod expresspass;
pub mod flashpass;
pub mod wire;

use crate::engine::Rng;
use crate::error::{Error, Result};
use crate::packet::{flags, FlowId, Header, NodeId, Packet};
use crate::time::{parse_duration, Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::per_host::{FlowSlots, HostProtocol, PerHost};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use aeolus::FirstRtt;
use expresspass::{CreditLoop, XpassParams};
use flashpass::{Emulation, FlashPassParams};
use wire::{message, Lane, CREDIT_BYTES, SMALL_BYTES};

pub use expresspass::ExpressPassConfig;
pub use flashpass::FlashPassConfig;

/// Timer kinds (the timer id is the flow index).
const T_CREDIT: u8 = 0;
const T_EMU: u8 = 1;
const T_SEND: u8 = 2;
const T_UNSCHED: u8 = 3;
const T_RTO: u8 = 4;
const T_RENACK: u8 = 5;

/// Settings both designs share, flattened into their `[transport]` tables.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreditConfigCommon {
    /// Aeolus first-RTT data (ExpressPass*, FlashPass*).
    pub aeolus: bool,
    /// Unscheduled data per flow in bandwidth-delay products of its path
    /// (Aeolus: 1).
    pub aeolus_bdp: f64,
    /// Retransmission timeout (FlashPass §IV-A: 200 ms).
    pub rto: String,
    /// Largest credit (or emulation) rate as a share of the host's link
    /// rate: 84/(84+1538) as in ExpressPass, the ports' default.
    pub credit_share: f64,
    /// Credit / emulation spacing jitter: gaps are scaled by 1 + U[−j, j].
    pub jitter: f64,
}

impl Default for CreditConfigCommon {
    fn default() -> Self {
        CreditConfigCommon {
            aeolus: false,
            aeolus_bdp: 1.0,
            rto: "200ms".into(),
            credit_share: 84.0 / (84.0 + 1538.0),
            jitter: 0.1,
        }
    }
}

/// Validated [`CreditConfigCommon`].
#[derive(Clone, Debug, PartialEq)]
pub struct CreditCommon {
    /// Unscheduled data per flow in BDPs (`None`: no Aeolus).
    pub aeolus_bdp: Option<f64>,
    /// Retransmission timeout.
    pub rto: Duration,
    /// Credit share of the host link.
    pub credit_share: f64,
    /// Spacing jitter.
    pub jitter: f64,
}

impl CreditConfigCommon {
    /// Validate.
    pub fn params(&self) -> Result<CreditCommon> {
        let rto = parse_duration(&self.rto).map_err(|m| Error::config("transport.rto", m))?;
        if rto == Duration::ZERO {
            return Err(Error::config("transport.rto", "must be positive"));
        }
        if !(self.credit_share > 0.0 && self.credit_share <= 1.0) {
            return Err(Error::config(
                "transport.credit_share",
                format!("must be in (0, 1], got {}", self.credit_share),
            ));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(Error::config(
                "transport.jitter",
                format!("must be in [0, 1), got {}", self.jitter),
            ));
        }
        if !(self.aeolus_bdp >= 0.0 && self.aeolus_bdp.is_finite()) {
            return Err(Error::config(
                "transport.aeolus_bdp",
                "must be a non-negative number",
            ));
        }
        Ok(CreditCommon {
            aeolus_bdp: self.aeolus.then_some(self.aeolus_bdp),
            rto,
            credit_share: self.credit_share,
            jitter: self.jitter,
        })
    }
}

/// Which design makes the credits.
#[derive(Clone, Debug)]
pub enum Design {
    /// Receiver-paced credits (ExpressPass).
    ExpressPass(XpassParams),
    /// Sender-driven emulation (FlashPass).
    FlashPass(FlashPassParams),
}

#[derive(Clone, Debug, Default)]
struct Sender {
    n: u32,
    active: bool,
    next_new: u32,
    retx: VecDeque<u32>,
    queued: Vec<bool>,
    first: FirstRtt,
    stop_sent: bool,
    last_activity: Time,
    rto_at: Option<Time>,
    emu: Emulation,
    /// Send times of credited data (FlashPass: T + T_wait), in order.
    sched: VecDeque<Time>,
    send_timer_at: Option<Time>,
}

impl Sender {
    /// Packets still to send that no credit covers yet.
    fn uncovered(&self) -> i64 {
        (self.n - self.next_new) as i64 + self.retx.len() as i64 - self.sched.len() as i64
    }
    fn has_work(&self) -> bool {
        self.next_new < self.n || !self.retx.is_empty()
    }
    fn push_retx(&mut self, idx: u32) {
        let i = idx as usize;
        if i < self.queued.len() && !self.queued[i] {
            self.queued[i] = true;
            self.retx.push_back(idx);
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Receiver {
    started: bool,
    done: bool,
    received: Vec<bool>,
    n_received: u32,
    until: u32,
    /// Index after the highest new scheduled packet received.
    sched_next: u32,
    /// Pending re-NACK timer, if any.
    renack_at: Option<Time>,
    credits: CreditLoop,
}

/// ExpressPass or FlashPass, with or without Aeolus, for every host and
/// flow of a run: the run loop's transport ([`CreditProtocol`] with one
/// [`CreditHost`] per host).
pub type CreditTransport = PerHost<CreditProtocol>;

/// The run-wide part of a credit transport: its settings and the tables
/// built at setup, read-only once the run starts. Everything that changes
/// lives in the hosts' [`CreditHost`] states.
pub struct CreditProtocol {
    design: Design,
    common: CreditCommon,
    /// Each flow's place in its source's sender and its destination's
    /// receiver table.
    slots: FlowSlots,
    /// Base RTT (twice the path's propagation delay) per flow.
    base_rtt: Vec<Duration>,
    t_wait: Duration,
    /// Set before the run: every host logs the credits it receives
    /// ([`CreditHost::credit_log`], tests).
    pub log_credits: bool,
}

/// One host's state: the sender side of the flows it sends, the receiver
/// side of those it receives, its emulation pacing, its jitter stream and
/// its counts.
pub struct CreditHost {
    /// Senders of this host's outgoing flows, by [`FlowSlots::send`].
    send: Vec<Sender>,
    /// Receivers of this host's incoming flows, by [`FlowSlots::recv`].
    recv: Vec<Receiver>,
    /// FlashPass: when this host may next send an emulation packet.
    emu_free: Time,
    /// This host's jitter stream (`transport.<protocol>.jitter`, instance
    /// = host): its draws never depend on another host's.
    rng: Rng,
    /// Event counts for `summary.json`, summed over hosts.
    stats: Stats,
    /// With [`CreditProtocol::log_credits`]: every credit this host received,
    /// as (this host, arrival time), in arrival order.
    pub credit_log: Option<Vec<(NodeId, Time)>>,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    credits_sent: u64,
    credits_used: u64,
    credits_wasted: u64,
    emulation_sent: u64,
    emulation_overprovisioned: u64,
    data_late: u64,
    unscheduled_sent: u64,
    unscheduled_lost: u64,
    nacked: u64,
    timeouts: u64,
}

impl Stats {
    /// Add another host's counts.
    fn add(&mut self, o: &Stats) {
        self.credits_sent += o.credits_sent;
        self.credits_used += o.credits_used;
        self.credits_wasted += o.credits_wasted;
        self.emulation_sent += o.emulation_sent;
        self.emulation_overprovisioned += o.emulation_overprovisioned;
        self.data_late += o.data_late;
        self.unscheduled_sent += o.unscheduled_sent;
        self.unscheduled_lost += o.unscheduled_lost;
        self.nacked += o.nacked;
        self.timeouts += o.timeouts;
    }
}

fn n_packets(size: u64, mss: u32) -> u32 {
    size.div_ceil(mss as u64).max(1) as u32
}

impl CreditProtocol {
    /// A protocol of `design` with the shared settings `common`.
    pub fn new(design: Design, common: CreditCommon) -> Self {
        CreditProtocol {
            design,
            common,
            slots: FlowSlots::default(),
            base_rtt: Vec::new(),
            t_wait: Duration::ZERO,
            log_credits: false,
        }
    }

    /// FlashPass' T_wait in this run (zero for ExpressPass).
    pub fn t_wait(&self) -> Duration {
        self.t_wait
    }

    fn credit_bits() -> f64 {
        CREDIT_BYTES as f64 * 8.0
    }

    fn max_credit_rate(&self, ctx: &Ctx, host: NodeId) -> f64 {
        ctx.host_rate(host).bps() as f64 * self.common.credit_share
    }

    /// The gap before the host's next credit or emulation packet at `rate`
    /// bit/s, jittered from the host's own stream.
    fn gap(&self, h: &mut CreditHost, rate: f64) -> Duration {
        let j = self.common.jitter;
        let scale = if j > 0.0 {
            1.0 + j * (2.0 * h.rng.uniform() - 1.0)
        } else {
            1.0
        };
        let secs = Self::credit_bits() / rate * scale;
        Duration(((secs * 1e12).round() as u64).max(1))
    }

    fn arm_rto(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        s.last_activity = ctx.now();
        if s.rto_at.is_none() {
            let at = ctx.now() + self.common.rto;
            s.rto_at = Some(at);
            ctx.set_timer(at, f.0, T_RTO);
        }
    }

    /// Send one data packet of `f` for a credit (`credit_seq`, `credit_time`):
    /// returns false if nothing was left (a wasted credit).
    fn send_scheduled(
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
        let header = Header::Ctrl {
            kind: wire::DATA,
            a: idx as u64 | (first_scheduled as u64) << 32,
            b: credit_seq,
        };
        let mut p = ctx.data_packet(f, idx as u64 * mss, u64::MAX, header);
        p.flags |= flags::ECT;
        p.sent_at = echo;
        if retx {
            p.flags |= flags::RETX;
            ctx.count_retransmit(f);
        }
        ctx.send(p);
        h.stats.credits_used += 1;
        self.arm_rto(h, ctx, f);
        self.maybe_stop(h, ctx, f);
        true
    }

    /// ExpressPass: tell the receiver to stop crediting once all is sent.
    fn maybe_stop(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        if !matches!(self.design, Design::ExpressPass(_)) {
            return;
        }
        let s = &mut h.send[self.slots.send(f)];
        if s.stop_sent || s.has_work() || !s.first.all_resolved() || s.first.sending {
            return;
        }
        s.stop_sent = true;
        let spec = ctx.flow(f);
        let p = message(
            ctx,
            f,
            spec.src,
            spec.dst,
            wire::STOP,
            0,
            0,
            CREDIT_BYTES,
            Lane::Control,
        );
        ctx.send(p);
    }

    /// Aeolus: the next unscheduled packet at line rate, then the probe.
    fn send_unscheduled(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if !s.active || !s.first.sending {
            return;
        }
        if s.first.sent < s.first.cap && s.next_new < s.n {
            let idx = s.next_new;
            s.next_new += 1;
            s.first.note_sent(idx);
            let mss = ctx.format().mss as u64;
            let header = Header::Ctrl {
                kind: wire::DATA,
                a: idx as u64 | (idx as u64) << 32,
                b: 0,
            };
            // Non-ECT: selectively dropped above the threshold.
            let p = ctx.data_packet(f, idx as u64 * mss, u64::MAX, header);
            let tx = ctx.host_rate(p.src).tx_time(p.size as u64);
            ctx.send(p);
            h.stats.unscheduled_sent += 1;
            self.arm_rto(h, ctx, f);
            ctx.set_timer(ctx.now() + tx, f.0, T_UNSCHED);
            return;
        }
        self.end_unscheduled(h, ctx, f);
    }

    fn end_unscheduled(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if !s.first.sending {
            return;
        }
        s.first.sending = false;
        if s.first.sent > 0 && !s.first.probed {
            s.first.probed = true;
            let spec = ctx.flow(f);
            let p = message(
                ctx,
                f,
                spec.src,
                spec.dst,
                wire::PROBE,
                (s.first.sent - 1) as u64,
                0,
                SMALL_BYTES,
                Lane::Scheduled,
            );
            ctx.send(p);
        }
        self.ensure_emulation(h, ctx, f);
    }

    /// FlashPass: keep emulating while data remain uncovered.
    fn ensure_emulation(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        if !matches!(self.design, Design::FlashPass(_)) {
            return;
        }
        let s = &mut h.send[self.slots.send(f)];
        if s.active && s.emu.timer_at.is_none() && s.uncovered() > 0 {
            s.emu.timer_at = Some(ctx.now());
            ctx.set_timer(ctx.now(), f.0, T_EMU);
        }
    }

    fn emulate(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let Design::FlashPass(fp) = &self.design else {
            return;
        };
        let (over, max_loss) = (fp.over_provisioning, fp.max_target_loss);
        let now = ctx.now();
        let t_wait = self.t_wait;
        let si = self.slots.send(f);
        let s = &mut h.send[si];
        s.emu.timer_at = None;
        if !s.active || s.uncovered() <= 0 {
            return;
        }
        // The host paces all its flows' emulation to its NIC's emulation
        // share, so no emulation packet waits in its own NIC: T is then the
        // time it leaves the host, and the data, sent T_wait later, do not
        // bunch where the emulation packets were spread out (§III-B: data
        // cross every link T_wait after their emulation packet).
        let src = ctx.flow(f).src;
        let free = h.emu_free;
        if free > now {
            h.send[si].emu.timer_at = Some(free);
            ctx.set_timer(free, f.0, T_EMU);
            return;
        }
        let slot =
            Duration((Self::credit_bits() / self.max_credit_rate(ctx, src) * 1e12).round() as u64);
        h.emu_free = now + slot;
        let s = &mut h.send[si];
        // A credit comes back within the RTT plus the queues' few packets.
        let patience = Duration(s.emu.rtt.ps() / 4 * 5) + Duration::from_ms(1);
        let patience = patience.min(t_wait.max(Duration::from_ms(1)));
        s.emu.expire(Time(now.ps().saturating_sub(patience.ps())));
        // Eq. 2: credits expected from the ordinary packets in flight.
        let expected = s.emu.ordinary_in_flight() as f64 * (1.0 - max_loss);
        let ordinary = !over || expected < s.uncovered() as f64;
        let seq = s.emu.note_sent(now, ordinary);
        let spec = ctx.flow(f);
        let mut p = message(
            ctx,
            f,
            spec.src,
            spec.dst,
            wire::EMU,
            now.ps(),
            seq,
            CREDIT_BYTES,
            Lane::Credit,
        );
        if !ordinary {
            p.flags &= !flags::ECT;
            h.stats.emulation_overprovisioned += 1;
        }
        ctx.send(p);
        h.stats.emulation_sent += 1;
        let rate = h.send[si].emu.rate;
        let at = now + self.gap(h, rate);
        h.send[si].emu.timer_at = Some(at);
        ctx.set_timer(at, f.0, T_EMU);
    }

    fn fp_credit(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, t: Time, seq: u32) {
        let Design::FlashPass(fp) = &self.design else {
            return;
        };
        let now = ctx.now();
        let t_wait = self.t_wait;
        let si = self.slots.send(f);
        let s = &mut h.send[si];
        if !s.active {
            h.stats.credits_wasted += 1;
            return;
        }
        s.emu.on_credit(seq, t, now);
        s.emu.control(fp, Self::credit_bits(), now);
        self.end_unscheduled(h, ctx, f);
        // Send time calibration: the data leaves at T + T_wait.
        let at = t + t_wait;
        if at < now {
            h.stats.data_late += 1;
        }
        let at = at.max(now);
        let s = &mut h.send[si];
        s.sched.push_back(at);
        if s.send_timer_at.is_none() {
            s.send_timer_at = Some(at);
            ctx.set_timer(at, f.0, T_SEND);
        }
    }

    fn fp_send_due(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let si = self.slots.send(f);
        h.send[si].send_timer_at = None;
        while let Some(&at) = h.send[si].sched.front() {
            if at > now {
                h.send[si].send_timer_at = Some(at);
                ctx.set_timer(at, f.0, T_SEND);
                return;
            }
            h.send[si].sched.pop_front();
            if !self.send_scheduled(h, ctx, f, 0, now) {
                h.stats.credits_wasted += 1;
            }
        }
    }

    /// ExpressPass receiver: send one credit and pace the next.
    fn xp_credit(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let Design::ExpressPass(xp) = &self.design else {
            return;
        };
        let now = ctx.now();
        let ri = self.slots.recv(f);
        let r = &mut h.recv[ri];
        r.credits.timer_at = None;
        if !r.credits.on || r.done {
            return;
        }
        r.credits.feedback(xp, Self::credit_bits(), now);
        r.credits.seq += 1;
        let seq = r.credits.seq;
        let rate = r.credits.rate;
        let spec = ctx.flow(f);
        let p = message(
            ctx,
            f,
            spec.dst,
            spec.src,
            wire::CREDIT,
            seq as u64,
            0,
            CREDIT_BYTES,
            Lane::Credit,
        );
        ctx.send(p);
        h.stats.credits_sent += 1;
        let at = now + self.gap(h, rate);
        h.recv[ri].credits.timer_at = Some(at);
        ctx.set_timer(at, f.0, T_CREDIT);
    }

    fn xp_start_credits(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let Design::ExpressPass(xp) = &self.design else {
            return;
        };
        let dst = ctx.flow(f).dst;
        let max = self.max_credit_rate(ctx, dst);
        let rtt = self.base_rtt[f.idx()].max(Duration::from_us(1));
        let r = &mut h.recv[self.slots.recv(f)];
        if r.done {
            return;
        }
        r.credits.start(xp, max, rtt, ctx.now());
        if r.credits.timer_at.is_none() {
            self.xp_credit(h, ctx, f);
        }
    }

    fn open_recv(&self, h: &mut CreditHost, ctx: &Ctx, f: FlowId) {
        let r = &mut h.recv[self.slots.recv(f)];
        if !r.started {
            r.started = true;
            let spec = ctx.flow(f);
            r.received = vec![false; n_packets(spec.size, ctx.format().mss) as usize];
        }
    }

    fn reply(&self, ctx: &mut Ctx, f: FlowId, kind: u8, a: u64, b: u32) {
        let spec = ctx.flow(f);
        let p = message(
            ctx,
            f,
            spec.dst,
            spec.src,
            kind,
            a,
            b,
            SMALL_BYTES,
            Lane::Control,
        );
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
            self.reply(ctx, f, wire::NACK, start as u64, i - start);
            h.stats.nacked += (i - start) as u64;
            any = true;
        }
        if any && !h.recv[ri].credits.on {
            self.xp_start_credits(h, ctx, f);
        }
        if any && h.recv[ri].renack_at.is_none() {
            let at = ctx.now() + self.common.rto;
            h.recv[ri].renack_at = Some(at);
            ctx.set_timer(at, f.0, T_RENACK);
        }
        any
    }

    fn on_data(&self, h: &mut CreditHost, ctx: &mut Ctx, pkt: Packet, a: u64, credit_seq: u32) {
        let f = pkt.flow;
        self.open_recv(h, ctx, f);
        let ri = self.slots.recv(f);
        let idx = a as u32;
        let first_scheduled = (a >> 32) as u32;
        let now = ctx.now();
        let unscheduled = !pkt.has(flags::ECT);
        h.recv[ri].credits.on_echo(credit_seq, now - pkt.sent_at);
        if unscheduled {
            self.reply(ctx, f, wire::ACK, idx as u64, 0);
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
            self.reply(ctx, f, wire::DONE, 0, 0);
        }
    }

    /// Receiver: NACK again, every RTO, what is still missing below the
    /// highest packet received (a lost retransmission leaves no gap for
    /// later arrivals to show; ExpressPass' receiver repeats its NACK every
    /// `retransmit_timeout_` while the gap persists).
    fn on_renack(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
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

    fn on_rto(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
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
        let spec = ctx.flow(f);
        let p = message(
            ctx,
            f,
            spec.src,
            spec.dst,
            wire::PROBE,
            wire::STATUS,
            sent,
            SMALL_BYTES,
            Lane::Control,
        );
        ctx.send(p);
        self.arm_rto(h, ctx, f);
    }
}

impl HostProtocol for CreditProtocol {
    type Host = CreditHost;

    fn name(&self) -> &'static str {
        match self.design {
            Design::ExpressPass(_) => "expresspass",
            Design::FlashPass(_) => "flashpass",
        }
    }

    fn setup(&mut self, env: &Setup) -> Result<()> {
        let n = env.n_flows();
        self.slots = FlowSlots::new(env);
        self.base_rtt = (0..n)
            .map(|i| {
                let spec = env.flow(FlowId(i as u32));
                env.path_delay(spec.src, spec.dst).times(2)
            })
            .collect();
        if let Design::FlashPass(fp) = &self.design {
            self.t_wait = match fp.t_wait {
                Some(t) => t,
                None => {
                    self.base_rtt
                        .iter()
                        .copied()
                        .max()
                        .unwrap_or(Duration::ZERO)
                        + fp.t_wait_margin
                }
            };
        }
        Ok(())
    }

    fn new_host(&self, env: &Setup, host: NodeId) -> CreditHost {
        CreditHost {
            send: vec![Sender::default(); self.slots.n_send(host)],
            recv: vec![Receiver::default(); self.slots.n_recv(host)],
            emu_free: Time::ZERO,
            rng: env.rng("jitter", host.0 as u64),
            stats: Stats::default(),
            credit_log: self.log_credits.then(Vec::new),
        }
    }

    fn start_flow(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let spec = ctx.flow(f);
        let (src, dst, size) = (spec.src, spec.dst, spec.size);
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
        if let Design::ExpressPass(_) = self.design {
            let p = message(
                ctx,
                f,
                src,
                dst,
                wire::REQ,
                n as u64,
                0,
                CREDIT_BYTES,
                Lane::Control,
            );
            ctx.send(p);
        }
        self.arm_rto(h, ctx, f);
        if cap > 0 {
            self.send_unscheduled(h, ctx, f);
        }
        self.ensure_emulation(h, ctx, f);
    }

    fn on_packet(&self, h: &mut CreditHost, ctx: &mut Ctx, pkt: Packet) {
        let Header::Ctrl { kind, a, b } = pkt.header else {
            debug_assert!(false, "credit transport got a foreign packet");
            return;
        };
        let f = pkt.flow;
        match kind {
            wire::REQ => {
                self.open_recv(h, ctx, f);
                self.xp_start_credits(h, ctx, f);
            }
            wire::STOP => {
                h.recv[self.slots.recv(f)].credits.on = false;
            }
            wire::CREDIT => {
                if let Some(log) = h.credit_log.as_mut() {
                    log.push((pkt.dst, ctx.now()));
                }
                // A credit alone is no progress: one that finds nothing to
                // send must not hold off the timeout that repairs a hole.
                match self.design {
                    Design::ExpressPass(_) => {
                        self.end_unscheduled(h, ctx, f);
                        if !self.send_scheduled(h, ctx, f, a as u32, pkt.sent_at) {
                            h.stats.credits_wasted += 1;
                        }
                    }
                    Design::FlashPass(_) => self.fp_credit(h, ctx, f, Time(a), b),
                }
            }
            wire::EMU => {
                // One credit per surviving emulation packet, echoing T.
                let spec = ctx.flow(f);
                let p = message(
                    ctx,
                    f,
                    spec.dst,
                    spec.src,
                    wire::CREDIT,
                    a,
                    b,
                    CREDIT_BYTES,
                    Lane::Control,
                );
                ctx.send(p);
                h.stats.credits_sent += 1;
            }
            wire::DATA => self.on_data(h, ctx, pkt, a, b),
            wire::ACK | wire::PROBE_ACK => {
                let si = self.slots.send(f);
                let s = &mut h.send[si];
                s.last_activity = ctx.now();
                let mut lost = Vec::new();
                if kind == wire::ACK {
                    s.first.on_ack(a as u32, &mut |i| lost.push(i));
                } else if a != wire::STATUS {
                    s.first.on_probe_ack(a as u32, &mut |i| lost.push(i));
                }
                h.stats.unscheduled_lost += lost.len() as u64;
                for i in lost {
                    h.send[si].push_retx(i);
                }
                self.ensure_emulation(h, ctx, f);
                self.maybe_stop(h, ctx, f);
            }
            wire::PROBE => {
                self.open_recv(h, ctx, f);
                let ri = self.slots.recv(f);
                if a == wire::STATUS {
                    if h.recv[ri].done {
                        self.reply(ctx, f, wire::DONE, 0, 0);
                    } else {
                        // Only what the sender has sent (`b`): the rest is
                        // not missing, just not sent yet.
                        let n = h.recv[ri].received.len() as u32;
                        let lo = h.recv[ri].until;
                        self.nack_range(h, ctx, f, lo, n.min(b));
                        // ExpressPass: a lost request (or stop) left the
                        // flow without credits; the probe restarts them.
                        if !h.recv[ri].credits.on {
                            self.xp_start_credits(h, ctx, f);
                        }
                    }
                } else {
                    self.reply(ctx, f, wire::PROBE_ACK, a, 0);
                }
            }
            wire::NACK => {
                let s = &mut h.send[self.slots.send(f)];
                s.last_activity = ctx.now();
                for i in a as u32..(a as u32).saturating_add(b) {
                    s.push_retx(i);
                }
                s.stop_sent = false;
                self.ensure_emulation(h, ctx, f);
            }
            wire::DONE => {
                let s = &mut h.send[self.slots.send(f)];
                s.active = false;
                s.retx.clear();
                s.sched.clear();
            }
            _ => debug_assert!(false, "unknown credit-transport packet"),
        }
    }

    fn on_timer(&self, h: &mut CreditHost, ctx: &mut Ctx, id: u32, kind: u8) {
        // The timer id is the flow: the host is its receiver for credit
        // pacing and re-NACKs, its sender for the rest.
        let f = FlowId(id);
        let now = Some(ctx.now());
        match kind {
            T_CREDIT if h.recv[self.slots.recv(f)].credits.timer_at == now => {
                self.xp_credit(h, ctx, f)
            }
            T_EMU if h.send[self.slots.send(f)].emu.timer_at == now => self.emulate(h, ctx, f),
            T_SEND if h.send[self.slots.send(f)].send_timer_at == now => {
                self.fp_send_due(h, ctx, f)
            }
            T_UNSCHED => self.send_unscheduled(h, ctx, f),
            T_RTO if h.send[self.slots.send(f)].rto_at == now => self.on_rto(h, ctx, f),
            T_RENACK if h.recv[self.slots.recv(f)].renack_at == now => self.on_renack(h, ctx, f),
            _ => {}
        }
    }

    fn counters(&self, hosts: &[CreditHost]) -> Vec<(&'static str, u64)> {
        let mut s = Stats::default();
        for h in hosts {
            s.add(&h.stats);
        }
        let mut v = vec![
            ("credits_sent", s.credits_sent),
            ("credits_used", s.credits_used),
            ("credits_wasted", s.credits_wasted),
            ("timeouts", s.timeouts),
            ("nacked_packets", s.nacked),
        ];
        if let Design::FlashPass(_) = self.design {
            v.push(("emulation_sent", s.emulation_sent));
            v.push(("emulation_overprovisioned", s.emulation_overprovisioned));
            v.push(("data_after_t_wait", s.data_late));
            let lost: u64 = hosts
                .iter()
                .flat_map(|h| &h.send)
                .map(|x| x.emu.lost_total)
                .sum();
            v.push(("emulation_lost", lost));
        }
        if self.common.aeolus_bdp.is_some() {
            v.push(("unscheduled_sent", s.unscheduled_sent));
            v.push(("unscheduled_lost", s.unscheduled_lost));
        }
        v
    }
}
