//! The TCP three-way handshake (`handshake = true`) end to end on an idle
//! dumbbell: it costs exactly one control-packet round trip; a lost SYN or
//! SYN-ACK costs exactly the initial RTO; after a SYN retransmission the
//! data RTO starts at RFC 6298 §5.7's fallback; ECN is negotiated as RFC
//! 3168 §6.1.1 says; every variant works.

use crate::common::{dumbbell, pairs};
use crate::tcp_tap::{counter, is_ctrl, keep_all, lose_first, run_tapped, LoseFn, SYN, SYNACK};
use pktsim::metrics::RunOutput;
use pktsim::packet::{flags, Header, PacketKind};
use pktsim::time::{Duration, Rate};

/// Link delays of the dumbbell's path, host to host (10 Gbit/s each).
const DELAYS_US: [u64; 3] = [1, 10, 1];
const HEADER: u64 = 40;

/// One flow of `size` bytes from host 0 to host 1 on an idle dumbbell;
/// `extra` is added to `[transport]`.
fn config(protocol: &str, size: u64, extra: &str) -> String {
    format!(
        r#"{}
[network]
switch_queue = {{ kind = "ecn", k_packets = 20 }}
[transport]
protocol = "{protocol}"
{extra}
{}"#,
        dumbbell(1),
        pairs("[[0, 1]]", size)
    )
}

fn fct(out: &RunOutput) -> Duration {
    out.flows[0].fct().expect("the flow finished")
}

/// Round trip of a header-sized packet over the idle store-and-forward
/// path: each way, every link's delay plus the 40-byte serialization.
fn control_rtt() -> Duration {
    let rate = Rate::gbps(10);
    let one_way: u64 = DELAYS_US
        .iter()
        .map(|&d| Duration::from_us(d).ps() + rate.tx_time(HEADER).ps())
        .sum();
    Duration::from_ps(2 * one_way)
}

fn run(protocol: &str, size: u64, extra: &str, lose: LoseFn) -> RunOutput {
    run_tapped(&config(protocol, size, extra), lose).0
}

#[test]
fn a_handshake_on_an_idle_path_adds_exactly_one_round_trip_for_every_variant() {
    for protocol in ["tcp", "dctcp", "cubic"] {
        for size in [1_000u64, 1_000_000] {
            let off = run(protocol, size, "", keep_all());
            let on = run(protocol, size, "handshake = true", keep_all());
            assert_eq!(
                fct(&on) - fct(&off),
                control_rtt(),
                "{protocol}, {size} B: FCT {:?} with, {:?} without",
                fct(&on),
                fct(&off)
            );
            // Counted apart from data and ACKs; no retransmission.
            assert_eq!(counter(&on, "syn_sent"), 1);
            assert_eq!(counter(&on, "synack_sent"), 1);
            assert_eq!(counter(&on, "syn_retransmits"), 0);
            assert_eq!(counter(&on, "synack_retransmits"), 0);
            assert!(!off.protocol_counters.contains_key("syn_sent"));
            // Two more control packets on the wire, the same data.
            assert_eq!(on.counters.sent[1], off.counters.sent[1] + 2);
            assert_eq!(on.counters.sent[0], off.counters.sent[0]);
        }
    }
}

#[test]
fn a_lost_syn_costs_exactly_the_initial_rto() {
    for (protocol, rto_us) in [("tcp", 1000u64), ("cubic", 1000), ("dctcp", 300)] {
        let extra = format!("handshake = true\ninitial_rto = \"{rto_us}us\"");
        let clean = run(protocol, 100_000, &extra, keep_all());
        let lost = run(protocol, 100_000, &extra, lose_first(1, is_ctrl(SYN)));
        assert_eq!(
            fct(&lost) - fct(&clean),
            Duration::from_us(rto_us),
            "{protocol}"
        );
        assert_eq!(counter(&lost, "syn_sent"), 2);
        assert_eq!(counter(&lost, "syn_retransmits"), 1);
        assert_eq!(counter(&lost, "synack_sent"), 1);
    }
}

#[test]
fn a_second_lost_syn_costs_twice_the_initial_rto_more() {
    let extra = "handshake = true";
    let one = run("tcp", 10_000, extra, lose_first(1, is_ctrl(SYN)));
    let two = run("tcp", 10_000, extra, lose_first(2, is_ctrl(SYN)));
    // RFC 6298 §5.5: the second SYN waits 2 × the initial 1 ms.
    assert_eq!(fct(&two) - fct(&one), Duration::from_ms(2));
    assert_eq!(counter(&two, "syn_retransmits"), 2);
}

#[test]
fn a_lost_synack_costs_exactly_the_initial_rto() {
    for protocol in ["tcp", "dctcp", "cubic"] {
        let clean = run(protocol, 100_000, "handshake = true", keep_all());
        let lost = run(
            protocol,
            100_000,
            "handshake = true",
            lose_first(1, is_ctrl(SYNACK)),
        );
        assert_eq!(fct(&lost) - fct(&clean), Duration::from_ms(1), "{protocol}");
        // The source's SYN timer and the destination's SYN-ACK timer
        // expire one one-way delay apart, so the resent SYN reaches the
        // destination as its timer fires: one SYN-ACK answers both.
        assert_eq!(counter(&lost, "syn_retransmits"), 1);
        assert_eq!(counter(&lost, "synack_sent"), 2);
        assert_eq!(counter(&lost, "synack_retransmits"), 1);
    }
}

#[test]
fn a_lost_synack_is_resent_by_the_destination_timer() {
    // The first SYN-ACK and the resent SYN are both lost: only the
    // destination's SYN-ACK timer repairs the handshake, one initial RTO
    // after the first SYN-ACK left, with a SYN-ACK marked as resent.
    let lose_syn2_and_synack1: LoseFn = {
        let mut syn_seen = 0;
        let mut synack_seen = 0;
        Box::new(move |p| match p.header {
            Header::Ctrl { kind: SYN, .. } => {
                syn_seen += 1;
                syn_seen == 2
            }
            Header::Ctrl { kind: SYNACK, .. } => {
                synack_seen += 1;
                synack_seen == 1
            }
            _ => false,
        })
    };
    let clean = run("tcp", 10_000, "handshake = true", keep_all());
    let (out, seen) = run_tapped(
        &config("tcp", 10_000, "handshake = true"),
        lose_syn2_and_synack1,
    );
    // The first SYN-ACK left one one-way delay after the start and its
    // copy 1 ms later: the data starts 1 ms later than without losses.
    assert_eq!(fct(&out) - fct(&clean), Duration::from_ms(1));
    let synacks: Vec<_> = seen
        .iter()
        .filter(|s| is_ctrl(SYNACK)(&s.pkt.header))
        .collect();
    assert_eq!(synacks.len(), 2);
    assert!(synacks[1].pkt.has(flags::RETX));
    assert_eq!(counter(&out, "synack_retransmits"), 1);
}

#[test]
fn after_a_syn_retransmission_the_data_rto_starts_at_the_fallback() {
    // One-packet flows whose SYN and first data packet are both lost: the
    // data waits the RTO of RFC 6298 §5.7 (max(initial RTO, fallback),
    // clamped to max_rto); with the SYN kept, the handshake's RTT sample
    // gives the RTO (min_rto here).
    let syn_and_data = || -> LoseFn {
        let mut syn = lose_first(1, is_ctrl(SYN));
        let mut data = lose_first(1, |h| matches!(h, Header::TcpData { .. }));
        Box::new(move |p| syn(p) || data(p))
    };
    let syn_only = || lose_first(1, is_ctrl(SYN));
    let data_only = || lose_first(1, |h| matches!(h, Header::TcpData { .. }));
    for (extra, want) in [
        ("max_rto = \"5s\"", Duration::from_ms(3000)),
        (
            "max_rto = \"5s\"\nsyn_fallback_rto = \"2s\"",
            Duration::from_ms(2000),
        ),
        // Clamped to max_rto, as every RTO.
        ("max_rto = \"1s\"", Duration::from_ms(1000)),
        // An initial RTO above the fallback is kept.
        (
            "max_rto = \"5s\"\ninitial_rto = \"4s\"\nsyn_fallback_rto = \"2s\"",
            Duration::from_ms(4000),
        ),
    ] {
        let extra = format!("handshake = true\n{extra}");
        let base = run("tcp", 1_000, &extra, syn_only());
        let both = run("tcp", 1_000, &extra, syn_and_data());
        assert_eq!(fct(&both) - fct(&base), want, "{extra}");
    }
    // Without a SYN loss the handshake sampled the RTT: RTO = min_rto.
    let extra = "handshake = true\nmax_rto = \"5s\"";
    let base = run("tcp", 1_000, extra, keep_all());
    let lost = run("tcp", 1_000, extra, data_only());
    assert_eq!(fct(&lost) - fct(&base), Duration::from_us(200));
}

#[test]
fn ecn_is_negotiated_on_syn_and_synack_and_data_stays_ect() {
    for (protocol, ecn) in [("dctcp", true), ("tcp", false)] {
        let (_, seen) = run_tapped(&config(protocol, 100_000, "handshake = true"), keep_all());
        let syn = seen
            .iter()
            .find(|s| is_ctrl(SYN)(&s.pkt.header))
            .expect("a SYN");
        let synack = seen
            .iter()
            .find(|s| is_ctrl(SYNACK)(&s.pkt.header))
            .expect("a SYN-ACK");
        // RFC 3168 §6.1.1: ECN-setup SYN = ECE + CWR, SYN-ACK = ECE; never ECT.
        assert_eq!(syn.pkt.has(flags::ECE | flags::CWR), ecn, "{protocol}");
        assert_eq!(synack.pkt.has(flags::ECE), ecn, "{protocol}");
        assert!(!synack.pkt.has(flags::CWR));
        for s in [syn, synack] {
            assert!(!s.pkt.has(flags::ECT));
            assert_eq!(s.pkt.kind, PacketKind::Control);
            assert_eq!(s.pkt.size as u64, HEADER);
        }
        // Data after it: ECT exactly when the controller uses ECN.
        let data: Vec<_> = seen
            .iter()
            .filter(|s| matches!(s.pkt.header, Header::TcpData { .. }))
            .collect();
        assert!(!data.is_empty());
        assert!(data.iter().all(|s| s.pkt.has(flags::ECT) == ecn));
        // The first data arrives after the SYN-ACK reached the source.
        assert!(data[0].at > synack.at);
    }
}

#[test]
fn paced_handshaking_incasts_finish_for_every_variant() {
    // 16 senders into one port of a 100 KB buffer: SYN-ACKs, data and
    // ACKs compete and some are dropped; every flow still finishes, every
    // handshake completes once, and pacing arms at most one release event
    // per data packet sent.
    for protocol in ["tcp", "dctcp", "cubic"] {
        let toml = format!(
            r#"
[topology]
kind = "star"
hosts = 17
host_rate = "10Gbps"
link_delay = "1us"
bottleneck_buffer_bytes = 100000
[network]
switch_queue = {{ kind = "ecn", k_packets = 20 }}
[transport]
protocol = "{protocol}"
handshake = true
pacing = "fq"
[[workload]]
kind = "incast"
senders = 16
size = 200000
receiver = 16
queries = 3
interval = "1ms"
"#
        );
        let (out, seen) = run_tapped(&toml, keep_all());
        assert!(out.flows.iter().all(|f| f.fct().is_some()), "{protocol}");
        let n = out.flows.len() as u64;
        assert_eq!(n, 48);
        assert_eq!(
            counter(&out, "syn_sent") - counter(&out, "syn_retransmits"),
            n
        );
        assert_eq!(
            counter(&out, "synack_sent") - counter(&out, "synack_retransmits"),
            n
        );
        let synacks = seen
            .iter()
            .filter(|s| is_ctrl(SYNACK)(&s.pkt.header))
            .count() as u64;
        assert!(synacks >= n && synacks <= counter(&out, "synack_sent"));
        let delays = counter(&out, "pacing_delays");
        assert!(
            delays > 0 && delays <= out.counters.sent[0],
            "{protocol}: {delays}"
        );
    }
}
