//! Where the contents of Fastpass' control messages (requests, allocations,
//! schedules) wait while their packet is on the wire. A packet is a small
//! `Copy` value that carries one number (the `seq` of an
//! [`FcpMsg`](super::wire::FcpMsg) or [`EpochMsg`](super::wire::EpochMsg)),
//! the message's sequence number at its sending host; the contents sit
//! here, under the key (sending host, sequence number).
//!
//! The mailbox is the only state of a Fastpass run that two hosts touch,
//! and only in a fixed order: the sender posts a message before its packet
//! leaves, the receiver takes it when that packet arrives (the message of a
//! lost packet stays, as it did when messages were kept in one table). Its
//! result cannot depend on the order in which hosts run: keys are per-host
//! sequences, so a host's numbering depends only on its own events; a key
//! is posted once and taken at most once, by the one host its packet goes
//! to; and nothing iterates the map, so its order decides nothing. The lock
//! is there for a run whose hosts are handled by several threads: messages
//! are per request or per batch of slots, not per packet, so it is rarely
//! taken.

use crate::packet::NodeId;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Messages in flight, by (sending host, that host's sequence number).
#[derive(Debug)]
pub(crate) struct Mailbox<M> {
    messages: Mutex<HashMap<(NodeId, u64), M>>,
}

impl<M> Default for Mailbox<M> {
    fn default() -> Self {
        Mailbox {
            messages: Mutex::new(HashMap::new()),
        }
    }
}

impl<M> Mailbox<M> {
    fn lock(&self) -> MutexGuard<'_, HashMap<(NodeId, u64), M>> {
        // A thread that panicked while holding the lock left the map as
        // it was between two whole operations: still usable.
        self.messages
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `from` posts message `seq` (its own numbering), before the packet
    /// that names it leaves.
    pub(crate) fn post(&self, from: NodeId, seq: u64, message: M) {
        let old = self.lock().insert((from, seq), message);
        debug_assert!(
            old.is_none(),
            "message {seq} of host {} posted twice",
            from.0
        );
    }

    /// The receiver of the packet from `from` naming `seq` takes the message.
    pub(crate) fn take(&self, from: NodeId, seq: u64) -> Option<M> {
        self.lock().remove(&(from, seq))
    }
}

/// A host's numbering of the messages it sends: 0, 1, 2, … in the order it
/// sends them, whatever other hosts do.
#[derive(Clone, Debug, Default)]
pub(crate) struct MessageSeq {
    next: u64,
}

impl MessageSeq {
    /// The next sequence number.
    pub(crate) fn next(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_taken_once_by_its_sender_and_number() {
        let m: Mailbox<&str> = Mailbox::default();
        let (mut a, mut b) = (MessageSeq::default(), MessageSeq::default());
        let (sa, sb) = (a.next(), b.next());
        assert_eq!((sa, sb), (0, 0));
        m.post(NodeId(1), sa, "from 1");
        m.post(NodeId(2), sb, "from 2");
        assert_eq!(m.take(NodeId(2), 0), Some("from 2"));
        assert_eq!(m.take(NodeId(2), 0), None);
        assert_eq!(m.take(NodeId(1), 0), Some("from 1"));
        assert_eq!(a.next(), 1);
    }
}
