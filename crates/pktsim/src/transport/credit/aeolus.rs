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

    /// Whether every unscheduled packet is ACKed or known lost.
    pub fn all_resolved(&self) -> bool {
        self.resolved >= self.sent
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
