//! pFabric's switch queue (Alizadeh et al., SIGCOMM 2013, §4.1): every packet
//! carries a priority (the flow's remaining size; lower is more urgent).
//! Dequeue sends the earliest-queued packet of the flow that holds the most
//! urgent packet (so a flow's packets leave in order); when the buffer
//! overflows, the least urgent packet (the arriving one included) is dropped,
//! the latest-queued among equals. Switch buffers are tiny (tens of
//! packets), where linear scans over a Vec beat any index structure; a queue
//! that grows past [`SMALL`] packets (a host NIC holding the windows of many
//! flows) moves into an index with O(log n) operations
//! ([`super::pfabric_index`]) until it is empty again.

use super::pfabric_index::PrioIndex;
use super::{Discipline, Drops, Held};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::Time;

/// Packets up to which the queue scans a vector.
pub const SMALL: usize = 256;

/// [`PfabricQueue::best`] when it must be found by a scan.
const UNKNOWN: usize = usize::MAX;

/// What the scans of the small path read of a queued packet: 16 bytes
/// instead of the packet's 64, so a scan touches a quarter of the memory
/// and a removal moves a quarter of the bytes.
#[derive(Clone, Copy, Debug)]
struct Key {
    prio: u32,
    flow: u32,
    size: u32,
    /// Where the packet sits in `PfabricQueue::slots`.
    slot: u32,
}

/// pFabric priority queue.
#[derive(Debug)]
pub struct PfabricQueue {
    /// Keys of the queued packets in arrival order (while the queue is small).
    keys: Vec<Key>,
    /// Where in `keys` the most urgent packet is (the earliest among
    /// equals), or [`UNKNOWN`]. Kept up to date by arrivals and by removals
    /// of other packets, so that dequeue scans for it only after it left:
    /// a flow's later packets are its more urgent ones, and dequeue sends a
    /// flow's earliest packet, so the most urgent one usually stays for
    /// many dequeues.
    best: usize,
    /// The packets the keys point to; freed slots are reused.
    slots: Vec<Packet>,
    /// Free indices of `slots`.
    free: Vec<u32>,
    /// The packets while the queue is large (`large`).
    index: Box<PrioIndex>,
    large: bool,
    /// Packets above which the queue uses the index.
    small: usize,
    /// Bytes and packets held, on both paths. pFabric does not mark, and
    /// its admission is its own (push out the least urgent), so of
    /// [`Held`] it uses the counts.
    held: Held,
}

impl Default for PfabricQueue {
    fn default() -> Self {
        PfabricQueue::new()
    }
}

impl PfabricQueue {
    /// An empty queue.
    pub fn new() -> Self {
        PfabricQueue::with_small(SMALL)
    }

    /// An empty queue that scans a vector up to `small` packets.
    pub fn with_small(small: usize) -> Self {
        PfabricQueue {
            keys: Vec::with_capacity(32),
            best: UNKNOWN,
            slots: Vec::with_capacity(32),
            free: Vec::new(),
            index: Box::default(),
            large: false,
            small,
            held: Held::unmarked(),
        }
    }

    /// The large-queue path of [`Discipline::enqueue`].
    fn enqueue_large(&mut self, pkt: Packet, limit: u64, drops: &mut Drops) {
        self.index.push(pkt);
        if self.held.bytes() > limit {
            let over = self.held.bytes() - limit;
            let (latest, victim) = self
                .index
                .pop_least_urgent(over)
                .expect("the arrival itself ends the overflow");
            self.held.remove(&victim);
            let reason = if latest {
                DropReason::BufferFull
            } else {
                DropReason::Evicted
            };
            drops.push((victim, reason));
        }
    }
    /// Store `pkt` in a free slot and append its key.
    #[inline]
    fn push_small(&mut self, pkt: Packet) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = pkt;
                i
            }
            None => {
                self.slots.push(pkt);
                (self.slots.len() - 1) as u32
            }
        };
        // Only a strictly more urgent arrival takes over: the earliest
        // among equals stays the most urgent.
        if self.keys.is_empty() {
            self.best = 0;
        } else if self.best != UNKNOWN && pkt.prio < self.keys[self.best].prio {
            self.best = self.keys.len();
        }
        self.keys.push(Key {
            prio: pkt.prio,
            flow: pkt.flow.0,
            size: pkt.size,
            slot,
        });
    }

    /// Remove the `i`-th key (in arrival order) and return its packet.
    #[inline]
    fn remove_small(&mut self, i: usize) -> Packet {
        let k = self.keys.remove(i);
        if self.best != UNKNOWN {
            if i < self.best {
                self.best -= 1;
            } else if i == self.best {
                self.best = UNKNOWN;
            }
        }
        self.free.push(k.slot);
        self.slots[k.slot as usize]
    }

    /// Every small-path packet in arrival order, leaving the small path empty.
    fn take_small(&mut self) -> Vec<Packet> {
        let out = self
            .keys
            .iter()
            .map(|k| self.slots[k.slot as usize])
            .collect();
        self.keys.clear();
        self.slots.clear();
        self.free.clear();
        self.best = UNKNOWN;
        out
    }
}

impl Discipline for PfabricQueue {
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        // Counted first, then the overflow (if any) pushes out the least
        // urgent packet, the arrival included.
        let marked = self.held.admit(&mut pkt);
        if !self.large && self.keys.len() >= self.small {
            // Too many packets to scan: move them, in order, into the index.
            self.large = true;
            for p in self.take_small() {
                self.index.push(p);
            }
        }
        if self.large {
            self.enqueue_large(pkt, limit, drops);
            return marked;
        }
        self.push_small(pkt);
        if self.held.bytes() > limit {
            // Drop the least urgent (largest prio; the latest among equals)
            // of the packets whose removal alone ends the overflow, as
            // pFabric's ns-2 queue does. The arrival always qualifies, since
            // the queue was within its limit before it came.
            let over = self.held.bytes() - limit;
            let mut worst = self.keys.len() - 1;
            let mut worst_prio = self.keys[worst].prio;
            for (i, k) in self.keys.iter().enumerate() {
                if k.size as u64 >= over && k.prio >= worst_prio {
                    worst = i;
                    worst_prio = k.prio;
                }
            }
            let victim = self.remove_small(worst);
            self.held.remove(&victim);
            let reason = if worst == self.keys.len() {
                DropReason::BufferFull
            } else {
                DropReason::Evicted
            };
            drops.push((victim, reason));
        }
        marked
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        if self.large {
            let p = self.index.pop_next()?;
            self.held.remove(&p);
            if self.index.is_empty() {
                self.large = false;
            }
            return Some(p);
        }
        // The most urgent packet, the earliest among equals.
        let first = self.keys.first()?;
        if self.best == UNKNOWN {
            let (mut best, mut best_prio) = (0, first.prio);
            for (i, k) in self.keys.iter().enumerate().skip(1) {
                if k.prio < best_prio {
                    best = i;
                    best_prio = k.prio;
                }
            }
            self.best = best;
        }
        let best = self.best;
        // The earliest packet of that flow keeps the flow in order.
        let flow = self.keys[best].flow;
        let i = self.keys[..=best]
            .iter()
            .position(|k| k.flow == flow)
            .unwrap_or(best);
        let p = self.remove_small(i);
        self.held.remove(&p);
        Some(p)
    }

    /// The arrival is kept if it fits, or if a queued packet big enough to
    /// end the overflow is strictly less urgent (ties drop the arrival).
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        if self.held.fits(pkt, limit) {
            return true;
        }
        let over = self.held.bytes() + pkt.size as u64 - limit;
        if self.large {
            return self.index.has_less_urgent(pkt.prio, over);
        }
        self.keys
            .iter()
            .any(|k| k.size as u64 >= over && k.prio > pkt.prio)
    }

    /// The most urgent flow first.
    fn schedules_by_priority(&self) -> bool {
        true
    }
    crate::counts_from_held!();
    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        if self.large {
            self.large = false;
            return self.index.drain();
        }
        self.take_small()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, Header};

    fn pkt(flow: u32, prio: u32, seq: u64) -> Packet {
        let mut p = Packet::test_data(flow, 1500, seq);
        p.prio = prio;
        p
    }

    fn seq(p: &Packet) -> u64 {
        match p.header {
            Header::TcpData { seq } => seq,
            _ => unreachable!(),
        }
    }

    #[test]
    fn sends_most_urgent_flow_first_in_flow_order() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        q.enqueue(pkt(1, 900, 0), Time::ZERO, u64::MAX, &mut d);
        q.enqueue(pkt(2, 500, 0), Time::ZERO, u64::MAX, &mut d);
        // Flow 2's later packet has a smaller remaining size, but its first
        // packet must still leave first.
        q.enqueue(pkt(2, 100, 1), Time::ZERO, u64::MAX, &mut d);
        let order: Vec<(u32, u64)> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| (p.flow.0, seq(&p)))
            .collect();
        assert_eq!(order, vec![(2, 0), (2, 1), (1, 0)]);
    }

    #[test]
    fn the_kept_most_urgent_place_follows_arrivals_drops_and_departures() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        let next = |q: &mut PfabricQueue| {
            let p = q.dequeue(Time::ZERO, &mut Drops::new()).expect("queued");
            (p.flow.0, seq(&p))
        };
        // Of two equally urgent packets the earlier stays the most urgent.
        q.enqueue(pkt(7, 300, 0), Time::ZERO, 6000, &mut d);
        q.enqueue(pkt(8, 300, 0), Time::ZERO, 6000, &mut d);
        assert_eq!(next(&mut q), (7, 0));
        assert_eq!(next(&mut q), (8, 0));
        // Room for four packets. Each arrival but the last of the equals
        // is more urgent than those before it.
        q.enqueue(pkt(1, 500, 0), Time::ZERO, 6000, &mut d);
        q.enqueue(pkt(1, 400, 1), Time::ZERO, 6000, &mut d);
        q.enqueue(pkt(2, 300, 0), Time::ZERO, 6000, &mut d);
        q.enqueue(pkt(3, 300, 0), Time::ZERO, 6000, &mut d);
        // The most urgent arrival so far overflows the buffer: the least
        // urgent packet, queued in front of it, is evicted, and the kept
        // place of the most urgent one moves up with it.
        q.enqueue(pkt(4, 100, 0), Time::ZERO, 6000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].0.flow, d[0].1), (FlowId(1), DropReason::Evicted));
        assert_eq!(next(&mut q), (4, 0));
        // It left: the next one is found again, the earliest of the equals.
        assert_eq!(next(&mut q), (2, 0));
        assert_eq!(next(&mut q), (3, 0));
        assert_eq!(next(&mut q), (1, 1));
        assert!(q.dequeue(Time::ZERO, &mut d).is_none());
    }

    #[test]
    fn full_buffer_drops_the_least_urgent_packet() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        // Room for 3 packets.
        for (f, prio) in [(1, 300), (2, 900), (3, 100)] {
            q.enqueue(pkt(f, prio, 0), Time::ZERO, 4500, &mut d);
        }
        assert!(d.is_empty());
        // A more urgent arrival evicts flow 2's packet.
        q.enqueue(pkt(4, 200, 0), Time::ZERO, 4500, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.flow, FlowId(2));
        assert_eq!(d[0].1, DropReason::Evicted);
        // A less urgent arrival is itself dropped.
        q.enqueue(pkt(5, 1000, 0), Time::ZERO, 4500, &mut d);
        assert_eq!(d[1].0.flow, FlowId(5));
        assert_eq!(d[1].1, DropReason::BufferFull);
        assert_eq!(q.len(), 3);
        assert_eq!(q.bytes(), 4500);
    }

    #[test]
    fn admits_predicts_whether_enqueue_keeps_the_arrival() {
        let mut rng = crate::engine::Rng::from_seed_u64(5);
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        for i in 0..2000u32 {
            let mut p = pkt(i, rng.below(50) as u32, 0);
            p.size = [64, 1500, 700][rng.below(3) as usize];
            let predicted = q.admits(&p, 6000);
            d.clear();
            q.enqueue(p, Time::ZERO, 6000, &mut d);
            let kept = !d.iter().any(|(x, _)| x.flow == p.flow);
            assert_eq!(predicted, kept, "arrival {i}");
            if rng.below(3) == 0 {
                q.dequeue(Time::ZERO, &mut d);
            }
        }
    }

    #[test]
    fn ties_drop_the_latest() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        q.enqueue(pkt(1, 500, 0), Time::ZERO, 1500, &mut d);
        q.enqueue(pkt(2, 500, 0), Time::ZERO, 1500, &mut d);
        assert_eq!(d[0].0.flow, FlowId(2));
    }

    #[test]
    fn the_index_and_the_vector_make_the_same_choices() {
        // Random arrivals (sizes, priorities, a few flows), dequeues and
        // admission questions through a queue that always scans and one
        // that indexes from 4 packets on: every answer, drop and departure
        // must be the same.
        let mut rng = crate::engine::Rng::from_seed_u64(11);
        let mut scan = PfabricQueue::with_small(usize::MAX);
        let mut index = PfabricQueue::with_small(4);
        let (mut d1, mut d2) = (Drops::new(), Drops::new());
        let id = |p: &Packet| (p.flow.0, seq(p), p.prio, p.size);
        let mut went_large = false;
        for i in 0..20_000u64 {
            let limit = [3000, 9000, 40_000, u64::MAX][(i / 5000) as usize];
            if rng.below(5) < 3 {
                let mut p = pkt(rng.below(6) as u32, rng.below(20) as u32, i);
                p.size = [64, 1500, 700][rng.below(3) as usize];
                assert_eq!(scan.admits(&p, limit), index.admits(&p, limit), "op {i}");
                scan.enqueue(p, Time::ZERO, limit, &mut d1);
                index.enqueue(p, Time::ZERO, limit, &mut d2);
            } else {
                let a = scan.dequeue(Time::ZERO, &mut d1);
                let b = index.dequeue(Time::ZERO, &mut d2);
                assert_eq!(a.as_ref().map(id), b.as_ref().map(id), "op {i}");
            }
            went_large |= index.large;
            let drops = |d: &Drops| d.iter().map(|(p, r)| (id(p), *r)).collect::<Vec<_>>();
            assert_eq!(drops(&d1), drops(&d2), "op {i}");
            d1.clear();
            d2.clear();
            assert_eq!((scan.len(), scan.bytes()), (index.len(), index.bytes()));
        }
        assert!(went_large);
        let order = |v: Vec<Packet>| v.iter().map(id).collect::<Vec<_>>();
        assert_eq!(order(scan.drain()), order(index.drain()));
    }
}
