//! Wire formats: what a packet says about itself, apart from any protocol
//! state machine (smoltcp's `wire/` beside its `socket/`). A transport reads
//! and writes these fields; the network reads only the flags it must act on
//! (ECN marking, source routes) and never looks inside [`Header`].

/// Packet flag bits.
pub mod flags {
    /// ECN-capable transport.
    pub const ECT: u8 = 1 << 0;
    /// Congestion experienced (set by a marking queue).
    pub const CE: u8 = 1 << 1;
    /// ECN echo (set by a receiver on an ACK).
    pub const ECE: u8 = 1 << 2;
    /// A retransmitted packet.
    pub const RETX: u8 = 1 << 3;
    /// The packet follows a source route (see [`crate::packet::Packet::path`]).
    pub const SOURCE_ROUTED: u8 = 1 << 4;
    /// A switch cut the payload off this packet (NDP-style trimming); only
    /// its headers travel on, `payload` is 0.
    pub const TRIMMED: u8 = 1 << 5;
    /// A switch made this packet to tell the source that one of its packets
    /// was refused (FastLane-style notification). It carries the refused
    /// packet's header, flow and original direction swapped.
    pub const NOTICE: u8 = 1 << 6;
    /// Congestion window reduced (TCP's CWR bit). Only the ECN-setup SYN
    /// sets it here, with ECE (RFC 3168 §6.1.1); the data path's ECN
    /// reaction does not use it.
    pub const CWR: u8 = 1 << 7;
}

/// What kind of packet this is, for counters and the conservation check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketKind {
    /// Carries flow payload.
    Data = 0,
    /// Everything else: ACKs, RTS, tokens, demands, notifications.
    Control = 1,
}

/// Protocol header. One variant per protocol family; the engine never looks
/// inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// TCP-like data segment: first payload byte `seq`.
    TcpData {
        /// Byte offset of the first payload byte.
        seq: u64,
    },
    /// TCP-like cumulative acknowledgement: next byte expected.
    TcpAck {
        /// Next byte the receiver expects.
        ack: u64,
        /// One SACK block as two 16-bit offsets from `ack` in MSS (start in
        /// the high half; 0: none). See `transport::tcp::encode_sack`.
        sack: u32,
        /// Receive window, right-shifted by the run's window scale (RFC 7323).
        wnd: u16,
    },
    /// The carrier of the scheduled transports' messages: pHost, Fastpass
    /// and the credit designs each define their messages as a typed enum
    /// ([`Message`]) in their `wire` module, the one place that reads and
    /// writes these fields. A toy protocol in a test may use it directly.
    Ctrl {
        /// Protocol-defined message kind.
        kind: u8,
        /// First protocol-defined value.
        a: u64,
        /// Second protocol-defined value.
        b: u32,
    },
}

/// A protocol family's typed messages, carried in [`Header::Ctrl`]: the
/// family's `wire` module says what each message holds and how it travels,
/// so no protocol code packs or unpacks the carrier's fields itself.
/// A family writes only the two halves of the mapping (`to_ctrl`,
/// `from_ctrl`); putting them in and taking them out of the carrier is
/// this trait's, the same for every family.
pub trait Message: Copy + Sized {
    /// This message as the carrier's fields: its kind and two values.
    fn to_ctrl(self) -> (u8, u64, u32);
    /// The message of a kind and its two values; `None` for an unknown kind.
    fn from_ctrl(kind: u8, a: u64, b: u32) -> Option<Self>;

    /// The header that carries this message.
    #[inline]
    fn header(self) -> Header {
        let (kind, a, b) = self.to_ctrl();
        Header::Ctrl { kind, a, b }
    }

    /// The message a header carries; `None` for another family's header or
    /// an unknown kind.
    #[inline]
    fn parse(h: &Header) -> Option<Self> {
        match *h {
            Header::Ctrl { kind, a, b } => Self::from_ctrl(kind, a, b),
            _ => None,
        }
    }
}

/// Test helper: each of `msgs` comes back from its header, and a message
/// of the family takes at most 16 bytes.
#[cfg(test)]
pub(crate) fn assert_round_trips<M: Message + PartialEq + std::fmt::Debug>(msgs: &[M]) {
    assert!(std::mem::size_of::<M>() <= 16, "{msgs:?}");
    for &m in msgs {
        assert_eq!(M::parse(&m.header()), Some(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_takes_sixteen_bytes_and_is_copy() {
        fn copy<T: Copy>() {}
        copy::<Header>();
        assert_eq!(std::mem::size_of::<Header>(), 16);
    }
}
