//! FIFO queues: plain drop-tail, with optional ECN marking, and strict
//! priority over several FIFO classes. Drop-tail: when the arriving packet
//! does not fit in the byte budget it is dropped.

use super::{Discipline, Drops, EcnThreshold, Held};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;

/// One or more FIFO classes served in strict priority (class 0 first).
#[derive(Debug)]
pub struct FifoQueue {
    classes: Vec<VecDeque<Packet>>,
    held: Held<Option<EcnThreshold>>,
}

impl FifoQueue {
    /// A queue with `classes` priority classes (1 for a plain FIFO).
    pub fn new(classes: u8, ecn: Option<EcnThreshold>) -> Self {
        // Rings allocated at the first packet, not here: a switch port
        // with an eager FIFO (most, net::eager_fifo) never uses this queue,
        // and 16 slots for each of them were half the memory of a k = 32
        // fat tree (59 of 112 MB), spread between the buffers a hop does
        // touch.
        FifoQueue {
            classes: (0..classes.max(1)).map(|_| VecDeque::new()).collect(),
            held: Held::new(ecn),
        }
    }
}

impl Discipline for FifoQueue {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if !self.held.fits(&pkt, limit) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        let marked = self.held.admit(&mut pkt);
        let c = (pkt.class as usize).min(self.classes.len() - 1);
        self.classes[c].push_back(pkt);
        marked
    }

    #[inline]
    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        if self.held.is_empty() {
            return None;
        }
        for q in &mut self.classes {
            if let Some(p) = q.pop_front() {
                if q.is_empty() {
                    // Back to the ring's start, whose slots are still
                    // cached, rather than going round a ring as large as
                    // the longest queue ever seen (see
                    // `Network::next_arrival`).
                    q.clear();
                }
                self.held.remove(&p);
                return Some(p);
            }
        }
        None
    }

    /// Several classes: the port picks by class, not arrival order.
    fn schedules_by_priority(&self) -> bool {
        self.classes.len() > 1
    }
    crate::counts_from_held!();
    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        self.classes.iter_mut().flat_map(|q| q.drain(..)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{flags, FlowId};

    fn pkt(flow: u32, size: u32, class: u8) -> Packet {
        let mut p = Packet::test_data(flow, size, 0);
        p.class = class;
        p.flags |= flags::ECT;
        p
    }

    #[test]
    fn drop_tail_drops_the_arrival_when_full() {
        let mut q = FifoQueue::new(1, None);
        let mut d = Drops::new();
        for i in 0..3 {
            q.enqueue(pkt(i, 1000, 0), Time::ZERO, 2500, &mut d);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.flow, FlowId(2));
        assert_eq!(d[0].1, DropReason::BufferFull);
    }

    #[test]
    fn strict_priority_serves_class_zero_first_fifo_within() {
        let mut q = FifoQueue::new(2, None);
        let mut d = Drops::new();
        q.enqueue(pkt(1, 100, 1), Time::ZERO, u64::MAX, &mut d);
        q.enqueue(pkt(2, 100, 0), Time::ZERO, u64::MAX, &mut d);
        q.enqueue(pkt(3, 100, 1), Time::ZERO, u64::MAX, &mut d);
        q.enqueue(pkt(4, 100, 0), Time::ZERO, u64::MAX, &mut d);
        let order: Vec<u32> =
            std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d).map(|p| p.flow.0)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn ecn_marks_only_above_k() {
        let mut q = FifoQueue::new(1, Some(EcnThreshold::Packets(2)));
        let mut d = Drops::new();
        let marks: Vec<u32> = (0..5)
            .map(|i| q.enqueue(pkt(i, 100, 0), Time::ZERO, u64::MAX, &mut d))
            .collect();
        // Arrivals find 0,1,2,3,4 packets queued: marked when > 2.
        assert_eq!(marks, vec![0, 0, 0, 1, 1]);
        let ce: Vec<bool> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| p.has(flags::CE))
            .collect();
        assert_eq!(ce, vec![false, false, false, true, true]);
    }
}
