//! The TCP family end to end: the closed form of slow start, loss recovery
//! in incast, no spurious timeouts, and the pHost data-mining DCTCP run.

use crate::common::{assert_conserved, prepare};
use pktsim::metrics::ideal::{ideal_fct, Hop};
use pktsim::metrics::summary::{Summary, DEFAULT_BUCKETS};
use pktsim::metrics::RunOutput;
use pktsim::net::packet::FlowId;
use pktsim::sim::Simulation;
use pktsim::time::{Duration, Rate};
use pktsim::transport::tcp::{SenderStats, Tcp};

/// Run a TCP-family config with the transport built here, so that per-flow
/// sender stats can be read afterwards.
fn run_tcp(toml: &str) -> (RunOutput, Vec<SenderStats>) {
    let exp = prepare(toml);
    let params = exp
        .config
        .transport
        .tcp()
        .expect("valid")
        .expect("a TCP-family protocol");
    let mut sim = Simulation::new(
        exp.net,
        Tcp::new(params),
        exp.workload,
        exp.format,
        exp.limits,
        exp.config.seed,
    );
    let reason = sim.run(None);
    let n = sim.progress().len();
    let stats = (0..n)
        .map(|i| sim.transport.stats(FlowId(i as u32)))
        .collect();
    let out = sim.finish(reason);
    assert_conserved(&out);
    (out, stats)
}

fn counter(out: &RunOutput, name: &str) -> u64 {
    *out.protocol_counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// One flow of `size` bytes on an idle dumbbell, 10 Gbit/s everywhere:
/// host links 1 us, bottleneck 10 us, store-and-forward, IW 10.
///
/// Closed form. Let τ = tx(1500 B) and RTT₀ = Σᵢ(dᵢ + τ) + Σᵢ(dᵢ + tx(40 B)),
/// the time from a data packet's first bit leaving the sender to its ACK's
/// arrival. With one ACK per packet, each ACK in slow start releases two
/// packets, so round r (r = 1, 2, ...) sends W_r = IW·2^(r−1) packets back to
/// back from t_r = (r−1)·RTT₀, until the first round r* with W_r*·τ ≥ RTT₀:
/// from then on ACKs return while the round is still being sent and the
/// NIC never idles. The flow ends in round r = min(r*, last round), and
/// FCT = t_r + ideal(S − IW·(2^(r−1) − 1)·MSS), where ideal(·) is the
/// back-to-back time of [`ideal_fct`] over the same path.
fn slow_start_closed_form(size: u64) -> Duration {
    let (mss, hdr, iw) = (1460u64, 40u64, 10u64);
    let rate = Rate::gbps(10);
    let delays = [1u64, 10, 1];
    let path: Vec<Hop> = delays
        .iter()
        .map(|&d| Hop {
            rate,
            delay: Duration::from_us(d),
            cut_through: false,
        })
        .collect();
    let tau = rate.tx_time(mss + hdr).ps();
    let rtt0: u64 = delays
        .iter()
        .map(|&d| 2 * Duration::from_us(d).ps() + tau + rate.tx_time(hdr).ps())
        .sum();
    let n = size.div_ceil(mss);
    let (mut r, mut before) = (1u64, 0u64);
    loop {
        let w = iw << (r - 1);
        if w * tau >= rtt0 || before + w >= n {
            break;
        }
        before += w;
        r += 1;
    }
    let rest = ideal_fct(size - before * mss, mss as u32, hdr as u32, &path);
    Duration::from_ps((r - 1) * rtt0 + rest.ps())
}

#[test]
fn single_flows_finish_at_the_slow_start_closed_form() {
    for size in [1_000_000u64, 10_000_000] {
        let toml = format!(
            r#"
[topology]
kind = "dumbbell"
senders = 1
host_rate = "10Gbps"
host_delay = "1us"
bottleneck_rate = "10Gbps"
bottleneck_delay = "10us"
[transport]
protocol = "tcp"
init_cwnd = 10
[[workload]]
kind = "static"
pairs = [[0, 1]]
size = {size}
"#
        );
        let (out, stats) = run_tcp(&toml);
        let fct = out.flows[0].fct().expect("finished");
        let want = slow_start_closed_form(size);
        let err = (fct.ps() as f64 / want.ps() as f64 - 1.0).abs();
        assert!(
            err < 0.005,
            "{size} B: FCT {fct:?} vs closed form {want:?} ({:.3} %)",
            err * 100.0
        );
        assert_eq!(out.flows[0].retransmits, 0);
        assert_eq!(stats[0].timeouts, 0);
    }
}

fn incast(sack: bool) -> (RunOutput, Vec<SenderStats>) {
    run_tcp(&format!(
        r#"
[topology]
kind = "star"
hosts = 17
host_rate = "10Gbps"
link_delay = "1us"
bottleneck_buffer_bytes = 100000
[transport]
protocol = "tcp"
sack = {sack}
timer_mode = "rfc"
[[workload]]
kind = "incast"
senders = 16
size = 65536
receiver = 16
queries = 1
interval = "1ms"
"#
    ))
}

#[test]
fn incast_sack_retransmits_only_the_losses_and_less_than_newreno() {
    let (plain, stats) = incast(false);
    assert_eq!(plain.stop_reason, "all_flows_done");
    // NewReno without SACK in RFC timer mode: 16 first windows of 10
    // segments into a 66-packet buffer lose several segments per flow; one
    // hole per round trip and the impatient timer make timeouts the norm.
    let timeouts: u32 = stats.iter().map(|s| s.timeouts).sum();
    assert!(timeouts >= 16, "{timeouts} timeouts");
    let (with_sack, _) = incast(true);
    assert_eq!(with_sack.stop_reason, "all_flows_done");
    let retx = |o: &RunOutput| o.flows.iter().map(|f| f.retransmits as u64).sum::<u64>();
    assert!(
        retx(&with_sack) < retx(&plain),
        "SACK {} retransmissions, NewReno {}",
        retx(&with_sack),
        retx(&plain)
    );
    // With SACK almost every retransmission repairs a real loss.
    let drops = with_sack.counters.dropped_total(0);
    assert!(
        retx(&with_sack) as f64 <= 1.1 * drops as f64,
        "{} retransmissions for {drops} drops",
        retx(&with_sack)
    );
    assert!(counter(&with_sack, "duplicate_deliveries") * 20 <= drops);
}

#[test]
fn leafspine_flows_without_drops_never_time_out() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/leafspine_dctcp.toml"
    );
    let toml = std::fs::read_to_string(path).expect("example exists");
    let (out, stats) = run_tcp(&toml);
    assert_eq!(out.stop_reason, "all_flows_done");
    let mut bad = Vec::new();
    for (f, s) in out.flows.iter().zip(&stats) {
        if f.drops == 0 && s.timeouts > 0 {
            bad.push((f.id, s.timeouts, f.retransmits));
        }
    }
    assert!(
        bad.is_empty(),
        "flows without drops that timed out: {bad:?}"
    );
    let timeouts = counter(&out, "timeouts");
    let spurious = counter(&out, "spurious_timeouts");
    assert!(
        spurious <= 2 && spurious * 20 <= timeouts.max(1),
        "{spurious} spurious of {timeouts} timeouts"
    );
}

#[test]
fn datamining_dctcp_retransmits_only_what_was_lost() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/phost/datamining_dctcp.toml"
    );
    let text = std::fs::read_to_string(path).expect("config exists");
    assert!(text.contains("flows = 100000"));
    let (out, _) = run_tcp(&text.replace("flows = 100000", "flows = 2000"));
    assert_eq!(out.stop_reason, "all_flows_done");
    let s = Summary::from_run(&out, DEFAULT_BUCKETS);
    let data_drops = out.counters.dropped_total(0);
    assert!(
        s.retransmits as f64 <= 1.5 * data_drops as f64,
        "{} retransmissions for {data_drops} data drops",
        s.retransmits
    );
    let mean = s.slowdown.mean.expect("finished");
    assert!(mean < 10.0, "mean slowdown {mean:.2}");
    assert_eq!(out.counters.in_flight[0], 0, "data left queued at the end");
}

#[test]
fn host_nic_can_mark_ecn_and_dctcp_reacts_without_drops() {
    // The NIC's own queue marks above 5 packets (host_queue accepts a
    // marking threshold); switches do not mark. DCTCP's slow start builds
    // a queue in its own NIC, is marked there and backs off.
    let toml = r#"
[topology]
kind = "dumbbell"
senders = 1
host_rate = "10Gbps"
host_delay = "1us"
bottleneck_rate = "10Gbps"
bottleneck_delay = "10us"
[network]
host_queue = { kind = "priority", classes = 2, k_packets = 5 }
[transport]
protocol = "dctcp"
[[workload]]
kind = "static"
pairs = [[0, 1]]
size = 10000000
"#;
    let (out, stats) = run_tcp(toml);
    assert!(out.counters.ecn_marked > 0, "the NIC marked nothing");
    assert_eq!(out.counters.dropped_total(0), 0);
    assert_eq!(stats[0].timeouts, 0);
    assert_eq!(out.stop_reason, "all_flows_done");
}
