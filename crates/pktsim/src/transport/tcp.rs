//! TCP NewReno (RFC 5681, RFC 6582, RFC 6298), optionally with DCTCP.
//!
//! Simplifications common to datacenter simulators (pFabric's and pHost's
//! ns-2 baselines do the same): no handshake, data flows from t = start; the
//! receiver ACKs every packet (no delayed ACKs); no SACK; windows in bytes.
//! The receiver reports in-order progress to the simulation, so a flow's FCT
//! ends when its last byte reaches the receiver.

use crate::net::packet::{flags, FlowId, Header, Packet};
use crate::sim::{Ctx, Transport};
use crate::time::{Duration, Time};
use crate::transport::dctcp::Dctcp;
use crate::transport::receiver::AckReceiver;

/// Timer kinds of this transport.
const TIMER_RTO: u8 = 0;

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
    /// DCTCP's gain g; `None` for plain NewReno.
    pub dctcp_g: Option<f64>,
}

impl Default for TcpParams {
    fn default() -> Self {
        TcpParams {
            init_cwnd: 10,
            max_cwnd: None,
            initial_rto: Duration::from_ms(1),
            min_rto: Duration::from_us(200),
            max_rto: Duration::from_ms(1000),
            dupack_threshold: 3,
            dctcp_g: None,
        }
    }
}

/// Sender state of one flow.
#[derive(Clone, Debug)]
struct Sender {
    snd_una: u64,
    snd_nxt: u64,
    /// Highest sequence number ever sent (to tell retransmissions).
    max_sent: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the last increase.
    ca_acked: u64,
    dupacks: u32,
    in_recovery: bool,
    /// NewReno's `recover`: highest sequence sent when recovery started.
    recover: u64,
    srtt: Option<u64>,
    rttvar: u64,
    rto: Duration,
    /// When the retransmission timer expires (`Time::MAX`: disarmed).
    rto_deadline: Time,
    /// Time of the pending timer event (`Time::MAX`: none pending).
    timer_at: Time,
    dctcp: Option<Dctcp>,
    done: bool,
}

/// TCP NewReno / DCTCP for every flow of a run.
pub struct Tcp {
    params: TcpParams,
    senders: Vec<Option<Sender>>,
    receivers: Vec<AckReceiver>,
}

impl Tcp {
    /// A transport with these parameters.
    pub fn new(params: TcpParams) -> Self {
        Tcp {
            params,
            senders: Vec::new(),
            receivers: Vec::new(),
        }
    }

    fn ensure(&mut self, n: usize) {
        if self.senders.len() < n {
            self.senders.resize(n, None);
            self.receivers.resize(n, AckReceiver::default());
        }
    }

    /// Current congestion window of a flow in bytes (for tests).
    pub fn cwnd(&self, f: FlowId) -> Option<u64> {
        self.senders.get(f.idx())?.as_ref().map(|s| s.cwnd)
    }

    /// DCTCP α of a flow (for tests).
    pub fn alpha(&self, f: FlowId) -> Option<f64> {
        self.senders
            .get(f.idx())?
            .as_ref()?
            .dctcp
            .as_ref()
            .map(|d| d.alpha)
    }

    fn send_segment(&self, ctx: &mut Ctx, f: FlowId, s: &mut Sender, seq: u64) {
        let mut p = ctx.data_packet(f, seq, u64::MAX, Header::TcpData { seq });
        let len = p.payload;
        if s.dctcp.is_some() {
            p.flags |= flags::ECT;
        }
        if seq < s.max_sent {
            p.flags |= flags::RETX;
            ctx.count_retransmit(f);
        }
        s.max_sent = s.max_sent.max(seq + len as u64);
        ctx.send(p);
    }

    /// Send new data while the window allows.
    fn fill_window(&self, ctx: &mut Ctx, f: FlowId, s: &mut Sender) {
        let size = ctx.flow(f).size;
        let mss = ctx.format().mss as u64;
        while s.snd_nxt < size {
            let flight = s.snd_nxt - s.snd_una;
            let len = (size - s.snd_nxt).min(mss);
            if flight > 0 && flight + len > s.cwnd {
                break;
            }
            let seq = s.snd_nxt;
            self.send_segment(ctx, f, s, seq);
            s.snd_nxt += len;
        }
        if s.snd_una < s.snd_nxt && s.rto_deadline == Time::MAX {
            Self::arm_rto(ctx, f, s);
        }
    }

    /// (Re)start the retransmission timer at now + RTO. Timers are lazy: one
    /// event is pending per flow; when it fires early it re-arms itself.
    fn arm_rto(ctx: &mut Ctx, f: FlowId, s: &mut Sender) {
        let deadline = ctx.now() + s.rto;
        s.rto_deadline = deadline;
        if s.timer_at == Time::MAX || s.timer_at > deadline {
            s.timer_at = deadline;
            ctx.set_timer(deadline, f.0, TIMER_RTO);
        }
    }

    /// RFC 6298 §2: update SRTT, RTTVAR and RTO from a sample.
    fn rtt_sample(&self, s: &mut Sender, r: u64) {
        match s.srtt {
            None => {
                s.srtt = Some(r);
                s.rttvar = r / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(r);
                s.rttvar = (3 * s.rttvar + diff) / 4;
                s.srtt = Some((7 * srtt + r) / 8);
            }
        }
        let rto = s.srtt.unwrap_or(r) + (4 * s.rttvar).max(1);
        s.rto = Duration(rto)
            .max(self.params.min_rto)
            .min(self.params.max_rto);
    }

    fn on_ack(&mut self, ctx: &mut Ctx, pkt: Packet, ack: u64) {
        let f = pkt.flow;
        let Some(mut s) = self.senders[f.idx()].take() else {
            return;
        };
        if s.done {
            self.senders[f.idx()] = Some(s);
            return;
        }
        let mss = ctx.format().mss as u64;
        let size = ctx.flow(f).size;
        let ece = pkt.has(flags::ECE);
        let newly = ack.saturating_sub(s.snd_una);
        if let Some(d) = s.dctcp.as_mut() {
            if d.on_ack(newly, ece, ack.max(s.snd_una), s.snd_nxt) {
                // DCTCP cut (RFC 8257 §3.4): ssthresh = cwnd·(1 − α/2).
                s.ssthresh = d.reduced(s.cwnd, 2 * mss);
                s.cwnd = s.ssthresh;
                s.ca_acked = 0;
            }
        }
        if ack > s.snd_una {
            // Timestamps make every sample valid (no Karn ambiguity).
            let r = (ctx.now() - pkt.sent_at).ps();
            self.rtt_sample(&mut s, r);
            if s.in_recovery {
                if ack >= s.recover {
                    // RFC 6582 §3.2 step 3: full ACK, deflate and leave recovery.
                    s.in_recovery = false;
                    s.cwnd = s.ssthresh.min((s.snd_nxt - ack) + mss).max(mss);
                } else {
                    // Partial ACK: retransmit the next hole, deflate by the
                    // amount acknowledged, add back one segment.
                    s.snd_una = ack;
                    self.send_segment(ctx, f, &mut s, ack);
                    s.cwnd = s.cwnd.saturating_sub(newly) + mss;
                }
            } else if s.cwnd < s.ssthresh {
                // Slow start, with appropriate byte counting (RFC 3465, L = 1 MSS).
                s.cwnd += newly.min(mss);
            } else {
                // Congestion avoidance: one MSS per window of data acknowledged.
                s.ca_acked += newly;
                if s.ca_acked >= s.cwnd {
                    s.ca_acked -= s.cwnd;
                    s.cwnd += mss;
                }
            }
            if let Some(m) = self.params.max_cwnd {
                s.cwnd = s.cwnd.min(m as u64 * mss);
            }
            s.snd_una = ack;
            s.snd_nxt = s.snd_nxt.max(ack);
            s.dupacks = 0;
            if ack >= size {
                s.done = true;
                s.rto_deadline = Time::MAX;
                self.senders[f.idx()] = Some(s);
                return;
            }
            Self::arm_rto(ctx, f, &mut s);
        } else if ack == s.snd_una && s.snd_una < s.snd_nxt {
            s.dupacks += 1;
            if s.in_recovery {
                // RFC 6582 §3.2 step 4: inflate for each further duplicate.
                s.cwnd += mss;
            } else if s.dupacks == self.params.dupack_threshold && s.snd_una >= s.recover {
                // Fast retransmit; the `recover` guard (RFC 6582 §4.1) avoids
                // a second reduction for losses of the same window.
                let flight = s.snd_nxt - s.snd_una;
                s.ssthresh = (flight / 2).max(2 * mss);
                s.recover = s.max_sent;
                s.in_recovery = true;
                let una = s.snd_una;
                self.send_segment(ctx, f, &mut s, una);
                s.cwnd = s.ssthresh + 3 * mss;
                Self::arm_rto(ctx, f, &mut s);
            }
        }
        self.fill_window(ctx, f, &mut s);
        self.senders[f.idx()] = Some(s);
    }

    fn on_data(&mut self, ctx: &mut Ctx, pkt: Packet, seq: u64) {
        let ack = self.receivers[pkt.flow.idx()].on_data(ctx, &pkt, seq);
        ctx.send(ack);
    }
}

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        if self.params.dctcp_g.is_some() {
            "dctcp"
        } else {
            "tcp"
        }
    }

    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        self.ensure(ctx.n_flows());
        let mss = ctx.format().mss as u64;
        let mut s = Sender {
            snd_una: 0,
            snd_nxt: 0,
            max_sent: 0,
            cwnd: self.params.init_cwnd as u64 * mss,
            ssthresh: u64::MAX,
            ca_acked: 0,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            srtt: None,
            rttvar: 0,
            rto: self.params.initial_rto,
            rto_deadline: Time::MAX,
            timer_at: Time::MAX,
            dctcp: self.params.dctcp_g.map(|g| Dctcp::new(g, 1.0)),
            done: false,
        };
        self.fill_window(ctx, f, &mut s);
        self.senders[f.idx()] = Some(s);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet) {
        match pkt.header {
            Header::TcpData { seq } => self.on_data(ctx, pkt, seq),
            Header::TcpAck { ack } => self.on_ack(ctx, pkt, ack),
            Header::Ctrl { .. } => debug_assert!(false, "TCP got a foreign packet"),
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8) {
        debug_assert_eq!(kind, TIMER_RTO);
        let f = FlowId(id);
        let Some(mut s) = self.senders[f.idx()].take() else {
            return;
        };
        let now = ctx.now();
        if now != s.timer_at {
            // A stale event: a newer one is pending.
            self.senders[f.idx()] = Some(s);
            return;
        }
        s.timer_at = Time::MAX;
        if s.done || s.rto_deadline == Time::MAX || s.snd_una >= s.snd_nxt {
            s.rto_deadline = Time::MAX;
        } else if now < s.rto_deadline {
            s.timer_at = s.rto_deadline;
            ctx.set_timer(s.rto_deadline, id, TIMER_RTO);
        } else {
            // RFC 6298 §5.4–5.7 and RFC 5681 eq. 4: back off, shrink the
            // window to one segment and go back to the first unacked byte.
            let mss = ctx.format().mss as u64;
            let flight = s.snd_nxt - s.snd_una;
            s.ssthresh = (flight / 2).max(2 * mss);
            s.cwnd = mss;
            s.ca_acked = 0;
            s.recover = s.max_sent;
            s.in_recovery = false;
            s.dupacks = 0;
            s.snd_nxt = s.snd_una;
            s.rto = (s.rto.times(2)).min(self.params.max_rto);
            s.rto_deadline = Time::MAX;
            self.fill_window(ctx, f, &mut s);
        }
        self.senders[f.idx()] = Some(s);
    }
}
