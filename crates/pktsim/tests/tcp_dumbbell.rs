//! Long TCP flows on a dumbbell: fairness, utilisation, DCTCP's queue.

use crate::common::{self, assert_conserved, pairs, prepare, simulation};
use pktsim::metrics::summary::jain_index;
use pktsim::net::port::PortStats;
use pktsim::time::{Duration, Time};
use pktsim::transport::tcp::cubic::Cubic;
use pktsim::transport::tcp::dctcp::Dctcp;
use pktsim::transport::tcp::{Tcp, TcpParams, TcpProtocol};

/// A dumbbell with `n` senders and one receiver; 10 Gbit/s everywhere, a
/// 10 us bottleneck, `queue` as the switch discipline and `buffer` bytes.
fn dumbbell(n: u32, queue: &str, buffer: u64) -> String {
    let flows: Vec<String> = (0..n).map(|i| format!("[{i}, {n}]")).collect();
    format!(
        "{}[network]\nswitch_queue = {queue}\nswitch_buffer_bytes = {buffer}\n\
         [transport]\nprotocol = \"tcp\"\n{}",
        common::dumbbell(n),
        pairs(&format!("[{}]", flows.join(", ")), 1_000_000_000)
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
    let mut params = TcpParams::default();
    if dctcp {
        params.cc = Dctcp::new(1.0 / 16.0, 1.0).into();
    }
    run_with(n, queue, buffer, params, total)
}

fn run_with(n: u32, queue: &str, buffer: u64, params: TcpParams, total: Duration) -> LongFlows {
    let exp = prepare(&dumbbell(n, queue, buffer));
    let bottleneck = exp
        .net
        .ports()
        .iter()
        .position(|p| {
            exp.net.nodes()[p.owner.idx()].name == "left"
                && exp.net.nodes()[p.peer.idx()].name == "right"
        })
        .expect("bottleneck port");
    let mut sim = simulation(exp, Tcp::new(TcpProtocol::new(params)), 1);
    let half = Time::ZERO + Duration::from_ps(total.ps() / 2);
    sim.run_until(half, None);
    let bytes_mid: Vec<u64> = sim.progress().iter().map(|p| p.bytes_received).collect();
    let stats_mid: PortStats = sim.net.ports()[bottleneck].stats.clone();
    let end = Time::ZERO + total;
    sim.run_until(end, None);
    let port = &sim.net.ports()[bottleneck];
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

/// 8 long flows of each TCP variant on the 10 Gbit/s dumbbell.
fn eight_flows(queue: &str, buffer: u64, params: TcpParams) -> LongFlows {
    run_with(8, queue, buffer, params, Duration::from_ms(40))
}

#[test]
fn eight_dctcp_flows_hold_the_queue_near_k_without_drops() {
    let k = 20.0;
    let d = eight_flows(
        r#"{ kind = "ecn", k_packets = 20 }"#,
        1_500_000,
        TcpParams {
            cc: Dctcp::new(1.0 / 16.0, 1.0).into(),
            ..TcpParams::default()
        },
    );
    assert_eq!(d.drops, 0, "DCTCP dropped");
    assert!(
        d.mean_queue_packets > k / 2.0 && d.mean_queue_packets < 2.0 * k,
        "mean queue {:.1} packets, K = {k}",
        d.mean_queue_packets
    );
    assert!(d.utilisation >= 0.95, "utilisation {:.3}", d.utilisation);
}

#[test]
fn eight_newreno_cubic_and_codel_flows_fill_the_bottleneck_fairly() {
    let drop_tail = r#"{ kind = "drop_tail" }"#;
    // TCP-CoDel: datacenter CoDel parameters (target ≈ a few packet times,
    // interval ≈ a few RTTs) and the 1 ms minimum RTO of TCP-CoDel configs.
    let codel = r#"{ kind = "codel", target = "10us", interval = "100us" }"#;
    let cases = [
        ("newreno", drop_tail, TcpParams::default()),
        (
            "cubic",
            drop_tail,
            TcpParams {
                cc: Cubic::default().into(),
                ..TcpParams::default()
            },
        ),
        (
            "tcp-codel",
            codel,
            TcpParams {
                min_rto: Duration::from_ms(1),
                ..TcpParams::default()
            },
        ),
    ];
    for (name, queue, params) in cases {
        let r = eight_flows(queue, 150_000, params);
        let j = jain_index(&r.goodput);
        assert!(j >= 0.95, "{name}: Jain {j:.3}, goodput {:?}", r.goodput);
        assert!(
            r.utilisation >= 0.95,
            "{name}: utilisation {:.3}",
            r.utilisation
        );
        if name == "tcp-codel" {
            // The standing queue's delay stays near CoDel's target: the
            // time-average queue, in 1500-byte packet times at 10 Gbit/s.
            let delay_us = r.mean_queue_packets * 1.2;
            assert!(
                (2.0..=30.0).contains(&delay_us),
                "CoDel standing queue delay {delay_us:.1} us, target 10 us"
            );
        }
    }
}
