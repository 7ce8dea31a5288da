//! The port of a credit-scheduled network (ExpressPass, FlashPass, Aeolus):
//! three FIFOs behind one transmitter.
//!
//! - **control** (packet class 0): small signalling packets (credit
//!   requests, ACKs, probes, FlashPass credits), served first, no rate limit;
//!   they share the port's byte budget with data.
//! - **credit** (class [`CREDIT_CLASS`]): ExpressPass credits or FlashPass
//!   emulation packets. A token bucket holds their departures to
//!   `credit_share` of the link rate (ExpressPass: 84/(84+1538) ≈ 5.18 %,
//!   so that every credit's MTU of data, travelling the other way, exactly
//!   fills the link); the queue holds at most `credit_packets` packets
//!   (8 in the FlashPass paper §IV-A, and ExpressPass' large-scale script).
//!   Within their allowance they have priority over data (`xpass-drop-tail`:
//!   a credit that fits the tokens goes first, otherwise data).
//! - **data** (every other class): drop-tail on the port's byte budget.
//!
//! Selective dropping (Aeolus §3.2; FlashPass §III-C): a packet *without*
//! the ECT flag arriving at the credit or the data FIFO is dropped when that
//! FIFO already holds more than `selective_drop_packets` packets (2 in all
//! FlashPass simulations). Senders mark what must be protected ECT
//! (scheduled data, ordinary emulation packets) and leave the rest non-ECT
//! (Aeolus' unscheduled first-RTT data, FlashPass' over-provisioned
//! emulation packets): the RED/ECN single-threshold realisation of both
//! papers, where a mark on an ECT packet is ignored.

use super::{Dequeue, Discipline, Drops, Held, TokenBucket};
use crate::metrics::DropReason;
use crate::packet::{flags, Packet};
use crate::time::{Rate, Time};
use std::collections::VecDeque;

/// Packet class of the rate-limited credit FIFO.
pub const CREDIT_CLASS: u8 = 2;

/// Parameters of a [`CreditPort`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreditPortParams {
    /// Largest departure rate of the credit FIFO.
    pub credit_rate: Rate,
    /// Bytes of credits that may leave back to back beyond one credit.
    pub credit_burst_bytes: u64,
    /// Capacity of the credit FIFO in packets.
    pub credit_packets: u32,
    /// Non-ECT packets are dropped above this many queued packets.
    pub selective_drop_packets: u32,
}

/// Control, rate-limited credit and data FIFOs (see the module docs).
#[derive(Debug)]
pub struct CreditPort {
    ctrl: VecDeque<Packet>,
    credit: VecDeque<Packet>,
    data: VecDeque<Packet>,
    bucket: TokenBucket,
    params: CreditPortParams,
    /// What `ctrl` and `data` hold: they share the port's byte budget,
    /// drop-tail.
    budget: Held,
    /// What `credit` holds: bounded in packets, not bytes.
    credits: Held,
}

impl CreditPort {
    /// An empty port.
    pub fn new(params: CreditPortParams) -> Self {
        CreditPort {
            ctrl: VecDeque::new(),
            credit: VecDeque::with_capacity(params.credit_packets as usize),
            data: VecDeque::with_capacity(16),
            bucket: TokenBucket::new(params.credit_rate, params.credit_burst_bytes),
            params,
            budget: Held::unmarked(),
            credits: Held::unmarked(),
        }
    }

    #[inline]
    fn selectively_dropped(&self, pkt: &Packet, queued: usize) -> bool {
        !pkt.has(flags::ECT) && queued > self.params.selective_drop_packets as usize
    }

    #[inline]
    fn take_credit(&mut self, now: Time) -> Packet {
        let p = self.credit.pop_front().expect("caller checked");
        self.credits.remove(&p);
        self.bucket.charge(now, p.size as u64);
        p
    }
}

impl Discipline for CreditPort {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if pkt.class == CREDIT_CLASS {
            if self.credits.len() >= self.params.credit_packets as usize {
                drops.push((pkt, DropReason::BufferFull));
            } else if self.selectively_dropped(&pkt, self.credits.len()) {
                drops.push((pkt, DropReason::Protocol));
            } else {
                self.credits.admit(&mut pkt);
                self.credit.push_back(pkt);
            }
            return 0;
        }
        if !self.budget.fits(&pkt, limit) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        if pkt.class == 0 {
            self.budget.admit(&mut pkt);
            self.ctrl.push_back(pkt);
        } else if self.selectively_dropped(&pkt, self.data.len()) {
            drops.push((pkt, DropReason::Protocol));
        } else {
            self.budget.admit(&mut pkt);
            self.data.push_back(pkt);
        }
        0
    }

    /// Ignores the credit bucket: the network calls [`Discipline::poll`].
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        match self.poll(now, drops) {
            Dequeue::Packet(p) => Some(p),
            _ => {
                if self.credit.is_empty() {
                    None
                } else {
                    Some(self.take_credit(now))
                }
            }
        }
    }

    #[inline]
    fn poll(&mut self, now: Time, _drops: &mut Drops) -> Dequeue {
        if let Some(p) = self.ctrl.pop_front() {
            self.budget.remove(&p);
            return Dequeue::Packet(p);
        }
        let credit_at = if self.credit.is_empty() {
            None
        } else {
            Some(self.bucket.ready_at(now))
        };
        if credit_at == Some(now) {
            return Dequeue::Packet(self.take_credit(now));
        }
        if let Some(p) = self.data.pop_front() {
            self.budget.remove(&p);
            return Dequeue::Packet(p);
        }
        match credit_at {
            Some(t) => Dequeue::NotBefore(t),
            None => Dequeue::Empty,
        }
    }

    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        if pkt.class == CREDIT_CLASS {
            self.credits.len() < self.params.credit_packets as usize
        } else {
            self.budget.fits(pkt, limit)
        }
    }
    /// Control first, then credits, then data.
    fn schedules_by_priority(&self) -> bool {
        true
    }
    fn bytes(&self) -> u64 {
        self.budget.bytes() + self.credits.bytes()
    }
    fn len(&self) -> usize {
        self.budget.len() + self.credits.len()
    }
    fn drain(&mut self) -> Vec<Packet> {
        self.budget.clear();
        self.credits.clear();
        let mut out: Vec<Packet> = self.ctrl.drain(..).collect();
        out.extend(self.credit.drain(..));
        out.extend(self.data.drain(..));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, Header, NodeId, PacketKind};
    use crate::time::Duration;

    fn pkt(size: u32, class: u8, ect: bool) -> Packet {
        let mut p = Packet::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            size,
            PacketKind::Control,
            Header::Ctrl {
                kind: 0,
                a: 0,
                b: 0,
            },
        );
        p.class = class;
        if ect {
            p.flags |= flags::ECT;
        }
        p
    }

    fn port() -> CreditPort {
        CreditPort::new(CreditPortParams {
            // 84 B per 1622 B of a 10 Gbit/s link: one credit per 1.2976 us.
            credit_rate: Rate::from_bps(10_000_000_000 * 84 / 1622).unwrap(),
            credit_burst_bytes: 0,
            credit_packets: 8,
            selective_drop_packets: 2,
        })
    }

    #[test]
    fn the_credit_fifo_holds_eight_and_selectively_drops_non_ect_above_two() {
        let mut q = port();
        let mut d = Drops::new();
        for _ in 0..3 {
            q.enqueue(pkt(84, CREDIT_CLASS, true), Time::ZERO, 1000, &mut d);
        }
        // Three queued: a non-ECT (over-provisioned) one is refused...
        q.enqueue(pkt(84, CREDIT_CLASS, false), Time::ZERO, 1000, &mut d);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].1, DropReason::Protocol);
        // ...ECT ones are taken up to eight, whatever the byte budget.
        for _ in 0..6 {
            q.enqueue(pkt(84, CREDIT_CLASS, true), Time::ZERO, 0, &mut d);
        }
        assert_eq!(q.len(), 8);
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].1, DropReason::BufferFull);
    }

    #[test]
    fn unscheduled_data_is_dropped_above_the_threshold_scheduled_is_not() {
        let mut q = port();
        let mut d = Drops::new();
        for _ in 0..3 {
            q.enqueue(pkt(1538, 1, true), Time::ZERO, 100_000, &mut d);
        }
        q.enqueue(pkt(1538, 1, false), Time::ZERO, 100_000, &mut d);
        assert_eq!(d.len(), 1);
        q.enqueue(pkt(1538, 1, true), Time::ZERO, 100_000, &mut d);
        assert_eq!((d.len(), q.len()), (1, 4));
        // Two queued: a non-ECT packet is still admitted.
        let mut q = port();
        q.enqueue(pkt(1538, 1, true), Time::ZERO, 100_000, &mut d);
        q.enqueue(pkt(1538, 1, true), Time::ZERO, 100_000, &mut d);
        q.enqueue(pkt(1538, 1, false), Time::ZERO, 100_000, &mut d);
        assert_eq!((d.len(), q.len()), (1, 3));
    }

    #[test]
    fn credits_leave_at_their_share_first_then_data_fills_the_gaps() {
        let mut q = port();
        let mut d = Drops::new();
        for _ in 0..4 {
            q.enqueue(pkt(84, CREDIT_CLASS, true), Time::ZERO, 0, &mut d);
        }
        for _ in 0..10 {
            q.enqueue(pkt(1538, 1, true), Time::ZERO, u64::MAX, &mut d);
        }
        let link = Rate::from_bps(10_000_000_000).unwrap();
        let gap = Rate::from_bps(10_000_000_000 * 84 / 1622)
            .unwrap()
            .tx_time(84);
        let mut now = Time::ZERO;
        let mut credits = Vec::new();
        loop {
            match q.poll(now, &mut d) {
                Dequeue::Packet(p) => {
                    if p.class == CREDIT_CLASS {
                        credits.push(now);
                    }
                    now += link.tx_time(p.size as u64);
                }
                Dequeue::NotBefore(t) => now = t,
                Dequeue::Empty => break,
            }
        }
        assert_eq!(credits.len(), 4);
        assert_eq!(credits[0], Time::ZERO);
        for w in credits.windows(2) {
            // Never closer than the credit rate allows; and with a data
            // packet (1.23 us) in between, no later than one data packet after.
            assert!(w[1] - w[0] >= gap, "{:?}", credits);
            assert!(w[1] - w[0] <= gap + link.tx_time(1538), "{:?}", credits);
        }
        assert!(gap > Duration::from_ns(1290) && gap < Duration::from_ns(1300));
    }
}
