//! A tap between the network and TCP for the pacing and handshake tests:
//! it records every packet that reaches a host (time, header, flags) and
//! can lose chosen ones there, as if the last link had dropped them (the
//! network's counters see them delivered; the transport never does).

use crate::common::{assert_conserved, prepare};
use pktsim::metrics::RunOutput;
use pktsim::packet::{FlowId, Header, NodeId, Packet};
use pktsim::sim::{Ctx, Setup, Simulation, Transport};
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

/// TCP behind the tap.
pub struct Tap {
    /// The transport.
    pub tcp: Tcp,
    /// Every arrival, in order.
    pub seen: Vec<Seen>,
    lose: LoseFn,
}

impl Transport for Tap {
    fn name(&self) -> &'static str {
        self.tcp.name()
    }
    fn setup(&mut self, env: &Setup) -> pktsim::Result<()> {
        self.tcp.setup(env)
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.tcp.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet) {
        let lost = (self.lose)(&pkt);
        self.seen.push(Seen {
            at: ctx.now(),
            pkt,
            lost,
        });
        if !lost {
            self.tcp.on_packet(ctx, pkt)
        }
    }
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8) {
        self.tcp.on_timer(ctx, id, kind)
    }
    fn wants_nic_pull(&self) -> bool {
        self.tcp.wants_nic_pull()
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx, host: NodeId) {
        self.tcp.on_nic_idle(ctx, host)
    }
    fn on_notice(&mut self, ctx: &mut Ctx, pkt: Packet) {
        self.tcp.on_notice(ctx, pkt)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.tcp.counters()
    }
}

/// Run a TCP-family config behind a tap that loses what `lose` says.
pub fn run_tapped(toml: &str, lose: LoseFn) -> (RunOutput, Vec<Seen>) {
    let exp = prepare(toml);
    let params = exp
        .config
        .transport
        .tcp()
        .expect("valid")
        .expect("a TCP-family protocol");
    let tap = Tap {
        tcp: Tcp::new(TcpProtocol::new(params)),
        seen: Vec::new(),
        lose,
    };
    let mut sim = Simulation::new(
        exp.net,
        tap,
        exp.workload,
        exp.format,
        exp.limits,
        exp.config.seed,
    );
    let reason = sim.run(None);
    let seen = std::mem::take(&mut sim.transport.seen);
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
