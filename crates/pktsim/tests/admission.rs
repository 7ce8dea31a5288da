//! The admission rule: what [`Network::would_admit`] predicts for a port is
//! what an enqueue on it then does, whichever path admits (an eager FIFO,
//! an idle port's pass-through, a discipline) and whatever limit applies
//! (the port's own, a shared buffer's threshold).

use crate::common::{pairs, prepare, star};
use pktsim::engine::{EventQueue, Rng};
use pktsim::net::switch::{RefusalHook, Refused, SwitchView, Verdict};
use pktsim::net::{NetEvent, Network};
use pktsim::packet::{FlowId, Header, NodeId, Packet, PacketKind, PortId};
use pktsim::time::{Duration, Time};
use std::sync::{Arc, Mutex};

/// Records the flow of every packet refused, and drops it.
struct Recorder(Arc<Mutex<Vec<FlowId>>>);

impl RefusalHook for Recorder {
    fn on_refused(&mut self, _at: &Refused, pkt: &Packet, _view: &SwitchView) -> Verdict {
        self.0.lock().unwrap().push(pkt.flow);
        Verdict::Drop
    }
}

/// A four-host star whose switch ports use `queue`, with a small per-port
/// buffer or a shared one.
fn four_host_star(queue: &str, protocol: &str, shared: bool) -> String {
    let buffer = if shared {
        "shared_buffer = { bytes = 30000, alpha = 1.0 }"
    } else {
        "switch_buffer_bytes = 12000"
    };
    format!(
        "{}[network]\nswitch_queue = {queue}\n{buffer}\n[transport]\nprotocol = \"{protocol}\"\n{}",
        star(4, "1us"),
        pairs("[[0, 1]]", 1000)
    )
}

/// Handle the network's events due by `now`.
fn catch_up(net: &mut Network, ev: &mut EventQueue<NetEvent>, now: Time) {
    while ev.peek_time().is_some_and(|t| t <= now) {
        let Some((t, _, e)) = ev.pop() else { break };
        match e {
            NetEvent::TxDone(p) => net.on_tx_done(p, t, ev),
            NetEvent::Arrive(p) => {
                net.on_arrive(p, t, ev);
            }
            NetEvent::NicIdle(_) => {}
        }
    }
}

/// Offer 4000 packets of mixed sizes and priorities to the switch's ports
/// towards h2 and h3 (sharing its buffer, when it has one), in bursts and
/// lulls, asking [`Network::would_admit`] before each; returns how many
/// were admitted and refused. Panics where a prediction is wrong.
fn predictions_hold(mut net: Network, eager: bool, case: &str) -> (u32, u32) {
    let refused = Arc::new(Mutex::new(Vec::new()));
    net.set_refusal_hook(Some(Box::new(Recorder(refused.clone()))));
    let port_to = |net: &Network, host: &str| {
        let i = net
            .ports()
            .iter()
            .position(|p| net.nodes()[p.peer.idx()].name == host)
            .unwrap();
        PortId(i as u32)
    };
    let ports = [port_to(&net, "h2"), port_to(&net, "h3")];
    for &p in &ports {
        assert_eq!(net.port(p).fifo.is_some(), eager, "{case}: port {p:?}");
    }
    let mut ev = EventQueue::new();
    let mut rng = Rng::from_seed_u64(33);
    let mut now = Time::ZERO;
    let (mut admitted, mut dropped) = (0, 0);
    for i in 0..4000u32 {
        // Bursts of 200 packets up to 0.3 us apart (twice what the two
        // 10 Gbit/s ports send) and lulls of 200 up to 3 us apart: the
        // queues fill, overflow and drain again.
        let gap = if (i / 200) % 2 == 0 { 300 } else { 3000 };
        now += Duration::from_ns(rng.below(gap));
        catch_up(&mut net, &mut ev, now);
        let to = rng.below(2) as usize;
        let mut pkt = Packet::new(
            FlowId(i),
            NodeId(0),
            NodeId(2 + to as u32),
            [64, 700, 1500][rng.below(3) as usize],
            PacketKind::Data,
            Header::TcpData { seq: 0 },
        );
        pkt.prio = rng.below(100) as u32;
        pkt.ready_at = now;
        let predicted = net.would_admit(ports[to], &pkt, now);
        net.enqueue(ports[to], pkt, now, &mut ev);
        let was_refused = refused.lock().unwrap().contains(&FlowId(i));
        assert_eq!(predicted, !was_refused, "{case}: packet {i} at {now:?}");
        if was_refused {
            dropped += 1;
        } else {
            admitted += 1;
        }
    }
    (admitted, dropped)
}

#[test]
fn would_admit_predicts_every_enqueue_on_every_admission_path() {
    let fifo = r#"{ kind = "ecn", k_packets = 4 }"#;
    let pfabric = r#"{ kind = "pfabric" }"#;
    // pFabric only with a buffer per port: under a shared buffer whose
    // threshold fell below what a port holds, its enqueue may evict an
    // equally urgent packet its `admits` does not count on.
    for (queue, protocol, buffers) in [
        (fifo, "dctcp", &[false, true][..]),
        (pfabric, "pfabric", &[false][..]),
    ] {
        for &shared in buffers {
            for eager in [true, false] {
                let mut exp = prepare(&four_host_star(queue, protocol, shared));
                if !eager {
                    exp.net.disable_eager_fifo();
                }
                // Eager FIFOs only where the ports have their own buffer.
                let eager = eager && queue == fifo && !shared;
                let case = format!("{queue} shared={shared} eager={eager}");
                let (admitted, dropped) = predictions_hold(exp.net, eager, &case);
                assert!(admitted > 1000, "{case}: {admitted} admitted");
                assert!(dropped > 100, "{case}: {dropped} refused");
            }
        }
    }
}
