//! Round-trip time estimation and the retransmission timeout (RFC 6298),
//! sampled once per round trip as RFC 7323 Appendix G recommends when every
//! ACK carries a timestamp.
//!
//! RFC 6298's gains (α = 1/8, β = 1/4) assume about one sample per RTT. With
//! an echoed timestamp on every ACK, feeding every sample would shrink RTTVAR
//! (consecutive samples of one window are nearly equal) until RTO ≈ SRTT.
//! Appendix G scales the gains by the samples expected per RTT; taking one
//! sample per window of data, as done here, is the same rule in its simplest
//! form.

use crate::time::{Duration, Time};

/// SRTT, RTTVAR, the backed-off RTO and the minimum RTT of one flow.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
    min_rtt: u64,
    /// RTO from the estimator (before backoff), clamped.
    base_rto: Duration,
    /// Consecutive timeouts without a new RTT sample (RFC 6298 §5.5).
    backoff: u32,
    /// The next sample is taken from the first ACK above this sequence.
    sample_after: u64,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    /// An estimator before any sample: RTO = `initial` (RFC 6298 §2.1).
    pub fn new(initial: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            min_rtt: u64::MAX,
            base_rto: initial.min(max_rto),
            backoff: 0,
            sample_after: 0,
            min_rto,
            max_rto,
        }
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration)
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        Duration(self.rttvar)
    }

    /// Smallest RTT seen.
    pub fn min_rtt(&self) -> Option<Duration> {
        (self.min_rtt != u64::MAX).then_some(Duration(self.min_rtt))
    }

    /// Timeouts since the last new sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The current RTO, backed off: RTO·2^backoff, at most `max_rto`
    /// (RFC 6298 §5.5, §2.5).
    pub fn rto(&self) -> Duration {
        let shift = self.backoff.min(40);
        Duration(self.base_rto.ps().saturating_mul(1u64 << shift)).min(self.max_rto)
    }

    /// An ACK that acknowledged new data up to `ack`, echoing the timestamp
    /// `echo`, arrived at `now`; `snd_max` is the highest byte sent. Takes a
    /// sample if this ACK closes the current round trip. Returns whether it
    /// did.
    pub fn on_ack(&mut self, now: Time, echo: Time, ack: u64, snd_max: u64) -> bool {
        let r = now.ps().saturating_sub(echo.ps()).max(1);
        self.min_rtt = self.min_rtt.min(r);
        if ack <= self.sample_after && self.srtt.is_some() {
            return false;
        }
        self.sample_after = snd_max;
        match self.srtt {
            // RFC 6298 §2.2: first measurement.
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            // RFC 6298 §2.3, with β = 1/4 and α = 1/8 (RTTVAR first).
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(r)) / 4;
                self.srtt = Some((7 * srtt + r) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        // RFC 6298 §2.3: RTO = SRTT + max(G, 4·RTTVAR); G is 1 ps here.
        self.base_rto = Duration(srtt + (4 * self.rttvar).max(1))
            .max(self.min_rto)
            .min(self.max_rto);
        // RFC 6298 §5.7: a new sample after backoff ends the backoff.
        self.backoff = 0;
        true
    }

    /// Start over from RTO = `rto` (at most the maximum), without a
    /// sample and without back-off: RFC 6298 §5.7's re-initialisation when
    /// data follows a retransmitted SYN.
    pub fn restart(&mut self, rto: Duration) {
        self.base_rto = rto.min(self.max_rto);
        self.backoff = 0;
    }

    /// New data was acknowledged: the backoff ends (RFC 6298 §5.7 with a
    /// valid timestamp sample, RFC 7323 §4.1).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// The retransmission timer expired: double the RTO (RFC 6298 §5.5).
    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_round_trip_keeps_rttvar() {
        let us = Duration::from_us;
        let mut e = RttEstimator::new(us(1000), us(1), Duration::from_ms(100));
        // First window: the first ACK samples 100 us.
        assert!(e.on_ack(Time::ZERO + us(100), Time::ZERO, 1000, 10_000));
        assert_eq!(e.srtt(), Some(us(100)));
        assert_eq!(e.rttvar(), us(50));
        assert_eq!(e.rto(), us(300));
        // Nine more ACKs of that window: no samples.
        for i in 2..=10 {
            assert!(!e.on_ack(Time::ZERO + us(100), Time::ZERO, i * 1000, 10_000));
        }
        assert_eq!(e.rttvar(), us(50));
        // The next window's first ACK samples again.
        assert!(e.on_ack(Time::ZERO + us(200), Time::ZERO + us(100), 11_000, 20_000));
        assert_eq!(e.rttvar(), Duration::from_ps(37_500_000));
        assert_eq!(e.rto(), us(250));
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let us = Duration::from_us;
        let mut e = RttEstimator::new(us(300), us(200), us(1000));
        e.on_timeout();
        assert_eq!(e.rto(), us(600));
        e.on_timeout();
        assert_eq!(e.rto(), us(1000));
        e.reset_backoff();
        assert_eq!(e.rto(), us(300));
    }
}
