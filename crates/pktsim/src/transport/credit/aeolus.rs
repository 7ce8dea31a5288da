//! Aeolus (Hu et al., SIGCOMM 2020), the first-RTT add-on of a credit
//! transport: ExpressPass* and FlashPass* in the FlashPass paper.
//!
//! A new flow sends up to one BDP of *unscheduled* data at line rate before
//! its first credit (§3.1), non-ECT so that switches drop it first above the
//! selective-dropping threshold (§3.2, realised by
//! [`crate::net::queue::credit_port`]). The receiver ACKs every unscheduled
//! packet; the sender sends one probe (a minimum-size *scheduled* packet, so
//! it stays behind the unscheduled ones in the FIFO) after the last
//! unscheduled packet. Unscheduled packets share one FIFO path, so an ACK for
//! packet `i` shows every unACKed unscheduled packet before `i` lost, and the
//! probe's ACK shows the tail (§3.3). Lost ones are resent once credits come,
//! before new data, as scheduled packets.

use super::wire::{to_receiver, CreditMsg, Lane, SMALL_BYTES};
use super::{CreditHost, CreditProtocol, T_UNSCHED};
use crate::packet::{FlowId, Message};
use crate::transport::contract::Ctx;

/// First-RTT state of one sending flow.
#[derive(Clone, Debug, Default)]
pub struct FirstRtt {
    /// Unscheduled packets may still be sent (no credit yet, cap not hit).
    pub sending: bool,
    /// Packets `0..sent` went unscheduled.
    pub sent: u32,
    /// Most unscheduled packets this flow may send.
    pub cap: u32,
    /// ACKed unscheduled packets (index < `sent`).
    acked: Vec<bool>,
    /// Unscheduled packets below this index are ACKed or known lost.
    resolved: u32,
    /// Whether the probe went out.
    pub probed: bool,
}

impl FirstRtt {
    /// A flow allowed `cap` unscheduled packets.
    pub fn new(cap: u32) -> Self {
        FirstRtt {
            sending: cap > 0,
            cap,
            ..FirstRtt::default()
        }
    }

    /// Record unscheduled packet `idx` as sent.
    pub fn note_sent(&mut self, idx: u32) {
        debug_assert_eq!(idx, self.sent);
        self.sent = idx + 1;
        self.acked.push(false);
    }

    /// An ACK for unscheduled packet `idx`: push every unACKed packet
    /// before it onto `lost`.
    pub fn on_ack(&mut self, idx: u32, lost: &mut impl FnMut(u32)) {
        if (idx as usize) < self.acked.len() {
            self.acked[idx as usize] = true;
        }
        self.resolve_below(idx, lost);
    }

    /// The probe's ACK: every unACKed packet up to `last` is lost.
    pub fn on_probe_ack(&mut self, last: u32, lost: &mut impl FnMut(u32)) {
        self.resolve_below(last.saturating_add(1), lost);
    }

    fn resolve_below(&mut self, end: u32, lost: &mut impl FnMut(u32)) {
        let end = end.min(self.sent);
        while self.resolved < end {
            if !self.acked[self.resolved as usize] {
                lost(self.resolved);
            }
            self.resolved += 1;
        }
    }

    /// Unscheduled packets known lost (resolved without an ACK).
    pub fn lost(&self) -> u32 {
        self.acked[..self.resolved as usize]
            .iter()
            .filter(|&&a| !a)
            .count() as u32
    }

    /// The time series' Aeolus variables of a sender: its phase (0: sending
    /// unscheduled data at line rate; 1: done sending them, some not yet
    /// ACKed nor known lost; 2: every one resolved, credits alone from
    /// here), the unscheduled packets sent and those known lost.
    pub fn state(&self, out: &mut dyn FnMut(&'static str, f64)) {
        let phase = if self.sending {
            0
        } else if !self.all_resolved() {
            1
        } else {
            2
        };
        out("aeolus_phase", f64::from(phase));
        out("unscheduled_sent_packets", f64::from(self.sent));
        out("unscheduled_lost_packets", f64::from(self.lost()));
    }

    /// Whether every unscheduled packet is ACKed or known lost.
    pub fn all_resolved(&self) -> bool {
        self.resolved >= self.sent
    }
}

/// The sender's first RTT: unscheduled packets at line rate, the probe,
/// and the ACKs that resolve them.
impl CreditProtocol {
    /// The next unscheduled packet at line rate, then the probe.
    pub(super) fn send_unscheduled(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if !s.active || !s.first.sending {
            return;
        }
        if s.first.sent < s.first.cap && s.next_new < s.n {
            let idx = s.next_new;
            s.next_new += 1;
            s.first.note_sent(idx);
            let mss = ctx.format().mss as u64;
            // The receiver must not take this one for a scheduled gap.
            let data = CreditMsg::Data {
                pkt: idx,
                first_scheduled: idx,
                credit_seq: 0,
            };
            // Non-ECT: selectively dropped above the threshold.
            let p = ctx.data_packet(f, idx as u64 * mss, u64::MAX, data.header());
            let tx = ctx.host_rate(p.src).tx_time(p.size as u64);
            ctx.send(p);
            h.stats.unscheduled_sent += 1;
            self.arm_rto(h, ctx, f);
            ctx.set_timer(ctx.now() + tx, f.0, T_UNSCHED);
            return;
        }
        self.end_unscheduled(h, ctx, f);
    }

    /// Stop sending unscheduled (cap reached, or the first credit came):
    /// send the probe behind the last unscheduled packet.
    pub(super) fn end_unscheduled(&self, h: &mut CreditHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if !s.first.sending {
            return;
        }
        s.first.sending = false;
        if s.first.sent > 0 && !s.first.probed {
            s.first.probed = true;
            let probe = CreditMsg::Probe {
                last: s.first.sent - 1,
            };
            let p = to_receiver(ctx, f, probe, SMALL_BYTES, Lane::Scheduled);
            ctx.send(p);
        }
        self.want_credits(h, ctx, f);
    }

    /// Sender: an ACK of an unscheduled packet, or the probe's ACK
    /// ([`CreditMsg::Ack`], [`CreditMsg::ProbeAck`]). The unscheduled
    /// packets they show lost wait for credits, before new data.
    pub(super) fn on_first_rtt_ack(
        &self,
        h: &mut CreditHost,
        ctx: &mut Ctx,
        f: FlowId,
        msg: CreditMsg,
    ) {
        let si = self.slots.send(f);
        let s = &mut h.send[si];
        s.last_activity = ctx.now();
        let mut lost = Vec::new();
        match msg {
            CreditMsg::Ack { pkt } => s.first.on_ack(pkt, &mut |i| lost.push(i)),
            CreditMsg::ProbeAck { last } => s.first.on_probe_ack(last, &mut |i| lost.push(i)),
            _ => debug_assert!(false, "not a first-RTT ACK: {msg:?}"),
        }
        h.stats.unscheduled_lost += lost.len() as u64;
        for i in lost {
            h.send[si].push_retx(i);
        }
        self.want_credits(h, ctx, f);
        self.after_send(h, ctx, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_reveal_earlier_losses_and_the_probe_the_tail() {
        let mut f = FirstRtt::new(6);
        for i in 0..6 {
            f.note_sent(i);
        }
        let mut lost = Vec::new();
        f.on_ack(0, &mut |i| lost.push(i));
        f.on_ack(3, &mut |i| lost.push(i));
        assert_eq!(lost, vec![1, 2]);
        assert!(!f.all_resolved());
        f.on_probe_ack(5, &mut |i| lost.push(i));
        assert_eq!(lost, vec![1, 2, 4, 5]);
        assert!(f.all_resolved());
    }
}
