//! Host-NIC bookkeeping: data bytes each flow has queued in its sender's
//! NIC, when its last packet left, and the run-dry notices transports ask
//! for.

use super::*;

impl Network {
    /// Host `host`'s NIC started sending `pkt` at `now`, until `end`;
    /// `more`: packets wait behind it.
    #[inline(always)]
    pub(super) fn nic_sent<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        pkt: &Packet,
        now: Time,
        end: Time,
        more: bool,
        ev: &mut EventQueue<E>,
    ) {
        self.left_nic(pkt);
        // Only the flow's data leaving its sender's NIC: an ACK of the same
        // flow leaving the receiver's NIC carries the data's echoed
        // `sent_at`, so its "wait" would be the data's one-way delay, not
        // time spent in a host queue.
        if pkt.kind == PacketKind::Data {
            if let Some(t) = self.nic_flow_departed.get_mut(pkt.flow.idx()) {
                *t = (now, now.since(pkt.sent_at.min(now)));
            }
        }
        if !more {
            self.nic_idle
                .on_last_packet(host, end, self.params.nic_pull, ev);
        }
    }

    /// A data packet left its sender's NIC queue (sent or dropped).
    #[inline]
    pub(super) fn left_nic(&mut self, p: &Packet) {
        if p.kind == PacketKind::Data {
            if let Some(b) = self.nic_flow_bytes.get_mut(p.flow.idx()) {
                *b = b.saturating_sub(p.size as u64);
            }
        }
    }

    /// Ask for one [`NetEvent::NicIdle`] when `host`'s NIC next runs dry:
    /// at the end of the packet on the wire if nothing is queued behind it,
    /// else when the last queued packet ends.
    #[inline]
    pub fn request_nic_idle<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let p = &self.ports[self.nic(host).idx()];
        let last_packet_ends = (p.busy_until > now && p.queued_packets() == 0 && !p.tx_pending)
            .then_some(p.busy_until);
        self.nic_idle.request(host, last_packet_ends, ev);
    }

    /// Free bytes in `host`'s NIC queue.
    #[inline]
    pub fn nic_room(&self, host: NodeId) -> u64 {
        let p = &self.ports[self.nic(host).idx()];
        p.limit.saturating_sub(p.queue.bytes())
    }

    /// Whether a host's NIC is idle with nothing queued.
    #[inline]
    pub fn nic_idle(&self, host: NodeId, now: Time) -> bool {
        let p = &self.ports[self.nic(host).idx()];
        p.busy_until <= now && p.queued_packets() == 0 && !p.tx_pending
    }

    /// Turn NIC-idle notifications on or off (see [`NetworkParams::nic_pull`]).
    pub fn set_nic_pull(&mut self, on: bool) {
        self.params.nic_pull = on;
    }
}
