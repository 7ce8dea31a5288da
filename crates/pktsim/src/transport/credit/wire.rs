//! Messages of the credit-scheduled transports (ExpressPass, FlashPass,
//! Aeolus): [`CreditMsg`], one variant per message with its fields, carried
//! in [`Header::Ctrl`] (this module is the one place that knows how), and
//! the packets that carry them.
//!
//! [`Header::Ctrl`]: crate::packet::Header::Ctrl
//!
//! | message | from → to | class | size |
//! |---|---|---|---|
//! | `Req` | sender → receiver | control | 84 |
//! | `Credit` (ExpressPass) | receiver → sender | credit | 84 |
//! | `EchoCredit` (FlashPass) | receiver → sender | control | 84 |
//! | `Emu` | sender → receiver | credit | 84 |
//! | `Data` | sender → receiver | data | ≤ MTU |
//! | `Ack` | receiver → sender | control | 64 |
//! | `Probe` | sender → receiver | data (ECT) | 64 |
//! | `Status` | sender → receiver | control | 64 |
//! | `ProbeAck` | receiver → sender | control | 64 |
//! | `Nack` | receiver → sender | control | 64 |
//! | `Done` | receiver → sender | control | 64 |
//! | `Stop` | sender → receiver | control | 84 |
//!
//! Sizes are on the wire (ExpressPass' 84 B minimum Ethernet frame with
//! preamble and gap; Aeolus' 64 B probe and ACK).

use crate::net::queue::credit_port::CREDIT_CLASS;
use crate::packet::{flags, FlowId, Message, NodeId, Packet};
use crate::time::Time;
use crate::transport::contract::Ctx;

/// One message of a credit transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreditMsg {
    /// ExpressPass: ask the receiver for credits for a flow of `packets`.
    Req {
        /// Packets in the flow.
        packets: u32,
    },
    /// ExpressPass: a credit, the receiver's `seq`-th for the flow.
    Credit {
        /// Credit sequence number (from 1).
        seq: u32,
    },
    /// FlashPass: the credit for emulation packet `seq`, echoing its send
    /// time T.
    EchoCredit {
        /// When the emulation packet left its sender.
        sent: Time,
        /// Its emulation sequence number.
        seq: u32,
    },
    /// FlashPass: an emulation packet, sent at `sent`.
    Emu {
        /// Send time T.
        sent: Time,
        /// Emulation sequence number.
        seq: u32,
    },
    /// A data packet: index `pkt`; the receiver finds scheduled losses as
    /// gaps from `first_scheduled` on. `credit_seq` echoes the credit that
    /// released it (0: none).
    Data {
        /// Packet index.
        pkt: u32,
        /// The flow's first scheduled packet index (Aeolus sent the ones
        /// before unscheduled).
        first_scheduled: u32,
        /// The ExpressPass credit it answers, for the receiver's loss count.
        credit_seq: u32,
    },
    /// Aeolus: ACK of unscheduled packet `pkt`.
    Ack {
        /// Packet index.
        pkt: u32,
    },
    /// Aeolus: the probe behind the last unscheduled packet, `last`.
    Probe {
        /// Index of the last unscheduled packet.
        last: u32,
    },
    /// After a retransmission timeout: the receiver answers with NACKs of
    /// every missing packet of the first `sent`, or `Done`.
    Status {
        /// Packets the sender has sent.
        sent: u32,
    },
    /// Answer to a `Probe`, echoing its `last`.
    ProbeAck {
        /// The probe's `last`.
        last: u32,
    },
    /// Packets `first..first + count` are missing.
    Nack {
        /// First missing index.
        first: u32,
        /// How many in a row.
        count: u32,
    },
    /// Every packet arrived.
    Done,
    /// ExpressPass: everything is sent, stop crediting.
    Stop,
}

/// The carrier's `kind` of each message.
const REQ: u8 = 0;
const CREDIT: u8 = 1;
const DATA: u8 = 2;
const EMU: u8 = 3;
const ACK: u8 = 4;
const PROBE: u8 = 5;
const PROBE_ACK: u8 = 6;
const NACK: u8 = 7;
const DONE: u8 = 8;
const STOP: u8 = 9;
const ECHO_CREDIT: u8 = 10;

/// `a` of a `PROBE` that asks for the receiver's status.
const STATUS: u64 = u64::MAX;

impl Message for CreditMsg {
    #[inline]
    fn to_ctrl(self) -> (u8, u64, u32) {
        match self {
            CreditMsg::Req { packets } => (REQ, packets as u64, 0),
            CreditMsg::Credit { seq } => (CREDIT, seq as u64, 0),
            CreditMsg::EchoCredit { sent, seq } => (ECHO_CREDIT, sent.ps(), seq),
            CreditMsg::Emu { sent, seq } => (EMU, sent.ps(), seq),
            CreditMsg::Data {
                pkt,
                first_scheduled,
                credit_seq,
            } => (
                DATA,
                pkt as u64 | (first_scheduled as u64) << 32,
                credit_seq,
            ),
            CreditMsg::Ack { pkt } => (ACK, pkt as u64, 0),
            CreditMsg::Probe { last } => (PROBE, last as u64, 0),
            CreditMsg::Status { sent } => (PROBE, STATUS, sent),
            CreditMsg::ProbeAck { last } => (PROBE_ACK, last as u64, 0),
            CreditMsg::Nack { first, count } => (NACK, first as u64, count),
            CreditMsg::Done => (DONE, 0, 0),
            CreditMsg::Stop => (STOP, 0, 0),
        }
    }

    #[inline]
    fn from_ctrl(kind: u8, a: u64, b: u32) -> Option<Self> {
        Some(match kind {
            REQ => CreditMsg::Req { packets: a as u32 },
            CREDIT => CreditMsg::Credit { seq: a as u32 },
            ECHO_CREDIT => CreditMsg::EchoCredit {
                sent: Time(a),
                seq: b,
            },
            EMU => CreditMsg::Emu {
                sent: Time(a),
                seq: b,
            },
            DATA => CreditMsg::Data {
                pkt: a as u32,
                first_scheduled: (a >> 32) as u32,
                credit_seq: b,
            },
            ACK => CreditMsg::Ack { pkt: a as u32 },
            PROBE if a == STATUS => CreditMsg::Status { sent: b },
            PROBE => CreditMsg::Probe { last: a as u32 },
            PROBE_ACK => CreditMsg::ProbeAck { last: a as u32 },
            NACK => CreditMsg::Nack {
                first: a as u32,
                count: b,
            },
            DONE => CreditMsg::Done,
            STOP => CreditMsg::Stop,
            _ => return None,
        })
    }
}

/// Size of credits, emulation packets, requests and stops.
pub const CREDIT_BYTES: u32 = 84;
/// Size of ACKs, probes, NACKs and DONE.
pub const SMALL_BYTES: u32 = 64;

/// Which FIFO of a credit port a message uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Control: first, no rate limit.
    Control,
    /// Rate-limited credit FIFO.
    Credit,
    /// Data FIFO, protected (ECT) from selective dropping.
    Scheduled,
}

/// A message packet of flow `f` from its sender to its receiver.
#[inline]
pub fn to_receiver(ctx: &Ctx, f: FlowId, msg: CreditMsg, size: u32, lane: Lane) -> Packet {
    let spec = ctx.flow(f);
    message(ctx, f, spec.src, spec.dst, msg, size, lane)
}

/// A message packet of flow `f` from its receiver back to its sender.
#[inline]
pub fn to_sender(ctx: &Ctx, f: FlowId, msg: CreditMsg, size: u32, lane: Lane) -> Packet {
    let spec = ctx.flow(f);
    message(ctx, f, spec.dst, spec.src, msg, size, lane)
}

/// A message packet of flow `f` from `src` to `dst`: a control packet
/// ([`Ctx::control_packet`]) in `lane`'s class, ECN-capable.
#[inline]
fn message(
    ctx: &Ctx,
    f: FlowId,
    src: NodeId,
    dst: NodeId,
    msg: CreditMsg,
    size: u32,
    lane: Lane,
) -> Packet {
    let mut p = ctx.control_packet(f, src, dst, size, msg.header());
    p.class = match lane {
        Lane::Control => 0,
        Lane::Credit => CREDIT_CLASS,
        Lane::Scheduled => 1,
    };
    p.flags = flags::ECT;
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::header::assert_round_trips;

    #[test]
    fn every_message_survives_its_header_and_fits_sixteen_bytes() {
        assert_round_trips(&[
            CreditMsg::Req { packets: u32::MAX },
            CreditMsg::Credit { seq: 7 },
            CreditMsg::EchoCredit {
                sent: Time(u64::MAX - 1),
                seq: 3,
            },
            CreditMsg::Emu {
                sent: Time(12_345),
                seq: u32::MAX,
            },
            CreditMsg::Data {
                pkt: u32::MAX,
                first_scheduled: 4,
                credit_seq: 9,
            },
            CreditMsg::Ack { pkt: 1 },
            CreditMsg::Probe { last: u32::MAX },
            CreditMsg::Status { sent: 17 },
            CreditMsg::ProbeAck { last: 0 },
            CreditMsg::Nack { first: 2, count: 5 },
            CreditMsg::Done,
            CreditMsg::Stop,
        ]);
    }
}
