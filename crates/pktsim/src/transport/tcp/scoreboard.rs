//! The SACK scoreboard of one sender (RFC 2018 blocks, RFC 6675 rules).
//!
//! It holds the byte ranges above `snd_una` that the receiver reported in
//! SACK blocks, sorted and disjoint. From them it answers RFC 6675's three
//! questions: is a segment lost (`IsLost`), how much data is in the network
//! (`SetPipe`), and which segment goes next in recovery (`NextSeg`).
//! Segments start at multiples of the MSS (the sender never re-segments), so
//! the rules work on MSS-aligned segments.

use crate::transport::receiver::insert_range;

/// SACKed ranges above the cumulative ACK.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    /// SACKed byte ranges [start, end), sorted and disjoint, all above snd_una.
    ranges: Vec<(u64, u64)>,
    /// Total bytes in `ranges`.
    sacked: u64,
}

impl Scoreboard {
    /// Whether nothing is SACKed.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Total SACKed bytes above the cumulative ACK.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked
    }

    /// Highest SACKed byte + 1 (0 when nothing is SACKed).
    pub fn highest_sacked(&self) -> u64 {
        self.ranges.last().map_or(0, |r| r.1)
    }

    /// Record a SACK block [a, b). Returns whether it added new bytes.
    pub fn add(&mut self, a: u64, b: u64, snd_una: u64) -> bool {
        let a = a.max(snd_una);
        if b <= a {
            return false;
        }
        let before = self.sacked;
        insert_range(&mut self.ranges, a, b);
        self.sacked = self.ranges.iter().map(|r| r.1 - r.0).sum();
        self.sacked > before
    }

    /// The cumulative ACK moved to `snd_una`: forget what it covers.
    pub fn advance(&mut self, snd_una: u64) {
        let k = self.ranges.partition_point(|r| r.1 <= snd_una);
        if k > 0 {
            self.ranges.drain(..k);
        }
        if let Some(r) = self.ranges.first_mut() {
            r.0 = r.0.max(snd_una);
        }
        self.sacked = self.ranges.iter().map(|r| r.1 - r.0).sum();
    }

    /// Forget everything (the flow ended).
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.sacked = 0;
    }

    /// Whether [a, b) is entirely SACKed.
    pub fn is_sacked(&self, a: u64, b: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= a);
        self.ranges.get(i).is_some_and(|r| r.0 <= a && b <= r.1)
    }

    /// SACKed bytes at or above `x`.
    fn sacked_above(&self, x: u64) -> u64 {
        self.ranges
            .iter()
            .rev()
            .take_while(|r| r.1 > x)
            .map(|r| r.1 - r.0.max(x))
            .sum()
    }

    /// SACKed bytes inside [a, b).
    fn sacked_in(&self, a: u64, b: u64) -> u64 {
        self.ranges
            .iter()
            .filter(|r| r.1 > a && r.0 < b)
            .map(|r| r.1.min(b) - r.0.max(a))
            .sum()
    }

    /// RFC 6675 `IsLost(seq)` for the segment [seq, end): more than
    /// (DupThresh − 1)·MSS bytes are SACKed above it.
    pub fn is_lost(&self, end: u64, dupthresh: u32, mss: u64) -> bool {
        self.sacked_above(end) > (dupthresh as u64 - 1) * mss
    }

    /// The end of the lost region: every unSACKed segment that ends at or
    /// below the returned sequence number is lost by `IsLost` (0 if none).
    pub fn lost_edge(&self, snd_una: u64, dupthresh: u32, mss: u64) -> u64 {
        let t = (dupthresh as u64 - 1) * mss;
        let mut acc = 0;
        for &(a, b) in self.ranges.iter().rev() {
            if acc + (b - a) > t {
                // sacked_above(x) > t exactly for x < b − (t − acc).
                let x = b - (t - acc) - 1;
                // Segments are MSS-aligned relative to 0: round down to one's end.
                let e = x / mss * mss;
                return e.max(snd_una);
            }
            acc += b - a;
        }
        snd_una
    }

    /// RFC 6675 `SetPipe`: bytes in the network among [snd_una, high_data),
    /// counting unSACKed bytes not deemed lost once, and unSACKed bytes
    /// below `high_rxt` (retransmitted) once more.
    pub fn pipe(
        &self,
        snd_una: u64,
        high_data: u64,
        high_rxt: u64,
        dupthresh: u32,
        mss: u64,
    ) -> u64 {
        let unsacked = |a: u64, b: u64| {
            if b <= a {
                0
            } else {
                (b - a) - self.sacked_in(a, b)
            }
        };
        let lost_end = self.lost_edge(snd_una, dupthresh, mss).min(high_data);
        let outstanding = unsacked(snd_una, high_data) - unsacked(snd_una, lost_end);
        let retransmitted = unsacked(snd_una, high_rxt.min(high_data));
        outstanding + retransmitted
    }

    /// RFC 6675 `NextSeg` rules 1 and 3: the first unSACKed segment start at
    /// or above `from` and below the highest SACKed byte, and whether it is
    /// lost (rule 1) or only a candidate for rule 3.
    pub fn next_hole(&self, from: u64, dupthresh: u32, mss: u64) -> Option<(u64, bool)> {
        let top = self.highest_sacked();
        let mut s = from;
        while s < top {
            let i = self.ranges.partition_point(|r| r.1 <= s);
            match self.ranges.get(i) {
                Some(r) if r.0 <= s => s = r.1,
                _ => {
                    let lost = self.is_lost(s + mss, dupthresh, mss);
                    return Some((s, lost));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1000;

    #[test]
    fn lost_needs_three_segments_sacked_above() {
        let mut sb = Scoreboard::default();
        // Segment 0 missing; 1 and 2 SACKed: not lost yet.
        sb.add(M, 3 * M, 0);
        assert!(!sb.is_lost(M, 3, M));
        assert_eq!(sb.lost_edge(0, 3, M), 0);
        // A third SACKed segment makes segment 0 lost, not segment 4.
        sb.add(3 * M, 4 * M, 0);
        assert!(sb.is_lost(M, 3, M));
        assert_eq!(sb.lost_edge(0, 3, M), M);
        assert_eq!(sb.next_hole(0, 3, M), Some((0, true)));
        assert_eq!(sb.next_hole(M, 3, M), None);
    }

    #[test]
    fn pipe_counts_outstanding_and_retransmitted() {
        let mut sb = Scoreboard::default();
        // 10 segments sent; 0 and 2 lost, 1 and 3..=6 SACKed, 7..=9 in flight.
        sb.add(M, 2 * M, 0);
        sb.add(3 * M, 7 * M, 0);
        assert_eq!(sb.sacked_bytes(), 5 * M);
        // Lost: 0 and 2 (≥ 3 segments SACKed above each); 7..9 outstanding.
        assert_eq!(sb.lost_edge(0, 3, M), 4 * M);
        assert_eq!(sb.pipe(0, 10 * M, 0, 3, M), 3 * M);
        // After retransmitting segment 0 (HighRxt = 1000) it counts again.
        assert_eq!(sb.pipe(0, 10 * M, M, 3, M), 4 * M);
        assert_eq!(sb.next_hole(M, 3, M), Some((2 * M, true)));
        // The cumulative ACK covers 0..2: only segment 2 stays a hole.
        sb.advance(2 * M);
        assert_eq!(sb.sacked_bytes(), 4 * M);
        assert!(sb.is_sacked(3 * M, 7 * M));
        assert!(!sb.is_sacked(2 * M, 3 * M));
    }
}
