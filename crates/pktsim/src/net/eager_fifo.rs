//! A FIFO whose departures are scheduled at enqueue time.
//!
//! In a FIFO port nothing that arrives later can overtake a queued packet,
//! so each packet's departure is known the moment it is admitted:
//! `leaves queue = max(now, end of the previous transmission)`. The port
//! puts the packet straight on its link with that schedule and needs no
//! end-of-transmission event (htsim's trick). The queue that arrivals see
//! (for drop-tail admission and ECN marking) is kept as the list of admitted
//! packets that have not yet left, advanced lazily. The results are the
//! same, to the picosecond, as a FIFO served at end-of-transmission events.

use crate::net::port::PortStats;
use crate::net::queue::EcnThreshold;
use crate::time::Time;
use std::collections::VecDeque;

/// Admitted packets that have not yet started transmission.
#[derive(Debug)]
pub struct EagerFifo {
    /// (time the packet leaves the queue, size), in order.
    waiting: VecDeque<(Time, u32)>,
    /// Bytes waiting.
    pub bytes: u64,
    /// When the first waiting packet leaves ([`Time::MAX`] when none
    /// waits): most arrivals find nothing due and [`EagerFifo::advance`]
    /// returns without reading the list, whose memory is then not loaded.
    head_leaves: Time,
    /// ECN marking threshold, if any.
    pub ecn: Option<EcnThreshold>,
}

impl Default for EagerFifo {
    fn default() -> Self {
        EagerFifo::new(None)
    }
}

impl EagerFifo {
    /// An empty FIFO with optional ECN marking.
    pub fn new(ecn: Option<EcnThreshold>) -> Self {
        EagerFifo {
            waiting: VecDeque::with_capacity(16),
            bytes: 0,
            head_leaves: Time::MAX,
            ecn,
        }
    }

    /// Packets waiting.
    #[inline]
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no packet waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Whether `size` more bytes fit under byte budget `limit`: drop-tail's
    /// rule ([`crate::net::queue::fits`]), as the event-driven FIFO applies it.
    #[inline(always)]
    pub fn admits(&self, size: u32, limit: u64) -> bool {
        crate::net::queue::fits(self.bytes, size, limit)
    }

    /// Remove packets that left the queue by `now`, integrating the queue
    /// size over time exactly at each departure.
    #[inline]
    pub fn advance(&mut self, now: Time, stats: &mut PortStats) {
        if self.head_leaves > now {
            return;
        }
        while let Some(&(t, size)) = self.waiting.front() {
            if t > now {
                break;
            }
            let dt = (t - stats.last_change).ps() as u128;
            stats.area_bytes += self.bytes as u128 * dt;
            stats.area_packets += self.waiting.len() as u128 * dt;
            stats.last_change = t;
            self.bytes -= size as u64;
            self.waiting.pop_front();
        }
        match self.waiting.front() {
            Some(&(t, _)) => self.head_leaves = t,
            None => {
                self.head_leaves = Time::MAX;
                // Back to the ring's start (see `LinkInbox::pop_head`).
                self.waiting.clear();
            }
        }
    }

    /// A packet of `size` bytes waits until `leaves`.
    #[inline]
    pub fn push(&mut self, leaves: Time, size: u32) {
        if self.waiting.is_empty() {
            self.head_leaves = leaves;
        }
        self.waiting.push_back((leaves, size));
        self.bytes += size as u64;
    }

    /// Forget everything (end of run; the packets are in the link's inbox).
    pub fn clear(&mut self) {
        self.waiting.clear();
        self.bytes = 0;
        self.head_leaves = Time::MAX;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets leave in order at their times, the counts follow them, and
    /// the queue-size integrals add up each packet's size times its wait:
    /// what an event-driven FIFO would integrate between its events.
    #[test]
    fn packets_leave_at_their_times_and_the_integrals_add_up() {
        let (mut f, mut stats) = (EagerFifo::new(None), PortStats::default());
        f.push(Time(100), 1000);
        f.push(Time(300), 500);
        assert_eq!((f.len(), f.bytes), (2, 1500));
        f.advance(Time(99), &mut stats);
        assert_eq!(
            (f.len(), stats.area_bytes, stats.last_change),
            (2, 0, Time::ZERO)
        );
        f.advance(Time(100), &mut stats);
        assert_eq!((f.len(), f.bytes), (1, 500));
        assert_eq!(
            (stats.area_bytes, stats.area_packets),
            (1500 * 100, 2 * 100)
        );
        f.advance(Time(1000), &mut stats);
        assert!(f.is_empty() && f.bytes == 0);
        assert_eq!(
            (stats.area_bytes, stats.area_packets),
            (1500 * 100 + 500 * 200, 2 * 100 + 200)
        );
        assert_eq!(stats.last_change, Time(300));
    }

    /// Admission is drop-tail on the bytes still waiting at the time of
    /// asking: a packet that fits only once the head has left is admitted
    /// only after the queue has been advanced past that departure.
    #[test]
    fn admission_counts_only_the_bytes_still_waiting() {
        let (mut f, mut stats) = (EagerFifo::new(None), PortStats::default());
        f.push(Time(100), 1000);
        f.push(Time(200), 1000);
        assert!(!f.admits(1000, 2500));
        f.advance(Time(100), &mut stats);
        assert!(f.admits(1000, 2500));
        f.clear();
        assert!(f.is_empty() && f.bytes == 0 && f.admits(2500, 2500));
    }
}
