//! Link series (`[output.links]`, issue 31): every port's link counters,
//! sampled at an interval and once more at the run's end, add up to what
//! the packets did.

use crate::common::{assert_all_finished, pairs, prepare, run, star};
use pktsim::metrics::{DropReason, LinkSample, RunOutput};
use std::collections::BTreeMap;

/// Each port's last sample: its totals over the whole run.
pub fn last_per_port(out: &RunOutput) -> BTreeMap<u32, LinkSample> {
    let mut last = BTreeMap::new();
    for s in &out.link_samples {
        last.insert(s.port, *s);
    }
    last
}

/// The ports' totals add up to the run's counters: drops by reason, ECN
/// marks, deflections and notices exactly; transmissions up to those still
/// waiting in a queue when the run ended. Every port's counts only grow,
/// and every sample but the last lies on the interval's grid.
pub fn assert_links_add_up(out: &RunOutput, interval_ps: u64) {
    assert!(!out.link_samples.is_empty(), "no link samples");
    let c = &out.counters;
    let last = last_per_port(out);
    let sum = |f: &dyn Fn(&LinkSample) -> u64| -> u64 { last.values().map(f).sum() };
    for r in DropReason::ALL {
        assert_eq!(
            sum(&|s| s.dropped[r as usize]),
            c.dropped[0][r as usize] + c.dropped[1][r as usize],
            "drops of reason {}",
            r.name()
        );
    }
    assert_eq!(sum(&|s| s.ecn_marked), c.ecn_marked, "ECN marks");
    assert_eq!(sum(&|s| s.deflected_in), c.deflected, "deflections");
    assert_eq!(sum(&|s| s.notices), c.made[1], "notices");
    assert!(
        sum(&|s| s.packets) <= c.packet_hops,
        "more transmissions than hops"
    );
    let end = out.sim_time;
    let mut before: BTreeMap<u32, LinkSample> = BTreeMap::new();
    for s in &out.link_samples {
        assert!(
            s.time == end || s.time.ps() % interval_ps == 0,
            "a sample off the grid at {:?}",
            s.time
        );
        if let Some(b) = before.get(&s.port) {
            assert!(
                s.time > b.time,
                "two samples of port {} at one time",
                s.port
            );
            assert!(s.bytes >= b.bytes && s.packets >= b.packets && s.busy >= b.busy);
            // Busy time in an interval cannot exceed the interval.
            assert!(
                s.busy - b.busy <= s.time - b.time,
                "busy beyond the interval"
            );
        }
        before.insert(s.port, *s);
    }
}

#[test]
fn one_flow_on_an_idle_path_adds_up_to_its_packets_and_fills_its_link() {
    let size = 1_000_000u64;
    let toml = format!(
        "{}[transport]\nprotocol = \"tcp\"\n{}\n[output.links]\ninterval = \"10us\"\n",
        star(2, "1us"),
        pairs("[[0, 1]]", size)
    );
    let exp = prepare(&toml);
    let (mss, header) = (exp.format.mss as u64, exp.format.header as u64);
    let out = run(&toml);
    assert_all_finished(&out);
    assert_links_add_up(&out, 10_000_000);
    // No loss on an idle path: every transmission has ended, and the
    // sender's NIC sent the flow's bytes and one header per packet.
    assert_eq!(out.counters.dropped_total(0), 0);
    let last = last_per_port(&out);
    let packets: u64 = last.values().map(|s| s.packets).sum();
    assert_eq!(packets, out.counters.packet_hops);
    let nic = last
        .values()
        .find(|s| s.node.0 == 0)
        .expect("host 0's NIC is sampled");
    let data_packets = size.div_ceil(mss);
    assert_eq!(nic.packets, data_packets);
    assert_eq!(nic.bytes, size + data_packets * header);
    // Once the window is past the path's BDP the NIC sends back to back:
    // some 10 us interval is full, none is more than full.
    let nic_rows: Vec<&LinkSample> = out
        .link_samples
        .iter()
        .filter(|s| s.port == nic.port)
        .collect();
    let full = nic_rows.windows(2).any(|w| {
        let (a, b) = (w[0], w[1]);
        (b.busy - a.busy).ps() == (b.time - a.time).ps()
    });
    assert!(full, "the sender's NIC never sent for a whole interval");
    assert_eq!(nic_rows.last().map(|s| s.time), Some(out.sim_time));
}

#[test]
fn an_incast_counts_its_drops_and_marks_at_the_port_that_made_them() {
    let toml = format!(
        "{}[network]\nswitch_buffer_bytes = 60000\nswitch_queue = {{ kind = \"ecn\", k_packets = 10 }}\n\
         [transport]\nprotocol = \"dctcp\"\n{}\n[output.links]\ninterval = \"25us\"\n",
        star(9, "1us"),
        pairs("[[1, 0], [2, 0], [3, 0], [4, 0], [5, 0], [6, 0], [7, 0], [8, 0]]", 200_000)
    );
    let out = run(&toml);
    assert!(out.counters.dropped_total(0) > 0, "no drops to count");
    assert!(out.counters.ecn_marked > 0, "no marks to count");
    assert_links_add_up(&out, 25_000_000);
    // All of it at the one port into host 0: the switch's port to it.
    let last = last_per_port(&out);
    let busy: Vec<&LinkSample> = last
        .values()
        .filter(|s| s.ecn_marked > 0 || s.dropped.iter().any(|&d| d > 0))
        .collect();
    assert_eq!(busy.len(), 1, "{busy:?}");
    assert_eq!(busy[0].peer.0, 0);
}

#[test]
fn without_output_links_the_run_takes_no_link_sample() {
    let toml = format!(
        "{}[transport]\nprotocol = \"tcp\"\n{}",
        star(2, "1us"),
        pairs("[[0, 1]]", 100_000)
    );
    let out = run(&toml);
    assert!(out.link_samples.is_empty());
}

#[test]
fn a_link_interval_that_is_not_a_positive_duration_is_an_error_naming_the_field() {
    for bad in ["\"0us\"", "\"fast\""] {
        let toml = format!(
            "{}[transport]\nprotocol = \"tcp\"\n{}\n[output.links]\ninterval = {bad}\n",
            star(2, "1us"),
            pairs("[[0, 1]]", 100_000)
        );
        let cfg = pktsim::config::Config::from_toml_str(&toml, "<test>").expect("parses");
        let Err(e) = cfg.prepare(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))) else {
            panic!("{bad}: accepted");
        };
        assert!(e.to_string().contains("output.links.interval"), "{e}");
    }
}
