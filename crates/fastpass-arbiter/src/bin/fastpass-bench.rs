//! Arbiter benchmark: allocation throughput (Gbit/s of scheduled traffic =
//! allocated slots × 1500 B × 8 per wall second) under saturated random
//! demand, and path-selection time per timeslot for 16 racks × 32 hosts.
//!
//! Usage: `fastpass-bench [SECONDS_PER_POINT]` (default 2).

use fastpass_arbiter::{assign_cores, Allocator, Order};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;

fn saturate(a: &mut Allocator, rng: &mut Xoshiro256PlusPlus, per_src: usize) {
    // Keep every source busy: top up to `per_src` pending pairs per source.
    let n = a.endpoints() as u64;
    while a.pending_pairs() < per_src * n as usize {
        let s = rng.next_u64() % n;
        let d = (s + 1 + rng.next_u64() % (n - 1)) % n;
        a.add_demand(s as u32, d as u32, 1 + (rng.next_u64() % 16) as u32);
    }
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    println!("allocation throughput, 1 worker, least-recently-allocated order");
    println!("{:>10} {:>14} {:>14}", "endpoints", "slots/s", "Gbit/s");
    for n in [256usize, 512, 1024] {
        let mut a = Allocator::new(n, Order::LeastRecentlyAllocated);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(n as u64);
        let mut allocated = 0u64;
        let start = Instant::now();
        let mut busy = 0f64;
        while start.elapsed().as_secs_f64() < secs {
            saturate(&mut a, &mut rng, 2);
            let t = Instant::now();
            for _ in 0..64 {
                allocated += a.allocate_slot().len() as u64;
            }
            busy += t.elapsed().as_secs_f64();
        }
        let gbps = allocated as f64 * 1500.0 * 8.0 / busy / 1e9;
        println!("{n:>10} {:>14.0} {gbps:>14.1}", allocated as f64 / busy);
    }
    // Path selection: a full matching on 16 racks × 32 hosts, 32 cores.
    let (racks, hosts) = (16usize, 32u32);
    let n = racks * hosts as usize;
    let mut a = Allocator::new(n, Order::LeastRecentlyAllocated);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut times = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < secs {
        saturate(&mut a, &mut rng, 2);
        let slot = a.allocate_slot().to_vec();
        let t = Instant::now();
        let cores = assign_cores(&slot, hosts, racks, hosts as usize).expect("colourable");
        times.push(t.elapsed().as_nanos() as u64);
        std::hint::black_box(cores);
    }
    times.sort_unstable();
    let mean = times.iter().sum::<u64>() as f64 / times.len() as f64;
    let p99 = times[(times.len() * 99).div_ceil(100) - 1];
    println!("path selection, {racks} racks x {hosts} hosts: mean {mean:.0} ns, p99 {p99} ns per timeslot ({} slots)", times.len());
}
