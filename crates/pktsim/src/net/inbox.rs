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
/// What an arrival reads fits one cache line (the ring's header, the
/// receiving node and how it forwards), aligned so that it does: an
/// arrival loads this line and the head packet, not the sending port.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct LinkInbox {
    /// (arrival time, packet), in order of arrival: a link delivers in the
    /// order it sends.
    packets: VecDeque<(Time, Packet)>,
    /// The node the link leads to, which owns the inbox and its events.
    to: NodeId,
    /// Whether `to` forwards cut-through: it then shortens an arriving
    /// packet's ready time by its next transmission (a copy of the sending
    /// port's flag, so that an arrival need not read that port).
    cut_through: bool,
    /// Packets dropped on arrival, by [`ArrivalDrop`]: for crossing too
    /// many links, or lost on this link's wire (it went down, or it is
    /// lossy). Counted here, on the receiving side, where the drop is seen.
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
            packets: VecDeque::new(),
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
        for (_, p) in &mut self.packets {
            if p.hops < crate::net::fault::LOST_MARK {
                p.hops = crate::net::fault::LOST_TO_LINK_DOWN;
                n += 1;
            }
        }
        n
    }

    /// The arrival time of the last packet on the link, if any.
    pub fn last_arrival(&self) -> Option<Time> {
        self.packets.back().map(|(t, _)| *t)
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
        self.packets.len()
    }

    /// Whether the link is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The next packet to arrive and its arrival time.
    #[inline]
    pub fn head(&self) -> Option<&(Time, Packet)> {
        self.packets.front()
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
        let was_empty = self.packets.is_empty();
        self.packets.push_back((arrival, pkt));
        if let Some((_, sent)) = self.packets.back_mut() {
            sent.ready_at = ready_at;
            sent.hops = hops;
        }
        was_empty
    }

    /// Take the head packet, which has arrived, and schedule the next one's
    /// arrival for the receiving node (`link` names the event), or, with
    /// the link empty, move the ring back to its start. A ring that kept
    /// going round would cycle through every slot it ever grew to, each one
    /// cold by the time it is written again; one that restarts when empty
    /// reuses the same few, still cached (most links hold one or two
    /// packets at a time).
    #[inline(always)]
    pub(crate) fn take_head<E: From<NetEvent> + Copy>(
        &mut self,
        link: PortId,
        ev: &mut EventQueue<E>,
    ) -> Option<Packet> {
        let (_, pkt) = self.packets.pop_front()?;
        match self.packets.front() {
            Some(&(next, _)) => NetEvent::Arrive(link).schedule_for(self.to, next, ev),
            None => self.packets.clear(),
        }
        Some(pkt)
    }

    /// Empty the link, yielding its packets (end of run).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        self.packets.drain(..).map(|(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(tie, NetEvent::Arrive(PortId(7)).tie(NodeId(1)));
        assert_eq!(
            inbox.take_head(PortId(7), &mut ev).map(|p| p.size),
            Some(700)
        );
        assert!(inbox.is_empty() && ev.pop().is_none());
        assert!(inbox.take_head::<NetEvent>(PortId(7), &mut ev).is_none());
    }
}
