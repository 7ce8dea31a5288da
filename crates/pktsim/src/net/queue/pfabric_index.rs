//! The large-queue form of pFabric's queue: packets indexed by (priority,
//! arrival) and by (flow, arrival), so that dequeue, the drop choice and
//! admission cost O(log n) instead of a scan. Host NICs under pFabric hold
//! every window of every active flow of the host (hundreds of packets on
//! the web search runs), where the scans dominated the run time; switch
//! buffers stay small and keep the plain vector ([`super::pfabric`]).
//!
//! The rules are those of the vector form exactly (a test replays random
//! operations through both): arrival order is the sequence number given at
//! enqueue.

use crate::packet::Packet;
use std::collections::BTreeSet;

/// Packets held, with the two indexes.
#[derive(Debug, Default)]
pub struct PrioIndex {
    /// Packet storage; `None` marks a free slot.
    slots: Vec<Option<Packet>>,
    free: Vec<u32>,
    /// Sequence number of the next arrival.
    next_seq: u64,
    /// (priority, arrival, slot): the most urgent first.
    by_prio: BTreeSet<(u32, u64, u32)>,
    /// (flow, arrival, slot): each flow's packets in arrival order.
    by_flow: BTreeSet<(u32, u64, u32)>,
}

impl PrioIndex {
    /// Packets held.
    pub fn len(&self) -> usize {
        self.by_prio.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.by_prio.is_empty()
    }

    /// Add a packet as the latest arrival.
    pub fn push(&mut self, pkt: Packet) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let (prio, flow) = (pkt.prio, pkt.flow.0);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(pkt);
                s
            }
            None => {
                self.slots.push(Some(pkt));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_prio.insert((prio, seq, slot));
        self.by_flow.insert((flow, seq, slot));
    }

    fn take(&mut self, prio: u32, flow: u32, seq: u64, slot: u32) -> Packet {
        self.by_prio.remove(&(prio, seq, slot));
        self.by_flow.remove(&(flow, seq, slot));
        self.free.push(slot);
        self.slots[slot as usize]
            .take()
            .expect("indexed slot holds a packet")
    }

    /// Remove the least urgent packet of at least `min_size` bytes (the
    /// latest among equals); whether it was the latest arrival, and it.
    pub fn pop_least_urgent(&mut self, min_size: u64) -> Option<(bool, Packet)> {
        let &(prio, seq, slot) = self.by_prio.iter().rev().find(|&&(_, _, s)| {
            self.slots[s as usize].as_ref().expect("indexed").size as u64 >= min_size
        })?;
        let flow = self.slots[slot as usize].as_ref().expect("indexed").flow.0;
        let latest = seq + 1 == self.next_seq;
        Some((latest, self.take(prio, flow, seq, slot)))
    }

    /// Remove the earliest packet of the flow that holds the most urgent
    /// packet (the earliest among equals).
    pub fn pop_next(&mut self) -> Option<Packet> {
        let &(_, _, best) = self.by_prio.first()?;
        let flow = self.slots[best as usize].as_ref().expect("indexed").flow.0;
        let &(_, seq, slot) = self
            .by_flow
            .range((flow, 0, 0)..)
            .next()
            .expect("the flow has a packet");
        let prio = self.slots[slot as usize].as_ref().expect("indexed").prio;
        Some(self.take(prio, flow, seq, slot))
    }

    /// Whether some packet is strictly less urgent than `prio` and has at
    /// least `min_size` bytes.
    pub fn has_less_urgent(&self, prio: u32, min_size: u64) -> bool {
        self.by_prio
            .iter()
            .rev()
            .take_while(|&&(p, _, _)| p > prio)
            .any(|&(_, _, s)| {
                self.slots[s as usize].as_ref().expect("indexed").size as u64 >= min_size
            })
    }

    /// Remove everything, in arrival order.
    pub fn drain(&mut self) -> Vec<Packet> {
        let mut order: Vec<(u64, u32)> = self.by_prio.iter().map(|&(_, q, s)| (q, s)).collect();
        order.sort_unstable();
        let out = order
            .into_iter()
            .map(|(_, s)| self.slots[s as usize].take().expect("indexed"))
            .collect();
        *self = PrioIndex::default();
        out
    }
}
