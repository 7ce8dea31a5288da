//! `summary.json`'s phases on a real failure (issue 32 item 3): a spine
//! link down at 200 µs and up at 400 µs cuts the run into three phases
//! whose drops add up to the run's, with every `link_down` drop in the
//! phase the failure opened, and each flow counted once, where it started.

use crate::common::{assert_conserved, pairs, run, LeafSpine};
use pktsim::metrics::summary::{Summary, DEFAULT_BUCKETS};
use pktsim::metrics::DropReason;

#[test]
fn a_link_down_and_up_gives_three_phases_whose_drops_add_up() {
    let toml = format!(
        "{}[network]\nswitch_queue = {{ kind = \"ecn\", k_packets = 20 }}\n\
         [transport]\nprotocol = \"dctcp\"\nmin_rto = \"1ms\"\ninitial_rto = \"1ms\"\n\
         {}[run]\ntime_limit = \"1s\"\n\
         [[event]]\nat = \"200us\"\naction = \"down\"\nlink = [\"leaf0\", \"spine0\"]\n\
         [[event]]\nat = \"400us\"\naction = \"up\"\nlink = [\"leaf0\", \"spine0\"]\n",
        LeafSpine::TEN_G.toml(),
        pairs("[[0, 4], [1, 5], [2, 6], [3, 7]]", 2_000_000),
    );
    let out = run(&toml);
    assert_conserved(&out);
    let s = Summary::from_run(&out, DEFAULT_BUCKETS);
    let what: Vec<Option<&str>> = s.phases.iter().map(|p| p.what.as_deref()).collect();
    assert_eq!(
        what,
        [
            None,
            Some("down link leaf0-spine0"),
            Some("up link leaf0-spine0")
        ]
    );
    let bounds: Vec<(f64, f64)> = s.phases.iter().map(|p| (p.start_us, p.end_us)).collect();
    assert_eq!(
        bounds,
        [(0.0, 200.0), (200.0, 400.0), (400.0, s.sim_time_us)]
    );
    // Every flow started at 0: all in phase 0, counted once.
    let flows: Vec<usize> = s.phases.iter().map(|p| p.flows).collect();
    assert_eq!(flows, [4, 0, 0]);
    assert_eq!(s.phases[0].finished, s.finished);
    // The phases' drops add up to the run's, kind by kind, reason by reason.
    for (kind, reasons) in &s.drops {
        for (reason, total) in reasons {
            let sum: u64 = s.phases.iter().map(|p| p.drops[kind][reason]).sum();
            assert_eq!(sum, *total, "{kind} {reason}");
        }
    }
    let down = DropReason::LinkDown.name();
    let per_phase: Vec<u64> = s
        .phases
        .iter()
        .map(|p| p.drops["data"][down] + p.drops["control"][down])
        .collect();
    assert!(
        per_phase[1] > 0,
        "the failure dropped nothing: {per_phase:?}"
    );
    assert_eq!((per_phase[0], per_phase[2]), (0, 0), "{per_phase:?}");
    let json = serde_json::to_string(&s).unwrap();
    assert!(json.contains("\"faults\":[{\"at_us\":200.0,\"what\":\"down link leaf0-spine0\"}"));
}
