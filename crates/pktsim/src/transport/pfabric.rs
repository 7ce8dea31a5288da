//! pFabric's host side (Alizadeh et al., SIGCOMM 2013, §4.2): "minimal rate
//! control". Every data packet carries the flow's remaining size as its
//! priority (ACKs carry 0); flows start at about one BDP of window; losses
//! are recovered only by a small fixed timeout (no duplicate-ACK retransmit,
//! since spraying and priority drops reorder packets); after a timeout the
//! window restarts at one packet; after several consecutive timeouts the flow
//! probes with one-byte packets until an ACK makes progress.
//!
//! Follows the ns-2 `MinTCP` agent of the paper's scripts: window growth is
//! TCP's (slow start, then one packet per window), RTO fixed with no backoff,
//! and the sender skips data the receiver already holds (SACK; here read from
//! the receiver's state, as pHost's simulator does: see `Receivers`). Held
//! data does not use the window either (pHost's pFabric: window = cwnd +
//! SACKed bytes), so after a timeout every hole within one window past it is
//! resent at once.
//!
//! With FastLane (Zats et al., SoCC 2015) a switch's notice of a dropped
//! packet makes the source resend it at once at its pFabric priority; rate
//! control, probe mode and the fixed RTO stay as they are (spec
//! `fastlane-evidence.md` §6.5). Repeated notices of one packet are
//! throttled exponentially ([`crate::transport::ping_pong`]).

use crate::error::{Error, Result};
use crate::packet::{FlowId, Header, NodeId, Packet};
use crate::time::parse_duration;
use crate::time::{Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::host::lazy_timer::LazyTimer;
use crate::transport::per_host::{FlowSlots, HostProtocol, PerHost};
use crate::transport::ping_pong::PingPong;
use crate::transport::receiver::AckReceiver;
use crate::transport::{ProtocolConfig, SimSetup};
use serde::{Deserialize, Serialize};

const TIMER_RTO: u8 = 0;
/// A throttled FastLane retransmission is due.
const TIMER_NOTICE: u8 = 1;

/// pFabric host parameters.
#[derive(Clone, Debug)]
pub struct PfabricParams {
    /// Initial window, packets (≈ 1 BDP; the paper uses 12).
    pub init_cwnd: u32,
    /// Largest window, packets (ns-2 scripts: buffer − 1 = 23).
    pub max_cwnd: u32,
    /// Fixed retransmission timeout (≈ 3 RTT; the paper uses 45 us).
    pub rto: Duration,
    /// Consecutive timeouts before probe mode (5).
    pub probe_after: u32,
    /// Bytes the receiver holds out of order do not count against the
    /// window (pHost's pFabric, RFC 6675's pipe). `false`: the window
    /// spans from the cumulative ACK, SACKed data included, as ns-2's
    /// FullTcp does outside fast recovery.
    pub sacked_outside_window: bool,
    /// FastLane ping-pong throttle base (see [`PingPong`]).
    pub notice_retx_base: Duration,
}

impl Default for PfabricParams {
    /// [`PfabricConfig`]'s defaults (the one place they are written).
    fn default() -> Self {
        PfabricConfig::default()
            .params()
            .expect("the default pFabric config is valid")
    }
}

/// `protocol = "pfabric"`: pFabric host settings (use with
/// `switch_queue = { kind = "pfabric" }`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PfabricConfig {
    /// Initial window, packets (≈ 1 BDP).
    pub init_cwnd: u32,
    /// Largest window, packets.
    pub max_cwnd: u32,
    /// Fixed retransmission timeout (≈ 3 RTT).
    pub rto: String,
    /// Consecutive timeouts before probe mode.
    pub probe_after: u32,
    /// Out-of-order data the receiver holds does not count against the
    /// window (default, as pHost's pFabric); `false` counts it, as ns-2's
    /// FullTcp does after a timeout.
    pub sacked_outside_window: bool,
    /// FastLane ping-pong throttle base: the n-th notice of a packet
    /// (n ≥ 2) waits base · 2^(n−2), at most the RTO (default "10us",
    /// \[INFER\]). Written to the resolved config only when changed.
    #[serde(skip_serializing_if = "is_default_notice_base")]
    pub notice_retx_base: String,
}

/// FastLane's default ping-pong throttle base.
const DEFAULT_NOTICE_RETX_BASE: &str = "10us";

fn is_default_notice_base(s: &String) -> bool {
    s == DEFAULT_NOTICE_RETX_BASE
}

impl Default for PfabricConfig {
    /// The paper's values (12-packet initial window, 45 us RTO, probe mode
    /// after 5 timeouts) and its ns-2 scripts' largest window (23).
    fn default() -> Self {
        PfabricConfig {
            init_cwnd: 12,
            max_cwnd: 23,
            rto: "45us".into(),
            probe_after: 5,
            sacked_outside_window: true,
            notice_retx_base: DEFAULT_NOTICE_RETX_BASE.into(),
        }
    }
}

impl PfabricConfig {
    /// Validate into parameters.
    pub fn params(&self) -> Result<PfabricParams> {
        let rto = parse_duration(&self.rto).map_err(|m| Error::config("transport.rto", m))?;
        if rto.ps() == 0 {
            return Err(Error::config("transport.rto", "must be positive"));
        }
        if self.init_cwnd == 0 || self.max_cwnd < self.init_cwnd {
            return Err(Error::config(
                "transport.max_cwnd",
                "need 1 ≤ init_cwnd ≤ max_cwnd",
            ));
        }
        if self.probe_after == 0 {
            return Err(Error::config("transport.probe_after", "must be at least 1"));
        }
        let notice_retx_base = parse_duration(&self.notice_retx_base)
            .map_err(|m| Error::config("transport.notice_retx_base", m))?;
        Ok(PfabricParams {
            notice_retx_base,
            init_cwnd: self.init_cwnd,
            max_cwnd: self.max_cwnd,
            rto,
            probe_after: self.probe_after,
            sacked_outside_window: self.sacked_outside_window,
        })
    }
}

impl ProtocolConfig for PfabricConfig {
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        Ok(setup.run(Pfabric::new(PfabricProtocol::new(self.params()?))))
    }
}

#[derive(Clone, Debug)]
struct Sender {
    snd_una: u64,
    snd_nxt: u64,
    max_sent: u64,
    /// Window in packets.
    cwnd: u32,
    ssthresh: u32,
    /// ACKs counted towards the next congestion-avoidance increase.
    ca_count: u32,
    timeouts: u32,
    probing: bool,
    rto_deadline: Time,
    /// The pending RTO event (lazy: stale events are ignored).
    timer: LazyTimer,
    done: bool,
    /// FastLane notice counts and throttled retransmissions.
    ping: PingPong,
    /// The pending notice-throttle event.
    notice_timer: LazyTimer,
}

/// FastLane event counts of one host (as the source of refused packets).
#[derive(Clone, Copy, Debug, Default)]
struct NoticeCounts {
    notices: u64,
    retransmits: u64,
    throttled: u64,
}

/// pFabric's state at one host: the senders of the flows it sends and its
/// FastLane counts. (Its flows' receivers are run-wide: see `Receivers`.)
#[derive(Clone, Debug)]
pub struct PfabricHost {
    /// Senders of the flows this host sends, by send slot (`None` before
    /// the flow starts).
    senders: Vec<Option<Sender>>,
    notices: NoticeCounts,
}

/// The receiver side of every flow, by flow id: the one part of pFabric's
/// state not kept per host. Its sender reads what the receiver holds *now*
/// (SACK as pHost's simulator models it, and the data packets' priority),
/// not what the last ACK said: an ACK lags the receiver by a path delay, so
/// carrying it in ACKs instead would change pFabric's results. A
/// receiver's entry is written only in calls acting for its destination
/// host, and read in calls acting for its source: a read across hosts.
/// `RefCell` makes the protocol `!Sync`, so a run cut into pieces on
/// several threads cannot share it unnoticed.
#[derive(Debug, Default)]
struct Receivers(std::cell::RefCell<Vec<AckReceiver>>);

/// pFabric's run-wide part: parameters, flow slots, and the receivers that
/// senders read (see `Receivers`).
pub struct PfabricProtocol {
    params: PfabricParams,
    slots: FlowSlots,
    receivers: Receivers,
    /// Each flow's size (the time series tells a receiver done with its
    /// flow).
    sizes: Vec<u64>,
}

/// pFabric hosts for every flow of a run: the run loop's transport.
pub type Pfabric = PerHost<PfabricProtocol>;

impl PfabricProtocol {
    /// pFabric with these parameters.
    pub fn new(params: PfabricParams) -> Self {
        PfabricProtocol {
            params,
            slots: FlowSlots::default(),
            receivers: Receivers::default(),
            sizes: Vec::new(),
        }
    }

    /// Whether flow `f` is in probe mode; `host` is the state of its source
    /// (for tests).
    pub fn probing(&self, host: &PfabricHost, f: FlowId) -> bool {
        host.senders
            .get(self.slots.send(f))
            .and_then(|s| s.as_ref())
            .is_some_and(|s| s.probing)
    }

    /// Send the segment at `seq` of at most `max_len` payload bytes; `r` is
    /// the flow's receiver.
    fn send_segment(
        ctx: &mut Ctx,
        f: FlowId,
        s: &mut Sender,
        r: &AckReceiver,
        seq: u64,
        max_len: u64,
    ) -> u64 {
        let size = ctx.flow(f).size;
        let mut p = ctx.data_packet(f, seq, max_len, Header::TcpData { seq });
        let len = p.payload as u64;
        // Priority = remaining size, recomputed at every (re)transmission:
        // flow size minus what the receiver acknowledged or holds (SACK).
        let remaining = size.saturating_sub(s.snd_una.max(r.rcv_nxt) + r.ooo_bytes());
        p.prio = remaining.min(u32::MAX as u64) as u32;
        if seq < s.max_sent {
            p.flags |= crate::packet::flags::RETX;
            ctx.count_retransmit(f);
        }
        s.max_sent = s.max_sent.max(seq + len);
        ctx.send(p);
        len
    }

    /// Send while the window allows, skipping data the receiver holds.
    fn fill_window(&self, ctx: &mut Ctx, f: FlowId, s: &mut Sender) {
        if s.probing {
            // Probe mode: one 1-byte packet per timeout, sent by on_timer.
            return;
        }
        let size = ctx.flow(f).size;
        let mss = ctx.format().mss as u64;
        let receivers = self.receivers.0.borrow();
        let r = &receivers[f.idx()];
        let mut sent = 0u32;
        // The window's right edge. Bytes the receiver already holds beyond
        // the cumulative ACK have left the network, so they do not use the
        // window (pHost's pFabric: window = cwnd + SACKed bytes; RFC 6675's
        // pipe likewise leaves SACKed segments out). After a timeout
        // (cwnd = 1) the sender then resends every hole up to one window
        // past the SACKed data at once, instead of one hole per RTT.
        let mut window = s.cwnd as u64 * mss;
        if self.params.sacked_outside_window {
            window += r.ooo_bytes();
        }
        while s.snd_nxt < size && s.snd_nxt - s.snd_una < window {
            let end = (s.snd_nxt + mss).min(size);
            if r.holds(s.snd_nxt, end) {
                s.snd_nxt = end;
                continue;
            }
            let seq = s.snd_nxt;
            s.snd_nxt += Self::send_segment(ctx, f, s, r, seq, mss);
            sent += 1;
        }
        if sent > 0 && s.rto_deadline == Time::MAX {
            self.arm(ctx, f, s);
        }
    }

    fn arm(&self, ctx: &mut Ctx, f: FlowId, s: &mut Sender) {
        let deadline = ctx.now() + self.params.rto;
        s.rto_deadline = deadline;
        if let Some(at) = s.timer.arm(ctx.now(), deadline) {
            ctx.set_timer(at, f.0, TIMER_RTO);
        }
    }

    /// Keep one notice-throttle event pending at or before `due`.
    fn arm_notice(ctx: &mut Ctx, f: FlowId, s: &mut Sender, due: Time) {
        if let Some(at) = s.notice_timer.arm(ctx.now(), due) {
            ctx.set_timer(at, f.0, TIMER_NOTICE);
        }
    }

    /// Throttled FastLane retransmissions may be due: send those the
    /// receiver still lacks.
    fn on_notice_timer(&self, h: &mut PfabricHost, ctx: &mut Ctx, f: FlowId) {
        let Some(s) = h.senders[self.slots.send(f)].as_mut() else {
            return;
        };
        let now = ctx.now();
        if s.notice_timer.fire(now) {
            let mut due = Vec::new();
            s.ping.take_due(now, &mut due);
            let mss = ctx.format().mss as u64;
            let size = ctx.flow(f).size;
            let receivers = self.receivers.0.borrow();
            let r = &receivers[f.idx()];
            for seq in due {
                let end = (seq + mss).min(size);
                if !s.done && seq >= s.snd_una && !r.holds(seq, end) {
                    h.notices.retransmits += 1;
                    Self::send_segment(ctx, f, s, r, seq, mss);
                }
            }
            if let Some(next) = s.ping.next_due() {
                Self::arm_notice(ctx, f, s, next);
            }
        }
    }

    fn on_ack(&self, h: &mut PfabricHost, ctx: &mut Ctx, f: FlowId, ack: u64) {
        let Some(s) = h.senders[self.slots.send(f)].as_mut() else {
            return;
        };
        if !s.done && ack > s.snd_una {
            let size = ctx.flow(f).size;
            s.snd_una = ack;
            s.ping.acked(ack);
            s.snd_nxt = s.snd_nxt.max(ack);
            // Any progress ends probe mode (ns-2 `newack`).
            s.timeouts = 0;
            s.probing = false;
            if s.cwnd < s.ssthresh {
                s.cwnd += 1;
            } else {
                s.ca_count += 1;
                if s.ca_count >= s.cwnd {
                    s.ca_count = 0;
                    s.cwnd += 1;
                }
            }
            s.cwnd = s.cwnd.min(self.params.max_cwnd);
            if ack >= size {
                s.done = true;
                s.rto_deadline = Time::MAX;
            } else {
                self.arm(ctx, f, s);
                self.fill_window(ctx, f, s);
            }
        }
    }
}

impl HostProtocol for PfabricProtocol {
    type Host = PfabricHost;

    fn name(&self) -> &'static str {
        "pfabric"
    }

    fn setup(&mut self, env: &Setup) -> Result<()> {
        self.slots = FlowSlots::new(env);
        *self.receivers.0.get_mut() = vec![AckReceiver::default(); env.n_flows()];
        self.sizes = (0..env.n_flows())
            .map(|i| env.flow(FlowId(i as u32)).size)
            .collect();
        Ok(())
    }

    fn new_host(&self, _env: &Setup, host: NodeId) -> PfabricHost {
        PfabricHost {
            senders: vec![None; self.slots.n_send(host)],
            notices: NoticeCounts::default(),
        }
    }

    /// FastLane counts summed over hosts, only in runs that received
    /// notices.
    fn counters(&self, hosts: &[PfabricHost]) -> Vec<(&'static str, u64)> {
        let mut n = NoticeCounts::default();
        for h in hosts {
            n.notices += h.notices.notices;
            n.retransmits += h.notices.retransmits;
            n.throttled += h.notices.throttled;
        }
        if n.notices == 0 {
            return Vec::new();
        }
        vec![
            ("notices", n.notices),
            ("notice_retransmits", n.retransmits),
            ("notices_throttled", n.throttled),
        ]
    }

    fn start_flow(&self, h: &mut PfabricHost, ctx: &mut Ctx, f: FlowId) {
        let mut s = Sender {
            snd_una: 0,
            snd_nxt: 0,
            max_sent: 0,
            cwnd: self.params.init_cwnd,
            ssthresh: u32::MAX,
            ca_count: 0,
            timeouts: 0,
            probing: false,
            rto_deadline: Time::MAX,
            timer: LazyTimer::IDLE,
            done: false,
            ping: PingPong::default(),
            notice_timer: LazyTimer::IDLE,
        };
        self.fill_window(ctx, f, &mut s);
        h.senders[self.slots.send(f)] = Some(s);
    }

    fn on_packet(&self, h: &mut PfabricHost, ctx: &mut Ctx, pkt: Packet) {
        match pkt.header {
            Header::TcpData { seq } => {
                let ack = self.receivers.0.borrow_mut()[pkt.flow.idx()].on_data(ctx, &pkt, seq);
                ctx.send(ack);
            }
            Header::TcpAck { ack, .. } => self.on_ack(h, ctx, pkt.flow, ack),
            Header::Ctrl { .. } => debug_assert!(false, "pFabric got a foreign packet"),
        }
    }

    fn on_notice(&self, h: &mut PfabricHost, ctx: &mut Ctx, pkt: Packet) {
        let Header::TcpData { seq } = pkt.header else {
            return;
        };
        let f = pkt.flow;
        let Some(s) = h
            .senders
            .get_mut(self.slots.send(f))
            .and_then(Option::as_mut)
        else {
            return;
        };
        let mss = ctx.format().mss as u64;
        let end = (seq + mss).min(ctx.flow(f).size);
        let receivers = self.receivers.0.borrow();
        let r = &receivers[f.idx()];
        if !s.done && seq >= s.snd_una && !r.holds(seq, end) {
            h.notices.notices += 1;
            let now = ctx.now();
            let due = s
                .ping
                .on_notice(seq, now, self.params.notice_retx_base, self.params.rto);
            if due <= now {
                h.notices.retransmits += 1;
                Self::send_segment(ctx, f, s, r, seq, mss);
            } else {
                h.notices.throttled += 1;
                Self::arm_notice(ctx, f, s, due);
            }
        }
    }

    /// At the source, from the flow's start until every byte is
    /// acknowledged: the window and threshold (once a timeout set it) in
    /// packets, bytes sent beyond the cumulative ACK and acknowledged,
    /// consecutive timeouts, and probe mode (0/1). At the destination,
    /// from the first packet until every byte is in: bytes received in
    /// order and held beyond them (what the sender skips and the priority
    /// leaves out). The receivers are the one run-wide table (see
    /// `Receivers`); a flow's entry is its destination's state.
    fn flow_state(
        &self,
        h: &PfabricHost,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        if let Some(slot) = self.slots.send_slot_at(at, f) {
            let Some(s) = h
                .senders
                .get(slot)
                .and_then(Option::as_ref)
                .filter(|s| !s.done)
            else {
                return;
            };
            out("cwnd_packets", f64::from(s.cwnd));
            if s.ssthresh != u32::MAX {
                out("ssthresh_packets", f64::from(s.ssthresh));
            }
            out("bytes_in_flight", (s.snd_nxt - s.snd_una) as f64);
            out("bytes_acked", s.snd_una as f64);
            out("timeouts", f64::from(s.timeouts));
            out("probing", f64::from(u8::from(s.probing)));
        } else if self.slots.recv_slot_at(at, f).is_some() {
            let receivers = self.receivers.0.borrow();
            let (Some(r), Some(&size)) = (receivers.get(f.idx()), self.sizes.get(f.idx())) else {
                return;
            };
            let held = r.ooo_bytes();
            if (r.rcv_nxt > 0 || held > 0) && r.rcv_nxt < size {
                out("bytes_received", r.rcv_nxt as f64);
                out("bytes_out_of_order", held as f64);
            }
        }
    }

    fn on_timer(&self, h: &mut PfabricHost, ctx: &mut Ctx, id: u32, kind: u8) {
        let f = FlowId(id);
        if kind == TIMER_NOTICE {
            self.on_notice_timer(h, ctx, f);
            return;
        }
        let Some(s) = h.senders[self.slots.send(f)].as_mut() else {
            return;
        };
        let now = ctx.now();
        if s.timer.fire(now) {
            if s.done || s.rto_deadline == Time::MAX {
                s.rto_deadline = Time::MAX;
            } else if now < s.rto_deadline {
                if let Some(at) = s.timer.arm(now, s.rto_deadline) {
                    ctx.set_timer(at, id, TIMER_RTO);
                }
            } else {
                // Timeout: halve ssthresh, restart at one packet, go back to
                // the first unacknowledged byte (ns-2 `slowdown`).
                s.ssthresh = (s.cwnd / 2).max(2);
                s.cwnd = 1;
                s.ca_count = 0;
                s.snd_nxt = s.snd_una;
                s.timeouts += 1;
                s.rto_deadline = Time::MAX;
                if s.timeouts >= self.params.probe_after {
                    s.probing = true;
                    let una = s.snd_una;
                    let receivers = self.receivers.0.borrow();
                    Self::send_segment(ctx, f, s, &receivers[f.idx()], una, 1);
                    self.arm(ctx, f, s);
                } else {
                    self.fill_window(ctx, f, s);
                    if s.rto_deadline == Time::MAX {
                        // Nothing to send: the receiver holds the whole
                        // window, so the ACKs for it were lost (a failed
                        // or lossy link). Resend the first unacknowledged
                        // segment, as TCP does on a timeout: its ACK
                        // moves the window, where waiting would stall.
                        let (una, mss) = (s.snd_una, ctx.format().mss as u64);
                        let receivers = self.receivers.0.borrow();
                        s.snd_nxt =
                            una + Self::send_segment(ctx, f, s, &receivers[f.idx()], una, mss);
                        self.arm(ctx, f, s);
                    }
                }
            }
        }
    }
}
