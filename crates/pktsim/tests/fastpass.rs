//! Fastpass end to end: the zero-queue property, fairness, FCP's recovery
//! of lost demands, path selection, and the pHost paper's epoch model.

use crate::common::{self, assert_conserved, prepare, run, simulation, star, LeafSpine};
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::net::Network;
use pktsim::sim::{Simulation, StopReason};
use pktsim::time::{Duration, Time};
use pktsim::transport::fastpass::{Fastpass, FastpassParams, FastpassProtocol, FastpassStats};

/// One rack: `hosts` hosts on one switch, the last one the receiver. With
/// Fastpass the config adds the arbiter as one more host on the switch.
fn rack(hosts: u32, transport: &str, workload: &str) -> String {
    format!(
        r#"{}
[network]
switch_queue = {{ kind = "priority", classes = 2 }}
[transport]
{transport}
{workload}
"#,
        star(hosts, "0.2us")
    )
}

/// Senders 0..k all sending `size` bytes to host k, starting together.
fn incast(k: u32, size: u64) -> String {
    common::incast(k, k, size)
}

/// Largest number of packets held at once (waiting, or about to start) by
/// any switch port, over the run; with `skip_arbiter`, not counting the port
/// towards the arbiter (the last host), where endpoints' requests meet.
fn max_switch_queue(net: &Network, skip_arbiter: bool) -> u32 {
    let arbiter = net.n_hosts() - 1;
    net.ports()
        .iter()
        .filter(|p| p.owner.0 >= net.n_hosts() && !(skip_arbiter && p.peer.0 == arbiter))
        .map(|p| p.stats.max_packets)
        .max()
        .unwrap_or(0)
}

/// Largest number of bytes held by the switch port towards the arbiter.
fn arbiter_port_bytes(net: &Network) -> u64 {
    let arbiter = net.n_hosts() - 1;
    net.ports()
        .iter()
        .filter(|p| p.owner.0 >= net.n_hosts() && p.peer.0 == arbiter)
        .map(|p| p.stats.max_bytes)
        .max()
        .unwrap_or(0)
}

fn fastpass_sim(toml: &str, params: Option<FastpassParams>) -> Simulation<Fastpass> {
    let exp = prepare(toml);
    let t = match params {
        Some(p) => Fastpass::new(FastpassProtocol::new(p)),
        None => {
            let cfg = &exp.config.transport;
            assert_eq!(cfg.name(), "fastpass");
            Fastpass::new(FastpassProtocol::new(FastpassParams::default()))
        }
    };
    simulation(exp, t, 1)
}

fn finish<T: pktsim::sim::Transport>(mut sim: Simulation<T>) -> (Simulation<T>, StopReason) {
    let r = sim.run(None);
    (sim, r)
}

#[test]
fn fastpass_switch_queues_hold_at_most_one_packet_while_tcp_builds_a_queue() {
    // 4 senders -> 1 receiver in one rack, 1 MB each (the paper's §6.1
    // experiment, cut short).
    let w = incast(4, 1_000_000);
    let sim = fastpass_sim(&rack(5, "protocol = \"fastpass\"", &w), None);
    let (sim, reason) = finish(sim);
    let fp_queue = max_switch_queue(&sim.net, true);
    // Requests that start together meet at the arbiter's port: control
    // packets only, one per sender.
    let arb_bytes = arbiter_port_bytes(&sim.net);
    assert!(arb_bytes <= 4 * 60, "{arb_bytes} B at the arbiter's port");
    let stats = FastpassStats::total(sim.transport.hosts());
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_eq!(out.stop_reason, "all_flows_done");
    assert_eq!(out.counters.dropped_total(0), 0, "data dropped");
    assert!(
        fp_queue <= 1,
        "Fastpass: a switch port held {fp_queue} waiting packets"
    );
    assert_eq!(
        (stats.allocs_late, stats.allocs_missed),
        (0, 0),
        "{stats:?}"
    );
    // The receiver's link is kept busy: 4 MB in little more than 4 MB at line rate.
    let last = out.flows.iter().filter_map(|f| f.finish).max().unwrap();
    let line = Duration::from_ps(4 * 685 * 1_200_000); // 4 x 685 packets of 1500 B
    assert!(
        last - Time::ZERO < line + Duration::from_us(60),
        "Fastpass incast took {:?} (line rate {line:?})",
        last - Time::ZERO
    );

    let exp = prepare(&rack(5, "protocol = \"tcp\"", &w));
    let tcp =
        pktsim::transport::tcp::Tcp::new(pktsim::transport::tcp::TcpProtocol::new(tcp_params()));
    let mut sim = simulation(exp, tcp, 1);
    let reason = sim.run(None);
    let tcp_queue = max_switch_queue(&sim.net, false);
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert!(
        tcp_queue >= 20,
        "TCP's queue peaked at only {tcp_queue} packets"
    );
}

fn tcp_params() -> pktsim::transport::tcp::TcpParams {
    pktsim::transport::tcp::TcpParams {
        init_cwnd: 10,
        max_cwnd: None,
        initial_rto: Duration::from_ms(1),
        min_rto: Duration::from_us(200),
        max_rto: Duration::from_ms(1000),
        dupack_threshold: 3,
        ..Default::default()
    }
}

#[test]
fn a_slow_arbiter_allocates_fewer_slots_but_none_late() {
    // 1.5 us per allocation: a 16-slot batch takes 25 us to compute, longer
    // than the 19.2 us it covers; the arbiter skips ahead, so every slot it
    // hands out is still in the future, and the link runs at ~77 %.
    let params = FastpassParams {
        arbiter_per_alloc: Duration::from_ns(1500),
        ..FastpassParams::default()
    };
    let w = incast(2, 1_000_000);
    let (sim, reason) = finish(fastpass_sim(
        &rack(3, "protocol = \"fastpass\"", &w),
        Some(params),
    ));
    let stats = FastpassStats::total(sim.transport.hosts());
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_eq!(out.stop_reason, "all_flows_done");
    assert_eq!(
        (stats.allocs_late, stats.allocs_missed),
        (0, 0),
        "{stats:?}"
    );
    let last = out.flows.iter().filter_map(|f| f.finish).max().unwrap();
    let line = Duration::from_ps(2 * 685 * 1_200_000);
    assert!(
        last - Time::ZERO > line + Duration::from_ps(line.ps() / 5),
        "{:?}",
        last - Time::ZERO
    );
}

#[test]
fn five_senders_each_get_a_fifth_of_the_link_in_every_10ms_window() {
    let toml = rack(6, "protocol = \"fastpass\"", &incast(5, 1_000_000_000));
    let mut sim = fastpass_sim(&toml, None);
    let window = Duration::from_ms(10);
    // Payload bytes a fifth of a 10 Gbit/s link carries in a window, at
    // 1460 B of payload per 1500 B slot.
    let fair = 10e9 / 8.0 * 0.010 * 1460.0 / 1500.0 / 5.0;
    let mut before: Vec<u64> = vec![0; 5];
    for w in 0..5u64 {
        sim.run_until(Time::ZERO + window.times(w + 1), None);
        let now: Vec<u64> = sim.progress().iter().map(|p| p.bytes_received).collect();
        if w > 0 {
            // After a 10 ms warm-up.
            for f in 0..5 {
                let got = (now[f] - before[f]) as f64;
                assert!(
                    (got / fair - 1.0).abs() <= 0.02,
                    "window {w}, flow {f}: {got} B, a fifth is {fair:.0} B"
                );
            }
        }
        before = now;
    }
}

#[test]
fn lost_demands_are_resent_after_the_fcp_timeout_and_nothing_is_lost() {
    let w = incast(3, 200_000);
    let params = FastpassParams {
        drop_first_requests: 3,
        ..FastpassParams::default()
    };
    let (sim, reason) = finish(fastpass_sim(
        &rack(4, "protocol = \"fastpass\"", &w),
        Some(params),
    ));
    let stats = FastpassStats::total(sim.transport.hosts());
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_eq!(stats.requests_dropped, 3);
    assert!(stats.requests_resent >= 3, "{stats:?}");
    assert_eq!(out.stop_reason, "all_flows_done");
    for f in &out.flows {
        assert_eq!(f.bytes_received, f.size_bytes);
        // Every flow's first request was lost: it waited a timeout.
        assert!(f.fct().unwrap() > Duration::from_us(20), "{f:?}");
    }
    // The same through the config key.
    let cfg = "protocol = \"fastpass\"\ndrop_first_requests = 3";
    let out = run(&rack(4, cfg, &w));
    assert!(out.flows.iter().all(|f| f.bytes_received == f.size_bytes));
}

/// Two racks of 4 hosts, 4 spines at the host rate: full bisection with no
/// spare lane, so only path selection avoids collisions at the spines.
/// Traffic goes one way (rack 0 to rack 1) so that the data ACKs, which
/// Fastpass here does not schedule, use the other direction.
fn two_racks(transport: &str, lb: &str, size: u64) -> String {
    let topology = LeafSpine {
        spines: 4,
        link_delay: "0.2us",
        ..LeafSpine::TEN_G
    };
    format!(
        r#"{}
[network]
load_balancing = "{lb}"
switch_queue = {{ kind = "priority", classes = 2 }}
[transport]
{transport}
{}"#,
        topology.toml(),
        common::pairs("[[0, 4], [1, 5], [2, 6], [3, 7]]", size)
    )
}

#[test]
fn path_selection_keeps_spine_queues_empty_where_ecmp_collides() {
    let (sim, reason) = finish(fastpass_sim(
        &two_racks("protocol = \"fastpass\"", "ecmp", 500_000),
        None,
    ));
    let q = max_switch_queue(&sim.net, true);
    let conflicts = FastpassStats::total(sim.transport.hosts()).path_conflicts;
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_eq!(out.stop_reason, "all_flows_done");
    assert_eq!(conflicts, 0);
    assert!(q <= 1, "Fastpass with path selection: {q} packets waiting");
    // Without path selection the same slots collide at the spines.
    let params = FastpassParams {
        path_selection: false,
        ..FastpassParams::default()
    };
    let (sim, _) = finish(fastpass_sim(
        &two_racks("protocol = \"fastpass\"", "spray", 500_000),
        Some(params),
    ));
    let q = max_switch_queue(&sim.net, true);
    assert!(q >= 2, "spraying without path selection: only {q} waiting");
}

fn mixed(transport: &str) -> String {
    let topology = LeafSpine {
        spines: 4,
        leaves: 3,
        hosts_per_leaf: 8,
        host_rate: "10Gbps",
        fabric_rate: "40Gbps",
        link_delay: "0.2us",
    };
    format!(
        r#"{}
[network]
forwarding = "cut_through"
load_balancing = "spray_round_robin"
switch_queue = {{ kind = "pfabric" }}
switch_buffer_bytes = 36864
[transport]
{transport}
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 300
"#,
        topology.toml()
    )
}

fn signature(out: &RunOutput) -> Vec<(u32, Option<Time>, u64)> {
    out.flows
        .iter()
        .map(|f| (f.id, f.finish, f.bytes_received))
        .collect()
}

#[test]
fn fastpass_runs_mixed_traffic_deterministically_and_completely() {
    for model in ["arbiter", "phost_epoch"] {
        let t = format!("protocol = \"fastpass\"\nmodel = \"{model}\"");
        let a = run(&mixed(&t));
        let b = run(&mixed(&t));
        assert_eq!(a.stop_reason, "all_flows_done", "{model}");
        assert!(a.flows.iter().all(|f| f.bytes_received == f.size_bytes));
        assert_eq!(signature(&a), signature(&b), "{model}: not deterministic");
        assert_eq!(a.counters, b.counters);
    }
}

#[test]
fn epoch_model_paces_slots_one_epoch_apart_and_recovers_losses() {
    // A single 8-packet-per-epoch flow: 100 packets need 13 epochs; the
    // flow finishes in about that many epochs of 10.2 us.
    let w = "[[workload]]\nkind = \"static\"\npairs = [[0, 1]]\nsize = 146000\n";
    let out = run(&rack(
        3,
        "protocol = \"fastpass\"\nmodel = \"phost_epoch\"",
        w,
    ));
    let fct = out.flows[0].fct().unwrap();
    assert!(
        fct >= Duration::from_ns(12 * 10_200) && fct <= Duration::from_ns(15 * 10_200),
        "{fct:?}"
    );
    // The model assumes every link runs at the host rate: a receiver on a
    // 5 Gbit/s link with a 10-packet buffer overflows, and what is lost is
    // re-requested one epoch after the source has sent what it asked for.
    let toml = rack(
        5,
        "protocol = \"fastpass\"\nmodel = \"phost_epoch\"",
        &incast(4, 100_000),
    )
    .replace(
        "link_delay = \"0.2us\"",
        "link_delay = \"0.2us\"\nbottleneck_rate = \"5Gbps\"\nbottleneck_buffer_bytes = 15000",
    );
    let out = run(&toml);
    assert!(out.counters.dropped_total(0) > 0, "no data dropped");
    assert!(out.flows.iter().map(|f| f.retransmits).sum::<u32>() > 0);
    assert_eq!(out.stop_reason, "all_flows_done");
    assert!(out.flows.iter().all(|f| f.bytes_received == f.size_bytes));
}

#[test]
fn bad_fastpass_settings_name_their_field() {
    let err = |t: &str| {
        let cfg = pktsim::config::Config::from_toml_str(&rack(3, t, &incast(2, 1000)), "<t>");
        match cfg {
            Err(e) => e.to_string(),
            Ok(c) => c
                .prepare(std::path::Path::new("."))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default(),
        }
    };
    let e = err("protocol = \"fastpass\"\narbiter_host = 9");
    assert!(e.contains("transport.arbiter_host"), "{e}");
    let e = err("protocol = \"fastpass\"\nbatch_slots = 16\nlead_slots = 8");
    assert!(e.contains("transport.lead_slots"), "{e}");
    let e = err("protocol = \"fastpass\"\ntimeslot = \"0us\"");
    assert!(e.contains("transport.timeslot"), "{e}");
    let e = err("protocol = \"fastpass\"\nmodel = \"magic\"");
    assert!(e.contains("magic") || e.contains("model"), "{e}");
    // The arbiter may sit on a workload host instead of an extra one.
    let out = run(&rack(
        3,
        "protocol = \"fastpass\"\narbiter_host = 2",
        &incast(2, 30_000),
    ));
    assert!(out.flows.iter().all(|f| f.bytes_received == f.size_bytes));
}

/// The arbiter learns of a failed rack–core link when routing does, and
/// colours around it: with one of four spines gone from rack 0, each slot
/// carries at most three packets from rack 0 to rack 1 (the fourth waits,
/// its slot given back), each on a live spine, and slots allocated on the
/// failed spine before are not used, so the spine queues stay (nearly)
/// empty through the failure: with those slots used on the spines left, a
/// queue of 47 packets stood there until the recovery. Before routing
/// learns (after 50 us), packets sent on the failed spine die on its link
/// and are sent again.
#[test]
fn the_arbiter_routes_around_a_failed_spine_link_and_keeps_queues_empty() {
    let events = "[[event]]\nat = \"100us\"\naction = \"down\"\nlink = [\"leaf0\", \"spine0\"]\n\
                  [[event]]\nat = \"600us\"\naction = \"up\"\nlink = [\"leaf0\", \"spine0\"]\n";
    for detection in ["0", "50us"] {
        let toml = two_racks("protocol = \"fastpass\"", "ecmp", 2_000_000).replace(
            "load_balancing = \"ecmp\"",
            &format!("load_balancing = \"ecmp\"\nfailure_detection = \"{detection}\""),
        ) + events;
        let (sim, reason) = finish(fastpass_sim(&toml, None));
        let q = max_switch_queue(&sim.net, true);
        let stats = FastpassStats::total(sim.transport.hosts());
        let out = sim.finish(reason);
        assert_conserved(&out);
        assert_eq!(out.stop_reason, "all_flows_done", "detection {detection}");
        assert_eq!(stats.path_conflicts, 0);
        // Four flows wanting four spines, three left for 500 us of 1.2 us
        // slots: about one packet in four of that time waits.
        assert!(stats.slots_deferred > 300, "{detection}: {stats:?}");
        assert!(stats.allocs_on_lost_paths > 0, "{detection}: {stats:?}");
        // Up to two packets of jitter: the requests for slots given back
        // share the hosts' NICs with the data.
        assert!(
            q <= 3,
            "{detection}: a switch port held {q} packets; {stats:?}"
        );
        let down = DropReason::LinkDown as usize;
        let lost: u64 = out.counters.dropped.iter().map(|d| d[down]).sum();
        if detection == "0" {
            // Only what leaf0 had queued for spine0 at the failure.
            assert!(lost <= 2, "{lost} lost with instant detection");
        } else {
            // Sent to spine0 in the 50 us before routing learned.
            assert!(lost >= 20, "only {lost} lost before detection");
            assert_eq!(stats.data_requeued, lost, "every lost packet is sent again");
        }
        // The arbiter and the endpoints read their own copy's routes: the
        // same results on two and three threads.
        let serial = crate::partitioned::run_on(&toml, 1).0;
        for threads in [2, 3] {
            let (out, split) = crate::partitioned::run_on(&toml, threads);
            assert!(split, "{threads} threads: the run was not split");
            crate::partitioned::same(&serial, &out, &format!("{detection}, {threads} threads"));
        }
    }
}
