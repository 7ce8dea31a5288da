//! Property tests of the arbiter's invariants.

use fastpass_arbiter::{
    assign_cores, colour_edges, Allocator, Order, PathSelector, Pipeline, NO_CORE,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A 64-bit linear congruential generator's high bits, from `seed`.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    }
}

/// 0..n shuffled (Fisher–Yates) with `next`.
fn shuffled(n: u32, next: &mut impl FnMut() -> u64) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n).collect();
    for i in (1..n as usize).rev() {
        perm.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    perm
}

/// Checks a selector's answer: pairs inside a rack get `NO_CORE`, every
/// other pair a core below `cores`, and no rack's uplink or downlink to a
/// core carries more than `capacity` pairs.
fn check_within_capacity(
    pairs: &[(u32, u32)],
    out: &[u8],
    hosts_per_rack: u32,
    cores: usize,
    capacity: usize,
) -> Result<(), TestCaseError> {
    let mut load: BTreeMap<(bool, u32, u8), usize> = BTreeMap::new();
    for (&(s, d), &c) in pairs.iter().zip(out) {
        let (rs, rd) = (s / hosts_per_rack, d / hosts_per_rack);
        if rs == rd {
            prop_assert_eq!(c, NO_CORE);
        } else {
            prop_assert!((c as usize) < cores);
            *load.entry((true, rs, c)).or_default() += 1;
            *load.entry((false, rd, c)).or_default() += 1;
        }
    }
    prop_assert!(
        load.values().all(|&k| k <= capacity),
        "over capacity: {:?}",
        load
    );
    Ok(())
}

fn orders() -> impl Strategy<Value = Order> {
    prop_oneof![
        Just(Order::LeastRecentlyAllocated),
        Just(Order::Fifo),
        Just(Order::ShortestFirst)
    ]
}

/// Check one slot against the demand still wanted before it: a matching
/// (no source or destination twice), only pairs that want slots, and
/// maximal (every pair still wanting a slot has a busy end). Updates
/// `wanted`.
fn check_slot(
    slot: &[(u32, u32)],
    wanted: &mut BTreeMap<(u32, u32), u64>,
) -> Result<(), TestCaseError> {
    let mut srcs = BTreeSet::new();
    let mut dsts = BTreeSet::new();
    for &(s, d) in slot {
        prop_assert!(srcs.insert(s), "source {} twice", s);
        prop_assert!(dsts.insert(d), "destination {} twice", d);
        let w = wanted.get_mut(&(s, d));
        prop_assert!(
            w.as_ref().is_some_and(|w| **w > 0),
            "({}, {}) wants nothing",
            s,
            d
        );
        *w.unwrap() -= 1;
    }
    for (&(s, d), &w) in wanted.iter() {
        if w > 0 && !slot.contains(&(s, d)) {
            prop_assert!(
                srcs.contains(&s) || dsts.contains(&d),
                "({}, {}) left out with both ends free",
                s,
                d
            );
        }
    }
    Ok(())
}

fn add_all(
    a: &mut Allocator,
    n: usize,
    demands: &[(u32, u32, u32)],
    wanted: &mut BTreeMap<(u32, u32), u64>,
) {
    for &(s, d, k) in demands {
        let (s, d) = (s % n as u32, d % n as u32);
        if s != d {
            a.add_demand(s, d, k);
            *wanted.entry((s, d)).or_default() += k as u64;
        }
    }
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
        let mut wanted = BTreeMap::new();
        add_all(&mut a, n, &demands, &mut wanted);
        while a.pending_slots() > 0 {
            let slot = a.allocate_slot().to_vec();
            prop_assert!(!slot.is_empty());
            check_slot(&slot, &mut wanted)?;
        }
        prop_assert!(wanted.values().all(|&w| w == 0));
    }

    /// Every slot of a batch is a maximal matching of the demand still
    /// wanted before that slot; demand added between batches is merged;
    /// drained pairs are reported.
    #[test]
    fn every_slot_of_a_batch_is_a_maximal_matching(
        n in 2usize..40,
        rounds in prop::collection::vec(
            (prop::collection::vec((0u32..40, 0u32..40, 1u32..30), 0..80), 1usize..150),
            1..4,
        ),
        order in orders(),
    ) {
        let mut a = Allocator::new(n, order);
        let mut wanted = BTreeMap::new();
        for (demands, slots) in &rounds {
            add_all(&mut a, n, demands, &mut wanted);
            let before: BTreeSet<(u32, u32)> =
                wanted.iter().filter(|(_, &w)| w > 0).map(|(&p, _)| p).collect();
            let first = a.next_slot();
            let b = a.allocate_batch(*slots).unwrap();
            prop_assert_eq!(b.len(), *slots);
            prop_assert_eq!(b.first_slot(), first);
            let b: Vec<Vec<(u32, u32)>> = b.iter().map(|s| s.to_vec()).collect();
            for slot in &b {
                check_slot(slot, &mut wanted)?;
            }
            let drained: BTreeSet<(u32, u32)> =
                before.into_iter().filter(|p| wanted[p] == 0).collect();
            let reported: BTreeSet<(u32, u32)> = a.finished_pairs().iter().copied().collect();
            prop_assert_eq!(drained, reported);
            prop_assert_eq!(a.pending_slots(), wanted.values().sum::<u64>());
        }
    }

}

proptest! {
    // Each case starts worker threads: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The pipeline gives exactly the serial batch result, for any number
    /// of workers, window and chunk size.
    #[test]
    fn pipeline_equals_serial(
        seed_demands in prop::collection::vec((0u32..48, 0u32..48, 1u32..40), 1..200),
        workers in 2usize..5,
        window in 1usize..65,
        chunk in 1usize..40,
        slots in 1usize..200,
        order in orders(),
    ) {
        let n = 48;
        let mut serial = Allocator::new(n, order);
        let mut piped = Allocator::new(n, order);
        let mut p = Pipeline::new(workers, window).unwrap();
        p.set_chunk(Some(chunk));
        let mut w1 = BTreeMap::new();
        let mut w2 = BTreeMap::new();
        for round in 0..3 {
            let part = &seed_demands[(round * seed_demands.len() / 3)..((round + 1) * seed_demands.len() / 3)];
            add_all(&mut serial, n, part, &mut w1);
            add_all(&mut piped, n, part, &mut w2);
            let a: Vec<Vec<(u32, u32)>> = serial.allocate_batch(slots).unwrap().iter().map(|s| s.to_vec()).collect();
            let b: Vec<Vec<(u32, u32)>> = p.allocate(&mut piped, slots).unwrap().iter().map(|s| s.to_vec()).collect();
            prop_assert_eq!(a, b);
            prop_assert!(serial.pending_demands().eq(piped.pending_demands()));
        }
    }
}

proptest! {

    /// No two edges at the same vertex share a colour; at most the given
    /// number of colours (any number from Δ up).
    #[test]
    fn edge_colouring_is_proper(
        edges in prop::collection::vec((0u32..8, 0u32..8), 0..120),
        extra in 0usize..3,
    ) {
        let mut deg_l = [0usize; 8];
        let mut deg_r = [0usize; 8];
        for &(u, v) in &edges {
            deg_l[u as usize] += 1;
            deg_r[v as usize] += 1;
        }
        let delta = deg_l.iter().chain(&deg_r).copied().max().unwrap_or(0).max(1);
        let colours = delta + extra;
        let c = colour_edges(&edges, 8, 8, colours).expect("Δ colours suffice");
        for i in 0..edges.len() {
            prop_assert!((c[i] as usize) < colours);
            for j in i + 1..edges.len() {
                if edges[i].0 == edges[j].0 || edges[i].1 == edges[j].1 {
                    prop_assert_ne!(c[i], c[j]);
                }
            }
        }
        if delta > 1 {
            prop_assert!(colour_edges(&edges, 8, 8, delta - 1).is_none());
        }
    }

    /// Path selection on any matching of a racks × hosts fabric with at
    /// least hosts-per-rack cores: cross-rack pairs get a core below the
    /// core count, no uplink or downlink (rack, core) carries two packets,
    /// intra-rack pairs get none; `assign_cores` agrees.
    #[test]
    fn path_selection_respects_the_topology(
        racks in 1usize..9,
        hosts_per_rack in 1u32..9,
        extra_cores in 0usize..3,
        seed in any::<u64>(),
        keep in 0u64..=100,
    ) {
        let n = racks as u32 * hosts_per_rack;
        let cores = hosts_per_rack as usize + extra_cores;
        // A random permutation (splitmix64 shuffle), thinned to `keep`%.
        let mut x = seed;
        let mut next = move || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut perm: Vec<u32> = (0..n).collect();
        for i in (1..n as usize).rev() {
            perm.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let pairs: Vec<(u32, u32)> = (0..n)
            .zip(perm)
            .filter(|&(s, d)| s != d)
            .filter(|_| next() % 100 < keep)
            .collect();
        let mut sel = PathSelector::new(racks, hosts_per_rack, cores).unwrap();
        let mut out = Vec::new();
        sel.select(&pairs, &mut out).unwrap();
        prop_assert_eq!(out.len(), pairs.len());
        let mut used = BTreeSet::new();
        for (&(s, d), c) in pairs.iter().zip(&out) {
            let (rs, rd) = (s / hosts_per_rack, d / hosts_per_rack);
            match c {
                None => prop_assert_eq!(rs, rd),
                Some(c) => {
                    prop_assert!(rs != rd);
                    prop_assert!((*c as usize) < cores);
                    prop_assert!(used.insert(("up", rs, *c)), "uplink reused");
                    prop_assert!(used.insert(("down", rd, *c)), "downlink reused");
                }
            }
        }
        // Reusing the selector gives the same answer (no state leaks).
        let mut again = Vec::new();
        sel.select(&pairs, &mut again).unwrap();
        prop_assert_eq!(&again, &out);
        prop_assert_eq!(assign_cores(&pairs, hosts_per_rack, racks, cores), Some(out));
    }

    /// The tightest case: a (nearly) full permutation (every host sends and
    /// receives) with exactly hosts-per-rack cores, so racks run out of
    /// free colours and the alternating-path swaps do most of the work;
    /// fabrics of up to 64 racks (greedy engine) and just above (the
    /// fabric-sized engine). Every cross-rack pair gets a core, no (rack,
    /// core) link is used twice, and `select` agrees with `select_cores`.
    #[test]
    fn full_permutations_with_just_enough_cores(
        racks in prop_oneof![2usize..=16, 60usize..=70],
        hosts_per_rack in 1u32..=32,
        seed in any::<u64>(),
        keep in 75u64..=100,
    ) {
        let n = racks as u32 * hosts_per_rack;
        let mut next = lcg(seed);
        let perm = shuffled(n, &mut next);
        // Mostly full (partner table kept from the start), sometimes thinned
        // to 75 % or more of the hosts (table built at the first conflict).
        let pairs: Vec<(u32, u32)> =
            (0..n).zip(perm).filter(|_| keep == 100 || next() % 100 < keep).collect();
        let mut sel = PathSelector::new(racks, hosts_per_rack, hosts_per_rack as usize).unwrap();
        let mut cores = Vec::new();
        sel.select_cores(&pairs, &mut cores).unwrap();
        prop_assert_eq!(cores.len(), pairs.len());
        check_within_capacity(&pairs, &cores, hosts_per_rack, hosts_per_rack as usize, 1)?;
        let mut opts = Vec::new();
        sel.select(&pairs, &mut opts).unwrap();
        let expect: Vec<Option<u32>> =
            cores.iter().map(|&c| (c != NO_CORE).then_some(c as u32)).collect();
        prop_assert_eq!(opts, expect);
    }

    /// Path assignment on allocator slots of a 4-rack × 8-host fabric with
    /// 8 cores.
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
        let mut used = BTreeSet::new();
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

proptest! {
    /// Rack–core links that carry several packets per slot (Fastpass's own
    /// 4 paths of 8): on any thinned permutation with enough room in all
    /// (cores × capacity ≥ hosts per rack, down to exactly that), every
    /// cross-rack pair gets a core below the core count, no rack's link to
    /// a core carries more than its capacity, pairs inside a rack get none,
    /// and the answer does not depend on what the selector did before.
    #[test]
    fn links_never_carry_more_than_their_capacity(
        racks in 1usize..=12,
        hosts_per_rack in 1u32..=16,
        cores in 1usize..=6,
        extra in 0usize..2,
        seed in any::<u64>(),
        keep in prop_oneof![Just(100u64), 50u64..=100],
    ) {
        let capacity = (hosts_per_rack as usize).div_ceil(cores) + extra;
        prop_assume!(cores * capacity <= 64);
        let n = racks as u32 * hosts_per_rack;
        let mut next = lcg(seed);
        let perm = shuffled(n, &mut next);
        let pairs: Vec<(u32, u32)> = (0..n)
            .zip(perm)
            .filter(|&(s, d)| s != d)
            .filter(|_| next() % 100 < keep)
            .collect();
        let mut sel = PathSelector::with_link_capacity(racks, hosts_per_rack, cores, capacity).unwrap();
        let mut out = Vec::new();
        sel.select_cores(&pairs, &mut out).unwrap();
        prop_assert_eq!(out.len(), pairs.len());
        check_within_capacity(&pairs, &out, hosts_per_rack, cores, capacity)?;
        // After another slot, the same pairs get the same cores.
        let other: Vec<(u32, u32)> = pairs.iter().map(|&(s, d)| (d, s)).collect();
        let mut scratch = Vec::new();
        sel.select_cores(&other, &mut scratch).unwrap();
        let mut again = Vec::new();
        sel.select_cores(&pairs, &mut again).unwrap();
        prop_assert_eq!(again, out);
    }
}
