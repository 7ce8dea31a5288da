//! Path selection timed the way the Fastpass paper's own benchmark does it
//! (`benchmark_graph_algo.c` in the released code): every source sends
//! requests of exponentially distributed size (mean 10 slots) to uniformly
//! random destinations at Poisson times, so that it offers a target share
//! of its link; the allocator admits slots from that demand; path
//! selection runs back to back over the admitted slots, and the time per
//! slot is the total time over the number of slots (one clock reading per
//! batch, not per call).

use fastpass_arbiter::{Allocator, Order, PathSelector};
use rand_xoshiro::rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::{Duration, Instant};

/// Mean request size and mean gap between a source's requests at full
/// load, in slots (the released benchmark's `mean = 10`).
const MEAN_SLOTS: f64 = 10.0;

/// Slots allocated per call; path selection is timed over each batch.
const BATCH: usize = 64;

/// What one offered load gave.
pub struct LoadPoint {
    /// Pairs per admitted slot, on average.
    pub pairs: f64,
    /// Time per slot for each selector, in ns.
    pub ns_per_slot: Vec<f64>,
}

/// One request: `slots` timeslots from `src` to `dst`, known at slot `at`.
struct Request {
    at: u64,
    src: u32,
    dst: u32,
    slots: u32,
}

/// An exponential variate with mean `mean`.
fn exponential(rng: &mut Xoshiro256PlusPlus, mean: f64) -> f64 {
    // Uniform in (0, 1]: never the logarithm of zero.
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    -u.ln() * mean
}

/// Every source's requests over `slots` slots at `offered` load, in order
/// of arrival. Sizes below one slot are carried over to the source's next
/// request, so the offered load is kept (as the released benchmark does).
fn requests(rng: &mut Xoshiro256PlusPlus, hosts: u32, slots: u64, offered: f64) -> Vec<Request> {
    let mut out = Vec::new();
    for src in 0..hosts {
        let (mut t, mut carried) = (0.0, 0.0);
        loop {
            let dst = crate::random_dst(rng, src as u64, hosts as u64);
            let size = exponential(rng, MEAN_SLOTS) + carried;
            t += exponential(rng, MEAN_SLOTS / offered);
            if t >= slots as f64 {
                break;
            }
            let whole = size.floor();
            carried = size - whole;
            if whole >= 1.0 {
                out.push(Request {
                    at: t as u64,
                    src,
                    dst,
                    slots: whole as u32,
                });
            }
        }
    }
    out.sort_by_key(|r| r.at);
    out
}

/// Allocate `warm_up + measured` slots for `hosts` hosts at `offered`
/// load (least recently allocated first) and time each selector's
/// `select_cores` over the last `measured` slots (rounded up to whole
/// batches), the selectors taking turns first from batch to batch.
pub fn run(
    rng: &mut Xoshiro256PlusPlus,
    hosts: u32,
    offered: f64,
    warm_up: u64,
    measured: u64,
    selectors: &mut [PathSelector],
) -> LoadPoint {
    let end = warm_up + measured;
    let reqs = requests(rng, hosts, end, offered);
    let mut alloc = Allocator::new(hosts as usize, Order::LeastRecentlyAllocated);
    let mut spent = vec![Duration::ZERO; selectors.len()];
    let mut cores = Vec::new();
    let (mut next, mut slot, mut timed, mut pairs) = (0, 0u64, 0u64, 0usize);
    while slot < end {
        let batch_end = slot + BATCH as u64;
        while let Some(r) = reqs.get(next).filter(|r| r.at < batch_end) {
            alloc.add_demand(r.src, r.dst, r.slots);
            next += 1;
        }
        let batch = alloc.allocate_batch(BATCH).expect("a valid batch length");
        if slot >= warm_up {
            let k = selectors.len();
            for turn in 0..k {
                let i = (turn + (slot / BATCH as u64) as usize) % k;
                let start = Instant::now();
                for slot_pairs in batch.iter() {
                    selectors[i]
                        .select_cores(slot_pairs, &mut cores)
                        .expect("an admitted slot is routable");
                }
                spent[i] += start.elapsed();
            }
            timed += BATCH as u64;
            pairs += batch.allocated();
        }
        slot = batch_end;
    }
    LoadPoint {
        pairs: pairs as f64 / timed as f64,
        ns_per_slot: spent
            .iter()
            .map(|d| d.as_nanos() as f64 / timed as f64)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::SeedableRng;

    #[test]
    fn requests_offer_the_target_load_in_arrival_order() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let (hosts, slots) = (64u32, 20_000u64);
        for offered in [0.3, 0.9] {
            let reqs = requests(&mut rng, hosts, slots, offered);
            let load =
                reqs.iter().map(|r| r.slots as f64).sum::<f64>() / (hosts as u64 * slots) as f64;
            // Sizes are floored (the rest carried), so a little under.
            assert!(
                (offered - 0.03..=offered + 0.01).contains(&load),
                "{offered}: {load}"
            );
            assert!(reqs.windows(2).all(|w| w[0].at <= w[1].at));
            assert!(reqs
                .iter()
                .all(|r| r.src != r.dst && r.dst < hosts && r.at < slots && r.slots >= 1));
        }
    }

    #[test]
    fn admitted_slots_fill_hosts_as_offered_at_light_load() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
        let mut sel = [PathSelector::new(4, 8, 8).expect("topology")];
        let p = run(&mut rng, 32, 0.3, 512, 1024, &mut sel);
        // Light load: nearly everything offered is admitted (32 hosts at
        // 0.3: about 9.6 pairs a slot).
        assert!((8.0..=10.5).contains(&p.pairs), "{}", p.pairs);
        assert_eq!(p.ns_per_slot.len(), 1);
    }
}
