//! pHost's messages (Gao et al., CoNEXT 2015, §3): the request to send, the
//! receiver's tokens, data sent for a token, and the final ACK. Each is a
//! variant with its fields; [`Header::Ctrl`] carries them, and this module
//! is the one place that knows how.
//!
//! [`Header::Ctrl`]: crate::packet::Header::Ctrl

use crate::packet::Message;

/// One pHost message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhostMsg {
    /// Sender → receiver: a new flow of `packets` packets (§3.1 RTS).
    Rts {
        /// Packets in the flow.
        packets: u32,
    },
    /// Receiver → sender: send packet `pkt`.
    Token {
        /// Packet index to send.
        pkt: u32,
        /// The token's sequence number within the flow.
        seq: u32,
        /// Packets the receiver still misses.
        remaining: u32,
    },
    /// Sender → receiver: packet `pkt`, sent for token `seq` (0: a free
    /// token).
    Data {
        /// Packet index.
        pkt: u32,
        /// The token it was sent for.
        seq: u32,
    },
    /// Receiver → sender: every packet arrived.
    Ack,
}

/// The carrier's `kind` of each message.
const RTS: u8 = 0;
const TOKEN: u8 = 1;
const DATA: u8 = 2;
const ACK: u8 = 3;

impl Message for PhostMsg {
    #[inline]
    fn to_ctrl(self) -> (u8, u64, u32) {
        match self {
            PhostMsg::Rts { packets } => (RTS, packets as u64, 0),
            PhostMsg::Token {
                pkt,
                seq,
                remaining,
            } => (TOKEN, (seq as u64) << 32 | pkt as u64, remaining),
            PhostMsg::Data { pkt, seq } => (DATA, pkt as u64, seq),
            PhostMsg::Ack => (ACK, 0, 0),
        }
    }

    #[inline]
    fn from_ctrl(kind: u8, a: u64, b: u32) -> Option<Self> {
        Some(match kind {
            RTS => PhostMsg::Rts { packets: a as u32 },
            TOKEN => PhostMsg::Token {
                pkt: a as u32,
                seq: (a >> 32) as u32,
                remaining: b,
            },
            DATA => PhostMsg::Data {
                pkt: a as u32,
                seq: b,
            },
            ACK => PhostMsg::Ack,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::header::assert_round_trips;
    use crate::packet::Header;

    #[test]
    fn every_message_survives_its_header_and_fits_sixteen_bytes() {
        assert_round_trips(&[
            PhostMsg::Rts { packets: u32::MAX },
            PhostMsg::Token {
                pkt: 7,
                seq: u32::MAX,
                remaining: 3,
            },
            PhostMsg::Data {
                pkt: u32::MAX,
                seq: 9,
            },
            PhostMsg::Ack,
        ]);
        assert_eq!(PhostMsg::parse(&Header::TcpData { seq: 0 }), None);
    }
}
