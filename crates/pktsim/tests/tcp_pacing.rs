//! TCP pacing (`pacing = "fq"`) end to end: a paced flow's packets leave
//! its NIC spaced by packet size / pacing rate, at Linux's 200 % of
//! cwnd / srtt in slow start and 120 % after it, with at most one pacing
//! event per packet; bad pacing settings are refused with clear errors.

use crate::common::{dumbbell, pairs};
use crate::tcp_tap::{counter, keep_all, lose_first, run_tapped, Seen};
use pktsim::config::Config;
use pktsim::packet::{flags, Header};
use pktsim::time::{Duration, Rate};
use std::collections::HashSet;
use std::path::Path;

const MSS: u64 = 1460;
const HEADER: u64 = 40;
/// The window, fixed: initial and largest window, packets.
const W: u64 = 10;
/// Segments of the flow.
const SEGMENTS: u64 = 2000;
/// The segment lost once, to leave slow start.
const LOST: u64 = 300;

/// One long flow on an idle dumbbell (10 Gbit/s; links 1, 10, 1 us) with
/// its window fixed at `W` packets, so that the pacing rate is constant
/// within each phase.
fn config(pacing: &str, extra: &str) -> String {
    format!(
        r#"{}
[transport]
protocol = "tcp"
init_cwnd = {W}
max_cwnd = {W}
pacing = "{pacing}"
{extra}
{}"#,
        dumbbell(1),
        pairs("[[0, 1]]", SEGMENTS * MSS)
    )
}

/// A data packet's round trip on the idle path: its 1500 bytes
/// serialized and propagated over each of the three links, then its ACK's
/// 40 bytes back. Every RTT sample of the paced flow is this (its packets
/// never queue), so srtt is exactly this.
fn data_rtt() -> Duration {
    let rate = Rate::gbps(10);
    let ps: u64 = [1u64, 10, 1]
        .iter()
        .map(|&d| {
            2 * Duration::from_us(d).ps()
                + rate.tx_time(MSS + HEADER).ps()
                + rate.tx_time(HEADER).ps()
        })
        .sum();
    Duration::from_ps(ps)
}

/// packet size / (ratio % × W·MSS / srtt), in picoseconds.
fn expected_gap(ratio: u64) -> f64 {
    (MSS + HEADER) as f64 * data_rtt().ps() as f64 * 100.0 / (ratio * W * MSS) as f64
}

/// One gap between consecutive original segments: at the receiver, at
/// the NIC hand-over (the packets' send stamps), and whether an ACK reached
/// the sender at the instant the second packet was handed over (the window,
/// not pacing, released it).
struct Gap {
    arrival: f64,
    handed: f64,
    ack_released: bool,
}

/// The gaps between consecutive original segments whose first is in `segs`.
fn gaps(seen: &[Seen], segs: std::ops::Range<u64>) -> Vec<Gap> {
    let acks: HashSet<u64> = seen
        .iter()
        .filter(|s| matches!(s.pkt.header, Header::TcpAck { .. }))
        .map(|s| s.at.ps())
        .collect();
    let data: Vec<&Seen> = seen
        .iter()
        .filter(|s| {
            matches!(s.pkt.header, Header::TcpData { .. }) && !s.lost && !s.pkt.has(flags::RETX)
        })
        .collect();
    let seg = |s: &Seen| match s.pkt.header {
        Header::TcpData { seq } => seq / MSS,
        _ => unreachable!(),
    };
    data.windows(2)
        .filter(|w| segs.contains(&seg(w[0])) && seg(w[1]) == seg(w[0]) + 1)
        .map(|w| Gap {
            arrival: (w[1].at - w[0].at).ps() as f64,
            handed: (w[1].pkt.sent_at - w[0].pkt.sent_at).ps() as f64,
            ack_released: acks.contains(&w[1].pkt.sent_at.ps()),
        })
        .collect()
}

/// Every gap at the NIC (the path is idle: the same at the receiver) is at
/// least `want` less 1 %; every gap not `want` within 1 % is one where an
/// ACK released the packet (the flow waited for its window, and pacing did
/// not bind); and at least `share` of the gaps are paced ones.
fn assert_paced(g: &[Gap], want: f64, share: f64, phase: &str) {
    assert!(g.len() > 100, "{phase}: only {} gaps", g.len());
    let mut paced = 0;
    for x in g {
        assert_eq!(x.arrival, x.handed, "{phase}: the path added jitter");
        assert!(
            x.handed >= 0.99 * want,
            "{phase}: a gap of {} ps, faster than the pacing rate ({want:.0} ps)",
            x.handed
        );
        if (x.handed / want - 1.0).abs() < 0.01 {
            paced += 1;
        } else {
            assert!(
                x.ack_released,
                "{phase}: gap {} ps vs {want:.0} ps ({:.2} %) not explained by the window",
                x.handed,
                (x.handed / want - 1.0) * 100.0
            );
        }
    }
    assert!(
        paced as f64 >= share * g.len() as f64,
        "{phase}: {paced} of {} gaps at the pacing rate",
        g.len()
    );
}

#[test]
fn paced_gaps_are_packet_size_over_rate_in_slow_start_and_after() {
    let lose = || {
        lose_first(
            1,
            |h| matches!(h, Header::TcpData { seq } if *seq == LOST * MSS),
        )
    };
    let (out, seen) = run_tapped(&config("fq", ""), lose());
    assert!(out.flows[0].fct().is_some());
    // Slow start (ssthresh unset, cwnd < ssthresh / 2): 200 %. The first
    // window leaves before any RTT sample, unpaced; skip two windows. The
    // line-rate ACKs of that burst let pacing bind on nearly every packet.
    let ss = gaps(&seen, 2 * W..LOST - W);
    assert_paced(&ss, expected_gap(200), 0.8, "slow start");
    // After the loss: ssthresh ≈ half the window, the window regrows to W
    // within a few round trips: 120 %. Now the ACK clock keeps the wider
    // spacing of the recovery's smaller windows for part of each window
    // (pacing only ever widens gaps); the rest leave at the pacing rate.
    let ca = gaps(&seen, 800..SEGMENTS - 1);
    assert_paced(&ca, expected_gap(120), 0.2, "after");
    // At most one pacing event per packet handed to the NIC.
    let delays = counter(&out, "pacing_delays");
    assert!(delays > 0 && delays <= out.counters.sent[0], "{delays}");

    // Settable ratios: 150 % and 110 % (paced below the 10 Gbit/s NIC).
    let extra = "pacing_ss_ratio = 150\npacing_ca_ratio = 110";
    let (_, seen) = run_tapped(&config("fq", extra), lose());
    assert_paced(
        &gaps(&seen, 2 * W..LOST - W),
        expected_gap(150),
        0.8,
        "ss 150 %",
    );
    assert_paced(
        &gaps(&seen, 800..SEGMENTS - 1),
        expected_gap(110),
        0.2,
        "ca 110 %",
    );

    // Unpaced, the same flow's packets leave back to back at line rate:
    // the check above would fail.
    let (_, seen) = run_tapped(&config("off", ""), lose());
    let line = Rate::gbps(10).tx_time(MSS + HEADER).ps() as f64;
    let g = gaps(&seen, 2 * W..LOST - W);
    assert!(g.iter().any(|x| x.handed == line && x.arrival == line));
    assert!(line < 0.99 * expected_gap(200));
}

#[test]
fn with_a_handshake_the_first_window_is_paced_too() {
    // The SYN-ACK gives the first RTT sample (a 40-byte round trip), so
    // the first data packets leave at 200 % of IW / that RTT, not at line
    // rate.
    let (out, seen) = run_tapped(&config("fq", "handshake = true"), keep_all());
    assert!(out.flows[0].fct().is_some());
    let rate = Rate::gbps(10);
    let ctrl_rtt: u64 = [1u64, 10, 1]
        .iter()
        .map(|&d| 2 * (Duration::from_us(d).ps() + rate.tx_time(HEADER).ps()))
        .sum();
    let want = (MSS + HEADER) as f64 * ctrl_rtt as f64 * 100.0 / (200 * W * MSS) as f64;
    let first = gaps(&seen, 0..W - 1);
    assert_eq!(first.len() as u64, W - 1);
    for x in &first {
        let err = (x.handed / want - 1.0).abs();
        assert!(err < 0.01, "gap {} ps vs {want:.0} ps", x.handed);
        assert_eq!(x.arrival, x.handed);
    }
}

#[test]
fn pacing_off_lists_no_pacing_counter_and_changes_nothing() {
    let (a, _) = run_tapped(&config("off", ""), keep_all());
    let plain = config("off", "").replace("pacing = \"off\"\n", "");
    let (b, _) = run_tapped(&plain, keep_all());
    assert!(!a.protocol_counters.contains_key("pacing_delays"));
    assert_eq!(a.flows[0].fct(), b.flows[0].fct());
    assert_eq!(a.counters.sent, b.counters.sent);
}

/// The error of a config, as the user sees it.
fn config_error(transport: &str) -> String {
    let toml = format!(
        "{}[transport]\nprotocol = \"cubic\"\n{transport}\n{}",
        dumbbell(1),
        pairs("[[0, 1]]", 1000)
    );
    let prepared = Config::from_toml_str(&toml, "<test>")
        .and_then(|c| c.prepare(Path::new(env!("CARGO_MANIFEST_DIR"))).map(|_| ()));
    match prepared {
        Ok(()) => panic!("accepted: {transport}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_pacing_and_handshake_settings_are_clear_errors() {
    for (setting, says) in [
        ("pacing = \"fast\"", "pacing"),
        (
            "pacing = \"fq\"\npacing_ss_ratio = -200",
            "transport.pacing_ss_ratio",
        ),
        (
            "pacing = \"fq\"\npacing_ca_ratio = 0",
            "transport.pacing_ca_ratio",
        ),
        ("pacing_ca_ratio = -1", "transport.pacing_ca_ratio"),
        ("pacing = \"fq\"\npacing_ss_ratio = 1.5", "pacing_ss_ratio"),
        (
            "handshake = true\nsyn_fallback_rto = \"0s\"",
            "syn_fallback_rto",
        ),
        (
            "handshake = true\nsyn_fallback_rto = \"soon\"",
            "syn_fallback_rto",
        ),
        ("handshake = \"yes\"", "handshake"),
    ] {
        let e = config_error(setting);
        assert!(e.contains(says), "{setting}: {e}");
    }
    let e = config_error("pacing = \"fq\"\npacing_ss_ratio = -200");
    assert!(e.contains("-200") && e.contains("percentage"), "{e}");
}
