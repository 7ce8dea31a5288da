//! A token-bucket rate limit around any discipline: the queue's departures
//! never exceed `rate` over any interval, beyond a burst allowance. Credit
//! queues (ExpressPass: credits rate-limited to a share of the link) and
//! notification caps (FastLane) are such queues.
//!
//! The bucket is kept as a theoretical arrival time (the GCRA form of the
//! token bucket, ITU-T I.371): the head packet may leave at `t` if
//! `tat − τ ≤ t`, where `τ` is the burst's serialization time at `rate`;
//! leaving sets `tat = max(tat, t) + size / rate`. Integer picoseconds only,
//! exactly as the links' own serialization. Over any interval of length `T`
//! the departures then hold at most `rate·T + burst + one packet` bytes.

use super::{Dequeue, Discipline, Drops, Queue};
use crate::packet::Packet;
use crate::time::{Duration, Rate, Time};

/// A token bucket in GCRA form.
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    rate: Rate,
    /// Serialization time of the burst allowance at `rate`.
    tolerance: Duration,
    /// Theoretical arrival time: when the bucket would be full again.
    tat: Time,
}

impl TokenBucket {
    /// A bucket filling at `rate` that lets one packet plus `burst_bytes`
    /// leave back to back when it is full.
    pub fn new(rate: Rate, burst_bytes: u64) -> Self {
        TokenBucket {
            rate,
            tolerance: rate.tx_time(burst_bytes),
            tat: Time::ZERO,
        }
    }

    /// The earliest time at or after `now` a packet may leave.
    #[inline]
    pub fn ready_at(&self, now: Time) -> Time {
        Time(self.tat.ps().saturating_sub(self.tolerance.ps())).max(now)
    }

    /// Charge a departure of `bytes` at `now` (which must be `ready_at`-conforming).
    #[inline]
    pub fn charge(&mut self, now: Time, bytes: u64) {
        self.tat = self.tat.max(now) + self.rate.tx_time(bytes);
    }
}

/// Any discipline behind a token bucket. It holds no packets of its own:
/// counts, marks and admission are the inner discipline's (its
/// [`super::Held`]), so it keeps no copy of them.
#[derive(Debug)]
pub struct RateLimited {
    inner: Queue,
    bucket: TokenBucket,
}

impl RateLimited {
    /// `inner` limited to `rate` with a burst allowance of `burst_bytes`.
    pub fn new(inner: Queue, rate: Rate, burst_bytes: u64) -> Self {
        RateLimited {
            inner,
            bucket: TokenBucket::new(rate, burst_bytes),
        }
    }
}

impl Discipline for RateLimited {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        self.inner.enqueue(pkt, now, limit, drops)
    }

    /// Ignores the bucket: the network calls [`Discipline::poll`].
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        self.inner.dequeue(now, drops)
    }

    #[inline]
    fn poll(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        if self.inner.is_empty() {
            return Dequeue::Empty;
        }
        let at = self.bucket.ready_at(now);
        if at > now {
            return Dequeue::NotBefore(at);
        }
        match self.inner.poll(now, drops) {
            Dequeue::Packet(p) => {
                self.bucket.charge(now, p.size as u64);
                Dequeue::Packet(p)
            }
            other => other,
        }
    }

    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        self.inner.admits(pkt, limit)
    }
    /// As the discipline it limits.
    fn schedules_by_priority(&self) -> bool {
        self.inner.schedules_by_priority()
    }
    fn bytes(&self) -> u64 {
        self.inner.bytes()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn drain(&mut self) -> Vec<Packet> {
        self.inner.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::FifoQueue;

    fn pkt(size: u32) -> Packet {
        Packet::test_data(0, size, 0)
    }

    /// Serve a backlog through a 10 Gbit/s transmitter as the network does
    /// (poll when idle, wait for `NotBefore`), recording departures.
    fn serve(q: &mut RateLimited, sizes: &[u32]) -> Vec<(Time, u32)> {
        let mut d = Drops::new();
        for &s in sizes {
            q.enqueue(pkt(s), Time::ZERO, u64::MAX, &mut d);
        }
        let link = Rate::from_bps(10_000_000_000).unwrap();
        let mut now = Time::ZERO;
        let mut out = Vec::new();
        loop {
            match q.poll(now, &mut d) {
                Dequeue::Packet(p) => {
                    out.push((now, p.size));
                    now += link.tx_time(p.size as u64);
                }
                Dequeue::NotBefore(t) => {
                    assert!(t > now, "NotBefore must lie in the future");
                    now = t;
                }
                Dequeue::Empty => return out,
            }
        }
    }

    #[test]
    fn a_rate_limited_queue_never_exceeds_its_rate() {
        let rate = Rate::from_bps(1_000_000_000).unwrap();
        let burst = 3000u64;
        let mut q = RateLimited::new(Queue::Fifo(FifoQueue::new(1, None)), rate, burst);
        // Mixed sizes, so the check does not rely on equal packets.
        let sizes: Vec<u32> = (0..400).map(|i| [1500, 64, 900, 1500][i % 4]).collect();
        let out = serve(&mut q, &sizes);
        assert_eq!(out.len(), sizes.len());
        let max_pkt = 1500u64;
        // Every window [t_i, t_j]: bytes leaving ≤ rate·(t_j − t_i) + burst + one packet.
        for i in 0..out.len() {
            let mut bytes = 0u64;
            for j in i..out.len() {
                bytes += out[j].1 as u64;
                let window = out[j].0 - out[i].0;
                let allowed_ps = window.ps() + rate.tx_time(burst + max_pkt).ps();
                assert!(
                    rate.tx_time(bytes).ps() <= allowed_ps,
                    "{bytes} B left in {} ps (from departure {i} to {j})",
                    window.ps()
                );
            }
        }
        // And it is not slower than the rate either: the backlog drains in
        // its serialization time at `rate`, less the burst.
        let total: u64 = sizes.iter().map(|&s| s as u64).sum();
        let last = out.last().unwrap().0;
        let ideal = rate.tx_time(total - *sizes.last().unwrap() as u64);
        assert!(last.ps() + rate.tx_time(burst).ps() >= ideal.ps());
        assert!(last.ps() <= ideal.ps(), "{} > {}", last.ps(), ideal.ps());
    }

    #[test]
    fn an_idle_bucket_lets_one_packet_plus_the_burst_through_at_line_rate() {
        let rate = Rate::from_bps(1_000_000_000).unwrap();
        let mut q = RateLimited::new(Queue::Fifo(FifoQueue::new(1, None)), rate, 3000);
        let out = serve(&mut q, &[1500, 1500, 1500, 1500]);
        let link = Rate::from_bps(10_000_000_000).unwrap();
        // One packet plus the 3000-byte burst: back to back at 10 Gbit/s.
        assert_eq!(out[2].0, Time::ZERO + link.tx_time(3000));
        // The fourth waits until the bucket, 3 x 12 us ahead, is within the
        // 24 us burst tolerance: at exactly 12 us.
        assert_eq!(out[3].0, Time::ZERO + Duration::from_us(12));
    }
}
