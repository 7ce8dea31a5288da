//! Long TCP flows on a dumbbell: fairness, utilisation, DCTCP's queue.

use crate::common::{assert_conserved, prepare};
use pktsim::metrics::summary::jain_index;
use pktsim::net::port::PortStats;
use pktsim::sim::Simulation;
use pktsim::time::{Duration, Time};
use pktsim::transport::tcp::{Tcp, TcpParams};

/// A dumbbell with `n` senders and one receiver; 10 Gbit/s everywhere, a
/// 10 us bottleneck, `queue` as the switch discipline and `buffer` bytes.
fn dumbbell(n: u32, queue: &str, buffer: u64) -> String {
    let pairs: Vec<String> = (0..n).map(|i| format!("[{i}, {n}]")).collect();
    format!(
        r#"
[topology]
kind = "dumbbell"
senders = {n}
host_rate = "10Gbps"
host_delay = "1us"
bottleneck_rate = "10Gbps"
bottleneck_delay = "10us"
[network]
switch_queue = {queue}
switch_buffer_bytes = {buffer}
[transport]
protocol = "tcp"
[[workload]]
kind = "static"
pairs = [{}]
size = 1000000000
"#,
        pairs.join(", ")
    )
}

struct LongFlows {
    /// Goodput per flow over the second half, bits/s.
    goodput: Vec<f64>,
    /// Busy fraction of the bottleneck over the second half.
    utilisation: f64,
    /// Time-average bottleneck queue over the second half, packets.
    mean_queue_packets: f64,
    /// Drops of data packets over the whole run.
    drops: u64,
}

fn run_long_flows(n: u32, queue: &str, buffer: u64, dctcp: bool, total: Duration) -> LongFlows {
    let exp = prepare(&dumbbell(n, queue, buffer));
    let params = TcpParams {
        dctcp_g: dctcp.then_some(1.0 / 16.0),
        ..TcpParams::default()
    };
    let bottleneck = exp
        .net
        .ports
        .iter()
        .position(|p| {
            exp.net.nodes[p.owner.idx()].name == "left"
                && exp.net.nodes[p.peer.idx()].name == "right"
        })
        .expect("bottleneck port");
    let mut sim = Simulation::new(
        exp.net,
        Tcp::new(params),
        exp.workload,
        exp.format,
        exp.limits,
        1,
    );
    let half = Time::ZERO + Duration::from_ps(total.ps() / 2);
    sim.run_until(half, None);
    let bytes_mid: Vec<u64> = sim.progress().iter().map(|p| p.bytes_received).collect();
    let stats_mid: PortStats = sim.net.ports[bottleneck].stats.clone();
    let end = Time::ZERO + total;
    sim.run_until(end, None);
    let port = &sim.net.ports[bottleneck];
    let dt = (end - half).as_secs_f64();
    let goodput = sim
        .progress()
        .iter()
        .zip(&bytes_mid)
        .map(|(p, m)| (p.bytes_received - m) as f64 * 8.0 / dt)
        .collect();
    let utilisation = (port.stats.busy - stats_mid.busy).as_secs_f64() / dt;
    let mean_queue_packets = port.mean_packets_since(&stats_mid);
    let reason = sim.run_until(end, None);
    let out = sim.finish(reason);
    assert_conserved(&out);
    LongFlows {
        goodput,
        utilisation,
        mean_queue_packets,
        drops: out.counters.dropped_total(0),
    }
}

#[test]
fn newreno_flows_share_the_bottleneck_fairly_and_fill_it() {
    for n in [2, 4, 8] {
        let r = run_long_flows(
            n,
            r#"{ kind = "drop_tail" }"#,
            150_000,
            false,
            Duration::from_ms(60),
        );
        let j = jain_index(&r.goodput);
        assert!(
            j >= 0.95,
            "{n} flows: Jain index {j:.3}, goodput {:?}",
            r.goodput
        );
        assert!(
            r.utilisation >= 0.95,
            "{n} flows: utilisation {:.3}",
            r.utilisation
        );
        assert!(r.drops > 0, "NewReno should fill the buffer and drop");
    }
}

#[test]
fn dctcp_holds_the_queue_near_k_without_drops_while_newreno_fills_it() {
    let k = 20.0;
    let ecn = r#"{ kind = "ecn", k_packets = 20 }"#;
    let buffer = 1_500_000; // 1000 packets: far above what DCTCP needs.
    let d = run_long_flows(4, ecn, buffer, true, Duration::from_ms(40));
    assert_eq!(d.drops, 0, "DCTCP dropped");
    assert!(
        d.mean_queue_packets > k / 2.0 && d.mean_queue_packets < 2.0 * k,
        "DCTCP mean queue {:.1} packets, K = {k}",
        d.mean_queue_packets
    );
    assert!(
        d.utilisation >= 0.95,
        "DCTCP utilisation {:.3}",
        d.utilisation
    );
    let r = run_long_flows(4, ecn, buffer, false, Duration::from_ms(40));
    assert!(r.drops > 0, "NewReno did not drop");
    assert!(
        r.mean_queue_packets > 10.0 * k,
        "NewReno mean queue {:.1} packets",
        r.mean_queue_packets
    );
}
