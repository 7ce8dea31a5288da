//! Flow-level reference schedules for one bottleneck: what an ideal
//! scheduler would give the same flows on the same arrivals.
//!
//! Each flow is a job: it arrives at its start time and needs `work`, its
//! service time at the bottleneck (its packets' wire bytes back to back at
//! the bottleneck rate, see [`work_of`]). A single server of that rate then
//! serves the jobs by one of two disciplines:
//!
//! - **SRPT** (preemptive shortest remaining processing time): always serve
//!   the job with the least work left. It minimises mean response time on
//!   one server (Schrage, Oper. Res. 16(3), 1968), and is the schedule
//!   pFabric approximates with per-packet priorities (Alizadeh et al.,
//!   SIGCOMM 2013, §3). Ties go to the earlier arrival.
//! - **PS** (processor sharing): the `n` jobs present each get `1/n` of the
//!   server, the idealised per-flow fair share. For Poisson arrivals (M/G/1)
//!   its mean slowdown (response time over work) is `1/(1 − ρ)` for every
//!   job size (Kleinrock, Queueing Systems Vol. 2, 1976, §4.4).
//!
//! Both are work-conserving, so their busy periods coincide with FIFO's.
//!
//! **Arithmetic.** SRPT only ever subtracts elapsed time from remaining
//! work: it is exact in integer picoseconds. PS divides elapsed time among
//! `n` jobs, so its completion times are in general not whole picoseconds;
//! it keeps time and attained service as fixed-point numbers with 64
//! fractional bits (u128), rounding each division down by less than
//! 2⁻⁶⁴ ps, and rounds completions to the nearest picosecond. No floats.
//! Inputs must end within 2⁶³ ps (about 106 days) including all work, which
//! bounds every intermediate value below 2¹²⁷.

use crate::time::{Duration, Rate, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One job: a flow as the bottleneck sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// When the flow starts.
    pub arrival: Time,
    /// Service time at the bottleneck.
    pub work: Duration,
}

/// Why a reference cannot be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The last arrival plus all work does not fit the fixed-point range.
    #[error("arrivals plus total work exceed 2^63 ps (about 106 days)")]
    TooLong,
}

/// Service time of a flow of `size` payload bytes at `rate`: its
/// `⌈size/mss⌉` packets of `mss + header` bytes (the last one shorter),
/// each serialised in whole picoseconds, as the simulator's links do.
pub fn work_of(size: u64, mss: u32, header: u32, rate: Rate) -> Duration {
    let size = size.max(1);
    let mss = mss.max(1) as u64;
    let n = size.div_ceil(mss);
    let last = size - (n - 1) * mss + header as u64;
    rate.tx_time(mss + header as u64).times(n - 1) + rate.tx_time(last)
}

fn check_range(jobs: &[Job]) -> Result<(), ReferenceError> {
    let last = jobs
        .iter()
        .map(|j| j.arrival.ps() as u128)
        .max()
        .unwrap_or(0);
    let total: u128 = jobs.iter().map(|j| j.work.ps() as u128).sum();
    if last + total >= 1u128 << 63 {
        return Err(ReferenceError::TooLong);
    }
    Ok(())
}

/// Jobs in arrival order (input order among equal arrivals).
fn arrival_order(jobs: &[Job]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].arrival, i));
    order
}

/// Completion time of every job under preemptive SRPT, in input order.
pub fn srpt(jobs: &[Job]) -> Result<Vec<Time>, ReferenceError> {
    check_range(jobs)?;
    let order = arrival_order(jobs);
    let mut done = vec![Time::ZERO; jobs.len()];
    // (remaining work, arrival rank): the rank breaks ties by arrival.
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut t = 0u64;
    let arrivals = order
        .iter()
        .map(|&i| Some(jobs[i].arrival.ps()))
        .chain(std::iter::once(None));
    for (rank, a) in arrivals.enumerate() {
        // Serve until the next arrival (or to the end).
        while let Some(mut top) = heap.peek_mut() {
            let Reverse((rem, r)) = *top;
            match a {
                Some(a) if t + rem > a => {
                    // Preempted (or not) at the arrival: the head keeps
                    // the least remaining work, so it stays at the top.
                    top.0 .0 = rem - (a - t);
                    t = a;
                    break;
                }
                _ => {
                    t += rem;
                    done[order[r]] = Time(t);
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
        let Some(a) = a else { break };
        t = t.max(a);
        heap.push(Reverse((jobs[order[rank]].work.ps(), rank)));
    }
    Ok(done)
}

/// Fixed-point scale of the PS arithmetic: 64 fractional bits.
const FRAC: u32 = 64;

/// Completion time of every job under processor sharing, in input order.
///
/// Uses virtual time `V` (the service each present job has received since
/// the start of the busy period): with `n` jobs present `V` grows at `1/n`
/// per unit of time, and a job arriving at `V = v` with work `w` leaves
/// when `V` reaches `v + w`.
pub fn processor_sharing(jobs: &[Job]) -> Result<Vec<Time>, ReferenceError> {
    check_range(jobs)?;
    let order = arrival_order(jobs);
    let mut done = vec![Time::ZERO; jobs.len()];
    // (finish tag in V, arrival rank).
    let mut heap: BinaryHeap<Reverse<(u128, usize)>> = BinaryHeap::new();
    let (mut t, mut v) = (0u128, 0u128);
    let round = |x: u128| Time(((x + (1u128 << (FRAC - 1))) >> FRAC) as u64);
    let mut next = 0usize;
    loop {
        let arrival = order
            .get(next)
            .map(|&i| (jobs[i].arrival.ps() as u128) << FRAC);
        if let Some(&Reverse((tag, _))) = heap.peek() {
            let n = heap.len() as u128;
            // n · (tag − V) ≤ the work left in the system < 2^63 ps.
            let leave = t + (tag - v) * n;
            if arrival.is_none_or(|a| leave <= a) {
                t = leave;
                v = tag;
                while heap.peek().is_some_and(|Reverse((g, _))| *g == tag) {
                    let Some(Reverse((_, r))) = heap.pop() else {
                        break;
                    };
                    done[order[r]] = round(t);
                }
                continue;
            }
        }
        let Some(a) = arrival else { break };
        if heap.is_empty() {
            // A new busy period: V restarts, which keeps it small.
            v = 0;
        } else {
            v += (a - t) / heap.len() as u128;
        }
        t = a;
        let w = (jobs[order[next]].work.ps() as u128) << FRAC;
        heap.push(Reverse((v + w, next)));
        next += 1;
    }
    Ok(done)
}

/// One flow's FCT under each reference. The unloaded latency of the flow
/// (its ideal FCT minus its work: propagation, the other hops'
/// serialisation, the pipeline fill) is added to the queue's response
/// time, so a flow alone in the network gets exactly its ideal FCT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowReference {
    /// Service time at the bottleneck.
    pub work: Duration,
    /// FCT under SRPT.
    pub srpt_fct: Duration,
    /// FCT under processor sharing.
    pub ps_fct: Duration,
}

/// Means over a run's flows: measured against both references, and the
/// M/G/1-PS closed form at the load the arrivals actually offered.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReferenceSummary {
    /// Flows in the run.
    pub flows: usize,
    /// Flows that finished (the measured means are over these only; the
    /// reference means too, so that the ratios compare like with like).
    pub finished: usize,
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Offered load: total work over the span from the first to the last
    /// arrival.
    pub offered_load: f64,
    /// Mean FCT in microseconds: measured, SRPT, PS.
    pub mean_fct_us: Means,
    /// Mean slowdown (FCT over ideal FCT): measured, SRPT, PS.
    pub mean_slowdown: Means,
    /// Measured mean FCT over the SRPT reference's.
    pub measured_over_srpt: f64,
    /// Measured mean FCT over the PS reference's.
    pub measured_over_ps: f64,
    /// PS mean of response time over work (the queue alone, no latency).
    pub ps_mean_response_over_work: f64,
    /// M/G/1-PS: mean response time over work is `1/(1 − ρ)` for any size
    /// distribution (Kleinrock 1976, §4.4), at `ρ = offered_load`.
    pub mg1_ps_closed_form: f64,
}

/// A mean of each of the three.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Means {
    /// What the packet-level run measured.
    pub measured: f64,
    /// The SRPT reference.
    pub srpt: f64,
    /// The processor-sharing reference.
    pub ps: f64,
}

/// SRPT and PS references for the flows of a run through one bottleneck of
/// `rate`, from each flow's start, size and ideal FCT.
pub fn flow_references(
    flows: &[crate::metrics::FlowResult],
    mss: u32,
    header: u32,
    rate: Rate,
) -> Result<Vec<FlowReference>, ReferenceError> {
    let jobs: Vec<Job> = flows
        .iter()
        .map(|f| Job {
            arrival: f.start,
            work: work_of(f.size_bytes, mss, header, rate),
        })
        .collect();
    let s = srpt(&jobs)?;
    let p = processor_sharing(&jobs)?;
    Ok(flows
        .iter()
        .zip(&jobs)
        .zip(s.iter().zip(&p))
        .map(|((f, j), (s, p))| {
            let latency = f.ideal_fct - j.work;
            FlowReference {
                work: j.work,
                srpt_fct: (*s - j.arrival) + latency,
                ps_fct: (*p - j.arrival) + latency,
            }
        })
        .collect())
}

/// Summarise measured flows against their references (same order).
pub fn summarize(
    flows: &[crate::metrics::FlowResult],
    refs: &[FlowReference],
    rate: Rate,
) -> ReferenceSummary {
    let total_work: u128 = refs.iter().map(|r| r.work.ps() as u128).sum();
    let first = flows.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
    let last = flows.iter().map(|f| f.start).max().unwrap_or(Time::ZERO);
    let span = (last - first).ps().max(1);
    let load = total_work as f64 / span as f64;
    let (mut n, mut fct, mut sd) = (0usize, [0f64; 3], [0f64; 3]);
    let mut ps_rw = 0f64;
    for (f, r) in flows.iter().zip(refs) {
        let ideal = f.ideal_fct.ps().max(1) as f64;
        let latency = f.ideal_fct - r.work;
        ps_rw += (r.ps_fct - latency).ps() as f64 / r.work.ps().max(1) as f64;
        let Some(m) = f.fct() else { continue };
        n += 1;
        for (k, d) in [m, r.srpt_fct, r.ps_fct].into_iter().enumerate() {
            fct[k] += d.ps() as f64;
            sd[k] += d.ps() as f64 / ideal;
        }
    }
    let nn = n.max(1) as f64;
    let means = |v: [f64; 3], scale: f64| Means {
        measured: v[0] / nn / scale,
        srpt: v[1] / nn / scale,
        ps: v[2] / nn / scale,
    };
    ReferenceSummary {
        flows: flows.len(),
        finished: n,
        rate_bps: rate.bps(),
        offered_load: load,
        mean_fct_us: means(fct, 1e6),
        mean_slowdown: means(sd, 1.0),
        measured_over_srpt: fct[0] / fct[1].max(1.0),
        measured_over_ps: fct[0] / fct[2].max(1.0),
        ps_mean_response_over_work: ps_rw / flows.len().max(1) as f64,
        mg1_ps_closed_form: if load < 1.0 {
            1.0 / (1.0 - load)
        } else {
            f64::INFINITY
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(arrival: u64, work: u64) -> Job {
        Job {
            arrival: Time(arrival),
            work: Duration(work),
        }
    }

    fn times(v: &[u64]) -> Vec<Time> {
        v.iter().map(|&t| Time(t)).collect()
    }

    // Three flows by hand, times in ps:
    //   A arrives at 0 with work 10, B at 2 with work 4, C at 4 with work 2.
    //
    // SRPT: A runs 0–2 (8 left); B (4) preempts it and runs 2–4 (2 left);
    // at 4, C (2) ties with B (2): the earlier arrival, B, goes on and ends
    // at 6; C runs 6–8; A resumes with 8 left and ends at 16.
    //
    // PS: 0–2 A alone (A: 8 left); 2–4 A and B share (1 each: A 7, B 3);
    // from 4 three jobs at 1/3 each: C (2) ends first after 6 ps, at 10
    // (A 5, B 1); then two at 1/2: B ends after 2 ps, at 12 (A 4); A alone
    // ends at 16.
    #[test]
    fn three_flows_by_hand() {
        let jobs = [job(0, 10), job(2, 4), job(4, 2)];
        assert_eq!(srpt(&jobs).unwrap(), times(&[16, 6, 8]));
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[16, 12, 10]));
    }

    // The same three flows given in another order: results follow the jobs.
    #[test]
    fn input_order_does_not_matter() {
        let jobs = [job(4, 2), job(0, 10), job(2, 4)];
        assert_eq!(srpt(&jobs).unwrap(), times(&[8, 16, 6]));
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[10, 16, 12]));
    }

    // PS with a share that is not a whole number of picoseconds: two jobs of
    // work 1 arriving together each finish at 2; a third of work 1 arriving
    // at 1 makes three jobs, each with 1/2 left at rate 1/3: all end at 2.5,
    // which rounds to 3 (half up).
    #[test]
    fn ps_fractional_shares_round_to_nearest() {
        let jobs = [job(0, 1), job(0, 1)];
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[2, 2]));
        let jobs = [job(0, 3), job(0, 3), job(1, 1)];
        // 0–1: two jobs, 1/2 each (2.5 left each). From 1: three at 1/3;
        // the new job (1) ends after 3 ps at 4 (others 1.5 left); then two
        // at 1/2: both end after 3 ps, at 7.
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[7, 7, 4]));
        let jobs = [job(0, 1), job(0, 1), job(0, 1), job(1, 1)];
        // 0–1: three at 1/3 (2/3 left each). From 1: four at 1/4: the three
        // old jobs end after 8/3 ps at 11/3 (the new one has 1/3 left),
        // which rounds to 4; the new one ends at 11/3 + 1/3 = 4.
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[4, 4, 4, 4]));
    }

    #[test]
    fn idle_gaps_and_empty_input() {
        assert!(srpt(&[]).unwrap().is_empty());
        assert!(processor_sharing(&[]).unwrap().is_empty());
        let jobs = [job(0, 5), job(100, 5)];
        assert_eq!(srpt(&jobs).unwrap(), times(&[5, 105]));
        assert_eq!(processor_sharing(&jobs).unwrap(), times(&[5, 105]));
    }

    #[test]
    fn out_of_range_input_is_an_error() {
        let jobs = [job(1 << 62, 1 << 62)];
        assert_eq!(srpt(&jobs), Err(ReferenceError::TooLong));
        assert_eq!(processor_sharing(&jobs), Err(ReferenceError::TooLong));
    }

    #[test]
    fn work_counts_headers_and_a_short_last_packet() {
        let r = Rate::gbps(10);
        // 3000 B = 1460 + 1460 + 80: 1500 + 1500 + 120 wire bytes.
        assert_eq!(work_of(3000, 1460, 40, r), r.tx_time(3120));
        assert_eq!(work_of(1460, 1460, 40, r), r.tx_time(1500));
    }

    /// A small deterministic generator for the property checks.
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *state >> 33
    }

    fn random_jobs(seed: u64, n: usize) -> Vec<Job> {
        let mut s = seed;
        let mut t = 0;
        (0..n)
            .map(|_| {
                t += lcg(&mut s) % 1_000;
                // Heavy-ish tail: mostly small jobs, some 100x larger.
                let w = 1 + lcg(&mut s) % 500 * if lcg(&mut s) % 10 == 0 { 100 } else { 1 };
                job(t, w)
            })
            .collect()
    }

    /// Completion times of a FIFO server: the work-conserving baseline.
    fn fifo(jobs: &[Job]) -> Vec<u64> {
        let mut t = 0;
        arrival_order(jobs)
            .iter()
            .map(|&i| {
                t = t.max(jobs[i].arrival.ps()) + jobs[i].work.ps();
                t
            })
            .collect()
    }

    /// Every busy period ends at the same instant under any work-conserving
    /// discipline: the set of busy-period ends (the latest completion among
    /// jobs that arrived up to the period's start) must match FIFO's.
    fn busy_ends(jobs: &[Job], done: &[Time]) -> Vec<u64> {
        let order = arrival_order(jobs);
        let mut ends = Vec::new();
        let mut latest = 0u64;
        for (k, &i) in order.iter().enumerate() {
            if k > 0 && jobs[i].arrival.ps() >= latest {
                ends.push(latest);
            }
            latest = latest.max(done[i].ps());
        }
        ends.push(latest);
        ends
    }

    #[test]
    fn properties_on_random_inputs() {
        for seed in 1..=40u64 {
            let jobs = random_jobs(seed, 300);
            let s = srpt(&jobs).unwrap();
            let p = processor_sharing(&jobs).unwrap();
            // No job finishes before its own work is done.
            for (i, j) in jobs.iter().enumerate() {
                assert!(s[i] >= j.arrival + j.work, "seed {seed} job {i}");
                // PS rounds completions to the nearest picosecond.
                assert!(
                    p[i].ps() + 1 >= (j.arrival + j.work).ps(),
                    "seed {seed} job {i}"
                );
            }
            // Work conservation: SRPT's busy periods are FIFO's exactly,
            // PS's to within the rounding of a completion (1 ps).
            let f = fifo(&jobs);
            let fifo_done: Vec<Time> = {
                let mut v = vec![Time::ZERO; jobs.len()];
                for (k, &i) in arrival_order(&jobs).iter().enumerate() {
                    v[i] = Time(f[k]);
                }
                v
            };
            let want = busy_ends(&jobs, &fifo_done);
            assert_eq!(busy_ends(&jobs, &s), want, "seed {seed}");
            let got = busy_ends(&jobs, &p);
            assert_eq!(got.len(), want.len(), "seed {seed}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    g.abs_diff(*w) <= 1,
                    "seed {seed}: PS busy period ends {g} vs {w}"
                );
            }
            // SRPT minimises the mean (here: the sum of) response times.
            let sum = |d: &[Time]| -> u64 {
                d.iter()
                    .zip(&jobs)
                    .map(|(t, j)| (*t - j.arrival).ps())
                    .sum()
            };
            let (ss, sp, sf) = (sum(&s), sum(&p), sum(&fifo_done));
            assert!(ss <= sp, "seed {seed}: SRPT {ss} > PS {sp}");
            assert!(ss <= sf, "seed {seed}: SRPT {ss} > FIFO {sf}");
        }
    }

    fn flow(
        id: u32,
        size: u64,
        start: u64,
        ideal: u64,
        finish: Option<u64>,
    ) -> crate::metrics::FlowResult {
        crate::metrics::FlowResult {
            id,
            src: crate::packet::NodeId(0),
            dst: crate::packet::NodeId(1),
            size_bytes: size,
            start: Time(start),
            finish: finish.map(Time),
            ideal_fct: Duration(ideal),
            bytes_received: 0,
            retransmits: 0,
            drops: 0,
            tag: String::new(),
            query: None,
        }
    }

    // At 10 Gbit/s a 1460 B packet (1500 B on the wire) takes 1.2 us. A
    // flow of one packet alone gets its ideal FCT under both references; a
    // second one-packet flow arriving 0.2 us later waits for it under SRPT
    // (the first has 1.0 us left, less than the newcomer's 1.2 us) and
    // shares the link with it under PS.
    #[test]
    fn flows_get_their_latency_back() {
        let r = Rate::gbps(10);
        let ideal = 1_200_000 + 800_000; // work + 0.8 us of unloaded latency
        let alone = [flow(0, 1460, 0, ideal, Some(ideal))];
        let refs = flow_references(&alone, 1460, 40, r).unwrap();
        assert_eq!(refs[0].work, Duration(1_200_000));
        assert_eq!(refs[0].srpt_fct, Duration(ideal));
        assert_eq!(refs[0].ps_fct, Duration(ideal));
        let two = [
            flow(0, 1460, 0, ideal, Some(ideal)),
            flow(1, 1460, 200_000, ideal, Some(3_200_000)),
        ];
        let refs = flow_references(&two, 1460, 40, r).unwrap();
        // SRPT: first ends at 1.2 us, second at 2.4 us (FCT 2.2 + 0.8).
        assert_eq!(refs[0].srpt_fct, Duration(2_000_000));
        assert_eq!(refs[1].srpt_fct, Duration(3_000_000));
        // PS: 0.2 us alone (1.0 left), then half rate: the first ends after
        // 2.0 us at 2.2 us, the second (0.2 left) at 2.4 us.
        assert_eq!(refs[0].ps_fct, Duration(2_200_000 + 800_000));
        assert_eq!(refs[1].ps_fct, Duration(2_200_000 + 800_000));
        let s = summarize(&two, &refs, r);
        assert_eq!(s.finished, 2);
        // Measured (2.0 + 3.0) / SRPT (2.0 + 3.0) = 1; PS (3.0 + 3.0).
        assert!((s.measured_over_srpt - 1.0).abs() < 1e-12);
        assert!((s.measured_over_ps - 5.0 / 6.0).abs() < 1e-12);
        assert!((s.mean_fct_us.srpt - 2.5).abs() < 1e-9);
        // 2.4 us of work over a 0.2 us span of arrivals.
        assert!((s.offered_load - 12.0).abs() < 1e-9);
    }
}
