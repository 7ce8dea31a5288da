//! Per-flow time series of the designs beyond TCP (issue 31 item 1): each
//! design's state, read through `flow_state`, checked against what its
//! state machine must do: pHost's token clock and downgrade window,
//! pFabric's window bounds and timeout, Fastpass' demand served one slot
//! at a time, ExpressPass' credit rate, FlashPass' T_wait, Aeolus' phases.

use crate::common::{assert_all_finished, pairs, prepare, run, star};
use crate::credit::n_to_1;
use pktsim::metrics::RunOutput;
use pktsim::time::Duration;

/// `variable`'s rows of flow `f` read at `host`, as (time in ps, value).
fn series(out: &RunOutput, f: u32, host: u32, variable: &str) -> Vec<(u64, f64)> {
    out.timeseries
        .iter()
        .filter(|r| r.flow.0 == f && r.host.0 == host && r.variable == variable)
        .map(|r| (r.time.ps(), r.value))
        .collect()
}

/// The values alone.
fn values(s: &[(u64, f64)]) -> Vec<f64> {
    s.iter().map(|&(_, v)| v).collect()
}

/// The largest value (0 for none).
fn max(s: &[(u64, f64)]) -> f64 {
    s.iter().map(|&(_, v)| v).fold(0.0, f64::max)
}

/// Picoseconds to send `bytes` at 10 Gbit/s.
fn tx_10g(bytes: u64) -> u64 {
    bytes * 800
}

/// One flow of `size` bytes from host 0 to host 1 over a star of
/// `link_delay` links, with the `switch_queue` and the `[transport]` and
/// `[output.timeseries]` lines given, run to its end. Returns the run, a
/// full packet's time at 10 Gbit/s and the flow's packets.
fn star_one_flow(
    link_delay: &str,
    switch_queue: &str,
    transport: &str,
    series: &str,
    size: u64,
) -> (RunOutput, u64, f64) {
    let toml = format!(
        "{}[network]\nswitch_queue = {switch_queue}\n[transport]\n{transport}\n{}\n\
         [output.timeseries]\n{series}\n",
        star(2, link_delay),
        pairs("[[0, 1]]", size)
    );
    let exp = prepare(&toml);
    let t_pkt = tx_10g((exp.format.mss + exp.format.header) as u64);
    let n = size.div_ceil(exp.format.mss as u64) as f64;
    let out = run(&toml);
    assert_all_finished(&out);
    (out, t_pkt, n)
}

/// One pHost flow from host 0 to host 1 over a star of 1 us links;
/// `transport` adds pHost settings. Returns the run, the packet time and
/// the flow's packets.
fn phost_one_flow(transport: &str, size: u64) -> (RunOutput, u64, f64) {
    let transport = format!("protocol = \"phost\"\n{transport}");
    star_one_flow("1us", "{ kind = \"pfabric\" }", &transport, "", size)
}

/// When each token was granted: the times `tokens_granted` rose.
fn grants(out: &RunOutput) -> Vec<u64> {
    series(out, 0, 1, "tokens_granted")
        .windows(2)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| w[1].0)
        .collect()
}

#[test]
fn phost_grants_one_token_per_packet_time_and_holds_its_window() {
    let (out, t_pkt, n) = phost_one_flow("", 1_000_000);
    // The receiver grants every packet one token (no loss, no re-issue),
    // the first on the RTS, one per packet time after it: the token clock
    // paces one flow at line rate.
    let granted = series(&out, 0, 1, "tokens_granted");
    assert_eq!(granted[0].1, 1.0, "the first token on the RTS");
    assert_eq!(max(&granted), n, "one token per packet");
    let g = grants(&out);
    assert_eq!(g.len() as f64, n - 1.0);
    for w in g.windows(2) {
        assert_eq!(w[1] - w[0], t_pkt, "tokens {} ps apart", w[1] - w[0]);
    }
    // The tokens not yet echoed by data cover one round trip (a few
    // packet times here): below the 8-token window, so never downgraded.
    let outstanding = series(&out, 0, 1, "tokens_outstanding");
    let most = max(&outstanding);
    assert!((2.0..8.0).contains(&most), "{most} tokens outstanding");
    assert_eq!(max(&series(&out, 0, 1, "downgraded")), 0.0);
    assert_eq!(values(&series(&out, 0, 1, "token_budget")), [n]);
    // The sender uses every token at once: none expires, it never holds
    // more than a couple, and it holds no free token (a long flow gets
    // none by default).
    assert_eq!(max(&series(&out, 0, 0, "tokens_expired")), 0.0);
    assert!(max(&series(&out, 0, 0, "tokens_held")) <= 2.0);
    assert_eq!(max(&series(&out, 0, 0, "free_tokens_held")), 0.0);
    assert_eq!(max(&series(&out, 0, 0, "tokens_received")), n);
}

#[test]
fn phost_with_a_two_token_window_downgrades_and_waits_the_window_timeout() {
    let (out, t_pkt, _) = phost_one_flow("window = 2", 200_000);
    // A round trip is several packet times, so two tokens are soon
    // outstanding: the flow is downgraded, never passes the window, and
    // waits 15 packet times (window_timeout) after its last token.
    let outstanding = series(&out, 0, 1, "tokens_outstanding");
    assert_eq!(max(&outstanding), 2.0, "the window of 2 holds");
    let down = series(&out, 0, 1, "downgraded");
    assert!(down.iter().any(|&(_, d)| d == 1.0), "never downgraded");
    let g = grants(&out);
    let gaps: Vec<u64> = g.windows(2).map(|w| w[1] - w[0]).collect();
    let timeout = 15 * t_pkt;
    assert!(gaps.contains(&timeout), "no 15-packet-time wait: {gaps:?}");
    assert!(gaps.iter().all(|&d| d == t_pkt || d == timeout), "{gaps:?}");
}

#[test]
fn pfabric_window_stays_within_its_bounds_and_a_timeout_restarts_it_at_one() {
    // A lone flow: slow start from the initial 12 packets, one more per
    // ACK, up to the largest window (23), never beyond.
    let toml = |workload: &str, buffer: u64| {
        format!(
            "{}[network]\nswitch_queue = {{ kind = \"pfabric\" }}\nswitch_buffer_bytes = {buffer}\n\
             [transport]\nprotocol = \"pfabric\"\n{workload}\n[output.timeseries]\n",
            star(13, "1us"),
        )
    };
    let out = run(&toml(&pairs("[[0, 1]]", 1_000_000), 1_000_000));
    let cwnd = series(&out, 0, 0, "cwnd_packets");
    assert_eq!(cwnd[0].1, 12.0);
    assert_eq!(max(&cwnd), 23.0);
    assert!(
        cwnd.windows(2).all(|w| w[1].1 == w[0].1 + 1.0),
        "+1 per ACK"
    );
    assert!(series(&out, 0, 0, "ssthresh_packets").is_empty());
    // An incast into a 6-packet buffer: losses, and only the fixed RTO
    // recovers them. Each timeout sets ssthresh to half the window (at
    // least 2) and restarts the window at one packet.
    let out = run(&toml(&crate::common::incast(12, 12, 30_000), 9_000));
    assert_all_finished(&out);
    let mut timeouts = 0;
    for f in 0..12 {
        let cwnd = series(&out, f, f, "cwnd_packets");
        assert!(cwnd.iter().all(|&(_, c)| (1.0..=23.0).contains(&c)));
        for w in series(&out, f, f, "timeouts").windows(2) {
            let (t, k) = w[1];
            if k <= w[0].1 {
                continue;
            }
            timeouts += 1;
            let at = |v: &str, t: u64| {
                series(&out, f, f, v)
                    .into_iter()
                    .rfind(|&(x, _)| x <= t)
                    .map(|(_, v)| v)
            };
            let before = at("cwnd_packets", t - 1).expect("a window before");
            assert_eq!(at("cwnd_packets", t), Some(1.0), "flow {f} at {t}");
            assert_eq!(
                at("ssthresh_packets", t),
                Some((before / 2.0).floor().max(2.0)),
                "flow {f} at {t}"
            );
        }
    }
    assert!(timeouts > 0, "no timeout seen");
    // The receiver reports what it holds beyond the cumulative ACK.
    let held: f64 = (0..12)
        .map(|f| max(&series(&out, f, 12, "bytes_out_of_order")))
        .sum();
    assert!(held > 0.0, "no out-of-order data after the drops");
}

#[test]
fn fastpass_serves_a_flows_demand_one_timeslot_at_a_time() {
    let size = 100_000u64;
    let priority = "{ kind = \"priority\", classes = 2 }";
    let one_flow = |t: &str| star_one_flow("0.2us", priority, t, "flows = [0]", size);
    let (out, slot, n) = one_flow("protocol = \"fastpass\"");
    // The demand starts at the flow's packets and falls by one per
    // timeslot used, each at a slot's start (k x timeslot), to 0 before
    // the flow completes; demand + slots used = packets throughout.
    let demand = series(&out, 0, 0, "demand_packets");
    assert_eq!(demand[0].1, n);
    assert_eq!(demand.last().map(|d| d.1), Some(0.0));
    for w in demand.windows(2) {
        assert_eq!(w[1].1, w[0].1 - 1.0);
        assert_eq!(w[1].0 % slot, 0, "a packet off the slot clock");
    }
    let used = series(&out, 0, 0, "slots_used");
    for &(t, d) in &demand[1..] {
        let u = used.iter().rfind(|&&(x, _)| x <= t).map(|u| u.1);
        assert_eq!(u, Some(n - d), "at {t}");
    }
    // The arbiter granted exactly the flow's packets, and nothing is
    // reported once the last is acknowledged.
    assert_eq!(max(&series(&out, 0, 0, "dest_granted_slots")), n);
    assert_eq!(max(&series(&out, 0, 0, "dest_demand_slots")), n);
    let finish = out.flows[0].finish.expect("finished").ps();
    let last = out.timeseries.iter().map(|r| r.time.ps()).max().unwrap();
    assert!(last <= finish + Duration::from_us(10).ps());
    // The pHost paper's epoch model: the same demand, falling to 0.
    let (out, _, _) = one_flow("protocol = \"fastpass\"\nmodel = \"phost_epoch\"");
    let demand = series(&out, 0, 0, "demand_packets");
    assert_eq!(demand[0].1, n);
    assert_eq!(demand.last().map(|d| d.1), Some(0.0));
    assert!(demand.windows(2).all(|w| w[1].1 < w[0].1));
}

/// One credit-transport flow from h0 to h1, 5 us links at 10 Gbit/s.
fn credit_one_flow(transport: &str, size: u64) -> RunOutput {
    let toml = format!(
        "{}[transport]\n{transport}\n{}\n[output.timeseries]\n",
        n_to_1(10, &["5us"], "5us"),
        pairs("[[0, 1]]", size)
    );
    let out = run(&toml);
    assert_all_finished(&out);
    out
}

#[test]
fn expresspass_credit_rate_climbs_to_the_links_credit_rate() {
    let out = credit_one_flow("protocol = \"expresspass\"", 20_000_000);
    // The largest credit rate is the credit share of the 10 Gbit/s link,
    // 84/(84+1538); a flow starts at alpha = 1/2 of it and, with no credit
    // lost, climbs to it within a few RTTs.
    let max_rate = 10.0 * 84.0 / (84.0 + 1538.0);
    let top = values(&series(&out, 0, 1, "credit_rate_max_gbps"));
    assert_eq!(top.len(), 1, "{top:?}");
    assert!((top[0] - max_rate).abs() < 1e-9, "{top:?}");
    let max_rate = top[0];
    let rate = series(&out, 0, 1, "credit_rate_gbps");
    assert!((rate[0].1 - 0.5 * max_rate).abs() < 1e-12, "{}", rate[0].1);
    assert!(rate.iter().all(|&(_, r)| r <= max_rate));
    let near = rate
        .iter()
        .find(|&&(_, r)| r > 0.99 * max_rate)
        .expect("the rate reaches the link's credit rate");
    assert!(
        near.0 < Duration::from_us(500).ps(),
        "only at {} ps",
        near.0
    );
    // And stays there, on average, for the rest of the flow.
    let later: Vec<f64> = rate
        .iter()
        .filter(|&&(t, _)| t > near.0)
        .map(|&(_, r)| r)
        .collect();
    let mean = later.iter().sum::<f64>() / later.len().max(1) as f64;
    assert!(mean > 0.9 * max_rate, "mean {mean} of {max_rate}");
}

#[test]
fn flashpass_waits_t_wait_derived_from_the_largest_rtt_or_as_configured() {
    // Two senders, 5 us and 50 us from the switch, 5 us from it to the
    // receiver: base RTTs 20 and 110 us; T_wait = the largest + 1 ms.
    let toml = |extra: &str| {
        format!(
            "{}[transport]\nprotocol = \"flashpass\"\n{extra}\n{}\n[output.timeseries]\ninterval = \"100us\"\n",
            n_to_1(10, &["5us", "50us"], "5us"),
            pairs("[[0, 2], [1, 2]]", 2_000_000)
        )
    };
    let out = run(&toml(""));
    assert_all_finished(&out);
    for f in 0..2 {
        let t_wait = values(&series(&out, f, f, "t_wait_us"));
        assert!(!t_wait.is_empty());
        assert!(t_wait.iter().all(|&t| t == 1110.0), "flow {f}: {t_wait:?}");
        // Credits arrive one RTT after their emulation packet, the data
        // leave T_wait after it: credited data wait in between.
        assert!(max(&series(&out, f, f, "credited_packets")) > 0.0);
        let rate = series(&out, f, f, "emulation_rate_gbps");
        let top = max(&series(&out, f, f, "emulation_rate_max_gbps"));
        assert!(rate.iter().all(|&(_, r)| r <= top));
    }
    let out = run(&toml("t_wait = \"3ms\""));
    let t_wait = values(&series(&out, 1, 1, "t_wait_us"));
    assert!(t_wait.iter().all(|&t| t == 3000.0), "{t_wait:?}");
}

#[test]
fn aeolus_sends_unscheduled_at_line_rate_until_the_first_credit() {
    // ExpressPass* over a 20 us base RTT at 10 Gbit/s: at most one BDP
    // (25 000 bytes, 18 packets of 1460) goes unscheduled, one packet per
    // transmission time, until the first credit comes (one RTT and a few
    // control packets' transmissions in). The phase then only moves on
    // (0: unscheduled, 1: resolving them, 2: credits only).
    let out = credit_one_flow("protocol = \"expresspass\"\naeolus = true", 1_000_000);
    let phase = series(&out, 0, 0, "aeolus_phase");
    assert_eq!(values(&phase), [0.0, 1.0, 2.0]);
    let end = phase[1].0;
    assert!(end >= Duration::from_us(20).ps(), "a credit before one RTT");
    let t_tx = tx_10g(1460 + 78);
    let sent = max(&series(&out, 0, 0, "unscheduled_sent_packets"));
    assert!(sent <= 18.0);
    assert_eq!(sent, end.div_ceil(t_tx) as f64, "line rate until {end} ps");
    assert_eq!(max(&series(&out, 0, 0, "unscheduled_lost_packets")), 0.0);
}

#[test]
fn each_designs_series_is_the_same_on_any_thread_count() {
    use crate::partitioned::{ring, run_on, same};
    // Each host reports only its own state, so a run cut into groups on
    // threads records the serial run's rows: after every change for some
    // flows, at an interval for others.
    for (name, network, transport) in [
        ("phost", "", "protocol = \"phost\""),
        (
            "expresspass*",
            "host_queue = { kind = \"credit_port\" }",
            "protocol = \"expresspass\"\naeolus = true",
        ),
        (
            "flashpass",
            "host_queue = { kind = \"credit_port\" }",
            "protocol = \"flashpass\"",
        ),
        ("fastpass", "", "protocol = \"fastpass\""),
    ] {
        for series in ["sample = 6", "sample = 20\ninterval = \"10us\""] {
            let mut toml = ring(network, &format!("[output.timeseries]\n{series}"))
                .replace("protocol = \"dctcp\"", transport);
            toml = match name {
                "phost" => toml.replace(
                    "switch_queue = { kind = \"ecn\", k_packets = 20 }",
                    "switch_queue = { kind = \"pfabric\" }",
                ),
                "fastpass" => toml.replace(
                    "switch_queue = { kind = \"ecn\", k_packets = 20 }",
                    "switch_queue = { kind = \"priority\", classes = 2 }",
                ),
                _ => toml
                    .replace(
                        "switch_queue = { kind = \"ecn\", k_packets = 20 }",
                        "switch_queue = { kind = \"credit_port\" }",
                    )
                    .replace(
                        "load_balancing = \"spray\"",
                        "load_balancing = \"symmetric_ecmp\"",
                    ),
            };
            // 60 flows keep it short; Fastpass, whose arbiter here is one
            // of the ring's hosts, for its first millisecond.
            let mut toml = toml.replace("flows = 200", "flows = 60");
            if name == "fastpass" {
                toml = toml.replace("[output]\n", "[run]\ntime_limit = \"1ms\"\n[output]\n");
            }
            let (serial, _) = run_on(&toml, 1);
            assert!(
                serial.timeseries.len() > 20,
                "{name}: {series}: {} rows",
                serial.timeseries.len()
            );
            let (split, did) = run_on(&toml, 3);
            assert!(did, "{name}: the run did not split");
            same(&serial, &split, &format!("{name}, {series}"));
        }
    }
}
