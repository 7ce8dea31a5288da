//! A min-heap of events keyed by (time, insertion sequence).
//!
//! Ties in time come out in insertion order, so a run is a pure function of
//! its inputs. Callers keep the number of pending events small (one per busy
//! port or link, one per armed timer), which keeps the heap in cache.

use crate::time::Time;

const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// time << 64 | sequence: one comparison orders by time, then insertion.
    key: u128,
    event: E,
}

/// A 4-ary min-heap on `key`: half the levels of a binary heap.
struct Heap<E> {
    v: Vec<Entry<E>>,
}

impl<E: Copy> Heap<E> {
    fn with_capacity(n: usize) -> Self {
        Heap {
            v: Vec::with_capacity(n),
        }
    }
    fn len(&self) -> usize {
        self.v.len()
    }
    fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    fn peek(&self) -> Option<&Entry<E>> {
        self.v.first()
    }
    /// Sift-up with a hole: parents move down one copy each and the new
    /// entry is written once, instead of a three-copy swap per level.
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let key = e.key;
        let mut i = self.v.len();
        self.v.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.v[parent].key <= key {
                break;
            }
            self.v[i] = self.v[parent];
            i = parent;
        }
        self.v[i] = e;
    }
    /// Remove the root; the last entry sinks from the root through a hole.
    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.v.pop()?;
        let n = self.v.len();
        if n == 0 {
            return Some(last);
        }
        let top = self.v[0];
        let key = last.key;
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            // One bounds check per level, none per child.
            let kids = &self.v[first..(first + ARITY).min(n)];
            let mut best = 0;
            let mut best_key = kids[0].key;
            for (c, kid) in kids.iter().enumerate().skip(1) {
                if kid.key < best_key {
                    best = c;
                    best_key = kid.key;
                }
            }
            let best = first + best;
            if key <= best_key {
                break;
            }
            self.v[i] = self.v[best];
            i = best;
        }
        self.v[i] = last;
        Some(top)
    }
}

/// Pending events ordered by (time, insertion sequence).
pub struct EventQueue<E> {
    heap: Heap<E>,
    next_seq: u64,
    now: Time,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: Heap::with_capacity(1024),
            next_seq: 0,
            now: Time::ZERO,
        }
    }

    /// The time of the last event popped.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at `at`. Scheduling in the past is a logic error; in
    /// release builds the event runs at the current time instead.
    #[inline]
    pub fn schedule(&mut self, at: Time, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            key: (at.0 as u128) << 64 | seq as u128,
            event,
        });
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time((e.key >> 64) as u64))
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.now = Time((e.key >> 64) as u64);
        Some((self.now, e.event))
    }

    /// Advance the clock without an event (used when the run loop takes an
    /// event from another ordered source, such as the flow arrival list).
    #[inline]
    pub fn advance_to(&mut self, t: Time) {
        debug_assert!(t >= self.now);
        self.now = t;
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no events are pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(Time(5), 'a');
        q.schedule(Time(3), 'b');
        q.schedule(Time(5), 'c');
        q.schedule(Time(3), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), Time(5));
    }

    /// Against a reference order on random schedules that mix ties, near and
    /// far events, and scheduling while popping.
    #[test]
    fn matches_a_reference_order() {
        let mut rng = crate::engine::Rng::from_seed_u64(11);
        for _ in 0..30 {
            let mut q = EventQueue::new();
            let mut scheduled = Vec::new();
            let mut popped = Vec::new();
            let mut now = 0u64;
            for seq in 0..2000u64 {
                if rng.below(100) < 60 || q.is_empty() {
                    let span = [4, 1 << 20, 1 << 40][rng.below(3) as usize];
                    let at = now + rng.below(span);
                    q.schedule(Time(at), seq);
                    scheduled.push((at, seq));
                } else {
                    let (t, e) = q.pop().unwrap();
                    now = t.0;
                    popped.push((t.0, e));
                }
            }
            while let Some((t, e)) = q.pop() {
                popped.push((t.0, e));
            }
            assert!(popped.windows(2).all(|w| w[0] < w[1]), "out of order");
            scheduled.sort();
            assert_eq!(popped, scheduled);
        }
    }
}
