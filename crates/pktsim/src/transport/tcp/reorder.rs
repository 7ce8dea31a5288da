//! Host-side pieces that deflecting fabrics need (Vertigo, CoNEXT 2021;
//! Canary uses the same hosts; specs `vertigo.md` §1.1 and §1.4):
//!
//! - **rank marking** at the sender: a data packet carries the bytes of its
//!   message not yet sent counting from this segment (SRPT), halved once
//!   per retransmission so that a flow recovering from loss looks like a
//!   small one (Vertigo's boosting, denominator 2);
//! - an **ordering shim** at the receiver, below TCP: a packet beyond a
//!   gap is held (one timer per flow, `ω`); when the gap fills, the packet
//!   and the held run behind it go up at once; when the timer fires,
//!   everything held goes up in sequence order. Deflection reorders
//!   packets; the shim keeps that from turning into duplicate ACKs and
//!   spurious fast retransmits.
//!
//! Boosting approximates the artifact's per-segment `ret_num`: it counts
//! one halving for a retransmitted segment plus one per retransmission
//! timeout the flow has had (the artifact's flow-level counter, raised by
//! timeout-driven retransmissions after an idle gap longer than δ =
//! 360 µs; every RTO here is at least that long).

use crate::packet::Packet;
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// What a TCP sender writes into [`Packet::prio`] (the rank that
/// rank-aware switch queues read; lower is more urgent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RankMarking {
    /// Nothing (rank 0): rank-blind queues do not care.
    #[default]
    None,
    /// The message's remaining bytes from this segment on, halved per
    /// retransmission (Vertigo and Canary hosts).
    RemainingBytes,
}

impl RankMarking {
    /// The rank of a segment starting at byte `seq` of a `size`-byte
    /// message; `retx`: this segment is a retransmission; `timeouts`: the
    /// flow's retransmission timeouts so far.
    #[inline]
    pub fn rank(self, size: u64, seq: u64, retx: bool, timeouts: u32) -> u32 {
        match self {
            RankMarking::None => 0,
            RankMarking::RemainingBytes => {
                let halvings = (timeouts + retx as u32).min(63);
                let r = size.saturating_sub(seq) >> halvings;
                r.min(u32::MAX as u64) as u32
            }
        }
    }
}

/// The ordering shim's state for one flow's receiver.
#[derive(Clone, Debug)]
pub struct Resequencer {
    /// Held packets with their first byte, sorted by it.
    held: Vec<(u64, Packet)>,
    /// When the held packets go up regardless (`Time::MAX`: none held).
    pub deadline: Time,
}

impl Default for Resequencer {
    fn default() -> Self {
        Resequencer {
            held: Vec::new(),
            deadline: Time::MAX,
        }
    }
}

impl Resequencer {
    /// Hold `pkt` (first byte `seq`), which arrived beyond a gap. A second
    /// copy of a held segment is dropped here (TCP would discard it too).
    /// Returns whether the hold timer must be started (nothing was held).
    pub fn hold(&mut self, seq: u64, pkt: Packet) -> bool {
        let i = self.held.partition_point(|&(s, _)| s < seq);
        if self.held.get(i).is_some_and(|&(s, _)| s == seq) {
            return false;
        }
        self.held.insert(i, (seq, pkt));
        self.deadline == Time::MAX
    }

    /// The first held packet if it starts at or below `rcv_nxt` (now in
    /// order), or any held packet when `flush`.
    pub fn next_ready(&mut self, rcv_nxt: u64, flush: bool) -> Option<(u64, Packet)> {
        let &(seq, _) = self.held.first()?;
        if flush || seq <= rcv_nxt {
            let out = self.held.remove(0);
            if self.held.is_empty() {
                self.deadline = Time::MAX;
            }
            Some(out)
        } else {
            None
        }
    }

    /// Packets held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u64) -> Packet {
        Packet::test_data(0, 1500, seq)
    }

    #[test]
    fn rank_is_remaining_bytes_halved_per_retransmission() {
        let r = RankMarking::RemainingBytes;
        assert_eq!(r.rank(40_000, 0, false, 0), 40_000);
        assert_eq!(r.rank(40_000, 14_600, false, 0), 25_400);
        assert_eq!(r.rank(40_000, 14_600, true, 0), 12_700);
        assert_eq!(r.rank(40_000, 14_600, true, 2), 3_175);
        assert_eq!(r.rank(40_000, 14_600, false, 1), 12_700);
        assert_eq!(RankMarking::None.rank(40_000, 0, true, 3), 0);
        assert_eq!(r.rank(u64::MAX, 0, false, 0), u32::MAX);
    }

    #[test]
    fn holds_beyond_a_gap_and_releases_in_order() {
        let mut rs = Resequencer::default();
        assert!(rs.hold(3000, pkt(3000)), "first hold starts the timer");
        rs.deadline = Time(100);
        assert!(!rs.hold(1500, pkt(1500)));
        assert!(!rs.hold(3000, pkt(3000)), "a duplicate is not held twice");
        assert_eq!(rs.len(), 2);
        // rcv_nxt 0: the gap [0, 1500) is still open.
        assert!(rs.next_ready(0, false).is_none());
        // The gap filled: both go up, in order, and the timer is off.
        assert_eq!(rs.next_ready(1500, false).map(|x| x.0), Some(1500));
        assert_eq!(rs.next_ready(3000, false).map(|x| x.0), Some(3000));
        assert!(rs.is_empty());
        assert_eq!(rs.deadline, Time::MAX);
        // Flushing releases everything whatever rcv_nxt says.
        rs.hold(9000, pkt(9000));
        rs.hold(6000, pkt(6000));
        assert_eq!(rs.next_ready(0, true).map(|x| x.0), Some(6000));
        assert_eq!(rs.next_ready(0, true).map(|x| x.0), Some(9000));
        assert!(rs.next_ready(0, true).is_none());
    }
}
