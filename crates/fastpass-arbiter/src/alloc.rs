//! Timeslot allocation (Fastpass §3.1): for each timeslot, walk the pending
//! demands in priority order and grant a demand when both its source and its
//! destination are still free in that slot. The result is a maximal
//! matching: no pending pair with both ends free is left out.
//!
//! The default order approximates max-min fairness: least recently allocated
//! first. As in the paper, granted demands move to the back of the list, so
//! the list stays sorted by last allocation without sorting. FIFO (arrival
//! order) and shortest-first (fewest remaining slots) are options.

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

/// One pending demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Demand {
    src: u32,
    dst: u32,
    remaining: u32,
    /// Arrival sequence number (for FIFO and ties).
    arrival: u64,
    /// Whether the demand has ever been granted a slot.
    allocated: bool,
}

/// Allocates timeslots for `n` endpoints.
#[derive(Clone, Debug)]
pub struct Allocator {
    n: usize,
    order: Order,
    /// Pending demands in processing order.
    pending: Vec<Demand>,
    scratch: Vec<Demand>,
    granted: Vec<Demand>,
    src_busy: Vec<u64>,
    dst_busy: Vec<u64>,
    out: Vec<(u32, u32)>,
    next_arrival: u64,
}

impl Allocator {
    /// An allocator for endpoints `0..n`.
    pub fn new(n: usize, order: Order) -> Self {
        let words = n.div_ceil(64);
        Allocator {
            n,
            order,
            pending: Vec::new(),
            scratch: Vec::new(),
            granted: Vec::new(),
            src_busy: vec![0; words],
            dst_busy: vec![0; words],
            out: Vec::new(),
            next_arrival: 0,
        }
    }

    /// Number of endpoints.
    pub fn endpoints(&self) -> usize {
        self.n
    }

    /// Add `slots` timeslots of demand from `src` to `dst`. Demands for a
    /// pair already pending are merged into it (it keeps its place).
    pub fn add_demand(&mut self, src: u32, dst: u32, slots: u32) {
        assert!((src as usize) < self.n && (dst as usize) < self.n && src != dst);
        if slots == 0 {
            return;
        }
        if let Some(d) = self
            .pending
            .iter_mut()
            .find(|d| d.src == src && d.dst == dst)
        {
            d.remaining += slots;
            return;
        }
        let d = Demand {
            src,
            dst,
            remaining: slots,
            arrival: self.next_arrival,
            allocated: false,
        };
        self.next_arrival += 1;
        // Never-allocated demands form a prefix of the list (the scan keeps
        // ungranted demands in order ahead of granted ones), so a new demand
        // goes at the end of that prefix: before everything ever allocated.
        match self.order {
            Order::LeastRecentlyAllocated => {
                let pos = self.pending.partition_point(|p| !p.allocated);
                self.pending.insert(pos, d);
            }
            Order::Fifo | Order::ShortestFirst => self.pending.push(d),
        }
    }

    /// Total timeslots still wanted.
    pub fn pending_slots(&self) -> u64 {
        self.pending.iter().map(|d| d.remaining as u64).sum()
    }

    /// Number of pending (source, destination) pairs.
    pub fn pending_pairs(&self) -> usize {
        self.pending.len()
    }

    /// Allocate the next timeslot: the granted (src, dst) pairs.
    pub fn allocate_slot(&mut self) -> &[(u32, u32)] {
        self.out.clear();
        self.src_busy.iter_mut().for_each(|w| *w = 0);
        self.dst_busy.iter_mut().for_each(|w| *w = 0);
        if self.order == Order::ShortestFirst {
            self.pending.sort_by_key(|d| (d.remaining, d.arrival));
        }
        self.scratch.clear();
        self.granted.clear();
        for d in self.pending.drain(..) {
            let (s, t) = (d.src as usize, d.dst as usize);
            let (sb, tb) = (1u64 << (s & 63), 1u64 << (t & 63));
            if self.src_busy[s >> 6] & sb == 0 && self.dst_busy[t >> 6] & tb == 0 {
                self.src_busy[s >> 6] |= sb;
                self.dst_busy[t >> 6] |= tb;
                self.out.push((d.src, d.dst));
                let mut d = d;
                d.remaining -= 1;
                d.allocated = true;
                if d.remaining > 0 {
                    self.granted.push(d);
                }
            } else {
                self.scratch.push(d);
            }
        }
        // Not granted keep their order; granted go to the back (LRA), or
        // back to arrival order (FIFO).
        std::mem::swap(&mut self.pending, &mut self.scratch);
        match self.order {
            Order::LeastRecentlyAllocated | Order::ShortestFirst => {
                self.pending.append(&mut self.granted)
            }
            Order::Fifo => {
                self.pending.append(&mut self.granted);
                self.pending.sort_by_key(|d| d.arrival);
            }
        }
        &self.out
    }
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
}
