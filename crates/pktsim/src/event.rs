//! The run's events: the network's own ([`NetEvent`], folded in), transport
//! timers and queue samples, with the tie that names each and orders it
//! among the events of its instant ([`crate::engine::Tie`]). The run loop
//! ([`crate::sim`]) pops them; the transport contract schedules timers; a
//! module of its own so that the contract need not import the loop.

use crate::engine::Tie;
use crate::net::NetEvent;
use crate::packet::{NodeId, PortId};

/// Everything that can happen. Small and `Copy`: ids only.
///
/// The network's events ([`NetEvent`]) are folded in as variants of their
/// own rather than wrapped, so that an event is 8 bytes (a wrapped one was
/// 12): every event is copied several times on its way through the queue,
/// and 12-byte copies are done as overlapping 8- and 4-byte moves that stall
/// when read back soon after being written (measured on the reference run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// [`NetEvent::Arrive`]: the head packet on a port's link reached the
    /// far end.
    Arrive(PortId),
    /// [`NetEvent::TxDone`]: a port may start its next transmission.
    TxDone(PortId),
    /// [`NetEvent::NicIdle`]: a host NIC ran dry.
    NicIdle(NodeId),
    /// A transport timer. `id` and `kind` are the transport's own.
    Timer {
        /// Transport-defined target (usually a flow id).
        id: u32,
        /// Transport-defined timer kind.
        kind: u8,
    },
    /// Take a queue sample.
    Sample,
    /// Take a link sample (`[output.links]`).
    LinkSample,
    /// Read the followed flows' state (`[output.timeseries]` with an
    /// interval).
    SeriesSample,
    /// Run moment `i` of the network's fault plan (`[[event]]`s; see
    /// [`crate::net::fault`]).
    Fault(u32),
}

impl From<NetEvent> for Event {
    #[inline]
    fn from(e: NetEvent) -> Self {
        match e {
            NetEvent::Arrive(p) => Event::Arrive(p),
            NetEvent::TxDone(p) => Event::TxDone(p),
            NetEvent::NicIdle(h) => Event::NicIdle(h),
        }
    }
}

impl Event {
    /// The phase of transport timers (after the network's phases).
    pub const PHASE_TIMER: u8 = NetEvent::PHASES;
    /// The phase of samples: after the instant's packets and timers.
    pub const PHASE_SAMPLE: u8 = NetEvent::PHASES + 1;
    /// The phase of scheduled network changes: last in an instant, so that
    /// a change at T finds what T's packets did, and T's samples see the
    /// network as it was before it.
    pub const PHASE_FAULT: u8 = NetEvent::PHASES + 2;
    /// Timer kinds a transport may use: the kind is part of the timer's
    /// id, in 5 bits beside its 32-bit number.
    pub const TIMER_KINDS: u8 = 32;

    /// The event's tie for `owner` ([`Tie`]): the network's events as
    /// [`NetEvent::tie`], then timers with their kind and number as id,
    /// then samples. Two pending events with the same tie are the same
    /// event.
    #[inline(always)]
    pub const fn tie(self, owner: NodeId) -> Tie {
        match self {
            Event::Arrive(p) => NetEvent::Arrive(p).tie(owner),
            Event::TxDone(p) => NetEvent::TxDone(p).tie(owner),
            Event::NicIdle(h) => NetEvent::NicIdle(h).tie(owner),
            Event::Timer { id, kind } => Tie::new(
                Self::PHASE_TIMER,
                owner.0,
                ((kind % Self::TIMER_KINDS) as u64) << 32 | id as u64,
            ),
            Event::Sample => Tie::new(Self::PHASE_SAMPLE, owner.0, 0),
            Event::LinkSample => Tie::new(Self::PHASE_SAMPLE, owner.0, 1),
            Event::SeriesSample => Tie::new(Self::PHASE_SAMPLE, owner.0, 2),
            Event::Fault(i) => Tie::new(Self::PHASE_FAULT, owner.0, i as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events are copied several times each through the queue; see [`Event`].
    #[test]
    fn an_event_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Event>(), 8);
    }

    /// Ties tell different events of one owner apart and keep its id.
    #[test]
    fn ties_are_distinct_and_keep_the_owner() {
        let max = u32::MAX;
        let events = [
            Event::Arrive(PortId(max)),
            Event::TxDone(PortId(max)),
            Event::NicIdle(NodeId(max)),
            Event::Timer { id: max, kind: 31 },
            Event::Timer { id: max, kind: 0 },
            Event::Timer { id: 0, kind: 31 },
            Event::Sample,
            Event::Fault(0),
            Event::Fault(max),
        ];
        let owner = NodeId(Tie::MAX_OWNER);
        let ties: Vec<Tie> = events.iter().map(|e| e.tie(owner)).collect();
        for (i, t) in ties.iter().enumerate() {
            assert_eq!(t.owner(), Tie::MAX_OWNER, "{:?}", events[i]);
            assert!(ties[i + 1..].iter().all(|o| o != t), "{:?}", events[i]);
        }
        let arrive = NetEvent::Arrive(PortId(7));
        assert_eq!(Event::from(arrive).tie(owner), arrive.tie(owner));
    }
}
