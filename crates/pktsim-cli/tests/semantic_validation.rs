//! `pktsim validate` and `run` on configs that are well-formed but wrong:
//! each exits with code 2 and one line on stderr naming the field; a
//! deliberate mismatch runs with `allow_mismatch = true` and says so in
//! `summary.json`. (The full table of wrong configs is the library's
//! `tests/semantic_validation.rs`; here the command's side of it.)

use std::process::{Command, Output};

mod common;
use common::{leaf_spine_dctcp, pktsim};

/// The valid config every case edits: 20 web search flows.
fn good() -> String {
    leaf_spine_dctcp("websearch", 20)
}

/// A folder holding `exp.toml` = [`good`] with `edits`, and `extra` files.
fn case(edits: &[(&str, &str)], extra: &[(&str, &str)]) -> tempfile::TempDir {
    let mut cfg = good();
    for (from, to) in edits {
        assert!(cfg.contains(from), "{from:?} not in the good config");
        cfg = cfg.replacen(from, to, 1);
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), cfg).unwrap();
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_good_config_validates() {
    let d = case(&[], &[]);
    let out = pktsim(&["validate", "exp.toml"], d.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

/// What is wrong, the edits of [`good`], and what stderr must contain.
type Wrong<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<&'a str>);

#[test]
fn wrong_configs_exit_2_with_one_line_naming_the_fields() {
    let csv = "src,dst,size_bytes,start_ns\n0,5,1000,0\n1,6,1000,1e20\n";
    let poisson = "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 20";
    let cases: Vec<Wrong> = vec![
        (
            "ExpressPass on ECN queues",
            vec![("protocol = \"dctcp\"", "protocol = \"expresspass\"")],
            vec!["error: network.switch_queue: ", "transport.protocol", "credit_port", "allow_mismatch"],
        ),
        (
            "credit_port queues under DCTCP",
            vec![("{ kind = \"ecn\", k_packets = 20 }", "{ kind = \"credit_port\" }")],
            vec!["error: network.switch_queue: ", "transport.protocol = \"dctcp\""],
        ),
        (
            "hop_limit = 2 on a leaf-spine",
            vec![("[network]\n", "[network]\nhop_limit = 2\n")],
            vec!["error: network.hop_limit: ", "4 links"],
        ),
        (
            "initial_rto = 1ps",
            vec![("protocol = \"dctcp\"", "protocol = \"dctcp\"\ninitial_rto = \"1ps\"")],
            vec!["error: transport.initial_rto: "],
        ),
        (
            "a seed above 2^63 - 1",
            vec![("seed = 1", "seed = 9223372036854775808")],
            vec!["error: exp.toml:1: seed: "],
        ),
        (
            "a CSV flow starting at 1e20 ns",
            vec![(poisson, "kind = \"csv\"\nfile = \"flows.csv\"")],
            vec!["flows.csv:3: column 4 (start_ns): ", "106 days"],
        ),
        (
            "switch_buffer_bytes with shared_buffer",
            vec![(
                "[network]\n",
                "[network]\nswitch_buffer_bytes = 100000\nshared_buffer = { bytes = 1000000, alpha = 1.0 }\n",
            )],
            vec!["error: network.switch_buffer_bytes: ", "network.shared_buffer"],
        ),
    ];
    for (what, edits, needles) in cases {
        let d = case(&edits, &[("flows.csv", csv)]);
        let out = pktsim(&["validate", "exp.toml"], d.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: want one line, got {err:?}");
        for n in needles {
            assert!(err.contains(n), "{what}: {n:?} not in {err:?}");
        }
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn an_allowed_mismatch_runs_and_is_recorded_in_summary_json() {
    let d = case(
        &[
            ("protocol = \"dctcp\"", "protocol = \"expresspass\""),
            ("[network]\n", "[network]\nallow_mismatch = true\n"),
            ("flows = 20", "flows = 5"),
        ],
        &[],
    );
    // validate accepts it and warns, one line per mismatch.
    let out = pktsim(&["validate", "exp.toml"], d.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let warn = stderr(&out);
    assert!(
        warn.lines()
            .all(|l| l.starts_with("warning: running with a mismatch")),
        "{warn}"
    );
    assert!(warn.contains("network.switch_queue"), "{warn}");
    let out = pktsim(&["run", "exp.toml", "--out", "res", "--quiet"], d.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("res/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["allow_mismatch"], serde_json::json!(true));
    let m = summary["mismatches"].as_array().expect("a list");
    assert!(
        m.iter()
            .any(|s| s.as_str().unwrap().starts_with("network.switch_queue: ")),
        "{m:?}"
    );
    let resolved = std::fs::read_to_string(d.path().join("res/config.toml")).unwrap();
    assert!(resolved.contains("allow_mismatch = true"), "{resolved}");
    // A run without the opt-out has neither key.
    let plain = case(&[("flows = 20", "flows = 5")], &[]);
    let out = pktsim(
        &["run", "exp.toml", "--out", "res", "--quiet"],
        plain.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(plain.path().join("res/summary.json")).unwrap();
    assert!(!text.contains("allow_mismatch") && !text.contains("mismatches"));
}

#[test]
fn the_address_space_limit_caps_the_memory_estimate() {
    // About 4.8 GB of routing tables: under the default limit of this
    // machine, above what `ulimit -v 2000000` (2 GB) leaves. Only
    // validated, never built.
    let d = case(
        &[(
            "leaves = 2\nhosts_per_leaf = 4",
            "leaves = 20000\nhosts_per_leaf = 1",
        )],
        &[],
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2000000 && exec \"$0\" validate exp.toml")
        .arg(env!("CARGO_BIN_EXE_pktsim"))
        .current_dir(d.path())
        .output()
        .expect("sh runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: topology: "), "{err}");
    assert!(err.contains("address-space limit (ulimit -v)"), "{err}");
}

#[test]
fn gigabytes_of_queue_samples_warn_at_validate() {
    // 16 switch ports sampled every 2 ns for 10 ms: 80 M samples, about
    // 2.2 GB of queues.parquet (memory allowed up to 64 GB here).
    let d = case(
        &[(
            "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 20",
            "kind = \"static\"\npairs = [[0, 7]]\nsize = 1000\nstart = \"10ms\"\n\
             [output]\nqueue_sample_interval = \"2ns\"\n[limits]\nmax_memory = \"64GB\"",
        )],
        &[],
    );
    let out = pktsim(&["validate", "exp.toml"], d.path());
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning: output.queue_sample_interval: ") && err.contains("GB"),
        "{err}"
    );
}
