//! CUBIC (RFC 9438, formerly RFC 8312): after a reduction the window grows
//! along W(t) = C·(t − K)³ + W_max, concave up to the window of the last
//! loss and convex beyond it, never slower than a Reno flow would
//! (the Reno-friendly region).
//!
//! Constants (RFC 9438 §4.1, §5): β = 0.7, C = 0.4 segments/s³, fast
//! convergence on. Windows here are in bytes; the curve is evaluated in
//! segments, as the RFC writes it. Not modelled: HyStart (slow start is
//! standard), the idle-restart epoch shift.

use crate::error::Result;
use crate::time::Time;
use crate::transport::tcp::cc::{reno_increase, AckInfo, CongestionControl, TcpVariant, Window};
use crate::transport::tcp::TcpConfig;

/// RFC 9438 §4.6: multiplicative decrease factor.
pub const BETA: f64 = 0.7;
/// RFC 9438 §5: cubic scaling constant, segments per second cubed.
pub const C: f64 = 0.4;

/// CUBIC state of one flow.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// Window before the last reduction, segments (0: none yet).
    pub w_max: f64,
    /// W_max before the last reduction (fast convergence, RFC 9438 §4.7).
    w_last_max: f64,
    /// Start of the current congestion-avoidance epoch.
    pub epoch_start: Option<Time>,
    /// Time from the epoch start to reach `origin`, seconds.
    pub k: f64,
    /// The plateau of the current curve, segments.
    origin: f64,
    /// Reno-friendly estimate W_est, segments (RFC 9438 §4.3).
    w_est: f64,
    /// Fractional bytes of growth not yet added to cwnd.
    carry: f64,
    /// Slow-start byte counter for the shared Reno rule.
    ca_acked: u64,
    /// State before the last reduction, for undo.
    saved: Option<(f64, f64)>,
}

impl Cubic {
    /// W_cubic(t) in segments for `t` seconds into the epoch.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.origin
    }

    /// A reduction (loss, ECE or timeout) from a window of `cwnd_seg`
    /// segments: remember W_max with fast convergence and end the epoch.
    fn reduce(&mut self, cwnd_seg: f64) {
        self.saved = Some((self.w_max, self.w_last_max));
        // RFC 9438 §4.7: a flow that lost at a smaller window than before
        // releases bandwidth for newcomers.
        if cwnd_seg < self.w_last_max {
            self.w_last_max = cwnd_seg;
            self.w_max = cwnd_seg * (1.0 + BETA) / 2.0;
        } else {
            self.w_last_max = cwnd_seg;
            self.w_max = cwnd_seg;
        }
        self.epoch_start = None;
    }
}

impl CongestionControl for Cubic {
    fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cubic_w_max_segments", self.w_max);
    }

    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        if w.cwnd < w.ssthresh {
            reno_increase(w, ack.acked, &mut self.ca_acked);
            return;
        }
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 §4.2: a new epoch. K = cbrt((W_max − cwnd)/C), or 0
            // with the current window as plateau when above W_max.
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / C).cbrt();
                self.origin = self.w_max;
            } else {
                self.k = 0.0;
                self.origin = cwnd;
            }
            self.w_est = cwnd;
            ack.now
        });
        let rtt = ack.srtt.or(ack.min_rtt).map_or(0.0, |d| d.as_secs_f64());
        let t = (ack.now - start).as_secs_f64();
        let acked_seg = ack.acked as f64 / mss;
        // RFC 9438 §4.3: W_est grows by α_cubic per window, α = 3(1−β)/(1+β),
        // and by 1 once it passed W_max.
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        };
        self.w_est += alpha * acked_seg / cwnd;
        let cubic_now = self.w_cubic(t);
        let growth = if cubic_now < self.w_est {
            // Reno-friendly region: follow W_est.
            (self.w_est - cwnd).max(0.0)
        } else {
            // RFC 9438 §4.4–4.5: aim at W_cubic(t + RTT), within
            // [cwnd, 1.5·cwnd], growing (target − cwnd)/cwnd per segment.
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            (target - cwnd) / cwnd * acked_seg
        };
        self.carry += growth * mss;
        let whole = self.carry.floor();
        self.carry -= whole;
        w.cwnd += whole as u64;
    }

    fn ssthresh_on_loss(&mut self, w: &Window, _flight: u64) -> u64 {
        // RFC 9438 §4.6: ssthresh = cwnd·β (at least 2 segments).
        self.reduce(w.cwnd as f64 / w.mss as f64);
        self.carry = 0.0;
        ((w.cwnd as f64 * BETA) as u64).max(2 * w.mss)
    }

    fn ssthresh_on_timeout(&mut self, w: &Window, flight: u64, _now: Time) -> u64 {
        // RFC 9438 §4.8: ssthresh as for a loss; the first epoch after the
        // timeout starts with K = 0 at the window reached then.
        let s = self.ssthresh_on_loss(w, flight);
        self.w_max = 0.0;
        s
    }

    fn on_undo(&mut self) {
        if let Some((w_max, w_last_max)) = self.saved.take() {
            self.w_max = w_max;
            self.w_last_max = w_last_max;
        }
        self.epoch_start = None;
    }
}

/// `protocol = "cubic"`: RFC 9438's constants, no settings of its own.
impl TcpVariant for Cubic {
    fn from_config(cfg: &TcpConfig) -> Result<Self> {
        cfg.no_gain()?;
        Ok(Cubic::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    /// Drive one flow through a loss at 1000 segments and then one full
    /// window of ACKs per RTT (100 ms); the window must follow
    /// W(t) = C·(t − K)³ + W_max with K = cbrt(W_max·(1 − β)/C).
    #[test]
    fn window_follows_the_cubic_curve_after_a_loss() {
        let mss = 1000u64;
        let rtt = Duration::from_ms(100);
        let mut cc = Cubic::default();
        let mut w = Window {
            cwnd: 1000 * mss,
            ssthresh: u64::MAX,
            mss,
        };
        w.ssthresh = cc.ssthresh_on_loss(&w, w.cwnd);
        w.cwnd = w.ssthresh;
        assert_eq!(w.cwnd, 700 * mss);
        let k = (1000.0 * (1.0 - BETA) / C).cbrt();
        let t0 = Time::ZERO + Duration::from_ms(1);
        let mut now = t0;
        let mut checks = Vec::new();
        for round in 0..200u64 {
            // One window of ACKs, spread over the RTT.
            let n = w.cwnd / mss;
            for i in 0..n {
                let at = now + Duration::from_ps(rtt.ps() * i / n);
                let info = AckInfo {
                    now: at,
                    acked: mss,
                    ece: false,
                    snd_una: 0,
                    snd_max: 0,
                    srtt: Some(rtt),
                    min_rtt: Some(rtt),
                };
                cc.on_ack(&mut w, &info);
            }
            now += rtt;
            if [40, 80, 120].contains(&round) {
                let t = (now - t0).as_secs_f64();
                checks.push((t, w.cwnd as f64 / mss as f64));
            }
        }
        assert!((cc.k - k).abs() < 1e-9, "K = {} vs {k}", cc.k);
        for (t, got) in checks {
            // The window aims one RTT ahead: W(t + RTT) at most.
            let lo = C * (t - k).powi(3) + 1000.0;
            let hi = C * (t + rtt.as_secs_f64() - k).powi(3) + 1000.0;
            assert!(
                got >= lo - 2.0 && got <= hi + 2.0,
                "t = {t:.2} s: cwnd {got:.1} segments, curve {lo:.1}..{hi:.1}"
            );
        }
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mss = 1000;
        let mut cc = Cubic::default();
        let w = Window {
            cwnd: 100 * mss,
            ssthresh: 0,
            mss,
        };
        cc.ssthresh_on_loss(&w, 0);
        assert_eq!(cc.w_max, 100.0);
        let w2 = Window {
            cwnd: 80 * mss,
            ..w
        };
        cc.ssthresh_on_loss(&w2, 0);
        assert!((cc.w_max - 80.0 * 0.85).abs() < 1e-9);
    }
}
