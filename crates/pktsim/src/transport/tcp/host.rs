//! One host's TCP state (issue 33: transport state per host): the sender
//! side of the flows it sends, with their timers and its NIC waiting list,
//! the receiver side of the flows it receives, and its event counts. A
//! handler acting for a host touches only this; what it needs to know of a
//! flow's other end comes in packets.

use crate::packet::FlowId;
use crate::transport::host::lazy_timer::LazyTimer;
use crate::transport::receiver::AckReceiver;
use crate::transport::tcp::reorder::Resequencer;
use crate::transport::tcp::sender::{Sender, SenderStats};

/// The sender side of one flow at its source host: kept together because
/// an ACK's handling reads all of it (one cache line for two flows).
#[derive(Debug, Default)]
pub(super) struct FlowTx {
    /// `None` until the flow starts. Boxed: a handler takes the sender out
    /// while it works on it (the host's other fields stay free to borrow),
    /// and a 570-byte sender moved out and back on every ACK was 3 % of a
    /// run in `memcpy`; a box moves 8 bytes.
    pub sender: Option<Box<Sender>>,
    /// The pending RTO event (the deadline is the sender's).
    pub rto: LazyTimer,
    /// The pending notice-throttle event (FastLane).
    pub notice: LazyTimer,
    /// In the host's NIC waiting list.
    pub waiting: bool,
}

/// A host's counts written to `summary.json` (summed over hosts).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    /// Data the receiver already held (at the receiving host).
    pub dup_deliveries: u64,
    /// A flow began waiting for its NIC to run dry (at the sending host).
    pub nic_waits: u64,
    /// An RTO put off because the flow's data was still in its NIC.
    pub rto_deferred: u64,
}

/// The TCP state of one host.
#[derive(Debug, Default)]
pub struct TcpHost {
    /// Flows this host sends, by their send slot ([`FlowSlots::send`]).
    ///
    /// [`FlowSlots::send`]: crate::transport::per_host::FlowSlots::send
    pub(super) tx: Vec<FlowTx>,
    /// Flows waiting for this host's NIC to run dry, in the order they
    /// began waiting.
    pub(super) nic_waiting: Vec<FlowId>,
    /// Flows this host receives, by their receive slot.
    pub(super) rx: Vec<AckReceiver>,
    /// Their ordering shims (empty unless `reorder_window` is set).
    pub(super) reseq: Vec<Resequencer>,
    pub(super) counts: Counts,
}

impl TcpHost {
    /// A host sending `n_send` flows and receiving `n_recv`, with ordering
    /// shims if `reorder`.
    pub(super) fn new(n_send: usize, n_recv: usize, reorder: bool) -> Self {
        TcpHost {
            tx: (0..n_send).map(|_| FlowTx::default()).collect(),
            nic_waiting: Vec::new(),
            rx: vec![AckReceiver::default(); n_recv],
            reseq: if reorder {
                vec![Resequencer::default(); n_recv]
            } else {
                Vec::new()
            },
            counts: Counts::default(),
        }
    }

    /// The sender of the flow in send slot `slot` (`None` before it starts).
    pub fn sender(&self, slot: usize) -> Option<&Sender> {
        self.tx.get(slot)?.sender.as_deref()
    }

    /// The started senders of this host, in slot (flow-id) order.
    pub fn senders(&self) -> impl Iterator<Item = &Sender> {
        self.tx.iter().filter_map(|t| t.sender.as_deref())
    }

    /// Sender event counts summed over this host's flows.
    pub fn sender_stats(&self) -> SenderStats {
        let mut total = SenderStats::default();
        for s in self.senders() {
            total += s.stats;
        }
        total
    }
}
