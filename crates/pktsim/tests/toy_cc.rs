//! A toy TCP variant written outside the library (issue 34: a new variant is
//! one file plus one line). This file is the variant; its one line is
//! `TcpProtocol::with_controller(params, Capped)`, which runs the whole TCP
//! sender (loss recovery, timers, NIC backpressure) around it, monomorphic
//! as the registry's controllers. A library variant is the same file in
//! `transport/tcp/` plus its line in the transport registry (see
//! docs/extending.md).

use crate::common::{assert_all_finished, assert_conserved, pairs, prepare, simulation, star};
use pktsim::packet::FlowId;
use pktsim::transport::tcp::cc::{AckInfo, CongestionControl, Window};
use pktsim::transport::tcp::{Tcp, TcpParams, TcpProtocol};

/// The toy's window cap, in segments.
const CAP: u64 = 16;

/// Grows the window by one segment per ACK of new data, never past
/// [`CAP`] segments; loss and timeout reactions are the trait's (Reno's).
#[derive(Clone, Debug, Default)]
struct Capped;

impl CongestionControl for Capped {
    fn on_ack(&mut self, w: &mut Window, _ack: &AckInfo) {
        w.cwnd = (w.cwnd + w.mss).min(CAP * w.mss);
    }
    fn name(&self) -> &'static str {
        "capped"
    }
}

/// One 1 MB flow across a star, host 0 to host 1: no other traffic, so no
/// loss. Returns the flow's final window and the transport's name.
fn one_flow<C: CongestionControl + Clone + Send>(tcp: Tcp<C>) -> (u64, &'static str, u64) {
    let toml = format!(
        "{}[transport]\nprotocol = \"tcp\"\n{}",
        star(2, "1us"),
        pairs("[[0, 1]]", 1_000_000)
    );
    let exp = prepare(&toml);
    let mss = exp.format.mss as u64;
    let mut sim = simulation(exp, tcp, 1);
    let reason = sim.run(None);
    let cwnd = sim.transport.cwnd(FlowId(0)).expect("the flow started");
    let name = pktsim::sim::Transport::name(&sim.transport);
    let out = sim.finish(reason);
    assert_conserved(&out);
    assert_all_finished(&out);
    (cwnd, name, mss)
}

#[test]
fn the_toy_window_grows_to_its_cap_and_stops() {
    let params = TcpParams::default();
    let init = params.init_cwnd as u64;
    assert!(init < CAP, "the cap must be above the initial window");
    let (cwnd, name, mss) = one_flow(Tcp::new(TcpProtocol::with_controller(params, Capped)));
    assert_eq!(name, "capped");
    assert_eq!(cwnd, CAP * mss, "the toy's window ends at its cap");
}

#[test]
fn the_same_flow_under_newreno_grows_past_the_toy_cap() {
    // The toy's outcome is its own: NewReno's slow start on the same run
    // ends well above the cap.
    let (cwnd, name, mss) = one_flow(Tcp::new(TcpProtocol::new(TcpParams::default())));
    assert_eq!(name, "tcp");
    assert!(cwnd > CAP * mss, "NewReno window {cwnd} B");
}
