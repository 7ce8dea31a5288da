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
#[derive(Debug, Default)]
pub struct EagerFifo {
    /// (time the packet leaves the queue, size), in order.
    waiting: VecDeque<(Time, u32)>,
    /// Bytes waiting.
    pub bytes: u64,
    /// Packets waiting.
    pub len: usize,
    /// ECN marking threshold, if any.
    pub ecn: Option<EcnThreshold>,
}

impl EagerFifo {
    /// An empty FIFO with optional ECN marking.
    pub fn new(ecn: Option<EcnThreshold>) -> Self {
        EagerFifo {
            waiting: VecDeque::with_capacity(16),
            bytes: 0,
            len: 0,
            ecn,
        }
    }

    /// Remove packets that left the queue by `now`, integrating the queue
    /// size over time exactly at each departure.
    #[inline]
    pub fn advance(&mut self, now: Time, stats: &mut PortStats) {
        while let Some(&(t, size)) = self.waiting.front() {
            if t > now {
                break;
            }
            let dt = (t - stats.last_change).ps() as u128;
            stats.area_bytes += self.bytes as u128 * dt;
            stats.area_packets += self.len as u128 * dt;
            stats.last_change = t;
            self.bytes -= size as u64;
            self.len -= 1;
            self.waiting.pop_front();
        }
        if self.len == 0 {
            // Back to the ring's start (see `Network::next_arrival`).
            self.waiting.clear();
        }
    }

    /// A packet of `size` bytes waits until `leaves`.
    #[inline]
    pub fn push(&mut self, leaves: Time, size: u32) {
        self.waiting.push_back((leaves, size));
        self.bytes += size as u64;
        self.len += 1;
    }

    /// Forget everything (end of run; the packets are on the link list).
    pub fn clear(&mut self) {
        self.waiting.clear();
        self.bytes = 0;
        self.len = 0;
    }
}
