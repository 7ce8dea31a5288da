//! The packet: a small `Copy` struct that moves through queues and links by
//! value, and the ids it names. This layer sits below the network: it knows
//! nothing of ports, switches, events or transports. Protocol-specific
//! fields live in [`Header`] ([`header`]), an enum, so that the packet stays
//! within one cache line (64 bytes; checked by a test).

pub mod header;

use crate::time::Time;

pub use header::{flags, Header, Message, PacketKind};

/// Index of a node (host or switch) in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u32);

/// Index of a flow in the run's flow table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FlowId(pub u32);

/// Index of an output port (an output queue and the link it feeds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortId(pub u32);

impl NodeId {
    /// As an index into node arrays.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl FlowId {
    /// As an index into flow arrays.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl PortId {
    /// As an index into port arrays.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// A packet in flight. `Copy`, 64 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The flow this packet belongs to.
    pub flow: FlowId,
    /// Sending host.
    pub src: NodeId,
    /// Destination host.
    pub dst: NodeId,
    /// Size on the wire in bytes (payload plus headers).
    pub size: u32,
    /// Scheduling priority for priority-aware queues (lower is more urgent).
    /// pFabric puts the flow's remaining size here.
    pub prio: u32,
    /// Payload bytes carried (0 for control packets).
    pub payload: u32,
    /// Strict-priority class (0 is served first).
    pub class: u8,
    /// See [`flags`].
    pub flags: u8,
    /// Data or control (for accounting).
    pub kind: PacketKind,
    /// Links crossed so far. Saturates at 255 instead of wrapping, so the
    /// network's hop limit (a TTL) always sees the true count or more.
    pub hops: u8,
    /// Source-route path choice, or extra entropy for ECMP hashing.
    pub path: u16,
    /// Transmit timestamp set by the sender (echoed in ACKs for RTT samples).
    pub sent_at: Time,
    /// Earliest time the packet may start leaving its current queue. Used by
    /// cut-through forwarding when the egress link is faster than the ingress
    /// one, so that transmission never overtakes reception.
    pub ready_at: Time,
    /// Protocol header.
    pub header: Header,
}

#[cfg(test)]
impl Packet {
    /// A data packet for unit tests: flow `flow`, host 0 to host 1, `size`
    /// bytes, TCP sequence number `seq`.
    pub(crate) fn test_data(flow: u32, size: u32, seq: u64) -> Packet {
        Packet::new(
            FlowId(flow),
            NodeId(0),
            NodeId(1),
            size,
            PacketKind::Data,
            Header::TcpData { seq },
        )
    }
}

impl Packet {
    /// A packet with every optional field zeroed.
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        size: u32,
        kind: PacketKind,
        header: Header,
    ) -> Packet {
        Packet {
            flow,
            src,
            dst,
            size,
            prio: 0,
            payload: 0,
            class: 0,
            flags: 0,
            kind,
            hops: 0,
            path: 0,
            sent_at: Time::ZERO,
            ready_at: Time::ZERO,
            header,
        }
    }

    /// Whether flag bit(s) `f` are set.
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f == f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_fits_a_cache_line() {
        assert!(
            std::mem::size_of::<Packet>() <= 64,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }
}
