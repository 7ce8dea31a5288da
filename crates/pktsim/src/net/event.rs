//! The network's own events. The network schedules these into whatever event
//! queue the run loop owns (any event type that can be made from a
//! [`NetEvent`]), so `net` depends on the engine's queue but not on the run
//! loop, its timers or its transports.

use crate::packet::{NodeId, PortId};

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
