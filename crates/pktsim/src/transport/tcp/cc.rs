//! Congestion control: a small trait with no-op (Reno) defaults, reached
//! through one enum, [`Cc`], so the per-ACK path is a `match`, not a
//! virtual call (smoltcp's `AnyController` pattern). A new TCP variant is
//! one file in `transport/tcp/` (its controller, [`CongestionControl`] and
//! [`TcpVariant`]) plus one line in the transport registry, which declares
//! the variant in [`Cc`] and its `protocol` name. [`newreno`], [`dctcp`]
//! and [`cubic`] are the worked examples. A controller outside the registry
//! (a test's) runs through [`super::TcpProtocol::with_controller`].
//!
//! [`newreno`]: super::newreno
//! [`dctcp`]: super::dctcp
//! [`cubic`]: super::cubic
//!
//! The sender owns loss detection and recovery (RFC 5681/6582/6675); the
//! controller only decides how the window grows and how far it is cut.

use crate::error::Result;
use crate::time::{Duration, Time};
use crate::transport::tcp::TcpConfig;

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
    /// The controller's own state variables for the time series, as
    /// `out(name with unit, value)` (e.g. DCTCP's `dctcp_alpha`). Default:
    /// none.
    fn state(&self, _out: &mut dyn FnMut(&'static str, f64)) {}
    /// Whether data packets are ECN-capable (ECT).
    fn ecn(&self) -> bool {
        false
    }
    /// The protocol name runs report. Default: `"tcp"`; the registry's
    /// [`Cc`] answers its line's name.
    fn name(&self) -> &'static str {
        "tcp"
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

/// A TCP variant the registry can build: a controller made from the
/// `[transport]` settings. Each variant's file implements it; its one line
/// in the transport registry (`crate::transport`) adds it to [`Cc`] and to
/// the config's `protocol` names.
pub trait TcpVariant: CongestionControl + Clone + std::fmt::Debug + Sized {
    /// Fill in settings whose default depends on the variant, so that the
    /// resolved config shows the value in use (DCTCP's gain). Default:
    /// nothing.
    fn resolve(_cfg: &mut TcpConfig) {}
    /// The controller every flow of a run starts from (each flow gets a
    /// copy), checked against the settings; errors name the setting.
    fn from_config(cfg: &TcpConfig) -> Result<Self>;
}

/// The controller of every variant in the registry, one enum so that the
/// per-ACK path is a `match` (smoltcp's `AnyController`). It is declared by
/// the transport registry (one line per variant, `crate::transport`).
pub use crate::transport::Cc;

/// Declares [`Cc`] with one variant per registry line and implements
/// [`CongestionControl`] for it by dispatching to the variant's controller.
/// Called by the transport registry only.
macro_rules! declare_cc {
    ($($(#[$doc:meta])* $module:ident :: $cc:ident = $name:literal,)*) => {
        /// Every congestion controller of the TCP family, built from the
        /// config by the registry (see `tcp::cc`).
        #[derive(Clone, Debug)]
        pub enum Cc {
            $($(#[$doc])* $cc(tcp::$module::$cc),)*
        }

        $(impl From<tcp::$module::$cc> for Cc {
            fn from(c: tcp::$module::$cc) -> Self {
                Cc::$cc(c)
            }
        })*

        impl tcp::cc::CongestionControl for Cc {
            #[inline]
            fn on_ack(&mut self, w: &mut tcp::cc::Window, ack: &tcp::cc::AckInfo) {
                match self {
                    $(Cc::$cc(c) => c.on_ack(w, ack),)*
                }
            }
            #[inline]
            fn on_ack_seen(
                &mut self,
                w: &tcp::cc::Window,
                ack: &tcp::cc::AckInfo,
                in_recovery: bool,
            ) -> Option<u64> {
                match self {
                    $(Cc::$cc(c) => c.on_ack_seen(w, ack, in_recovery),)*
                }
            }
            fn ssthresh_on_loss(&mut self, w: &tcp::cc::Window, flight: u64) -> u64 {
                match self {
                    $(Cc::$cc(c) => c.ssthresh_on_loss(w, flight),)*
                }
            }
            fn ssthresh_on_timeout(
                &mut self,
                w: &tcp::cc::Window,
                flight: u64,
                now: crate::time::Time,
            ) -> u64 {
                match self {
                    $(Cc::$cc(c) => c.ssthresh_on_timeout(w, flight, now),)*
                }
            }
            fn on_undo(&mut self) {
                match self {
                    $(Cc::$cc(c) => c.on_undo(),)*
                }
            }
            fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
                match self {
                    $(Cc::$cc(c) => c.state(out),)*
                }
            }
            #[inline]
            fn ecn(&self) -> bool {
                match self {
                    $(Cc::$cc(c) => c.ecn(),)*
                }
            }
            fn name(&self) -> &'static str {
                match self {
                    $(Cc::$cc(_) => $name,)*
                }
            }
        }
    };
}
pub(crate) use declare_cc;
