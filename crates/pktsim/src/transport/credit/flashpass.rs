//! FlashPass (Zeng et al., ICNP 2021): sender-driven emulation for
//! shallow-buffered WANs (spec `flashpass-paper.md` §1).
//!
//! The sender emits 84 B *emulation packets* forward, carrying their send
//! time T, through a rate-limited emulation queue at every port (the credit
//! FIFO of [`crate::net::queue::credit_port`], ≈5 % of the link, 8
//! packets). The receiver returns one credit per surviving emulation packet,
//! echoing T, on a high-priority queue. The sender puts the data packet of a
//! credit on the wire at exactly T + T_wait (*send time calibration*,
//! §III-B): every data packet then crosses every link T_wait after its
//! emulation packet did, whatever each flow's RTT, so the data reproduce the
//! rate-limited emulation pattern at every bottleneck. T_wait must exceed the
//! largest RTT; by default it is the largest base RTT of the run's flows plus
//! a margin for the emulation and data queues.
//!
//! Emulation rate (Algorithm 1, a loss-based MIMD loop per flow, once per
//! RTT): starting at the maximum (the emulation share of the sender's line
//! rate), loss = lost / (lost + credits) over the last RTT; above
//! `max_target_loss` (10 %) rate ← rate · (1 − loss) · (1 + `min_target_loss`);
//! below `min_target_loss` (1 %) rate ← rate · (1 + `max_target_loss`); capped
//! at the maximum. Emulation packets come back in order on one path, so a
//! gap in the echoed sequence numbers is a loss; one not answered in time
//! (below) is lost too. After a rate change only packets sent at the new
//! rate are counted, so one congestion episode is not punished twice (the
//! paper counts "the last RTT"; this is our reading of it).
//!
//! Over-provisioning (§III-C): the sender never stops emulating while data
//! remain uncovered by credits, but once the emulation packets in flight are
//! expected to cover the rest (E_out · (1 − max_target_loss) ≥ uncovered
//! packets, Eq. 2) new ones go out *over-provisioned*: non-ECT, which the
//! emulation queue drops above 2 packets. E_out counts the *ordinary*
//! packets in flight (our reading: over-provisioned ones are best effort,
//! dropped first, so no credit is expected of them; counting them would
//! leave a flow whose ordinary packets were lost sending only packets that
//! congestion drops). With `over_provisioning = false` every emulation
//! packet is ordinary. A packet not answered within 1.25 RTT + 1 ms (and
//! T_wait at most) is lost.

use super::wire::{to_receiver, to_sender, CreditMsg, Lane, CREDIT_BYTES};
use super::{
    CreditCommon, CreditConfigCommon, CreditDesign, CreditHost, CreditProtocol, Design, Sender,
    Stats, T_EMU, T_SEND,
};
use crate::error::{Error, Result};
use crate::packet::{flags, FlowId};
use crate::time::{parse_duration, Duration, Time};
use crate::transport::contract::Ctx;
use crate::transport::{ProtocolConfig, SimSetup};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// FlashPass' parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FlashPassParams {
    /// Loss below which the emulation rate grows.
    pub min_target_loss: f64,
    /// Loss above which it shrinks.
    pub max_target_loss: f64,
    /// Fixed T_wait (`None`: the run's largest base RTT plus `t_wait_margin`).
    pub t_wait: Option<Duration>,
    /// Added to the largest base RTT for the automatic T_wait.
    pub t_wait_margin: Duration,
    /// Tag emulation packets beyond the remaining demand over-provisioned.
    pub over_provisioning: bool,
}

/// `protocol = "flashpass"`: FlashPass, with Aeolus when `aeolus = true`
/// (FlashPass*). Use with `switch_queue = host_queue = { kind = "credit_port" }`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlashPassConfig {
    /// Algorithm 1's lower target (default 0.01).
    pub min_target_loss: f64,
    /// Algorithm 1's upper target (default 0.10).
    pub max_target_loss: f64,
    /// T_wait, e.g. `"80ms"` (default: largest base RTT plus the margin).
    pub t_wait: Option<String>,
    /// Margin of the automatic T_wait (default `"1ms"`).
    pub t_wait_margin: String,
    /// Credit over-provisioning with selective dropping (default on).
    pub over_provisioning: bool,
    /// Settings shared with ExpressPass.
    #[serde(flatten)]
    pub common: CreditConfigCommon,
}

impl Default for FlashPassConfig {
    /// The paper's values (§IV-A).
    fn default() -> Self {
        FlashPassConfig {
            min_target_loss: 0.01,
            max_target_loss: 0.10,
            t_wait: None,
            t_wait_margin: "1ms".into(),
            over_provisioning: true,
            common: CreditConfigCommon::default(),
        }
    }
}

impl FlashPassConfig {
    /// Validate into parameters.
    pub fn params(&self) -> Result<(FlashPassParams, CreditCommon)> {
        if !(0.0 <= self.min_target_loss
            && self.min_target_loss <= self.max_target_loss
            && self.max_target_loss < 1.0)
        {
            return Err(Error::config(
                "transport.max_target_loss",
                "need 0 <= min_target_loss <= max_target_loss < 1",
            ));
        }
        let dur = |s: &str, f: &str| {
            parse_duration(s).map_err(|m| Error::config(format!("transport.{f}"), m))
        };
        let t_wait = match &self.t_wait {
            Some(s) => Some(dur(s, "t_wait")?),
            None => None,
        };
        Ok((
            FlashPassParams {
                min_target_loss: self.min_target_loss,
                max_target_loss: self.max_target_loss,
                t_wait,
                t_wait_margin: dur(&self.t_wait_margin, "t_wait_margin")?,
                over_provisioning: self.over_provisioning,
            },
            self.common.params()?,
        ))
    }
}

impl ProtocolConfig for FlashPassConfig {
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        let (fp, common) = self.params()?;
        Ok(CreditProtocol::run(setup, Design::FlashPass(fp), common))
    }
}

/// The sender's emulation state of one flow.
#[derive(Clone, Debug, Default)]
pub struct Emulation {
    /// Emulation rate in bit/s.
    pub rate: f64,
    /// Largest emulation rate in bit/s.
    pub max_rate: f64,
    /// Sequence number of the next emulation packet.
    pub next_seq: u32,
    /// Lowest sequence number still in flight.
    first_out: u32,
    /// Send times of the packets in flight (`first_out..next_seq`), and
    /// whether each is ordinary.
    out: VecDeque<(Time, bool)>,
    /// Ordinary packets in flight.
    ordinary_out: u32,
    /// RTT estimate (credit arrival − echoed T).
    pub rtt: Duration,
    period_start: Time,
    credits: u32,
    lost: u32,
    /// Feedback on packets sent before this sequence number is stale (they
    /// left before the last rate change) and is not counted.
    count_from: u32,
    /// Time of the pending pacing timer, if any.
    pub timer_at: Option<Time>,
    /// Losses inferred (gaps and timeouts), for counters.
    pub lost_total: u64,
}

impl Emulation {
    /// Start a flow's emulation at the maximum rate (Algorithm 1's init).
    pub fn start(&mut self, max_rate: f64, rtt: Duration, now: Time) {
        self.max_rate = max_rate;
        self.rate = max_rate;
        self.rtt = rtt;
        self.period_start = now;
    }

    /// Emulation packets in flight.
    pub fn in_flight(&self) -> u32 {
        self.out.len() as u32
    }

    /// Ordinary emulation packets in flight (E_out of Eq. 2).
    pub fn ordinary_in_flight(&self) -> u32 {
        self.ordinary_out
    }

    fn pop(&mut self) {
        if let Some((_, ordinary)) = self.out.pop_front() {
            self.ordinary_out -= ordinary as u32;
        }
    }

    /// Record emulation packet `next_seq` sent at `now`, ordinary or
    /// over-provisioned; returns its sequence.
    pub fn note_sent(&mut self, now: Time, ordinary: bool) -> u32 {
        self.out.push_back((now, ordinary));
        self.ordinary_out += ordinary as u32;
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// The time series' emulation variables of a sender: the emulation
    /// rate and its largest value in Gbit/s, the RTT estimate, emulation
    /// packets in flight (ordinary ones apart: E_out of Eq. 2) and lost in
    /// all.
    pub fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("emulation_rate_gbps", self.rate / 1e9);
        out("emulation_rate_max_gbps", self.max_rate / 1e9);
        out("emulation_rtt_us", self.rtt.ps() as f64 / 1e6);
        out("emulation_in_flight", f64::from(self.in_flight()));
        out("emulation_ordinary_in_flight", f64::from(self.ordinary_out));
        out("emulation_lost", self.lost_total as f64);
    }

    /// Count packets sent before `deadline` that are still unanswered as lost.
    pub fn expire(&mut self, deadline: Time) {
        while self.out.front().is_some_and(|&(t, _)| t < deadline) {
            self.pop();
            if self.first_out >= self.count_from {
                self.lost += 1;
            }
            self.first_out += 1;
            self.lost_total += 1;
        }
    }

    /// A credit for emulation packet `seq` sent at `sent`, arriving `now`.
    pub fn on_credit(&mut self, seq: u32, sent: Time, now: Time) {
        while self.first_out <= seq && !self.out.is_empty() {
            self.pop();
            let fresh = self.first_out >= self.count_from;
            if self.first_out < seq {
                self.lost += fresh as u32;
                self.lost_total += 1;
            } else {
                self.credits += fresh as u32;
            }
            self.first_out += 1;
        }
        let sample = now - sent;
        self.rtt = Duration((self.rtt.ps() * 7 + sample.ps()) / 8);
    }

    /// Algorithm 1, once per RTT.
    pub fn control(&mut self, p: &FlashPassParams, credit_bits: f64, now: Time) {
        if now - self.period_start < self.rtt {
            return;
        }
        let total = self.credits + self.lost;
        if total > 0 {
            let loss = self.lost as f64 / total as f64;
            let before = self.rate;
            if loss > p.max_target_loss {
                self.rate *= (1.0 - loss) * (1.0 + p.min_target_loss);
            } else if loss < p.min_target_loss {
                self.rate *= 1.0 + p.max_target_loss;
            }
            if self.rate != before {
                // Judge the new rate on packets sent at it: one RTT of
                // fresh feedback per step, not the old rate's losses again.
                self.count_from = self.next_seq;
            }
            let floor = credit_bits / self.rtt.as_secs_f64().max(1e-9);
            self.rate = self.rate.clamp(floor.min(self.max_rate), self.max_rate);
        }
        self.period_start = now;
        self.credits = 0;
        self.lost = 0;
    }
}

/// FlashPass' part of a credit run: the sender paces emulation packets, the
/// receiver answers each with a credit that echoes its send time T, and the
/// data a credit releases leaves at T + T_wait (§III-B).
impl CreditDesign for FlashPassParams {
    fn name(&self) -> &'static str {
        "flashpass"
    }

    /// The configured T_wait, else the largest base RTT plus the margin.
    fn t_wait(&self, base_rtt: &[Duration]) -> Duration {
        match self.t_wait {
            Some(t) => t,
            None => base_rtt.iter().copied().max().unwrap_or(Duration::ZERO) + self.t_wait_margin,
        }
    }

    /// A credit echoing an emulation packet and its send time T.
    fn on_credit(
        &self,
        p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
        _echo: Time,
    ) {
        let CreditMsg::EchoCredit { sent, seq } = msg else {
            debug_assert!(false, "not a FlashPass credit: {msg:?}");
            return;
        };
        self.on_emulated_credit(p, h, ctx, f, sent, seq);
    }

    fn on_message(
        &self,
        _p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
    ) {
        let CreditMsg::Emu { sent, seq } = msg else {
            debug_assert!(false, "not a FlashPass message: {msg:?}");
            return;
        };
        // One credit per surviving emulation packet, echoing T.
        let credit = CreditMsg::EchoCredit { sent, seq };
        let m = to_sender(ctx, f, credit, CREDIT_BYTES, Lane::Control);
        ctx.send(m);
        h.stats.credits_sent += 1;
    }

    fn on_timer(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, kind: u8) {
        let now = Some(ctx.now());
        let s = &h.send[p.slots.send(f)];
        match kind {
            T_EMU if s.emu.timer_at == now => self.emulate(p, h, ctx, f),
            T_SEND if s.send_timer_at == now => self.send_due(p, h, ctx, f),
            _ => {}
        }
    }

    /// Keep emulating while data remain uncovered.
    fn want_credits(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[p.slots.send(f)];
        if s.active && s.emu.timer_at.is_none() && s.uncovered() > 0 {
            s.emu.timer_at = Some(ctx.now());
            ctx.set_timer(ctx.now(), f.0, T_EMU);
        }
    }

    /// The emulation loop, T_wait, and the credited data waiting for their
    /// send time T + T_wait.
    fn sender_state(&self, p: &CreditProtocol, s: &Sender, out: &mut dyn FnMut(&'static str, f64)) {
        s.emu.state(out);
        out("t_wait_us", p.t_wait.ps() as f64 / 1e6);
        out("credited_packets", s.sched.len() as f64);
    }

    fn counters(&self, s: &Stats, hosts: &[CreditHost], v: &mut Vec<(&'static str, u64)>) {
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
}

impl FlashPassParams {
    /// Sender: the next emulation packet of `f`, paced to the host's share.
    fn emulate(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let (over, max_loss) = (self.over_provisioning, self.max_target_loss);
        let now = ctx.now();
        let t_wait = p.t_wait;
        let si = p.slots.send(f);
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
        let slot = Duration(
            (CreditProtocol::credit_bits() / p.max_credit_rate(ctx, src) * 1e12).round() as u64,
        );
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
        let emu = CreditMsg::Emu { sent: now, seq };
        let mut m = to_receiver(ctx, f, emu, CREDIT_BYTES, Lane::Credit);
        if !ordinary {
            m.flags &= !flags::ECT;
            h.stats.emulation_overprovisioned += 1;
        }
        ctx.send(m);
        h.stats.emulation_sent += 1;
        let rate = h.send[si].emu.rate;
        let at = now + p.gap(h, rate);
        h.send[si].emu.timer_at = Some(at);
        ctx.set_timer(at, f.0, T_EMU);
    }

    /// Sender: a credit for emulation packet `seq` sent at `t`; the data it
    /// releases leaves at `t` + T_wait.
    fn on_emulated_credit(
        &self,
        p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        t: Time,
        seq: u32,
    ) {
        let now = ctx.now();
        let t_wait = p.t_wait;
        let si = p.slots.send(f);
        let s = &mut h.send[si];
        if !s.active {
            h.stats.credits_wasted += 1;
            return;
        }
        s.emu.on_credit(seq, t, now);
        s.emu.control(self, CreditProtocol::credit_bits(), now);
        p.end_unscheduled(h, ctx, f);
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

    /// Sender: send the credited data that are due.
    fn send_due(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let si = p.slots.send(f);
        h.send[si].send_timer_at = None;
        while let Some(&at) = h.send[si].sched.front() {
            if at > now {
                h.send[si].send_timer_at = Some(at);
                ctx.set_timer(at, f.0, T_SEND);
                return;
            }
            h.send[si].sched.pop_front();
            if !p.send_scheduled(h, ctx, f, 0, now) {
                h.stats.credits_wasted += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> FlashPassParams {
        FlashPassConfig::default().params().unwrap().0
    }

    #[test]
    fn algorithm_1_cuts_above_ten_percent_and_grows_below_one() {
        let p = params();
        let mut e = Emulation::default();
        let ms = Duration::from_ms(1);
        e.start(1e9, ms, Time::ZERO);
        e.rate = 5e8;
        // 20 sent, every other one lost: loss 50 %.
        for _ in 0..20 {
            e.note_sent(Time::ZERO, true);
        }
        for s in (1..20).step_by(2) {
            e.on_credit(s, Time::ZERO, Time::ZERO + ms);
        }
        e.control(&p, 672.0, Time::ZERO + ms);
        assert!((e.rate - 5e8 * 0.5 * 1.01).abs() < 1e-6, "{}", e.rate);
        // Next RTT: no loss, +10 %.
        for _ in 0..10 {
            e.note_sent(Time::ZERO + ms, true);
        }
        for s in 20..30 {
            e.on_credit(s, Time::ZERO + ms, Time::ZERO + ms.times(2));
        }
        e.control(&p, 672.0, Time::ZERO + ms.times(2));
        assert!((e.rate - 5e8 * 0.5 * 1.01 * 1.1).abs() < 1e-6, "{}", e.rate);
        // 5 % loss is inside the band: unchanged.
        let before = e.rate;
        for _ in 0..20 {
            e.note_sent(Time::ZERO + ms.times(2), true);
        }
        for s in 31..50 {
            e.on_credit(s, Time::ZERO + ms.times(2), Time::ZERO + ms.times(3));
        }
        e.control(&p, 672.0, Time::ZERO + ms.times(3));
        assert_eq!(e.rate, before);
        assert_eq!(e.in_flight(), 0);
    }

    #[test]
    fn unanswered_emulation_expires_as_loss() {
        let mut e = Emulation::default();
        e.start(1e6, Duration::from_ms(1), Time::ZERO);
        e.note_sent(Time::ZERO, true);
        e.note_sent(Time::ZERO + Duration::from_ms(5), false);
        e.expire(Time::ZERO + Duration::from_ms(1));
        assert_eq!((e.in_flight(), e.lost_total), (1, 1));
        assert_eq!(e.ordinary_in_flight(), 0);
        // A late credit of the expired one changes nothing.
        e.on_credit(0, Time::ZERO, Time::ZERO + Duration::from_ms(9));
        assert_eq!(e.in_flight(), 1);
    }
}
