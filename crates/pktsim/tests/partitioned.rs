//! The partitioned engine (issue 33, step 2): a run split into groups on
//! threads gives the serial run's every result, on a topology whose flows
//! cross every cut, with a zero-delay link (never cut), spraying (random
//! streams per switch), shared buffers, queue sampling and limits.

use crate::common::{assert_conserved, prepare};
use pktsim::metrics::RunOutput;

/// Four switches in a ring with three hosts each. s1-s2 has no delay, so
/// s1 and s2 (with their hosts) are one piece; the other ring links are
/// cut. Every pair of switches two hops apart has two equal-cost paths,
/// which spraying picks between at random. `network` is added to the
/// `[network]` table, `extra` at the end.
pub fn ring(network: &str, extra: &str) -> String {
    let mut hosts = Vec::new();
    let mut links = Vec::new();
    for s in 0..4 {
        for h in 0..3 {
            let name = format!("h{s}{h}");
            links.push(format!(
                "{{ a = \"{name}\", b = \"s{s}\", rate = \"10Gbps\", delay = \"0.3us\" }}"
            ));
            hosts.push(format!("\"{name}\""));
        }
    }
    for (a, b, d) in [(0, 1, "1us"), (1, 2, "0us"), (2, 3, "0.5us"), (3, 0, "2us")] {
        links.push(format!(
            "{{ a = \"s{a}\", b = \"s{b}\", rate = \"10Gbps\", delay = \"{d}\" }}"
        ));
    }
    format!(
        r#"
name = "ring"
seed = 7

[topology]
kind = "explicit"
hosts = [{}]
switches = ["s0", "s1", "s2", "s3"]
links = [
  {}
]

[network]
load_balancing = "spray"
switch_queue = {{ kind = "ecn", k_packets = 20 }}
{network}

[transport]
protocol = "dctcp"

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.6
flows = 200

[output]
queue_sample_interval = "20us"
sample_host_queues = true
{extra}
"#,
        hosts.join(", "),
        links.join(",\n  "),
    )
}

/// Run `toml` on `threads` threads; whether it really split.
pub fn run_on(toml: &str, threads: usize) -> (RunOutput, bool) {
    let mut exp = prepare(toml);
    exp.threads = threads;
    let split = threads > 1 && !exp.keeps_to_one_thread();
    let out = exp.run(None).expect("runs");
    assert_conserved(&out);
    (out, split)
}

/// Everything a run reports that cannot depend on the machine.
pub fn same(a: &RunOutput, b: &RunOutput, what: &str) {
    assert_eq!(a.flows, b.flows, "{what}: flows");
    assert_eq!(a.events, b.events, "{what}: events");
    assert_eq!(a.sim_time, b.sim_time, "{what}: simulated time");
    assert_eq!(a.counters, b.counters, "{what}: counters");
    assert_eq!(
        a.protocol_counters, b.protocol_counters,
        "{what}: protocol counters"
    );
    assert_eq!(a.queue_samples, b.queue_samples, "{what}: queue samples");
    assert_eq!(a.link_samples, b.link_samples, "{what}: link samples");
    assert_eq!(a.trace, b.trace, "{what}: packet trace");
    assert_eq!(a.timeseries, b.timeseries, "{what}: time series");
    assert_eq!(a.stop_reason, b.stop_reason, "{what}: stop reason");
}

#[test]
fn a_ring_with_a_zero_delay_link_gives_the_serial_run_on_any_thread_count() {
    let toml = ring(SHARED, "");
    let (serial, _) = run_on(&toml, 1);
    assert_eq!(serial.stop_reason, "all_flows_done");
    assert!(serial.counters.ecn_marked > 0, "no congestion to speak of");
    same_on_2_3_and_8_threads(&toml, &serial);
}

const SHARED: &str = "shared_buffer = { bytes = 300000, alpha = 1.0 }";

fn same_on_2_3_and_8_threads(toml: &str, serial: &RunOutput) {
    for threads in [2, 3, 8] {
        let (out, split) = run_on(toml, threads);
        assert!(split, "{threads} threads: the run did not split");
        same(serial, &out, &format!("{threads} threads"));
    }
}

/// The switch stage across cuts: deflection (random streams per switch)
/// and FastLane (notices back to senders in other groups, a notice
/// bucket per port), with buffers small enough that they act.
#[test]
fn deflection_and_fastlane_give_the_serial_run_on_any_thread_count() {
    for (network, acted) in [
        (
            "switch_buffer_bytes = 30000\nrefusal = \"deflect\"",
            "deflected",
        ),
        (
            "switch_buffer_bytes = 30000\nrefusal = \"deflect_two_admitting\"",
            "deflected",
        ),
        (
            "switch_buffer_bytes = 30000\n[network.fastlane]\nbuffer_cap = 0.1",
            "fastlane_notices_made",
        ),
        // Deflected packets that cross too many links are dropped on
        // arrival, counted by the receiving side of the link.
        (
            "switch_buffer_bytes = 30000\nrefusal = \"deflect\"\nhop_limit = 4",
            "hop_limit",
        ),
    ] {
        // Link series too: deflections and notices are counted per port.
        let toml = ring(
            network,
            "[output.links]\ninterval = \"30us\"\n[output.trace]\nmax_rows = 20000\n\
             [output.timeseries]\nsample = 20",
        );
        let (serial, _) = run_on(&toml, 1);
        crate::link_series::assert_links_add_up(&serial, 30_000_000);
        let n = if acted == "deflected" {
            serial.counters.deflected
        } else if acted == "hop_limit" {
            let r = pktsim::metrics::DropReason::HopLimit as usize;
            serial.counters.dropped[0][r] + serial.counters.dropped[1][r]
        } else {
            serial.protocol_counters[acted]
        };
        assert!(n > 0, "{network}: the switch stage never acted");
        same_on_2_3_and_8_threads(&toml, &serial);
    }
}

#[test]
fn limits_stop_a_split_run_where_they_stop_the_serial_one() {
    for extra in [
        "[run]\ntime_limit = \"3ms\"",
        "[run]\nevent_limit = 200000",
        "[run]\nno_progress_limit = \"3us\"",
    ] {
        let toml = ring(SHARED, extra);
        let (serial, _) = run_on(&toml, 1);
        assert_ne!(serial.stop_reason, "all_flows_done", "{extra}");
        let (out, split) = run_on(&toml, 2);
        assert!(split);
        same(&serial, &out, extra);
    }
}

/// More groups than threads (and several groups on one thread) run the
/// serial run too; the windows' statistics say how the groups shared the
/// events.
#[test]
fn more_groups_than_threads_give_the_serial_run() {
    let toml = ring(SHARED, "");
    let (serial, _) = run_on(&toml, 1);
    assert_eq!(serial.windows, None);
    // The ring has three pieces: five groups asked for are three.
    for (groups, threads, dealt) in [(2, 1, 2), (3, 2, 3), (5, 2, 3)] {
        let mut exp = prepare(&toml);
        (exp.groups, exp.threads) = (Some(groups), threads);
        let out = exp.run(None).expect("runs");
        assert_conserved(&out);
        let what = format!("{groups} groups on {threads} threads");
        same(&serial, &out, &what);
        let w = out.windows.expect("split");
        assert_eq!((w.groups, w.threads), (dealt, threads), "{what}");
        assert!(w.windows > 100 && w.events <= out.events, "{what}: {w:?}");
        // The busiest group of a window runs at least its share of it.
        assert!(
            w.critical < w.events && w.critical * dealt as u64 >= w.events,
            "{what}: {w:?}"
        );
        assert!(w.balance_bound() > 1.0 && w.balance_bound() <= dealt as f64);
        assert_eq!(w.events_by_group.len(), dealt, "{what}");
        assert_eq!(w.events_by_group.iter().sum::<u64>(), w.events, "{what}");
        // No group runs more events than the windows' busiest groups did
        // together (`critical`).
        let busiest = *w.events_by_group.iter().max().unwrap_or(&0);
        assert!(busiest <= w.critical, "{what}: {w:?}");
        assert!(w.busiest_over_mean() >= 1.0, "{what}: {w:?}");
    }
}

#[test]
fn zero_threads_or_groups_is_an_error_naming_the_field() {
    for field in ["threads", "groups"] {
        let toml = ring(SHARED, &format!("[run]\n{field} = 0"));
        let cfg = pktsim::config::Config::from_toml_str(&toml, "<test>").expect("parses");
        let e = cfg
            .prepare(std::path::Path::new("."))
            .err()
            .expect("refused");
        assert!(e.to_string().contains(&format!("run.{field}")), "{e}");
    }
}

/// TCP pacing (one release timer per flow) and the handshake (SYN and
/// SYN-ACK timers at both ends) are host state like the rest.
#[test]
fn paced_flows_with_the_handshake_give_the_serial_run_on_any_thread_count() {
    // With the time series read at an interval: each group reads the
    // flows' state at its own hosts.
    let series = "[output.timeseries]\ninterval = \"10us\"\nsample = 30";
    let toml = ring(SHARED, series).replace(
        "protocol = \"dctcp\"",
        "protocol = \"dctcp\"\npacing = \"fq\"\nhandshake = true",
    );
    let (serial, _) = run_on(&toml, 1);
    assert!(serial.protocol_counters["syn_sent"] >= 200);
    assert!(serial.timeseries.len() > 1000);
    assert!(serial.protocol_counters["pacing_delays"] > 0);
    same_on_2_3_and_8_threads(&toml, &serial);
}

/// What cannot split says so before the run, and runs on one thread with
/// the serial run's results: a star has one switch (nothing to cut), and
/// pFabric's senders read their receivers' state.
#[test]
fn what_cannot_split_warns_and_runs_serially() {
    let star = r#"
name = "star"
[topology]
kind = "star"
hosts = 8
host_rate = "10Gbps"
link_delay = "1us"
[transport]
protocol = "tcp"
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 50
[run]
threads = 2
"#;
    let pfabric = ring("", "[run]\nthreads = 2")
        .replace("protocol = \"dctcp\"", "protocol = \"pfabric\"")
        .replace(
            "switch_queue = { kind = \"ecn\", k_packets = 20 }",
            "switch_queue = { kind = \"pfabric\" }",
        );
    for (toml, why) in [(star.to_string(), "no link"), (pfabric, "pfabric")] {
        let exp = prepare(&toml);
        assert!(
            exp.warnings
                .iter()
                .any(|w| w.starts_with("run.threads:") && w.contains(why)),
            "{why}: {:?}",
            exp.warnings
        );
        let mut serial = prepare(&toml);
        serial.threads = 1;
        same(
            &serial.run(None).expect("runs"),
            &exp.run(None).expect("runs"),
            why,
        );
    }
}
