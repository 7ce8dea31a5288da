//! Property tests of the arbiter's invariants.

use fastpass_arbiter::{assign_cores, colour_edges, Allocator, Order};
use proptest::prelude::*;

fn orders() -> impl Strategy<Value = Order> {
    prop_oneof![
        Just(Order::LeastRecentlyAllocated),
        Just(Order::Fifo),
        Just(Order::ShortestFirst)
    ]
}

proptest! {
    /// A slot never uses a source or destination twice, and is maximal: no
    /// pending pair with both ends free is left out.
    #[test]
    fn allocation_is_a_maximal_matching(
        n in 2usize..40,
        demands in prop::collection::vec((0u32..40, 0u32..40, 1u32..5), 1..120),
        order in orders(),
    ) {
        let mut a = Allocator::new(n, order);
        let mut wanted: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
        for (s, d, k) in demands {
            let (s, d) = (s % n as u32, d % n as u32);
            if s != d {
                a.add_demand(s, d, k);
                *wanted.entry((s, d)).or_default() += k;
            }
        }
        while a.pending_slots() > 0 {
            let slot = a.allocate_slot().to_vec();
            prop_assert!(!slot.is_empty());
            let mut srcs = std::collections::BTreeSet::new();
            let mut dsts = std::collections::BTreeSet::new();
            for &(s, d) in &slot {
                prop_assert!(srcs.insert(s), "source {} twice", s);
                prop_assert!(dsts.insert(d), "destination {} twice", d);
                let w = wanted.get_mut(&(s, d)).unwrap();
                *w -= 1;
            }
            for (&(s, d), &w) in &wanted {
                // Pairs still pending after this slot (w > 0) that were pending
                // before it must have had an end busy.
                let granted = slot.contains(&(s, d));
                if w > 0 && !granted {
                    prop_assert!(srcs.contains(&s) || dsts.contains(&d), "({}, {}) left out", s, d);
                }
            }
        }
        prop_assert!(wanted.values().all(|&w| w == 0));
    }

    /// No two edges at the same vertex share a colour; at most Δ colours.
    #[test]
    fn edge_colouring_is_proper(edges in prop::collection::vec((0u32..8, 0u32..8), 0..60)) {
        let mut deg_l = [0usize; 8];
        let mut deg_r = [0usize; 8];
        for &(u, v) in &edges {
            deg_l[u as usize] += 1;
            deg_r[v as usize] += 1;
        }
        let delta = deg_l.iter().chain(&deg_r).copied().max().unwrap_or(0).max(1);
        let c = colour_edges(&edges, 8, 8, delta).expect("Δ colours suffice");
        for i in 0..edges.len() {
            prop_assert!((c[i] as usize) < delta);
            for j in i + 1..edges.len() {
                if edges[i].0 == edges[j].0 || edges[i].1 == edges[j].1 {
                    prop_assert_ne!(c[i], c[j]);
                }
            }
        }
    }

    /// Path assignment on a matching of a 4-rack × 8-host fabric with 8
    /// cores: cross-rack pairs get a core < 8, no core carries two packets
    /// from or to the same rack, intra-rack pairs get none.
    #[test]
    fn core_assignment_respects_the_topology(seed in 0u64..1000) {
        let mut a = Allocator::new(32, Order::LeastRecentlyAllocated);
        for s in 0..32u32 {
            for (d, k) in [((s * 7 + 1 + seed as u32) % 32, 3), ((s * 13 + 5 + seed as u32 * 3) % 32, 2)] {
                if d != s {
                    a.add_demand(s, d, k);
                }
            }
        }
        let slot = a.allocate_slot().to_vec();
        let cores = assign_cores(&slot, 8, 4, 8).unwrap();
        let mut used = std::collections::BTreeSet::new();
        for (&(s, d), c) in slot.iter().zip(&cores) {
            match c {
                None => prop_assert_eq!(s / 8, d / 8),
                Some(c) => {
                    prop_assert!(*c < 8);
                    prop_assert!(used.insert(("up", s / 8, *c)), "uplink reused");
                    prop_assert!(used.insert(("down", d / 8, *c)), "downlink reused");
                }
            }
        }
    }
}
