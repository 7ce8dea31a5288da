//! Single-bottleneck validation against flow-level references
//! (`experiments/validation/`, CI-sized): Poisson web search flows into one
//! 10 Gbit/s link. pFabric approximates SRPT (Alizadeh et al., SIGCOMM
//! 2013, §3), so its mean FCT must be close to SRPT's on the same arrivals;
//! SRPT must beat processor sharing; and processor sharing must agree with
//! the M/G/1-PS mean slowdown 1/(1 − ρ).

use crate::common::{assert_all_finished, run, shipped_config};
use pktsim::metrics::reference::{flow_references, summarize, ReferenceSummary};
use pktsim::time::Rate;

/// The shipped config at `load`, cut to `flows` flows.
fn config(load: &str, flows: u32) -> String {
    shipped_config(
        &format!("validation/pfabric_srpt_load{load}.toml"),
        10_000,
        flows.into(),
    )
}

fn reference(load: &str, flows: u32) -> ReferenceSummary {
    let out = run(&config(load, flows));
    assert_all_finished(&out);
    let rate = Rate::gbps(10);
    let refs = flow_references(&out.flows, 1460, 40, rate).expect("in range");
    summarize(&out.flows, &refs, rate)
}

#[test]
fn pfabric_is_within_5_percent_of_srpt_on_one_bottleneck() {
    for load in ["0.5", "0.8"] {
        let s = reference(load, 2000);
        let m = s.mean_fct_us;
        assert!(m.srpt < m.ps, "load {load}: {m:?}");
        assert!(
            s.measured_over_srpt >= 0.99 && s.measured_over_srpt <= 1.05,
            "load {load}: pFabric / SRPT mean FCT = {:.4}",
            s.measured_over_srpt
        );
        if load == "0.5" {
            // 2,000 heavy-tailed flows: the sample mean is within 10 % of
            // the closed form at the load the arrivals actually offered.
            let r = s.ps_mean_response_over_work / s.mg1_ps_closed_form;
            assert!((r - 1.0).abs() < 0.10, "PS {s:?}");
        }
    }
}
