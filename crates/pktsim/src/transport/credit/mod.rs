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
//!
//! Files. `datapath.rs` holds what both designs share (the flows' sender and
//! receiver state, data per credit, NACKs and timeouts), [`aeolus`] the
//! first RTT, [`expresspass`] and [`flashpass`] each design's own part
//! behind the `CreditDesign` hooks; this file ties them to the run loop and
//! is the one place the designs are told apart (`with_design!`).

pub mod aeolus;
mod datapath;
pub mod expresspass;
pub mod flashpass;
pub mod wire;

use crate::engine::Rng;
use crate::error::{Error, Result};
use crate::packet::{FlowId, Message, NodeId, Packet};
use crate::time::{parse_duration, Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::per_host::{FlowEnd, FlowSlots, HostProtocol, PerHost};
use crate::transport::SimSetup;
use serde::{Deserialize, Serialize};

use datapath::{Receiver, Sender};
use expresspass::XpassParams;
use flashpass::FlashPassParams;
use wire::CreditMsg;

pub use expresspass::ExpressPassConfig;
pub use flashpass::FlashPassConfig;

/// Timer kinds (the timer id is the flow index): ExpressPass' credit
/// pacing, FlashPass' emulation pacing and send times, Aeolus' line-rate
/// first RTT, and the shared loss recovery.
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

/// What a design adds to the shared data path (`datapath.rs`): who makes
/// the credits, and when the data a credit releases leaves. Each design
/// implements it in its own file; a hook it does not need does nothing.
trait CreditDesign {
    /// The protocol's name in outputs.
    fn name(&self) -> &'static str;
    /// T_wait, from the flows' base RTTs (FlashPass; zero otherwise).
    fn t_wait(&self, _base_rtt: &[Duration]) -> Duration {
        Duration::ZERO
    }
    /// A new flow at its sender, after the shared state is set.
    fn start_flow(&self, _p: &CreditProtocol, _h: &mut CreditHost, _ctx: &mut Ctx, _f: FlowId) {}
    /// A credit reached the sender (`echo`: the packet's `sent_at`).
    fn on_credit(
        &self,
        p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
        echo: Time,
    );
    /// A message only this design sends (not data, credits, or loss
    /// recovery).
    fn on_message(
        &self,
        p: &CreditProtocol,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
    );
    /// A timer of this design's own kinds, for flow `f`.
    fn on_timer(&self, p: &CreditProtocol, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId, kind: u8);
    /// The sender may have sent everything (ExpressPass stops the credits).
    fn after_send(&self, _p: &CreditProtocol, _h: &mut CreditHost, _ctx: &mut Ctx, _f: FlowId) {}
    /// The sender may have data that no credit covers (FlashPass emulates).
    fn want_credits(&self, _p: &CreditProtocol, _h: &mut CreditHost, _ctx: &mut Ctx, _f: FlowId) {}
    /// The receiver found its credits stopped while packets are missing
    /// (ExpressPass restarts them).
    fn restart_credits(
        &self,
        _p: &CreditProtocol,
        _h: &mut CreditHost,
        _ctx: &mut Ctx,
        _f: FlowId,
    ) {
    }
    /// Counters only this design has, from the hosts' summed `stats`.
    fn counters(&self, _stats: &Stats, _hosts: &[CreditHost], _out: &mut Vec<(&'static str, u64)>) {
    }
    /// The time series' variables only this design keeps at a flow's
    /// sender, after the shared ones ([`HostProtocol::flow_state`]).
    fn sender_state(
        &self,
        _p: &CreditProtocol,
        _s: &Sender,
        _out: &mut dyn FnMut(&'static str, f64),
    ) {
    }
    /// The same at a flow's receiver.
    fn receiver_state(&self, _r: &Receiver, _out: &mut dyn FnMut(&'static str, f64)) {}
}

/// Run `$body` with `$d` bound to the design's [`CreditDesign`]: the one
/// place the designs are told apart.
macro_rules! with_design {
    ($design:expr, $d:ident => $body:expr) => {
        match $design {
            Design::ExpressPass($d) => $body,
            Design::FlashPass($d) => $body,
        }
    };
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

    /// Run `design` with the shared settings `common` over a setup: what
    /// each design's [`ProtocolConfig::run`](crate::transport::ProtocolConfig::run) does once its table is valid.
    fn run<S: SimSetup>(setup: S, design: Design, common: CreditCommon) -> S::Output {
        setup.run(CreditTransport::new(CreditProtocol::new(design, common)))
    }

    /// FlashPass' T_wait in this run (zero for ExpressPass).
    pub fn t_wait(&self) -> Duration {
        self.t_wait
    }

    /// The design's hook: the sender may have sent everything.
    fn after_send(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        with_design!(&self.design, d => d.after_send(self, h, ctx, f))
    }

    /// The design's hook: the sender may have data no credit covers.
    fn want_credits(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        with_design!(&self.design, d => d.want_credits(self, h, ctx, f))
    }

    /// The design's hook: the receiver's credits stopped with packets missing.
    fn restart_credits(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        with_design!(&self.design, d => d.restart_credits(self, h, ctx, f))
    }
}

impl HostProtocol for CreditProtocol {
    type Host = CreditHost;

    fn name(&self) -> &'static str {
        with_design!(&self.design, d => d.name())
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
        self.t_wait = with_design!(&self.design, d => d.t_wait(&self.base_rtt));
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
        let cap = self.start_sender(h, ctx, f);
        with_design!(&self.design, d => d.start_flow(self, h, ctx, f));
        self.arm_rto(h, ctx, f);
        if cap > 0 {
            self.send_unscheduled(h, ctx, f);
        }
        self.want_credits(h, ctx, f);
    }

    fn on_packet(&self, h: &mut CreditHost, ctx: &mut Ctx, pkt: Packet) {
        let Some(msg) = CreditMsg::parse(&pkt.header) else {
            debug_assert!(false, "credit transport got a foreign or unknown packet");
            return;
        };
        let f = pkt.flow;
        match msg {
            CreditMsg::Credit { .. } | CreditMsg::EchoCredit { .. } => {
                if let Some(log) = h.credit_log.as_mut() {
                    log.push((pkt.dst, ctx.now()));
                }
                with_design!(&self.design, d => d.on_credit(self, h, ctx, f, msg, pkt.sent_at))
            }
            CreditMsg::Data {
                pkt: idx,
                first_scheduled,
                credit_seq,
            } => self.on_data(h, ctx, pkt, idx, first_scheduled, credit_seq),
            CreditMsg::Ack { .. } | CreditMsg::ProbeAck { .. } => {
                self.on_first_rtt_ack(h, ctx, f, msg)
            }
            CreditMsg::Probe { last } => self.on_probe(h, ctx, f, last),
            CreditMsg::Status { sent } => self.on_status(h, ctx, f, sent),
            CreditMsg::Nack { first, count } => self.on_nack(h, ctx, f, first, count),
            CreditMsg::Done => self.on_done(h, f),
            CreditMsg::Req { .. } | CreditMsg::Stop | CreditMsg::Emu { .. } => {
                with_design!(&self.design, d => d.on_message(self, h, ctx, f, msg))
            }
        }
    }

    fn on_timer(&self, h: &mut CreditHost, ctx: &mut Ctx, id: u32, kind: u8) {
        // The timer id is the flow: the host is its receiver for credit
        // pacing and re-NACKs, its sender for the rest.
        let f = FlowId(id);
        let now = Some(ctx.now());
        match kind {
            T_UNSCHED => self.send_unscheduled(h, ctx, f),
            T_RTO if h.send[self.slots.send(f)].rto_at == now => self.on_rto(h, ctx, f),
            T_RENACK if h.recv[self.slots.recv(f)].renack_at == now => self.on_renack(h, ctx, f),
            T_RTO | T_RENACK => {}
            _ => with_design!(&self.design, d => d.on_timer(self, h, ctx, f, kind)),
        }
    }

    /// At the source, from the flow's start until the receiver's `DONE`:
    /// the shared data path's state, Aeolus' first RTT (with Aeolus), then
    /// the design's own (ExpressPass: whether `STOP` went out; FlashPass:
    /// the emulation loop and T_wait). At the destination, from the first
    /// packet (or ExpressPass' `REQ`) until every packet is in: packets
    /// received, then the design's own (ExpressPass: the credit loop).
    fn flow_state(
        &self,
        h: &CreditHost,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        match self.slots.end_at(at, f, &h.send, &h.recv) {
            Some(FlowEnd::Sender(s)) if s.active => {
                s.state(out);
                if self.common.aeolus_bdp.is_some() {
                    s.first.state(out);
                }
                with_design!(&self.design, d => d.sender_state(self, s, out));
            }
            Some(FlowEnd::Receiver(r)) if r.started && !r.done => {
                r.state(out);
                with_design!(&self.design, d => d.receiver_state(r, out));
            }
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
        with_design!(&self.design, d => d.counters(&s, hosts, &mut v));
        if self.common.aeolus_bdp.is_some() {
            v.push(("unscheduled_sent", s.unscheduled_sent));
            v.push(("unscheduled_lost", s.unscheduled_lost));
        }
        v
    }

    fn copy_for_group(&self) -> Option<Self> {
        // A host reads nothing of another host's state (its jitter stream
        // is its own): each group's copy builds the same tables at setup.
        let mut copy = CreditProtocol::new(self.design.clone(), self.common.clone());
        copy.log_credits = self.log_credits;
        Some(copy)
    }
}
