//! DCTCP's sender-side estimator (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! The receiver echoes every CE mark exactly (one ACK per packet, ECE = CE of
//! the packet acknowledged). Once per window of data the sender updates
//! α ← (1 − g)·α + g·F, F being the fraction of acknowledged bytes that were
//! marked; on ECE it cuts the window once per window: cwnd ← cwnd·(1 − α/2).
//!
//! During loss recovery α is still updated but ECE does not cut: the
//! loss-based ssthresh (RFC 8257 §3.5: react to loss as NewReno) stands.

use crate::error::{Error, Result};
use crate::transport::tcp::cc::{reno_increase, AckInfo, CongestionControl, TcpVariant, Window};
use crate::transport::tcp::TcpConfig;

/// DCTCP's default gain g = 1/16 (RFC 8257 §4.2).
pub const DEFAULT_G: f64 = 1.0 / 16.0;

/// DCTCP state of one flow.
#[derive(Clone, Debug)]
pub struct Dctcp {
    /// Estimate of the fraction of marked bytes, in [0, 1].
    pub alpha: f64,
    g: f64,
    acked: u64,
    marked: u64,
    /// α is next updated when `snd_una` passes this sequence number.
    window_end: u64,
    /// No further cut until `snd_una` passes this (one cut per window).
    cwr_end: u64,
    /// Reno growth: bytes acknowledged in congestion avoidance.
    ca_acked: u64,
}

impl Dctcp {
    /// A new estimator; Linux starts α at 1 (RFC 8257 §3.3 allows that).
    pub fn new(g: f64, alpha0: f64) -> Self {
        Dctcp {
            alpha: alpha0,
            g,
            acked: 0,
            marked: 0,
            window_end: 0,
            cwr_end: 0,
            ca_acked: 0,
        }
    }

    /// Account an ACK that newly acknowledged `newly` bytes, with ECE or not.
    /// `snd_una` is after the ACK, `snd_nxt` the next byte to send. Returns
    /// whether the window should be cut now.
    pub fn observe(&mut self, newly: u64, ece: bool, snd_una: u64, snd_nxt: u64) -> bool {
        self.acked += newly;
        if ece {
            self.marked += newly;
        }
        if snd_una >= self.window_end && self.acked > 0 {
            // RFC 8257 §3.3: one update per window of data.
            let f = self.marked as f64 / self.acked as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            self.acked = 0;
            self.marked = 0;
            self.window_end = snd_nxt;
        }
        if ece && snd_una >= self.cwr_end {
            self.cwr_end = snd_nxt;
            return true;
        }
        false
    }

    /// The reduced window: cwnd·(1 − α/2), at least `floor`.
    pub fn reduced(&self, cwnd: u64, floor: u64) -> u64 {
        let cut = (cwnd as f64 * self.alpha / 2.0) as u64;
        cwnd.saturating_sub(cut).max(floor)
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        reno_increase(w, ack.acked, &mut self.ca_acked);
    }

    fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("dctcp_alpha", self.alpha);
    }

    fn on_ack_seen(&mut self, w: &Window, ack: &AckInfo, in_recovery: bool) -> Option<u64> {
        let cut = Dctcp::observe(self, ack.acked, ack.ece, ack.snd_una, ack.snd_max);
        // RFC 8257 §3.4 cut, but never inside loss recovery: there the
        // loss-based ssthresh already holds (RFC 8257 §3.5).
        (cut && !in_recovery).then(|| {
            self.ca_acked = 0;
            self.reduced(w.cwnd, 2 * w.mss)
        })
    }

    fn ecn(&self) -> bool {
        true
    }
}

/// `protocol = "dctcp"`: the gain `g` (default 1/16), α starting at 1.
impl TcpVariant for Dctcp {
    /// The resolved config shows the gain in use.
    fn resolve(cfg: &mut TcpConfig) {
        cfg.g.get_or_insert(DEFAULT_G);
    }

    fn from_config(cfg: &TcpConfig) -> Result<Self> {
        let g = cfg.g.unwrap_or(DEFAULT_G);
        if !(g > 0.0 && g <= 1.0) {
            return Err(Error::config(
                "transport.g",
                format!("must be in (0, 1], got {g}"),
            ));
        }
        Ok(Dctcp::new(g, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_converges_to_marked_fraction() {
        let mut d = Dctcp::new(1.0 / 16.0, 1.0);
        // Every window: 10 packets, 3 marked.
        let mut una = 0;
        for w in 0..200u64 {
            for i in 0..10u64 {
                una += 1000;
                d.observe(1000, i < 3, una, (w + 2) * 10_000);
            }
        }
        assert!((d.alpha - 0.3).abs() < 0.02, "alpha = {}", d.alpha);
    }

    #[test]
    fn cuts_once_per_window_by_alpha_over_two() {
        let mut d = Dctcp::new(1.0 / 16.0, 1.0);
        assert!(d.observe(1000, true, 1000, 10_000));
        assert!(
            !d.observe(1000, true, 2000, 10_000),
            "second cut in the same window"
        );
        assert!(d.observe(1000, true, 10_000, 20_000));
        let mut half = Dctcp::new(1.0 / 16.0, 0.5);
        half.alpha = 0.5;
        assert_eq!(half.reduced(40_000, 2920), 30_000);
        assert_eq!(half.reduced(4000, 2920), 3000);
        assert_eq!(half.reduced(3000, 2920), 2920);
    }

    #[test]
    fn no_ece_cut_during_loss_recovery() {
        let w = Window {
            cwnd: 40_000,
            ssthresh: 20_000,
            mss: 1000,
        };
        let info = |una: u64| AckInfo {
            now: crate::time::Time::ZERO,
            acked: 1000,
            ece: true,
            snd_una: una,
            snd_max: 50_000,
            srtt: None,
            min_rtt: None,
        };
        let mut d = Dctcp::new(1.0 / 16.0, 1.0);
        // In recovery: α is updated, the loss-based ssthresh stands.
        assert_eq!(d.on_ack_seen(&w, &info(1000), true), None);
        // After recovery, the next window's ECE cuts by α/2.
        let mut d = Dctcp::new(1.0 / 16.0, 1.0);
        assert_eq!(d.on_ack_seen(&w, &info(1000), false), Some(20_000));
    }
}
