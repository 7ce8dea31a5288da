//! One flow on an idle path finishes exactly at its ideal FCT.

use crate::common::{pairs, run, LeafSpine};

fn leaf_spine(forwarding: &str, size: u64) -> String {
    leaf_spine_delay(forwarding, size, "0.2us")
}

fn leaf_spine_delay(forwarding: &str, size: u64, delay: &'static str) -> String {
    let topology = LeafSpine {
        hosts_per_leaf: 2,
        fabric_rate: "40Gbps",
        link_delay: delay,
        ..LeafSpine::TEN_G
    };
    format!(
        "{}[network]\nforwarding = \"{forwarding}\"\n[transport]\nprotocol = \"tcp\"\n\
         init_cwnd = 10\n{}",
        topology.toml(),
        pairs("[[0, 3]]", size)
    )
}

#[test]
fn single_flow_meets_ideal_fct_exactly() {
    for fwd in ["store_and_forward", "cut_through"] {
        // One packet, a short last packet, and a full initial window.
        for size in [1u64, 1460, 5000, 14_600] {
            let out = run(&leaf_spine(fwd, size));
            let f = &out.flows[0];
            let fct = f.fct().expect("finished");
            assert_eq!(
                fct, f.ideal_fct,
                "{fwd}, {size} B: fct {fct:?} vs ideal {:?}",
                f.ideal_fct
            );
            assert_eq!(f.retransmits, 0);
        }
    }
}

#[test]
fn cut_through_is_faster_than_store_and_forward() {
    let sf = run(&leaf_spine("store_and_forward", 14_600)).flows[0]
        .fct()
        .unwrap();
    let ct = run(&leaf_spine("cut_through", 14_600)).flows[0]
        .fct()
        .unwrap();
    assert!(ct < sf, "cut-through {ct:?} vs store-and-forward {sf:?}");
}

#[test]
fn flow_larger_than_a_window_on_a_long_path_is_slower_than_ideal() {
    // 20 us per link: the RTT (≈ 163 us) holds ~136 packets, far more than the
    // initial window of 10, so slow start costs several RTTs.
    let out = run(&leaf_spine_delay("store_and_forward", 1_000_000, "20us"));
    let f = &out.flows[0];
    let s = f.slowdown().unwrap();
    assert!(s > 1.0 && s < 3.0, "slowdown {s}");
}
