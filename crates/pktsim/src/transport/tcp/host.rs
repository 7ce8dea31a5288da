//! One host's TCP state (issue 33: transport state per host): the sender
//! side of the flows it sends, with their timers and its NIC waiting list,
//! the receiver side of the flows it receives, and its event counts. A
//! handler acting for a host touches only this; what it needs to know of a
//! flow's other end comes in packets.

use crate::packet::FlowId;
use crate::transport::host::lazy_timer::LazyTimer;
use crate::transport::receiver::AckReceiver;
use crate::transport::tcp::cc::Cc;
use crate::transport::tcp::handshake::Passive;
use crate::transport::tcp::reorder::Resequencer;
use crate::transport::tcp::sender::{Sender, SenderStats};

/// The sender side of one flow at its source host: kept together because
/// an ACK's handling reads all of it.
#[derive(Debug)]
pub(super) struct FlowTx<C> {
    /// `None` until the flow starts. Not boxed: the box let the old
    /// run-wide table move a sender out and back cheaply on every ACK;
    /// handlers now borrow it in place ([`Tx`]), and inline, next to its
    /// timers, it costs fewer cache misses (measured on the DCTCP bench).
    pub sender: Option<Sender<C>>,
    /// The pending RTO event (the deadline is the sender's).
    pub rto: LazyTimer,
    /// The pending notice-throttle event (FastLane).
    pub notice: LazyTimer,
    /// The pending pacing release event (paced runs).
    pub pace: LazyTimer,
    /// In the host's NIC waiting list.
    pub waiting: bool,
}

// Written out: a derive would ask the controller for `Default`.
impl<C> Default for FlowTx<C> {
    fn default() -> Self {
        FlowTx {
            sender: None,
            rto: LazyTimer::default(),
            notice: LazyTimer::default(),
            pace: LazyTimer::default(),
            waiting: false,
        }
    }
}

/// A started flow's sender side, borrowed together with the host state a
/// handler changes along with it (the NIC waiting list, the counts): the
/// borrows are disjoint, so no sender is moved out and back.
pub(super) struct Tx<'a, C> {
    /// The sender.
    pub s: &'a mut Sender<C>,
    /// Its pending RTO event.
    pub rto: &'a mut LazyTimer,
    /// Its pending notice-throttle event.
    pub notice: &'a mut LazyTimer,
    /// Its pending pacing release event.
    pub pace: &'a mut LazyTimer,
    /// Whether it is in the NIC waiting list.
    pub waiting: &'a mut bool,
    /// The host's NIC waiting list.
    pub nic_waiting: &'a mut Vec<FlowId>,
    /// The host's counts.
    pub counts: &'a mut Counts,
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
    /// SYNs sent, retransmissions included (at the source).
    pub syn_sent: u64,
    /// SYN retransmissions.
    pub syn_retransmits: u64,
    /// SYN-ACKs sent, retransmissions included (at the destination).
    pub synack_sent: u64,
    /// SYN-ACK retransmissions (timer or duplicate SYN).
    pub synack_retransmits: u64,
    /// Pacing held a flow's next packet back and armed its release timer.
    pub pacing_delays: u64,
}

/// The TCP state of one host; `C` is its flows' congestion controller.
#[derive(Debug)]
pub struct TcpHost<C = Cc> {
    /// Flows this host sends, by their send slot ([`FlowSlots::send`]).
    ///
    /// [`FlowSlots::send`]: crate::transport::per_host::FlowSlots::send
    pub(super) tx: Vec<FlowTx<C>>,
    /// Flows waiting for this host's NIC to run dry, in the order they
    /// began waiting.
    pub(super) nic_waiting: Vec<FlowId>,
    /// Flows this host receives, by their receive slot.
    pub(super) rx: Vec<AckReceiver>,
    /// Their ordering shims (empty unless `reorder_window` is set).
    pub(super) reseq: Vec<Resequencer>,
    /// Their handshake states (empty unless `handshake` is on).
    pub(super) passive: Vec<Passive>,
    pub(super) counts: Counts,
}

impl<C> TcpHost<C> {
    /// A host sending `n_send` flows and receiving `n_recv`, with ordering
    /// shims if `reorder` and handshake states if `handshake`.
    pub(super) fn new(n_send: usize, n_recv: usize, reorder: bool, handshake: bool) -> Self {
        TcpHost {
            tx: (0..n_send).map(|_| FlowTx::default()).collect(),
            nic_waiting: Vec::new(),
            rx: vec![AckReceiver::default(); n_recv],
            reseq: if reorder {
                vec![Resequencer::default(); n_recv]
            } else {
                Vec::new()
            },
            passive: if handshake {
                vec![Passive::default(); n_recv]
            } else {
                Vec::new()
            },
            counts: Counts::default(),
        }
    }

    /// The sender side of the flow in send slot `slot`, if it started.
    #[inline]
    pub(super) fn tx(&mut self, slot: usize) -> Option<Tx<'_, C>> {
        let FlowTx {
            sender,
            rto,
            notice,
            pace,
            waiting,
        } = self.tx.get_mut(slot)?;
        Some(Tx {
            s: sender.as_mut()?,
            rto,
            notice,
            pace,
            waiting,
            nic_waiting: &mut self.nic_waiting,
            counts: &mut self.counts,
        })
    }

    /// The sender of the flow in send slot `slot` (`None` before it starts).
    pub fn sender(&self, slot: usize) -> Option<&Sender<C>> {
        self.tx.get(slot)?.sender.as_ref()
    }

    /// The started senders of this host, in slot (flow-id) order.
    pub fn senders(&self) -> impl Iterator<Item = &Sender<C>> {
        self.tx.iter().filter_map(|t| t.sender.as_ref())
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
