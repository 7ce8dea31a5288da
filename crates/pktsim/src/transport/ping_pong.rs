//! FastLane's ping-pong throttle at the source (Zats et al., SoCC 2015,
//! talk slides: a retransmission sent at once may be dropped again at the
//! same hotspot, so the source "keeps a counter for every retransmitted
//! packet" and throttles its retransmissions exponentially).
//!
//! The constants are not in the sources; the spec's inferred rule
//! (`fastlane-evidence.md` §6.6) is implemented: the first notice of a
//! segment retransmits it at once; the n-th (n ≥ 2) after
//! `base · 2^(n−2)`, at most `cap` (the flow's RTO); the count is forgotten
//! once the segment is acknowledged.

use crate::time::{Duration, Time};

/// Notice counts and throttled retransmissions of one flow.
#[derive(Clone, Debug, Default)]
pub struct PingPong {
    /// (first byte, notices so far) of notified, unacknowledged segments.
    counts: Vec<(u64, u32)>,
    /// Retransmissions waiting for their throttle: (due, first byte).
    waiting: Vec<(Time, u64)>,
}

impl PingPong {
    /// Count a notice for the segment at `seq`, received at `now`; the time
    /// its retransmission is due.
    pub fn on_notice(&mut self, seq: u64, now: Time, base: Duration, cap: Duration) -> Time {
        let n = match self.counts.iter_mut().find(|(s, _)| *s == seq) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.counts.push((seq, 1));
                1
            }
        };
        if n == 1 {
            return now;
        }
        let shift = (n - 2).min(40);
        let delay = base.ps().saturating_mul(1u64 << shift).min(cap.ps());
        let due = now + Duration::from_ps(delay);
        // One waiting retransmission per segment: the latest notice sets it.
        self.waiting.retain(|&(_, s)| s != seq);
        self.waiting.push((due, seq));
        due
    }

    /// Notices counted for the segment at `seq`.
    pub fn count(&self, seq: u64) -> u32 {
        self.counts
            .iter()
            .find(|(s, _)| *s == seq)
            .map_or(0, |&(_, n)| n)
    }

    /// Everything below `una` is acknowledged: forget it.
    pub fn acked(&mut self, una: u64) {
        if !self.counts.is_empty() {
            self.counts.retain(|&(s, _)| s >= una);
        }
        if !self.waiting.is_empty() {
            self.waiting.retain(|&(_, s)| s >= una);
        }
    }

    /// Forget the waiting retransmissions (a timeout resends everything).
    pub fn clear_waiting(&mut self) {
        self.waiting.clear();
    }

    /// The earliest waiting retransmission's due time.
    pub fn next_due(&self) -> Option<Time> {
        self.waiting.iter().map(|&(t, _)| t).min()
    }

    /// Take the segments due at `now`, earliest first, into `out`.
    pub fn take_due(&mut self, now: Time, out: &mut Vec<u64>) {
        let mut due: Vec<(Time, u64)> = Vec::new();
        self.waiting.retain(|&(t, s)| {
            if t <= now {
                due.push((t, s));
                false
            } else {
                true
            }
        });
        due.sort_unstable();
        out.extend(due.into_iter().map(|(_, s)| s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Time {
        Time::ZERO + Duration::from_us(us)
    }

    #[test]
    fn each_repeated_notice_doubles_the_delay_up_to_the_cap() {
        let mut p = PingPong::default();
        let base = Duration::from_us(10);
        let cap = Duration::from_us(50);
        // First notice: at once. Then 10, 20, 40 us, then the 50 us cap.
        assert_eq!(p.on_notice(7, t(100), base, cap), t(100));
        assert_eq!(p.on_notice(7, t(200), base, cap), t(210));
        assert_eq!(p.on_notice(7, t(300), base, cap), t(320));
        assert_eq!(p.on_notice(7, t(400), base, cap), t(440));
        assert_eq!(p.on_notice(7, t(500), base, cap), t(550));
        assert_eq!(p.count(7), 5);
        // Another segment has its own counter.
        assert_eq!(p.on_notice(9, t(500), base, cap), t(500));
        let mut out = Vec::new();
        p.take_due(t(549), &mut out);
        assert!(out.is_empty(), "the single waiting one is due at 550 us");
        p.take_due(t(550), &mut out);
        assert_eq!(out, vec![7]);
        // An acknowledgement resets the count.
        p.acked(8);
        assert_eq!(p.count(7), 0);
        assert_eq!(p.count(9), 1);
        assert_eq!(p.on_notice(7, t(600), base, cap), t(600));
    }
}
