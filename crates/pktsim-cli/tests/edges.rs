//! The command at its edges (issue 52): bounds checked before anything is
//! allocated, no panic on a closed stdout, no stale or half-written file,
//! and no command that overwrites what it reads. Each case failed before.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{leaf_spine_dctcp, pktsim};

const CDF: &str = "1000 0.0\n10000 0.5\n100000 1.0\n";

/// A folder with `exp.toml` (`config`) and `sizes.cdf`.
fn case(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), config).unwrap();
    std::fs::write(dir.path().join("sizes.cdf"), CDF).unwrap();
    dir
}

/// The one line of stderr, with exit code 2.
fn one_error_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "want one line, got: {err}");
    err.trim_end().to_string()
}

/// `pktsim args` in `cwd` with its stdout closed (as after `| head` has
/// gone): any write to it fails.
fn with_stdout_closed(args: &[&str], cwd: &Path) -> Output {
    let line = format!(
        "exec 1>&-; exec \"{}\" {}",
        env!("CARGO_BIN_EXE_pktsim"),
        args.join(" ")
    );
    Command::new("sh")
        .args(["-c", &line])
        .current_dir(cwd)
        .output()
        .expect("sh runs")
}

#[test]
fn a_huge_flap_count_is_refused_before_it_is_expanded() {
    let cfg = leaf_spine_dctcp("sizes.cdf", 20)
        + "[[event]]\nat = \"1ms\"\naction = \"flap\"\nlink = [\"leaf0\", \"spine0\"]\n\
           period = \"1ns\"\ncount = 4294967295\n";
    let dir = case(&cfg);
    let out = pktsim(&["validate", "exp.toml"], dir.path());
    let line = one_error_line(&out);
    assert!(
        line.contains("event[0].count: 4294967295 flaps make 8589934590 link changes"),
        "{line}"
    );
}

#[test]
fn thread_counts_past_the_bound_are_refused() {
    let dir = case(&leaf_spine_dctcp("sizes.cdf", 20));
    let out = pktsim(
        &["run", "exp.toml", "--quiet", "--threads", "10000"],
        dir.path(),
    );
    let line = one_error_line(&out);
    assert!(
        line.contains("run.threads: 10000 is more than pktsim runs on (at most 1024)"),
        "{line}"
    );
    assert!(!dir.path().join("results").exists(), "nothing is written");
}

#[test]
fn commands_that_print_survive_a_closed_stdout() {
    let traced = leaf_spine_dctcp("sizes.cdf", 20) + "[output.trace]\nmax_rows = 100000\n";
    let dir = case(&traced);
    let ran = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], dir.path());
    assert!(ran.status.success(), "{ran:?}");
    for args in [
        &["validate", "exp.toml"][..],
        &["reference", "res"][..],
        &["pcap", "res"][..],
    ] {
        let out = with_stdout_closed(args, dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn run_refuses_an_out_folder_that_holds_the_config_it_reads() {
    let dir = case(&leaf_spine_dctcp("../sizes.cdf", 20));
    std::fs::create_dir(dir.path().join("res")).unwrap();
    std::fs::rename(
        dir.path().join("exp.toml"),
        dir.path().join("res/config.toml"),
    )
    .unwrap();
    let before = std::fs::read(dir.path().join("res/config.toml")).unwrap();
    let out = pktsim(
        &["run", "res/config.toml", "--quiet", "--out", "./res/"],
        dir.path(),
    );
    let line = one_error_line(&out);
    assert!(line.contains("holds the config being run"), "{line}");
    assert_eq!(
        std::fs::read(dir.path().join("res/config.toml")).unwrap(),
        before,
        "the user's config is untouched"
    );
    // Another folder is fine.
    let out = pktsim(
        &["run", "res/config.toml", "--quiet", "--out", "other"],
        dir.path(),
    );
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn pcap_and_reference_refuse_to_overwrite_the_runs_files() {
    let traced = leaf_spine_dctcp("sizes.cdf", 20) + "[output.trace]\nmax_rows = 100000\n";
    let dir = case(&traced);
    let ran = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], dir.path());
    assert!(ran.status.success(), "{ran:?}");
    let flows = std::fs::read(dir.path().join("res/flows.parquet")).unwrap();
    for (args, file) in [
        (
            &["pcap", "res", "--out", "res/flows.parquet"][..],
            "flows.parquet",
        ),
        (
            &["pcap", "res", "--out", "res/./config.toml"][..],
            "config.toml",
        ),
        (
            &["reference", "res", "--out", "res/packets.parquet"][..],
            "packets.parquet",
        ),
        (
            &["reference", "res", "--out", "res/flows.parquet"][..],
            "flows.parquet",
        ),
    ] {
        let out = pktsim(args, dir.path());
        let line = one_error_line(&out);
        assert!(
            line.contains(&format!("is the run's own {file}")),
            "{args:?}: {line}"
        );
    }
    assert_eq!(
        std::fs::read(dir.path().join("res/flows.parquet")).unwrap(),
        flows
    );
    // Their own default files are theirs to write.
    assert!(pktsim(&["pcap", "res"], dir.path()).status.success());
    assert!(pktsim(&["reference", "res"], dir.path()).status.success());
}

#[test]
fn a_rerun_removes_the_earlier_runs_capture() {
    let traced = leaf_spine_dctcp("sizes.cdf", 20) + "[output.trace]\nmax_rows = 100000\n";
    let dir = case(&traced);
    let run = || pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], dir.path());
    assert!(run().status.success());
    assert!(pktsim(&["pcap", "res"], dir.path()).status.success());
    assert!(dir.path().join("res/packets.pcapng").is_file());
    assert!(run().status.success());
    assert!(
        !dir.path().join("res/packets.pcapng").exists(),
        "the earlier run's capture passes for this run's"
    );
    // No temporary file of the atomic write is left beside the capture.
    assert!(pktsim(&["pcap", "res"], dir.path()).status.success());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("res"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_capture_that_cannot_hold_a_packet_is_refused() {
    let traced = leaf_spine_dctcp("sizes.cdf", 20) + "[output.trace]\nmax_rows = 100000\n";
    let dir = case(&traced);
    let ran = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], dir.path());
    assert!(ran.status.success(), "{ran:?}");
    for (args, want) in [
        (
            &["pcap", "res", "--host", "leaf0"][..],
            "--host: leaf0 is a switch, and --host captures at a host's NIC",
        ),
        (
            &["pcap", "res", "--link", "h0,h1"][..],
            "--link: no link between h0 and h1",
        ),
        (
            &["pcap", "res", "--host", "s0"][..],
            "no node is named \"s0\" (the nodes are h0..h7, leaf0, leaf1, spine0, spine1)",
        ),
    ] {
        let line = one_error_line(&pktsim(args, dir.path()));
        assert!(line.contains(want), "{args:?}: {line}");
    }
    assert!(
        !dir.path().join("res/packets.pcapng").exists(),
        "nothing written"
    );
    let ok = pktsim(&["pcap", "res", "--link", "h0,leaf0"], dir.path());
    assert!(ok.status.success(), "{ok:?}");
}

#[test]
fn a_config_without_transport_names_the_table() {
    let cfg = leaf_spine_dctcp("sizes.cdf", 20).replace("[transport]\nprotocol = \"dctcp\"\n", "");
    let line = one_error_line(&pktsim(&["validate", "exp.toml"], case(&cfg).path()));
    assert!(
        line.ends_with("exp.toml:1: transport: missing: add a [transport] table"),
        "{line}"
    );
}

#[test]
fn a_workload_of_no_flows_is_refused() {
    let header_only = leaf_spine_dctcp("sizes.cdf", 20).replace(
        "kind = \"poisson\"\ncdf = \"sizes.cdf\"\nload = 0.5\nflows = 20\n",
        "kind = \"csv\"\nfile = \"flows.csv\"\n",
    );
    let dir = case(&header_only);
    std::fs::write(
        dir.path().join("flows.csv"),
        "src,dst,size_bytes,start_ns\n",
    )
    .unwrap();
    let line = one_error_line(&pktsim(&["validate", "exp.toml"], dir.path()));
    assert!(line.contains("workload: makes no flows"), "{line}");
    let zero = leaf_spine_dctcp("sizes.cdf", 20).replace("flows = 20", "duration = \"0s\"");
    let line = one_error_line(&pktsim(&["validate", "exp.toml"], case(&zero).path()));
    assert!(line.contains("workload: makes no flows"), "{line}");
}

#[test]
fn flows_after_the_time_limit_are_warned_and_counted() {
    let late = leaf_spine_dctcp("sizes.cdf", 20).replace(
        "kind = \"poisson\"\ncdf = \"sizes.cdf\"\nload = 0.5\nflows = 20\n",
        "kind = \"csv\"\nfile = \"flows.csv\"\n[run]\ntime_limit = \"1ms\"\n",
    );
    let dir = case(&late);
    std::fs::write(
        dir.path().join("flows.csv"),
        "src,dst,size_bytes,start_ns\n0,5,10000,0\n1,6,10000,5000000\n2,7,10000,9000000\n",
    )
    .unwrap();
    let out = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "warning: workload: 2 of 3 flows start at or after run.time_limit (1ms): they never start"
        ),
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("res/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["not_started"], 2, "{summary}");
    assert_eq!(summary["unfinished"], 2);
}

#[test]
fn datacenter_timers_on_a_wan_are_warned() {
    let wan = r#"seed = 1
[topology]
kind = "dumbbell"
senders = 2
host_rate = "10Gbps"
host_delay = "1us"
bottleneck_rate = "10Gbps"
bottleneck_delay = "10ms"
[network]
switch_queue = { kind = "drop_tail" }
[transport]
protocol = "cubic"
[[workload]]
kind = "static"
pairs = [[0, 2]]
size = 100000
"#;
    let out = pktsim(&["validate", "exp.toml"], case(wan).path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "warning: transport.initial_rto (1ms) is below a base RTT of this topology (20004us)"
        ),
        "{err}"
    );
    let timed = wan.replace(
        "protocol = \"cubic\"",
        "protocol = \"cubic\"\ninitial_rto = \"1s\"",
    );
    let out = pktsim(&["validate", "exp.toml"], case(&timed).path());
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{out:?}");
}
