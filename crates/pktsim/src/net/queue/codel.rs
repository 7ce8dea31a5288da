//! CoDel (Nichols and Jacobson; RFC 8289): a FIFO that drops at the head
//! when packets have waited longer than `target` for at least `interval`,
//! then drops ever faster (next drop `interval/√count` later) until the
//! sojourn time falls below `target` again. The physical buffer still
//! tail-drops when full ([`Held`]'s rule); CoDel itself does not mark.

use super::{Discipline, Drops, Held};
use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::{Duration, Time};
use std::collections::VecDeque;

/// A CoDel queue.
#[derive(Debug)]
pub struct CodelQueue {
    /// Packets with their enqueue times.
    q: VecDeque<(Time, Packet)>,
    held: Held,
    target: Duration,
    interval: Duration,
    /// Largest packet seen (RFC 8289's `maxpacket`, one MTU).
    max_packet: u64,
    /// When the sojourn time has been above target for a full interval
    /// (`None`: it is below target).
    first_above: Option<Time>,
    dropping: bool,
    drop_next: Time,
    count: u32,
    last_count: u32,
}

impl CodelQueue {
    /// A queue with these parameters (RFC 8289 §4.2–4.3).
    pub fn new(target: Duration, interval: Duration) -> Self {
        CodelQueue {
            q: VecDeque::with_capacity(16),
            held: Held::unmarked(),
            target,
            interval,
            max_packet: 0,
            first_above: None,
            dropping: false,
            drop_next: Time::ZERO,
            count: 0,
            last_count: 0,
        }
    }

    fn pop(&mut self) -> Option<(Time, Packet)> {
        let e = self.q.pop_front()?;
        self.held.remove(&e.1);
        Some(e)
    }

    /// RFC 8289 `dodequeue`: the head packet and whether it may be dropped.
    fn do_dequeue(&mut self, now: Time) -> (Option<Packet>, bool) {
        let Some((at, p)) = self.pop() else {
            self.first_above = None;
            return (None, false);
        };
        let sojourn = now - at;
        if sojourn < self.target || self.held.bytes() <= self.max_packet {
            // Below target, or less than one MTU left: no standing queue.
            self.first_above = None;
            return (Some(p), false);
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + self.interval);
                (Some(p), false)
            }
            Some(t) => (Some(p), now >= t),
        }
    }

    /// RFC 8289 control law: the next drop `interval/√count` after `t`.
    fn control_law(&self, t: Time) -> Time {
        let gap = self.interval.ps() as f64 / (self.count.max(1) as f64).sqrt();
        t + Duration::from_ps(gap as u64)
    }
}

impl Discipline for CodelQueue {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if !self.held.fits(&pkt, limit) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        self.max_packet = self.max_packet.max(pkt.size as u64);
        let marked = self.held.admit(&mut pkt);
        self.q.push_back((now, pkt));
        marked
    }

    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        let (mut p, ok) = self.do_dequeue(now);
        if self.dropping {
            if !ok {
                // Sojourn time fell below target: leave the dropping state.
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                if let Some(d) = p.take() {
                    drops.push((d, DropReason::Aqm));
                }
                self.count += 1;
                let (next, ok) = self.do_dequeue(now);
                p = next;
                if ok {
                    self.drop_next = self.control_law(self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok {
            // Enter the dropping state: drop this packet, send the next.
            if let Some(d) = p.take() {
                drops.push((d, DropReason::Aqm));
            }
            let (next, _) = self.do_dequeue(now);
            p = next;
            self.dropping = true;
            // RFC 8289 §5.5: resume near the last drop rate if the dropping
            // state was left recently.
            let delta = self.count.saturating_sub(self.last_count);
            self.count = if delta > 1 && now < self.drop_next + self.interval.times(16) {
                delta
            } else {
                1
            };
            self.drop_next = self.control_law(now);
            self.last_count = self.count;
        }
        p
    }

    crate::counts_from_held!();

    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        self.q.drain(..).map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt() -> Packet {
        Packet::test_data(0, 1500, 0)
    }

    /// A queue fed 2 packets per service: the sojourn time grows, CoDel
    /// starts dropping one interval after it first exceeds target, then
    /// drops at interval/√count spacing.
    #[test]
    fn drops_after_an_interval_above_target_then_faster() {
        let us = Duration::from_us;
        let mut q = CodelQueue::new(us(5), us(100));
        let mut drops = Drops::new();
        let mut drop_times = Vec::new();
        let mut now = Time::ZERO;
        for _ in 0..400 {
            q.enqueue(pkt(), now, u64::MAX, &mut drops);
            q.enqueue(pkt(), now, u64::MAX, &mut drops);
            now += us(1);
            let before = drops.len();
            q.dequeue(now, &mut drops);
            if drops.len() > before {
                drop_times.push(now);
            }
        }
        assert!(drop_times.len() >= 3, "drops at {drop_times:?}");
        // First drop: the head's sojourn reaches 5 us at t = 9 us, so one
        // interval later, at 109 us.
        let first = (drop_times[0] - Time::ZERO).ps();
        assert!(first >= us(105).ps() && first <= us(110).ps(), "{first}");
        // The gaps shrink as interval/√count.
        let g1 = (drop_times[1] - drop_times[0]).ps() as f64;
        let g2 = (drop_times[2] - drop_times[1]).ps() as f64;
        assert!((g1 - 100e6).abs() < 1.5e6, "g1 = {g1}");
        assert!((g2 - 100e6 / 2f64.sqrt()).abs() < 1.5e6, "g2 = {g2}");
    }

    #[test]
    fn no_drops_below_target() {
        let us = Duration::from_us;
        let mut q = CodelQueue::new(us(5), us(100));
        let mut drops = Drops::new();
        let mut now = Time::ZERO;
        for _ in 0..1000 {
            q.enqueue(pkt(), now, u64::MAX, &mut drops);
            q.enqueue(pkt(), now, u64::MAX, &mut drops);
            now += us(1);
            q.dequeue(now, &mut drops);
            q.dequeue(now, &mut drops);
        }
        assert!(drops.is_empty());
    }
}
