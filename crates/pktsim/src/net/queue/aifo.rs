//! AIFO admission in front of a FIFO (Yu et al., "Programmable Packet
//! Scheduling with a Single Queue", SIGCOMM 2021, §3): a sliding window of
//! recently sampled ranks gives an arriving packet its quantile, and the
//! packet is admitted only while the free buffer is large enough for a
//! packet of that quantile. Lower rank ([`Packet::prio`]) is more urgent.
//!
//! The rule as the Canary/Preemptive-Deflection artifact writes it (our
//! spec `canary.md` §1.2, which the AIFO baseline of that paper shares):
//! with `q` bytes queued, `Q` the byte limit and `quantile(p)` the share of
//! window samples with a strictly smaller rank — counted over the *nominal*
//! window size, so quantiles are low while the window fills — the port is
//! "over threshold" for `p` iff `q > Q · (1 − (1 − k) · quantile(p))`.
//! Below `k · Q` every packet is admitted (the threshold is then at least
//! `k · Q`). Every evaluation of a packet at the queue (admitted or not)
//! advances a sampling counter, and one evaluation in `sample` puts its
//! rank into the window (AIFO §3.2: dropped packets feed the window too).
//! A full queue refuses before the quantile test is made (and without
//! sampling), as the artifact's `full || over_threshold` does.
//!
//! Refusals by quantile are dropped with [`DropReason::Aqm`]; on a switch
//! whose refusal stage deflects, they are Canary's early deflections.

use super::{Discipline, Drops, EcnThreshold, Held};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;

/// Sliding window of sampled ranks (a ring of fixed size).
#[derive(Debug, Clone)]
struct RankWindow {
    ranks: Vec<u32>,
    /// Nominal size |W|.
    size: usize,
    /// Next slot to overwrite once the ring is full.
    next: usize,
    /// Evaluations since the last sample, modulo the sample count.
    counter: u32,
    sample: u32,
}

impl RankWindow {
    fn new(size: usize, sample: u32) -> Self {
        RankWindow {
            ranks: Vec::with_capacity(size),
            size,
            next: 0,
            counter: 0,
            sample: sample.max(1),
        }
    }

    /// Samples with a rank strictly below `rank`.
    #[inline]
    fn below(&self, rank: u32) -> usize {
        self.ranks.iter().filter(|&&r| r < rank).count()
    }

    /// One evaluation of a packet of rank `rank`: sampled when the counter
    /// is at 0 (AIFO's `tail == index · SAMPLE_COUNT`).
    #[inline]
    fn observe(&mut self, rank: u32) {
        if self.counter == 0 {
            if self.ranks.len() < self.size {
                self.ranks.push(rank);
            } else {
                self.ranks[self.next] = rank;
                self.next = (self.next + 1) % self.size;
            }
        }
        self.counter = (self.counter + 1) % self.sample;
    }
}

/// A FIFO behind AIFO's quantile admission test.
#[derive(Debug)]
pub struct AifoQueue {
    pkts: VecDeque<Packet>,
    held: Held<Option<EcnThreshold>>,
    window: RankWindow,
    /// Burst allowance k in [0, 1].
    k: f64,
}

impl AifoQueue {
    /// An empty queue with window size `window`, one sample per `sample`
    /// evaluations, burst allowance `k`, and optional ECN marking on arrival.
    pub fn new(window: usize, sample: u32, k: f64, ecn: Option<EcnThreshold>) -> Self {
        AifoQueue {
            pkts: VecDeque::with_capacity(64),
            held: Held::new(ecn),
            window: RankWindow::new(window.max(1), sample),
            k,
        }
    }

    /// Whether the queue is over its quantile threshold for a packet of
    /// rank `rank` with `limit` bytes of capacity.
    #[inline]
    fn over_threshold(&self, rank: u32, limit: u64) -> bool {
        let quantile = self.window.below(rank) as f64 / self.window.size as f64;
        self.held.bytes() as f64 > limit as f64 * (1.0 - (1.0 - self.k) * quantile)
    }

    #[inline]
    fn full(&self, pkt: &Packet, limit: u64) -> bool {
        !self.held.fits(pkt, limit)
    }
}

impl Discipline for AifoQueue {
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if self.full(&pkt, limit) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        let over = self.over_threshold(pkt.prio, limit);
        self.window.observe(pkt.prio);
        if over {
            drops.push((pkt, DropReason::Aqm));
            return 0;
        }
        let marked = self.held.admit(&mut pkt);
        self.pkts.push_back(pkt);
        marked
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        let p = self.pkts.pop_front()?;
        self.held.remove(&p);
        Some(p)
    }

    /// The same test as [`Discipline::enqueue`], without sampling (a
    /// question does not move the window).
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        !self.full(pkt, limit) && !self.over_threshold(pkt.prio, limit)
    }

    crate::counts_from_held!();
    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        self.pkts.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, prio: u32) -> Packet {
        let mut p = Packet::test_data(id, 1000, 0);
        p.prio = prio;
        p
    }

    #[test]
    fn admits_everything_below_k_times_the_buffer() {
        // Q = 10 packets, k = 0.5: the first 5 packets (q ≤ kQ on arrival
        // up to q = 5000) go in whatever their rank, even with a window
        // full of urgent samples.
        let mut q = AifoQueue::new(4, 1_000, 0.5, None);
        let mut d = Drops::new();
        q.window.ranks = vec![0, 1, 2, 3];
        q.window.counter = 1; // no sampling during this test
        for i in 0..6 {
            q.enqueue(pkt(i, 1_000_000), Time::ZERO, 10_000, &mut d);
        }
        // Arrivals 0..5 found q = 0..5000 ≤ kQ = 5000: all admitted.
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(q.len(), 6);
        // The seventh finds q = 6000 > 5000 with quantile 1: refused.
        q.enqueue(pkt(6, 1_000_000), Time::ZERO, 10_000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].1, DropReason::Aqm);
    }

    #[test]
    fn rejects_by_quantile_above_the_threshold() {
        // Window of 4 samples {10, 20, 30, 40}, Q = 10,000 B, k = 0, q = 6000.
        // A packet is admitted iff 6000 ≤ 10,000 · (1 − quantile), i.e.
        // quantile ≤ 0.4: ranks ≤ 20 (quantile 0.25: one sample below 20)
        // pass, rank 21 (quantile 0.5) and above are refused.
        let mut q = AifoQueue::new(4, 1_000, 0.0, None);
        q.window.ranks = vec![10, 20, 30, 40];
        q.window.counter = 1; // no sampling during this test
        let mut d = Drops::new();
        for i in 0..6 {
            let mut p = pkt(100 + i, 0);
            q.held.admit(&mut p);
            q.pkts.push_back(p);
        }
        assert_eq!(q.bytes(), 6000);
        let cases = [
            (0, true),
            (10, true),
            (11, true),
            (20, true),
            (21, false),
            (1000, false),
        ];
        for (rank, admit) in cases {
            assert_eq!(q.admits(&pkt(0, rank), 10_000), admit, "rank {rank}");
            d.clear();
            q.enqueue(pkt(rank, rank), Time::ZERO, 10_000, &mut d);
            assert_eq!(d.is_empty(), admit, "rank {rank}");
            if admit {
                // Keep q at 6000 for the next case.
                let p = q.pkts.pop_back().expect("just admitted");
                q.held.remove(&p);
            } else {
                assert_eq!(d[0].1, DropReason::Aqm);
            }
        }
    }

    #[test]
    fn full_queue_refuses_without_sampling_and_samples_every_nth_evaluation() {
        let mut q = AifoQueue::new(3, 2, 0.9, None);
        let mut d = Drops::new();
        // Evaluations 0, 2, 4 are sampled.
        for (i, rank) in [5u32, 6, 7, 8, 9].into_iter().enumerate() {
            q.enqueue(pkt(i as u32, rank), Time::ZERO, 100_000, &mut d);
        }
        assert_eq!(q.window.ranks, vec![5, 7, 9]);
        // A full queue refuses with BufferFull and leaves the window alone.
        q.enqueue(pkt(9, 1), Time::ZERO, 5000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].1, DropReason::BufferFull);
        assert_eq!(q.window.counter, 1);
        // The ring overwrites its oldest sample.
        q.enqueue(pkt(10, 1), Time::ZERO, 100_000, &mut d); // counter 1 -> 0
        q.enqueue(pkt(11, 2), Time::ZERO, 100_000, &mut d); // sampled
        assert_eq!(q.window.ranks, vec![2, 7, 9]);
        // FIFO order out.
        let out: Vec<u32> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| p.flow.0)
            .collect();
        assert_eq!(out, vec![0, 1, 2, 3, 4, 10, 11]);
    }

    #[test]
    fn admits_predicts_enqueue() {
        let mut rng = crate::engine::Rng::from_seed_u64(9);
        let mut q = AifoQueue::new(20, 3, 0.2, None);
        let mut d = Drops::new();
        for i in 0..3000u32 {
            let p = pkt(i, rng.below(1000) as u32);
            let predicted = q.admits(&p, 20_000);
            d.clear();
            q.enqueue(p, Time::ZERO, 20_000, &mut d);
            assert_eq!(predicted, d.is_empty(), "arrival {i}");
            if rng.below(2) == 0 {
                q.dequeue(Time::ZERO, &mut d);
            }
        }
    }
}
