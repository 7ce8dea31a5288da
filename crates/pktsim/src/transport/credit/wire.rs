//! Messages of the credit-scheduled transports (ExpressPass, FlashPass,
//! Aeolus), all in [`Header::Ctrl`], and the packets that carry them.
//!
//! | kind | from → to | class | size | `a` | `b` |
//! |---|---|---|---|---|---|
//! | `REQ` | sender → receiver | control | 84 | packets in the flow | — |
//! | `CREDIT` (ExpressPass) | receiver → sender | credit | 84 | credit sequence | — |
//! | `CREDIT` (FlashPass) | receiver → sender | control | 84 | echoed emulation timestamp (ps) | emulation sequence |
//! | `EMU` | sender → receiver | credit | 84 | send timestamp T (ps) | emulation sequence |
//! | `DATA` | sender → receiver | data | ≤ MTU | packet index, the flow's first scheduled index in the high half | credit sequence |
//! | `ACK` | receiver → sender | control | 64 | unscheduled packet index | — |
//! | `PROBE` | sender → receiver | data (ECT), or control for [`STATUS`] | 64 | last unscheduled index, or [`STATUS`] | with `STATUS`: packets sent |
//! | `PROBE_ACK` | receiver → sender | control | 64 | echoed `a` | — |
//! | `NACK` | receiver → sender | control | 64 | first missing index | missing count |
//! | `DONE` | receiver → sender | control | 64 | — | — |
//! | `STOP` | sender → receiver | control | 84 | — | — |
//!
//! Sizes are on the wire (ExpressPass' 84 B minimum Ethernet frame with
//! preamble and gap; Aeolus' 64 B probe and ACK).

use crate::net::queue::credit_port::CREDIT_CLASS;
use crate::packet::{flags, FlowId, Header, NodeId, Packet};
use crate::transport::contract::Ctx;

/// Credit request.
pub const REQ: u8 = 0;
/// A credit.
pub const CREDIT: u8 = 1;
/// A data packet.
pub const DATA: u8 = 2;
/// A FlashPass emulation packet.
pub const EMU: u8 = 3;
/// Per-packet ACK of unscheduled data (Aeolus).
pub const ACK: u8 = 4;
/// Aeolus probe, or a status request after a retransmission timeout.
pub const PROBE: u8 = 5;
/// Answer to a probe.
pub const PROBE_ACK: u8 = 6;
/// Missing packets.
pub const NACK: u8 = 7;
/// Every packet arrived.
pub const DONE: u8 = 8;
/// ExpressPass credit stop.
pub const STOP: u8 = 9;

/// `PROBE.a` of a status request: the receiver answers with NACKs for
/// every missing packet (or `DONE`).
pub const STATUS: u64 = u64::MAX;

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

/// A message packet of flow `f` from `src` to `dst`: a control packet
/// ([`Ctx::control_packet`]) in `lane`'s class, ECN-capable.
#[allow(clippy::too_many_arguments)]
pub fn message(
    ctx: &Ctx,
    f: FlowId,
    src: NodeId,
    dst: NodeId,
    kind: u8,
    a: u64,
    b: u32,
    size: u32,
    lane: Lane,
) -> Packet {
    let mut p = ctx.control_packet(f, src, dst, size, Header::Ctrl { kind, a, b });
    p.class = match lane {
        Lane::Control => 0,
        Lane::Credit => CREDIT_CLASS,
        Lane::Scheduled => 1,
    };
    p.flags = flags::ECT;
    p
}
