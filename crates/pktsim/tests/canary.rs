//! The deflection family of the Canary paper (Abdous et al., NSDI 2023
//! poster; specs `canary.md`, `vertigo.md`, `dibs.md`, `aifo.md`): where
//! deflected packets go, what bounds them, and the paper's result at CI
//! size — with many-to-one queries over background traffic, Canary
//! completes queries faster on average than ECMP and than DIBS.

use crate::common::{assert_conserved, host_facing, prepare, tcp_simulation, LeafSpine};
use pktsim::metrics::queries::QueryStats;
use pktsim::metrics::{DropReason, RunOutput};

/// The three switches of the paper under test, as `[network]` and
/// `[transport]` lines.
fn scheme(name: &str) -> (&'static str, &'static str) {
    match name {
        "ecmp" => (
            r#"load_balancing = "ecmp"
switch_queue = { kind = "ecn", k_packets = 65 }"#,
            "",
        ),
        "dibs" => (
            r#"load_balancing = "ecmp"
switch_queue = { kind = "ecn", k_packets = 65 }
refusal = "deflect""#,
            "fast_retransmit = false",
        ),
        "vertigo" => (
            r#"load_balancing = "power_of_two"
switch_queue = { kind = "vertigo", k_packets = 65 }
refusal = "deflect_two_choices""#,
            r#"rank = "remaining_bytes"
reorder_window = "360us""#,
        ),
        "canary" => (
            r#"load_balancing = "power_of_two"
switch_queue = { kind = "aifo", window = 20, sample = 20, k = 0.9, k_packets = 65 }
refusal = "deflect_two_admitting""#,
            r#"rank = "remaining_bytes"
reorder_window = "360us""#,
        ),
        other => panic!("no scheme {other}"),
    }
}

/// A small leaf-spine (2 × 4 × 8 hosts, 10/40 Gbit/s, 300 KB per port)
/// with 50 % cache-follower background and queries to 30 servers at 45 %
/// more load, DCTCP with the code's 10 ms initial RTO.
fn queries_config(name: &str, seed: u64, hop_limit: u32) -> String {
    let (net, tr) = scheme(name);
    format!(
        r#"seed = {seed}
{}
[network]
switch_buffer_bytes = 300000
hop_limit = {hop_limit}
{net}
[transport]
protocol = "dctcp"
initial_rto = "10ms"
min_rto = "10ms"
rcv_window_bytes = 65535
{tr}
[run]
time_limit = "2s"
[[workload]]
kind = "poisson"
cdf = "cache_follower"
load = 0.5
flows = 120
tag = "background"
[[workload]]
kind = "queries"
load = 0.45
servers = 30
queries = 120
tag = "query"
"#,
        LeafSpine {
            leaves: 4,
            hosts_per_leaf: 8,
            fabric_rate: "40Gbps",
            link_delay: "3us",
            ..LeafSpine::TEN_G
        }
        .toml()
    )
}

/// Run a config with its TCP settings; return the output and, per port,
/// (deflections received, whether it leads to a host).
fn run_counting_ports(toml: &str) -> (RunOutput, Vec<(u64, bool)>) {
    let exp = prepare(toml);
    let host_facing = host_facing(&exp.net);
    let mut sim = tcp_simulation(exp, 1);
    let reason = sim.run(None);
    let ports = sim
        .net
        .ports()
        .iter()
        .zip(host_facing)
        .map(|(p, h)| (p.stats.deflected_in, h))
        .collect();
    let out = sim.finish(reason);
    assert_conserved(&out);
    (out, ports)
}

#[test]
fn vertigo_and_canary_deflect_only_to_switch_facing_ports_and_count_every_deflection() {
    for name in ["vertigo", "canary", "dibs"] {
        let (out, ports) = run_counting_ports(&queries_config(name, 1, 250));
        let c = &out.counters;
        assert!(c.deflected > 0, "{name}: nothing deflected");
        // Every deflection is one packet offered to one port: the books
        // (`sent = delivered + dropped + in flight`) hold with deflected
        // packets counted once each, where they went.
        let received: u64 = ports.iter().map(|p| p.0).sum();
        assert_eq!(received, c.deflected, "{name}");
        for (i, (n, host)) in ports.iter().enumerate() {
            if *host {
                assert_eq!(*n, 0, "{name}: port {i} leads to a host");
            }
        }
    }
}

#[test]
fn the_hop_limit_bounds_deflection_loops() {
    // With a TTL of 6 links, deflected packets that keep bouncing between
    // leaves and spines are dropped for it; without deflection no shortest
    // path (at most 4 links) comes near it.
    let (out, _) = run_counting_ports(&queries_config("vertigo", 1, 6));
    let c = &out.counters;
    assert!(c.deflected > 0);
    assert!(c.dropped[0][DropReason::HopLimit as usize] > 0, "{c:?}");
    let (plain, _) = run_counting_ports(&queries_config("ecmp", 1, 4));
    let pc = &plain.counters;
    assert_eq!(pc.dropped[0][DropReason::HopLimit as usize], 0, "{pc:?}");
    assert_eq!(pc.dropped[1][DropReason::HopLimit as usize], 0, "{pc:?}");
}

#[test]
fn canary_completes_queries_faster_than_ecmp_and_dibs() {
    // The paper's result at high load (Fig. 1a, 95 %): Canary's mean QCT
    // is 58 % below ECMP's and 69 % below DIBS's. At this size (measured:
    // ECMP ≈ 11 ms, DIBS ≈ 10 ms, Canary ≈ 3.5 ms, seeds 1–3) asserted as
    // the direction with a margin: below 3/4 of each.
    let qct = |name: &str| {
        let (out, _) = run_counting_ports(&queries_config(name, 1, 250));
        let q = QueryStats::of(&out.flows).expect("a run with queries");
        assert_eq!(q.queries, 120, "{name}");
        assert_eq!(q.completed, q.queries, "{name}: queries left unfinished");
        q.qct_us.mean.expect("completed queries")
    };
    let (ecmp, dibs, canary) = (qct("ecmp"), qct("dibs"), qct("canary"));
    assert!(
        canary < 0.75 * ecmp && canary < 0.75 * dibs,
        "mean QCT: canary {canary:.0} us, ecmp {ecmp:.0} us, dibs {dibs:.0} us"
    );
}
