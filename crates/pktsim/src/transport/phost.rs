//! pHost (Gao et al., CoNEXT 2015): receiver-driven transport over a
//! commodity fabric with packet spraying and two priority classes.
//!
//! A new flow's source sends an RTS; the destination grants the flow one
//! packet at a time with tokens, at most one token per MTU time over all its
//! incoming flows, choosing the flow by SRPT. A source holding tokens from
//! several destinations picks the flow by SRPT too, at the last moment (when
//! its NIC runs dry). Tokens name the packet to send and expire 1.5 packet
//! times after they reach the source. Flows of at most 8 packets send
//! everything at once with free tokens. A flow that leaves 8 tokens unused
//! is "downgraded": it gets no more tokens until 15 packet times after its
//! last one. Lost packets are recovered by the receiver, which re-issues
//! tokens for missing packets 9 packet times after the last token of a
//! round. Control packets (RTS, token, ACK) have priority over data.
//!
//! Mechanics follow the authors' simulator (NetSys/simulator, `ext/
//! capability*`) as described in `../shared/specs/phost.md` §2: free tokens
//! only for flows of at most `free_tokens` packets, expiry counted at the
//! sender, the receiver's token clock held for the free packets' slots, a
//! final ACK when every packet is in. Packet `i` carries payload bytes
//! `[i·mss, min((i+1)·mss, size))`: the last packet may be short.
//!
//! Two switches give the paper's own design where the code differs (spec
//! §4 items 1 and 9): `free_tokens_every_flow` gives every flow free tokens
//! for its first `free_tokens` packets (paper §3.2, §4.1: "8 free tokens to
//! each flow"), and `short_flow_packets` sends the data of flows up to that
//! many packets one priority level above longer flows' (paper §3.3: three
//! levels, control first, then short-flow data, then long-flow data).

use crate::error::{Error, Result};
use crate::packet::{FlowId, Message, NodeId, Packet};
use crate::time::{Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::host::packet_bitmap::PacketBitmap;
use crate::transport::per_host::{FlowEnd, FlowSlots, HostProtocol, PerHost};
use crate::transport::{ProtocolConfig, SimSetup};
use serde::{Deserialize, Serialize};

pub mod wire;

use wire::PhostMsg;

/// Host timer: the receiver's next token slot.
const TIMER_SLOT: u8 = 0;
/// Flow timer: resend the RTS if the receiver has not answered
/// (`rts_timeout`).
const TIMER_RTS: u8 = 1;

/// pHost parameters, in packet times (`T_pkt`: one MTU at the host rate).
#[derive(Clone, Debug)]
pub struct PhostParams {
    /// Flows of at most this many packets are sent unsolicited (free tokens).
    pub free_tokens: u32,
    /// Token lifetime at the sender, in packet times.
    pub token_timeout: f64,
    /// Re-issue tokens for missing packets this long after a round's last
    /// token, in packet times.
    pub resend_timeout: f64,
    /// Unused tokens that trigger a downgrade.
    pub window: u32,
    /// How long a downgraded flow waits for its next token, in packet times.
    pub window_timeout: f64,
    /// Hold the token clock for the slots of free-token packets.
    pub hold: bool,
    /// Bytes per token slot (`None`: one MTU, i.e. tokens at line rate).
    /// pHost's 2015 simulator used 1540 B, leaving room for control packets.
    pub token_slot_bytes: Option<u32>,
    /// Every flow gets free tokens for its first `free_tokens` packets (the
    /// paper); `false`: only flows of at most `free_tokens` packets, for all
    /// of them (the 2015 code).
    pub free_tokens_every_flow: bool,
    /// Data of flows of at most this many packets goes at priority 1, of
    /// longer flows at 2 (the paper's three levels); `None`: all data at 1
    /// (the 2015 code's effective two levels).
    pub short_flow_packets: Option<u32>,
    /// Resend a flow's RTS when nothing from its receiver (a token, the
    /// final ACK) has reached the source this many packet times after it;
    /// `None`: never (the 2015 code).
    pub rts_timeout: Option<f64>,
}

impl Default for PhostParams {
    /// [`PhostConfig`]'s defaults (the one place they are written).
    fn default() -> Self {
        PhostConfig::default()
            .params()
            .expect("the default pHost config is valid")
    }
}

/// `protocol = "phost"`: pHost settings, times in packet times at the host
/// rate (use with `switch_queue = { kind = "pfabric" }`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PhostConfig {
    /// Flows of at most this many packets are sent unsolicited.
    pub free_tokens: u32,
    /// Token lifetime at the sender.
    pub token_timeout: f64,
    /// Re-issue tokens for missing packets after this long.
    pub resend_timeout: f64,
    /// Unused tokens before a flow is downgraded.
    pub window: u32,
    /// Wait of a downgraded flow for its next token.
    pub window_timeout: f64,
    /// Bytes per token slot (default: one MTU, tokens at line rate; pHost's
    /// 2015 simulator used 1540).
    pub token_slot_bytes: Option<u32>,
    /// Give every flow free tokens for its first `free_tokens` packets (the
    /// paper); default: only flows of at most `free_tokens` packets (the
    /// 2015 code).
    pub free_tokens_every_flow: bool,
    /// Send data of flows of at most this many packets one priority level
    /// above longer flows' (the paper's three levels); default: one data
    /// level (the 2015 code).
    pub short_flow_packets: Option<u32>,
    /// Resend a flow's RTS when no token or ACK has reached its source
    /// this long after it; default: never, as the 2015 code (spec §4
    /// item 7: no sender-side timer), where a lost RTS stalls a flow
    /// without free tokens for good. Losses of control packets happen
    /// only with failures (`[[event]]`), since they have top priority.
    pub rts_timeout: Option<f64>,
}

impl Default for PhostConfig {
    /// The values of the module doc (the paper's and its 2015 code's).
    fn default() -> Self {
        PhostConfig {
            free_tokens: 8,
            token_timeout: 1.5,
            resend_timeout: 9.0,
            window: 8,
            window_timeout: 15.0,
            token_slot_bytes: None,
            free_tokens_every_flow: false,
            short_flow_packets: None,
            rts_timeout: None,
        }
    }
}

impl PhostConfig {
    /// Validate into parameters.
    pub fn params(&self) -> Result<PhostParams> {
        for (v, f) in [
            (self.token_timeout, "token_timeout"),
            (self.resend_timeout, "resend_timeout"),
            (self.window_timeout, "window_timeout"),
            (self.rts_timeout.unwrap_or(1.0), "rts_timeout"),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::config(
                    format!("transport.{f}"),
                    format!("must be positive, got {v}"),
                ));
            }
        }
        if self.window == 0 {
            return Err(Error::config("transport.window", "must be at least 1"));
        }
        if self.token_slot_bytes == Some(0) {
            return Err(Error::config(
                "transport.token_slot_bytes",
                "must be positive",
            ));
        }
        Ok(PhostParams {
            free_tokens: self.free_tokens,
            token_timeout: self.token_timeout,
            resend_timeout: self.resend_timeout,
            window: self.window,
            window_timeout: self.window_timeout,
            hold: true,
            token_slot_bytes: self.token_slot_bytes,
            free_tokens_every_flow: self.free_tokens_every_flow,
            short_flow_packets: self.short_flow_packets,
            rts_timeout: self.rts_timeout,
        })
    }
}

impl ProtocolConfig for PhostConfig {
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        Ok(setup.run(Phost::new(PhostProtocol::new(self.params()?))))
    }
}

/// A token held by a sender.
#[derive(Clone, Copy, Debug)]
struct Token {
    expires: Time,
    /// Packet index to send.
    pkt: u32,
    /// Token sequence number within the flow (0 for free tokens).
    seq: u32,
}

#[derive(Clone, Debug, Default)]
struct SendFlow {
    /// Tokens in arrival order (so in expiry order).
    tokens: std::collections::VecDeque<Token>,
    /// Packets the receiver last said it still misses.
    remaining: u32,
    active: bool,
    /// Free tokens the flow started with: a token is free when its
    /// sequence number is at most this (free ones are numbered 0, or 1 to
    /// this with `free_tokens_every_flow`; the receiver numbers on).
    free: u32,
    /// Tokens the receiver sent that reached this sender.
    tokens_received: u32,
    /// Tokens that expired unused.
    tokens_expired: u32,
    /// RTS packets re-sent for this flow (each doubles the next wait).
    rts_resent: u32,
}

#[derive(Clone, Debug, Default)]
struct RecvFlow {
    started: bool,
    finished: bool,
    /// Packets received, by index.
    received: PacketBitmap,
    /// Tokens issued (free ones included).
    count: u32,
    /// Tokens that may be issued before waiting for the resend timer.
    goal: u32,
    /// Highest token sequence echoed by data.
    largest_seq_echoed: u32,
    last_token_at: Time,
    /// Packet index of the last token issued.
    last_pkt: Option<u32>,
    /// Re-issue timer (`None`: not armed).
    resend_at: Option<Time>,
}

/// pHost's state at one host: the sender side of the flows it sends, the
/// receiver side (token clock included) of those it receives, and its logs.
#[derive(Clone, Debug)]
pub struct PhostHost {
    /// Sender side of the flows this host sends, by send slot.
    send: Vec<SendFlow>,
    /// Receiver side of the flows this host receives, by receive slot.
    recv: Vec<RecvFlow>,
    /// Flows this host is sending, in start order, with their send slots
    /// (the scans of the hot path then need no slot look-up).
    sending: Vec<(FlowId, u32)>,
    /// Flows this host is receiving, in arrival order of their first
    /// packet, with their receive slots.
    receiving: Vec<(FlowId, u32)>,
    /// Token slots to skip (free packets are using them).
    hold_on: u32,
    /// Time of the pending slot event, if any.
    slot_at: Option<Time>,
    /// Whether the pending slot is a wake-up (a flow's timer), not pacing.
    slot_is_wakeup: bool,
    /// This host's flows in SRPT order, rebuilt at every token slot: kept
    /// between slots so that a token costs no allocation.
    slot_order: Vec<(u64, Time, FlowId, u32)>,
    /// Packet time at this host's link rate.
    t_pkt: Duration,
    /// Time between two of this host's token slots.
    slot: Duration,
    /// Tokens this host issued as a receiver (free tokens not counted).
    pub tokens_issued: u64,
    /// RTS packets this host re-sent (`rts_timeout`).
    pub rts_resent: u64,
    /// When logs are on ([`PhostProtocol::logs`]), the send time of every
    /// token this host issued (tests).
    pub token_log: Option<Vec<Time>>,
    /// When logs are on, every data packet this host sent: (flow, token
    /// seq, token expiry, send time) (tests).
    pub data_log: Option<Vec<(FlowId, u32, Time, Time)>>,
}

/// pHost's run-wide part: parameters and each host's flow slots.
pub struct PhostProtocol {
    params: PhostParams,
    slots: FlowSlots,
    /// Give every host token and data logs (tests; set before the run).
    pub logs: bool,
}

/// pHost for every host and flow of a run: the run loop's transport.
pub type Phost = PerHost<PhostProtocol>;

fn n_packets(size: u64, mss: u32) -> u32 {
    size.div_ceil(mss as u64).max(1) as u32
}

fn times(d: Duration, k: f64) -> Duration {
    Duration((d.ps() as f64 * k).round() as u64)
}

impl PhostProtocol {
    /// pHost with these parameters (logs off).
    pub fn new(params: PhostParams) -> Self {
        PhostProtocol {
            params,
            slots: FlowSlots::default(),
            logs: false,
        }
    }

    fn ctrl(ctx: &Ctx, f: FlowId, src: NodeId, dst: NodeId, msg: PhostMsg) -> Packet {
        ctx.control_packet(f, src, dst, ctx.format().header, msg.header())
    }

    /// The sender's loop: if the NIC is free, send one data packet of the
    /// flow with the fewest remaining packets that holds a live token. The
    /// choice is made at the last moment, when the NIC runs dry: while it
    /// is busy and tokens are held, ask to hear when it does.
    fn try_send(&self, h: &mut PhostHost, ctx: &mut Ctx) {
        let host = ctx.host();
        if !ctx.nic_idle(host) {
            ctx.request_nic_idle(host);
            return;
        }
        let now = ctx.now();
        let mut best: Option<(u32, Time, FlowId)> = None;
        let mut holders = 0;
        let mut best_slot = 0;
        for &(f, slot) in &h.sending {
            let s = &mut h.send[slot as usize];
            while s.tokens.front().is_some_and(|t| t.expires < now) {
                s.tokens.pop_front();
                s.tokens_expired += 1;
            }
            if s.tokens.is_empty() {
                continue;
            }
            holders += 1;
            let key = (s.remaining, ctx.flow(f).start, f);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
                best_slot = slot;
            }
        }
        let Some((_, _, f)) = best else { return };
        let s = &mut h.send[best_slot as usize];
        let Some(tok) = s.tokens.pop_front() else {
            return;
        };
        let tokens_left = !s.tokens.is_empty();
        let first = tok.pkt as u64 * ctx.format().mss as u64;
        let data = PhostMsg::Data {
            pkt: tok.pkt,
            seq: tok.seq,
        };
        let mut p = ctx.data_packet(f, first, u64::MAX, data.header());
        let long = self
            .params
            .short_flow_packets
            .is_some_and(|k| n_packets(ctx.flow(f).size, ctx.format().mss) > k);
        p.prio = if long { 2 } else { 1 };
        if let Some(log) = h.data_log.as_mut() {
            log.push((f, tok.seq, tok.expires, now));
        }
        ctx.send(p);
        if holders > 1 || tokens_left {
            // Tokens left: the next packet goes when this one is out.
            ctx.request_nic_idle(host);
        }
    }

    /// Receiver: set up a flow on its RTS (or its first data packet).
    fn open_recv(&self, h: &mut PhostHost, ctx: &mut Ctx, f: FlowId) {
        let n = n_packets(ctx.flow(f).size, ctx.format().mss);
        let free = self.free_tokens(n);
        let slot = self.slots.recv(f);
        let r = &mut h.recv[slot];
        if r.started {
            return;
        }
        r.started = true;
        r.received.reset(n);
        r.count = free;
        r.goal = n;
        r.last_pkt = free.checked_sub(1);
        if free == n {
            // Fully covered by free tokens: wait about twice the flow's own
            // transmission time before re-issuing tokens.
            r.resend_at = Some(ctx.now() + h.t_pkt.times(2 * free as u64));
        }
        if self.params.hold {
            h.hold_on += free;
        }
        h.receiving.push((f, slot as u32));
        match h.slot_at {
            None => self.run_slot(h, ctx),
            Some(_) if h.slot_is_wakeup => {
                h.slot_at = None;
                self.run_slot(h, ctx);
            }
            Some(_) => {}
        }
    }

    /// With `rts_timeout`: check on flow `f`'s RTS that long from now,
    /// doubled for every time it was re-sent (a receiver busy with shorter
    /// flows may take long to send its first token; a duplicate RTS it
    /// ignores).
    fn arm_rts(&self, h: &PhostHost, ctx: &mut Ctx, f: FlowId) {
        if let Some(k) = self.params.rts_timeout {
            let backoff = 1u32 << h.send[self.slots.send(f)].rts_resent.min(10);
            let wait = times(h.t_pkt, k * backoff as f64);
            ctx.set_timer(ctx.now() + wait, f.0, TIMER_RTS);
        }
    }

    /// Flow `f`'s RTS timer: resend the RTS if its receiver has not
    /// answered (no token has come, and no final ACK, which ends the
    /// sender) and the flow is not done.
    fn on_rts_timer(&self, h: &mut PhostHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if s.tokens_received > 0 || !s.active || ctx.is_finished(f) {
            return;
        }
        s.rts_resent += 1;
        let spec = ctx.flow(f);
        let (src, dst) = (spec.src, spec.dst);
        let n = n_packets(spec.size, ctx.format().mss);
        h.rts_resent += 1;
        ctx.send(Self::ctrl(ctx, f, src, dst, PhostMsg::Rts { packets: n }));
        self.arm_rts(h, ctx, f);
    }

    /// Packets of an `n`-packet flow covered by free tokens.
    fn free_tokens(&self, n: u32) -> u32 {
        match (
            self.params.free_tokens_every_flow,
            n <= self.params.free_tokens,
        ) {
            (_, true) => n,
            (true, false) => self.params.free_tokens,
            (false, false) => 0,
        }
    }

    fn schedule_slot(h: &mut PhostHost, ctx: &mut Ctx, at: Time, wakeup: bool) {
        h.slot_at = Some(at);
        h.slot_is_wakeup = wakeup;
        ctx.set_timer(at, ctx.host().0, TIMER_SLOT);
    }

    /// One token slot at a receiver (spec §2.3).
    fn run_slot(&self, h: &mut PhostHost, ctx: &mut Ctx) {
        let now = ctx.now();
        let (t_pkt, slot) = (h.t_pkt, h.slot);
        h.slot_at = None;
        if h.hold_on > 0 {
            h.hold_on -= 1;
            Self::schedule_slot(h, ctx, now + slot, false);
            return;
        }
        // Drop finished flows, then scan by receiver-side SRPT.
        let recv = &mut h.recv;
        h.receiving.retain(|&(_, i)| !recv[i as usize].finished);
        let order = &mut h.slot_order;
        order.clear();
        order.extend(h.receiving.iter().map(|&(f, i)| {
            let r = &recv[i as usize];
            let s = ctx.flow(f);
            let got = (r.received.count() as u64 * ctx.format().mss as u64).min(s.size);
            (s.size - got, s.start, f, i)
        }));
        order.sort_unstable();
        let mut wake: Option<Time> = None;
        let resend = times(t_pkt, self.params.resend_timeout);
        let window_timeout = times(t_pkt, self.params.window_timeout);
        let mut sent = false;
        for &(_, _, f, i) in order.iter() {
            let r = &mut recv[i as usize];
            if let Some(t) = r.resend_at {
                if t > now {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                    continue;
                }
                // Re-issue: allow tokens for the packets still missing.
                r.resend_at = None;
                r.goal = r.count + (r.received.len() - r.received.count());
            }
            if r.count >= r.goal {
                continue;
            }
            // Tokens are numbered from 1 and the echo starts at 0, so `gap`
            // is the number of tokens not yet echoed: at most `window` of
            // them, as in the 2015 code (which numbers from 0 and starts
            // its echo at -1).
            let gap = r.count.saturating_sub(r.largest_seq_echoed);
            if gap >= self.params.window {
                // Downgraded: one more token only after the window timeout.
                let t = r.last_token_at + window_timeout;
                if now >= t {
                    r.largest_seq_echoed = r.count + 1 - self.params.window;
                } else {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                    continue;
                }
            }
            // The next missing packet after the last one tokenised, wrapping.
            let n = r.received.len();
            let start = r.last_pkt.map_or(0, |p| p + 1);
            let pick = (start..n)
                .chain(r.received.until()..start.min(n))
                .find(|&i| !r.received.has(i));
            let Some(pkt) = pick else { continue };
            r.count += 1;
            r.last_pkt = Some(pkt);
            r.last_token_at = now;
            if r.count >= r.goal {
                r.resend_at = Some(now + resend);
            }
            let remaining = n - r.received.count();
            let seq = r.count;
            let spec = ctx.flow(f);
            let (src, dst) = (spec.src, spec.dst);
            // The sender counts the token's lifetime from its arrival.
            let token = PhostMsg::Token {
                pkt,
                seq,
                remaining,
            };
            let tok = Self::ctrl(ctx, f, dst, src, token);
            ctx.send(tok);
            h.tokens_issued += 1;
            if let Some(log) = h.token_log.as_mut() {
                log.push(now);
            }
            sent = true;
            break;
        }
        if sent {
            Self::schedule_slot(h, ctx, now + slot, false);
        } else if let Some(w) = wake {
            Self::schedule_slot(h, ctx, w.max(now + Duration::from_ps(1)), true);
        }
    }

    fn on_data(&self, h: &mut PhostHost, ctx: &mut Ctx, pkt: Packet, idx: u32, seq: u32) {
        let f = pkt.flow;
        let slot = self.slots.recv(f);
        if !h.recv[slot].started {
            self.open_recv(h, ctx, f);
        }
        let mss = ctx.format().mss as u64;
        let size = ctx.flow(f).size;
        let r = &mut h.recv[slot];
        r.largest_seq_echoed = r.largest_seq_echoed.max(seq);
        r.received.mark(idx);
        let in_order = (r.received.until() as u64 * mss).min(size);
        let done = r.received.count() == r.received.len();
        ctx.set_received(f, in_order);
        if done && !r.finished {
            r.finished = true;
            let ack = Self::ctrl(ctx, f, pkt.dst, pkt.src, PhostMsg::Ack);
            ctx.send(ack);
        }
    }
}

impl HostProtocol for PhostProtocol {
    type Host = PhostHost;

    fn name(&self) -> &'static str {
        "phost"
    }

    fn setup(&mut self, env: &Setup) -> Result<()> {
        self.slots = FlowSlots::new(env);
        Ok(())
    }

    fn new_host(&self, env: &Setup, host: NodeId) -> PhostHost {
        let rate = env.host_rate(host);
        let f = env.format();
        let t_pkt = rate.tx_time((f.mss + f.header) as u64);
        let slot = match self.params.token_slot_bytes {
            Some(b) => rate.tx_time(b as u64),
            None => t_pkt,
        };
        PhostHost {
            send: vec![SendFlow::default(); self.slots.n_send(host)],
            recv: vec![RecvFlow::default(); self.slots.n_recv(host)],
            sending: Vec::new(),
            receiving: Vec::new(),
            hold_on: 0,
            slot_at: None,
            slot_is_wakeup: false,
            slot_order: Vec::new(),
            t_pkt,
            slot,
            tokens_issued: 0,
            rts_resent: 0,
            token_log: self.logs.then(Vec::new),
            data_log: self.logs.then(Vec::new),
        }
    }

    fn start_flow(&self, h: &mut PhostHost, ctx: &mut Ctx, f: FlowId) {
        let spec = ctx.flow(f);
        let (src, dst, size) = (spec.src, spec.dst, spec.size);
        let n = n_packets(size, ctx.format().mss);
        let slot = self.slots.send(f);
        let s = &mut h.send[slot];
        s.remaining = n;
        s.active = true;
        let free = self.free_tokens(n);
        s.free = free;
        if free > 0 {
            // Free tokens for the first `free` packets (spec §2.2 step 1).
            let expires = ctx.now() + times(h.t_pkt, free as f64 + self.params.token_timeout);
            // With free tokens for long flows, their data echoes sequence
            // numbers 1..=free so that the receiver's downgrade window sees
            // them used, as the code numbers its free tokens; short flows
            // keep 0, which changes nothing for a fully covered flow.
            let numbered = self.params.free_tokens_every_flow;
            s.tokens.extend((0..free).map(|pkt| Token {
                expires,
                pkt,
                seq: if numbered { pkt + 1 } else { 0 },
            }));
        }
        let rts = Self::ctrl(ctx, f, src, dst, PhostMsg::Rts { packets: n });
        ctx.send(rts);
        self.arm_rts(h, ctx, f);
        h.sending.push((f, slot as u32));
        self.try_send(h, ctx);
    }

    fn on_packet(&self, h: &mut PhostHost, ctx: &mut Ctx, pkt: Packet) {
        let Some(msg) = PhostMsg::parse(&pkt.header) else {
            debug_assert!(false, "pHost got a foreign or unknown packet");
            return;
        };
        match msg {
            PhostMsg::Rts { .. } => self.open_recv(h, ctx, pkt.flow),
            PhostMsg::Token {
                pkt: idx,
                seq,
                remaining,
            } => {
                let ttl = times(h.t_pkt, self.params.token_timeout);
                let s = &mut h.send[self.slots.send(pkt.flow)];
                if s.active {
                    s.tokens_received += 1;
                    s.tokens.push_back(Token {
                        expires: ctx.now() + ttl,
                        pkt: idx,
                        seq,
                    });
                    s.remaining = remaining;
                    self.try_send(h, ctx);
                }
            }
            PhostMsg::Data { pkt: idx, seq } => self.on_data(h, ctx, pkt, idx, seq),
            PhostMsg::Ack => {
                let f = pkt.flow;
                let s = &mut h.send[self.slots.send(f)];
                s.active = false;
                s.tokens.clear();
                h.sending.retain(|&(g, _)| g != f);
            }
        }
    }

    fn on_timer(&self, h: &mut PhostHost, ctx: &mut Ctx, id: u32, kind: u8) {
        if kind == TIMER_RTS {
            self.on_rts_timer(h, ctx, FlowId(id));
            return;
        }
        debug_assert_eq!(id, ctx.host().0, "a pHost slot timer is its host's");
        if h.slot_at == Some(ctx.now()) {
            self.run_slot(h, ctx);
        }
    }

    fn on_nic_idle(&self, h: &mut PhostHost, ctx: &mut Ctx) {
        self.try_send(h, ctx);
    }

    /// With `rts_timeout`: the RTS packets re-sent.
    fn counters(&self, hosts: &[PhostHost]) -> Vec<(&'static str, u64)> {
        if self.params.rts_timeout.is_none() {
            return Vec::new();
        }
        vec![("rts_resent", hosts.iter().map(|h| h.rts_resent).sum())]
    }

    /// At the source, from the flow's start until the final ACK: tokens
    /// held (an expired one leaves when the sender next picks a packet),
    /// the free ones among them, tokens received from the receiver and
    /// tokens expired unused, and the packets the receiver last said it
    /// misses. At the destination, from the RTS until every packet is in:
    /// tokens granted (free ones included), those not yet echoed by data
    /// (what the downgrade window counts), the token budget before the
    /// resend timer, packets received, whether the flow is downgraded
    /// (tokens left to grant, but it waits for the window timeout) and
    /// whether its budget is spent (it waits for the resend timer).
    fn flow_state(
        &self,
        h: &PhostHost,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        match self.slots.end_at(at, f, &h.send, &h.recv) {
            Some(FlowEnd::Sender(s)) if s.active => {
                let free = s.tokens.iter().filter(|t| t.seq <= s.free).count();
                out("tokens_held", s.tokens.len() as f64);
                out("free_tokens_held", free as f64);
                out("tokens_received", f64::from(s.tokens_received));
                out("tokens_expired", f64::from(s.tokens_expired));
                out("remaining_packets", f64::from(s.remaining));
            }
            Some(FlowEnd::Receiver(r)) if r.started && !r.finished => {
                let unechoed = r.count.saturating_sub(r.largest_seq_echoed);
                out("tokens_granted", f64::from(r.count));
                out("tokens_outstanding", f64::from(unechoed));
                out("token_budget", f64::from(r.goal));
                out("received_packets", f64::from(r.received.count()));
                // Downgraded: tokens left to grant, but the window of unechoed
                // ones is full (a flow sent wholly on free tokens is not).
                let downgraded = r.count < r.goal && unechoed >= self.params.window;
                out("downgraded", f64::from(u8::from(downgraded)));
                out(
                    "awaiting_resend",
                    f64::from(u8::from(r.count >= r.goal && r.resend_at.is_some())),
                );
            }
            _ => {}
        }
    }

    fn copy_for_group(&self) -> Option<Self> {
        // A pHost host reads nothing of another host's state: each group's
        // copy builds the same tables at setup.
        let mut copy = PhostProtocol::new(self.params.clone());
        copy.logs = self.logs;
        Some(copy)
    }
}
