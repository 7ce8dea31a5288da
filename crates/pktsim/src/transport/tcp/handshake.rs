//! The three-way handshake of the TCP family (`handshake = true`, RFC 9293
//! §3.5): the source sends a SYN at the flow's start (the application's
//! connect, so the FCT includes the handshake), the destination answers
//! with a SYN-ACK, and the source's first data segment carries the ACK that
//! completes it. Both SYN and SYN-ACK are header-sized control packets (as
//! ACKs are) that cross the network like any packet and can be dropped.
//!
//! Timers (RFC 6298 §2.1, §5.5): the SYN is retransmitted when the
//! initial RTO expires and the SYN-ACK likewise, each with exponential
//! back-off (at most `max_rto`). A destination that gets a duplicate SYN
//! while waiting for the handshake's ACK answers it with a SYN-ACK at once,
//! as Linux does (`tcp_check_req`, net/ipv4/tcp_minisocks.c, resends the
//! SYN-ACK of a half-open connection on a retransmitted SYN), unless one
//! already left at that instant; a SYN-ACK after the handshake is ignored
//! (the destination leaves SYN-RECEIVED on the first data, which the
//! source's own timers resend).
//!
//! Not modelled: RFC 5681 §3.1's one-segment initial window after a lost
//! SYN or SYN-ACK (Linux applies it only after more than one handshake
//! retransmission); the window is `init_cwnd` whatever the handshake did.
//!
//! The data RTO (RFC 6298 §5.7): if the SYN's timer expired, "the RTO MUST
//! be re-initialized to 3 seconds when data transmission begins" when the
//! RTO in use is below that; here it starts at max(`initial_rto`,
//! `syn_fallback_rto`) (default 3 s, the RFC's value), clamped to `max_rto`
//! as every RTO is, until the first data ACK gives an RTT sample.
//! Otherwise the SYN-ACK gives the first RTT sample (it echoes the SYN's
//! timestamp, like every ACK here), unless it was itself retransmitted:
//! after any handshake retransmission no sample is taken (Karn's rule, RFC
//! 6298 §3, as a stack without timestamps must), so §5.7's rule holds.
//!
//! ECN (RFC 3168 §6.1.1): where the controller uses ECN, the SYN carries
//! ECE and CWR ("ECN-setup SYN") and an ECN-capable destination answers
//! with ECE alone ("ECN-setup SYN-ACK"); data is ECT only when the
//! SYN-ACK said so. Neither SYN nor SYN-ACK is ECT. The destination here is
//! always ECN-capable, so negotiation succeeds exactly when the source asks.

use crate::time::{Duration, Time};
use crate::transport::host::lazy_timer::LazyTimer;

/// `Header::Ctrl` kind of a SYN.
pub const CTRL_SYN: u8 = 0;
/// `Header::Ctrl` kind of a SYN-ACK.
pub const CTRL_SYNACK: u8 = 1;

/// Where a source's handshake stands, kept by its sender until data may
/// flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connecting {
    /// SYN retransmissions so far (the SYN timer expired this often).
    pub retransmits: u32,
}

/// The destination's side of a handshake (RFC 9293's LISTEN, SYN-RECEIVED
/// and ESTABLISHED, for one flow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PassiveState {
    /// No SYN seen yet.
    #[default]
    Listen,
    /// A SYN-ACK was sent; the handshake's ACK (the first data) is due.
    SynReceived,
    /// Data arrived: the handshake is complete.
    Established,
}

/// The destination's handshake state of one flow.
#[derive(Clone, Copy, Debug)]
pub struct Passive {
    /// Where the handshake stands.
    pub state: PassiveState,
    /// SYN-ACK timer expiries so far (its back-off exponent).
    pub backoff: u32,
    /// Deadline of the SYN-ACK retransmission timer (`Time::MAX`: off).
    pub deadline: Time,
    /// When the last SYN-ACK left (`Time::MAX`: never).
    pub last_sent: Time,
    /// Timestamp of the latest SYN, echoed in SYN-ACKs.
    pub echo: Time,
    /// The SYN asked for ECN (ECE and CWR set).
    pub ecn: bool,
    /// SYN-ACKs sent so far.
    pub sent: u32,
    /// The pending SYN-ACK timer event.
    pub timer: LazyTimer,
}

impl Passive {
    /// The SYN-ACK's RTO: the initial RTO backed off (RFC 6298 §5.5), at
    /// most `max`.
    pub fn rto(&self, initial: Duration, max: Duration) -> Duration {
        let shift = self.backoff.min(40);
        Duration::from_ps(initial.ps().saturating_mul(1u64 << shift)).min(max)
    }
}

impl Default for Passive {
    fn default() -> Self {
        Passive {
            state: PassiveState::Listen,
            backoff: 0,
            deadline: Time::MAX,
            last_sent: Time::MAX,
            echo: Time::ZERO,
            ecn: false,
            sent: 0,
            timer: LazyTimer::IDLE,
        }
    }
}
