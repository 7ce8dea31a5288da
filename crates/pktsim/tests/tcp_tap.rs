//! A tap between the network and TCP for the pacing and handshake tests:
//! it records every packet that reaches a host (time, header, flags) and
//! can lose chosen ones there, as if the last link had dropped them (the
//! network's counters see them delivered; the transport never does).

use crate::common::{assert_conserved, prepare, simulation, tcp_params, Intercept};
use pktsim::metrics::RunOutput;
use pktsim::packet::{Header, Packet};
use pktsim::sim::Ctx;
use pktsim::time::Time;
use pktsim::transport::tcp::{Tcp, TcpProtocol};

/// `Header::Ctrl` kinds of the TCP handshake.
pub const SYN: u8 = 0;
/// See [`SYN`].
pub const SYNACK: u8 = 1;

/// One packet as it reached its host.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// Arrival time.
    pub at: Time,
    /// The packet.
    pub pkt: Packet,
    /// The tap lost it.
    pub lost: bool,
}

/// Decides which arriving packets are lost: called with the packet and
/// how many packets of the same kind (data sequence, ACK, SYN, SYN-ACK) the
/// tap has seen before it.
pub type LoseFn = Box<dyn FnMut(&Packet) -> bool + Send>;

/// What the tap keeps: every arrival, and what decides the losses.
struct TapState {
    seen: Vec<Seen>,
    lose: LoseFn,
}

/// Record an arrival, losing it if `lose` says so.
fn tap_arrival(state: &mut TapState, ctx: &mut Ctx, pkt: &Packet) -> bool {
    let lost = (state.lose)(pkt);
    state.seen.push(Seen {
        at: ctx.now(),
        pkt: *pkt,
        lost,
    });
    !lost
}

/// Run a TCP-family config behind a tap that loses what `lose` says.
pub fn run_tapped(toml: &str, lose: LoseFn) -> (RunOutput, Vec<Seen>) {
    let exp = prepare(toml);
    let tap = Intercept {
        inner: Tcp::new(TcpProtocol::new(tcp_params(&exp))),
        state: TapState {
            seen: Vec::new(),
            lose,
        },
        keep: tap_arrival,
    };
    let seed = exp.config.seed;
    let mut sim = simulation(exp, tap, seed);
    let reason = sim.run(None);
    let seen = std::mem::take(&mut sim.transport.state.seen);
    let out = sim.finish(reason);
    assert_conserved(&out);
    (out, seen)
}

/// Lose nothing.
pub fn keep_all() -> LoseFn {
    Box::new(|_| false)
}

/// Lose the first `n` packets whose header `pick` selects.
pub fn lose_first(n: usize, pick: impl Fn(&Header) -> bool + Send + 'static) -> LoseFn {
    let mut left = n;
    Box::new(move |p| {
        if left > 0 && pick(&p.header) {
            left -= 1;
            true
        } else {
            false
        }
    })
}

/// Whether a header is the handshake control packet of `kind`.
pub fn is_ctrl(kind: u8) -> impl Fn(&Header) -> bool {
    move |h| matches!(h, Header::Ctrl { kind: k, .. } if *k == kind)
}

/// A protocol counter of a run.
pub fn counter(out: &RunOutput, name: &str) -> u64 {
    *out.protocol_counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}
