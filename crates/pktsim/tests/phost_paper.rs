//! A CI-sized version of the pHost paper's evaluation (experiments/phost):
//! the shipped configs, cut to 2,000 web-search flows at load 0.6.

use crate::common::{run, shipped_config};
use pktsim::metrics::summary::{Summary, DEFAULT_BUCKETS};

/// Run `experiments/phost/<file>` with `flows` flows and summarise it.
fn run_experiment(file: &str, flows: u64) -> Summary {
    let out = run(&shipped_config(&format!("phost/{file}"), 100_000, flows));
    assert_eq!(
        out.stop_reason, "all_flows_done",
        "{file}: not every flow finished"
    );
    Summary::from_run(&out, DEFAULT_BUCKETS)
}

#[test]
fn phost_is_close_to_pfabric_and_both_far_below_dctcp_and_beats_fastpass() {
    let mean = |s: &Summary| s.slowdown.mean.expect("flows finished");
    let phost = run_experiment("websearch_phost.toml", 2000);
    let pfabric = run_experiment("websearch_pfabric.toml", 2000);
    let dctcp = run_experiment("websearch_dctcp.toml", 2000);
    let (ph, pf, dc) = (mean(&phost), mean(&pfabric), mean(&dctcp));
    // The paper: pHost within ~4 % of pFabric at 100,000 flows. At 2,000
    // flows we measure ~10 %; the bound for this size is 15 %.
    assert!(
        (ph / pf - 1.0).abs() <= 0.15,
        "pHost {ph:.3} vs pFabric {pf:.3}: more than 15 % apart"
    );
    // "Well below": a third below DCTCP's mean slowdown. (We saw ~5x before
    // DCTCP got NIC backpressure and sound loss recovery, issue #16; now
    // ~2x: DCTCP 2.6, pHost 1.33, pFabric 1.21.)
    assert!(
        1.5 * ph < dc && 1.5 * pf < dc,
        "pHost {ph:.3}, pFabric {pf:.3}, DCTCP {dc:.3}"
    );
    // The short-flow breakdown tells the same story.
    let short = |s: &Summary| s.short_flows.slowdown.mean.expect("short flows finished");
    assert!(1.5 * short(&phost) < short(&dctcp) && 1.5 * short(&pfabric) < short(&dctcp));
    // The paper: Fastpass (its simulator's epoch model) 1.30x pHost's mean
    // slowdown on web search (Fig. 3: 1.93 vs 1.49). With schedules
    // starting at their epoch, as the code of that time did, we measure
    // about 1.34x at this size; assert it with margin.
    let fp = mean(&run_experiment("websearch_fastpass.toml", 2000));
    assert!(fp > 1.2 * ph, "Fastpass {fp:.3} vs pHost {ph:.3}");
}
