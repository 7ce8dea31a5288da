//! Timeslot allocation (Fastpass §3): for each timeslot, walk the pending
//! demands in priority order and grant a demand when both its source and its
//! destination are still free in that slot. The result is a maximal
//! matching: no pending pair with both ends free is left out.
//!
//! # Orders
//!
//! The default order approximates max-min fairness: least recently allocated
//! first, exactly, per (source, destination) pair. Each pair remembers the
//! last timeslot it was granted, even after its demand has drained, so a
//! pair that comes back queues by that time, not as a newcomer. The pending
//! list is kept sorted by that time without sorting: granted pairs move to
//! the back (in the order of their last grant), pairs never granted stay in
//! front. FIFO (arrival order) and shortest-first (fewest remaining slots)
//! are options.
//!
//! # Batches
//!
//! [`Allocator::allocate_batch`] allocates many consecutive timeslots in one
//! pass over the demand list, as the paper's allocator does (it keeps a
//! 64-bit "free timeslots" mask per source and per destination and gives a
//! flow the earliest slot of the batch where both ends are free). Here each
//! endpoint has one `u64` mask per 64-slot window; a demand takes the
//! earliest free slots its two masks share (as many as it still wants), one
//! AND and a few bit operations instead of one test per slot. Each slot of
//! the batch is still a maximal matching; the priority order is updated once
//! per batch. Windows past the first see the demands the earlier windows left
//! unsatisfied, in the same order: exactly the paper's Fig. 3 hand-over,
//! which is what [`crate::Pipeline`] runs on several threads.
//! [`Allocator::allocate_slot`] is a batch of one slot.

use crate::error::ArbiterError;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Largest number of endpoints an allocator accepts.
pub const MAX_ENDPOINTS: usize = 16384;
/// Largest number of timeslots in one batch.
pub const MAX_BATCH_SLOTS: usize = 4096;
/// Timeslots per free-slot mask (one `u64` per endpoint).
pub const WINDOW_SLOTS: usize = 64;

/// The order in which demands are considered within a timeslot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Least recently allocated first (approximates max-min fairness).
    LeastRecentlyAllocated,
    /// Arrival order of the demands.
    Fifo,
    /// Fewest remaining timeslots first (approximates SRPT).
    ShortestFirst,
}

/// One pending demand: what travels between pipeline workers. 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Demand {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    pub(crate) remaining: u64,
    /// 1 + the last timeslot this pair was granted; 0 if never.
    pub(crate) last: u64,
    /// Arrival sequence number (FIFO order, ties).
    pub(crate) arrival: u64,
}

/// What the arbiter remembers of each pair, packed in a `u64`:
/// `last << 1 | pending` (0 for a pair never seen). Dense (an n × n array,
/// one cache miss per look-up) up to [`DENSE_PAIRS_MAX`] endpoints, a hash
/// map beyond.
#[derive(Clone, Debug)]
enum PairTable {
    Dense { n: usize, v: Vec<u64> },
    Sparse(PairMap<u64>),
}

/// Largest endpoint count with a dense pair table (2048² × 8 B = 32 MiB).
const DENSE_PAIRS_MAX: usize = 2048;

impl PairTable {
    fn new(n: usize) -> Self {
        if n <= DENSE_PAIRS_MAX {
            PairTable::Dense {
                n,
                v: vec![0; n * n],
            }
        } else {
            PairTable::Sparse(PairMap::default())
        }
    }

    #[inline]
    fn slot(&mut self, src: u32, dst: u32) -> &mut u64 {
        match self {
            PairTable::Dense { n, v } => &mut v[src as usize * *n + dst as usize],
            PairTable::Sparse(m) => m.entry(pair_key(src, dst)).or_insert(0),
        }
    }
}

/// A multiply-xorshift hasher for the `u64` pair keys (std's SipHash is
/// several times slower and we need no DoS resistance).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type PairMap<V> = HashMap<u64, V, BuildHasherDefault<PairHasher>>;

fn pair_key(src: u32, dst: u32) -> u64 {
    ((src as u64) << 32) | dst as u64
}

/// The allocation of a batch of consecutive timeslots: for each slot, the
/// granted (source, destination) pairs in grant order.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    first_slot: u64,
    len: usize,
    /// At least `len` entries; the ones past `len` are reusable buffers.
    slots: Vec<Vec<(u32, u32)>>,
}

impl Batch {
    /// Index of the batch's first timeslot (slots are counted from 0 since
    /// the allocator was created).
    pub fn first_slot(&self) -> u64 {
        self.first_slot
    }

    /// Number of timeslots in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no timeslots.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pairs granted in slot `i` of the batch (`i < len()`).
    pub fn slot(&self, i: usize) -> &[(u32, u32)] {
        assert!(i < self.len, "slot {i} of a batch of {}", self.len);
        &self.slots[i]
    }

    /// The slots in order.
    pub fn iter(&self) -> impl Iterator<Item = &[(u32, u32)]> + '_ {
        self.slots[..self.len].iter().map(|s| s.as_slice())
    }

    /// Total number of granted (pair, slot) allocations in the batch.
    pub fn allocated(&self) -> usize {
        self.iter().map(|s| s.len()).sum()
    }

    pub(crate) fn reset(&mut self, first_slot: u64, len: usize) {
        self.first_slot = first_slot;
        self.len = len;
        if self.slots.len() < len {
            self.slots.resize_with(len, Vec::new);
        }
        for s in &mut self.slots[..len] {
            s.clear();
        }
    }

    pub(crate) fn slots_mut(&mut self) -> &mut [Vec<(u32, u32)>] {
        &mut self.slots[..self.len]
    }
}

/// Per-endpoint free-slot masks for one window of up to 64 slots: bit `t`
/// of `src[e]` is set while endpoint `e` may still send in slot `t`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Masks {
    src: Vec<u64>,
    dst: Vec<u64>,
    width: usize,
}

impl Masks {
    /// Free every endpoint in every slot of a window of `width` slots.
    /// Only the endpoints of `list` are reset when the list is shorter than
    /// the endpoint count and the width is unchanged (no other endpoint is
    /// read in this window).
    pub(crate) fn reset(&mut self, n: usize, width: usize, list: &[Demand]) {
        let full = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        if self.src.len() != n || self.width != width {
            self.width = width;
            self.src = vec![full; n];
            self.dst = vec![full; n];
        } else if list.len() < n {
            for d in list {
                self.src[d.src as usize] = full;
                self.dst[d.dst as usize] = full;
            }
        } else {
            self.src.fill(full);
            self.dst.fill(full);
        }
    }

    /// Free every endpoint in every slot of a window of `width` slots.
    pub(crate) fn reset_all(&mut self, n: usize, width: usize) {
        let full = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        self.width = width;
        self.src.clear();
        self.src.resize(n, full);
        self.dst.clear();
        self.dst.resize(n, full);
    }
}

/// The lowest `k` set bits of `x` (`k` below `x.count_ones()`).
#[inline]
fn lowest_bits(mut x: u64, k: u64) -> u64 {
    let mut out = 0;
    for _ in 0..k {
        let b = x & x.wrapping_neg();
        out |= b;
        x ^= b;
    }
    out
}

/// Grant the demands of `list`, in order, the earliest slots of the window
/// where both ends are free (slot `t` of the window is timeslot
/// `base + t`), writing grants to `out[t]`. Demands that still want slots
/// stay in `list`, in order; drained ones move to `finished`. Returns the
/// number of (pair, slot) grants.
pub(crate) fn grant_window(
    list: &mut Vec<Demand>,
    masks: &mut Masks,
    base: u64,
    out: &mut [Vec<(u32, u32)>],
    finished: &mut Vec<Demand>,
) -> u64 {
    let mut granted = 0u64;
    let mut w = 0;
    for i in 0..list.len() {
        let mut d = list[i];
        let (s, t) = (d.src as usize, d.dst as usize);
        let free = masks.src[s] & masks.dst[t];
        if free != 0 {
            let avail = free.count_ones() as u64;
            let take = if avail <= d.remaining {
                free
            } else {
                lowest_bits(free, d.remaining)
            };
            masks.src[s] &= !take;
            masks.dst[t] &= !take;
            let k = take.count_ones() as u64;
            granted += k;
            d.remaining -= k;
            d.last = base + (64 - take.leading_zeros()) as u64;
            let mut m = take;
            while m != 0 {
                out[m.trailing_zeros() as usize].push((d.src, d.dst));
                m &= m - 1;
            }
            if d.remaining == 0 {
                finished.push(d);
                continue;
            }
        }
        list[w] = d;
        w += 1;
    }
    list.truncate(w);
    granted
}

/// Allocates timeslots for `n` endpoints.
#[derive(Clone, Debug)]
pub struct Allocator {
    n: usize,
    order: Order,
    /// Pending demands in processing order (for LRA: sorted by `last`).
    pending: Vec<Demand>,
    /// Pairs seen since the last allocation, not yet merged into `pending`.
    arrivals: Vec<Demand>,
    /// Extra slots for pairs already pending: (key, slots).
    increments: Vec<(u64, u64)>,
    pairs: PairTable,
    masks: Masks,
    /// Scratch: demands granted in the current batch (LRA reordering).
    granted: Vec<Demand>,
    /// Scratch: a spare demand buffer.
    spare: Vec<Demand>,
    /// Scratch: sort keys.
    sort_keys: Vec<u128>,
    /// Scratch: counting-sort buckets.
    counts: Vec<u32>,
    finished: Vec<Demand>,
    finished_pairs: Vec<(u32, u32)>,
    batch: Batch,
    next_slot: u64,
    next_arrival: u64,
    pending_slots: u64,
}

impl Allocator {
    /// An allocator for endpoints `0..n`. Panics if `n` exceeds
    /// [`MAX_ENDPOINTS`]; [`Allocator::try_new`] returns an error instead.
    pub fn new(n: usize, order: Order) -> Self {
        match Self::try_new(n, order) {
            Ok(a) => a,
            Err(e) => panic!("{e}"),
        }
    }

    /// An allocator for endpoints `0..n`, `n` at most [`MAX_ENDPOINTS`].
    pub fn try_new(n: usize, order: Order) -> Result<Self, ArbiterError> {
        if n > MAX_ENDPOINTS {
            return Err(ArbiterError::TooManyEndpoints {
                requested: n,
                max: MAX_ENDPOINTS,
            });
        }
        Ok(Allocator {
            n,
            order,
            pending: Vec::new(),
            arrivals: Vec::new(),
            increments: Vec::new(),
            pairs: PairTable::new(n),
            masks: Masks::default(),
            granted: Vec::new(),
            spare: Vec::new(),
            sort_keys: Vec::new(),
            counts: Vec::new(),
            finished: Vec::new(),
            finished_pairs: Vec::new(),
            batch: Batch::default(),
            next_slot: 0,
            next_arrival: 0,
            pending_slots: 0,
        })
    }

    /// Number of endpoints.
    pub fn endpoints(&self) -> usize {
        self.n
    }

    /// The priority order.
    pub fn order(&self) -> Order {
        self.order
    }

    /// Index of the next timeslot to allocate (0 for a new allocator).
    pub fn next_slot(&self) -> u64 {
        self.next_slot
    }

    /// Add `slots` timeslots of demand from `src` to `dst`. Demands for a
    /// pair already pending are merged into it (it keeps its place).
    /// Panics on bad input; [`Allocator::try_add_demand`] returns an error
    /// instead.
    pub fn add_demand(&mut self, src: u32, dst: u32, slots: u32) {
        if let Err(e) = self.try_add_demand(src, dst, slots as u64) {
            panic!("{e}");
        }
    }

    /// Add `slots` timeslots of demand from `src` to `dst`; an error (and no
    /// change) for an endpoint out of range or `src == dst`.
    pub fn try_add_demand(&mut self, src: u32, dst: u32, slots: u64) -> Result<(), ArbiterError> {
        for e in [src, dst] {
            if e as usize >= self.n {
                return Err(ArbiterError::EndpointOutOfRange {
                    endpoint: e,
                    endpoints: self.n,
                });
            }
        }
        if src == dst {
            return Err(ArbiterError::SelfDemand { endpoint: src });
        }
        if slots == 0 {
            return Ok(());
        }
        let total = self
            .pending_slots
            .checked_add(slots)
            .ok_or(ArbiterError::DemandOverflow)?;
        self.pending_slots = total;
        let state = self.pairs.slot(src, dst);
        if *state & 1 == 1 {
            self.increments.push((pair_key(src, dst), slots));
        } else {
            let last = *state >> 1;
            *state |= 1;
            self.arrivals.push(Demand {
                src,
                dst,
                remaining: slots,
                last,
                arrival: self.next_arrival,
            });
            self.next_arrival += 1;
        }
        Ok(())
    }

    /// Total timeslots still wanted.
    pub fn pending_slots(&self) -> u64 {
        self.pending_slots
    }

    /// Number of pending (source, destination) pairs.
    pub fn pending_pairs(&self) -> usize {
        self.pending.len() + self.arrivals.len()
    }

    /// The pairs whose demand drained in the last allocation call (slot or
    /// batch), window by window (64 slots, or the pipeline's window), in
    /// priority order within a window.
    pub fn finished_pairs(&self) -> &[(u32, u32)] {
        &self.finished_pairs
    }

    /// The pending demands as (source, destination, remaining slots), in the
    /// order the next allocation will consider them (before merging demand
    /// added since the last allocation).
    pub fn pending_demands(&self) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        self.pending.iter().map(|d| (d.src, d.dst, d.remaining))
    }

    /// Allocate the next timeslot: the granted (src, dst) pairs.
    pub fn allocate_slot(&mut self) -> &[(u32, u32)] {
        match self.allocate_batch(1) {
            Ok(b) => b.slot(0),
            Err(_) => unreachable!("a batch of one slot is always valid"),
        }
    }

    /// Allocate the next `slots` timeslots (1 to [`MAX_BATCH_SLOTS`]) in one
    /// pass per 64-slot window; the priority order is updated at the end of
    /// the batch.
    pub fn allocate_batch(&mut self, slots: usize) -> Result<&Batch, ArbiterError> {
        check_batch(slots)?;
        self.begin_batch(slots);
        let mut list = std::mem::take(&mut self.pending);
        let mut finished = std::mem::take(&mut self.finished);
        let mut start = 0;
        while start < slots && !list.is_empty() {
            let width = WINDOW_SLOTS.min(slots - start);
            self.masks.reset(self.n, width, &list);
            let base = self.next_slot + start as u64;
            let out = &mut self.batch.slots_mut()[start..start + width];
            grant_window(&mut list, &mut self.masks, base, out, &mut finished);
            start += width;
        }
        self.retire(&finished);
        self.push_finished_pairs(&finished);
        finished.clear();
        self.finished = finished;
        let mut granted = self.take_granted_buf();
        if self.order == Order::LeastRecentlyAllocated {
            let mut keep = self.take_spare();
            split_granted(&list, self.batch.first_slot, &mut keep, &mut granted);
            self.recycle(list);
            list = keep;
        }
        self.end_batch(list, granted);
        Ok(&self.batch)
    }

    /// Merge arrivals and increments into the pending list, order it, and
    /// set up the output batch. Shared by the serial and pipelined paths.
    pub(crate) fn begin_batch(&mut self, slots: usize) {
        self.finished_pairs.clear();
        if !self.arrivals.is_empty() {
            match self.order {
                Order::LeastRecentlyAllocated => {
                    // Pending is sorted by `last`; arrivals (sorted by last,
                    // then arrival) merge in after pending pairs of equal
                    // `last`.
                    // Arrivals come in arrival order: sort by `last`,
                    // stably, on compact keys (last, index) rather than
                    // moving 32-byte demands around.
                    if !self.arrivals.is_sorted_by_key(|d| d.last) {
                        let mut keys = std::mem::take(&mut self.sort_keys);
                        keys.clear();
                        keys.extend(
                            self.arrivals
                                .iter()
                                .enumerate()
                                .map(|(i, d)| (d.last as u128) << 64 | i as u128),
                        );
                        keys.sort_unstable();
                        let mut sorted = std::mem::take(&mut self.granted);
                        sorted.clear();
                        sorted.extend(keys.iter().map(|&k| self.arrivals[k as u64 as usize]));
                        std::mem::swap(&mut sorted, &mut self.arrivals);
                        self.granted = sorted;
                        self.sort_keys = keys;
                    }
                    let old = std::mem::take(&mut self.pending);
                    let mut merged = self.take_spare();
                    merged.reserve(old.len() + self.arrivals.len());
                    let mut a = self.arrivals.drain(..).peekable();
                    for &p in &old {
                        while let Some(x) = a.next_if(|x| x.last < p.last) {
                            merged.push(x);
                        }
                        merged.push(p);
                    }
                    merged.extend(a);
                    self.pending = merged;
                    self.recycle(old);
                }
                Order::Fifo | Order::ShortestFirst => self.pending.append(&mut self.arrivals),
            }
        }
        if !self.increments.is_empty() {
            // One walk over the list; a 4096-bit filter keeps the hash
            // look-up off all but the few pairs that got more demand.
            let bit = |k: u64| (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize;
            let mut filter = [0u64; 64];
            let mut extra: PairMap<u64> = PairMap::default();
            for &(k, s) in &self.increments {
                let b = bit(k);
                filter[b >> 6] |= 1 << (b & 63);
                *extra.entry(k).or_default() += s;
            }
            self.increments.clear();
            for d in &mut self.pending {
                let k = pair_key(d.src, d.dst);
                let b = bit(k);
                if filter[b >> 6] >> (b & 63) & 1 == 1 {
                    if let Some(&s) = extra.get(&k) {
                        d.remaining += s;
                    }
                }
            }
        }
        if self.order == Order::ShortestFirst {
            self.pending
                .sort_unstable_by_key(|d| (d.remaining, d.arrival));
        }
        self.batch.reset(self.next_slot, slots);
    }

    /// Record drained pairs' last grant, for their next demand's place.
    pub(crate) fn retire(&mut self, finished: &[Demand]) {
        for d in finished {
            *self.pairs.slot(d.src, d.dst) = d.last << 1;
        }
    }

    /// Finish a batch: `keep ++ granted` (granted sorted by their last
    /// slot, stable) becomes the pending list.
    pub(crate) fn end_batch(&mut self, mut keep: Vec<Demand>, mut granted: Vec<Demand>) {
        let first = self.batch.first_slot;
        let slots = self.batch.len;
        if !granted.is_empty() {
            // Stable counting sort by last slot within the batch.
            self.counts.clear();
            self.counts.resize(slots + 1, 0);
            for d in &granted {
                self.counts[(d.last - first) as usize] += 1;
            }
            let mut sum = keep.len() as u32;
            for c in self.counts.iter_mut() {
                let x = *c;
                *c = sum;
                sum += x;
            }
            keep.resize(sum as usize, granted[0]);
            for d in &granted {
                let i = &mut self.counts[(d.last - first) as usize];
                keep[*i as usize] = *d;
                *i += 1;
            }
            granted.clear();
        }
        let allocated = self.batch.allocated() as u64;
        self.pending_slots -= allocated;
        self.pending = keep;
        self.granted = granted;
        self.next_slot += slots as u64;
    }

    pub(crate) fn take_pending(&mut self) -> Vec<Demand> {
        std::mem::take(&mut self.pending)
    }

    /// Give back the old pending list's buffer for the next batch.
    pub(crate) fn recycle(&mut self, mut list: Vec<Demand>) {
        list.clear();
        if list.capacity() > self.spare.capacity() {
            self.spare = list;
        }
    }

    /// A cleared demand buffer.
    pub(crate) fn take_spare(&mut self) -> Vec<Demand> {
        let mut v = std::mem::take(&mut self.spare);
        v.clear();
        v
    }

    pub(crate) fn take_granted_buf(&mut self) -> Vec<Demand> {
        let mut g = std::mem::take(&mut self.granted);
        g.clear();
        g
    }

    pub(crate) fn batch_mut(&mut self) -> &mut Batch {
        &mut self.batch
    }

    pub(crate) fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Report drained demands.
    pub(crate) fn push_finished_pairs(&mut self, finished: &[Demand]) {
        self.finished_pairs
            .extend(finished.iter().map(|d| (d.src, d.dst)));
    }
}

/// Append `v`'s demands to `keep` (not granted since `first_slot`) or
/// `granted`, keeping their order. Branch-free: the two kinds come in no
/// predictable pattern, and a mispredicted branch per demand costs more than
/// writing each demand twice.
pub(crate) fn split_granted(
    v: &[Demand],
    first_slot: u64,
    keep: &mut Vec<Demand>,
    granted: &mut Vec<Demand>,
) {
    let Some(&fill) = v.first() else {
        return;
    };
    let (k0, g0) = (keep.len(), granted.len());
    keep.resize(k0 + v.len(), fill);
    granted.resize(g0 + v.len(), fill);
    let (mut k, mut g) = (k0, g0);
    for d in v {
        let is_granted = (d.last > first_slot) as usize;
        keep[k] = *d;
        granted[g] = *d;
        k += 1 - is_granted;
        g += is_granted;
    }
    keep.truncate(k);
    granted.truncate(g);
}

pub(crate) fn check_batch(slots: usize) -> Result<(), ArbiterError> {
    if slots == 0 || slots > MAX_BATCH_SLOTS {
        return Err(ArbiterError::BadBatch {
            slots,
            max: MAX_BATCH_SLOTS,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_allocated_rotates_contending_pairs() {
        // Three sources all want destination 0: one per slot, round-robin.
        let mut a = Allocator::new(4, Order::LeastRecentlyAllocated);
        for s in 1..4 {
            a.add_demand(s, 0, 3);
        }
        let winners: Vec<u32> = (0..6).map(|_| a.allocate_slot()[0].0).collect();
        assert_eq!(winners, vec![1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn fifo_serves_the_first_arrival_to_completion() {
        let mut a = Allocator::new(4, Order::Fifo);
        a.add_demand(1, 0, 2);
        a.add_demand(2, 0, 2);
        let winners: Vec<u32> = (0..4).map(|_| a.allocate_slot()[0].0).collect();
        assert_eq!(winners, vec![1, 1, 2, 2]);
        assert_eq!(a.pending_slots(), 0);
    }

    #[test]
    fn shortest_first_prefers_small_demands() {
        let mut a = Allocator::new(4, Order::ShortestFirst);
        a.add_demand(1, 0, 5);
        a.add_demand(2, 0, 1);
        assert_eq!(a.allocate_slot(), &[(2, 0)]);
        assert_eq!(a.allocate_slot(), &[(1, 0)]);
    }

    #[test]
    fn disjoint_pairs_share_a_slot() {
        let mut a = Allocator::new(4, Order::LeastRecentlyAllocated);
        a.add_demand(0, 1, 1);
        a.add_demand(2, 3, 1);
        a.add_demand(0, 3, 1);
        let s = a.allocate_slot().to_vec();
        assert_eq!(s, vec![(0, 1), (2, 3)]);
        assert_eq!(a.allocate_slot(), &[(0, 3)]);
    }

    #[test]
    fn a_returning_pair_queues_by_its_last_grant() {
        // (1,0) is served in slot 0 and drains; (2,0) and (3,0) wait. When
        // (1,0) comes back it was served more recently than both, so it
        // queues behind them although it arrives before they are served.
        let mut a = Allocator::new(4, Order::LeastRecentlyAllocated);
        a.add_demand(1, 0, 1);
        a.add_demand(2, 0, 2);
        a.add_demand(3, 0, 2);
        assert_eq!(a.allocate_slot(), &[(1, 0)]);
        assert_eq!(a.finished_pairs(), &[(1, 0)]);
        a.add_demand(1, 0, 1);
        let winners: Vec<u32> = (0..5).map(|_| a.allocate_slot()[0].0).collect();
        assert_eq!(winners, vec![2, 3, 1, 2, 3]);
        // A brand-new pair goes before one with a history.
        a.add_demand(2, 0, 1);
        a.add_demand(3, 1, 1);
        assert_eq!(a.allocate_slot(), &[(3, 1), (2, 0)]);
    }

    #[test]
    fn merged_demand_keeps_its_place() {
        let mut a = Allocator::new(4, Order::Fifo);
        a.add_demand(1, 0, 1);
        a.add_demand(2, 0, 1);
        a.allocate_slot();
        a.add_demand(2, 0, 2); // pending: merged
        a.add_demand(3, 0, 1);
        assert_eq!(a.pending_pairs(), 2);
        assert_eq!(a.pending_slots(), 4);
        let w: Vec<u32> = (0..4).map(|_| a.allocate_slot()[0].0).collect();
        assert_eq!(w, vec![2, 2, 2, 3]);
    }

    #[test]
    fn a_batch_gives_each_pair_its_earliest_common_free_slots() {
        let mut a = Allocator::new(4, Order::LeastRecentlyAllocated);
        a.add_demand(0, 1, 2);
        a.add_demand(2, 1, 3);
        a.add_demand(0, 3, 4);
        let b = a.allocate_batch(5).unwrap();
        let slots: Vec<Vec<(u32, u32)>> = b.iter().map(|s| s.to_vec()).collect();
        assert_eq!(
            slots,
            vec![
                vec![(0, 1)],
                vec![(0, 1)],
                vec![(2, 1), (0, 3)],
                vec![(2, 1), (0, 3)],
                vec![(2, 1), (0, 3)],
            ]
        );
        assert_eq!(a.pending_slots(), 1);
        assert_eq!(a.finished_pairs(), &[(0, 1), (2, 1)]);
        assert_eq!(a.next_slot(), 5);
        assert_eq!(a.allocate_slot(), &[(0, 3)]);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(matches!(
            Allocator::try_new(MAX_ENDPOINTS + 1, Order::Fifo),
            Err(ArbiterError::TooManyEndpoints { .. })
        ));
        let mut a = Allocator::try_new(MAX_ENDPOINTS, Order::Fifo).unwrap();
        assert_eq!(
            a.try_add_demand(0, MAX_ENDPOINTS as u32, 1),
            Err(ArbiterError::EndpointOutOfRange {
                endpoint: MAX_ENDPOINTS as u32,
                endpoints: MAX_ENDPOINTS
            })
        );
        assert_eq!(
            a.try_add_demand(5, 5, 1),
            Err(ArbiterError::SelfDemand { endpoint: 5 })
        );
        a.try_add_demand(16383, 0, u64::MAX).unwrap();
        assert_eq!(a.try_add_demand(1, 0, 1), Err(ArbiterError::DemandOverflow));
        assert!(matches!(
            a.allocate_batch(0),
            Err(ArbiterError::BadBatch { .. })
        ));
        assert!(a.allocate_batch(MAX_BATCH_SLOTS + 1).is_err());
        assert_eq!(a.allocate_slot(), &[(16383, 0)]);
    }
}
