//! The shipped failure experiment (`experiments/failures/`, issue 32), cut
//! down: DCTCP with ECMP on the pHost paper's leaf-spine loses link
//! leaf0-spine0 for a while. With routing that learns of the failure after
//! 1 ms, the flows hashed onto the link lose packets only until then; with
//! routing that never learns, they stall until the link comes back. Both
//! runs finish every flow and keep the books; flows started during the
//! failure are slower than without it, and slower still without routing.

use crate::common::{assert_all_finished, run, shipped_config};
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::{Duration, Time};

/// Flows of the shipped configs.
const SHIPPED_FLOWS: u64 = 3155;
/// Flows of the cut-down runs: about 6 ms of arrivals at load 0.6.
const FLOWS: u64 = 400;
/// The failure window of the cut-down runs (the shipped one is 10-30 ms).
const DOWN_MS: u64 = 2;
const UP_MS: u64 = 4;

/// The shipped config `rel` with `FLOWS` flows and the failure window
/// moved to `DOWN_MS`..`UP_MS`.
fn cut_down(rel: &str) -> String {
    let mut text = shipped_config(rel, SHIPPED_FLOWS, FLOWS);
    for (from, to) in [("10ms", DOWN_MS), ("30ms", UP_MS)] {
        let from = format!("at = \"{from}\"");
        assert!(text.contains(&from), "{rel}: no longer {from}");
        text = text.replace(&from, &format!("at = \"{to}ms\""));
    }
    text
}

fn link_down_drops(c: &pktsim::metrics::Counters) -> u64 {
    let r = DropReason::LinkDown as usize;
    c.dropped[0][r] + c.dropped[1][r]
}

fn ms(t: u64) -> Time {
    Time::ZERO + Duration::from_ms(t)
}

/// Slowdowns of the flows that started in `[lo, hi)`.
fn slowdowns(out: &RunOutput, lo: Time, hi: Time) -> Vec<f64> {
    out.flows
        .iter()
        .filter(|f| f.start >= lo && f.start < hi)
        .map(|f| f.slowdown().expect("finished"))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Small flows (under 100 KB, which finish within a millisecond on an idle
/// path) started during the failure that finished only after the recovery.
fn small_flows_that_waited(out: &RunOutput) -> usize {
    out.flows
        .iter()
        .filter(|f| f.start >= ms(DOWN_MS) && f.start < ms(UP_MS) && f.size_bytes < 100_000)
        .filter(|f| f.finish.expect("finished") > ms(UP_MS))
        .count()
}

#[test]
fn ecmp_loses_a_spine_link_and_routing_around_it_pays() {
    let baseline = run(&shipped_config(
        "failures/ecmp_baseline.toml",
        SHIPPED_FLOWS,
        FLOWS,
    ));
    let detected = run(&cut_down("failures/ecmp_linkdown.toml"));
    let never = run(&cut_down("failures/ecmp_never_linkdown.toml"));
    assert_all_finished(&baseline);
    assert!(baseline.faults.is_empty());
    assert_eq!(link_down_drops(&baseline.counters), 0);
    for out in [&detected, &never] {
        assert_all_finished(out);
        assert_eq!(out.flows.len() as u64, FLOWS);
        // The down and the up, in that order, at their times; nothing is
        // lost to a down link once it is back.
        let marks: Vec<(Time, &str)> = out.faults.iter().map(|f| (f.at, &*f.what)).collect();
        assert_eq!(
            marks,
            [
                (ms(DOWN_MS), "down link leaf0-spine0"),
                (ms(UP_MS), "up link leaf0-spine0")
            ]
        );
        assert_eq!(link_down_drops(&out.faults[0].counters_before), 0);
        assert_eq!(
            link_down_drops(&out.faults[1].counters_before),
            link_down_drops(&out.counters),
            "link_down drops after the recovery"
        );
    }
    // Routing that never reacts keeps sending the hashed flows to the dead
    // link for the whole window (at the pace of their backed-off
    // retransmission timers): more losses than in the first millisecond.
    let (lost_detected, lost_never) = (
        link_down_drops(&detected.counters),
        link_down_drops(&never.counters),
    );
    assert!(
        0 < lost_detected && lost_detected < lost_never,
        "link_down drops: detected after 1 ms {lost_detected}, never {lost_never}"
    );
    // The same flows (one seed) started before the failure fare alike; those
    // started during it are slower than without the failure, and slower
    // still when routing never reacts.
    let before = |o: &RunOutput| mean(&slowdowns(o, ms(0), ms(DOWN_MS)));
    let during = |o: &RunOutput| slowdowns(o, ms(DOWN_MS), ms(UP_MS));
    assert!(during(&baseline).len() > 50, "too few flows in the window");
    assert!((before(&detected) / before(&baseline) - 1.0).abs() < 0.1);
    let means = [&baseline, &detected, &never].map(|o| mean(&during(o)));
    assert!(
        means[0] < means[1] && means[1] < means[2],
        "mean slowdown during the failure: baseline, detected, never = {means:?}"
    );
    assert!(max(&during(&never)) > max(&during(&detected)));
    // With routing that never reacts, more short flows wait for the link.
    assert!(
        small_flows_that_waited(&never) > small_flows_that_waited(&detected),
        "short flows that waited for the recovery: never {}, detected {}",
        small_flows_that_waited(&never),
        small_flows_that_waited(&detected)
    );
}
