//! An output port: a queue discipline, a transmitter and the link it feeds.

use crate::metrics::DropReason;
use crate::net::eager_fifo::EagerFifo;
use crate::net::queue::{Discipline, Queue};
use crate::packet::NodeId;
use crate::time::{Duration, Rate, Time};

/// Output queue + transmitter + link to `peer`. The packets on the link
/// are not the port's: they wait in the receiving side's inbox
/// ([`crate::net::inbox::LinkInbox`]).
///
/// Laid out by what a packet-hop touches, one cache line per group, and
/// aligned to a line so that the groups stay on their lines: the link's
/// parameters and state (line 0), the eager FIFO (line 1), the counters
/// every transmission updates with the queue-size integrals (line 2), the
/// largest queue seen (line 3, written only when a packet has to wait),
/// then the queue discipline, which an eager FIFO port never reads. With
/// tens of thousands of flows the ports no longer stay cached, and a hop
/// through an idle eager FIFO port loads three lines of the port and one
/// of the inbox it sends into.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    /// End of the current (or last) transmission.
    pub busy_until: Time,
    /// Picoseconds per byte when the rate divides 8 × 10^12 bit·ps/s exactly
    /// (every common rate does) and fits 32 bits, else 0; see
    /// [`Port::tx_time`].
    pub ps_per_byte: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Static byte limit of this port's queue.
    pub limit: u64,
    /// Time to serialize a packet header at this rate (cut-through).
    pub header_time: Duration,
    /// Node that transmits on this port.
    pub owner: NodeId,
    /// Node at the other end of the link.
    pub peer: NodeId,
    /// Shared buffer pool of the owning switch, if any.
    pub pool: Option<u32>,
    /// Whether the peer forwards cut-through (it is a switch and the network
    /// is in cut-through mode): it then sees packets once their header arrives.
    pub cut_through: bool,
    /// Whether the peer is a cut-through switch with a port that picks by
    /// priority and is faster than this link: a packet from here may have to
    /// wait there for its last bits before it joins that port's queue, so
    /// its arrival is scheduled for when it could start.
    pub waits_at_peer: bool,
    /// Whether a `TxDone` event for this port is pending.
    pub tx_pending: bool,
    /// Whether the link leads into another group of a partitioned run: a
    /// packet put on it is handed over between windows (a
    /// [`crate::net::Crossing`]) instead of into the inbox this copy of the
    /// network holds for it.
    pub remote: bool,
    /// Whether a packet put on the link takes [`Network::transmit`]'s slow
    /// road: the link is remote, or it loses packets (a scheduled gray
    /// failure). One flag, so that the common case asks one question.
    ///
    /// [`Network::transmit`]: crate::net::Network
    pub detour: bool,
    /// Set for FIFO ports whose departures are scheduled at enqueue time
    /// (see [`EagerFifo`]); such ports never need end-of-transmission events.
    pub fifo: Option<EagerFifo>,
    /// Statistics.
    pub stats: PortStats,
    /// Queued packets (unused when `fifo` is set).
    pub queue: Queue,
    /// Link rate.
    pub rate: Rate,
}

/// Per-port statistics, maintained exactly (not sampled). The counters
/// every transmission updates and the integrals every hop brings up to
/// date come first, on one line (see [`Port`]'s layout).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct PortStats {
    /// Last time the integrals were brought up to date.
    pub last_change: Time,
    /// Time spent transmitting.
    pub busy: Duration,
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Packets transmitted.
    pub tx_packets: u64,
    /// Integral of queued bytes over time (byte·ps).
    pub area_bytes: u128,
    /// Integral of queued packets over time (packet·ps).
    pub area_packets: u128,
    /// Largest queue seen, in bytes.
    pub max_bytes: u64,
    /// Largest queue seen, in packets (waiting, not the one on the wire).
    pub max_packets: u32,
    /// Packets a switch deflected into this port after another port of the
    /// same switch refused them.
    pub deflected_in: u64,
    /// Packets this port marked with ECN CE.
    pub ecn_marked: u64,
    /// Notices sent back to sources for packets this port refused.
    pub notices: u64,
    /// Packets dropped at this port, by [`DropReason`] index.
    pub dropped: [u64; DropReason::COUNT],
}

impl Port {
    /// [`Port::ps_per_byte`] for a link of `rate`.
    pub fn exact_ps_per_byte(rate: Rate) -> u64 {
        let bit_ps = 8 * crate::time::PS_PER_SEC;
        if bit_ps % rate.bps() == 0 && bit_ps / rate.bps() <= u32::MAX as u64 {
            bit_ps / rate.bps()
        } else {
            0
        }
    }

    /// Time to serialize `size` bytes on this link: [`Rate::tx_time`], by
    /// one multiplication when the rate allows (this runs per packet-hop,
    /// and a division costs several times more). A u32 size times a
    /// 32-bit factor cannot overflow.
    #[inline]
    pub fn tx_time(&self, size: u32) -> Duration {
        if self.ps_per_byte != 0 {
            Duration::from_ps(size as u64 * self.ps_per_byte)
        } else {
            self.rate.tx_time(size as u64)
        }
    }

    /// Bytes queued (not counting the packet being transmitted).
    #[inline]
    pub fn queued_bytes(&self) -> u64 {
        match &self.fifo {
            Some(f) => f.bytes,
            None => self.queue.bytes(),
        }
    }

    /// Packets queued.
    #[inline]
    pub fn queued_packets(&self) -> usize {
        match &self.fifo {
            Some(f) => f.len(),
            None => self.queue.len(),
        }
    }

    /// Bytes and packets queued: [`Port::queued_bytes`] and
    /// [`Port::queued_packets`] read through one dispatch on the
    /// discipline, not two.
    #[inline(always)]
    pub fn queued(&self) -> (u64, usize) {
        match &self.fifo {
            Some(f) => (f.bytes, f.len()),
            None => self.queue.counts(),
        }
    }

    /// Bring the queue and its time integrals up to `now`; call before the
    /// queue changes or is read.
    #[inline(always)]
    pub fn touch(&mut self, now: Time) {
        if let Some(f) = self.fifo.as_mut() {
            f.advance(now, &mut self.stats);
        }
        let dt = (now - self.stats.last_change).ps() as u128;
        if dt > 0 {
            let (bytes, packets) = self.queued();
            // An empty queue adds nothing to the integrals: no multiplying
            // for most touches of a port below full load.
            if bytes | packets as u64 != 0 {
                self.stats.area_bytes += bytes as u128 * dt;
                self.stats.area_packets += packets as u128 * dt;
            }
            self.stats.last_change = now;
        }
    }

    /// Record the queue size after a change.
    #[inline]
    pub fn note_size(&mut self) {
        let (bytes, packets) = self.queued();
        self.stats.max_bytes = self.stats.max_bytes.max(bytes);
        self.stats.max_packets = self.stats.max_packets.max(packets as u32);
    }

    /// Record the queue size of an empty queue holding one packet of
    /// `size` bytes: what [`Port::note_size`] records when a packet passes
    /// through an idle port's queue.
    #[inline]
    pub fn note_size_with(&mut self, size: u32) {
        self.stats.max_bytes = self.stats.max_bytes.max(size as u64);
        self.stats.max_packets = self.stats.max_packets.max(1);
    }

    /// What the link did up to `now` (the port touched at `now`): bytes and
    /// packets whose transmission started, and time spent transmitting.
    /// An eager FIFO puts its packets on the link when they are admitted,
    /// so those still waiting are taken back out; the transmissions still
    /// ahead end at `busy_until`, and their time is not yet spent. With
    /// store-and-forward switches they run back to back from `now`, so this
    /// is exact; a cut-through packet that waits for its last bits makes
    /// the time ahead a little shorter than that.
    pub fn link_totals(&self, now: Time) -> (u64, u64, Duration) {
        let (bytes, packets) = match &self.fifo {
            Some(f) => (
                self.stats.tx_bytes - f.bytes,
                self.stats.tx_packets - f.len() as u64,
            ),
            None => (self.stats.tx_bytes, self.stats.tx_packets),
        };
        let ahead = self.busy_until.ps().saturating_sub(now.ps());
        let busy = Duration::from_ps(self.stats.busy.ps().saturating_sub(ahead));
        (bytes, packets, busy)
    }

    /// Mean queue in bytes between `from` (a snapshot) and now.
    pub fn mean_bytes_since(&self, from: &PortStats) -> f64 {
        let dt = (self.stats.last_change - from.last_change).ps();
        if dt == 0 {
            return 0.0;
        }
        (self.stats.area_bytes - from.area_bytes) as f64 / dt as f64
    }

    /// Mean queue in packets between `from` (a snapshot) and now.
    pub fn mean_packets_since(&self, from: &PortStats) -> f64 {
        let dt = (self.stats.last_change - from.last_change).ps();
        if dt == 0 {
            return 0.0;
        }
        (self.stats.area_packets - from.area_packets) as f64 / dt as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// The layout [`Port`]'s documentation describes: the line groups
    /// start where it says (a field added in the wrong place moves them).
    #[test]
    fn an_idle_eager_fifo_port_keeps_what_a_hop_touches_on_three_lines() {
        assert_eq!(std::mem::align_of::<Port>(), 64);
        assert!(offset_of!(Port, tx_pending) < 64);
        assert_eq!(offset_of!(Port, fifo), 64);
        assert!(offset_of!(Port, fifo) + std::mem::size_of::<Option<EagerFifo>>() <= 128);
        let stats = offset_of!(Port, stats);
        assert_eq!(stats, 128);
        for end in [
            offset_of!(PortStats, last_change) + 8,
            offset_of!(PortStats, busy) + 8,
            offset_of!(PortStats, tx_bytes) + 8,
            offset_of!(PortStats, tx_packets) + 8,
            offset_of!(PortStats, area_bytes) + 16,
            offset_of!(PortStats, area_packets) + 16,
        ] {
            assert!(stats + end <= 192);
        }
        assert!(stats + offset_of!(PortStats, deflected_in) + 8 <= 256);
    }
}
