//! FastLane's notification lane (Zats et al., SoCC 2015): a small strict
//! top-priority queue for drop notices in front of any discipline.
//!
//! The paper's safeguards keep notifications to "no more than 1 % of
//! bandwidth and 2.5 % of buffers" (abstract; its talk slides: "cap rate of
//! notification generation ... if cap exceeded, best to time out"). The lane
//! enforces both at every port a notice crosses:
//!
//! - buffer: notices queued here never exceed `cap_bytes` (the caller sets
//!   2.5 % of the port's buffer); a notice that does not fit is dropped,
//!   and [`Discipline::admits`] answers "no", so a switch that asks first
//!   makes no notice at all;
//! - bandwidth: notices leave through a token bucket (GCRA,
//!   [`super::TokenBucket`]) at `1 %` of the link rate, so over any interval
//!   `T` the notice bytes sent are at most `rate·T + burst + one notice`.
//!
//! Everything else goes to the inner discipline untouched: only switches of
//! a FastLane network have a lane, so other runs pay nothing for it.

use super::{Dequeue, Discipline, Drops, Held, Queue, TokenBucket};
use crate::metrics::DropReason;
use crate::packet::{flags, Packet};
use crate::time::{Rate, Time};
use std::collections::VecDeque;

/// Notices first (rate-capped, buffer-capped), then the inner discipline.
#[derive(Debug)]
pub struct NoticeLane {
    inner: Queue,
    lane: VecDeque<Packet>,
    /// What the lane holds; its admission is drop-tail against
    /// `cap_bytes`. The inner discipline keeps its own counts.
    held: Held,
    cap_bytes: u64,
    bucket: TokenBucket,
    /// Notice bytes this port sent.
    pub sent_bytes: u64,
    /// Notices this port sent.
    pub sent_packets: u64,
    /// Most notice bytes queued here at once.
    pub peak_bytes: u64,
}

impl NoticeLane {
    /// A lane holding at most `cap_bytes` of notices, sending them at most at
    /// `rate` with `burst_bytes` of burst, in front of `inner`.
    pub fn new(inner: Queue, cap_bytes: u64, rate: Rate, burst_bytes: u64) -> Self {
        NoticeLane {
            inner,
            lane: VecDeque::new(),
            held: Held::unmarked(),
            cap_bytes,
            bucket: TokenBucket::new(rate, burst_bytes),
            sent_bytes: 0,
            sent_packets: 0,
            peak_bytes: 0,
        }
    }

    /// Notice bytes queued now.
    pub fn lane_bytes(&self) -> u64 {
        self.held.bytes()
    }

    /// The lane's byte cap.
    pub fn cap_bytes(&self) -> u64 {
        self.cap_bytes
    }

    fn take_notice(&mut self, now: Time) -> Packet {
        let p = self.lane.pop_front().expect("caller checked the lane");
        self.held.remove(&p);
        self.bucket.charge(now, p.size as u64);
        self.sent_bytes += p.size as u64;
        self.sent_packets += 1;
        p
    }
}

impl Discipline for NoticeLane {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if !pkt.has(flags::NOTICE) {
            return self.inner.enqueue(pkt, now, limit, drops);
        }
        if !self.held.fits(&pkt, self.cap_bytes) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        let marked = self.held.admit(&mut pkt);
        self.peak_bytes = self.peak_bytes.max(self.held.bytes());
        self.lane.push_back(pkt);
        marked
    }

    /// Notices first regardless of the bucket (the network calls
    /// [`Discipline::poll`]).
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        if !self.lane.is_empty() {
            return Some(self.take_notice(now));
        }
        self.inner.dequeue(now, drops)
    }

    fn poll(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        if self.lane.is_empty() {
            return self.inner.poll(now, drops);
        }
        let at = self.bucket.ready_at(now);
        if at <= now {
            return Dequeue::Packet(self.take_notice(now));
        }
        // The lane waits for its bucket; data goes meanwhile.
        match self.inner.poll(now, drops) {
            Dequeue::Packet(p) => Dequeue::Packet(p),
            Dequeue::Empty => Dequeue::NotBefore(at),
            Dequeue::NotBefore(t) => Dequeue::NotBefore(t.min(at)),
        }
    }

    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        if pkt.has(flags::NOTICE) {
            self.held.fits(pkt, self.cap_bytes)
        } else {
            self.inner.admits(pkt, limit)
        }
    }

    /// As the discipline behind the lane.
    fn schedules_by_priority(&self) -> bool {
        self.inner.schedules_by_priority()
    }
    fn bytes(&self) -> u64 {
        self.inner.bytes() + self.held.bytes()
    }

    fn len(&self) -> usize {
        self.inner.len() + self.held.len()
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        let mut out: Vec<Packet> = self.lane.drain(..).collect();
        out.extend(self.inner.drain());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::FifoQueue;
    use crate::packet::PacketKind;
    use crate::time::Duration;

    fn pkt(size: u32, notice: bool) -> Packet {
        let mut p = Packet::test_data(0, size, 0);
        if notice {
            p.flags = flags::NOTICE;
            p.kind = PacketKind::Control;
        }
        p
    }

    fn lane() -> NoticeLane {
        // 10 Gbit/s link: 1 % = 100 Mbit/s, 64 B notices take 5.12 us each.
        NoticeLane::new(
            Queue::Fifo(FifoQueue::new(1, None)),
            128,
            Rate::from_bps(100_000_000).unwrap(),
            0,
        )
    }

    #[test]
    fn notices_overtake_data_and_respect_the_byte_cap() {
        let mut q = lane();
        let mut d = Drops::new();
        q.enqueue(pkt(1500, false), Time::ZERO, 10_000, &mut d);
        q.enqueue(pkt(64, true), Time::ZERO, 10_000, &mut d);
        q.enqueue(pkt(64, true), Time::ZERO, 10_000, &mut d);
        assert!(!q.admits(&pkt(64, true), 10_000), "lane full at 128 B");
        q.enqueue(pkt(64, true), Time::ZERO, 10_000, &mut d);
        assert_eq!(d.len(), 1, "the third notice is over the 128-byte cap");
        assert_eq!(q.peak_bytes, 128);
        assert_eq!(q.bytes(), 1500 + 128);
        match q.poll(Time::ZERO, &mut d) {
            Dequeue::Packet(p) => assert!(p.has(flags::NOTICE), "notice first"),
            other => panic!("{other:?}"),
        }
        // The second notice must wait 5.12 us for the bucket: data goes now.
        match q.poll(Time::ZERO, &mut d) {
            Dequeue::Packet(p) => assert_eq!(p.size, 1500),
            other => panic!("{other:?}"),
        }
        let at = Time::ZERO + Duration::from_ns(5120);
        match q.poll(Time::ZERO, &mut d) {
            Dequeue::NotBefore(t) => assert_eq!(t, at),
            other => panic!("{other:?}"),
        }
        match q.poll(at, &mut d) {
            Dequeue::Packet(p) => assert!(p.has(flags::NOTICE)),
            other => panic!("{other:?}"),
        }
        assert_eq!(q.sent_bytes, 128);
        assert!(q.is_empty());
    }
}
