//! Congestion control: a small trait with no-op (Reno) defaults, reached
//! through an enum so the per-ACK path is a `match`, not a virtual call
//! (smoltcp's `AnyController` pattern). A new TCP variant is one file here
//! plus one variant in [`Cc`].
//!
//! The sender owns loss detection and recovery (RFC 5681/6582/6675); the
//! controller only decides how the window grows and how far it is cut.

use crate::time::{Duration, Time};
use crate::transport::tcp::cubic::Cubic;
use crate::transport::tcp::dctcp::Dctcp;
use crate::transport::tcp::newreno::NewReno;

/// The window a controller acts on, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window.
    pub cwnd: u64,
    /// Slow-start threshold.
    pub ssthresh: u64,
    /// Sender maximum segment size.
    pub mss: u64,
}

/// What a controller may know about an acknowledgement.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    /// Arrival time.
    pub now: Time,
    /// Bytes newly acknowledged.
    pub acked: u64,
    /// The ACK carried ECN-Echo.
    pub ece: bool,
    /// Cumulative ACK after this one.
    pub snd_una: u64,
    /// Highest byte sent + 1.
    pub snd_max: u64,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// Smallest RTT seen.
    pub min_rtt: Option<Duration>,
}

/// Growth and reduction rules of one TCP variant.
pub trait CongestionControl {
    /// Grow the window for an ACK of new data outside loss recovery, when
    /// the sender was limited by cwnd. Default: RFC 5681 slow start with
    /// appropriate byte counting (RFC 3465, L = 1 MSS), then one MSS per
    /// window of data in congestion avoidance.
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        reno_increase(w, ack.acked, &mut 0);
    }
    /// Every ACK (also during recovery), before loss handling. Returns a
    /// new ssthresh to cut to (ECN reaction), if any. Default: nothing.
    fn on_ack_seen(&mut self, _w: &Window, _ack: &AckInfo, _in_recovery: bool) -> Option<u64> {
        None
    }
    /// Loss detected by duplicate ACKs or SACK: the new ssthresh. Default:
    /// RFC 5681 eq. 4, max(FlightSize/2, 2·MSS).
    fn ssthresh_on_loss(&mut self, w: &Window, flight: u64) -> u64 {
        (flight / 2).max(2 * w.mss)
    }
    /// A retransmission timeout (the first of a series): the new ssthresh.
    /// Default: as for a loss.
    fn ssthresh_on_timeout(&mut self, w: &Window, flight: u64, _now: Time) -> u64 {
        self.ssthresh_on_loss(w, flight)
    }
    /// A timeout or loss reduction was undone (spurious, RFC 4015).
    fn on_undo(&mut self) {}
    /// Whether data packets are ECN-capable (ECT).
    fn ecn(&self) -> bool {
        false
    }
}

/// RFC 5681 slow start / congestion avoidance; `ca_acked` counts bytes
/// acknowledged in congestion avoidance since the last increase.
pub fn reno_increase(w: &mut Window, acked: u64, ca_acked: &mut u64) {
    if w.cwnd < w.ssthresh {
        w.cwnd += acked.min(w.mss);
    } else {
        *ca_acked += acked;
        if *ca_acked >= w.cwnd {
            *ca_acked -= w.cwnd;
            w.cwnd += w.mss;
        }
    }
}

/// Every congestion controller of the TCP family.
#[derive(Clone, Debug)]
pub enum Cc {
    /// RFC 5681 / 6582 Reno growth.
    NewReno(NewReno),
    /// DCTCP (RFC 8257).
    Dctcp(Dctcp),
    /// CUBIC (RFC 9438).
    Cubic(Cubic),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Cc::NewReno($c) => $e,
            Cc::Dctcp($c) => $e,
            Cc::Cubic($c) => $e,
        }
    };
}

impl CongestionControl for Cc {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        dispatch!(self, c => c.on_ack(w, ack))
    }
    #[inline]
    fn on_ack_seen(&mut self, w: &Window, ack: &AckInfo, in_recovery: bool) -> Option<u64> {
        dispatch!(self, c => c.on_ack_seen(w, ack, in_recovery))
    }
    fn ssthresh_on_loss(&mut self, w: &Window, flight: u64) -> u64 {
        dispatch!(self, c => c.ssthresh_on_loss(w, flight))
    }
    fn ssthresh_on_timeout(&mut self, w: &Window, flight: u64, now: Time) -> u64 {
        dispatch!(self, c => c.ssthresh_on_timeout(w, flight, now))
    }
    fn on_undo(&mut self) {
        dispatch!(self, c => c.on_undo())
    }
    #[inline]
    fn ecn(&self) -> bool {
        dispatch!(self, c => c.ecn())
    }
}
