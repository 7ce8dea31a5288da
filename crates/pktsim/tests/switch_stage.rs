//! The switch stage and its hooks, each with a toy behaviour: a refusal hook
//! that sees every drop on both admission paths, deflection that never
//! uses host-facing ports and whose loops the hop limit bounds, switch-made
//! notices and trimmed headers in the conservation books, symmetric ECMP,
//! and a rate-limited queue.

use crate::common::{
    self, assert_all_finished, assert_conserved, host_facing, prepare, run, simulation, star,
    tcp_with_min_rto, LeafSpine,
};
use pktsim::config::Experiment;
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::net::port::PortStats;
use pktsim::net::switch::{RefusalHook, Refused, SwitchView, Verdict};
use pktsim::packet::{NodeId, Packet, PortId};
use std::sync::{Arc, Mutex};

/// 16 senders to one receiver through one switch with a small buffer.
fn incast(queue: &str, extra_network: &str) -> String {
    format!(
        r#"{}
[network]
switch_queue = {queue}
switch_buffer_bytes = 30000
{extra_network}
[transport]
protocol = "tcp"
min_rto = "100us"
{}"#,
        star(17, "1us"),
        common::incast(16, 16, 100_000)
    )
}

/// What a toy hook saw.
#[derive(Default, Debug)]
struct Seen {
    refusals: u64,
    by_reason: [u64; DropReason::COUNT],
    max_hops: u8,
    nodes: Vec<NodeId>,
}

/// Counts every refusal and drops the packet.
struct Counting(Arc<Mutex<Seen>>);

impl RefusalHook for Counting {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, _view: &SwitchView) -> Verdict {
        let mut s = self.0.lock().unwrap();
        s.refusals += 1;
        s.by_reason[at.reason as usize] += 1;
        s.max_hops = s.max_hops.max(pkt.hops);
        s.nodes.push(at.node);
        Verdict::Drop
    }
}

/// A port after a run: owner, peer and statistics.
struct PortAfter {
    owner: NodeId,
    peer: NodeId,
    stats: PortStats,
}

/// Run an experiment with TCP and an optional hook; return the output,
/// the ports afterwards and which ports lead to hosts.
fn run_with(
    mut exp: Experiment,
    hook: Option<Box<dyn RefusalHook>>,
) -> (RunOutput, Vec<PortAfter>, Vec<bool>) {
    if hook.is_some() {
        exp.net.set_refusal_hook(hook);
    }
    let host_facing = host_facing(&exp.net);
    let tcp = tcp_with_min_rto(pktsim::Duration::from_us(100));
    let mut sim = simulation(exp, tcp, 1);
    let reason = sim.run(None);
    let ports = sim
        .net
        .ports()
        .iter()
        .map(|p| PortAfter {
            owner: p.owner,
            peer: p.peer,
            stats: p.stats.clone(),
        })
        .collect();
    let out = sim.finish(reason);
    (out, ports, host_facing)
}

fn total_drops(out: &RunOutput) -> u64 {
    out.counters.dropped_total(0) + out.counters.dropped_total(1)
}

#[test]
fn a_refusal_hook_sees_every_drop_on_both_admission_paths() {
    for (name, queue, eager) in [
        ("eager FIFO", r#"{ kind = "drop_tail" }"#, true),
        ("discipline FIFO", r#"{ kind = "drop_tail" }"#, false),
        ("pFabric evictions", r#"{ kind = "pfabric" }"#, false),
    ] {
        let toml = incast(queue, "");
        let mut exp = prepare(&toml);
        if !eager {
            exp.net.disable_eager_fifo();
        }
        assert_eq!(
            exp.net.ports().iter().any(|p| p.fifo.is_some()),
            eager,
            "{name}: admission path not the one under test"
        );
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (out, _, _) = run_with(exp, Some(Box::new(Counting(seen.clone()))));
        assert_conserved(&out);
        let s = seen.lock().unwrap();
        assert!(total_drops(&out) > 0, "{name}: no drops to see");
        assert_eq!(s.refusals, total_drops(&out), "{name}");
        for r in DropReason::ALL {
            let counted = out.counters.dropped[0][r as usize] + out.counters.dropped[1][r as usize];
            assert_eq!(s.by_reason[r as usize], counted, "{name}: {}", r.name());
        }
        // An observing hook changes nothing.
        let mut plain = prepare(&toml);
        if !eager {
            plain.net.disable_eager_fifo();
        }
        let (plain, _, _) = run_with(plain, None);
        assert_eq!(plain.counters, out.counters, "{name}");
        assert_eq!(plain.flows, out.flows, "{name}");
    }
}

/// Deflects to the first switch-facing port (other than the refusing one)
/// with room; records the hops of everything refused.
struct ToyDeflector(Arc<Mutex<Seen>>);

impl RefusalHook for ToyDeflector {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, view: &SwitchView) -> Verdict {
        let mut s = self.0.lock().unwrap();
        s.refusals += 1;
        s.by_reason[at.reason as usize] += 1;
        s.max_hops = s.max_hops.max(pkt.hops);
        let to: Option<PortId> = view
            .ports()
            .iter()
            .copied()
            .find(|&p| p != at.port && !view.is_host_facing(p) && view.would_admit(p, pkt));
        match to {
            Some(p) => Verdict::Deflect(p),
            None => Verdict::Drop,
        }
    }
}

/// Incast across a leaf-spine: 12 senders on two leaves to one receiver on
/// a third, shallow buffers, a small hop limit.
fn leaf_spine_incast(extra_network: &str) -> String {
    let topology = LeafSpine {
        leaves: 3,
        hosts_per_leaf: 6,
        ..LeafSpine::TEN_G
    };
    format!(
        r#"{}
[network]
switch_buffer_bytes = 15000
hop_limit = 7
{extra_network}
[transport]
protocol = "tcp"
min_rto = "100us"
{}"#,
        topology.toml(),
        common::incast(12, 17, 60_000)
    )
}

#[test]
fn a_deflecting_switch_never_uses_host_facing_ports_and_the_hop_limit_bounds_loops() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let exp = prepare(&leaf_spine_incast(""));
    let (out, ports, host_facing) = run_with(exp, Some(Box::new(ToyDeflector(seen.clone()))));
    assert_conserved(&out);
    let c = &out.counters;
    assert!(c.deflected > 0, "nothing deflected: {c:?}");
    let deflected_in: u64 = ports.iter().map(|p| p.stats.deflected_in).sum();
    assert_eq!(deflected_in, c.deflected);
    for (i, p) in ports.iter().enumerate() {
        if host_facing[i] {
            assert_eq!(p.stats.deflected_in, 0, "port {i} leads to a host");
        }
    }
    // Deflected packets bounce between a leaf and the spines until the hop
    // limit drops them: every refused packet had crossed at most 7 links,
    // and some reached the limit.
    let s = seen.lock().unwrap();
    assert!(s.max_hops <= 7, "a packet crossed {} links", s.max_hops);
    assert!(c.dropped[0][DropReason::HopLimit as usize] > 0, "{c:?}");
    assert_eq!(s.refusals, total_drops(&out) + c.deflected);
    assert_all_finished(&out);
}

#[test]
fn built_in_deflection_from_the_config_stays_off_host_ports() {
    let exp = prepare(&leaf_spine_incast(r#"refusal = "deflect""#));
    let (out, ports, host_facing) = run_with(exp, None);
    assert_conserved(&out);
    assert!(out.counters.deflected > 0);
    for (i, p) in ports.iter().enumerate() {
        if host_facing[i] {
            assert_eq!(p.stats.deflected_in, 0, "port {i} leads to a host");
        }
    }
}

#[test]
fn conservation_holds_with_switch_made_notices_and_trimmed_headers() {
    let notices = prepare(&incast(
        r#"{ kind = "drop_tail" }"#,
        r#"refusal = "notify_source""#,
    ))
    .run(None)
    .unwrap();
    assert_conserved(&notices);
    let c = &notices.counters;
    assert!(c.made[1] > 0, "no notices made: {c:?}");
    assert_eq!(c.made[0], 0);
    // One notice per dropped data packet, unless the notice itself was
    // refused on its way back.
    assert!(c.made[1] <= c.dropped_total(0));
    assert_all_finished(&notices);

    let trimmed = prepare(&incast(
        r#"{ kind = "priority", classes = 2 }"#,
        r#"refusal = "trim""#,
    ))
    .run(None)
    .unwrap();
    assert_conserved(&trimmed);
    assert!(trimmed.counters.trimmed > 0, "{:?}", trimmed.counters);
}

/// Bytes each spine sent down to `leaf` over a run of one flow.
fn down_bytes_by_spine(out_ports: &[PortAfter], exp: &Experiment, leaf: &str) -> Vec<u64> {
    let mut v = Vec::new();
    for p in out_ports {
        let (from, to) = (
            &exp.net.nodes()[p.owner.idx()].name,
            &exp.net.nodes()[p.peer.idx()].name,
        );
        if from.starts_with("spine") && to == leaf {
            v.push(p.stats.tx_bytes);
        }
    }
    v
}

fn single_flow_spines(lb: &str, src: u32, dst: u32) -> (usize, usize) {
    let topology = LeafSpine {
        spines: 4,
        ..LeafSpine::TEN_G
    };
    let toml = format!(
        "{}[network]\nload_balancing = \"{lb}\"\n[transport]\nprotocol = \"tcp\"\n{}",
        topology.toml(),
        common::pairs(&format!("[[{src}, {dst}]]"), 200_000)
    );
    let names = prepare(&toml);
    let (out, ports, _) = run_with(prepare(&toml), None);
    assert!(out.flows[0].finish.is_some());
    let data = down_bytes_by_spine(&ports, &names, "leaf1");
    let acks = down_bytes_by_spine(&ports, &names, "leaf0");
    assert_eq!(data.iter().filter(|&&b| b > 0).count(), 1, "{data:?}");
    assert_eq!(acks.iter().filter(|&&b| b > 0).count(), 1, "{acks:?}");
    let spine = |v: &[u64]| v.iter().position(|&b| b > 0).unwrap();
    (spine(&data), spine(&acks))
}

#[test]
fn symmetric_ecmp_sends_acks_over_the_data_path() {
    // Hosts 0..4 on leaf0, 4..8 on leaf1.
    let pairs = [
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
        (0, 7),
        (3, 4),
        (1, 6),
        (2, 5),
    ];
    for &(s, d) in &pairs {
        let (data, acks) = single_flow_spines("symmetric_ecmp", s, d);
        assert_eq!(data, acks, "flow {s} -> {d}");
    }
    // Plain ECMP hashes each direction independently: some flow's ACKs
    // take another spine (the test above can fail).
    assert!(pairs.iter().any(|&(s, d)| {
        let (a, b) = single_flow_spines("ecmp", s, d);
        a != b
    }));
}

#[test]
fn a_rate_limited_switch_port_delivers_no_faster_than_its_rate() {
    let toml = format!(
        r#"{}
[network]
switch_queue = {{ kind = "rate_limited", rate = "2Gbps", burst_bytes = 3000, inner = {{ kind = "drop_tail" }} }}
switch_buffer_bytes = 300000
[transport]
protocol = "tcp"
{}"#,
        star(2, "1us"),
        common::pairs("[[0, 1]]", 2_000_000)
    );
    let out = run(&toml);
    let f = &out.flows[0];
    let fct = f.finish.expect("finishes") - f.start;
    // Every data packet (1500 B on the wire) crosses the limited port: at
    // 2 Gbit/s that takes 6 us per packet, less the burst allowance.
    let packets = f.size_bytes.div_ceil(1460);
    let wire = packets * 1500;
    let min_ps = (wire - 3000 - 1500) * 8 * 1000 / 2;
    assert!(fct.ps() >= min_ps, "fct {} ps < {min_ps} ps", fct.ps());
    // And the limit is the bottleneck, not something slower.
    assert!(fct.ps() < min_ps * 13 / 10, "fct {} ps", fct.ps());
}

/// Every `.rs` file below `src/<dir>` of the library, with its text.
fn sources_under(dir: &str) -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(dir);
    let mut stack = vec![root];
    let mut out = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    out
}

#[test]
fn net_imports_nothing_from_the_run_loop() {
    let files = sources_under("net");
    for (p, text) in &files {
        for layer in [
            "crate::sim",
            "crate::event",
            "crate::transport",
            "crate::config",
            "crate::workload",
        ] {
            assert!(
                !text.contains(layer),
                "{} uses {layer}: net sits below it",
                p.display()
            );
        }
        // The packet layer is `crate::packet`; `net` no longer re-exports it.
        assert!(!text.contains("net::packet"), "{}", p.display());
    }
    assert!(
        files.len() > 10,
        "found only {} files under src/net",
        files.len()
    );
}

#[test]
fn protocols_see_the_contract_not_the_run_loop() {
    // The registry (transport/mod.rs) builds and runs simulations; the
    // contract and every protocol know only the contract and the layers
    // below it.
    let files = sources_under("transport");
    for (p, text) in &files {
        if p.ends_with("transport/mod.rs") {
            continue;
        }
        assert!(
            !text.contains("crate::sim"),
            "{} uses the run loop",
            p.display()
        );
    }
    assert!(files.len() > 10);
}

#[test]
fn queue_reading_egress_policies_spread_a_flow_and_lose_nothing() {
    // One long flow between leaves: ECMP keeps it on one spine; choices by
    // queue state move on as the chosen uplink's queue builds.
    for lb in ["power_of_two", "least_loaded"] {
        let topology = LeafSpine {
            spines: 4,
            hosts_per_leaf: 2,
            host_rate: "40Gbps",
            ..LeafSpine::TEN_G
        };
        let toml = format!(
            "{}[network]\nload_balancing = \"{lb}\"\n[transport]\nprotocol = \"tcp\"\n\
             dupack_threshold = 1000\n{}",
            topology.toml(),
            common::pairs("[[0, 2]]", 3_000_000)
        );
        let names = prepare(&toml);
        let (out, ports, _) = run_with(prepare(&toml), None);
        assert_conserved(&out);
        assert!(out.flows[0].finish.is_some(), "{lb}");
        let used = down_bytes_by_spine(&ports, &names, "leaf1")
            .iter()
            .filter(|&&b| b > 0)
            .count();
        assert!(used >= 2, "{lb}: one flow stayed on {used} spine(s)");
    }
}
