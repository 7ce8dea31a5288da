//! The queue of a port whose link is down: it refuses every packet
//! ([`DropReason::LinkDown`]) and sends nothing, and it keeps the port's own
//! discipline, emptied, to put back when the link recovers. Swapping the
//! queue, rather than asking "is the link up?" on every packet, keeps the
//! per-hop path of a network without failures as it was.

use super::{Dequeue, Discipline, Drops, Queue};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::Time;

/// A down link's queue, holding the discipline it replaced.
#[derive(Debug)]
pub struct LinkDownQueue {
    /// The port's discipline, empty, until the link comes back.
    saved: Queue,
}

impl LinkDownQueue {
    /// A down queue in place of `saved` (which the caller emptied).
    pub fn new(saved: Queue) -> Self {
        LinkDownQueue { saved }
    }

    /// The discipline to put back when the link recovers.
    pub fn into_saved(self) -> Queue {
        self.saved
    }
}

impl Discipline for LinkDownQueue {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _limit: u64, drops: &mut Drops) -> u32 {
        drops.push((pkt, DropReason::LinkDown));
        0
    }
    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        None
    }
    fn poll(&mut self, _now: Time, _drops: &mut Drops) -> Dequeue {
        Dequeue::Empty
    }
    /// Nothing is admitted: a deflection or a notice looks elsewhere.
    fn admits(&self, _pkt: &Packet, _limit: u64) -> bool {
        false
    }
    fn schedules_by_priority(&self) -> bool {
        self.saved.schedules_by_priority()
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn len(&self) -> usize {
        0
    }
    fn drain(&mut self) -> Vec<Packet> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::QueueConfig;

    #[test]
    fn a_down_queue_refuses_everything_and_gives_back_its_discipline() {
        let mut q = LinkDownQueue::new(QueueConfig::Pfabric.build());
        let mut drops = Drops::new();
        let p = Packet::test_data(0, 1500, 0);
        assert!(!q.admits(&p, u64::MAX));
        assert_eq!(q.enqueue(p, Time::ZERO, u64::MAX, &mut drops), 0);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].1, DropReason::LinkDown);
        assert!(matches!(q.poll(Time::ZERO, &mut drops), Dequeue::Empty));
        assert_eq!((q.bytes(), q.len()), (0, 0));
        assert!(q.schedules_by_priority(), "pFabric's order is kept");
        assert!(matches!(q.into_saved(), Queue::Pfabric(_)));
    }
}
