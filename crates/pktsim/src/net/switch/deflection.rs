//! Deflection by two random choices among a switch's switch-facing ports,
//! as Vertigo and Canary do (Abdous et al.; specs `vertigo.md` §1.3,
//! `canary.md` §1.3): draw two distinct switch-facing ports at random —
//! never a host-facing one; the ingress port and the refusing port itself
//! may be drawn — and send the packet to the less occupied (a coin flip
//! on ties).
//!
//! - Vertigo ([`TwoChoiceDeflection::vertigo`]) does not look at whether
//!   the chosen port has room: a full one pushes out its own lowest-priority
//!   packet (or refuses the deflected one), and that packet is dropped, not
//!   deflected again.
//! - Canary ([`TwoChoiceDeflection::canary`]) keeps only the candidates
//!   that would admit the packet (the port's own admission test, AIFO's
//!   quantile rule on a Canary switch); none left is "severe congestion"
//!   and the packet is dropped. The chosen port tests it once more when it
//!   is offered (a refusal then is final).
//!
//! A deflection to the refusing port itself is dropped by the network (it
//! has just refused the packet), which is what re-offering it would do.

use crate::engine::{Rng, RngStreams};
use crate::net::switch::refusal::{
    absorb_node_streams, same_hook, RefusalHook, Refused, SwitchView, Theirs, Verdict,
};
use crate::packet::{Packet, PortId};

/// Deflect to the less occupied of two random switch-facing ports.
pub struct TwoChoiceDeflection {
    /// One stream per node (`net.deflect`, index = node id).
    rng: Vec<Rng>,
    /// Keep only candidates that would admit the packet (Canary).
    admitted_only: bool,
}

impl TwoChoiceDeflection {
    /// Vertigo's choice: the two candidates' room is not checked.
    pub fn vertigo(n_nodes: usize, streams: &RngStreams) -> Self {
        Self::new(n_nodes, streams, false)
    }

    /// Canary's choice: only candidates that would admit the packet.
    pub fn canary(n_nodes: usize, streams: &RngStreams) -> Self {
        Self::new(n_nodes, streams, true)
    }

    fn new(n_nodes: usize, streams: &RngStreams, admitted_only: bool) -> Self {
        TwoChoiceDeflection {
            rng: (0..n_nodes)
                .map(|i| streams.stream("net.deflect", i as u64))
                .collect(),
            admitted_only,
        }
    }
}

/// The `i`-th switch-facing port of the viewed node.
fn nth_switch_facing(view: &SwitchView, i: usize) -> Option<PortId> {
    view.ports()
        .iter()
        .copied()
        .filter(|&p| !view.is_host_facing(p))
        .nth(i)
}

impl RefusalHook for TwoChoiceDeflection {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, view: &SwitchView) -> Verdict {
        if at.at_host || at.final_refusal {
            return Verdict::Drop;
        }
        let n = view
            .ports()
            .iter()
            .filter(|&&p| !view.is_host_facing(p))
            .count() as u64;
        if n == 0 {
            return Verdict::Drop;
        }
        let rng = &mut self.rng[at.node.idx()];
        let a = rng.below(n);
        let b = if n > 1 {
            (a + 1 + rng.below(n - 1)) % n
        } else {
            a
        };
        let mut best: Option<(PortId, u64)> = None;
        for i in [a, b] {
            let Some(p) = nth_switch_facing(view, i as usize) else {
                continue;
            };
            if self.admitted_only && !view.would_admit(p, pkt) {
                continue;
            }
            let load = view.queued_bytes(p);
            best = match best {
                None => Some((p, load)),
                Some((q, l)) if q == p => Some((q, l)),
                Some((q, l)) => {
                    if load < l || (load == l && rng.below(2) == 1) {
                        Some((p, load))
                    } else {
                        Some((q, l))
                    }
                }
            };
        }
        match best {
            Some((p, _)) => Verdict::Deflect(p),
            None => Verdict::Drop,
        }
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
