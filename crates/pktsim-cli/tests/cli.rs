//! The `pktsim` command end to end: bad inputs give one clear line and exit
//! code 2; runs are reproducible byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pktsim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pktsim"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("pktsim runs")
}

/// A small valid config; `edit` rewrites parts of it for each bad case.
const GOOD: &str = r#"
seed = 1
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us"
[network]
switch_queue = { kind = "ecn", k_packets = 20 }
[transport]
protocol = "dctcp"
[[workload]]
kind = "poisson"
cdf = "sizes.cdf"
load = 0.5
flows = 200
"#;

const CDF: &str = "# test sizes\n1000 0.0\n10000 0.5\n100000 1.0\n";

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(config: &str, cdf: Option<&str>) -> Case {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("exp.toml"), config).unwrap();
        if let Some(c) = cdf {
            std::fs::write(dir.path().join("sizes.cdf"), c).unwrap();
        }
        Case { dir }
    }
    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
    fn validate(&self) -> Output {
        pktsim(&["validate", "exp.toml"], self.dir.path())
    }
}

/// Assert a one-line error that mentions every `needles`, exit code 2.
fn assert_bad(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "want one line, got: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} not in {err:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn good_config_validates() {
    let c = Case::new(GOOD, Some(CDF));
    let out = c.validate();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("8 hosts"));
}

#[test]
fn unknown_field_is_named_with_its_line() {
    let cfg = GOOD.replace("spines = 2", "spines = 2\nspline = 3");
    assert_bad(
        &Case::new(&cfg, Some(CDF)).validate(),
        &["exp.toml:6", "spline"],
    );
}

#[test]
fn zero_or_negative_rate_is_rejected() {
    for bad in ["0Gbps", "-10Gbps"] {
        let cfg = GOOD.replace("host_rate = \"10Gbps\"", &format!("host_rate = \"{bad}\""));
        assert_bad(
            &Case::new(&cfg, Some(CDF)).validate(),
            &["topology.host_rate"],
        );
    }
}

#[test]
fn load_out_of_range_is_rejected() {
    for bad in ["1.0", "1.5", "0.0", "-0.2"] {
        let cfg = GOOD.replace("load = 0.5", &format!("load = {bad}"));
        assert_bad(
            &Case::new(&cfg, Some(CDF)).validate(),
            &["workload[0].load"],
        );
    }
}

#[test]
fn missing_cdf_file_is_named() {
    assert_bad(&Case::new(GOOD, None).validate(), &["sizes.cdf"]);
}

#[test]
fn malformed_cdf_line_is_named_with_its_line() {
    let cdf = "# test sizes\n1000 0.0\n10000 half\n100000 1.0\n";
    assert_bad(&Case::new(GOOD, Some(cdf)).validate(), &["sizes.cdf:3"]);
}

#[test]
fn non_monotone_cdf_is_named_with_its_line() {
    let cdf = "1000 0.0\n10000 0.6\n20000 0.5\n100000 1.0\n";
    assert_bad(&Case::new(GOOD, Some(cdf)).validate(), &["sizes.cdf:3"]);
    let sizes = "1000 0.0\n10000 0.5\n5000 0.7\n100000 1.0\n";
    assert_bad(&Case::new(GOOD, Some(sizes)).validate(), &["sizes.cdf:3"]);
}

const EXPLICIT: &str = r#"
[topology]
kind = "explicit"
hosts = ["a", "b", "c"]
switches = ["s1", "s2"]
links = [
  { a = "a", b = "s1", rate = "10Gbps", delay = "1us" },
  { a = "b", b = "s1", rate = "10Gbps", delay = "1us" },
  { a = "c", b = "s2", rate = "10Gbps", delay = "1us" },
]
[transport]
protocol = "tcp"
[[workload]]
kind = "csv"
file = "flows.csv"
"#;

#[test]
fn unreachable_host_is_rejected() {
    let c = Case::new(EXPLICIT, None);
    std::fs::write(
        c.path().join("flows.csv"),
        "src,dst,size_bytes,start_ns\na,b,1000,0\n",
    )
    .unwrap();
    assert_bad(&c.validate(), &["topology", "cannot reach"]);
}

#[test]
fn flow_list_with_unknown_host_is_named_with_its_line() {
    let cfg = EXPLICIT.replace(
        "{ a = \"c\", b = \"s2\", rate = \"10Gbps\", delay = \"1us\" },",
        "{ a = \"c\", b = \"s2\", rate = \"10Gbps\", delay = \"1us\" },\n  { a = \"s1\", b = \"s2\", rate = \"10Gbps\", delay = \"1us\" },",
    );
    let c = Case::new(&cfg, None);
    std::fs::write(
        c.path().join("flows.csv"),
        "src,dst,size_bytes,start_ns\na,c,1000,0\nb,zed,1000,0\n",
    )
    .unwrap();
    assert_bad(&c.validate(), &["flows.csv:3", "zed"]);
}

#[test]
fn same_seed_gives_identical_flows_parquet_and_another_seed_does_not() {
    let c = Case::new(GOOD, Some(CDF));
    let run = |out: &str, seed: &str| {
        let o = pktsim(
            &["run", "exp.toml", "--quiet", "--out", out, "--seed", seed],
            &c.path(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(c.path().join(out).join("flows.parquet")).unwrap()
    };
    let a = run("a", "7");
    let b = run("b", "7");
    let d = run("d", "8");
    assert!(a == b, "same seed, different flows.parquet");
    assert!(a != d, "different seeds, same flows.parquet");
    for f in ["summary.json", "config.toml"] {
        assert!(c.path().join("a").join(f).exists(), "{f} missing");
    }
}

#[test]
fn run_prints_a_summary_and_writes_results() {
    let c = Case::new(GOOD, Some(CDF));
    let o = pktsim(&["run", "exp.toml", "--out", "res"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("slowdown"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.path().join("res/summary.json")).unwrap()).unwrap();
    assert!(summary.is_object());
}

/// One bottleneck: 4 senders into host 4 through one switch, pFabric.
const BOTTLENECK: &str = r#"
seed = 3
[topology]
kind = "star"
hosts = 5
host_rate = "10Gbps"
link_delay = "0.2us"
[network]
switch_queue = { kind = "pfabric" }
switch_buffer_bytes = 36000
host_queue = { kind = "pfabric" }
[transport]
protocol = "pfabric"
[[workload]]
kind = "poisson"
cdf = "sizes.cdf"
load = 0.5
receiver = 4
flows = 300
"#;

#[test]
fn reference_compares_a_run_with_srpt_and_ps() {
    let c = Case::new(BOTTLENECK, Some(CDF));
    let o = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = pktsim(&["reference", "res"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["flows"], 300);
    assert_eq!(s["rate_bps"], 10_000_000_000u64);
    let m = &s["mean_fct_us"];
    let (measured, srpt, ps) = (
        m["measured"].as_f64().unwrap(),
        m["srpt"].as_f64().unwrap(),
        m["ps"].as_f64().unwrap(),
    );
    // SRPT is optimal for the mean; a packet-level run cannot beat it by
    // more than the rounding of its ideal FCTs.
    assert!(srpt <= ps, "SRPT {srpt} > PS {ps}");
    assert!(measured >= srpt * 0.99, "measured {measured} < SRPT {srpt}");
    assert!(c.path().join("res/reference.parquet").exists());
    // A bad rate and a folder without results: one line, exit code 2.
    assert_bad(
        &pktsim(&["reference", "res", "--rate", "fast"], &c.path()),
        &["--rate"],
    );
    assert_bad(&pktsim(&["reference", "nowhere"], &c.path()), &["nowhere"]);
}
