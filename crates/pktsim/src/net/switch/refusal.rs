//! The refusal stage: what happens to a packet that the network is about to
//! drop. Every drop passes through one place ([`crate::net::Network`]'s
//! refusal branch) whichever admission path refused it (the eager FIFO's
//! tail drop, a discipline's tail drop or eviction, an AQM's drop at
//! dequeue, the hop limit), and a [`RefusalHook`] may then decide, right
//! where the packet was refused (htsim's composite queue does the same), to
//!
//! - drop it (the default: no hook installed costs nothing but the branch
//!   that was already there),
//! - drop it and send the source a notice (FastLane, Zats et al., SoCC 2015),
//! - deflect it to another port of the same switch (DIBS, Zarifis et al.,
//!   EuroSys 2014; Vertigo),
//! - trim it to its headers and send those on (NDP, Handley et al.,
//!   SIGCOMM 2017).
//!
//! Notices are switch-made packets: they enter the conservation books as
//! `made`. Deflected and trimmed packets are the same packets travelling on;
//! they are counted (`deflected`, `trimmed`) but do not change the books.

use crate::engine::{Rng, RngStreams};
use crate::metrics::DropReason;
use crate::net::network::Network;
use crate::net::switch::deflection::TwoChoiceDeflection;
use crate::packet::{flags, NodeId, Packet, PacketKind, PortId};
use crate::time::Time;

/// Built-in refusal behaviours, as written in the `[network]` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// Drop the packet (every switch before this stage existed).
    #[default]
    Drop,
    /// Drop it and send its source a header-sized notice (FastLane).
    NotifySource,
    /// Cut it to its headers and queue those at top priority (NDP).
    Trim,
    /// Send it out of a random other switch-facing port of the same switch
    /// that has room (DIBS); drop it when none has.
    Deflect,
    /// Send it to the less occupied of two random switch-facing ports,
    /// room or not (Vertigo; see [`crate::net::switch::deflection`]).
    DeflectTwoChoices,
    /// Of two random switch-facing ports, send it to the less occupied one
    /// that would admit it; drop it when neither would (Canary).
    DeflectTwoAdmitting,
}

impl Refusal {
    /// The hook implementing this behaviour (`None` for a plain drop).
    pub fn build(self, n_nodes: usize, streams: &RngStreams) -> Option<Box<dyn RefusalHook>> {
        match self {
            Refusal::Drop => None,
            Refusal::NotifySource => Some(Box::new(Always(Verdict::NotifySource))),
            Refusal::Trim => Some(Box::new(Always(Verdict::Trim))),
            Refusal::Deflect => Some(Box::new(RandomDeflection::new(n_nodes, streams))),
            Refusal::DeflectTwoChoices => {
                Some(Box::new(TwoChoiceDeflection::vertigo(n_nodes, streams)))
            }
            Refusal::DeflectTwoAdmitting => {
                Some(Box::new(TwoChoiceDeflection::canary(n_nodes, streams)))
            }
        }
    }
}

/// The notice a switch sends back to the source of refused `pkt`
/// ([`Verdict::NotifySource`]): `size` bytes, control, flagged
/// [`flags::NOTICE`], direction swapped, the refused packet's flow, header,
/// priority, path entropy, hop count and send time kept.
pub fn notice_to_source(pkt: &Packet, size: u32) -> Packet {
    let mut n = Packet::new(
        pkt.flow,
        pkt.dst,
        pkt.src,
        size,
        PacketKind::Control,
        pkt.header,
    );
    n.flags = flags::NOTICE;
    n.hops = pkt.hops;
    n.path = pkt.path;
    n.prio = pkt.prio;
    n.sent_at = pkt.sent_at;
    n
}

/// What to do with a refused packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Count it as dropped with the refusal's reason.
    Drop,
    /// Drop it and send a notice back to its source: a control packet of
    /// header size carrying the refused packet's header and flow, with
    /// [`crate::packet::flags::NOTICE`] set and source and destination
    /// swapped. A notice that is itself refused is dropped.
    NotifySource,
    /// Offer it to this other port of the same switch instead. A deflected
    /// packet refused again is dropped (no chains of deflections within one
    /// instant); its hop limit bounds loops across switches.
    Deflect(PortId),
    /// Cut the payload off (data packets only; others are dropped), set
    /// [`crate::packet::flags::TRIMMED`] and class 0, and offer the header to
    /// the same port again. Refused again, it is dropped.
    Trim,
}

/// Where and why a packet is refused.
#[derive(Clone, Copy, Debug)]
pub struct Refused {
    /// The node that owns the refusing port (a switch, or a host's NIC).
    pub node: NodeId,
    /// The refusing port.
    pub port: PortId,
    /// Why: buffer full, evicted, an AQM, the hop limit.
    pub reason: DropReason,
    /// When.
    pub now: Time,
    /// Whether `node` is a host. Hosts only drop: any other verdict there is
    /// taken as [`Verdict::Drop`].
    pub at_host: bool,
    /// Whether this is the second refusal of a packet already deflected or
    /// trimmed here, or of a notice: the verdict is then ignored (dropped).
    pub final_refusal: bool,
}

/// A switch behaviour on refusal. Called for every drop in the network
/// (hosts' NICs and hop-limit drops included, where only
/// [`Verdict::Drop`] is possible), so a hook can also just observe.
pub trait RefusalHook: Send {
    /// Decide what happens to `pkt`, refused at `at`. `view` reads the
    /// switch's ports, brought up to `at.now`.
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, view: &SwitchView) -> Verdict;
    /// Counts for the run summary (merged into `protocol_counters`); none
    /// by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Whether the hook's state is kept per node or per port, so that a
    /// partitioned run can give each group a copy ([`RefusalHook::absorb`]
    /// gathers them). Default: no (runs with the hook stay on one thread).
    fn splits(&self) -> bool {
        false
    }
    /// Take from `other`, this hook's copy in another group of a
    /// partitioned run, the state of the nodes and ports `theirs` selects,
    /// and add its counts. Called only on hooks that split.
    fn absorb(&mut self, _other: &mut dyn RefusalHook, _theirs: &Theirs) {}
    /// The hook as [`std::any::Any`], for [`RefusalHook::absorb`] to reach
    /// its copy's state. Default: `None`.
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// What another group of a partitioned run held: by node, and by port
/// (a port is its owner's).
pub struct Theirs<'a> {
    /// Whether the other group held `node`.
    pub node: &'a dyn Fn(NodeId) -> bool,
    /// Whether the other group held port `p`.
    pub port: &'a dyn Fn(PortId) -> bool,
}

/// The copy of `other` as the hook type `H`, for [`RefusalHook::absorb`].
pub fn same_hook<H: 'static>(other: &mut dyn RefusalHook) -> Option<&mut H> {
    other.as_any_mut()?.downcast_mut::<H>()
}

/// Swap the per-node random streams of the nodes `theirs` selects.
pub(crate) fn absorb_node_streams(mine: &mut [Rng], other: &mut [Rng], theirs: &Theirs) {
    for (i, (a, b)) in mine.iter_mut().zip(other.iter_mut()).enumerate() {
        if (theirs.node)(NodeId(i as u32)) {
            std::mem::swap(a, b);
        }
    }
}

/// Read-only view of one node's ports for a [`RefusalHook`].
pub struct SwitchView<'a> {
    net: &'a Network,
    node: NodeId,
}

impl<'a> SwitchView<'a> {
    /// A view of `node` in `net` (its ports must have been touched now).
    pub(crate) fn new(net: &'a Network, node: NodeId) -> Self {
        SwitchView { net, node }
    }
    /// The node.
    pub fn node(&self) -> NodeId {
        self.node
    }
    /// The node's output ports.
    pub fn ports(&self) -> &[PortId] {
        &self.net.nodes()[self.node.idx()].ports
    }
    /// The node at the far end of port `p`.
    pub fn peer(&self, p: PortId) -> NodeId {
        self.net.port(p).peer
    }
    /// Whether port `p` leads to a host.
    pub fn is_host_facing(&self, p: PortId) -> bool {
        self.peer(p).0 < self.net.n_hosts()
    }
    /// Bytes queued at port `p`.
    pub fn queued_bytes(&self, p: PortId) -> u64 {
        self.net.port(p).queued_bytes()
    }
    /// Whether port `p` would admit `pkt` now.
    pub fn would_admit(&self, p: PortId, pkt: &Packet) -> bool {
        self.net.admits(p, pkt)
    }
    /// Equal-cost next hops from this node towards host `dst`.
    pub fn next_hops(&self, dst: NodeId) -> &[PortId] {
        self.net.routing().next_hops(self.node, dst)
    }
}

/// A hook that gives the same verdict every time.
struct Always(Verdict);

impl RefusalHook for Always {
    fn on_refused(&mut self, _at: &Refused, _pkt: &Packet, _view: &SwitchView) -> Verdict {
        self.0
    }
    fn splits(&self) -> bool {
        true
    }
}

/// DIBS-style deflection: a uniformly random switch-facing port of the same
/// switch, other than the refusing one, that would admit the packet now.
pub struct RandomDeflection {
    /// One stream per node (`net.deflect`, index = node id).
    rng: Vec<Rng>,
    /// Candidate ports (reused, so deciding allocates nothing).
    candidates: Vec<PortId>,
}

impl RandomDeflection {
    /// Deflection for a network of `n_nodes` nodes.
    pub fn new(n_nodes: usize, streams: &RngStreams) -> Self {
        RandomDeflection {
            rng: (0..n_nodes)
                .map(|i| streams.stream("net.deflect", i as u64))
                .collect(),
            candidates: Vec::with_capacity(16),
        }
    }
}

impl RefusalHook for RandomDeflection {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, view: &SwitchView) -> Verdict {
        if at.at_host || at.final_refusal {
            return Verdict::Drop;
        }
        self.candidates.clear();
        for &p in view.ports() {
            if p != at.port && !view.is_host_facing(p) && view.would_admit(p, pkt) {
                self.candidates.push(p);
            }
        }
        if self.candidates.is_empty() {
            return Verdict::Drop;
        }
        let i = self.rng[at.node.idx()].below(self.candidates.len() as u64) as usize;
        Verdict::Deflect(self.candidates[i])
    }
    fn splits(&self) -> bool {
        true
    }
    fn absorb(&mut self, other: &mut dyn RefusalHook, theirs: &Theirs) {
        if let Some(o) = same_hook::<Self>(other) {
            absorb_node_streams(&mut self.rng, &mut o.rng, theirs);
        }
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}
