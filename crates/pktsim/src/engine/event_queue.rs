//! Pending events keyed by time and tie: a timing wheel for the near future
//! and a heap for the rest.
//!
//! Every event names itself with a [`Tie`]: its phase, its owner (the
//! component that handles it) and the owner's id for it. Events at equal
//! times come out in the order of a key derived from the tie, the time and
//! the run's salt alone, never from when they were scheduled, so the order
//! does not depend on how the network is cut into pieces or how many
//! threads run them (docs/engine.md). The key ([`order_key`]) runs an
//! instant phase by phase (the run loop's phases: ends of transmissions,
//! then arrivals, then the rest, so that a packet leaving a queue at the
//! instant another arrives has left it) and shuffles the events of one
//! phase: a plain (owner, id) order would put the same component first at
//! every instant, and a fixed priority among packets that meet at a
//! drop-tail queue locks flows out (two NewReno flows on a dumbbell got
//! 100 % and 0 % of the link); a per-instant shuffle does not, as the
//! insertion order it replaces did not. Callers keep the
//! number of pending events small (one per busy port or link, one per armed
//! timer). Events due within a few microseconds (transmissions, propagation)
//! go on a timing wheel; later ones (timers) into a 4-ary heap; a pop takes
//! the smaller of the two fronts.

use crate::time::Time;

/// The name of an event, from which its place among the events of its
/// instant follows ([`order_key`]): its phase (top [`Tie::PHASE_BITS`]
/// bits), its owner's id ([`Tie::OWNER_BITS`] bits) and the owner's id for
/// the event (low [`Tie::ID_BITS`] bits). Two pending events with the same
/// time and tie must be the same event (they then run in either order to
/// the same effect): the id names the event within its phase and owner,
/// e.g. the port of an arrival or the kind and number of a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tie(u64);

impl Tie {
    /// Bits of the phase: the phases of an instant run in order.
    pub const PHASE_BITS: u32 = 3;
    /// Bits of the owner's id: 16.7 M components.
    pub const OWNER_BITS: u32 = 24;
    /// Bits of the event's id within its phase and owner.
    pub const ID_BITS: u32 = 64 - Self::PHASE_BITS - Self::OWNER_BITS;
    /// The largest owner id; [`Tie::GLOBAL`] uses it.
    pub const MAX_OWNER: u32 = (1 << Self::OWNER_BITS) - 1;
    /// The owner of events that belong to no component (whole-run samples).
    pub const GLOBAL: u32 = Self::MAX_OWNER;
    /// The largest phase.
    pub const MAX_PHASE: u8 = (1 << Self::PHASE_BITS) - 1;

    /// The tie of `owner`'s event `id` in phase `phase`. Values beyond their
    /// bits are a logic error (the topology refuses that many nodes); in
    /// release builds they are cut to their bits.
    #[inline(always)]
    pub const fn new(phase: u8, owner: u32, id: u64) -> Tie {
        debug_assert!(
            phase <= Self::MAX_PHASE && owner <= Self::MAX_OWNER && id < 1 << Self::ID_BITS
        );
        Tie((phase as u64) << (64 - Self::PHASE_BITS)
            | ((owner & Self::MAX_OWNER) as u64) << Self::ID_BITS
            | (id & ((1 << Self::ID_BITS) - 1)))
    }

    /// The phase.
    #[inline(always)]
    pub const fn phase(self) -> u8 {
        (self.0 >> (64 - Self::PHASE_BITS)) as u8
    }

    /// The owner's id.
    #[inline(always)]
    pub const fn owner(self) -> u32 {
        (self.0 >> Self::ID_BITS) as u32 & Self::MAX_OWNER
    }

    /// The event's id within its phase and owner.
    #[inline(always)]
    pub const fn id(self) -> u64 {
        self.0 & ((1 << Self::ID_BITS) - 1)
    }

    /// The tie as one integer (phase, owner, id).
    #[inline(always)]
    pub const fn bits(self) -> u64 {
        self.0
    }
}

/// Bits [`mix`] scatters: the owner and id of a tie, below its phase.
const MIXED_BITS: u32 = 64 - Tie::PHASE_BITS;
const MIXED_MASK: u64 = (1 << MIXED_BITS) - 1;
/// The shift of [`mix`]'s xor-shifts: at least half of [`MIXED_BITS`], so
/// that each xor-shift undoes itself.
const MIX_SHIFT: u32 = MIXED_BITS.div_ceil(2);

/// Multipliers of [`mix`]: odd, so that multiplying (modulo a power of 2)
/// is a bijection.
const MIX_1: u64 = 0x9E37_79B9_7F4A_7C15;
const MIX_2: u64 = 0xBF58_476D_1CE4_E5B9;

/// The inverse of an odd `c` modulo 2^64, hence modulo every smaller power
/// of 2 (Newton's iteration: each step doubles the correct low bits, from 3).
const fn inverse(c: u64) -> u64 {
    let mut inv = c;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(c.wrapping_mul(inv)));
        i += 1;
    }
    inv
}

const MIX_1_INV: u64 = inverse(MIX_1);
const MIX_2_INV: u64 = inverse(MIX_2);
const _: () = assert!(MIX_1.wrapping_mul(MIX_1_INV) == 1 && MIX_2.wrapping_mul(MIX_2_INV) == 1);

/// A bijection of the numbers below 2^[`MIXED_BITS`] that scatters nearby
/// inputs: two rounds of an odd multiply and a xor-shift (each invertible,
/// see [`unmix`]).
#[inline(always)]
const fn mix(x: u64) -> u64 {
    let x = x.wrapping_mul(MIX_1) & MIXED_MASK;
    let x = x ^ (x >> MIX_SHIFT);
    let x = x.wrapping_mul(MIX_2) & MIXED_MASK;
    x ^ (x >> MIX_SHIFT)
}

/// The inverse of [`mix`].
#[inline(always)]
const fn unmix(y: u64) -> u64 {
    let x = y ^ (y >> MIX_SHIFT);
    let x = x.wrapping_mul(MIX_2_INV) & MIXED_MASK;
    let x = x ^ (x >> MIX_SHIFT);
    x.wrapping_mul(MIX_1_INV) & MIXED_MASK
}

/// What the owner and id of the ties of instant `time` are mixed with.
#[inline(always)]
const fn instant_salt(time: u64, salt: u64) -> u64 {
    mix((time ^ salt) & MIXED_MASK)
}

/// The key that orders the events of instant `time`: the tie's phase, then
/// its owner and id mixed with a salt made from the time and the queue's
/// `salt` (drawn from the run's seed: the order of simultaneous events is a
/// random choice like any other). For one instant it is a bijection of
/// ties, so distinct events never share a key, and which of two events of a
/// phase goes first changes from instant to instant like a coin toss, the
/// same on every run with that salt and on every partition of the network.
#[inline(always)]
pub const fn order_key(tie: Tie, time: Time, salt: u64) -> u64 {
    let phase = tie.0 & !MIXED_MASK;
    phase | mix((tie.0 & MIXED_MASK) ^ instant_salt(time.0, salt))
}

/// The tie behind `key` at `time` (the inverse of [`order_key`]).
#[inline(always)]
const fn tie_of(key: u64, time: u64, salt: u64) -> Tie {
    let phase = key & !MIXED_MASK;
    Tie(phase | (unmix(key & MIXED_MASK) ^ instant_salt(time, salt)))
}

/// A popped event's place among the events of its instant: its order key,
/// from which [`Popped::tie`] computes the tie only when asked. Most events
/// are handled without their tie (a timer's needs it for its owner), and
/// computing it back for every event was two `mix` rounds per event.
#[derive(Clone, Copy, Debug)]
pub struct Popped {
    key: u64,
    time: u64,
    salt: u64,
}

impl Popped {
    /// The event's tie, as it was scheduled.
    #[inline]
    pub fn tie(self) -> Tie {
        tie_of(self.key, self.time, self.salt)
    }
}

const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time, then the tie's order key ([`order_key`]): the order of events.
    time: u64,
    tie: u64,
    event: E,
}

impl<E> Entry<E> {
    /// time << 64 | order key: one comparison orders by time, then key. Built in registers from the two fields, which are
    /// stored apart: a u128 field is written as two 8-byte halves and
    /// copied as one 16-byte load, which then waits for the stores to
    /// retire (failed store forwarding, measured at 5 % of a run).
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time as u128) << 64 | self.tie as u128
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

    /// Add an entry: appended to its bucket's list in the usual case (not
    /// earlier than anything there; an equal key is the same event, see
    /// [`Tie`]); [`Wheel::push_sorted`] otherwise.
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
            slot.0.tie = e.tie;
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
        } else if self.nodes[last as usize].0.key() <= e.key() {
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

/// Pending events ordered by (time, [`Tie`]).
pub struct EventQueue<E> {
    /// Events less than the wheel's span ahead of the time they were
    /// scheduled at.
    wheel: Wheel<E>,
    /// The others.
    heap: Heap<E>,
    /// The earliest event's place, when known (see [`Front`]).
    front: Front,
    now: Time,
    /// The salt of [`order_key`].
    salt: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero, salt 0.
    pub fn new() -> Self {
        Self::with_salt(0)
    }

    /// An empty queue at time zero whose same-time events are ordered with
    /// `salt` ([`order_key`]); a run draws it from its seed.
    pub fn with_salt(salt: u64) -> Self {
        EventQueue {
            salt,
            wheel: Wheel::new(),
            heap: Heap::with_capacity(1024),
            front: Front::UNKNOWN,
            now: Time::ZERO,
        }
    }

    /// The time of the last event popped.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at `at`, in the place `tie` gives it among the
    /// events of that instant. Scheduling in the past is a logic error; in
    /// release builds the event runs at the current time instead.
    #[inline]
    pub fn schedule(&mut self, at: Time, tie: Tie, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.max(self.now);
        let place = self.insert(at, order_key(tie, at, self.salt), event);
        // A known front stays known unless the new event may come first:
        // strictly earlier, it is the new front; at the same time, it went
        // to the front's own wheel bucket (same time, same bucket), whose
        // list is kept in order, unless the front is the heap's root.
        if self.front.place != Front::UNKNOWN.place {
            if at.0 < self.front.time {
                self.front = Front { place, time: at.0 };
            } else if at.0 == self.front.time && self.front.place == Front::HEAP {
                self.front = Front::UNKNOWN;
            }
        }
    }

    /// Put an entry on the wheel or the heap; returns its [`Front`] place.
    #[inline(always)]
    fn insert(&mut self, at: Time, tie: u64, event: E) -> u32 {
        let e = Entry {
            time: at.0,
            tie,
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

    /// Remove the earliest event and advance the clock to it; returns its
    /// time, its place in its instant (which gives back its tie) and the
    /// event.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, Popped, E)> {
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
        let popped = Popped {
            key: e.tie,
            time: e.time,
            salt: self.salt,
        };
        Some((self.now, popped, e.event))
    }

    /// Advance the clock without an event (used when the run loop takes an
    /// event from another ordered source, such as the flow arrival list).
    #[inline]
    pub fn advance_to(&mut self, t: Time) {
        debug_assert!(t >= self.now);
        self.now = t;
    }

    /// The salt of the order of simultaneous events (see [`order_key`]):
    /// queues with the same salt order the same events the same way.
    pub fn salt(&self) -> u64 {
        self.salt
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

    fn drain<E: Copy>(q: &mut EventQueue<E>) -> Vec<(u64, u64, E)> {
        std::iter::from_fn(|| q.pop().map(|(t, k, e)| (t.0, k.tie().bits(), e))).collect()
    }

    #[test]
    fn pops_in_time_then_key_order_and_returns_the_tie() {
        let mut q = EventQueue::new();
        let ties = [
            Tie::new(0, 2, 0),
            Tie::new(0, 1, 7),
            Tie::new(0, 1, 9),
            Tie::new(0, 1, 2),
        ];
        for (i, t) in ties.iter().enumerate() {
            q.schedule(Time(3 + 2 * (i as u64 % 2)), *t, i);
        }
        let mut want: Vec<(u64, u64, u64, usize)> = ties
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let at = Time(3 + 2 * (i as u64 % 2));
                (at.0, order_key(*t, at, 0), t.bits(), i)
            })
            .collect();
        want.sort();
        let want: Vec<(u64, u64, usize)> = want.into_iter().map(|(a, _, t, i)| (a, t, i)).collect();
        assert_eq!(drain(&mut q), want);
        assert_eq!(q.now(), Time(5));
    }

    #[test]
    fn the_order_key_is_a_bijection_that_shuffles_each_instant() {
        for x in [0, 1, 2, MIXED_MASK, 0x1234_5678_9abc_def0 & MIXED_MASK] {
            assert_eq!(unmix(mix(x)), x);
        }
        for x in [0, 1, u64::MAX, 0x1234_5678_9abc_def0] {
            assert_eq!(tie_of(order_key(Tie(x), Time(77), 5), 77, 5), Tie(x));
        }
        // Two fixed events meet at many instants: each goes first about
        // half the time (a fixed priority would lock one out of a queue).
        let (a, b) = (Tie::new(1, 5, 1), Tie::new(1, 6, 1));
        let first_a = (0..10_000u64)
            .filter(|t| order_key(a, Time(t * 1_200_000), 9) < order_key(b, Time(t * 1_200_000), 9))
            .count();
        assert!((4_500..=5_500).contains(&first_a), "{first_a}");
    }

    #[test]
    fn a_tie_keeps_its_phase_owner_and_id() {
        let max_id = (1 << Tie::ID_BITS) - 1;
        let t = Tie::new(Tie::MAX_PHASE, Tie::MAX_OWNER, max_id);
        assert_eq!(
            (t.phase(), t.owner(), t.id()),
            (Tie::MAX_PHASE, Tie::MAX_OWNER, max_id)
        );
        let t = Tie::new(2, 3, 5);
        assert_eq!((t.phase(), t.owner(), t.id()), (2, 3, 5));
    }

    /// Phases run in order whatever the owners and ids.
    #[test]
    fn an_earlier_phase_comes_first() {
        let mut q = EventQueue::with_salt(3);
        for (phase, owner) in [(2, 0), (0, 9), (1, 4), (0, 1), (2, 7), (1, 0)] {
            q.schedule(Time(10), Tie::new(phase, owner, 0), phase);
        }
        let phases: Vec<u8> = drain(&mut q).into_iter().map(|(_, _, p)| p).collect();
        assert_eq!(phases, vec![0, 0, 1, 1, 2, 2]);
    }

    /// Against a reference (an ordered set of what is pending) on random
    /// schedules that mix ties, near and far events, and scheduling while
    /// popping: every pop is the smallest (time, order key) pending. (The popped
    /// sequence itself need not be sorted: an event scheduled at the current
    /// time with a smaller tie comes out after a larger one already popped.)
    #[test]
    fn matches_a_reference_order() {
        let mut rng = crate::engine::Rng::from_seed_u64(11);
        for _ in 0..30 {
            let mut q = EventQueue::new();
            let mut pending = std::collections::BTreeSet::new();
            let mut now = 0u64;
            for id in 0..2000u64 {
                if rng.below(4) == 0 && !q.is_empty() {
                    // Peek between schedules: the remembered front must
                    // follow the schedules that come after it.
                    q.peek_time();
                }
                if rng.below(100) < 60 || q.is_empty() {
                    // Now, same bucket, on the wheel, about its horizon, far.
                    let horizon = (WHEEL_LEN as u64) << BUCKET_SHIFT;
                    let span =
                        [1, 4, 1 << 20, horizon, 2 * horizon, 1 << 40][rng.below(6) as usize];
                    let at = now + rng.below(span);
                    // A few owners, so that equal times often meet; the id
                    // as the event's id keeps every tie distinct.
                    let tie = Tie::new(rng.below(2) as u8, rng.below(4) as u32, id);
                    q.schedule(Time(at), tie, id);
                    pending.insert((at, order_key(tie, Time(at), 0), tie.bits(), id));
                } else {
                    // A peek (sometimes) must name the time the pop returns,
                    // even across the schedules made since an earlier peek.
                    let peeked = (rng.below(2) == 0).then(|| q.peek_time().unwrap());
                    let peeked_event = q.peek().copied();
                    let (t, k, e) = q.pop().unwrap();
                    assert!(peeked.is_none_or(|p| p == t));
                    assert_eq!(peeked_event, Some(e));
                    let want = pending.pop_first().map(|(a, _, k, i)| (a, k, i));
                    assert_eq!(want, Some((t.0, k.tie().bits(), e)));
                    now = t.0;
                }
            }
            let rest = drain(&mut q);
            let want: Vec<_> = pending.into_iter().map(|(a, _, k, i)| (a, k, i)).collect();
            assert_eq!(rest, want);
        }
    }

    /// The order is a function of the set of events, not of the order they
    /// were scheduled in: the same events scheduled in two random orders
    /// come out the same. This is what lets pieces of the network schedule
    /// their events independently (docs/engine.md).
    #[test]
    fn the_order_does_not_depend_on_the_order_of_scheduling() {
        let mut rng = crate::engine::Rng::from_seed_u64(5);
        for _ in 0..30 {
            let horizon = (WHEEL_LEN as u64) << BUCKET_SHIFT;
            let events: Vec<(u64, Tie)> = (0..500u64)
                .map(|i| {
                    let span = [8, 1 << 16, 2 * horizon][rng.below(3) as usize];
                    (
                        rng.below(span),
                        Tie::new(rng.below(3) as u8, rng.below(8) as u32, i),
                    )
                })
                .collect();
            let mut runs = Vec::new();
            for _ in 0..2 {
                let mut order: Vec<usize> = (0..events.len()).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let mut q = EventQueue::new();
                for i in order {
                    q.schedule(Time(events[i].0), events[i].1, i);
                }
                runs.push(drain(&mut q));
            }
            assert_eq!(runs[0], runs[1]);
        }
    }

    /// The same event scheduled twice (a transport's stale timer) is kept
    /// twice, next to itself, on the wheel and in the heap.
    #[test]
    fn an_identical_event_twice_comes_out_twice() {
        let mut q = EventQueue::new();
        let far = 1 << 40;
        for at in [10, far] {
            q.schedule(Time(at), Tie::new(0, 1, 1), 'x');
            for other in 2..6 {
                q.schedule(Time(at), Tie::new(0, other, 1), 'w');
            }
            q.schedule(Time(at), Tie::new(0, 1, 1), 'x');
        }
        let order: String = drain(&mut q).into_iter().map(|(_, _, e)| e).collect();
        assert_eq!(order.len(), 12);
        for half in [&order[..6], &order[6..]] {
            assert!(half.contains("xx"), "{order}");
        }
    }
}
