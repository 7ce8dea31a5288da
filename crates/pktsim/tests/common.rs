//! Helpers shared by the end-to-end tests.

use pktsim::config::{Config, Experiment};
use pktsim::metrics::RunOutput;
use std::path::Path;

/// Parse and prepare a config given as TOML text.
pub fn prepare(toml: &str) -> Experiment {
    let cfg = Config::from_toml_str(toml, "<test>").expect("config parses");
    cfg.prepare(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("config is valid")
}

/// Run a config to the end and check conservation.
pub fn run(toml: &str) -> RunOutput {
    let out = prepare(toml).run(None).expect("runs");
    assert_conserved(&out);
    out
}

/// The conservation invariant: sent = delivered + dropped + in flight.
pub fn assert_conserved(out: &RunOutput) {
    let c = &out.counters;
    assert!(c.conserved(), "conservation violated: {c:?}");
    for k in 0..2 {
        let by_site: u64 = c.dropped_at[k].iter().sum();
        assert_eq!(
            by_site,
            c.dropped_total(k),
            "a drop without its site: {c:?}"
        );
    }
    assert!(c.sent[0] > 0, "no data sent");
}
