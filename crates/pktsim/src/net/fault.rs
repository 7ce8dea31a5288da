//! Scheduled changes to the network (issue 32): links and switches that go
//! down and come back, links that change rate or delay, links that lose a
//! share of their packets (gray failures). The experiment file names them
//! (`[[event]]`) and the config resolves them to ports and nodes; here they
//! are, in time order, with when routing learns of them.
//!
//! What a change does is the network's (`network::faults`): a link that
//! goes down loses the packets queued for it and on its wire
//! ([`crate::metrics::DropReason::LinkDown`]) and refuses every packet
//! offered while down; routing avoids it once the failure is detected
//! ([`Detection`]); a lossy link loses each packet it carries with its
//! probability, drawn from a named stream so a rerun loses the same ones.

use crate::packet::{NodeId, PortId};
use crate::time::{Duration, Rate, Time};

/// The hop count a packet lost on the wire of a link that went down
/// carries until its arrival, where it is counted and discarded: the
/// receiving side learns of the loss when the packet would have arrived.
pub(crate) const LOST_TO_LINK_DOWN: u8 = u8::MAX;
/// The hop count of a packet a lossy link lost (counted on arrival too).
pub(crate) const LOST_TO_LINK_LOSS: u8 = u8::MAX - 1;
/// The smallest hop count that marks a lost packet: real hop counts stay
/// below it ([`MAX_HOP_LIMIT`]).
pub(crate) const LOST_MARK: u8 = LOST_TO_LINK_LOSS;
/// The largest `[network] hop_limit`: the counts above it mark lost packets.
pub const MAX_HOP_LIMIT: u8 = 250;

/// What happens to a link (both of its directions unless the event says
/// one) or to a switch (all of its links) at a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkChange {
    /// The link (or switch) fails.
    Down,
    /// The link (or switch) recovers.
    Up,
    /// The link trains to another rate.
    Rate(Rate),
    /// The link's propagation delay changes.
    Delay(Duration),
    /// The link loses each packet with this probability, scaled to 2^64
    /// (`threshold / 2^64`), drawing from the stream `stream` (a hash of
    /// the run's seed and the stream's name).
    Loss {
        /// Probability times 2^64 (0: lossless).
        threshold: u64,
        /// The stream's key.
        stream: u64,
    },
}

impl LinkChange {
    /// Whether routing learns of this change: only failures and recoveries
    /// change which links exist.
    pub fn changes_routes(self) -> bool {
        matches!(self, LinkChange::Down | LinkChange::Up)
    }
}

/// One scheduled change, resolved to the ports and switches it touches.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultStep {
    /// When it takes effect.
    pub at: Time,
    /// The ports (link directions) it changes.
    pub ports: Vec<PortId>,
    /// The switches it takes down or brings back (with all their links).
    pub switches: Vec<NodeId>,
    /// The change.
    pub change: LinkChange,
    /// What it is, in words, for the summary and the report.
    pub what: String,
}

/// When routing learns that links failed or recovered
/// (`[network] failure_detection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Detection {
    /// At the instant of the change.
    #[default]
    Instant,
    /// This long after it.
    After(Duration),
    /// Never: routes stay as they were built.
    Never,
}

/// What a moment of the plan does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// Apply step `i` to the network.
    Apply(u32),
    /// Routing learns of step `i` (the links as step `i` left them).
    Learn(u32),
}

/// The scheduled changes of a run and when routing learns of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultPlan {
    /// The steps, in time order (file order within an instant).
    pub steps: Vec<FaultStep>,
    /// When routing learns of failures and recoveries.
    pub detection: Detection,
}

impl FaultPlan {
    /// The plan's moments in the order the run takes them: by time, a
    /// step's application before routing learns of it at the same instant,
    /// then by step. Each is one event of the run.
    pub fn actions(&self) -> Vec<(Time, FaultAction)> {
        let mut out = Vec::with_capacity(self.steps.len() * 2);
        for (i, s) in self.steps.iter().enumerate() {
            let i = i as u32;
            out.push((s.at, FaultAction::Apply(i)));
            if !s.change.changes_routes() {
                continue;
            }
            match self.detection {
                Detection::Instant => out.push((s.at, FaultAction::Learn(i))),
                Detection::After(d) => out.push((s.at + d, FaultAction::Learn(i))),
                Detection::Never => {}
            }
        }
        let key = |a: &(Time, FaultAction)| match a.1 {
            FaultAction::Apply(i) => (a.0, i, 0),
            FaultAction::Learn(i) => (a.0, i, 1),
        };
        out.sort_by_key(key);
        out
    }

    /// The shortest link delay any step sets (a partitioned run's window
    /// must not be longer).
    pub fn shortest_delay_set(&self) -> Option<Duration> {
        self.steps
            .iter()
            .filter_map(|s| match s.change {
                LinkChange::Delay(d) => Some(d),
                _ => None,
            })
            .min()
    }
}

/// Whether a lossy link with `threshold` (probability × 2^64) and stream
/// key `stream` loses the `n`-th packet port `port` sends: a hash of the
/// three, so the draw depends on nothing but the link's own packets, and a
/// rerun (on any number of threads) loses the same ones.
#[inline]
pub fn loses(threshold: u64, stream: u64, port: PortId, n: u64) -> bool {
    let mut z = stream ^ (port.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n.rotate_left(32);
    // SplitMix64's finalizer: every input bit moves every output bit.
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z < threshold
}

/// A probability in [0, 1] as a threshold on a uniform 64-bit draw.
pub fn loss_threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else if p <= 0.0 {
        0
    } else {
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(at_us: u64, change: LinkChange) -> FaultStep {
        FaultStep {
            at: Time::ZERO + Duration::from_us(at_us),
            ports: vec![PortId(0), PortId(1)],
            switches: vec![],
            change,
            what: String::new(),
        }
    }

    #[test]
    fn routing_learns_of_failures_after_the_detection_delay_only() {
        let mut plan = FaultPlan {
            steps: vec![
                step(10, LinkChange::Down),
                step(20, LinkChange::Delay(Duration::from_us(3))),
                step(30, LinkChange::Up),
            ],
            detection: Detection::After(Duration::from_us(15)),
        };
        let us = |t: u64| Time::ZERO + Duration::from_us(t);
        assert_eq!(
            plan.actions(),
            vec![
                (us(10), FaultAction::Apply(0)),
                (us(20), FaultAction::Apply(1)),
                (us(25), FaultAction::Learn(0)),
                (us(30), FaultAction::Apply(2)),
                (us(45), FaultAction::Learn(2)),
            ]
        );
        plan.detection = Detection::Instant;
        assert_eq!(plan.actions()[1], (us(10), FaultAction::Learn(0)));
        plan.detection = Detection::Never;
        assert_eq!(plan.actions().len(), 3);
        assert_eq!(plan.shortest_delay_set(), Some(Duration::from_us(3)));
    }

    #[test]
    fn a_loss_draw_is_fixed_by_its_port_and_packet_and_hits_its_rate() {
        let t = loss_threshold(0.01);
        let lost = (0..200_000u64)
            .filter(|&n| loses(t, 42, PortId(3), n))
            .count();
        // 1 % of 200,000 is 2,000 with a standard deviation of about 44.5.
        assert!((2000 - 134..=2000 + 134).contains(&lost), "{lost}");
        let again = (0..200_000u64)
            .filter(|&n| loses(t, 42, PortId(3), n))
            .count();
        assert_eq!(lost, again);
        let other = (0..200_000u64)
            .filter(|&n| loses(t, 43, PortId(3), n) != loses(t, 42, PortId(3), n))
            .count();
        assert!(other > 0, "another stream loses other packets");
        assert_eq!(loss_threshold(0.0), 0);
        assert!(!loses(0, 1, PortId(0), 0));
        assert!(loses(loss_threshold(1.0), 1, PortId(0), 0));
    }
}
