//! The packet trace (`[output.trace]`, issue 31): its rows tell the story
//! of each packet in order and add up to the run's books.

use crate::common::{pairs, run, star};
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::net::trace::{TraceEvent, TraceRow};
use pktsim::packet::{flags, Header, PacketKind};

/// Two senders into one host through a small switch port: it drops.
fn incast(trace: &str) -> String {
    format!(
        "{}[network]\nswitch_buffer_bytes = 20000\n[transport]\nprotocol = \"tcp\"\n{}\n\
         [output.trace]\n{trace}\n",
        star(3, "1us"),
        pairs("[[1, 0], [2, 0]]", 300_000)
    )
}

fn rows(out: &RunOutput) -> &[TraceRow] {
    let (rows, truncated) = out.trace.as_ref().expect("a trace");
    assert!(!truncated);
    rows
}

fn seq(r: &TraceRow) -> Option<u64> {
    match r.pkt.header {
        Header::TcpData { seq } => Some(seq),
        _ => None,
    }
}

#[test]
fn the_trace_adds_up_to_the_runs_books() {
    let out = run(&incast(""));
    let c = &out.counters;
    assert!(c.dropped_total(0) > 0, "no drops to trace");
    let rows = rows(&out);
    let count = |e: TraceEvent, k: PacketKind| {
        rows.iter()
            .filter(|r| r.event == e && r.pkt.kind == k)
            .count() as u64
    };
    for k in [PacketKind::Data, PacketKind::Control] {
        let i = k as usize;
        assert_eq!(count(TraceEvent::Send, k), c.sent[i], "{k:?} sent");
        assert_eq!(
            count(TraceEvent::Deliver, k),
            c.delivered[i],
            "{k:?} delivered"
        );
        assert_eq!(
            count(TraceEvent::Drop, k),
            c.dropped_total(i),
            "{k:?} dropped"
        );
        assert_eq!(count(TraceEvent::Notice, k), c.made[i], "{k:?} made");
        // Conservation from the trace alone, against the run's in-flight.
        assert_eq!(
            count(TraceEvent::Send, k) + count(TraceEvent::Notice, k),
            count(TraceEvent::Deliver, k) + count(TraceEvent::Drop, k) + c.in_flight[i],
            "{k:?} conservation"
        );
    }
    let dequeues = rows
        .iter()
        .filter(|r| r.event == TraceEvent::Dequeue)
        .count() as u64;
    assert_eq!(dequeues, c.packet_hops, "a dequeue per packet-hop");
    // Rows in time order, each node's rows numbered in order.
    assert!(rows.windows(2).all(|w| w[0].time <= w[1].time));
}

#[test]
fn a_dropped_packet_is_resent_and_delivered_after_its_drop() {
    let out = run(&incast("flows = [0]"));
    let rows = rows(&out);
    assert!(rows.iter().all(|r| r.pkt.flow.0 == 0));
    let drop = rows
        .iter()
        .find(|r| r.event == TraceEvent::Drop && r.pkt.kind == PacketKind::Data)
        .expect("flow 0 lost a data packet");
    assert_eq!(drop.reason, Some(DropReason::BufferFull));
    // Dropped at the switch's port into host 0, where it had been offered.
    assert!(drop.node.0 >= 3 && drop.port.is_some());
    let s = seq(drop);
    let later = |e: TraceEvent| {
        rows.iter()
            .position(|r| r.time > drop.time && r.event == e && seq(r) == s)
            .unwrap_or_else(|| panic!("no {e:?} of seq {s:?} after its drop"))
    };
    let resend = later(TraceEvent::Send);
    assert!(
        rows[resend].pkt.has(flags::RETX),
        "the resend is not marked as one"
    );
    let delivered = later(TraceEvent::Deliver);
    assert!(resend < delivered);
    // The first copy was sent, queued at its NIC and dequeued before the drop.
    let first = rows
        .iter()
        .position(|r| r.event == TraceEvent::Send && seq(r) == s)
        .expect("first send");
    assert!(rows[first].time < drop.time && !rows[first].pkt.has(flags::RETX));
}

#[test]
fn filters_keep_only_the_selected_rows_and_the_cap_keeps_the_earliest() {
    let all = run(&incast(""));
    let all = rows(&all).to_vec();
    let port = all
        .iter()
        .find(|r| r.event == TraceEvent::Drop)
        .and_then(|r| r.port)
        .expect("a drop at a port");
    let out = run(&incast(&format!(
        "ports = [{}]\nfrom = \"50us\"\nuntil = \"200us\"",
        port.0
    )));
    let some = rows(&out);
    let expected: Vec<&TraceRow> = all
        .iter()
        .filter(|r| r.port.is_none_or(|p| p == port))
        .filter(|r| r.time.ps() >= 50_000_000 && r.time.ps() < 200_000_000)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(some.len(), expected.len());
    // The same rows, but numbered among the rows that passed.
    let unnumbered = |r: &TraceRow| TraceRow { seq: 0, ..*r };
    assert!(some
        .iter()
        .zip(&expected)
        .all(|(a, b)| unnumbered(a) == unnumbered(b)));
    let capped = run(&incast("max_rows = 100"));
    let (kept, truncated) = capped.trace.as_ref().expect("a trace");
    assert!(truncated);
    assert_eq!(kept[..], all[..100]);
}

#[test]
fn bad_trace_filters_are_errors_naming_the_field() {
    for (bad, field) in [
        ("flows = [2]", "output.trace.flows[0]"),
        ("nodes = [\"nowhere\"]", "output.trace.nodes[0]"),
        ("nodes = [0, 99]", "output.trace.nodes[1]"),
        ("ports = [1000]", "output.trace.ports[0]"),
        ("from = \"2ms\"\nuntil = \"1ms\"", "output.trace.until"),
        ("max_rows = 0", "output.trace.max_rows"),
    ] {
        let cfg = pktsim::config::Config::from_toml_str(&incast(bad), "<test>").expect("parses");
        let Err(e) = cfg.prepare(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))) else {
            panic!("{bad}: accepted");
        };
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }
}
