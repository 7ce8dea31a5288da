//! The network's own events. The network schedules these into whatever event
//! queue the run loop owns (any event type that can be made from a
//! [`NetEvent`]), so `net` depends on the engine's queue but not on the run
//! loop, its timers or its transports.

use crate::engine::{EventQueue, Tie};
use crate::packet::{NodeId, PortId};
use crate::time::Time;

/// Something that happens inside the network. Small and `Copy`: ids only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// A port finished a transmission and has more packets queued, or a
    /// queue said its next packet may leave only now (rate limits).
    TxDone(PortId),
    /// The head packet on a port's link reached the far end.
    Arrive(PortId),
    /// A host NIC finished sending and has nothing queued (only when the
    /// transport asked for NIC pulls).
    NicIdle(NodeId),
}

impl NetEvent {
    /// The phase of ends of transmissions: first in an instant, so that a
    /// packet leaving a queue at the instant another arrives has left it,
    /// as it has with the FIFO ports that schedule departures at enqueue
    /// time ([`crate::net::eager_fifo`]).
    pub const PHASE_TX_DONE: u8 = 0;
    /// The phase of arrivals.
    pub const PHASE_ARRIVE: u8 = 1;
    /// The phase of run-dry notices.
    pub const PHASE_NIC_IDLE: u8 = 2;
    /// Phases the network's events use; the run loop's own events (timers,
    /// samples) take the phases after them.
    pub const PHASES: u8 = 3;

    /// The event's tie for `owner` ([`Tie`]): its phase, and its port or
    /// host as its id. Each is pending at most once at a time, so the tie
    /// names it.
    #[inline(always)]
    pub const fn tie(self, owner: NodeId) -> Tie {
        match self {
            NetEvent::TxDone(p) => Tie::new(Self::PHASE_TX_DONE, owner.0, p.0 as u64),
            NetEvent::Arrive(p) => Tie::new(Self::PHASE_ARRIVE, owner.0, p.0 as u64),
            NetEvent::NicIdle(h) => Tie::new(Self::PHASE_NIC_IDLE, owner.0, h.0 as u64),
        }
    }

    /// Schedule this event at `at` for `owner`, the node that handles it:
    /// the receiving node of an arrival (links belong to the side they lead
    /// to), the sending node of a transmission, the host of a NIC.
    #[inline(always)]
    pub fn schedule_for<E: From<NetEvent> + Copy>(
        self,
        owner: NodeId,
        at: Time,
        ev: &mut EventQueue<E>,
    ) {
        ev.schedule(at, self.tie(owner), self.into());
    }
}
