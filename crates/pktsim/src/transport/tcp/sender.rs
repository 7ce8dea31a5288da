//! The sender state machine of one TCP flow: what to send next, loss
//! detection and recovery, and the retransmission timer. It is pure: it
//! never touches the network; [`super::TcpProtocol`] asks it for segments
//! while the host NIC has room and turns them into packets.
//!
//! Rules implemented (each arm cites its RFC):
//! - RFC 5681: slow start / congestion avoidance (through [`Cc`]), fast
//!   retransmit on the third duplicate ACK, cwnd = 1 MSS after a timeout.
//! - RFC 3042 Limited Transmit: one new segment on each of the first two
//!   duplicate ACKs, flight ≤ cwnd + 2·MSS.
//! - RFC 6582 NewReno (no SACK): partial ACKs retransmit the next hole and
//!   deflate; the `recover` guard; the timer is restarted on the first
//!   partial ACK only ("impatient", [`TimerMode::Rfc`]) or on every partial
//!   ACK and at fast retransmit ([`TimerMode::Linux`]).
//! - RFC 6675 SACK recovery (with SACK): `IsLost`, `SetPipe`, `NextSeg`
//!   rules 1–3 over a [`Scoreboard`].
//! - RFC 6298 timer: started when data is sent and it is off, restarted by
//!   ACKs of new data, backed off on expiry; ssthresh is computed only on the
//!   first timeout of a series (RFC 5681 §3.1: not again when the same data
//!   is retransmitted again), so repeated timeouts do not collapse it.
//! - RFC 3522 / RFC 4015 Eifel: after a timeout that started loss recovery,
//!   the first ACK of new data whose echoed timestamp predates the
//!   retransmission shows the timeout was spurious; the window and ssthresh
//!   are restored and sending resumes with new data. A timeout during SACK
//!   recovery (or NewReno's Linux timer mode) found premature the same way
//!   returns to the recovery it interrupted; one during an RFC 6582
//!   "impatient" recovery or a go-back-N is not judged (RFC 3522 §3.2
//!   step 2: RetransmitTS is not overwritten as recovery progresses).
//! - RFC 7323 receive window: nothing is sent beyond ack + window.
//! - Optional: the three-way handshake's source side ([`super::handshake`]:
//!   no data before the SYN-ACK, the SYN's timer, RFC 6298 §5.7) and
//!   pacing ([`super::pacing`]: the earliest time the next packet may go).

use crate::time::{Duration, Time};
use crate::transport::ping_pong::PingPong;
use crate::transport::tcp::cc::{AckInfo, Cc, CongestionControl, Window};
use crate::transport::tcp::handshake::Connecting;
use crate::transport::tcp::pacing::Pacing;
use crate::transport::tcp::rtt::RttEstimator;
use crate::transport::tcp::scoreboard::Scoreboard;
use std::collections::VecDeque;

/// When the retransmission timer is restarted during fast recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerMode {
    /// RFC 6582 §3.2 step 5 ("impatient"): only on the first partial ACK;
    /// never at fast retransmit. With SACK, RFC 6298 §5.3 (every ACK of
    /// new data).
    #[default]
    Rfc,
    /// Linux: on every partial ACK and at fast retransmit.
    Linux,
}

/// Sender settings shared by every flow.
#[derive(Clone, Copy, Debug)]
pub struct SenderConfig {
    /// Initial window, bytes.
    pub init_cwnd: u64,
    /// Largest window, bytes.
    pub max_cwnd: u64,
    /// Duplicate ACKs that trigger fast retransmit (DupThresh).
    pub dupthresh: u32,
    /// Use SACK information (RFC 6675) or plain NewReno (RFC 6582).
    pub sack: bool,
    /// RFC 3042 Limited Transmit.
    pub limited_transmit: bool,
    /// Timer restart rule during recovery.
    pub timer: TimerMode,
    /// RTO before the first sample.
    pub initial_rto: Duration,
    /// Smallest RTO.
    pub min_rto: Duration,
    /// Largest RTO.
    pub max_rto: Duration,
    /// Duplicate ACKs (and SACK's IsLost) may start fast recovery. Off, loss
    /// is recovered by the RTO (DIBS) or by FastLane notices (with
    /// per-packet spraying, so that reordering is not taken for loss).
    pub fast_retransmit: bool,
    /// A FastLane notice halves the window, once per window of data.
    pub notice_reduces_window: bool,
    /// Ping-pong throttle base: the n-th notice of a segment (n ≥ 2) waits
    /// `base · 2^(n−2)` before retransmitting ([`PingPong`]).
    pub notice_retx_base: Duration,
    /// Pacing ratios, if the flow is paced.
    pub pacing: Option<Pacing>,
    /// RFC 6298 §5.7: the data RTO after a SYN retransmission, if the
    /// initial RTO is below it.
    pub syn_fallback_rto: Duration,
}

/// One segment to transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First payload byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u64,
    /// Whether the bytes were sent before.
    pub retx: bool,
}

/// What an ACK carries, as the sender reads it.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// Cumulative acknowledgement: next byte expected.
    pub ack: u64,
    /// One SACK block [start, end), if any.
    pub sack: Option<(u64, u64)>,
    /// Right edge of the receive window (ack + window).
    pub window_edge: u64,
    /// Echoed transmit timestamp of the data that triggered the ACK.
    pub echo: Time,
    /// ECN-Echo.
    pub ece: bool,
}

/// Saved state to undo a spurious timeout.
#[derive(Clone, Copy, Debug)]
struct Undo {
    cwnd: u64,
    ssthresh: u64,
    /// When the first timeout retransmission was sent.
    retx_at: Time,
    /// The fast recovery the timeout interrupted, if any.
    resume: Option<Resume>,
}

/// Fast-recovery state saved by a timeout, to go back to if the timeout
/// turns out premature.
#[derive(Clone, Copy, Debug)]
struct Resume {
    point: u64,
    recover: u64,
    high_rxt: u64,
    partial_seen: bool,
}

/// Per-flow event counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Retransmission timeouts.
    pub timeouts: u32,
    /// Timeouts found spurious by Eifel detection.
    pub spurious_timeouts: u32,
    /// Fast retransmits (entries into fast recovery).
    pub fast_recoveries: u32,
    /// FastLane notices for unacknowledged data.
    pub notices: u32,
    /// Retransmissions a notice triggered.
    pub notice_retransmits: u32,
    /// Window reductions a notice triggered.
    pub notice_reductions: u32,
    /// Notices whose retransmission the ping-pong throttle delayed.
    pub notices_throttled: u32,
}

impl std::ops::AddAssign for SenderStats {
    /// Add another flow's (or host's) counts: totals for `summary.json`.
    fn add_assign(&mut self, o: SenderStats) {
        self.timeouts += o.timeouts;
        self.spurious_timeouts += o.spurious_timeouts;
        self.fast_recoveries += o.fast_recoveries;
        self.notices += o.notices;
        self.notice_retransmits += o.notice_retransmits;
        self.notice_reductions += o.notice_reductions;
        self.notices_throttled += o.notices_throttled;
    }
}

/// The sender of one flow; `C` is its congestion controller.
#[derive(Clone, Debug)]
pub struct Sender<C = Cc> {
    size: u64,
    mss: u64,
    cfg: SenderConfig,
    /// First unacknowledged byte.
    pub snd_una: u64,
    /// Next byte of the in-order stream to send (rewound by a timeout).
    pub snd_nxt: u64,
    /// Highest byte sent + 1 (SND.MAX, RFC 6675 HighData).
    pub high_data: u64,
    /// Window and threshold.
    pub w: Window,
    /// Congestion controller.
    pub cc: C,
    dupacks: u32,
    /// In fast recovery until the cumulative ACK reaches this.
    recovery: Option<u64>,
    /// RFC 6582 `recover`: no new recovery until the ACK reaches it.
    recover: u64,
    /// A partial ACK already restarted the timer in this recovery.
    partial_seen: bool,
    /// RFC 6675 HighRxt: end of the highest retransmitted segment.
    high_rxt: u64,
    sb: Scoreboard,
    window_edge: u64,
    rtt: RttEstimator,
    /// Retransmission timer deadline (`Time::MAX`: off).
    pub rto_deadline: Time,
    /// A retransmission that goes regardless of the window.
    force: Option<u64>,
    /// The last transmit pass stopped at the congestion window.
    cwnd_limited: bool,
    undo: Option<Undo>,
    /// Every byte is acknowledged.
    pub done: bool,
    /// Event counts.
    pub stats: SenderStats,
    /// Notified segments to retransmit now, regardless of the window.
    notified: VecDeque<u64>,
    /// Notice counts and throttled retransmissions.
    ping: PingPong,
    /// Waiting for the handshake's SYN-ACK (`None`: data may flow).
    connecting: Option<Connecting>,
    /// Data is ECN-capable: the handshake negotiated ECN (RFC 3168
    /// §6.1.1), or there was no handshake.
    ecn_ok: bool,
    /// Pacing: the earliest time the next packet may leave.
    pace_next: Time,
}

impl<C: CongestionControl> Sender<C> {
    /// A sender for `size` bytes in `mss`-byte segments; `window` is the
    /// receive window assumed before the first ACK.
    pub fn new(size: u64, mss: u64, cfg: SenderConfig, cc: C, window: u64) -> Self {
        Sender {
            size,
            mss,
            cfg,
            snd_una: 0,
            snd_nxt: 0,
            high_data: 0,
            w: Window {
                cwnd: cfg.init_cwnd.min(cfg.max_cwnd),
                ssthresh: u64::MAX,
                mss,
            },
            cc,
            dupacks: 0,
            recovery: None,
            recover: 0,
            partial_seen: false,
            high_rxt: 0,
            sb: Scoreboard::default(),
            window_edge: window,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            rto_deadline: Time::MAX,
            force: None,
            cwnd_limited: false,
            undo: None,
            done: false,
            stats: SenderStats::default(),
            notified: VecDeque::new(),
            ping: PingPong::default(),
            connecting: None,
            ecn_ok: true,
            pace_next: Time::ZERO,
        }
    }

    /// Open the connection with a handshake: the caller sent the SYN at
    /// `now`; no data goes before [`Sender::on_synack`], and the SYN's
    /// timer runs for the initial RTO (RFC 6298 §2.1).
    pub fn connect(&mut self, now: Time) {
        self.connecting = Some(Connecting { retransmits: 0 });
        self.rto_deadline = now + self.rtt.rto();
    }

    /// The handshake still waiting for its SYN-ACK, if any.
    pub fn connecting(&self) -> Option<Connecting> {
        self.connecting
    }

    /// The SYN's timer expired at `now`: back off (RFC 6298 §5.5) and
    /// restart it; the caller resends the SYN.
    pub fn on_syn_timeout(&mut self, now: Time) {
        if let Some(c) = &mut self.connecting {
            c.retransmits += 1;
            self.rtt.on_timeout();
            self.rto_deadline = now + self.rtt.rto();
        }
    }

    /// A SYN-ACK arrived at `now`, echoing `echo`; `retransmitted` if it
    /// was a retransmission, `ece` if it accepted ECN. Returns whether it
    /// completed the handshake (data may now flow).
    pub fn on_synack(&mut self, now: Time, echo: Time, retransmitted: bool, ece: bool) -> bool {
        let Some(c) = self.connecting.take() else {
            // A duplicate SYN-ACK after the handshake: nothing to do.
            return false;
        };
        self.rto_deadline = Time::MAX;
        // RFC 3168 §6.1.1: an ECN-setup SYN-ACK (ECE) makes data ECT.
        self.ecn_ok = ece;
        if c.retransmits > 0 {
            // RFC 6298 §5.7: the SYN's timer expired, so data starts with
            // RTO = 3 s (the setting) where the RTO in use is below it.
            // The estimator's initial value is the RTO in use before the
            // back-off; the back-off ends.
            let rto = self.cfg.initial_rto.max(self.cfg.syn_fallback_rto);
            self.rtt.restart(rto);
        } else if !retransmitted {
            // RFC 6298 §2.2: the first RTT sample, from an exchange with
            // no retransmission (Karn's rule, §3).
            self.rtt.on_ack(now, echo, 0, 0);
        }
        true
    }

    /// Whether data is sent ECN-capable (the controller's choice, as
    /// negotiated by the handshake).
    pub fn ecn_ok(&self) -> bool {
        self.ecn_ok
    }

    /// Pacing holds the next packet back until the returned time, if that
    /// is later than `now`.
    #[inline]
    pub fn pace_wait(&self, now: Time) -> Option<Time> {
        (self.cfg.pacing.is_some() && now < self.pace_next).then_some(self.pace_next)
    }

    /// A packet of `len` wire bytes left at `now`: the next one goes no
    /// earlier than one pacing gap later ([`Pacing::gap`]; nothing before
    /// the first RTT sample, see [`super::pacing`]).
    pub fn on_paced(&mut self, now: Time, len: u64) {
        let (Some(p), Some(srtt)) = (self.cfg.pacing, self.rtt.srtt()) else {
            return;
        };
        let outstanding = self.high_data - self.snd_una;
        let gap = p.gap(len, self.w.cwnd, self.w.ssthresh, outstanding, srtt);
        self.pace_next = self.pace_next.max(now) + gap;
    }

    /// A transmit pass stopped because pacing holds the next packet. The
    /// flow counts as window-limited while it has data to send within the
    /// receive window: at ratios above 100 % it fills its window within
    /// each round trip (the rate exceeds cwnd / srtt), so its window keeps
    /// growing on ACKs as Linux lets it (`tcp_is_cwnd_limited`: a slow
    /// start grows while cwnd < 2 × packets out).
    pub fn on_paced_stop(&mut self) {
        let pending = self.force.is_some()
            || !self.notified.is_empty()
            || self.snd_nxt < self.high_data
            || (self.high_data < self.size
                && self.high_data + self.seg_len(self.high_data) <= self.window_edge);
        self.cwnd_limited |= pending;
    }

    /// The sender's state variables for the time series
    /// ([`crate::transport::contract::Transport::flow_state`]): window,
    /// threshold (once set), RTT estimates (once sampled), RTO, flight,
    /// bytes acknowledged, recovery, then the controller's own.
    pub fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        let us = |d: Duration| d.ps() as f64 / 1e6;
        out("cwnd_bytes", self.w.cwnd as f64);
        if self.w.ssthresh != u64::MAX {
            out("ssthresh_bytes", self.w.ssthresh as f64);
        }
        if let Some(srtt) = self.rtt.srtt() {
            out("srtt_us", us(srtt));
            out("rttvar_us", us(self.rtt.rttvar()));
        }
        out("rto_us", us(self.rtt.rto()));
        out("bytes_in_flight", self.flight() as f64);
        out("bytes_acked", self.snd_una as f64);
        out("in_recovery", f64::from(u8::from(self.recovery.is_some())));
        self.cc.state(out);
    }

    /// Whether the flow is in fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.recovery.is_some()
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    fn seg_len(&self, seq: u64) -> u64 {
        (self.size - seq).min(self.mss)
    }

    /// Bytes counted against cwnd: RFC 6675 pipe in SACK recovery, else
    /// the unSACKed bytes between snd_una and snd_nxt (FlightSize).
    pub fn flight(&self) -> u64 {
        if self.cfg.sack && self.recovery.is_some() {
            self.sb.pipe(
                self.snd_una,
                self.high_data,
                self.high_rxt,
                self.cfg.dupthresh,
                self.mss,
            )
        } else {
            let sacked = if self.sb.is_empty() {
                0
            } else {
                self.sb.sacked_bytes().min(self.snd_nxt - self.snd_una)
            };
            self.snd_nxt - self.snd_una - sacked
        }
    }

    /// Start a transmit pass (resets the cwnd-limited note).
    pub fn begin_pass(&mut self) {
        self.cwnd_limited = false;
    }

    /// The next segment the windows allow, if any. Call
    /// [`Sender::on_sent`] once it is handed to the network.
    pub fn next_segment(&mut self) -> Option<Segment> {
        if self.done || self.connecting.is_some() {
            return None;
        }
        while let Some(seq) = self.notified.pop_front() {
            // FastLane: the network said this segment was dropped; resend
            // it at once, regardless of the window (it left the network).
            // After a timeout rewound `snd_nxt` below it, the go-back-N
            // pass resends it in order anyway.
            if self.unacked(seq) && seq < self.snd_nxt {
                self.stats.notice_retransmits += 1;
                return Some(self.segment(seq));
            }
        }
        if let Some(seq) = self.force.take() {
            // RFC 5681 §3.2 step 2 / RFC 6582 step 5: this retransmission
            // goes regardless of the window.
            if seq >= self.snd_una && seq < self.high_data {
                return Some(self.segment(seq));
            }
        }
        let mss = self.mss;
        if self.cfg.sack && self.recovery.is_some() {
            // RFC 6675 §5 step (C): send while cwnd − pipe ≥ 1 MSS.
            if self.flight() + mss > self.w.cwnd {
                self.cwnd_limited = true;
                return None;
            }
            let from = self.high_rxt.max(self.snd_una);
            let hole = self.sb.next_hole(from, self.cfg.dupthresh, mss);
            // NextSeg rule 1: a lost segment above HighRxt.
            if let Some((s, true)) = hole {
                return Some(self.segment(s));
            }
            // Rule 2: new data, if the receive window allows.
            let seq = self.high_data;
            if seq < self.size && seq + self.seg_len(seq) <= self.window_edge {
                self.snd_nxt = seq;
                return Some(self.segment(seq));
            }
            // Rule 3: an unSACKed segment below the highest SACK.
            if let Some((s, false)) = hole {
                return Some(self.segment(s));
            }
            return None;
        }
        let mut seq = self.snd_nxt;
        if self.cfg.sack {
            // After a timeout, go back over the unacknowledged data but skip
            // what the receiver already SACKed.
            while seq < self.high_data && self.sb.is_sacked(seq, seq + self.seg_len(seq)) {
                seq += self.seg_len(seq);
            }
            self.snd_nxt = seq;
        }
        if seq >= self.size {
            return None;
        }
        let len = self.seg_len(seq);
        let flight = self.flight();
        if flight > 0 && seq + len > self.window_edge {
            // RFC 7323 §2.4: stay inside the advertised window (one segment
            // may probe a closed window when nothing is in flight).
            return None;
        }
        let extra = if self.cfg.limited_transmit
            && self.recovery.is_none()
            && (1..=2).contains(&self.dupacks)
            && seq >= self.high_data
        {
            // RFC 3042 §2: new data on the first two duplicate ACKs,
            // flight ≤ cwnd + 2·MSS.
            self.dupacks as u64 * mss
        } else {
            0
        };
        if flight > 0 && flight + len > self.w.cwnd + extra {
            self.cwnd_limited = true;
            return None;
        }
        Some(self.segment(seq))
    }

    /// Whether the segment at `seq` was sent and is neither acknowledged
    /// nor SACKed.
    fn unacked(&self, seq: u64) -> bool {
        seq >= self.snd_una
            && seq < self.high_data
            && !(self.cfg.sack && self.sb.is_sacked(seq, seq + self.seg_len(seq)))
    }

    /// A FastLane notice at `now`: a switch dropped the segment at `seq`.
    /// Queue its retransmission (at once for its first notice, later for a
    /// repeated one: [`PingPong`]) and halve the window once per window of
    /// data (RFC 6582's `recover` guard, as a fast retransmit would; the
    /// FastLane paper cites NewReno). Returns when a throttled
    /// retransmission is due, if one now waits.
    pub fn on_notice(&mut self, now: Time, seq: u64) -> Option<Time> {
        if self.done || !self.unacked(seq) {
            return None;
        }
        self.stats.notices += 1;
        if self.cfg.notice_reduces_window && self.recovery.is_none() && seq >= self.recover {
            let flight = self.high_data - self.snd_una;
            self.w.ssthresh = self.cc.ssthresh_on_loss(&self.w, flight);
            self.w.cwnd = self.w.ssthresh.max(self.mss);
            self.recover = self.high_data;
            self.undo = None;
            self.stats.notice_reductions += 1;
        }
        let due = self
            .ping
            .on_notice(seq, now, self.cfg.notice_retx_base, self.rtt.rto());
        if due <= now {
            if !self.notified.contains(&seq) {
                self.notified.push_back(seq);
            }
            return None;
        }
        self.stats.notices_throttled += 1;
        Some(due)
    }

    /// Move throttled retransmissions due at `now` to the send queue; the
    /// next due time, if any still waits.
    pub fn release_notified(&mut self, now: Time) -> Option<Time> {
        let mut due = Vec::new();
        self.ping.take_due(now, &mut due);
        for seq in due {
            if !self.notified.contains(&seq) {
                self.notified.push_back(seq);
            }
        }
        self.ping.next_due()
    }

    /// Notices counted for the segment at `seq` (the ping-pong counter).
    pub fn notice_count(&self, seq: u64) -> u32 {
        self.ping.count(seq)
    }

    fn segment(&self, seq: u64) -> Segment {
        Segment {
            seq,
            len: self.seg_len(seq),
            retx: seq < self.high_data,
        }
    }

    /// `seg` was handed to the network at `now`.
    pub fn on_sent(&mut self, seg: Segment, now: Time) {
        let end = seg.seq + seg.len;
        if seg.seq >= self.snd_nxt {
            self.snd_nxt = end;
        }
        if seg.retx && self.recovery.is_some() {
            self.high_rxt = self.high_rxt.max(end);
        }
        self.high_data = self.high_data.max(end);
        // RFC 6298 §5.1: start the timer if it is off.
        if self.rto_deadline == Time::MAX {
            self.rto_deadline = now + self.rtt.rto();
        }
    }

    fn restart_timer(&mut self, now: Time) {
        self.rto_deadline = now + self.rtt.rto();
    }

    fn info(&self, now: Time, acked: u64, ece: bool) -> AckInfo {
        AckInfo {
            now,
            acked,
            ece,
            snd_una: self.snd_una,
            snd_max: self.high_data,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
        }
    }

    /// Process an ACK arriving at `now`. Segments to send follow from
    /// [`Sender::next_segment`].
    pub fn on_ack(&mut self, now: Time, a: Ack) {
        if self.done || a.ack > self.high_data {
            return;
        }
        if a.ack >= self.snd_una {
            self.window_edge = a.window_edge;
        }
        let mss = self.mss;
        let newly = a.ack.saturating_sub(self.snd_una);
        let mut sack_new = false;
        if self.cfg.sack {
            if let Some((s, e)) = a.sack {
                sack_new = self
                    .sb
                    .add(s, e.min(self.high_data), a.ack.max(self.snd_una));
            }
        }
        let info = AckInfo {
            snd_una: a.ack.max(self.snd_una),
            ..self.info(now, newly, a.ece)
        };
        if let Some(ss) = self.cc.on_ack_seen(&self.w, &info, self.recovery.is_some()) {
            // ECN reaction outside recovery (DCTCP, RFC 8257 §3.4).
            self.w.ssthresh = ss;
            self.w.cwnd = ss;
        }
        if newly > 0 {
            self.on_new_ack(now, a, newly);
        } else if a.ack == self.snd_una
            && self.snd_una < self.high_data
            && (!self.cfg.sack || a.sack.is_none() || sack_new)
        {
            self.on_dupack(now);
        }
        self.w.cwnd = self.w.cwnd.clamp(mss, self.cfg.max_cwnd.max(mss));
    }

    fn on_new_ack(&mut self, now: Time, a: Ack, newly: u64) {
        let mss = self.mss;
        if let Some(u) = self.undo.take() {
            if a.echo < u.retx_at {
                // The segment at snd_una arrived from a copy sent before the
                // timeout, so the timeout's retransmission was unnecessary.
                // A timeout that started loss recovery was spurious (RFC
                // 3522 §3.2: the copy was the original transmission); RFC
                // 4015 §4: restore the window, resume with new data. A
                // timeout that interrupted fast recovery was premature:
                // the recovery goes on where it stopped (its holes are not
                // repaired yet; jumping to new data would leave them to the
                // next timeout, `recover` barring a fast retransmit).
                self.stats.spurious_timeouts += 1;
                self.w.cwnd = self.w.cwnd.max(u.cwnd);
                self.w.ssthresh = u.ssthresh;
                self.cc.on_undo();
                self.snd_nxt = self.high_data;
                if let Some(r) = u.resume {
                    self.w.cwnd = u.cwnd;
                    self.recovery = Some(r.point);
                    self.recover = r.recover;
                    self.high_rxt = r.high_rxt;
                    self.partial_seen = r.partial_seen;
                }
            }
        }
        // Every ACK echoes its data's timestamp: samples are unambiguous
        // (no Karn rule needed), one per round trip.
        self.rtt.on_ack(now, a.echo, a.ack, self.high_data);
        self.rtt.reset_backoff();
        self.snd_una = a.ack;
        self.snd_nxt = self.snd_nxt.max(a.ack);
        self.high_rxt = self.high_rxt.max(a.ack);
        self.sb.advance(a.ack);
        self.ping.acked(a.ack);
        self.dupacks = 0;
        if a.ack >= self.size {
            self.done = true;
            self.rto_deadline = Time::MAX;
            self.sb.clear();
            return;
        }
        match self.recovery {
            Some(point) if a.ack >= point => {
                // Full ACK: leave recovery. RFC 6582 §3.2 step 3 option 1:
                // cwnd = min(ssthresh, max(FlightSize, MSS) + MSS); with SACK
                // cwnd stays at ssthresh (RFC 6675 §5).
                self.recovery = None;
                self.w.cwnd = if self.cfg.sack {
                    self.w.ssthresh
                } else {
                    let flight = self.high_data - a.ack;
                    self.w.ssthresh.min(flight.max(mss) + mss)
                };
                self.restart_timer(now);
            }
            Some(_) => {
                if self.cfg.sack {
                    // RFC 6675 §5 / RFC 6298 §5.3: NextSeg does the rest.
                    self.restart_timer(now);
                } else {
                    // RFC 6582 §3.2 step 5: retransmit the first unacked
                    // segment, deflate by the amount acknowledged and add
                    // back one MSS if that was at least one MSS.
                    self.force = Some(a.ack);
                    self.w.cwnd =
                        self.w.cwnd.saturating_sub(newly) + if newly >= mss { mss } else { 0 };
                    if !self.partial_seen || self.cfg.timer == TimerMode::Linux {
                        self.restart_timer(now);
                    }
                    self.partial_seen = true;
                }
            }
            None => {
                if self.cwnd_limited {
                    let info = self.info(now, newly, a.ece);
                    self.cc.on_ack(&mut self.w, &info);
                }
                // RFC 6298 §5.3: restart on an ACK of new data.
                self.restart_timer(now);
            }
        }
    }

    fn on_dupack(&mut self, now: Time) {
        self.dupacks += 1;
        if !self.cfg.fast_retransmit {
            return;
        }
        if self.recovery.is_some() {
            if !self.cfg.sack {
                // RFC 6582 §3.2 step 4: inflate by one MSS per duplicate.
                self.w.cwnd += self.mss;
            }
            return;
        }
        let una = self.snd_una;
        let lost = self.cfg.sack
            && self
                .sb
                .is_lost(una + self.seg_len(una), self.cfg.dupthresh, self.mss);
        // RFC 6582 §3.2 step 2: only if the ACK covers `recover` (not for
        // the same window as a previous recovery or timeout).
        if (self.dupacks >= self.cfg.dupthresh || lost) && una >= self.recover {
            self.stats.fast_recoveries += 1;
            let flight = self.high_data - una;
            self.w.ssthresh = self.cc.ssthresh_on_loss(&self.w, flight);
            self.recover = self.high_data;
            self.recovery = Some(self.high_data);
            self.partial_seen = false;
            self.undo = None;
            self.high_rxt = una;
            self.force = Some(una);
            self.w.cwnd = if self.cfg.sack {
                // RFC 6675 §5 step (4.2): cwnd = ssthresh.
                self.w.ssthresh
            } else {
                // RFC 5681 §3.2 step 3 (kept by RFC 6582).
                self.w.ssthresh + 3 * self.mss
            };
            if self.cfg.timer == TimerMode::Linux {
                self.restart_timer(now);
            }
        }
    }

    /// The retransmission timer fired at `now` (the caller checked the
    /// deadline).
    pub fn on_timeout(&mut self, now: Time) {
        if self.done || self.snd_una >= self.high_data {
            self.rto_deadline = Time::MAX;
            return;
        }
        self.stats.timeouts += 1;
        let flight = self.high_data - self.snd_una;
        if self.rtt.backoff() == 0 {
            // First timeout of a series: RFC 5681 eq. 4. A repeated timeout
            // keeps ssthresh (RFC 5681 §3.1: ssthresh is not recomputed when
            // the same data is retransmitted again).
            //
            // Eifel (RFC 3522 §3.2 step 2): RetransmitTS is that of the
            // retransmission that *initiates* loss recovery and is not
            // overwritten as recovery progresses. So a timeout in an
            // unfinished timeout recovery (snd_una < `recover`, go-back-N
            // under way) is not judged: an ACK echoing a time before it may
            // be one of that recovery's earlier retransmissions. Nor is one
            // in NewReno fast recovery under the RFC 6582 "impatient" timer
            // (§3.2 step 5, §6): there the timer, never restarted after the
            // first partial ACK, is meant to fire while holes remain and
            // hand recovery to slow start. Where the timer runs from the
            // last ACK of new data (SACK recovery, RFC 6298 §5.3; NewReno's
            // Linux mode), a timeout during fast recovery is judged against
            // its own time, but only to go back to that recovery (see
            // `on_new_ack`), never to leave it.
            let judged = self.cfg.sack || self.cfg.timer == TimerMode::Linux;
            let resume = self.recovery.filter(|_| judged).map(|point| Resume {
                point,
                recover: self.recover,
                high_rxt: self.high_rxt,
                partial_seen: self.partial_seen,
            });
            let starts_recovery = self.recovery.is_none() && self.snd_una >= self.recover;
            self.undo = (starts_recovery || resume.is_some()).then_some(Undo {
                cwnd: self.w.cwnd,
                ssthresh: self.w.ssthresh,
                retx_at: now,
                resume,
            });
            self.w.ssthresh = self.cc.ssthresh_on_timeout(&self.w, flight, now);
        }
        // RFC 5681 §3.1: loss window of one segment; go back to snd_una.
        self.w.cwnd = self.mss;
        self.recovery = None;
        self.dupacks = 0;
        // RFC 6582 §3.2 step 6: no fast retransmit for this window.
        self.recover = self.high_data;
        self.snd_nxt = self.snd_una;
        self.high_rxt = self.snd_una;
        self.force = None;
        // Go-back-N resends every notified segment anyway.
        self.notified.clear();
        self.ping.clear_waiting();
        // RFC 6298 §5.5–5.6: back off and restart.
        self.rtt.on_timeout();
        self.restart_timer(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::newreno::NewReno;
    use crate::transport::tcp::pacing::Pacing;

    const M: u64 = 1000;

    fn cfg(sack: bool) -> SenderConfig {
        SenderConfig {
            init_cwnd: 4 * M,
            max_cwnd: u64::MAX,
            dupthresh: 3,
            sack,
            limited_transmit: true,
            timer: TimerMode::Rfc,
            initial_rto: Duration::from_us(1000),
            min_rto: Duration::from_us(200),
            max_rto: Duration::from_ms(100),
            fast_retransmit: true,
            notice_reduces_window: true,
            notice_retx_base: Duration::from_us(10),
            pacing: None,
            syn_fallback_rto: Duration::from_ms(3000),
        }
    }

    fn t(us: u64) -> Time {
        Time::ZERO + Duration::from_us(us)
    }

    /// Send everything the windows allow; return the segment starts.
    fn pump(s: &mut Sender, now: Time) -> Vec<u64> {
        s.begin_pass();
        let mut out = Vec::new();
        while let Some(seg) = s.next_segment() {
            s.on_sent(seg, now);
            out.push(seg.seq);
        }
        out
    }

    /// Duplicate ACKs of byte 0 at t = 20, 21, 22 µs, sending what each
    /// allows: the third triggers fast retransmit.
    fn three_duplicate_acks(s: &mut Sender) {
        for i in 0..3 {
            s.on_ack(t(20 + i), ack(0, None, t(0)));
            pump(s, t(20 + i));
        }
    }

    fn ack(a: u64, sack: Option<(u64, u64)>, echo: Time) -> Ack {
        Ack {
            ack: a,
            sack,
            window_edge: a + 1_000_000,
            echo,
            ece: false,
        }
    }

    fn sender(sack: bool, size: u64) -> Sender {
        Sender::new(
            size,
            M,
            cfg(sack),
            Cc::NewReno(NewReno::default()),
            1_000_000,
        )
    }

    #[test]
    fn limited_transmit_then_fast_retransmit() {
        let mut s = sender(false, 100 * M);
        assert_eq!(pump(&mut s, t(0)), vec![0, M, 2 * M, 3 * M]);
        // Segment 0 lost: 1, 2, 3 produce duplicate ACKs.
        s.on_ack(t(10), ack(0, None, t(0)));
        // RFC 3042: one new segment per duplicate.
        assert_eq!(pump(&mut s, t(10)), vec![4 * M]);
        s.on_ack(t(11), ack(0, None, t(0)));
        assert_eq!(pump(&mut s, t(11)), vec![5 * M]);
        s.on_ack(t(12), ack(0, None, t(0)));
        // Third duplicate: retransmit 0; ssthresh = FlightSize/2 = 3000,
        // cwnd = ssthresh + 3 MSS.
        assert_eq!(pump(&mut s, t(12)), vec![0]);
        assert!(s.in_recovery());
        assert_eq!(s.w.ssthresh, 3 * M);
        assert_eq!(s.w.cwnd, 6 * M);
        // The timer was not restarted by the fast retransmit (RFC 6298).
        assert_eq!(s.rto_deadline, t(1000));
    }

    #[test]
    fn partial_ack_retransmits_next_hole_and_restarts_timer_once() {
        let mut s = sender(false, 100 * M);
        s.w.cwnd = 10 * M;
        pump(&mut s, t(0));
        // Segments 0 and 5 lost.
        three_duplicate_acks(&mut s);
        assert!(s.in_recovery());
        let recover = s.high_data;
        // The retransmitted 0 fills the first hole: ACK 5000 is partial.
        s.on_ack(t(40), ack(5 * M, None, t(21)));
        let sent = pump(&mut s, t(40));
        assert_eq!(sent[0], 5 * M, "RFC 6582 step 5: retransmit the next hole");
        let first = s.rto_deadline;
        assert!(first > t(40));
        // A second partial ACK does not restart the timer (impatient rule).
        s.on_ack(t(60), ack(5 * M, None, t(40)));
        s.on_ack(t(61), ack(6 * M, None, t(40)));
        pump(&mut s, t(61));
        assert_eq!(s.rto_deadline, first);
        assert!(s.in_recovery());
        // The full ACK ends recovery.
        s.on_ack(t(80), ack(recover, None, t(60)));
        assert!(!s.in_recovery());
        assert!(s.w.cwnd <= s.w.ssthresh);
    }

    /// A path that delivers in order and loses the first transmission of
    /// the segments in `lose`; the receiver ACKs every segment with the SACK
    /// block holding it. Returns every segment sent.
    fn run_path(s: &mut Sender, lose: &[u64]) -> Vec<Segment> {
        use crate::transport::receiver::insert_range;
        let mut wire = std::collections::VecDeque::new();
        let mut sent = Vec::new();
        let mut now = 0;
        let mut send = |s: &mut Sender, now: u64, wire: &mut std::collections::VecDeque<_>| {
            s.begin_pass();
            while let Some(seg) = s.next_segment() {
                s.on_sent(seg, t(now));
                wire.push_back((seg, now));
                sent.push(seg);
            }
        };
        send(s, now, &mut wire);
        let (mut rcv_nxt, mut ooo) = (0u64, Vec::new());
        while let Some((seg, at)) = wire.pop_front() {
            now += 1;
            if !seg.retx && lose.contains(&seg.seq) {
                continue;
            }
            let end = seg.seq + seg.len;
            if seg.seq <= rcv_nxt {
                rcv_nxt = rcv_nxt.max(end);
                while let Some(&(a, b)) = ooo.first() {
                    if a > rcv_nxt {
                        break;
                    }
                    rcv_nxt = rcv_nxt.max(b);
                    ooo.remove(0);
                }
            } else {
                insert_range(&mut ooo, seg.seq, end);
            }
            let blk = ooo
                .iter()
                .find(|r: &&(u64, u64)| r.0 <= seg.seq && seg.seq < r.1)
                .copied();
            s.on_ack(t(now), ack(rcv_nxt, blk, t(at)));
            send(s, now, &mut wire);
        }
        sent
    }

    #[test]
    fn sack_recovery_retransmits_only_the_holes() {
        let lose = [2 * M, 5 * M, 6 * M, 9 * M];
        let mut s = sender(true, 40 * M);
        s.w.cwnd = 10 * M;
        s.w.ssthresh = 10 * M;
        let sent = run_path(&mut s, &lose);
        assert!(s.done, "flow finished without a timeout");
        assert_eq!(s.stats.timeouts, 0);
        assert_eq!(s.stats.fast_recoveries, 1);
        let retx: Vec<u64> = sent.iter().filter(|g| g.retx).map(|g| g.seq).collect();
        assert_eq!(retx, lose.to_vec(), "each hole once, nothing else");
        // NewReno without SACK recovers one hole per round trip and
        // retransmits more for the same losses.
        let mut n = sender(false, 40 * M);
        n.w.cwnd = 10 * M;
        n.w.ssthresh = 10 * M;
        let sent_n = run_path(&mut n, &lose);
        assert!(n.done);
        let retx_n = sent_n.iter().filter(|g| g.retx).count();
        assert!(retx_n >= lose.len(), "NewReno retransmitted {retx_n}");
    }

    #[test]
    fn notices_resend_at_once_halve_once_per_window_and_throttle_repeats() {
        let mut s = sender(true, 100 * M);
        s.w.cwnd = 10 * M;
        pump(&mut s, t(0));
        // A notice for segment 3: halve (ssthresh = FlightSize / 2) and
        // resend it at once, although the flight now exceeds the window.
        assert_eq!(s.on_notice(t(5), 3 * M), None);
        assert_eq!(s.w.cwnd, 5 * M);
        assert_eq!(pump(&mut s, t(5)), vec![3 * M]);
        // Another drop of the same window: resent, no second reduction.
        assert_eq!(s.on_notice(t(6), 5 * M), None);
        assert_eq!(s.w.cwnd, 5 * M);
        assert_eq!(pump(&mut s, t(6)), vec![5 * M]);
        // Segment 3 dropped again: its retransmission waits the 10 us base,
        // then twice that, then four times (ping-pong throttle).
        assert_eq!(s.on_notice(t(7), 3 * M), Some(t(17)));
        assert!(pump(&mut s, t(7)).is_empty());
        assert_eq!(s.release_notified(t(17)), None);
        assert_eq!(pump(&mut s, t(17)), vec![3 * M]);
        assert_eq!(s.on_notice(t(20), 3 * M), Some(t(40)));
        assert_eq!(s.release_notified(t(40)), None);
        assert_eq!(pump(&mut s, t(40)), vec![3 * M]);
        assert_eq!(s.on_notice(t(50), 3 * M), Some(t(90)));
        assert_eq!(s.notice_count(3 * M), 4);
        assert_eq!(s.stats.notice_reductions, 1);
        // Acknowledged data is forgotten; a notice for it does nothing.
        s.on_ack(t(60), ack(4 * M, None, t(0)));
        assert_eq!(s.notice_count(3 * M), 0);
        assert_eq!(s.on_notice(t(61), 3 * M), None);
        assert_eq!(s.stats.notices, 5);
    }

    #[test]
    fn timeouts_back_off_and_hold_ssthresh() {
        let mut s = sender(false, 100 * M);
        s.w.cwnd = 20 * M;
        pump(&mut s, t(0));
        s.on_timeout(t(1000));
        assert_eq!(s.w.ssthresh, 10 * M);
        assert_eq!(s.w.cwnd, M);
        assert_eq!(pump(&mut s, t(1000)), vec![0]);
        assert_eq!(s.rto_deadline, t(3000), "RTO doubled");
        s.on_timeout(t(3000));
        // RFC 5681 §3.1: not recomputed from the 1-MSS flight.
        assert_eq!(s.w.ssthresh, 10 * M);
        assert_eq!(s.rto_deadline, t(7000));
        assert_eq!(s.stats.timeouts, 2);
    }

    #[test]
    fn eifel_detects_a_spurious_timeout_and_undoes_it() {
        let mut s = sender(false, 100 * M);
        s.w.cwnd = 20 * M;
        pump(&mut s, t(0));
        s.on_timeout(t(1000));
        pump(&mut s, t(1000));
        // The ACK of the original transmission (echo t = 0) arrives late.
        s.on_ack(t(1010), ack(M, None, t(0)));
        assert_eq!(s.stats.spurious_timeouts, 1);
        assert_eq!(s.w.ssthresh, u64::MAX);
        assert!(s.w.cwnd >= 20 * M);
        // Resume with new data, not a go-back-N resend.
        assert_eq!(s.snd_nxt, 20 * M);
        // A genuine one: the ACK echoes the retransmission.
        let mut g = sender(false, 100 * M);
        pump(&mut g, t(0));
        g.on_timeout(t(1000));
        pump(&mut g, t(1000));
        g.on_ack(t(1010), ack(M, None, t(1000)));
        assert_eq!(g.stats.spurious_timeouts, 0);
        assert_eq!(g.w.cwnd, 2 * M);
    }

    #[test]
    fn impatient_timeout_in_newreno_recovery_is_not_undone_by_an_earlier_retransmission() {
        // Segments 0, 5 and 7 lost; fast retransmit of 0, then the first
        // partial ACK retransmits 5 at t = 40 and (impatient timer) arms the
        // RTO for t = 240, which fires with 5's retransmission in flight.
        let mut s = sender(false, 100 * M);
        s.w.cwnd = 10 * M;
        pump(&mut s, t(0));
        three_duplicate_acks(&mut s);
        assert!(s.in_recovery());
        s.on_ack(t(40), ack(5 * M, None, t(21)));
        assert_eq!(pump(&mut s, t(40))[0], 5 * M);
        assert_eq!(s.rto_deadline, t(240));
        s.on_timeout(t(240));
        assert_eq!(pump(&mut s, t(240)), vec![5 * M]);
        // The ACK of the t = 40 retransmission echoes a time before the
        // timeout, but it is not an ACK of an original transmission (RFC
        // 3522's RetransmitTS is the fast retransmit's, not the timeout's),
        // and the impatient timer fired as RFC 6582 means it to.
        s.on_ack(t(250), ack(7 * M, None, t(40)));
        assert_eq!(s.stats.spurious_timeouts, 0);
        // Go-back-N slow start goes on from the next hole (RFC 5681 §3.1);
        // it does not jump to new data past the unrepaired hole at 7.
        assert_eq!(s.w.cwnd, 2 * M);
        assert_eq!(pump(&mut s, t(250)), vec![7 * M, 8 * M]);
    }

    #[test]
    fn premature_timeout_in_sack_recovery_returns_to_that_recovery() {
        // Segments 0, 5 and 9 lost; SACK recovery from the third SACK.
        let mut s = sender(true, 100 * M);
        s.w.cwnd = 10 * M;
        pump(&mut s, t(0));
        let mut resent_5 = None;
        let blocks = [
            (M, 2 * M),
            (M, 3 * M),
            (M, 4 * M),
            (M, 5 * M),
            (6 * M, 7 * M),
            (6 * M, 8 * M),
            (6 * M, 9 * M),
            (10 * M, 11 * M),
        ];
        for (i, blk) in blocks.into_iter().enumerate() {
            let now = t(20 + i as u64);
            s.on_ack(now, ack(0, Some(blk), t(0)));
            if pump(&mut s, now).contains(&(5 * M)) {
                resent_5 = Some(now);
            }
        }
        assert!(s.in_recovery());
        let resent_5 = resent_5.expect("NextSeg resent 5 once 6-8 were SACKed");
        // The retransmitted 0 arrives: partial ACK, the timer restarts
        // (RFC 6298 §5.3).
        s.on_ack(t(40), ack(5 * M, Some((6 * M, 9 * M)), t(22)));
        pump(&mut s, t(40));
        let (cwnd, ssthresh) = (s.w.cwnd, s.w.ssthresh);
        let fired = s.rto_deadline;
        s.on_timeout(fired);
        assert!(!s.in_recovery());
        // 5's earlier copy arrives after the timeout: the timeout was
        // premature; back to the SACK recovery it interrupted (9 is still
        // a hole), not to the open state past it.
        s.on_ack(
            fired + Duration::from_us(5),
            ack(9 * M, Some((10 * M, 11 * M)), resent_5),
        );
        assert_eq!(s.stats.spurious_timeouts, 1);
        assert!(s.in_recovery());
        assert_eq!((s.w.cwnd, s.w.ssthresh), (cwnd, ssthresh));
    }

    #[test]
    fn receive_window_caps_the_flight() {
        let mut s = sender(false, 100 * M);
        s.w.cwnd = 50 * M;
        s.window_edge = 5 * M;
        assert_eq!(pump(&mut s, t(0)).len(), 5);
        let mut a = ack(M, None, t(0));
        a.window_edge = M + 5 * M;
        s.on_ack(t(10), a);
        assert_eq!(pump(&mut s, t(10)), vec![5 * M]);
    }

    #[test]
    fn a_handshake_holds_data_backs_off_the_syn_and_starts_the_rto_per_rfc_6298() {
        // Clean handshake: no data before the SYN-ACK, which gives the
        // first RTT sample (20 us: RTO = 3 × 20 = 60 us, floored at 200 us).
        let mut s = sender(false, 100 * M);
        s.connect(t(0));
        assert!(pump(&mut s, t(0)).is_empty());
        assert_eq!(s.rto_deadline, t(1000));
        assert!(s.on_synack(t(20), t(0), false, false));
        assert_eq!(s.rtt().srtt(), Some(Duration::from_us(20)));
        assert_eq!(s.rtt().rto(), Duration::from_us(200));
        assert_eq!(pump(&mut s, t(20)).len(), 4);
        // A duplicate SYN-ACK does nothing.
        assert!(!s.on_synack(t(30), t(0), true, false));

        // Two lost SYNs: 1 ms, then 2 ms (RFC 6298 §5.5); data then starts
        // with RTO = max(initial, 3 s) clamped to max_rto = 100 ms, and no
        // sample (Karn).
        let mut s = sender(false, 100 * M);
        s.connect(t(0));
        s.on_syn_timeout(t(1000));
        assert_eq!(s.rto_deadline, t(3000));
        s.on_syn_timeout(t(3000));
        assert_eq!(s.rto_deadline, t(7000));
        assert_eq!(s.connecting().map(|c| c.retransmits), Some(2));
        assert!(s.on_synack(t(3020), t(3000), false, false));
        assert_eq!(s.rtt().srtt(), None);
        assert_eq!(s.rtt().rto(), Duration::from_ms(100));
        pump(&mut s, t(3020));
        assert_eq!(s.rto_deadline, t(3020) + Duration::from_ms(100));
        // With a larger max_rto the RFC's 3 s holds.
        let mut c = cfg(false);
        c.max_rto = Duration::from_ms(60_000);
        let mut s = Sender::new(M, M, c, Cc::NewReno(NewReno::default()), 1_000_000);
        s.connect(t(0));
        s.on_syn_timeout(t(1000));
        assert!(s.on_synack(t(1020), t(1000), false, true));
        assert_eq!(s.rtt().rto(), Duration::from_ms(3000));
        assert!(s.ecn_ok());

        // A retransmitted SYN-ACK for an unretransmitted SYN: no sample,
        // the RTO stays the initial one; ECN refused.
        let mut s = sender(false, 100 * M);
        s.connect(t(0));
        assert!(s.on_synack(t(1020), t(0), true, false));
        assert_eq!(s.rtt().srtt(), None);
        assert_eq!(s.rtt().rto(), Duration::from_us(1000));
        assert!(!s.ecn_ok());
    }

    #[test]
    fn pacing_spaces_packets_after_the_first_sample_and_keeps_the_window_growing() {
        let mut c = cfg(false);
        c.pacing = Some(Pacing::default());
        let mut s = Sender::new(100 * M, M, c, Cc::NewReno(NewReno::default()), 1_000_000);
        // No RTT sample yet: not paced.
        assert_eq!(pump(&mut s, t(0)).len(), 4);
        s.on_paced(t(0), M);
        assert_eq!(s.pace_wait(t(0)), None);
        // The first ACK samples 100 us: cwnd 5000 B, slow start at 200 %:
        // 1000 B every 10 us.
        s.on_ack(t(100), ack(M, None, t(0)));
        assert_eq!(s.w.cwnd, 5 * M);
        s.begin_pass();
        let seg = s.next_segment().expect("window open");
        s.on_sent(seg, t(100));
        s.on_paced(t(100), M);
        assert_eq!(s.pace_wait(t(100)), Some(t(110)));
        assert_eq!(s.pace_wait(t(110)), None);
        // Held by pacing with data to send: counts as window-limited, so
        // the next ACK grows the window (slow start).
        s.on_paced_stop();
        s.on_ack(t(101), ack(2 * M, None, t(0)));
        assert_eq!(s.w.cwnd, 6 * M);
        // A late send starts a new spacing from its own time.
        s.on_paced(t(500), M);
        assert!(s.pace_wait(t(500)).is_some_and(|at| at > t(500)));
        // Unpaced senders are never held.
        let mut u = sender(false, 100 * M);
        pump(&mut u, t(0));
        u.on_ack(t(100), ack(M, None, t(0)));
        u.on_paced(t(100), M);
        assert_eq!(u.pace_wait(t(100)), None);
    }

    #[test]
    fn linux_timer_mode_rearms_at_fast_retransmit_and_every_partial_ack() {
        let mut s = sender(false, 100 * M);
        s.cfg.timer = TimerMode::Linux;
        s.w.cwnd = 10 * M;
        pump(&mut s, t(0));
        three_duplicate_acks(&mut s);
        assert!(s.in_recovery());
        // Re-armed at the fast retransmit (the RFC mode keeps t = 1000).
        assert_eq!(s.rto_deadline, t(22 + 1000));
        s.on_ack(t(40), ack(5 * M, None, t(21)));
        let first = s.rto_deadline;
        s.on_ack(t(61), ack(6 * M, None, t(40)));
        assert!(s.rto_deadline > first, "second partial ACK re-arms");
    }
}
