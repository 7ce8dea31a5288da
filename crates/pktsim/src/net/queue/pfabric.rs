//! pFabric's switch queue (Alizadeh et al., SIGCOMM 2013, §4.1): every packet
//! carries a priority (the flow's remaining size; lower is more urgent).
//! Dequeue sends the earliest-queued packet of the flow that holds the most
//! urgent packet (so a flow's packets leave in order); when the buffer
//! overflows, the least urgent packet (the arriving one included) is dropped,
//! the latest-queued among equals. Buffers are tiny (tens of packets), so
//! linear scans over a Vec beat any index structure.

use super::{Discipline, Drops};
use crate::metrics::DropReason;
use crate::net::packet::Packet;
use crate::time::Time;

/// pFabric priority queue.
#[derive(Debug, Default)]
pub struct PfabricQueue {
    /// Packets in arrival order.
    pkts: Vec<Packet>,
    bytes: u64,
}

impl PfabricQueue {
    /// An empty queue.
    pub fn new() -> Self {
        PfabricQueue {
            pkts: Vec::with_capacity(32),
            bytes: 0,
        }
    }
}

impl Discipline for PfabricQueue {
    fn enqueue(&mut self, pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        self.bytes += pkt.size as u64;
        self.pkts.push(pkt);
        if self.bytes > limit {
            // Drop the least urgent (largest prio; the latest among equals)
            // of the packets whose removal alone ends the overflow, as
            // pFabric's ns-2 queue does. The arrival always qualifies, since
            // the queue was within its limit before it came.
            let over = self.bytes - limit;
            let mut worst = self.pkts.len() - 1;
            for (i, p) in self.pkts.iter().enumerate() {
                if p.size as u64 >= over && p.prio >= self.pkts[worst].prio {
                    worst = i;
                }
            }
            let victim = self.pkts.remove(worst);
            self.bytes -= victim.size as u64;
            let reason = if worst == self.pkts.len() {
                DropReason::BufferFull
            } else {
                DropReason::Evicted
            };
            drops.push((victim, reason));
        }
        0
    }

    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        let best = self
            .pkts
            .iter()
            .enumerate()
            .min_by_key(|(i, p)| (p.prio, *i))
            .map(|(i, p)| (i, p.flow))?;
        // The earliest packet of that flow keeps the flow in order.
        let i = self.pkts[..=best.0]
            .iter()
            .position(|p| p.flow == best.1)
            .unwrap_or(best.0);
        let p = self.pkts.remove(i);
        self.bytes -= p.size as u64;
        Some(p)
    }

    /// The arrival is kept if it fits, or if a queued packet big enough to
    /// end the overflow is strictly less urgent (ties drop the arrival).
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        let after = self.bytes + pkt.size as u64;
        if after <= limit {
            return true;
        }
        let over = after - limit;
        self.pkts
            .iter()
            .any(|p| p.size as u64 >= over && p.prio > pkt.prio)
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn len(&self) -> usize {
        self.pkts.len()
    }
    fn drain(&mut self) -> Vec<Packet> {
        self.bytes = 0;
        std::mem::take(&mut self.pkts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::{FlowId, Header, NodeId, PacketKind};

    fn pkt(flow: u32, prio: u32, seq: u64) -> Packet {
        let mut p = Packet::new(
            FlowId(flow),
            NodeId(0),
            NodeId(1),
            1500,
            PacketKind::Data,
            Header::TcpData { seq },
        );
        p.prio = prio;
        p
    }

    fn seq(p: &Packet) -> u64 {
        match p.header {
            Header::TcpData { seq } => seq,
            _ => unreachable!(),
        }
    }

    #[test]
    fn sends_most_urgent_flow_first_in_flow_order() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        q.enqueue(pkt(1, 900, 0), Time::ZERO, u64::MAX, &mut d);
        q.enqueue(pkt(2, 500, 0), Time::ZERO, u64::MAX, &mut d);
        // Flow 2's later packet has a smaller remaining size, but its first
        // packet must still leave first.
        q.enqueue(pkt(2, 100, 1), Time::ZERO, u64::MAX, &mut d);
        let order: Vec<(u32, u64)> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| (p.flow.0, seq(&p)))
            .collect();
        assert_eq!(order, vec![(2, 0), (2, 1), (1, 0)]);
    }

    #[test]
    fn full_buffer_drops_the_least_urgent_packet() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        // Room for 3 packets.
        for (f, prio) in [(1, 300), (2, 900), (3, 100)] {
            q.enqueue(pkt(f, prio, 0), Time::ZERO, 4500, &mut d);
        }
        assert!(d.is_empty());
        // A more urgent arrival evicts flow 2's packet.
        q.enqueue(pkt(4, 200, 0), Time::ZERO, 4500, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.flow, FlowId(2));
        assert_eq!(d[0].1, DropReason::Evicted);
        // A less urgent arrival is itself dropped.
        q.enqueue(pkt(5, 1000, 0), Time::ZERO, 4500, &mut d);
        assert_eq!(d[1].0.flow, FlowId(5));
        assert_eq!(d[1].1, DropReason::BufferFull);
        assert_eq!(q.len(), 3);
        assert_eq!(q.bytes(), 4500);
    }

    #[test]
    fn admits_predicts_whether_enqueue_keeps_the_arrival() {
        let mut rng = crate::engine::Rng::from_seed_u64(5);
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        for i in 0..2000u32 {
            let mut p = pkt(i, rng.below(50) as u32, 0);
            p.size = [64, 1500, 700][rng.below(3) as usize];
            let predicted = q.admits(&p, 6000);
            d.clear();
            q.enqueue(p, Time::ZERO, 6000, &mut d);
            let kept = !d.iter().any(|(x, _)| x.flow == p.flow);
            assert_eq!(predicted, kept, "arrival {i}");
            if rng.below(3) == 0 {
                q.dequeue(Time::ZERO, &mut d);
            }
        }
    }

    #[test]
    fn ties_drop_the_latest() {
        let mut q = PfabricQueue::new();
        let mut d = Drops::new();
        q.enqueue(pkt(1, 500, 0), Time::ZERO, 1500, &mut d);
        q.enqueue(pkt(2, 500, 0), Time::ZERO, 1500, &mut d);
        assert_eq!(d[0].0.flow, FlowId(2));
    }
}
