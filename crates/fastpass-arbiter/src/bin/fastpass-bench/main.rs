//! Arbiter benchmark: allocation throughput in Gbit/s of scheduled traffic
//! (allocated slots × 1500 B × 8 per second of wall time spent in the
//! allocation calls; also per second of total wall time, the demand top-up
//! between batches included) under saturated random demand, against worker
//! count and endpoint count; and path-selection time per timeslot for 16
//! racks × 32 hosts with 32 core switches (each engine, each API) and with
//! Fastpass's own 4 core switches of 8 packets per link (`lanes-4x8`):
//! per call on fixed slot sets, and as the paper's own benchmark measures
//! it (the allocator's slots under Poisson demand at each offered load,
//! total time over slots; `paper_load.rs`).
//!
//! ```text
//! fastpass-bench [SECONDS] [--workers 1,2] [--endpoints 256,512,1024] [--seconds 2]
//!                [--batch 256] [--window N] [--demand 4] [--max-size N]
//!                [--order lra|fifo|sjf] [--chunk N] [--seed 1]
//!                [--no-paths] [--paths-only]
//! ```
//!
//! `--batch` is the number of slots allocated per call (the fairness order
//! is updated between calls); the pipeline cuts it into windows of
//! `--window` slots (default: batch / workers, at most 64), dealt round
//! the ring of workers. One worker runs `Allocator::allocate_batch` on the
//! main thread; more run a `Pipeline`. The batch is the same for every
//! worker count, so every point schedules the same demand the same way
//! (the pipeline's result equals the serial one). Demand: every source
//! keeps `--demand` pending pairs to random destinations, each of
//! 1..=`--max-size` slots (default: the batch length), and a drained pair
//! is replaced by a new one from the same source after each batch. Output:
//! one line per configuration, then a markdown table.

mod paper_load;

use fastpass_arbiter::{Allocator, Order, PathSelector, Pipeline, GREEDY_MAX_RACKS};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;

struct Args {
    workers: Vec<usize>,
    endpoints: Vec<usize>,
    seconds: f64,
    batch: usize,
    window: Option<usize>,
    demand: usize,
    max_size: Option<u64>,
    order: Order,
    chunk: Option<usize>,
    seed: u64,
    alloc: bool,
    paths: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        workers: vec![1, 2],
        endpoints: vec![256, 512, 1024],
        seconds: 2.0,
        batch: 256,
        window: None,
        demand: 4,
        max_size: None,
        order: Order::LeastRecentlyAllocated,
        chunk: None,
        seed: 1,
        alloc: true,
        paths: true,
    };
    let list = |v: &str| -> Result<Vec<usize>, String> {
        v.split(',')
            .map(|x| x.trim().parse().map_err(|_| format!("bad number {x:?}")))
            .collect()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--workers" => a.workers = list(&val()?)?,
            "--endpoints" => a.endpoints = list(&val()?)?,
            "--seconds" => a.seconds = val()?.parse().map_err(|_| "bad --seconds")?,
            "--batch" => a.batch = val()?.parse().map_err(|_| "bad --batch")?,
            "--window" => a.window = Some(val()?.parse().map_err(|_| "bad --window")?),
            "--demand" => a.demand = val()?.parse().map_err(|_| "bad --demand")?,
            "--max-size" => a.max_size = Some(val()?.parse().map_err(|_| "bad --max-size")?),
            "--chunk" => a.chunk = Some(val()?.parse().map_err(|_| "bad --chunk")?),
            "--seed" => a.seed = val()?.parse().map_err(|_| "bad --seed")?,
            "--order" => {
                a.order = match val()?.as_str() {
                    "lra" => Order::LeastRecentlyAllocated,
                    "fifo" => Order::Fifo,
                    "sjf" => Order::ShortestFirst,
                    o => return Err(format!("unknown order {o:?}")),
                }
            }
            "--no-paths" => a.paths = false,
            "--paths-only" => a.alloc = false,
            "-h" | "--help" => {
                return Err("see the header of src/bin/fastpass-bench/main.rs".into());
            }
            // The first step's usage: `fastpass-bench SECONDS`.
            f if f.parse::<f64>().is_ok() => a.seconds = f.parse().unwrap_or(2.0),
            f => return Err(format!("unknown flag {f:?}")),
        }
    }
    if a.batch == 0 || a.batch > fastpass_arbiter::MAX_BATCH_SLOTS || a.demand == 0 {
        return Err("--batch must be 1..=4096, --demand >= 1".into());
    }
    Ok(a)
}

fn random_dst(rng: &mut Xoshiro256PlusPlus, s: u64, n: u64) -> u32 {
    ((s + 1 + rng.next_u64() % (n - 1)) % n) as u32
}

/// Put `items` in a uniformly random order (Fisher–Yates).
fn shuffle<T>(rng: &mut Xoshiro256PlusPlus, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
}

struct Point {
    n: usize,
    workers: usize,
    window: usize,
    batch: usize,
    slots_per_s: f64,
    gbps: f64,
    e2e_gbps: f64,
    fill: f64,
}

fn throughput(a: &Args, n: usize, workers: usize) -> Result<Point, String> {
    let batch = a.batch;
    let window = a.window.unwrap_or((batch / workers).clamp(1, 64));
    let max = a.max_size.unwrap_or(batch as u64).max(1);
    let mut alloc = Allocator::try_new(n, a.order).map_err(|e| e.to_string())?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(a.seed ^ (n as u64) << 20);
    let nn = n as u64;
    for s in 0..nn {
        for _ in 0..a.demand {
            let d = random_dst(&mut rng, s, nn);
            alloc.add_demand(s as u32, d, (1 + rng.next_u64() % max) as u32);
        }
    }
    let mut pipe = if workers > 1 {
        let mut p = Pipeline::new(workers, window).map_err(|e| e.to_string())?;
        p.set_chunk(a.chunk);
        Some(p)
    } else {
        None
    };
    let mut refill: Vec<u32> = Vec::new();
    let mut busy = 0f64;
    let mut step = |alloc: &mut Allocator, rng: &mut Xoshiro256PlusPlus, busy: &mut f64| -> usize {
        let t = Instant::now();
        let got = match &mut pipe {
            Some(p) => p.allocate(alloc, batch).expect("pipeline").allocated(),
            None => alloc.allocate_batch(batch).expect("batch").allocated(),
        };
        *busy += t.elapsed().as_secs_f64();
        refill.clear();
        refill.extend(alloc.finished_pairs().iter().map(|&(s, _)| s));
        for &s in &refill {
            let d = random_dst(rng, s as u64, nn);
            alloc.add_demand(s, d, (1 + rng.next_u64() % max) as u32);
        }
        got
    };
    // Warm up (caches, page faults, the pair table).
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < a.seconds.min(0.5) {
        step(&mut alloc, &mut rng, &mut busy);
    }
    busy = 0.0;
    let (mut allocated, mut batches) = (0u64, 0u64);
    let start = Instant::now();
    let mut elapsed = 0.0;
    while elapsed < a.seconds {
        allocated += step(&mut alloc, &mut rng, &mut busy) as u64;
        batches += 1;
        elapsed = start.elapsed().as_secs_f64();
    }
    let slots_per_s = allocated as f64 / busy;
    Ok(Point {
        n,
        workers,
        window: if workers > 1 { window } else { batch.min(64) },
        batch,
        slots_per_s,
        gbps: slots_per_s * 1500.0 * 8.0 / 1e9,
        e2e_gbps: allocated as f64 * 1500.0 * 8.0 / elapsed / 1e9,
        fill: allocated as f64 / (batches as f64 * batch as f64 * n as f64),
    })
}

/// Mean, standard deviation, median and 99th percentile.
fn stats(mut ns: Vec<u64>) -> (f64, f64, u64, u64) {
    ns.sort_unstable();
    let k = ns.len() as f64;
    let mean = ns.iter().sum::<u64>() as f64 / k;
    let var = ns.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / k;
    let p50 = ns[ns.len() / 2];
    let p99 = ns[(ns.len() * 99).div_ceil(100) - 1];
    (mean, var.sqrt(), p50, p99)
}

/// Time `PathSelector::select_cores` (or `select` with `options`) per
/// call over `slots`, repeated for about `secs`. Each slot is read once
/// before its call is timed: in the arbiter a slot's pairs come straight
/// from the allocator, so bringing them into cache is not path selection's
/// cost.
fn time_paths(
    sel: &mut PathSelector,
    slots: &[Vec<(u32, u32)>],
    secs: f64,
    options: bool,
) -> (f64, f64, u64, u64, usize) {
    let mut cores = Vec::new();
    let mut opts = Vec::new();
    let mut times = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < secs {
        for s in slots {
            std::hint::black_box(s.iter().fold(0u32, |a, &(x, y)| a ^ x ^ y));
            let t = Instant::now();
            if options {
                sel.select(s, &mut opts).expect("routable");
            } else {
                sel.select_cores(s, &mut cores).expect("routable");
            }
            times.push(t.elapsed().as_nanos() as u64);
            std::hint::black_box((&cores, &opts));
        }
    }
    let k = times.len();
    let (mean, sd, p50, p99) = stats(times);
    (mean, sd, p50, p99, k)
}

/// Median cost of reading the clock twice (what every per-call time above
/// includes).
fn timer_overhead_ns() -> u64 {
    let mut t: Vec<u64> = (0..100_000)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(&t);
            t.elapsed().as_nanos() as u64
        })
        .collect();
    t.sort_unstable();
    t[t.len() / 2]
}

fn paths(a: &Args) {
    let (racks, hosts) = (16usize, 32u32);
    let n = racks * hosts as usize;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(a.seed ^ 0x9a7);
    // (a) Full slots: every host sends to and receives from one other host
    // (random permutations, fixed points dropped; listed by source).
    let full: Vec<Vec<(u32, u32)>> = (0..1000)
        .map(|_| {
            let mut p: Vec<u32> = (0..n as u32).collect();
            shuffle(&mut rng, &mut p);
            (0..n as u32).zip(p).filter(|(s, d)| s != d).collect()
        })
        .collect();
    // (a') The same permutations in random order, as an allocator lists its
    // grants (by priority, not by source): the room-balancing engine meets
    // more stuck pairs when a rack's pairs do not come together.
    // Its own generator, so the allocator's slots below stay as before.
    let mut order_rng = Xoshiro256PlusPlus::seed_from_u64(a.seed ^ 0x5af);
    let shuffled: Vec<Vec<(u32, u32)>> = full
        .iter()
        .map(|slot| {
            let mut s = slot.clone();
            shuffle(&mut order_rng, &mut s);
            s
        })
        .collect();
    // (b) Slots as the allocator makes them from saturated random demand.
    let mut alloc = Allocator::new(n, Order::LeastRecentlyAllocated);
    for s in 0..n as u64 {
        for _ in 0..a.demand {
            let d = random_dst(&mut rng, s, n as u64);
            alloc.add_demand(s as u32, d, 1 + (rng.next_u64() % 64) as u32);
        }
    }
    let mut made = Vec::new();
    while made.len() < 1000 {
        let b = alloc.allocate_batch(64).expect("batch");
        made.extend(b.iter().map(|s| s.to_vec()));
        let fin: Vec<(u32, u32)> = alloc.finished_pairs().to_vec();
        for (s, _) in fin {
            let d = random_dst(&mut rng, s as u64, n as u64);
            alloc.add_demand(s, d, 1 + (rng.next_u64() % 64) as u32);
        }
    }
    let secs = a.seconds.min(2.0);
    println!(
        "timer: reading the clock twice takes {} ns (included below)",
        timer_overhead_ns()
    );
    // The engine for more than 64 racks, on the same hosts, for comparison
    // (it is what every fabric used before the greedy engine).
    // Fastpass's own arbiter: 4 paths (core switches), each rack link
    // carrying a quarter of the rack's hosts per slot.
    let paper = PathSelector::with_link_capacity(racks, hosts, 4, hosts as usize / 4);
    let engines = [
        ("greedy", PathSelector::new(racks, hosts, hosts as usize)),
        (
            "pair-masks",
            PathSelector::new(GREEDY_MAX_RACKS + 1, hosts, hosts as usize),
        ),
        ("lanes-4x8", paper),
    ];
    let mut rows = Vec::new();
    for (engine, sel) in engines {
        let mut sel = sel.expect("topology");
        // (slots, whether every API of every engine is timed on them)
        for (what, slots, all) in [
            ("full permutation", &full, true),
            ("full permutation, random order", &shuffled, false),
            ("allocator slots", &made, true),
        ] {
            if !all && engine == "pair-masks" {
                continue;
            }
            let pairs = slots.iter().map(|s| s.len()).sum::<usize>() as f64 / slots.len() as f64;
            for (api, options) in [("select_cores", false), ("select", true)] {
                if options && (engine != "greedy" || !all) {
                    continue;
                }
                let (mean, sd, p50, p99, k) = time_paths(&mut sel, slots, secs, options);
                println!(
                    "paths racks={racks} hosts={hosts} cores={hosts} engine={engine} api={api} slots={what} pairs/slot={pairs:.0} mean_ns={mean:.0} sd_ns={sd:.0} p50_ns={p50} p99_ns={p99} samples={k}"
                );
                rows.push(format!(
                    "| {engine} | {api} | {what} | {pairs:.0} | {:.2} µs | {:.2} µs | {:.2} µs |",
                    mean / 1e3,
                    p50 as f64 / 1e3,
                    p99 as f64 / 1e3
                ));
            }
        }
    }
    println!();
    println!("| engine | API | slots | pairs/slot | mean | p50 | p99 |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    // Against utilisation, as the paper's path-selection benchmark: each
    // pair of the full permutations kept with probability `u`; both fabrics.
    println!();
    println!(
        "| utilisation | pairs/slot | 32 cores: mean | p50 | p99 | 4 cores × 8: mean | p50 | p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut sel = PathSelector::new(racks, hosts, hosts as usize).expect("topology");
    let mut paper =
        PathSelector::with_link_capacity(racks, hosts, 4, hosts as usize / 4).expect("topology");
    for u in [0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99, 1.0] {
        let keep = (u * (1u64 << 32) as f64) as u64;
        let thinned: Vec<Vec<(u32, u32)>> = full
            .iter()
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|_| rng.next_u64() >> 32 < keep)
                    .collect()
            })
            .collect();
        let pairs = thinned.iter().map(|s| s.len()).sum::<usize>() as f64 / thinned.len() as f64;
        let mut row = format!("| {u} | {pairs:.0} |");
        for sel in [&mut sel, &mut paper] {
            let (mean, _, p50, p99, _) = time_paths(sel, &thinned, secs / 4.0, false);
            row += &format!(
                " {:.2} µs | {:.2} µs | {:.2} µs |",
                mean / 1e3,
                p50 as f64 / 1e3,
                p99 as f64 / 1e3
            );
        }
        println!("{row}");
    }
    // The paper's own method: the allocator's slots under Poisson demand at
    // each offered load, path selection back to back, total time / slots.
    println!();
    println!("| offered load | hosts busy | pairs/slot | 32 cores: time per slot | 4 cores × 8: time per slot |");
    println!("|---|---|---|---|---|");
    let mut selectors = [sel, paper];
    for offered in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99] {
        let p = paper_load::run(&mut rng, n as u32, offered, 2048, 8192, &mut selectors);
        println!(
            "| {offered} | {:.2} | {:.0} | {:.2} µs | {:.2} µs |",
            p.pairs / n as f64,
            p.pairs,
            p.ns_per_slot[0] / 1e3,
            p.ns_per_slot[1] / 1e3
        );
    }
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fastpass-bench: {e}");
            std::process::exit(2);
        }
    };
    if a.alloc {
        let mut points = Vec::new();
        for &n in &a.endpoints {
            for &w in &a.workers {
                match throughput(&a, n, w) {
                    Ok(p) => {
                        println!(
                            "alloc endpoints={} workers={} window={} batch={} order={:?} demand={}x1..={} seconds={} slots/s={:.1}M Gbit/s={:.1} e2e_Gbit/s={:.1} fill={:.3}",
                            p.n,
                            p.workers,
                            p.window,
                            p.batch,
                            a.order,
                            a.demand,
                            a.max_size.unwrap_or(p.batch as u64),
                            a.seconds,
                            p.slots_per_s / 1e6,
                            p.gbps,
                            p.e2e_gbps,
                            p.fill
                        );
                        points.push(p);
                    }
                    Err(e) => {
                        eprintln!("fastpass-bench: {e}");
                        std::process::exit(2);
                    }
                }
            }
        }
        println!();
        println!("| endpoints | workers | batch / window (slots) | M slots/s | Gbit/s | Gbit/s with demand top-up | slot fill |");
        println!("|---|---|---|---|---|---|---|");
        for p in &points {
            println!(
                "| {} | {} | {} / {} | {:.1} | {:.0} | {:.0} | {:.3} |",
                p.n,
                p.workers,
                p.batch,
                p.window,
                p.slots_per_s / 1e6,
                p.gbps,
                p.e2e_gbps,
                p.fill
            );
        }
        println!();
    }
    if a.paths {
        paths(&a);
    }
}
