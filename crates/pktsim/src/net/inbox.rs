//! A link's inbox: the packets on a link, held by the side they travel to.
//!
//! A port that puts a packet on the wire hands it to the inbox of the node
//! at the far end, with its arrival time; only that node takes it out, at
//! the link's `Arrive` event. So the receiving side of a link reads its
//! inbox and not the sending port's state, and a packet in flight belongs
//! to the node whose event will see it (`docs/engine.md`, "Who owns an
//! event"). In a partitioned run the inbox lives with the receiver's piece,
//! and the sender's hand-over is what crosses between pieces.

use crate::engine::EventQueue;
use crate::metrics::DropReason;
use crate::net::event::NetEvent;
use crate::packet::{NodeId, Packet, PortId};
use crate::time::Time;
use std::collections::VecDeque;

/// The packets on one direction of a link, in order, with their arrival
/// times at the node the link leads to.
///
/// The next packet to arrive is kept in the inbox itself, beside what an
/// arrival reads (the receiving node, how it forwards), and only the
/// packets behind it in a ring of their own: most links carry one packet
/// at a time, and a send and an arrival then touch the inbox's first two
/// lines and nothing else. With the whole ring apart, each touched the
/// inbox's line and the ring's first slot, a 72-byte slot usually across
/// two lines of a separate allocation: on a k = 32 fat tree (49,152
/// links) those were the largest growth of last-level misses per hop over
/// k = 16 (BENCHMARKS.md, "Locality").
#[derive(Debug)]
#[repr(C, align(64))]
pub struct LinkInbox {
    /// (arrival time, packet) of the next packet to arrive; `None` when
    /// the link is empty.
    head: Option<(Time, Packet)>,
    /// The node the link leads to, which owns the inbox and its events.
    to: NodeId,
    /// Whether `to` forwards cut-through: it then shortens an arriving
    /// packet's ready time by its next transmission (a copy of the sending
    /// port's flag, so that an arrival need not read that port).
    cut_through: bool,
    /// The packets behind `head`, in order of arrival: a link delivers in
    /// the order it sends.
    rest: VecDeque<(Time, Packet)>,
    /// Packets dropped on arrival, by [`ArrivalDrop`]: for crossing too
    /// many links, or lost on this link's wire (it went down, or it is
    /// lossy). Counted here, on the receiving side, where the drop is seen;
    /// last, on a line a hop does not read.
    arrival_drops: [u64; ArrivalDrop::COUNT],
}

/// The drops a link's receiving side counts, with the reason each is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalDrop {
    /// Crossed the hop limit ([`DropReason::HopLimit`]).
    HopLimit = 0,
    /// On the wire when the link went down ([`DropReason::LinkDown`]).
    LinkDown = 1,
    /// Lost by a lossy link ([`DropReason::LinkLoss`]).
    LinkLoss = 2,
}

impl ArrivalDrop {
    /// Number of kinds.
    pub const COUNT: usize = 3;
    /// All kinds, in index order.
    pub const ALL: [ArrivalDrop; 3] = [
        ArrivalDrop::HopLimit,
        ArrivalDrop::LinkDown,
        ArrivalDrop::LinkLoss,
    ];

    /// The drop reason it is.
    pub fn reason(self) -> DropReason {
        match self {
            ArrivalDrop::HopLimit => DropReason::HopLimit,
            ArrivalDrop::LinkDown => DropReason::LinkDown,
            ArrivalDrop::LinkLoss => DropReason::LinkLoss,
        }
    }
}

impl LinkInbox {
    /// An empty inbox for the link into `to`.
    pub fn new(to: NodeId, cut_through: bool) -> Self {
        LinkInbox {
            head: None,
            rest: VecDeque::new(),
            to,
            cut_through,
            arrival_drops: [0; ArrivalDrop::COUNT],
        }
    }

    /// Packets dropped on arrival over this link for their hop count.
    pub fn hop_limit_drops(&self) -> u64 {
        self.arrival_drops[ArrivalDrop::HopLimit as usize]
    }

    /// Packets this link's receiving side dropped, of kind `kind`.
    pub fn arrival_drops(&self, kind: ArrivalDrop) -> u64 {
        self.arrival_drops[kind as usize]
    }

    /// Count one packet dropped on arrival.
    pub(crate) fn count_arrival_drop(&mut self, kind: ArrivalDrop) {
        self.arrival_drops[kind as usize] += 1;
    }

    /// Mark every packet on the link lost to its failure, keeping them in
    /// order until their arrival, where they are counted and discarded
    /// (the link's one pending arrival event stays valid). A packet a lossy
    /// link lost already stays marked so. Returns how many were marked.
    pub(crate) fn lose_all(&mut self) -> usize {
        let mut n = 0;
        for (_, p) in self.head.iter_mut().chain(self.rest.iter_mut()) {
            if p.hops < crate::net::fault::LOST_MARK {
                p.hops = crate::net::fault::LOST_TO_LINK_DOWN;
                n += 1;
            }
        }
        n
    }

    /// The arrival time of the last packet on the link, if any.
    pub fn last_arrival(&self) -> Option<Time> {
        self.rest.back().or(self.head.as_ref()).map(|(t, _)| *t)
    }

    /// The node the link leads to.
    #[inline]
    pub fn to(&self) -> NodeId {
        self.to
    }

    /// Whether the receiving node forwards cut-through.
    #[inline]
    pub fn cut_through(&self) -> bool {
        self.cut_through
    }

    /// Packets on the link.
    #[inline]
    pub fn len(&self) -> usize {
        self.head.is_some() as usize + self.rest.len()
    }

    /// Whether the link is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// The next packet to arrive and its arrival time.
    #[inline]
    pub fn head(&self) -> Option<&(Time, Packet)> {
        self.head.as_ref()
    }

    /// Hand `pkt` to the link, to arrive at `arrival`, ready (its last bit
    /// in) at `ready_at`, having crossed `hops` links. Returns whether the
    /// link was empty: the caller then schedules the `Arrive` event, since a
    /// link has one pending event at most, for its head packet.
    ///
    /// The packet is copied in first and its ready time and hop count are
    /// set there: changing the caller's copy's fields and then copying it
    /// whole loads, in 16-byte pieces, bytes just stored in smaller ones (a
    /// failed store forward).
    #[inline(always)]
    pub(crate) fn put(&mut self, arrival: Time, pkt: Packet, ready_at: Time, hops: u8) -> bool {
        let was_empty = self.head.is_none();
        let sent = if was_empty {
            Some(self.head.insert((arrival, pkt)))
        } else {
            self.rest.push_back((arrival, pkt));
            self.rest.back_mut()
        };
        if let Some((_, sent)) = sent {
            sent.ready_at = ready_at;
            sent.hops = hops;
        }
        was_empty
    }

    /// Let go of the head packet, which has arrived and which the caller
    /// has copied out of [`LinkInbox::head`], and schedule the next one's
    /// arrival for the receiving node (`link` names the event), moving it
    /// into the head's place; with no packet behind it, move the ring
    /// back to its start. A ring that kept going round would cycle through
    /// every slot it ever grew to, each one cold by the time it is written
    /// again; one that restarts when empty reuses the same few, still
    /// cached.
    #[inline(always)]
    pub(crate) fn pop_head<E: From<NetEvent> + Copy>(
        &mut self,
        link: PortId,
        ev: &mut EventQueue<E>,
    ) {
        match self.rest.pop_front() {
            Some(next) => {
                NetEvent::Arrive(link).schedule_for(self.to, next.0, ev);
                self.head = Some(next);
                if self.rest.is_empty() {
                    self.rest.clear();
                }
            }
            None => self.head = None,
        }
    }

    /// The head packet, taken: [`LinkInbox::head`] then
    /// [`LinkInbox::pop_head`] (the hop does the two itself, copying the
    /// packet straight into its own slot).
    #[cfg(test)]
    fn take_head<E: From<NetEvent> + Copy>(
        &mut self,
        link: PortId,
        ev: &mut EventQueue<E>,
    ) -> Option<Packet> {
        let pkt = self.head.as_ref()?.1;
        self.pop_head(link, ev);
        Some(pkt)
    }

    /// Empty the link, yielding its packets (end of run).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        let head = self.head.take();
        head.into_iter().chain(self.rest.drain(..)).map(|(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout [`LinkInbox`]'s documentation describes: what a send and
    /// an arrival read, the head packet included, lies on its first two
    /// lines.
    #[test]
    fn what_a_hop_reads_of_an_inbox_lies_on_two_lines() {
        assert_eq!(std::mem::align_of::<LinkInbox>(), 64);
        assert!(offset_of!(LinkInbox, head) + size_of::<Option<(Time, Packet)>>() <= 128);
        assert!(offset_of!(LinkInbox, to) + size_of::<NodeId>() <= 128);
        assert!(offset_of!(LinkInbox, cut_through) < 128);
        assert!(offset_of!(LinkInbox, rest) + size_of::<VecDeque<(Time, Packet)>>() <= 128);
    }

    #[test]
    fn an_inbox_hands_packets_over_in_order_with_one_event_at_a_time() {
        let mut ev: EventQueue<NetEvent> = EventQueue::with_salt(1);
        let mut inbox = LinkInbox::new(NodeId(1), false);
        assert!(inbox.put(Time(10), Packet::test_data(0, 1500, 0), Time(10), 1));
        assert!(!inbox.put(Time(20), Packet::test_data(0, 700, 1), Time(20), 1));
        assert_eq!(inbox.len(), 2);
        assert_eq!(inbox.head().map(|h| h.0), Some(Time(10)));
        // The first packet's event is the caller's to schedule; taking it
        // schedules the second one's, for the receiving node.
        let first = inbox.take_head(PortId(7), &mut ev).expect("a packet");
        assert_eq!(
            (first.size, first.hops, first.ready_at),
            (1500, 1, Time(10))
        );
        let (at, tie, e) = ev.pop().expect("the next arrival");
        assert_eq!((at, e), (Time(20), NetEvent::Arrive(PortId(7))));
        assert_eq!(tie.tie(), NetEvent::Arrive(PortId(7)).tie(NodeId(1)));
        assert_eq!(
            inbox.take_head(PortId(7), &mut ev).map(|p| p.size),
            Some(700)
        );
        assert!(inbox.is_empty() && ev.pop().is_none());
        assert!(inbox.take_head::<NetEvent>(PortId(7), &mut ev).is_none());
    }

    /// Packets behind the head keep their order through every take, a
    /// failure's marking and the end-of-run drain, and the link's last
    /// arrival is the last one put.
    #[test]
    fn packets_behind_the_head_keep_their_order() {
        let mut ev: EventQueue<NetEvent> = EventQueue::with_salt(1);
        let mut inbox = LinkInbox::new(NodeId(1), false);
        for (i, t) in [10, 20, 30, 40].into_iter().enumerate() {
            let first = inbox.put(Time(t), Packet::test_data(0, 100 + i as u32, 0), Time(t), 2);
            assert_eq!(first, i == 0);
            assert_eq!(inbox.last_arrival(), Some(Time(t)));
        }
        assert_eq!(inbox.len(), 4);
        let p = inbox.take_head(PortId(3), &mut ev).expect("a packet");
        assert_eq!((p.size, p.hops), (100, 2));
        assert_eq!(inbox.head().map(|h| (h.0, h.1.size)), Some((Time(20), 101)));
        assert_eq!(ev.pop().map(|e| e.0), Some(Time(20)));
        assert_eq!(inbox.lose_all(), 3);
        let left: Vec<(u32, u8)> = inbox.drain().map(|p| (p.size, p.hops)).collect();
        let lost = crate::net::fault::LOST_TO_LINK_DOWN;
        assert_eq!(left, vec![(101, lost), (102, lost), (103, lost)]);
        assert!(inbox.is_empty() && inbox.last_arrival().is_none());
    }
}
