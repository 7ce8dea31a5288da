//! Switch features: load balancing over equal-cost paths and shared buffers.

use crate::common::{
    assert_all_finished, assert_conserved, pairs, prepare, run, simulation, star, LeafSpine,
};
use pktsim::config::Experiment;

fn leaf_spine(lb: &str, flows: &str) -> String {
    let topology = LeafSpine {
        spines: 4,
        hosts_per_leaf: 2,
        ..LeafSpine::TEN_G
    };
    format!(
        "{}[network]\nload_balancing = \"{lb}\"\n[transport]\nprotocol = \"tcp\"\n\
         dupack_threshold = 1000\n{}",
        topology.toml(),
        pairs(flows, 3_000_000)
    )
}

/// Bytes sent on each leaf0 → spine uplink.
fn uplink_bytes(exp_toml: &str) -> Vec<u64> {
    let exp: Experiment = prepare(exp_toml);
    let uplinks: Vec<usize> = exp
        .net
        .ports()
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            exp.net.nodes()[p.owner.idx()].name == "leaf0"
                && exp.net.nodes()[p.peer.idx()].name.starts_with("spine")
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(uplinks.len(), 4);
    let tcp = pktsim::transport::tcp::Tcp::new(pktsim::transport::tcp::TcpProtocol::new(
        pktsim::transport::tcp::TcpParams {
            dupack_threshold: 1000,
            ..Default::default()
        },
    ));
    let mut sim = simulation(exp, tcp, 1);
    let reason = sim.run(None);
    let bytes = uplinks
        .iter()
        .map(|&i| sim.net.ports()[i].stats.tx_bytes)
        .collect();
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_all_finished(&out);
    bytes
}

#[test]
fn ecmp_keeps_a_flow_on_one_path() {
    let b = uplink_bytes(&leaf_spine("ecmp", "[[0, 2]]"));
    assert_eq!(b.iter().filter(|&&x| x > 0).count(), 1, "{b:?}");
}

#[test]
fn spraying_spreads_a_flow_over_all_paths() {
    let b = uplink_bytes(&leaf_spine("spray", "[[0, 2]]"));
    let mean = b.iter().sum::<u64>() as f64 / 4.0;
    assert!(
        b.iter().all(|&x| (x as f64 - mean).abs() < 0.1 * mean),
        "{b:?}"
    );
    let rr = uplink_bytes(&leaf_spine("spray_round_robin", "[[0, 2]]"));
    let (lo, hi) = (rr.iter().min().unwrap(), rr.iter().max().unwrap());
    assert!(
        hi - lo <= 1500,
        "round robin should be even to a packet: {rr:?}"
    );
}

#[test]
fn shared_buffer_caps_a_congested_port_at_its_dynamic_threshold() {
    // 8 senders → 1 receiver through one switch with a 200 KB shared buffer
    // and alpha = 1: one congested port may hold at most alpha/(1+alpha) of
    // the buffer (plus the packet that crossed the threshold).
    let flows: Vec<String> = (0..8).map(|i| format!("[{i}, 8]")).collect();
    let toml = format!(
        "{}[network]\nshared_buffer = {{ bytes = 200000, alpha = 1.0 }}\n\
         [transport]\nprotocol = \"tcp\"\n{}",
        star(9, "1us"),
        pairs(&format!("[{}]", flows.join(", ")), 500_000)
    );
    let exp = prepare(&toml);
    let port = exp
        .net
        .ports()
        .iter()
        .position(|p| exp.net.nodes()[p.peer.idx()].name == "h8")
        .unwrap();
    let tcp = pktsim::transport::tcp::Tcp::new(pktsim::transport::tcp::TcpProtocol::new(
        Default::default(),
    ));
    let mut sim = simulation(exp, tcp, 1);
    let reason = sim.run(None);
    let max = sim.net.ports()[port].stats.max_bytes;
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert!(
        out.counters.dropped_total(0) > 0,
        "incast should overflow the threshold"
    );
    assert!(max <= 100_000 + 1500, "max queue {max}");
    assert!(
        max >= 90_000,
        "the port should approach its threshold: {max}"
    );
}

#[test]
fn every_flow_finishes_on_a_fat_tree_with_spraying() {
    let out = run(r#"
[topology]
kind = "fat_tree"
k = 4
host_rate = "10Gbps"
fabric_rate = "10Gbps"
link_delay = "1us"
[network]
load_balancing = "spray"
switch_queue = { kind = "ecn", k_packets = 20 }
[transport]
protocol = "dctcp"
dupack_threshold = 10
[[workload]]
kind = "static"
pairs = [[0, 15], [1, 14], [2, 13], [3, 12], [4, 11], [5, 10], [6, 9], [7, 8]]
size = 1000000
"#);
    assert_all_finished(&out);
}

#[test]
fn eager_fifo_ports_behave_like_event_driven_ones() {
    // Incast through ECN FIFOs: run with departures scheduled at enqueue
    // time and with end-of-transmission events; the flows must finish at the
    // same times (no simultaneous events tie here: senders start staggered).
    let topology = LeafSpine {
        fabric_rate: "40Gbps",
        link_delay: "0.3us",
        ..LeafSpine::TEN_G
    };
    let toml = format!(
        r#"{}
[network]
switch_queue = {{ kind = "ecn", k_packets = 10 }}
switch_buffer_bytes = 60000
[transport]
protocol = "dctcp"
[[workload]]
kind = "csv"
file = "tests/data/staggered.csv"
"#,
        topology.toml()
    );
    let run = |eager: bool| {
        let mut exp = prepare(&toml);
        if !eager {
            exp.net.disable_eager_fifo();
        }
        let out = exp.run(None).unwrap();
        assert_conserved(&out);
        out
    };
    let (a, b) = (run(true), run(false));
    assert!(
        a.counters.dropped_total(0) > 0 || a.counters.ecn_marked > 0,
        "no congestion"
    );
    let fin = |o: &pktsim::metrics::RunOutput| o.flows.iter().map(|f| f.finish).collect::<Vec<_>>();
    assert_eq!(fin(&a), fin(&b));
    assert_eq!(a.counters, b.counters);
}
