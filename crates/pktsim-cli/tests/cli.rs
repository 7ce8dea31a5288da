//! The `pktsim` command end to end: bad inputs give one clear line and exit
//! code 2; runs are reproducible byte for byte.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::pktsim;

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
fn run_prints_a_short_summary_and_writes_the_json_to_the_file() {
    let c = Case::new(GOOD, Some(CDF));
    let o = pktsim(&["run", "exp.toml", "--out", "res"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.len() <= 8,
        "want a short summary, got {} lines:\n{stdout}",
        lines.len()
    );
    assert!(
        !stdout.contains('{'),
        "no JSON on stdout without --json:\n{stdout}"
    );
    for needle in [
        "200 of 200 finished",
        "slowdown    mean",
        "p99",
        "drops",
        "wall",
        "res/",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in\n{stdout}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.path().join("res/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["finished"], 200);
    // --json prints the full summary, the same document as the file's.
    let o = pktsim(&["run", "exp.toml", "--out", "res2", "--json"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_eq!(printed["slowdown"], summary["slowdown"]);
    assert_eq!(printed["flows"], 200);
}

#[test]
fn a_rerun_removes_the_files_of_the_earlier_run() {
    let sampled = GOOD.replace(
        "flows = 200",
        "flows = 200\n[output]\nqueue_sample_interval = \"10us\"",
    );
    let c = Case::new(&sampled, Some(CDF));
    let run = || pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], &c.path());
    assert!(run().status.success());
    assert!(c.path().join("res/queues.parquet").is_file());
    std::fs::create_dir_all(c.path().join("res/plots")).unwrap();
    std::fs::write(c.path().join("res/plots/old.png"), "old").unwrap();
    std::fs::write(c.path().join("res/notes.txt"), "mine").unwrap();
    std::fs::write(c.path().join("exp.toml"), GOOD).unwrap();
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !c.path().join("res/queues.parquet").exists(),
        "stale queues.parquet kept"
    );
    assert!(
        !c.path().join("res/plots/old.png").exists(),
        "stale plot kept"
    );
    assert!(
        c.path().join("res/notes.txt").is_file(),
        "a file pktsim did not write was removed"
    );
    assert!(c.path().join("res/flows.parquet").is_file());
}

#[test]
fn a_run_that_cannot_split_says_so() {
    // No link of 100 ns or more to cut between pieces: one thread, and the
    // run says so, as `pktsim validate` does.
    let cfg = GOOD.replace("link_delay = \"0.2us\"", "link_delay = \"50ns\"");
    let c = Case::new(&cfg, Some(CDF));
    let o = pktsim(
        &[
            "run",
            "exp.toml",
            "--quiet",
            "--threads",
            "2",
            "--out",
            "res",
        ],
        &c.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: run.threads: the topology has no link")
            && err.contains("one thread"),
        "{err}"
    );
    // The same run on one thread has nothing to say.
    let o = pktsim(&["run", "exp.toml", "--quiet", "--out", "res1"], &c.path());
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

#[test]
fn a_run_where_no_flow_finishes_warns() {
    let cfg = format!("{GOOD}[run]\ntime_limit = \"1ns\"\n");
    let c = Case::new(&cfg, Some(CDF));
    let o = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], &c.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: no flow finished") && err.contains("time limit"),
        "{err}"
    );
}

/// One bad input: the config (GOOD edited), its CDF file, the command and
/// what the one-line error must say.
struct Bad {
    what: &'static str,
    config: String,
    cdf: &'static str,
    args: &'static [&'static str],
    needles: Vec<String>,
}

fn bad(what: &'static str, from: &str, to: &str, needles: &[&str]) -> Bad {
    assert!(GOOD.contains(from), "{what}: {from:?} not in GOOD");
    Bad {
        what,
        config: GOOD.replace(from, to),
        cdf: CDF,
        args: &["validate", "exp.toml"],
        needles: needles.iter().map(|s| s.to_string()).collect(),
    }
}

const FAT_TREE_K1000: &str = r#"kind = "fat_tree"
k = 1000
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us""#;

const LEAF_SPINE: &str = r#"kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us""#;

#[test]
fn bad_inputs_exit_2_with_one_line_that_names_the_field() {
    let spines_line = GOOD.lines().position(|l| l == "spines = 2").unwrap() + 1;
    let spines_at = format!("exp.toml:{spines_line}:");
    let mut cases = vec![
        // Too large: refused from an estimate, before anything is allocated.
        bad(
            "leaves = 200000",
            "leaves = 2",
            "leaves = 200000",
            &[
                "error: topology: ",
                "GB of memory",
                "routing entries",
                "--max-memory",
            ],
        ),
        bad(
            "fat tree k = 1000",
            LEAF_SPINE,
            FAT_TREE_K1000,
            &["error: topology: ", "of memory", "--max-memory"],
        ),
        bad(
            "flows = 10^12",
            "flows = 200",
            "flows = 1000000000000",
            &["error: workload[0].flows: ", "1000000000000 flows", "2^32"],
        ),
        bad(
            "queue samples every 1 ps",
            "flows = 200",
            "flows = 200\n[output]\nqueue_sample_interval = \"1ps\"",
            &[
                "error: output.queue_sample_interval: ",
                "queue samples",
                "--max-memory",
            ],
        ),
        // Absurd values.
        bad(
            "host_rate = 1bps",
            "cdf = \"sizes.cdf\"",
            "cdf = \"websearch\"",
            &[],
        )
        .with(
            "host_rate = \"10Gbps\"",
            "host_rate = \"1bps\"",
            &["error: workload[0].load: ", "1bps host links", "time range"],
        ),
        bad(
            "1bps with flows starting together",
            "host_rate = \"10Gbps\"",
            "host_rate = \"1bps\"",
            &[],
        )
        .with(
            "kind = \"poisson\"\ncdf = \"sizes.cdf\"\nload = 0.5\nflows = 200",
            "kind = \"permutation\"\nsize = 1000000000",
            &[
                "error: workload[0].size: ",
                "(1000000000 bytes",
                "slowest link (1bps)",
                "time range",
            ],
        ),
        bad(
            "load = 1e-12",
            "load = 0.5",
            "load = 1e-12",
            &["error: workload[0].load: ", "time range"],
        ),
        bad(
            "a CDF size of 1e30",
            "",
            "",
            &["sizes.cdf:3:", "out of range"],
        )
        .cdf("1000 0.0\n10000 0.5\n1e30 1.0\n"),
        bad(
            "link_delay = 1000s",
            "link_delay = \"0.2us\"",
            "link_delay = \"1000s\"",
            &["error: topology.link_delay: ", "10 s"],
        ),
        bad(
            "a sub-picosecond delay",
            "link_delay = \"0.2us\"",
            "link_delay = \"0.1ps\"",
            &[
                "error: topology.link_delay: ",
                "whole number of picoseconds",
            ],
        ),
        bad(
            "time_limit = 0s",
            "flows = 200",
            "flows = 200\n[run]\ntime_limit = \"0s\"",
            &["error: run.time_limit: ", "positive"],
        ),
        bad(
            "a rate of 1e30Gbps",
            "host_rate = \"10Gbps\"",
            "host_rate = \"1e30Gbps\"",
            &["error: topology.host_rate: ", "out of range"],
        ),
        bad(
            "a duration of 1e30s",
            "link_delay = \"0.2us\"",
            "link_delay = \"1e30s\"",
            &["error: topology.link_delay: ", "out of range"],
        ),
        // Type errors name the key and its line, not the table's header.
        bad(
            "spines = \"two\"",
            "spines = 2",
            "spines = \"two\"",
            &[&spines_at, "topology.spines: invalid type"],
        ),
        bad(
            "load = \"half\"",
            "load = 0.5",
            "load = \"half\"",
            &["workload[0].load: invalid type"],
        ),
        // The memory limit, set lower from the config.
        bad(
            "[limits] max_memory = 1KB",
            "flows = 200",
            "flows = 200\n[limits]\nmax_memory = \"1KB\"",
            &["above the limit of 1 KB"],
        ),
    ];
    // --out is checked before anything runs.
    let mut out_file = bad("--out is a file", "", "", &["exp.toml: is a file"]);
    out_file.args = &["run", "exp.toml", "--out", "exp.toml"];
    cases.push(out_file);
    let mut out_under_file = bad(
        "--out under a file",
        "",
        "",
        &["is a file, so no directory"],
    );
    out_under_file.args = &["run", "exp.toml", "--out", "sizes.cdf/res"];
    cases.push(out_under_file);
    let mut unwritable = bad(
        "--out cannot be written",
        "",
        "",
        &["/proc/pktsim-res", "cannot write"],
    );
    unwritable.args = &["run", "exp.toml", "--out", "/proc/pktsim-res"];
    cases.push(unwritable);
    let mut flag = bad(
        "--max-memory lowers the limit",
        "",
        "",
        &["above the limit of 1 KB"],
    );
    flag.args = &["validate", "exp.toml", "--max-memory", "1KB"];
    cases.push(flag);
    for case in cases {
        let c = Case::new(&case.config, Some(case.cdf));
        let out = pktsim(case.args, &c.path());
        let needles: Vec<&str> = case.needles.iter().map(String::as_str).collect();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            std::panic::catch_unwind(|| assert_bad(&out, &needles)).is_ok(),
            "case {:?}: exit {:?}, stderr {err:?}",
            case.what,
            out.status.code()
        );
    }
}

impl Bad {
    /// A second edit of the config.
    fn with(mut self, from: &str, to: &str, needles: &[&str]) -> Bad {
        assert!(self.config.contains(from), "{}: {from:?}", self.what);
        self.config = self.config.replace(from, to);
        self.needles = needles.iter().map(|s| s.to_string()).collect();
        self
    }
    /// Another CDF file.
    fn cdf(mut self, text: &'static str) -> Bad {
        self.cdf = text;
        self
    }
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
