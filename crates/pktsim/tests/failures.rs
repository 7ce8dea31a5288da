//! Scheduled failures and changes (`[[event]]`, issue 32): a failed link
//! loses exactly what was queued for it and on its wire; routing avoids it
//! from the moment it learns of the failure and not before; a lossy link
//! loses its share of packets, the same ones on a rerun; flaps happen at
//! their exact times; a flow whose only path fails finishes after the
//! recovery; and a partitioned run gives the serial run's results.

use crate::common::{assert_all_finished, assert_conserved, pairs, prepare, run, LeafSpine};
use crate::partitioned::{ring, run_on, same};
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::net::trace::{TraceEvent, TraceRow};
use pktsim::packet::{NodeId, PortId};
use pktsim::{Duration, Time};

const US: u64 = 1_000_000;

/// Two spines, two leaves of four hosts (h0..h7; leaf0 = 8, leaf1 = 9,
/// spine0 = 10, spine1 = 11); h0..h3 each send `size` bytes to h4..h7 at
/// time 0 with DCTCP, every packet traced; `network` joins `[network]`,
/// `events` ends the file.
fn leaf_spine_run(size: u64, network: &str, events: &str) -> String {
    format!(
        "{}[network]\nswitch_queue = {{ kind = \"ecn\", k_packets = 20 }}\n{network}\n\
         [transport]\nprotocol = \"dctcp\"\nmin_rto = \"1ms\"\ninitial_rto = \"1ms\"\n\
         {}[run]\ntime_limit = \"1s\"\n[output.trace]\nmax_rows = 100000000\n{events}",
        LeafSpine::TEN_G.toml(),
        pairs("[[0, 4], [1, 5], [2, 6], [3, 7]]", size),
    )
}

fn rows(out: &RunOutput) -> &[TraceRow] {
    let (rows, truncated) = out.trace.as_ref().expect("a trace");
    assert!(!truncated, "the trace was cut short");
    rows
}

/// The two ports of link leaf0-spine0 (leaf0 → spine0 first).
fn leaf0_spine0(toml: &str) -> [PortId; 2] {
    let exp = prepare(toml);
    let net = &exp.net;
    let find = |a: u32, b: u32| -> PortId {
        let node = &net.nodes()[a as usize];
        *node
            .ports
            .iter()
            .find(|p| net.port(**p).peer == NodeId(b))
            .expect("a link")
    };
    [find(8, 10), find(10, 8)]
}

fn link_down_drops(out: &RunOutput) -> u64 {
    let r = DropReason::LinkDown as usize;
    out.counters.dropped[0][r] + out.counters.dropped[1][r]
}

/// Packets on port `p`'s link (queued for it or on its wire) at `t`, after
/// the instant's packet events: admitted before or at `t`, not yet arrived.
fn on_link_at(rows: &[TraceRow], p: PortId, t: Time) -> i64 {
    let mut n = 0i64;
    for r in rows.iter().filter(|r| r.port == Some(p) && r.time <= t) {
        match r.event {
            TraceEvent::Enqueue => n += 1,
            TraceEvent::Arrive | TraceEvent::Deliver => n -= 1,
            _ => {}
        }
    }
    n
}

/// Drops for a dead link at the sending side of port `p` after `after`:
/// packets the switch routed onto the link while it was down.
fn routed_onto_dead_link(rows: &[TraceRow], p: PortId, owner: u32, after: Time) -> Vec<Time> {
    rows.iter()
        .filter(|r| {
            r.event == TraceEvent::Drop
                && r.reason == Some(DropReason::LinkDown)
                && r.port == Some(p)
                && r.node == NodeId(owner)
                && r.time > after
        })
        .map(|r| r.time)
        .collect()
}

const DOWN_AT_200US: &str =
    "[[event]]\nat = \"200us\"\naction = \"down\"\nlink = [\"leaf0\", \"spine0\"]\n";

#[test]
fn a_failed_link_drops_exactly_what_it_held_and_routing_then_avoids_it() {
    let toml = leaf_spine_run(2_000_000, "", DOWN_AT_200US);
    let [fwd, rev] = leaf0_spine0(&toml);
    let out = run(&toml);
    assert_all_finished(&out);
    let rows = rows(&out);
    let t = Time::ZERO + Duration::from_us(200);
    let held = on_link_at(rows, fwd, t) + on_link_at(rows, rev, t);
    assert!(
        held > 0,
        "nothing on the link at the failure: a test that cannot fail"
    );
    // Routing learns at once: nothing more goes to the link, so what it
    // loses is exactly what it held.
    assert_eq!(link_down_drops(&out), held as u64);
    assert!(routed_onto_dead_link(rows, fwd, 8, t).is_empty());
    assert!(routed_onto_dead_link(rows, rev, 10, t).is_empty());
    // Nothing crosses the link after the failure.
    let late = rows
        .iter()
        .filter(|r| r.time > t && matches!(r.port, Some(p) if p == fwd || p == rev))
        .filter(|r| matches!(r.event, TraceEvent::Enqueue | TraceEvent::Dequeue))
        .count();
    assert_eq!(late, 0, "packets sent on a failed link");
    // The run records the change with the counters just before it.
    assert_eq!(out.faults.len(), 1);
    assert_eq!(out.faults[0].at, t);
    assert_eq!(out.faults[0].what, "down link leaf0-spine0");
    assert_eq!(link_down_drops_in(&out.faults[0].counters_before), 0);
}

fn link_down_drops_in(c: &pktsim::metrics::Counters) -> u64 {
    let r = DropReason::LinkDown as usize;
    c.dropped[0][r] + c.dropped[1][r]
}

#[test]
fn routing_avoids_a_failed_link_only_once_it_detects_the_failure() {
    let toml = leaf_spine_run(2_000_000, "failure_detection = \"60us\"", DOWN_AT_200US);
    let [fwd, _] = leaf0_spine0(&toml);
    let out = run(&toml);
    assert_all_finished(&out);
    let t = Time::ZERO + Duration::from_us(200);
    let detected = t + Duration::from_us(60);
    let routed = routed_onto_dead_link(rows(&out), fwd, 8, t);
    assert!(
        !routed.is_empty(),
        "no packet went to the dead link before detection"
    );
    assert!(
        routed.iter().all(|&at| at <= detected),
        "a packet routed onto the failed link after detection: {:?}",
        routed
            .iter()
            .filter(|&&at| at > detected)
            .collect::<Vec<_>>()
    );
    // With `never`, the flows hashed onto the link keep losing packets.
    let never = run(&leaf_spine_run(
        300_000,
        "failure_detection = \"never\"\n",
        DOWN_AT_200US,
    ));
    let late = routed_onto_dead_link(rows(&never), fwd, 8, detected);
    assert!(!late.is_empty(), "routing reacted though told never to");
}

#[test]
fn a_lossy_link_loses_its_share_and_the_same_packets_on_a_rerun() {
    let events = "[[event]]\nat = \"0us\"\naction = \"loss\"\nloss = 0.01\n\
                  link = [\"h0\", \"leaf0\"]\none_way = true\n";
    let toml = leaf_spine_run(20_000_000, "", events).replace(
        "max_rows = 100000000",
        "max_rows = 100000000\nnodes = [\"leaf0\"]",
    ) + "[output.links]\ninterval = \"1ms\"\n";
    let nic = prepare(&toml).net.nic(NodeId(0));
    let out = run(&toml);
    assert_all_finished(&out);
    let last = out
        .link_samples
        .iter()
        .rev()
        .find(|s| s.port == nic.0)
        .expect("the NIC's link sample");
    let (sent, lost) = (last.packets, last.dropped[DropReason::LinkLoss as usize]);
    let expected = sent as f64 * 0.01;
    let sigma = (sent as f64 * 0.01 * 0.99).sqrt();
    assert!(sent > 10_000, "{sent} packets: too few to judge");
    assert!(
        (lost as f64 - expected).abs() <= 3.0 * sigma,
        "{lost} of {sent} lost, expected {expected:.0} ± {:.0}",
        3.0 * sigma
    );
    // Only that link lost packets, and only one way.
    let r = DropReason::LinkLoss as usize;
    assert_eq!(
        out.counters.dropped[0][r] + out.counters.dropped[1][r],
        lost
    );
    let lost_packets = |o: &RunOutput| -> Vec<(u32, u64)> {
        rows(o)
            .iter()
            .filter(|r| r.reason == Some(DropReason::LinkLoss))
            .map(|r| (r.pkt.flow.0, r.pkt.sent_at.ps()))
            .collect()
    };
    let first = lost_packets(&out);
    assert_eq!(first.len() as u64, lost);
    assert_eq!(
        first,
        lost_packets(&run(&toml)),
        "a rerun lost other packets"
    );
}

#[test]
fn a_flapping_link_goes_down_and_up_at_its_exact_times() {
    // Windows long against the flows' 1 ms retransmission timeout, so that
    // each window sees packets routed onto the dead link.
    let events = "[[event]]\nat = \"100us\"\naction = \"flap\"\nlink = [\"leaf0\", \"spine0\"]\n\
                  period = \"2ms\"\ndown_for = \"800us\"\ncount = 3\n";
    let toml = leaf_spine_run(6_000_000, "failure_detection = \"never\"", events);
    let [fwd, _] = leaf0_spine0(&toml);
    let out = run(&toml);
    assert_all_finished(&out);
    let marks: Vec<(u64, &str)> = out
        .faults
        .iter()
        .map(|f| (f.at.ps() / US, f.what.as_str()))
        .collect();
    assert_eq!(
        marks,
        vec![
            (100, "down link leaf0-spine0 (flap 1)"),
            (900, "up link leaf0-spine0 (flap 1)"),
            (2100, "down link leaf0-spine0 (flap 2)"),
            (2900, "up link leaf0-spine0 (flap 2)"),
            (4100, "down link leaf0-spine0 (flap 3)"),
            (4900, "up link leaf0-spine0 (flap 3)"),
        ]
    );
    // Packets routed onto the link die only while it is down, in each
    // window; between the windows the link carries traffic again.
    let windows = [(100, 900), (2100, 2900), (4100, 4900)];
    let routed = routed_onto_dead_link(rows(&out), fwd, 8, Time::ZERO);
    for at in &routed {
        let us = at.ps() as f64 / US as f64;
        assert!(
            windows
                .iter()
                .any(|&(a, b)| us >= a as f64 && us < b as f64),
            "a drop for a dead link at {us} us, outside its down times"
        );
    }
    for (a, b) in windows {
        let inside = |t: &Time| t.ps() >= a * US && t.ps() < b * US;
        assert!(routed.iter().any(inside), "no drop in [{a}, {b}) us");
    }
    // After the last recovery the link carries the flows hashed onto it
    // again (once their retransmission timers fire).
    let sent_after = rows(&out)
        .iter()
        .filter(|r| r.port == Some(fwd) && r.event == TraceEvent::Dequeue)
        .any(|r| r.time.ps() >= 4900 * US);
    assert!(sent_after, "nothing sent after the last recovery");
}

#[test]
fn a_flow_whose_only_path_fails_waits_and_finishes_after_the_recovery() {
    let one_spine = LeafSpine {
        spines: 1,
        ..LeafSpine::TEN_G
    };
    let toml = leaf_spine_run(1_000_000, "", "")
        .replace(&LeafSpine::TEN_G.toml(), &one_spine.toml())
        + "[[event]]\nat = \"100us\"\naction = \"down\"\nlink = [\"leaf0\", \"spine0\"]\n\
           [[event]]\nat = \"3ms\"\naction = \"up\"\nlink = [\"leaf0\", \"spine0\"]\n";
    let out = run(&toml);
    assert_all_finished(&out);
    assert!(link_down_drops(&out) > 0);
    for f in &out.flows {
        let finish = f.finish.expect("finished");
        assert!(
            finish > Time::ZERO + Duration::from_ms(3),
            "flow {} finished at {finish:?}",
            f.id
        );
    }
    // The same on a switch that fails and comes back: it drops everything
    // it holds.
    let toml = toml.replace("link = [\"leaf0\", \"spine0\"]", "switch = \"spine0\"");
    let out = run(&toml);
    assert_all_finished(&out);
    assert!(link_down_drops(&out) > 0);
    assert_eq!(out.faults[0].what, "down switch spine0");
}

#[test]
fn rate_and_delay_changes_slow_a_flow_as_a_slower_longer_link_does() {
    // One flow h0 -> h4 over a single spine; the fabric link trains down
    // to 1 Gbit/s at once: the flow takes about ten times as long.
    let one_spine = LeafSpine {
        spines: 1,
        ..LeafSpine::TEN_G
    };
    let base = format!(
        "{}[network]\nswitch_queue = {{ kind = \"ecn\", k_packets = 20 }}\n\
         [transport]\nprotocol = \"dctcp\"\n{}[run]\ntime_limit = \"1s\"\n",
        one_spine.toml(),
        pairs("[[0, 4]]", 5_000_000)
    );
    let fct = |out: &RunOutput| out.flows[0].finish.expect("finished").since(Time::ZERO);
    let fast = fct(&run(&base));
    let slow_toml = format!(
        "{base}[[event]]\nat = \"0us\"\naction = \"rate\"\nrate = \"1Gbps\"\n\
         link = [\"leaf0\", \"spine0\"]\n"
    );
    let slow = fct(&run(&slow_toml));
    let ratio = slow.ps() as f64 / fast.ps() as f64;
    assert!(
        (8.0..=11.0).contains(&ratio),
        "1 Gbit/s took {ratio:.2} times as long"
    );
    // A longer delay on the way adds to the flow's round trips.
    let far = run(&format!(
        "{base}[[event]]\nat = \"0us\"\naction = \"delay\"\ndelay = \"50us\"\n\
         link = [\"leaf0\", \"spine0\"]\n"
    ));
    assert!(
        fct(&far) > fast + Duration::from_us(100),
        "{:?} vs {fast:?}",
        fct(&far)
    );
}

#[test]
fn a_run_with_failures_is_the_same_on_a_rerun_and_on_any_thread_count() {
    // The flows arrive over about 25 ms.
    let events = "[[event]]\nat = \"5ms\"\naction = \"down\"\nlink = [\"s3\", \"s0\"]\n\
                  [[event]]\nat = \"15ms\"\naction = \"up\"\nlink = [\"s3\", \"s0\"]\n\
                  [[event]]\nat = \"1ms\"\naction = \"loss\"\nloss = 0.02\nlink = [\"s0\", \"s1\"]\n\
                  [[event]]\nat = \"8ms\"\naction = \"down\"\nswitch = \"s2\"\n\
                  [[event]]\nat = \"9ms\"\naction = \"up\"\nswitch = \"s2\"\n\
                  [[event]]\nat = \"4ms\"\naction = \"rate\"\nrate = \"5Gbps\"\nlink = [\"s1\", \"s2\"]\n";
    let toml = ring("failure_detection = \"20us\"", events)
        .replace("flows = 200", "flows = 150")
        .replace(
            "[transport]\nprotocol = \"dctcp\"",
            "[transport]\nprotocol = \"dctcp\"\nmin_rto = \"1ms\"",
        );
    let (serial, _) = run_on(&toml, 1);
    assert_conserved(&serial);
    let r = |x: DropReason| {
        serial.counters.dropped[0][x as usize] + serial.counters.dropped[1][x as usize]
    };
    assert!(
        r(DropReason::LinkDown) > 0 && r(DropReason::LinkLoss) > 0,
        "{:?}",
        serial.counters
    );
    assert_eq!(serial.faults.len(), 6);
    let (again, _) = run_on(&toml, 1);
    same(&serial, &again, "rerun");
    assert_eq!(serial.faults, again.faults);
    for threads in [2, 3] {
        let (out, split) = run_on(&toml, threads);
        assert!(split, "{threads} threads: the run did not split");
        same(&serial, &out, &format!("{threads} threads"));
        assert_eq!(serial.faults, out.faults, "{threads} threads: fault marks");
    }
}

#[test]
fn an_event_after_the_time_limit_is_a_warning_and_a_bad_one_an_error() {
    let late = "[[event]]\nat = \"2s\"\naction = \"down\"\nlink = [\"leaf0\", \"spine0\"]\n";
    let exp = prepare(&leaf_spine_run(10_000, "", late));
    assert!(
        exp.warnings.iter().any(
            |w| w.starts_with("event: \"down link leaf0-spine0\" at 2000ms")
                && w.ends_with("it never happens")
        ),
        "{:?}",
        exp.warnings
    );
    let bad = "[[event]]\nat = \"1ms\"\naction = \"down\"\nlink = [\"leaf0\", \"leaf1\"]\n";
    let cfg = pktsim::config::Config::from_toml_str(&leaf_spine_run(10_000, "", bad), "<test>")
        .expect("parses");
    let e = cfg
        .prepare(std::path::Path::new("."))
        .err()
        .expect("an error")
        .to_string();
    assert!(
        e.contains("event[0].link: no link between leaf0 and leaf1"),
        "{e}"
    );
}

/// One flow h0 -> h4 of `size` bytes with `transport` (lines of
/// `[transport]`) over pFabric queues, and `events`.
fn pfabric_queues_run(transport: &str, size: u64, events: &str) -> String {
    format!(
        "{}[network]\nswitch_queue = {{ kind = \"pfabric\" }}\nload_balancing = \"spray\"\n\
         [transport]\n{transport}\n{}[run]\ntime_limit = \"50ms\"\n{events}",
        LeafSpine::TEN_G.toml(),
        pairs("[[0, 4]]", size),
    )
}

/// Everything h4 sends towards its switch (its ACKs, tokens) is lost from
/// `from` to `to`.
fn h4_mute(from: &str, to: &str) -> String {
    format!(
        "[[event]]\nat = \"{from}\"\naction = \"loss\"\nloss = 1.0\nlink = [\"h4\", \"leaf1\"]\n\
         one_way = true\n[[event]]\nat = \"{to}\"\naction = \"loss\"\nloss = 0.0\n\
         link = [\"h4\", \"leaf1\"]\none_way = true\n"
    )
}

#[test]
fn pfabric_recovers_when_the_acks_of_a_whole_window_are_lost() {
    // From 30 us the receiver's ACKs die for 200 us: the sender times out
    // with every segment of its window already at the receiver. It then
    // resends the first unacknowledged one, whose ACK (once the link works
    // again) moves the window; before, it sent nothing, armed no timer and
    // waited for good.
    let toml = pfabric_queues_run(
        "protocol = \"pfabric\"",
        2_000_000,
        &h4_mute("30us", "230us"),
    );
    let out = run(&toml);
    assert_all_finished(&out);
    let lost: u64 = out
        .counters
        .dropped
        .iter()
        .map(|d| d[DropReason::LinkLoss as usize])
        .sum();
    assert!(lost > 10, "only {lost} ACKs lost");
    assert!(out.flows[0].finish.unwrap() > Time::ZERO + Duration::from_us(230));
}

#[test]
fn phost_resends_a_lost_rts_with_rts_timeout_and_waits_for_good_without() {
    // The RTS of a 20-packet flow (no free tokens) is lost on the last
    // link, which it reaches at about 3 us.
    let events =
        "[[event]]\nat = \"0us\"\naction = \"loss\"\nloss = 1.0\nlink = [\"leaf1\", \"h4\"]\n\
                  one_way = true\n[[event]]\nat = \"5us\"\naction = \"loss\"\nloss = 0.0\n\
                  link = [\"leaf1\", \"h4\"]\none_way = true\n";
    let out = prepare(&pfabric_queues_run(
        "protocol = \"phost\"",
        20 * 1460,
        events,
    ))
    .run(None)
    .expect("runs");
    assert_eq!(out.flows[0].finish, None, "the 2015 code has no RTS timer");
    assert_eq!(out.counters.sent[0], 0, "no token, no data");
    let with_timer = "protocol = \"phost\"\nrts_timeout = 100.0";
    let out = run(&pfabric_queues_run(with_timer, 20 * 1460, events));
    assert_all_finished(&out);
    // Resent once, 100 packet times (120 us) after the first.
    assert_eq!(out.protocol_counters.get("rts_resent"), Some(&1));
    let finish = out.flows[0].finish.unwrap();
    assert!(finish > Time::ZERO + Duration::from_us(120), "{finish:?}");
}
