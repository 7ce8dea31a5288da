//! Pending events keyed by (time, insertion sequence): a timing wheel for
//! the near future and a heap for the rest.
//!
//! Ties in time come out in insertion order, so a run is a pure function of
//! its inputs. Callers keep the number of pending events small (one per busy
//! port or link, one per armed timer). Events due within a few microseconds
//! (transmissions, propagation) go on a timing wheel; later ones (timers)
//! into a 4-ary heap; a pop takes the smaller of the two fronts.

use crate::time::Time;

const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time, then insertion sequence: the order of events.
    time: u64,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// time << 64 | sequence: one comparison orders by time, then
    /// insertion. Built in registers from the two fields, which are
    /// stored apart: a u128 field is written as two 8-byte halves and
    /// copied as one 16-byte load, which then waits for the stores to
    /// retire (failed store forwarding, measured at 5 % of a run).
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time as u128) << 64 | self.seq as u128
    }
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
    fn peek(&self) -> Option<&Entry<E>> {
        self.v.first()
    }
    /// Sift-up with a hole: parents move down one copy each and the new
    /// entry is written once, instead of a three-copy swap per level.
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let key = e.key();
        let mut i = self.v.len();
        self.v.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.v[parent].key() <= key {
                break;
            }
            self.v[i] = self.v[parent];
            i = parent;
        }
        self.v[i] = e;
    }
    /// Remove the root; the last entry sinks from the root through a hole.
    #[inline(never)]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.v.pop()?;
        let n = self.v.len();
        if n == 0 {
            return Some(last);
        }
        let top = self.v[0];
        let key = last.key();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            // One bounds check per level, none per child.
            let kids = &self.v[first..(first + ARITY).min(n)];
            let mut best = 0;
            let mut best_key = kids[0].key();
            for (c, kid) in kids.iter().enumerate().skip(1) {
                if kid.key() < best_key {
                    best = c;
                    best_key = kid.key();
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

/// Width of a wheel bucket: 2^9 ps (0.5 ns), a few bytes' time at 10-100
/// Gbit/s. With hundreds of busy links a wider bucket often held several
/// events, and keeping them in order (a walk along the bucket's list) was
/// 4 % of a pFabric run at 4.1 ns; 0.5 ns buckets made the 3,000-flow
/// pFabric and the bench runs 3-5 % faster.
const BUCKET_SHIFT: u32 = 9;
/// Buckets on the wheel: 4,096 buckets look 2.1 µs ahead, past a
/// full-size packet's transmission at 10 Gbit/s and a datacenter link's
/// propagation; later events (timers, slow or long links) wait in a heap.
const WHEEL_LEN: usize = 1 << 12;

/// A timing wheel (Varghese and Lauck, SOSP 1987) for the near future: one
/// bucket per 0.5 ns, each a list in key order, so that scheduling and
/// popping are a few predictable steps where a heap's sift takes ~330
/// instructions and ~3 mispredicted branches. Every entry lies less than
/// `WHEEL_LEN` buckets after the current time's bucket, so a bucket holds
/// one lap only and the first occupied bucket from the current one holds
/// the wheel's minimum.
struct Wheel<E> {
    /// Entries, linked per bucket through their second field; free ones
    /// are linked from `free` the same way.
    nodes: Vec<(Entry<E>, u32)>,
    /// First free node, or `NIL`.
    free: u32,
    /// (first, last) node of each bucket; `NIL` when empty.
    ends: Box<[(u32, u32); WHEEL_LEN]>,
    /// Bit `i % 64` of word `i / 64` set when bucket `i` is not empty.
    occupied: [u64; WORDS],
    /// Bit `w` set when word `w` of `occupied` is not zero: finding the
    /// first occupied bucket takes two bit scans, however far it is.
    summary: u64,
    len: usize,
}

/// Words of the wheel's occupancy bitmap.
const WORDS: usize = WHEEL_LEN / 64;
const _: () = assert!(WORDS <= 64, "the summary word has a bit per bitmap word");

const NIL: u32 = u32::MAX;

impl<E: Copy> Wheel<E> {
    fn new() -> Self {
        Wheel {
            nodes: Vec::with_capacity(1024),
            free: NIL,
            ends: Box::new([(NIL, NIL); WHEEL_LEN]),
            occupied: [0; WORDS],
            summary: 0,
            len: 0,
        }
    }

    /// Whether an event at `at` fits on the wheel seen from `now`.
    #[inline]
    fn fits(now: u64, at: u64) -> bool {
        (at >> BUCKET_SHIFT) - (now >> BUCKET_SHIFT) < WHEEL_LEN as u64
    }

    #[inline]
    fn bucket_of(time: u64) -> usize {
        (time >> BUCKET_SHIFT) as usize % WHEEL_LEN
    }

    /// Add an entry: appended to its bucket's list in the usual case (later
    /// than everything there); [`Wheel::push_sorted`] otherwise.
    #[inline(always)]
    fn push(&mut self, e: Entry<E>) {
        let b = Self::bucket_of(e.time);
        let node = self.free;
        let node = if node != NIL {
            let slot = &mut self.nodes[node as usize];
            self.free = slot.1;
            // Field by field: a whole-entry copy goes through the stack as
            // one 16-byte load of two 8-byte stores (see [`Entry::key`]).
            slot.0.time = e.time;
            slot.0.seq = e.seq;
            slot.0.event = e.event;
            slot.1 = NIL;
            node
        } else {
            self.new_node(e)
        };
        self.len += 1;
        let (first, last) = self.ends[b];
        if first == NIL {
            self.ends[b] = (node, node);
            self.occupied[b / 64] |= 1 << (b % 64);
            self.summary |= 1 << (b / 64);
        } else if self.nodes[last as usize].0.key() < e.key() {
            self.nodes[last as usize].1 = node;
            self.ends[b].1 = node;
        } else {
            self.push_sorted(b, node, e.key());
        }
    }

    /// A node for `e`, when the free list is empty (only while the wheel
    /// grows to its largest size).
    #[cold]
    #[inline(never)]
    fn new_node(&mut self, e: Entry<E>) -> u32 {
        self.nodes.push((e, NIL));
        (self.nodes.len() - 1) as u32
    }

    /// Link `node`, with `key`, into occupied bucket `b` before an entry
    /// with a larger key (out of the hot path: most entries are appended).
    #[cold]
    #[inline(never)]
    fn push_sorted(&mut self, b: usize, node: u32, key: u128) {
        let first = self.ends[b].0;
        if key < self.nodes[first as usize].0.key() {
            self.nodes[node as usize].1 = first;
            self.ends[b].0 = node;
            return;
        }
        let mut at = first;
        loop {
            let next = self.nodes[at as usize].1;
            if self.nodes[next as usize].0.key() > key {
                self.nodes[node as usize].1 = next;
                self.nodes[at as usize].1 = node;
                return;
            }
            at = next;
        }
    }

    /// The first occupied bucket at or after the bucket of `now`, going
    /// round the wheel once.
    #[inline]
    fn first_bucket(&self, now: u64) -> Option<usize> {
        let start = (now >> BUCKET_SHIFT) as usize % WHEEL_LEN;
        let w = start / 64;
        let bits = self.occupied[w] & (!0u64 << (start % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        // A later word of this lap, else (wrapping) the first occupied word
        // of the next one, which may be `w` itself below `start`.
        let later = self.summary & (!1u64 << w);
        let word = if later != 0 { later } else { self.summary };
        if word == 0 {
            return None;
        }
        let w = word.trailing_zeros() as usize;
        Some(w * 64 + self.occupied[w].trailing_zeros() as usize)
    }

    /// Key of the first entry of occupied bucket `b`.
    #[inline]
    fn first_key(&self, b: usize) -> u128 {
        self.nodes[self.ends[b].0 as usize].0.key()
    }

    /// Remove the first entry of occupied bucket `b` (the smallest entry
    /// when `b` is [`Wheel::first_bucket`]).
    #[inline]
    fn pop_from(&mut self, b: usize) -> Entry<E> {
        let (first, last) = self.ends[b];
        let slot = &mut self.nodes[first as usize];
        let (e, next) = *slot;
        slot.1 = self.free;
        self.free = first;
        if first == last {
            self.ends[b] = (NIL, NIL);
            let word = &mut self.occupied[b / 64];
            *word &= !(1 << (b % 64));
            if *word == 0 {
                self.summary &= !(1 << (b / 64));
            }
        } else {
            self.ends[b].0 = next;
        }
        self.len -= 1;
        e
    }
}

/// Where the earliest pending event is, found by [`EventQueue::peek_time`]
/// and kept until the next pop, so that a peek and the pop after it scan
/// the wheel's bitmap once, not twice. Plain integers, no enum and no u128:
/// it is written and read back within a few instructions, and a value
/// stored in 8-byte halves but loaded whole stalls the load (failed store
/// forwarding; measured at 12 % of a run).
#[derive(Clone, Copy)]
struct Front {
    /// A wheel bucket, [`Front::HEAP`] or [`Front::UNKNOWN`].
    place: u32,
    /// Time of the earliest event, when `place` is known.
    time: u64,
}

impl Front {
    /// The earliest event is the heap's root.
    const HEAP: u32 = u32::MAX - 1;
    /// Not looked up since the last pop.
    const UNKNOWN: Front = Front {
        place: u32::MAX,
        time: 0,
    };
}

/// A place in the order of same-time events, taken by
/// [`EventQueue::reserve`] for an event that may be scheduled later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation(u64);

/// Pending events ordered by (time, insertion sequence).
pub struct EventQueue<E> {
    /// Events less than the wheel's span ahead of the time they were
    /// scheduled at.
    wheel: Wheel<E>,
    /// The others.
    heap: Heap<E>,
    /// The earliest event's place, when known (see [`Front`]).
    front: Front,
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
            wheel: Wheel::new(),
            heap: Heap::with_capacity(1024),
            front: Front::UNKNOWN,
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
        let seq = self.next_seq;
        self.next_seq += 1;
        let place = self.insert(at, seq, event);
        // A known front stays known: the new event is the new front only
        // if strictly earlier (at an equal time it comes out after).
        if self.front.place != Front::UNKNOWN.place && at.0 < self.front.time {
            self.front = Front { place, time: at.0 };
        }
    }

    /// Take the place among same-time events that an event scheduled now
    /// would get, without scheduling one. [`EventQueue::schedule_reserved`]
    /// later puts an event exactly there, so a component can leave out
    /// events that turn out to be unneeded and still run exactly as if it
    /// had scheduled them all (a NIC's run-dry event, see
    /// `Network::request_nic_idle`).
    #[inline]
    pub fn reserve(&mut self) -> Reservation {
        let seq = self.next_seq;
        self.next_seq += 1;
        Reservation(seq)
    }

    /// Schedule `event` at `at` in the place `r` took when it was reserved:
    /// it comes out after same-time events scheduled before the reservation
    /// and before those scheduled after it. Each reservation is for one
    /// event (a second one with the same place would tie in an unspecified
    /// order).
    #[inline]
    pub fn schedule_reserved(&mut self, at: Time, r: Reservation, event: E) {
        self.insert(at, r.0, event);
        // At an equal time the reserved event may precede the remembered
        // front: look it up again.
        if self.front.place != Front::UNKNOWN.place && at.0 <= self.front.time {
            self.front = Front::UNKNOWN;
        }
    }

    /// Put an entry on the wheel or the heap; returns its [`Front`] place.
    #[inline(always)]
    fn insert(&mut self, at: Time, seq: u64, event: E) -> u32 {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.max(self.now);
        let e = Entry {
            time: at.0,
            seq,
            event,
        };
        if Wheel::<E>::fits(self.now.0, at.0) {
            self.wheel.push(e);
            Wheel::<E>::bucket_of(e.time) as u32
        } else {
            self.push_far(e)
        }
    }

    /// [`EventQueue::insert`] of an event past the wheel's span (timers).
    #[inline(never)]
    fn push_far(&mut self, e: Entry<E>) -> u32 {
        self.heap.push(e);
        Front::HEAP
    }

    /// Find the earliest pending event.
    #[inline(always)]
    fn find_front(&self) -> Front {
        let heap = self.heap.peek().map_or(u128::MAX, |h| h.key());
        match self.wheel.first_bucket(self.now.0) {
            Some(b) if self.wheel.first_key(b) < heap => Front {
                place: b as u32,
                time: (self.wheel.first_key(b) >> 64) as u64,
            },
            _ if heap != u128::MAX => Front {
                place: Front::HEAP,
                time: (heap >> 64) as u64,
            },
            _ => Front::UNKNOWN,
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        if self.front.place == Front::UNKNOWN.place {
            self.front = self.find_front();
        }
        (self.front.place != Front::UNKNOWN.place).then_some(Time(self.front.time))
    }

    /// The earliest pending event, without removing it.
    #[inline]
    pub fn peek(&mut self) -> Option<&E> {
        self.peek_time()?;
        match self.front.place {
            Front::HEAP => self.heap.peek().map(|e| &e.event),
            b => Some(
                &self.wheel.nodes[self.wheel.ends[b as usize].0 as usize]
                    .0
                    .event,
            ),
        }
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let mut front = std::mem::replace(&mut self.front, Front::UNKNOWN);
        if front.place == Front::UNKNOWN.place {
            front = self.find_front();
        }
        let e = match front.place {
            Front::HEAP => self.heap.pop()?,
            p if p == Front::UNKNOWN.place => return None,
            bucket => self.wheel.pop_from(bucket as usize),
        };
        self.now = Time(e.time);
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
        self.wheel.len + self.heap.len()
    }

    /// Whether no events are pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
                if rng.below(4) == 0 && !q.is_empty() {
                    // Peek between schedules: the remembered front must
                    // follow the schedules that come after it.
                    q.peek_time();
                }
                if rng.below(100) < 60 || q.is_empty() {
                    // Same bucket, on the wheel, about its horizon, far.
                    let horizon = (WHEEL_LEN as u64) << BUCKET_SHIFT;
                    let span = [4, 1 << 20, horizon, 2 * horizon, 1 << 40][rng.below(5) as usize];
                    let at = now + rng.below(span);
                    q.schedule(Time(at), seq);
                    scheduled.push((at, seq));
                } else {
                    // A peek (sometimes) must name the time the pop returns,
                    // even across the schedules made since an earlier peek.
                    let peeked = (rng.below(2) == 0).then(|| q.peek_time().unwrap());
                    let peeked_event = q.peek().copied();
                    let (t, e) = q.pop().unwrap();
                    assert!(peeked.is_none_or(|p| p == t));
                    assert_eq!(peeked_event, Some(e));
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

    /// Events scheduled later into reserved places come out exactly where
    /// they would have had they been scheduled when reserved; reservations
    /// never used leave no trace. Checked against the queue itself,
    /// scheduling every event at once.
    #[test]
    fn a_reserved_place_orders_like_an_event_scheduled_then() {
        let mut rng = crate::engine::Rng::from_seed_u64(5);
        for _ in 0..30 {
            let mut q = EventQueue::new();
            let mut reference = EventQueue::new();
            // (time, reservation, event) not yet scheduled in `q`.
            let mut held: Vec<(u64, Reservation, u64)> = Vec::new();
            let mut popped = Vec::new();
            let mut expected = Vec::new();
            let mut now = 0u64;
            for id in 0..2000u64 {
                let horizon = (WHEEL_LEN as u64) << BUCKET_SHIFT;
                let span = [4, 1 << 16, 2 * horizon][rng.below(3) as usize];
                let at = now + rng.below(span);
                match rng.below(10) {
                    0..=4 => {
                        q.schedule(Time(at), id);
                        reference.schedule(Time(at), id);
                    }
                    5..=6 => {
                        // Reserved now; scheduled later or never (odd ids).
                        let r = q.reserve();
                        if id % 2 == 0 {
                            held.push((at, r, id));
                            reference.schedule(Time(at), id);
                        } else {
                            reference.reserve();
                        }
                    }
                    7 if !held.is_empty() => {
                        let (t, r, e) = held.swap_remove(rng.below(held.len() as u64) as usize);
                        q.schedule_reserved(Time(t.max(now)), r, e);
                    }
                    _ => {
                        // Pop only when no held event would come first.
                        let Some(t) = q.peek_time() else { continue };
                        if held.iter().any(|h| h.0 <= t.0) {
                            continue;
                        }
                        let (t, e) = q.pop().unwrap();
                        now = t.0;
                        popped.push((t.0, e));
                    }
                }
            }
            for (t, r, e) in held.drain(..) {
                q.schedule_reserved(Time(t.max(now)), r, e);
            }
            while let Some((t, e)) = q.pop() {
                popped.push((t.0, e));
            }
            while let Some((t, e)) = reference.pop() {
                expected.push((t.0, e));
            }
            assert_eq!(popped, expected);
        }
    }
}
