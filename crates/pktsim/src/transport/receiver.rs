//! The cumulative-ACK receiver shared by the TCP family and pFabric: it
//! tracks in-order and out-of-order bytes, reports progress to the
//! simulation and answers every data packet with an ACK that echoes the
//! data's timestamp and ECN mark.

use crate::packet::{flags, Header, Packet};
use crate::transport::contract::Ctx;

/// Receiver state of one flow.
#[derive(Clone, Debug, Default)]
pub struct AckReceiver {
    /// Next in-order byte expected.
    pub rcv_nxt: u64,
    /// Out-of-order byte ranges [start, end), sorted and disjoint.
    pub ooo: Vec<(u64, u64)>,
}

impl AckReceiver {
    /// Take in data packet `pkt` carrying bytes from `seq`, and build the ACK
    /// (cumulative, header-sized, class 0 and priority 0: control first).
    pub fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet, seq: u64) -> Packet {
        let end = seq + pkt.payload as u64;
        if seq <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(end);
            // Pull in out-of-order ranges that are now contiguous.
            let k = self.ooo.partition_point(|&(a, _)| a <= self.rcv_nxt);
            if k > 0 {
                self.rcv_nxt = self.rcv_nxt.max(self.ooo[k - 1].1);
                self.ooo.drain(..k);
            }
        } else {
            insert_range(&mut self.ooo, seq, end);
        }
        ctx.set_received(pkt.flow, self.rcv_nxt);
        let mut ack = ctx.control_packet(
            pkt.flow,
            pkt.dst,
            pkt.src,
            ctx.format().header,
            Header::TcpAck {
                ack: self.rcv_nxt,
                sack: 0,
                wnd: 0,
            },
        );
        // Echo the timestamp (RFC 7323 style) and the CE mark exactly (DCTCP).
        ack.sent_at = pkt.sent_at;
        if pkt.has(flags::CE) {
            ack.flags |= flags::ECE;
        }
        ack
    }

    /// Whether every byte of [a, b) has arrived (the sender's view of SACK).
    pub fn holds(&self, a: u64, b: u64) -> bool {
        b <= self.rcv_nxt || self.ooo.iter().any(|&(s, e)| s <= a && b <= e)
    }

    /// The SACK block to report after data from `seq` arrived: the
    /// out-of-order range holding it, else the lowest one (RFC 2018 §4: the
    /// first block reports the most recent segment).
    pub fn sack_block(&self, seq: u64) -> Option<(u64, u64)> {
        self.ooo
            .iter()
            .find(|&&(a, b)| a <= seq && seq < b)
            .or(self.ooo.first())
            .copied()
    }

    /// Bytes held beyond `rcv_nxt`.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.iter().map(|&(a, b)| b - a).sum()
    }
}

/// Insert [a, b) into sorted disjoint ranges, merging overlaps and neighbours.
pub fn insert_range(v: &mut Vec<(u64, u64)>, a: u64, b: u64) {
    let i = v.partition_point(|&(_, e)| e < a);
    let mut j = i;
    let (mut na, mut nb) = (a, b);
    while j < v.len() && v[j].0 <= nb {
        na = na.min(v[j].0);
        nb = nb.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, std::iter::once((na, nb)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge() {
        let mut v = Vec::new();
        insert_range(&mut v, 10, 20);
        insert_range(&mut v, 30, 40);
        insert_range(&mut v, 20, 30);
        assert_eq!(v, vec![(10, 40)]);
        insert_range(&mut v, 50, 60);
        insert_range(&mut v, 5, 8);
        assert_eq!(v, vec![(5, 8), (10, 40), (50, 60)]);
        insert_range(&mut v, 0, 100);
        assert_eq!(v, vec![(0, 100)]);
    }
}
