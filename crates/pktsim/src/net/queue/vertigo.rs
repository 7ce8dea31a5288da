//! Vertigo's switch queue (Abdous et al., "Burst-tolerant datacenter
//! networks with Vertigo", CoNEXT 2021; the artifact's `V2PIFO`, our spec
//! `vertigo.md` §1.2–1.3): a PIFO-like queue ordered by rank
//! ([`Packet::prio`], the message's remaining bytes; lower leaves first,
//! oldest first among equals). When an arrival does not fit, the queue
//! pushes out its lowest-priority packets — only packets of strictly
//! higher rank than the arrival, the highest rank first and the newest
//! among equals — as many as it takes to make room. If those are not
//! enough, nothing is pushed out and the arrival itself is refused.
//!
//! Pushed-out packets leave with [`DropReason::Evicted`], a refused
//! arrival with [`DropReason::BufferFull`]; a switch whose refusal stage
//! deflects (`refusal = "deflect_two_choices"`) sends either on to another
//! port, which is Vertigo's selective deflection.
//!
//! Buffers hold a few hundred packets, so linear scans of a `Vec` in
//! arrival order beat an index structure here, as for pFabric.

use super::{Discipline, Drops, EcnThreshold, Held};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::Time;

/// Rank-ordered queue with push-out of the lowest-priority packets.
#[derive(Debug)]
pub struct VertigoQueue {
    /// Packets in arrival order.
    pkts: Vec<Packet>,
    held: Held<Option<EcnThreshold>>,
}

impl VertigoQueue {
    /// An empty queue, optionally ECN marking on arrival (DCTCP's K).
    pub fn new(ecn: Option<EcnThreshold>) -> Self {
        VertigoQueue {
            pkts: Vec::with_capacity(64),
            held: Held::new(ecn),
        }
    }

    /// Bytes held by packets of strictly higher rank than `rank`.
    fn bytes_below_priority(&self, rank: u32) -> u64 {
        self.pkts
            .iter()
            .filter(|p| p.prio > rank)
            .map(|p| p.size as u64)
            .sum()
    }
}

impl Discipline for VertigoQueue {
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        let after = self.held.bytes() + pkt.size as u64;
        if after > limit {
            let need = after - limit;
            if pkt.size as u64 > limit || self.bytes_below_priority(pkt.prio) < need {
                drops.push((pkt, DropReason::BufferFull));
                return 0;
            }
            // Push out the lowest-priority packets (highest rank, newest
            // among equals) until the arrival fits.
            while !self.held.fits(&pkt, limit) {
                let mut worst = usize::MAX;
                for (i, p) in self.pkts.iter().enumerate() {
                    if p.prio > pkt.prio && (worst == usize::MAX || p.prio >= self.pkts[worst].prio)
                    {
                        worst = i;
                    }
                }
                if worst == usize::MAX {
                    break; // unreachable: enough bytes were counted above
                }
                let victim = self.pkts.remove(worst);
                self.held.remove(&victim);
                drops.push((victim, DropReason::Evicted));
            }
        }
        let marked = self.held.admit(&mut pkt);
        self.pkts.push(pkt);
        marked
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        let (i, _) = self
            .pkts
            .iter()
            .enumerate()
            .min_by_key(|(i, p)| (p.prio, *i))?;
        let p = self.pkts.remove(i);
        self.held.remove(&p);
        Some(p)
    }

    /// Kept if it fits, or if enough strictly lower-priority bytes can be
    /// pushed out.
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        let after = self.held.bytes() + pkt.size as u64;
        after <= limit
            || (pkt.size as u64 <= limit && self.bytes_below_priority(pkt.prio) >= after - limit)
    }

    /// Lowest rank first.
    fn schedules_by_priority(&self) -> bool {
        true
    }
    crate::counts_from_held!();
    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        std::mem::take(&mut self.pkts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;

    fn pkt(id: u32, prio: u32, size: u32) -> Packet {
        let mut p = Packet::test_data(id, size, 0);
        p.prio = prio;
        p
    }

    #[test]
    fn pushes_out_exactly_the_lowest_priority_packet() {
        let mut q = VertigoQueue::new(None);
        let mut d = Drops::new();
        // Room for 4 packets; ranks 300, 900, 100, 900 (flows 1..4).
        for (f, prio) in [(1, 300), (2, 900), (3, 100), (4, 900)] {
            q.enqueue(pkt(f, prio, 1000), Time::ZERO, 4000, &mut d);
        }
        assert!(d.is_empty());
        // An arrival of rank 200 pushes out one packet of rank 900: the
        // newer of the two (flow 4), and nothing else.
        q.enqueue(pkt(5, 200, 1000), Time::ZERO, 4000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].0.flow, d[0].1), (FlowId(4), DropReason::Evicted));
        assert_eq!(q.bytes(), 4000);
        // A larger arrival needs two pushed out: flow 2 (900), then flow 1 (300).
        d.clear();
        q.enqueue(pkt(6, 250, 2000), Time::ZERO, 4000, &mut d);
        let out: Vec<u32> = d.iter().map(|(p, _)| p.flow.0).collect();
        assert_eq!(out, vec![2, 1]);
        // Departures by rank: 100, 200, 250.
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| p.flow.0)
            .collect();
        assert_eq!(order, vec![3, 5, 6]);
    }

    #[test]
    fn arrival_is_refused_when_nothing_lower_can_make_room() {
        let mut q = VertigoQueue::new(None);
        let mut d = Drops::new();
        q.enqueue(pkt(1, 500, 1000), Time::ZERO, 2000, &mut d);
        q.enqueue(pkt(2, 100, 1000), Time::ZERO, 2000, &mut d);
        // Equal rank is not lower priority: the arrival is refused.
        assert!(!q.admits(&pkt(3, 500, 1000), 2000));
        q.enqueue(pkt(3, 500, 1000), Time::ZERO, 2000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].0.flow, d[0].1), (FlowId(3), DropReason::BufferFull));
        // Needing 2000 B but only 1000 B of lower priority: refused, and
        // nothing is pushed out.
        d.clear();
        q.enqueue(pkt(4, 200, 2000), Time::ZERO, 2000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.flow, FlowId(4));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn admits_predicts_whether_enqueue_keeps_the_arrival() {
        let mut rng = crate::engine::Rng::from_seed_u64(5);
        let mut q = VertigoQueue::new(None);
        let mut d = Drops::new();
        for i in 0..2000u32 {
            let p = pkt(
                i,
                rng.below(50) as u32,
                [64, 1500, 700][rng.below(3) as usize],
            );
            let predicted = q.admits(&p, 6000);
            d.clear();
            q.enqueue(p, Time::ZERO, 6000, &mut d);
            let kept = !d.iter().any(|(x, _)| x.flow == p.flow);
            assert_eq!(predicted, kept, "arrival {i}");
            assert!(q.bytes() <= 6000);
            if rng.below(3) == 0 {
                q.dequeue(Time::ZERO, &mut d);
            }
        }
    }
}
