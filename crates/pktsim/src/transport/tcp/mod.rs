//! The TCP family: NewReno (RFC 5681/6582), SACK recovery (RFC 2018/6675),
//! DCTCP (RFC 8257) and CUBIC (RFC 9438), over one sender state machine.
//!
//! Layout: [`sender`] decides what to send (loss recovery, timers, windows),
//! [`scoreboard`] keeps SACK state, [`rtt`] the RTO, [`cc`] is the
//! congestion-control trait with one file per variant ([`newreno`],
//! [`dctcp`], [`cubic`]). This file glues them to the simulation: packets,
//! timers, the receiver and the host NIC. State is kept per host
//! ([`host::TcpHost`], issue 33): a flow's sender side, its timers and its
//! place in the NIC waiting list live with its source host, its receiver
//! side with its destination; the two ends talk only through packets.
//!
//! Simplifications common to datacenter simulators (pFabric's and pHost's
//! ns-2 baselines do the same): by default no handshake, data flows from
//! t = start (`handshake = true` opens flows with SYN, SYN-ACK,
//! [`handshake`]); the receiver ACKs every packet (no delayed ACKs);
//! windows in bytes; header bytes do not grow with options. An ACK carries one SACK block (the one
//! holding the segment that triggered it, RFC 2018 §4's first block), its
//! edges counted in MSS from the cumulative ACK (exact: segments are
//! MSS-aligned), and the receive window scaled as in RFC 7323 §2.
//!
//! Host NIC backpressure (as Linux's TCP Small Queues): a flow hands a
//! packet to its NIC only while it has fewer than `nic_limit` bytes queued
//! there and the NIC buffer has room; otherwise it waits for the NIC to run
//! dry. A sender thus never builds a standing queue in its own NIC, and its
//! timers never fire for data that has not left the host.
//!
//! Pacing (`pacing = "fq"`, [`pacing`]): a paced flow hands its packets to
//! the NIC no faster than its pacing rate. A flow that may send but whose
//! release time has not come keeps one pending timer for that time (at
//! most one per flow, however many packets wait), and sends when it fires.

pub mod cc;
pub mod config;
pub mod cubic;
pub mod dctcp;
pub mod handshake;
pub mod host;
pub mod newreno;
pub mod pacing;
pub mod reorder;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

use crate::packet::{flags, FlowId, Header, NodeId, Packet};
use crate::time::{Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::host::lazy_timer::LazyTimer;
use crate::transport::per_host::{FlowSlots, HostProtocol, PerHost};
use cc::{Cc, CongestionControl};
pub use config::{TcpConfig, TcpVariantConfig};
use handshake::{Passive, PassiveState, CTRL_SYN, CTRL_SYNACK};
pub use host::TcpHost;
use host::Tx;
pub use pacing::{Pacing, PacingMode};
pub use reorder::RankMarking;
use sender::{Ack, Sender, SenderConfig};
pub use sender::{SenderStats, TimerMode};

/// Timer kinds of this transport.
const TIMER_RTO: u8 = 0;
/// The receiver ordering shim's hold timer ([`reorder`]).
const TIMER_REORDER: u8 = 1;
/// A throttled FastLane retransmission is due.
const TIMER_NOTICE: u8 = 2;
/// A paced flow's next packet may leave.
const TIMER_PACE: u8 = 3;
/// The destination's SYN-ACK retransmission timer (handshake).
const TIMER_SYNACK: u8 = 4;

/// Default receive window: 6 MiB, Linux's `tcp_rmem` maximum. Far above a
/// datacenter BDP; a WAN path needs it raised to its BDP.
pub const DEFAULT_RCV_WINDOW: u64 = 6 << 20;
/// Default per-flow NIC byte limit: 64 KiB (≈ 52 us at 10 Gbit/s). Any
/// value of at least one packet keeps the NIC busy, since a waiting flow
/// resumes the instant the NIC runs dry; this one keeps idle notifications
/// rare and the NIC delay far below the smallest RTO.
pub const DEFAULT_NIC_LIMIT: u64 = 64 << 10;

/// TCP parameters (validated from the config).
#[derive(Clone, Debug)]
pub struct TcpParams {
    /// Initial congestion window in packets.
    pub init_cwnd: u32,
    /// Largest congestion window in packets (None: unlimited).
    pub max_cwnd: Option<u32>,
    /// Retransmission timeout before the first RTT sample.
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (after backoff).
    pub max_rto: Duration,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// The congestion controller every flow starts from (each flow gets a
    /// copy), built by the registry line's variant from the config.
    pub cc: Cc,
    /// SACK loss recovery (RFC 6675); off for NewReno-faithful runs.
    pub sack: bool,
    /// RFC 3042 Limited Transmit.
    pub limited_transmit: bool,
    /// Timer restart rule during recovery.
    pub timer: TimerMode,
    /// Receive window, bytes.
    pub rcv_window: u64,
    /// Per-flow bytes allowed in the host NIC queue.
    pub nic_limit: u64,
    /// Rank marking of data packets ([`reorder::RankMarking`]).
    pub rank: RankMarking,
    /// Hold time of the receiver's ordering shim (`None`: no shim).
    pub reorder_window: Option<Duration>,
    /// Duplicate ACKs may start fast recovery (off: recovery by the RTO, as
    /// for DIBS, or by FastLane notices with per-packet spraying).
    pub fast_retransmit: bool,
    /// A FastLane notice halves the window once per window of data.
    pub notice_reduces_window: bool,
    /// Ping-pong throttle base of FastLane retransmissions.
    pub notice_retx_base: Duration,
    /// Pacing ratios (`None`: not paced).
    pub pacing: Option<Pacing>,
    /// Open every flow with a three-way handshake.
    pub handshake: bool,
    /// RFC 6298 §5.7: the data RTO after a SYN retransmission.
    pub syn_fallback_rto: Duration,
}

impl Default for TcpParams {
    /// NewReno with [`TcpConfig`]'s defaults (the one place they are written).
    fn default() -> Self {
        TcpConfig::default()
            .params_for::<newreno::NewReno>()
            .expect("the default TCP config is valid")
    }
}

impl TcpParams {
    /// RFC 7323 §2.2 window scale: the smallest shift that fits the window
    /// into 16 bits (at most 14).
    pub fn window_shift(&self) -> u8 {
        let mut s = 0u8;
        while s < 14 && (self.rcv_window >> s) > 0xFFFF {
            s += 1;
        }
        s
    }
}

/// TCP NewReno / DCTCP / CUBIC for every flow of a run: the run-wide
/// part ([`TcpProtocol`]) and each host's state ([`TcpHost`]), as the run
/// loop's transport. `C` is the controller type: the registry's [`Cc`], or a
/// controller of one's own ([`TcpProtocol::with_controller`]).
pub type Tcp<C = Cc> = PerHost<TcpProtocol<C>>;

/// The run-wide part of TCP: the parameters and read-only tables of the
/// run's flows. What a run changes lives in the hosts' [`TcpHost`]s.
pub struct TcpProtocol<C = Cc> {
    params: TcpParams,
    /// The controller every flow starts from (a copy each).
    controller: C,
    shift: u8,
    /// Where each flow sits in its hosts' tables (built at setup).
    slots: FlowSlots,
}

impl TcpProtocol {
    /// TCP with these parameters and their controller, [`TcpParams::cc`]
    /// (run it as [`Tcp::new`]`(TcpProtocol::new(p))`).
    pub fn new(params: TcpParams) -> Self {
        let cc = params.cc.clone();
        TcpProtocol::with_controller(params, cc)
    }
}

impl<C: CongestionControl + Clone> TcpProtocol<C> {
    /// TCP whose flows each start from a copy of `controller`, whatever
    /// [`TcpParams::cc`] says: a controller outside the registry (a test's
    /// toy) runs so, as monomorphic as the registry's.
    pub fn with_controller(params: TcpParams, controller: C) -> Self {
        let shift = params.window_shift();
        TcpProtocol {
            params,
            controller,
            shift,
            slots: FlowSlots::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &TcpParams {
        &self.params
    }

    /// The sender of flow `f`, which lives in its source's state among
    /// `hosts` (for tests and inspection; `None` before it starts).
    pub fn sender<'a>(&self, hosts: &'a [TcpHost<C>], f: FlowId) -> Option<&'a Sender<C>> {
        let src = self.slots.source(f)?;
        hosts.get(src.idx())?.sender(self.slots.send(f))
    }

    /// Hand segments of `f` to the NIC while its sender has some and the
    /// NIC has room; otherwise wait for the NIC to run dry.
    fn transmit(&self, ctx: &mut Ctx, f: FlowId, t: &mut Tx<C>) {
        let s = &mut *t.s;
        let spec = ctx.flow(f);
        let host = spec.src;
        let size = spec.size;
        let fmt = ctx.format();
        let full = (fmt.mss + fmt.header) as u64;
        let ect = s.cc.ecn() && s.ecn_ok();
        let paced = self.params.pacing.is_some();
        s.begin_pass();
        loop {
            // Room for a full packet of this flow, and one more packet in
            // the buffer so that the host's ACKs still fit.
            if ctx.nic_flow_bytes(f) + full > self.params.nic_limit.max(full)
                || ctx.nic_room(host) < 2 * full
            {
                if !s.done {
                    // Wait for the NIC to run dry (once in its list).
                    if !*t.waiting {
                        *t.waiting = true;
                        t.nic_waiting.push(f);
                        t.counts.nic_waits += 1;
                    }
                    ctx.request_nic_idle(host);
                }
                break;
            }
            if paced {
                if let Some(at) = s.pace_wait(ctx.now()) {
                    // One pending release event per flow, however often
                    // the flow is held back before it fires.
                    if let Some(at) = t.pace.arm(ctx.now(), at) {
                        ctx.set_timer(at, f.0, TIMER_PACE);
                        t.counts.pacing_delays += 1;
                    }
                    s.on_paced_stop();
                    break;
                }
            }
            let Some(seg) = s.next_segment() else { break };
            let mut p = ctx.data_packet(f, seg.seq, seg.len, Header::TcpData { seq: seg.seq });
            if ect {
                p.flags |= flags::ECT;
            }
            if seg.retx {
                p.flags |= flags::RETX;
                ctx.count_retransmit(f);
            }
            p.prio = self
                .params
                .rank
                .rank(size, seg.seq, seg.retx, s.stats.timeouts);
            s.on_sent(seg, ctx.now());
            if paced {
                s.on_paced(ctx.now(), p.size as u64);
            }
            ctx.send(p);
        }
        sync_timer(t.rto, ctx, f, s);
    }

    /// Send the SYN of `f` (a retransmission if `retx`): a header-sized
    /// control packet, an ECN-setup SYN where the controller uses ECN (RFC
    /// 3168 §6.1.1: ECE and CWR, not ECT).
    fn send_syn(&self, ctx: &mut Ctx, f: FlowId, t: &mut Tx<C>, retx: bool) {
        let spec = ctx.flow(f);
        let (src, dst) = (spec.src, spec.dst);
        let hdr = ctx.format().header;
        let syn = Header::Ctrl {
            kind: CTRL_SYN,
            a: 0,
            b: 0,
        };
        let mut p = ctx.control_packet(f, src, dst, hdr, syn);
        if t.s.cc.ecn() {
            p.flags |= flags::ECE | flags::CWR;
        }
        t.counts.syn_sent += 1;
        if retx {
            p.flags |= flags::RETX;
            t.counts.syn_retransmits += 1;
        }
        ctx.send(p);
    }

    /// Send the SYN-ACK of `f` from its destination (receive slot state
    /// `ps`): echoing the latest SYN's timestamp, ECE if that SYN asked
    /// for ECN (an ECN-setup SYN-ACK, RFC 3168 §6.1.1), marked as a
    /// retransmission after the first; its timer restarts.
    fn send_synack(&self, ctx: &mut Ctx, f: FlowId, ps: &mut Passive, counts: &mut host::Counts) {
        let spec = ctx.flow(f);
        let (src, dst) = (spec.dst, spec.src);
        let hdr = ctx.format().header;
        let synack = Header::Ctrl {
            kind: CTRL_SYNACK,
            a: 0,
            b: 0,
        };
        let mut p = ctx.control_packet(f, src, dst, hdr, synack);
        p.sent_at = ps.echo;
        if ps.ecn {
            p.flags |= flags::ECE;
        }
        counts.synack_sent += 1;
        if ps.sent > 0 {
            p.flags |= flags::RETX;
            counts.synack_retransmits += 1;
        }
        ps.sent += 1;
        let now = ctx.now();
        ps.last_sent = now;
        ps.deadline = now + ps.rto(self.params.initial_rto, self.params.max_rto);
        if let Some(at) = ps.timer.arm(now, ps.deadline) {
            ctx.set_timer(at, f.0, TIMER_SYNACK);
        }
        ctx.send(p);
    }

    /// A SYN reached the flow's destination: answer it (RFC 9293 §3.5),
    /// once per instant.
    fn on_syn(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, pkt: Packet) {
        let f = pkt.flow;
        let j = self.slots.recv(f);
        let TcpHost {
            passive, counts, ..
        } = h;
        let Some(ps) = passive.get_mut(j) else {
            debug_assert!(false, "a SYN in a run without handshakes");
            return;
        };
        match ps.state {
            PassiveState::Listen => {
                ps.state = PassiveState::SynReceived;
                ps.ecn = pkt.has(flags::ECE | flags::CWR);
                ps.echo = pkt.sent_at;
                self.send_synack(ctx, f, ps, counts);
            }
            PassiveState::SynReceived => {
                // The source's SYN timer fired: its SYN-ACK was lost or is
                // late. Answer at once, unless one left at this instant
                // (the SYN-ACK timer may fire at the same time).
                ps.echo = pkt.sent_at;
                if ps.last_sent != ctx.now() {
                    self.send_synack(ctx, f, ps, counts);
                }
            }
            // A late duplicate: the handshake is over.
            PassiveState::Established => {}
        }
    }

    /// The SYN-ACK timer of `f` fired at its destination.
    fn on_synack_timer(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let j = self.slots.recv(f);
        let TcpHost {
            passive, counts, ..
        } = h;
        let Some(ps) = passive.get_mut(j) else {
            return;
        };
        if !ps.timer.fire(now) || ps.state != PassiveState::SynReceived {
            return;
        }
        if now < ps.deadline {
            // Restarted by a duplicate SYN since this event was set.
            if let Some(at) = ps.timer.arm(now, ps.deadline) {
                ctx.set_timer(at, f.0, TIMER_SYNACK);
            }
            return;
        }
        // RFC 6298 §5.5: back off, then resend.
        ps.backoff += 1;
        self.send_synack(ctx, f, ps, counts);
    }

    /// A SYN-ACK reached the flow's source: data may flow.
    fn on_synack(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, pkt: Packet) {
        let f = pkt.flow;
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        let done = t.s.on_synack(
            ctx.now(),
            pkt.sent_at,
            pkt.has(flags::RETX),
            pkt.has(flags::ECE),
        );
        if done && !*t.waiting {
            self.transmit(ctx, f, &mut t);
        }
    }

    /// The pacing release time of `f` came.
    fn on_pace_timer(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, f: FlowId) {
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        // A flow waiting for its NIC sends when the NIC runs dry instead.
        if !t.pace.fire(ctx.now()) || t.s.done || *t.waiting {
            return;
        }
        self.transmit(ctx, f, &mut t);
    }

    /// A segment is "sent" (RFC 6298 §5.1) when it leaves the host, so the
    /// timer measures the network, not the sender's own NIC queue: at
    /// expiry, if data of the flow is still in its NIC, wait one more RTO;
    /// if its last packet left only recently after waiting there a long
    /// time (at least a quarter RTO), give that packet one RTO from its
    /// departure. Linux likewise does not retransmit a segment still in the
    /// host queue (`skb_still_in_host_queue`). `None`: expire now.
    fn host_delayed_deadline(&self, ctx: &Ctx, f: FlowId, s: &Sender<C>) -> Option<Time> {
        let now = ctx.now();
        let rto = s.rtt().rto();
        if ctx.nic_flow_bytes(f) > 0 {
            return Some(now + rto);
        }
        let (left, waited) = ctx.nic_flow_departed(f);
        (waited.ps() >= rto.ps() / 4 && left + rto > now).then_some(left + rto)
    }

    /// Throttled FastLane retransmissions may be due.
    fn on_notice_timer(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        // A flow's timers are armed only once it has a sender.
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        if !t.notice.fire(now) || t.s.done {
            return;
        }
        if let Some(next) = t.s.release_notified(now) {
            arm_notice(t.notice, ctx, f, next);
        }
        if !*t.waiting {
            self.transmit(ctx, f, &mut t);
        }
    }

    /// The retransmission timer of `f` fired.
    fn on_rto_timer(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, f: FlowId) {
        let now = ctx.now();
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        if !t.rto.fire(now) {
            // A stale event: a newer one is pending.
            return;
        }
        if t.s.connecting().is_some() {
            // The SYN's timer: resend the SYN, backed off.
            if now >= t.s.rto_deadline {
                t.s.on_syn_timeout(now);
                self.send_syn(ctx, f, &mut t, true);
            }
            sync_timer(t.rto, ctx, f, t.s);
            return;
        }
        if t.s.done || t.s.rto_deadline == Time::MAX {
            return;
        }
        if now < t.s.rto_deadline {
            sync_timer(t.rto, ctx, f, t.s);
        } else if let Some(later) = self.host_delayed_deadline(ctx, f, t.s) {
            t.counts.rto_deferred += 1;
            t.s.rto_deadline = later;
            sync_timer(t.rto, ctx, f, t.s);
        } else {
            t.s.on_timeout(now);
            if *t.waiting {
                sync_timer(t.rto, ctx, f, t.s);
            } else {
                self.transmit(ctx, f, &mut t);
            }
        }
    }

    /// An ACK reached the flow's source.
    fn on_ack(
        &self,
        h: &mut TcpHost<C>,
        ctx: &mut Ctx,
        pkt: Packet,
        ack: u64,
        sack: u32,
        wnd: u16,
    ) {
        let f = pkt.flow;
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        if t.s.done {
            return;
        }
        let mss = ctx.format().mss as u64;
        let size = ctx.flow(f).size;
        let block = decode_sack(sack, ack, mss, size);
        let a = Ack {
            ack,
            sack: block,
            window_edge: ack + ((wnd as u64) << self.shift),
            echo: pkt.sent_at,
            ece: pkt.has(flags::ECE),
        };
        t.s.on_ack(ctx.now(), a);
        if *t.waiting {
            // The NIC is full: send when it runs dry, but keep the timer in
            // step with the ACK.
            sync_timer(t.rto, ctx, f, t.s);
        } else {
            self.transmit(ctx, f, &mut t);
        }
    }

    /// A data packet reached TCP at the flow's destination (receive slot
    /// `j`): take it in and answer with an ACK.
    fn on_data(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, pkt: Packet, seq: u64, j: usize) {
        if let Some(ps) = h.passive.get_mut(j) {
            // The handshake's ACK travels with the first data (RFC 9293
            // §3.5): the SYN-ACK timer stops.
            ps.state = PassiveState::Established;
        }
        let r = &mut h.rx[j];
        let end = seq + pkt.payload as u64;
        if r.holds(seq, end) {
            // A retransmission of bytes the receiver already had.
            h.counts.dup_deliveries += 1;
        }
        let mut ack = r.on_data(ctx, &pkt, seq);
        let mss = ctx.format().mss as u64;
        let sack = encode_sack(r.sack_block(seq), r.rcv_nxt, mss);
        let wnd = (self.params.rcv_window >> self.shift).min(0xFFFF) as u16;
        if let Header::TcpAck {
            sack: s, wnd: w, ..
        } = &mut ack.header
        {
            *s = sack;
            *w = wnd;
        }
        ctx.send(ack);
    }

    /// A data packet through the receiver's ordering shim: beyond a gap it
    /// is held (starting the flow's hold timer); otherwise it goes up, and
    /// so does the held run it makes contiguous.
    fn on_data_reordered(
        &self,
        h: &mut TcpHost<C>,
        ctx: &mut Ctx,
        pkt: Packet,
        seq: u64,
        window: Duration,
    ) {
        let f = pkt.flow;
        let j = self.slots.recv(f);
        if seq > h.rx[j].rcv_nxt {
            let rs = &mut h.reseq[j];
            if rs.hold(seq, pkt) {
                rs.deadline = ctx.now() + window;
                ctx.set_timer(rs.deadline, f.0, TIMER_REORDER);
            }
            return;
        }
        self.on_data(h, ctx, pkt, seq, j);
        self.release_held(h, ctx, j, false);
    }

    /// Hand held packets of the flow in receive slot `j` to TCP: those now
    /// in order, or all.
    fn release_held(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, j: usize, all: bool) {
        loop {
            let rcv_nxt = h.rx[j].rcv_nxt;
            let Some((seq, p)) = h.reseq[j].next_ready(rcv_nxt, all) else {
                break;
            };
            self.on_data(h, ctx, p, seq, j);
        }
    }
}

/// Keep one timer event pending at or before the sender's deadline.
/// Timers are lazy: an event that fires early re-arms itself. A timer's id
/// is its flow's id (the host is the one acting), as before per-host state:
/// the id is part of the event's place among same-time events.
#[inline]
fn sync_timer<C>(rto: &mut LazyTimer, ctx: &mut Ctx, f: FlowId, s: &Sender<C>) {
    if let Some(at) = rto.arm(ctx.now(), s.rto_deadline) {
        ctx.set_timer(at, f.0, TIMER_RTO);
    }
}

/// Keep one notice-throttle event pending at or before `due`.
fn arm_notice(notice: &mut LazyTimer, ctx: &mut Ctx, f: FlowId, due: Time) {
    if let Some(at) = notice.arm(ctx.now(), due) {
        ctx.set_timer(at, f.0, TIMER_NOTICE);
    }
}

impl<C: CongestionControl + Clone + Send> PerHost<TcpProtocol<C>> {
    /// The sender of a flow (for tests and inspection).
    pub fn sender(&self, f: FlowId) -> Option<&Sender<C>> {
        self.protocol().sender(self.hosts(), f)
    }

    /// Current congestion window of a flow in bytes (for tests).
    pub fn cwnd(&self, f: FlowId) -> Option<u64> {
        self.sender(f).map(|s| s.w.cwnd)
    }

    /// Per-flow sender event counts (zero for flows not started).
    pub fn stats(&self, f: FlowId) -> SenderStats {
        self.sender(f).map(|s| s.stats).unwrap_or_default()
    }
}

impl PerHost<TcpProtocol> {
    /// DCTCP α of a flow (for tests).
    pub fn alpha(&self, f: FlowId) -> Option<f64> {
        match &self.sender(f)?.cc {
            Cc::Dctcp(d) => Some(d.alpha),
            _ => None,
        }
    }
}

/// Encode a SACK block as two 16-bit offsets in MSS from `ack` (start in
/// the high half); 0 means none. A block too far out is left out; its end
/// is clipped (reporting less is always safe).
pub fn encode_sack(block: Option<(u64, u64)>, ack: u64, mss: u64) -> u32 {
    let Some((a, b)) = block else { return 0 };
    if a <= ack || b <= a {
        return 0;
    }
    let start = (a - ack) / mss;
    let end = (b - ack).div_ceil(mss).min(0xFFFF);
    if start == 0 || start >= end {
        return 0;
    }
    ((start as u32) << 16) | end as u32
}

/// Decode [`encode_sack`]; `size` clips the last segment.
pub fn decode_sack(v: u32, ack: u64, mss: u64, size: u64) -> Option<(u64, u64)> {
    if v == 0 {
        return None;
    }
    let start = ack + (v >> 16) as u64 * mss;
    let end = (ack + (v & 0xFFFF) as u64 * mss).min(size);
    (start < end).then_some((start, end))
}

impl<C: CongestionControl + Clone + Send> HostProtocol for TcpProtocol<C> {
    type Host = TcpHost<C>;

    fn name(&self) -> &'static str {
        self.controller.name()
    }

    fn setup(&mut self, env: &Setup) -> crate::Result<()> {
        self.slots = FlowSlots::new(env);
        Ok(())
    }

    fn new_host(&self, _env: &Setup, host: NodeId) -> TcpHost<C> {
        TcpHost::new(
            self.slots.n_send(host),
            self.slots.n_recv(host),
            self.params.reorder_window.is_some(),
            self.params.handshake,
        )
    }

    fn start_flow(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, f: FlowId) {
        let mss = ctx.format().mss as u64;
        let p = &self.params;
        let cfg = SenderConfig {
            init_cwnd: p.init_cwnd as u64 * mss,
            max_cwnd: p.max_cwnd.map_or(u64::MAX, |m| m as u64 * mss),
            dupthresh: p.dupack_threshold,
            sack: p.sack,
            limited_transmit: p.limited_transmit,
            timer: p.timer,
            initial_rto: p.initial_rto,
            min_rto: p.min_rto,
            max_rto: p.max_rto,
            fast_retransmit: p.fast_retransmit,
            notice_reduces_window: p.notice_reduces_window,
            notice_retx_base: p.notice_retx_base,
            pacing: p.pacing,
            syn_fallback_rto: p.syn_fallback_rto,
        };
        let i = self.slots.send(f);
        h.tx[i].sender = Some(Sender::new(
            ctx.flow(f).size,
            mss,
            cfg,
            self.controller.clone(),
            p.rcv_window,
        ));
        if let Some(mut t) = h.tx(i) {
            if p.handshake {
                // The application's connect: the SYN goes now, data after
                // the SYN-ACK.
                self.send_syn(ctx, f, &mut t, false);
                t.s.connect(ctx.now());
                sync_timer(t.rto, ctx, f, t.s);
            } else {
                self.transmit(ctx, f, &mut t);
            }
        }
    }

    fn on_packet(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, pkt: Packet) {
        match pkt.header {
            Header::TcpData { seq } => match self.params.reorder_window {
                None => {
                    let j = self.slots.recv(pkt.flow);
                    self.on_data(h, ctx, pkt, seq, j)
                }
                Some(w) => self.on_data_reordered(h, ctx, pkt, seq, w),
            },
            Header::TcpAck { ack, sack, wnd } => self.on_ack(h, ctx, pkt, ack, sack, wnd),
            Header::Ctrl { kind: CTRL_SYN, .. } => self.on_syn(h, ctx, pkt),
            Header::Ctrl {
                kind: CTRL_SYNACK, ..
            } => self.on_synack(h, ctx, pkt),
            Header::Ctrl { .. } => debug_assert!(false, "TCP got a foreign packet"),
        }
    }

    fn on_timer(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, id: u32, kind: u8) {
        let f = FlowId(id);
        match kind {
            TIMER_NOTICE => self.on_notice_timer(h, ctx, f),
            TIMER_PACE => self.on_pace_timer(h, ctx, f),
            TIMER_SYNACK => self.on_synack_timer(h, ctx, f),
            TIMER_REORDER => {
                // Vertigo's ω expired: everything held goes up in order.
                let j = self.slots.recv(f);
                if h.reseq.get(j).is_some_and(|r| r.deadline == ctx.now()) {
                    self.release_held(h, ctx, j, true);
                }
            }
            _ => {
                debug_assert_eq!(kind, TIMER_RTO);
                self.on_rto_timer(h, ctx, f);
            }
        }
    }

    fn on_notice(&self, h: &mut TcpHost<C>, ctx: &mut Ctx, pkt: Packet) {
        let Header::TcpData { seq } = pkt.header else {
            return;
        };
        let f = pkt.flow;
        let Some(mut t) = h.tx(self.slots.send(f)) else {
            return;
        };
        if let Some(due) = t.s.on_notice(ctx.now(), seq) {
            arm_notice(t.notice, ctx, f, due);
        }
        if !*t.waiting {
            self.transmit(ctx, f, &mut t);
        }
    }

    fn on_nic_idle(&self, h: &mut TcpHost<C>, ctx: &mut Ctx) {
        let list = std::mem::take(&mut h.nic_waiting);
        for &f in &list {
            if let Some(mut t) = h.tx(self.slots.send(f)) {
                *t.waiting = false;
                self.transmit(ctx, f, &mut t);
            }
        }
        // Give the (now empty) list's capacity back unless a flow re-queued.
        if h.nic_waiting.is_empty() {
            let mut list = list;
            list.clear();
            h.nic_waiting = list;
        }
    }

    fn flow_state(
        &self,
        host: &TcpHost<C>,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        // The sender's state, at the source, until every byte is
        // acknowledged.
        if let Some(slot) = self.slots.send_slot_at(at, f) {
            if let Some(s) = host.sender(slot).filter(|s| !s.done) {
                s.state(out);
            }
        }
    }

    fn counters(&self, hosts: &[TcpHost<C>]) -> Vec<(&'static str, u64)> {
        let mut total = SenderStats::default();
        let (mut dup_deliveries, mut nic_waits, mut rto_deferred) = (0, 0, 0);
        let mut c = host::Counts::default();
        for h in hosts {
            total += h.sender_stats();
            dup_deliveries += h.counts.dup_deliveries;
            nic_waits += h.counts.nic_waits;
            rto_deferred += h.counts.rto_deferred;
            c.syn_sent += h.counts.syn_sent;
            c.syn_retransmits += h.counts.syn_retransmits;
            c.synack_sent += h.counts.synack_sent;
            c.synack_retransmits += h.counts.synack_retransmits;
            c.pacing_delays += h.counts.pacing_delays;
        }
        let mut v = vec![
            ("timeouts", total.timeouts as u64),
            ("spurious_timeouts", total.spurious_timeouts as u64),
            ("fast_recoveries", total.fast_recoveries as u64),
            ("duplicate_deliveries", dup_deliveries),
            ("nic_waits", nic_waits),
            ("rto_deferred_in_nic", rto_deferred),
        ];
        // Only runs that received notices list them (others keep their
        // summaries unchanged).
        if total.notices > 0 {
            v.extend([
                ("notices", total.notices as u64),
                ("notice_retransmits", total.notice_retransmits as u64),
                ("notice_window_reductions", total.notice_reductions as u64),
                ("notices_throttled", total.notices_throttled as u64),
            ]);
        }
        // Only runs with a handshake or pacing list these (others keep
        // their summaries unchanged).
        if self.params.handshake {
            v.extend([
                ("syn_sent", c.syn_sent),
                ("syn_retransmits", c.syn_retransmits),
                ("synack_sent", c.synack_sent),
                ("synack_retransmits", c.synack_retransmits),
            ]);
        }
        if self.params.pacing.is_some() {
            v.push(("pacing_delays", c.pacing_delays));
        }
        v
    }

    fn copy_for_group(&self) -> Option<Self> {
        // A TCP host reads nothing of another host's state: each group's
        // copy builds the same tables at setup.
        Some(TcpProtocol::with_controller(
            self.params.clone(),
            self.controller.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_blocks_round_trip_in_mss_units() {
        let m = 1460;
        let v = encode_sack(Some((3 * m, 7 * m)), m, m);
        assert_eq!(decode_sack(v, m, m, 100 * m), Some((3 * m, 7 * m)));
        // The flow's short last segment.
        let size = 10 * m + 100;
        let v = encode_sack(Some((9 * m, size)), 2 * m, m);
        assert_eq!(decode_sack(v, 2 * m, m, size), Some((9 * m, size)));
        assert_eq!(encode_sack(None, 0, m), 0);
        assert_eq!(decode_sack(0, 0, m, size), None);
    }

    #[test]
    fn window_shift_fits_sixteen_bits() {
        let p = TcpParams::default();
        assert_eq!(p.window_shift(), 7);
        assert!((p.rcv_window >> 7) <= 0xFFFF);
        let small = TcpParams {
            rcv_window: 65_535,
            ..TcpParams::default()
        };
        assert_eq!(small.window_shift(), 0);
    }
}
