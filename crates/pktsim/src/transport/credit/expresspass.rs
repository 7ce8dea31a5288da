//! ExpressPass (Cho, Jang, Han, SIGCOMM 2017): the receiver paces credits
//! to the sender, every port lets credits through at ≈5 % of its link rate
//! (see [`crate::net::queue::credit_port`]) and drops the excess from an
//! 8-credit queue, and each credit that reaches the sender releases one MTU
//! of data on the credit's path (symmetric ECMP). The receiver adapts its
//! credit rate to the credit loss it sees, once per RTT (spec
//! `expresspass.md` §1.5, from the ns-2 code `xpass.cc`):
//!
//! - loss = credits dropped / credits sent over the last period, dropped ones
//!   found as gaps in the credit sequence numbers that data echo;
//! - target = (1 − rate/max) · `target_loss` (1/8);
//! - loss above target: rate ← the credit rate that got through · (1 +
//!   target), never more than before; w ← max(w/2, w_min);
//! - else: w ← min(w + 0.05, w_max) after two increases in a row;
//!   rate ← w · max + (1 − w) · rate;
//! - rate clamped to [one credit per RTT, max].
//!
//! As in `xpass.cc`, the receiver has no RTT estimate until the first data
//! packet echoes a credit (the first sample is taken as it is, the EWMA
//! runs from the second), and a period in which no data echoed a credit
//! stays open (`if (credit_total_ == 0) return;`): no decision, no clamp,
//! the period's start kept. So the first decision comes with the first
//! echo, one sample long (usually raising the rate from α · max).
//!
//! Credits are spaced by their size at the current rate times (1 + U[−j, j])
//! (jitter j = 0.1), which breaks the phase-locking of many synchronous
//! credit streams.

use super::wire::{to_receiver, to_sender, CreditMsg, Lane, CREDIT_BYTES};
use super::{
    CreditCommon, CreditConfigCommon, CreditDesign, CreditHost, CreditProtocol, Design, Receiver,
    Sender, T_CREDIT,
};
use crate::error::{Error, Result};
use crate::packet::FlowId;
use crate::time::{Duration, Time};
use crate::transport::contract::Ctx;
use crate::transport::{ProtocolConfig, SimSetup};
use serde::{Deserialize, Serialize};

/// ExpressPass' controller parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct XpassParams {
    /// Initial credit rate as a fraction of the maximum.
    pub alpha: f64,
    /// Initial aggressiveness w.
    pub w_init: f64,
    /// Smallest w.
    pub w_min: f64,
    /// Largest w.
    pub w_max: f64,
    /// Target loss at rate 0 (scaled down linearly to 0 at the maximum).
    pub target_loss: f64,
}

/// `protocol = "expresspass"`: ExpressPass, with Aeolus when `aeolus = true`
/// (ExpressPass*). Use with `switch_queue = host_queue = { kind = "credit_port" }`
/// and `load_balancing = "symmetric_ecmp"`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExpressPassConfig {
    /// Initial credit rate / maximum (ns-2 default 0.5; the paper 1/16).
    pub alpha: f64,
    /// Initial w (ns-2 default 0.5; the paper 1/16).
    pub w_init: f64,
    /// Smallest w.
    pub w_min: f64,
    /// Largest w.
    pub w_max: f64,
    /// Target loss scaling.
    pub target_loss: f64,
    /// Settings shared with FlashPass.
    #[serde(flatten)]
    pub common: CreditConfigCommon,
}

impl Default for ExpressPassConfig {
    /// The ns-2 code's defaults (`ns-default.tcl`), which the FlashPass paper
    /// ran ("default parameters").
    fn default() -> Self {
        ExpressPassConfig {
            alpha: 0.5,
            w_init: 0.5,
            w_min: 0.01,
            w_max: 0.5,
            target_loss: 0.125,
            common: CreditConfigCommon::default(),
        }
    }
}

impl ExpressPassConfig {
    /// Validate into parameters.
    pub fn params(&self) -> Result<(XpassParams, CreditCommon)> {
        for (v, f) in [
            (self.alpha, "alpha"),
            (self.w_init, "w_init"),
            (self.w_min, "w_min"),
            (self.w_max, "w_max"),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::config(
                    format!("transport.{f}"),
                    format!("must be in (0, 1], got {v}"),
                ));
            }
        }
        if !(0.0..1.0).contains(&self.target_loss) {
            return Err(Error::config(
                "transport.target_loss",
                format!("must be in [0, 1), got {}", self.target_loss),
            ));
        }
        if self.w_min > self.w_max {
            return Err(Error::config("transport.w_min", "must not exceed w_max"));
        }
        Ok((
            XpassParams {
                alpha: self.alpha,
                w_init: self.w_init,
                w_min: self.w_min,
                w_max: self.w_max,
                target_loss: self.target_loss,
            },
            self.common.params()?,
        ))
    }
}

impl ProtocolConfig for ExpressPassConfig {
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        let (xp, common) = self.params()?;
        Ok(CreditProtocol::run(setup, Design::ExpressPass(xp), common))
    }
}

/// The receiver's credit loop of one flow.
#[derive(Clone, Debug, Default)]
pub struct CreditLoop {
    /// Whether credits are being sent.
    pub on: bool,
    /// Credit rate in bit/s.
    pub rate: f64,
    /// Largest credit rate in bit/s.
    pub max_rate: f64,
    w: f64,
    /// RTT estimate (EWMA of data arrival − echoed credit time); zero until
    /// the first data packet echoes a credit.
    pub rtt: Duration,
    period_start: Time,
    /// Sequence number of the last credit sent.
    pub seq: u32,
    last_echo: u32,
    dropped: u32,
    received: u32,
    increasing: bool,
    /// Time of the pending pacing timer, if any.
    pub timer_at: Option<Time>,
}

impl CreditLoop {
    /// Start (or restart) sending credits at `now`.
    pub fn start(&mut self, p: &XpassParams, max_rate: f64, now: Time) {
        self.on = true;
        self.max_rate = max_rate;
        if self.rate == 0.0 {
            self.rate = p.alpha * max_rate;
            self.w = p.w_init;
        }
        self.period_start = now;
        self.dropped = 0;
        self.received = 0;
    }

    /// The time series' credit-loop variables of a receiver: the credit
    /// rate and its largest value in Gbit/s, the aggressiveness w, the RTT
    /// estimate, credits sent, and whether credits are flowing (0/1).
    pub fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("credit_rate_gbps", self.rate / 1e9);
        out("credit_rate_max_gbps", self.max_rate / 1e9);
        out("credit_w", self.w);
        out("credit_rtt_us", self.rtt.ps() as f64 / 1e6);
        out("credits_sent", f64::from(self.seq));
        out("crediting", f64::from(u8::from(self.on)));
    }

    /// A data packet echoed credit `seq` after `sample` (now − credit time).
    pub fn on_echo(&mut self, seq: u32, sample: Duration) {
        if seq == 0 {
            return; // unscheduled data: no credit
        }
        if seq > self.last_echo {
            self.dropped += seq - self.last_echo - 1;
            self.received += 1;
            self.last_echo = seq;
        }
        // EWMA 0.8/0.2 from the first sample on, as `xpass.cc`'s `update_rtt`.
        self.rtt = if self.rtt == Duration::ZERO {
            sample
        } else {
            Duration((self.rtt.ps() * 4 + sample.ps()) / 5)
        };
    }

    /// Run the feedback controller if a period (one RTT) has passed and a
    /// data packet echoed a credit in it (`xpass.cc`'s
    /// `credit_feedback_control`: without an RTT sample, or without an echo,
    /// the period stays open).
    pub fn feedback(&mut self, p: &XpassParams, credit_bits: f64, now: Time) {
        let period = now - self.period_start;
        if self.rtt == Duration::ZERO || period < self.rtt || period == Duration::ZERO {
            return;
        }
        let total = self.dropped + self.received;
        if total == 0 {
            return;
        }
        let loss = self.dropped as f64 / total as f64;
        let target = (1.0 - self.rate / self.max_rate) * p.target_loss;
        if loss > target {
            let got = credit_bits * self.received as f64 / period.as_secs_f64();
            self.rate = self.rate.min(got * (1.0 + target));
            self.w = (self.w / 2.0).max(p.w_min);
            self.increasing = false;
        } else {
            if self.increasing {
                self.w = (self.w + 0.05).min(p.w_max);
            }
            self.rate = self.w * self.max_rate + (1.0 - self.w) * self.rate;
            self.increasing = true;
        }
        let floor = credit_bits / self.rtt.as_secs_f64().max(1e-9);
        self.rate = self.rate.clamp(floor.min(self.max_rate), self.max_rate);
        self.period_start = now;
        self.dropped = 0;
        self.received = 0;
    }
}

/// ExpressPass' part of a credit run: the receiver paces credits, the
/// sender asks for them (`REQ`) and stops them (`STOP`) once all is sent,
/// and each credit releases one data packet at once.
impl CreditDesign for XpassParams {
    fn name(&self) -> &'static str {
        "expresspass"
    }

    fn start_flow(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let n = h.send[p.slots.send(f)].n;
        let req = CreditMsg::Req { packets: n };
        let m = to_receiver(ctx, f, req, CREDIT_BYTES, Lane::Control);
        ctx.send(m);
    }

    /// Sender: a credit releases one data packet, which echoes the
    /// credit's send time. Receiver: `REQ` starts the credits, `STOP` ends
    /// them.
    fn on_message(
        &self,
        p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
        sent_at: Time,
    ) {
        match msg {
            CreditMsg::Credit { seq } => {
                // A credit alone is no progress: one that finds nothing to
                // send must not hold off the timeout that repairs a hole.
                p.end_unscheduled(h, ctx, f);
                if !p.send_scheduled(h, ctx, f, seq, sent_at) {
                    h.stats.credits_wasted += 1;
                }
            }
            CreditMsg::Req { .. } => {
                p.open_recv(h, ctx, f);
                self.start_credits(p, h, ctx, f);
            }
            CreditMsg::Stop => h.recv[p.slots.recv(f)].credits.on = false,
            _ => debug_assert!(false, "not an ExpressPass message: {msg:?}"),
        }
    }

    fn on_timer(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, kind: u8) {
        if kind == T_CREDIT && h.recv[p.slots.recv(f)].credits.timer_at == Some(ctx.now()) {
            self.send_credit(p, h, ctx, f);
        }
    }

    /// Tell the receiver to stop crediting once all is sent.
    fn after_send(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[p.slots.send(f)];
        if s.stop_sent || s.has_work() || !s.first.all_resolved() || s.first.sending {
            return;
        }
        s.stop_sent = true;
        let m = to_receiver(ctx, f, CreditMsg::Stop, CREDIT_BYTES, Lane::Control);
        ctx.send(m);
    }

    fn restart_credits(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        self.start_credits(p, h, ctx, f);
    }

    /// Whether the sender told the receiver to stop crediting (0/1).
    fn sender_state(
        &self,
        _p: &CreditProtocol,
        s: &Sender,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        out("stop_sent", f64::from(u8::from(s.stop_sent)));
    }

    /// The receiver's credit loop.
    fn receiver_state(&self, r: &Receiver, out: &mut dyn FnMut(&'static str, f64)) {
        r.credits.state(out);
    }
}

impl XpassParams {
    /// Receiver: send one credit and pace the next.
    fn send_credit(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let ri = p.slots.recv(f);
        let r = &mut h.recv[ri];
        r.credits.timer_at = None;
        if !r.credits.on || r.done {
            return;
        }
        r.credits.feedback(self, CreditProtocol::credit_bits(), now);
        r.credits.seq += 1;
        let seq = r.credits.seq;
        let rate = r.credits.rate;
        let credit = CreditMsg::Credit { seq };
        let m = to_sender(ctx, f, credit, CREDIT_BYTES, Lane::Credit);
        ctx.send(m);
        h.stats.credits_sent += 1;
        let at = now + p.gap(h, rate);
        h.recv[ri].credits.timer_at = Some(at);
        ctx.set_timer(at, f.0, T_CREDIT);
    }

    /// Receiver: start (or restart) the flow's credits.
    fn start_credits(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let dst = ctx.flow(f).dst;
        let max = p.max_credit_rate(ctx, dst);
        let r = &mut h.recv[p.slots.recv(f)];
        if r.done {
            return;
        }
        r.credits.start(self, max, ctx.now());
        if r.credits.timer_at.is_none() {
            self.send_credit(p, h, ctx, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> XpassParams {
        let (p, _) = ExpressPassConfig::default().params().unwrap();
        p
    }

    #[test]
    fn loss_above_target_cuts_the_rate_to_what_got_through() {
        let p = params();
        let mut c = CreditLoop::default();
        let max = 518e6;
        c.start(&p, max, Time::ZERO);
        assert_eq!(c.rate, 0.5 * max);
        // 100 credits echoed, 100 lost, over 1 ms.
        for i in 0..100 {
            c.on_echo(2 * i + 2, Duration::from_ms(1));
        }
        c.feedback(&p, 672.0, Time::ZERO + Duration::from_ms(1));
        let got = 672.0 * 100.0 / 1e-3;
        let target = 0.5 * 0.125;
        assert!((c.rate - got * (1.0 + target)).abs() < 1.0, "{}", c.rate);
    }

    #[test]
    fn no_loss_raises_the_rate_towards_the_maximum() {
        let p = params();
        let mut c = CreditLoop::default();
        let max = 518e6;
        c.start(&p, max, Time::ZERO);
        let mut t = Time::ZERO;
        for k in 0..20u32 {
            for i in 0..10 {
                c.on_echo(k * 10 + i + 1, Duration::from_ms(1));
            }
            t += Duration::from_ms(1);
            c.feedback(&p, 672.0, t);
        }
        assert!(c.rate > 0.999 * max && c.rate <= max, "{}", c.rate);
    }

    /// `xpass.cc`: no RTT until the first echo, and a period without an
    /// echo stays open, so the first decision comes with the first echo
    /// (one sample, no loss: the rate rises from α · max), and a later
    /// period that saw no echo is judged with the echo that ends it.
    #[test]
    fn a_period_without_echo_stays_open_until_the_first_echo() {
        let p = params();
        let mut c = CreditLoop::default();
        let max = 518e6;
        let ms = |x: f64| Time::ZERO + Duration::from_us((x * 1e3) as u64);
        // The first echo comes 1.8 ms after the start.
        c.start(&p, max, Time::ZERO);
        for t in [0.5, 1.0, 1.5, 1.7] {
            c.feedback(&p, 672.0, ms(t));
            assert_eq!(c.rate, 0.5 * max, "no decision before an echo (t = {t} ms)");
        }
        c.on_echo(1, Duration::from_us(1800));
        assert_eq!(
            c.rtt,
            Duration::from_us(1800),
            "the first sample is the RTT"
        );
        c.feedback(&p, 672.0, ms(1.81));
        assert!(
            (c.rate - 0.75 * max).abs() < 1.0,
            "first echo raises: {}",
            c.rate
        );
        // Then no echo for 5 ms (credits 2..=38 lost): the period stays
        // open, the rate is kept; the next echoes end it with 37/40 lost.
        for t in [3.0, 4.0, 5.0, 6.0] {
            c.feedback(&p, 672.0, ms(t));
            assert!((c.rate - 0.75 * max).abs() < 1.0, "{}", c.rate);
        }
        for seq in 39..=41 {
            c.on_echo(seq, Duration::from_us(1800));
        }
        c.feedback(&p, 672.0, ms(6.81));
        let got = 672.0 * 3.0 / 5e-3;
        let target = 0.25 * 0.125;
        assert!((c.rate - got * (1.0 + target)).abs() < 1.0, "{}", c.rate);
    }
}
