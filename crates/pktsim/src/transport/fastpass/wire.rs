//! Fastpass' messages, for both models: FCP between the hosts and the
//! arbiter (Perry et al., SIGCOMM 2014, §5: requests, their ACKs, the
//! arbiter's allocations) with data and per-packet data ACKs, and the pHost
//! paper's epoch model (RTS to the arbiter, its per-epoch schedules).
//! Requests, allocations and schedules name an entry of the run's
//! mailbox (`mailbox.rs`) by its sequence number at the sending host. [`Header::Ctrl`] carries them; this module is the one
//! place that knows how.
//!
//! [`Header::Ctrl`]: crate::packet::Header::Ctrl

use crate::packet::Message;

/// One message of the arbiter model ([`super::Fastpass`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcpMsg {
    /// Host → arbiter: demands, in the mailbox under `seq`.
    Req {
        /// Sequence number of the request at its host.
        seq: u64,
    },
    /// Arbiter → host: request `seq` arrived.
    ReqAck {
        /// The request's sequence number.
        seq: u64,
    },
    /// Arbiter → host: allocated timeslots, in the mailbox under `seq`.
    Alloc {
        /// Sequence number of the allocation at the arbiter.
        seq: u64,
    },
    /// Sender → receiver: packet `pkt` of the flow.
    Data {
        /// Packet index.
        pkt: u32,
    },
    /// Receiver → sender: packet `pkt` arrived.
    DataAck {
        /// Packet index.
        pkt: u32,
    },
}

const REQ: u8 = 0;
const REQ_ACK: u8 = 1;
const ALLOC: u8 = 2;
const DATA: u8 = 3;
const DATA_ACK: u8 = 4;

impl Message for FcpMsg {
    #[inline]
    fn to_ctrl(self) -> (u8, u64, u32) {
        match self {
            FcpMsg::Req { seq } => (REQ, seq, 0),
            FcpMsg::ReqAck { seq } => (REQ_ACK, seq, 0),
            FcpMsg::Alloc { seq } => (ALLOC, seq, 0),
            FcpMsg::Data { pkt } => (DATA, pkt as u64, 0),
            FcpMsg::DataAck { pkt } => (DATA_ACK, pkt as u64, 0),
        }
    }

    #[inline]
    fn from_ctrl(kind: u8, a: u64, _: u32) -> Option<Self> {
        Some(match kind {
            REQ => FcpMsg::Req { seq: a },
            REQ_ACK => FcpMsg::ReqAck { seq: a },
            ALLOC => FcpMsg::Alloc { seq: a },
            DATA => FcpMsg::Data { pkt: a as u32 },
            DATA_ACK => FcpMsg::DataAck { pkt: a as u32 },
            _ => return None,
        })
    }
}

/// One message of the epoch model ([`super::epoch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochMsg {
    /// Sender → arbiter: the flow has `remaining` packets left to request;
    /// `done` once every packet is acknowledged.
    Rts {
        /// Packets not yet requested.
        remaining: u32,
        /// The flow is finished.
        done: bool,
    },
    /// Arbiter → host: an epoch's schedule, in the mailbox under `seq`.
    Schedule {
        /// Sequence number of the schedule at the arbiter.
        seq: u64,
    },
    /// Sender → receiver: packet `pkt` of the flow.
    Data {
        /// Packet index.
        pkt: u32,
    },
    /// Receiver → sender: packet `pkt` arrived.
    DataAck {
        /// Packet index.
        pkt: u32,
    },
}

const E_RTS: u8 = 0;
const E_SCHEDULE: u8 = 1;
const E_DATA: u8 = 2;
const E_DATA_ACK: u8 = 3;

impl Message for EpochMsg {
    #[inline]
    fn to_ctrl(self) -> (u8, u64, u32) {
        match self {
            EpochMsg::Rts { remaining, done } => (E_RTS, remaining as u64, done as u32),
            EpochMsg::Schedule { seq } => (E_SCHEDULE, seq, 0),
            EpochMsg::Data { pkt } => (E_DATA, pkt as u64, 0),
            EpochMsg::DataAck { pkt } => (E_DATA_ACK, pkt as u64, 0),
        }
    }

    #[inline]
    fn from_ctrl(kind: u8, a: u64, b: u32) -> Option<Self> {
        Some(match kind {
            E_RTS => EpochMsg::Rts {
                remaining: a as u32,
                done: b != 0,
            },
            E_SCHEDULE => EpochMsg::Schedule { seq: a },
            E_DATA => EpochMsg::Data { pkt: a as u32 },
            E_DATA_ACK => EpochMsg::DataAck { pkt: a as u32 },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::header::assert_round_trips;

    #[test]
    fn every_message_survives_its_header_and_fits_sixteen_bytes() {
        assert_round_trips(&[
            FcpMsg::Req { seq: u64::MAX },
            FcpMsg::ReqAck { seq: 1 },
            FcpMsg::Alloc { seq: 1 << 40 },
            FcpMsg::Data { pkt: u32::MAX },
            FcpMsg::DataAck { pkt: 5 },
        ]);
        assert_round_trips(&[
            EpochMsg::Rts {
                remaining: 9,
                done: false,
            },
            EpochMsg::Rts {
                remaining: 0,
                done: true,
            },
            EpochMsg::Schedule { seq: u64::MAX },
            EpochMsg::Data { pkt: 3 },
            EpochMsg::DataAck { pkt: u32::MAX },
        ]);
    }
}
