//! The refusal executor: every packet a queue refuses comes here, is
//! counted where it was refused, or is handed to the refusal hook, whose
//! verdict (drop, notify the source, deflect, trim) is carried out here.

use super::*;

impl Network {
    /// Put the packets a discipline dropped at port `pid` through the
    /// refusal stage.
    #[cold]
    #[inline(never)]
    pub(super) fn account_drops<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let mut drops = std::mem::take(&mut self.drops);
        let node = self.ports[pid.idx()].owner;
        let at_host = node.0 < self.n_hosts;
        for (p, reason) in drops.drain(..) {
            if at_host {
                // Dropped in its sender's NIC: it no longer waits there.
                self.left_nic(&p);
            }
            self.refuse(node, pid, p, reason, now, ev, offer);
        }
        self.drops = drops;
    }

    /// Every drop in the network comes here. Without a hook it is counted;
    /// with one, the hook decides (on a cold path of its own).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn refuse<E: From<NetEvent> + Copy>(
        &mut self,
        node: NodeId,
        pid: PortId,
        pkt: Packet,
        reason: DropReason,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        // A dead link's refusal is no congestion for a hook to act on.
        if self.hook.is_none() || reason == DropReason::LinkDown {
            self.count_drop(pid, &pkt, reason, now);
            return;
        }
        self.refuse_with_hook(node, pid, pkt, reason, now, ev, offer);
    }

    /// Ask the hook what to do with a refused packet and do it.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn refuse_with_hook<E: From<NetEvent> + Copy>(
        &mut self,
        node: NodeId,
        pid: PortId,
        pkt: Packet,
        reason: DropReason,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let Some(mut hook) = self.hook.take() else {
            self.count_drop(pid, &pkt, reason, now);
            return;
        };
        let at_host = node.0 < self.n_hosts;
        // The hook reads the node's queues as they are now.
        for i in 0..self.nodes[node.idx()].ports.len() {
            let p = self.nodes[node.idx()].ports[i];
            self.ports[p.idx()].touch(now);
        }
        let at = Refused {
            node,
            port: pid,
            reason,
            now,
            at_host,
            final_refusal: offer.final_refusal || reason == DropReason::HopLimit,
        };
        let verdict = hook.on_refused(&at, &pkt, &SwitchView::new(self, node));
        self.hook = Some(hook);
        let verdict = if at_host || at.final_refusal {
            Verdict::Drop
        } else {
            verdict
        };
        match verdict {
            Verdict::Drop => self.count_drop(pid, &pkt, reason, now),
            Verdict::NotifySource => {
                self.count_drop(pid, &pkt, reason, now);
                if !pkt.has(flags::NOTICE) {
                    let notice = self.notice_of(&pkt, now);
                    self.ports[pid.idx()].stats.notices += 1;
                    let n = TraceEvent::Notice;
                    self.trace_row(now, node, n, Some(pid), &notice, None, None);
                    self.records.counters.made[PacketKind::Control as usize] += 1;
                    let egress = self.route(node, &notice, now);
                    self.enqueue_offer(egress, notice, now, ev, Offer::LAST);
                }
            }
            Verdict::Deflect(to) => {
                // Only to another port of the same switch: a packet cannot
                // jump, and re-offering to the refusing port would refuse it.
                match self.ports.get_mut(to.idx()) {
                    Some(port) if port.owner == node && to != pid => {
                        port.stats.deflected_in += 1;
                        self.records.counters.deflected += 1;
                        let d = TraceEvent::Deflect;
                        self.trace_row(now, node, d, Some(to), &pkt, None, None);
                        self.enqueue_offer(to, pkt, now, ev, Offer::LAST);
                    }
                    _ => self.count_drop(pid, &pkt, reason, now),
                }
            }
            Verdict::Trim => {
                if pkt.kind != PacketKind::Data || pkt.has(flags::TRIMMED) {
                    self.count_drop(pid, &pkt, reason, now);
                } else {
                    let mut header = pkt;
                    header.size = self.params.header_bytes;
                    header.payload = 0;
                    header.class = 0;
                    header.flags |= flags::TRIMMED;
                    self.records.counters.trimmed += 1;
                    let t = TraceEvent::Trim;
                    self.trace_row(now, node, t, Some(pid), &header, None, None);
                    let room = TRIM_HEADER_ROOM * self.params.header_bytes as u64;
                    self.enqueue_offer(
                        pid,
                        header,
                        now,
                        ev,
                        Offer {
                            final_refusal: true,
                            extra_room: room,
                        },
                    );
                }
            }
        }
    }

    /// The notice a switch sends back to the source of refused `pkt`: header
    /// size, top class, the refused packet's flow and header, direction
    /// swapped.
    pub(super) fn notice_of(&self, pkt: &Packet, now: Time) -> Packet {
        let size = self
            .plugin
            .as_ref()
            .and_then(|p| p.notice_bytes())
            .unwrap_or(self.params.header_bytes);
        let mut n = crate::net::switch::notice_to_source(pkt, size);
        n.ready_at = now;
        n
    }

    /// Counts of the switch stage for the run summary: the refusal hook's,
    /// then the switch-stage plug-in's up to `now`.
    pub fn switch_counters(&self, now: Time) -> Vec<(&'static str, u64)> {
        let mut v = self.hook.as_ref().map(|h| h.counters()).unwrap_or_default();
        if let Some(p) = &self.plugin {
            v.extend(p.counters(self, now));
        }
        v
    }

    /// Count one packet dropped at port `pid` at `now`, network-wide, by
    /// where, and against its flow. A hop-limit drop is made on arrival, by
    /// the link's receiving side.
    #[inline]
    pub(super) fn count_drop(&mut self, pid: PortId, p: &Packet, reason: DropReason, now: Time) {
        let on_arrival = (reason == DropReason::HopLimit).then_some(ArrivalDrop::HopLimit);
        self.count_drop_by(pid, p, reason, on_arrival, now);
    }

    /// [`Network::count_drop`] with the side that counts it: the sending
    /// port's statistics, or, for a drop seen on arrival (`on_arrival`),
    /// the link's receiving side (in a partitioned run the port may be
    /// another group's).
    pub(super) fn count_drop_by(
        &mut self,
        pid: PortId,
        p: &Packet,
        reason: DropReason,
        on_arrival: Option<ArrivalDrop>,
        now: Time,
    ) {
        self.records.counters.dropped[p.kind as usize][reason as usize] += 1;
        let port = &mut self.ports[pid.idx()];
        match on_arrival {
            Some(kind) => self.inboxes[pid.idx()].count_arrival_drop(kind),
            None => port.stats.dropped[reason as usize] += 1,
        }
        let site = if port.owner.0 < self.n_hosts {
            DropSite::HostNic
        } else if port.peer.0 < self.n_hosts {
            DropSite::LastHop
        } else {
            DropSite::Fabric
        };
        self.records.counters.dropped_at[p.kind as usize][site as usize] += 1;
        self.records.count_flow_drop(p.flow);
        if self.trace.is_some() {
            // A drop on arrival happens at the link's far end.
            let node = if on_arrival.is_some() {
                self.inboxes[pid.idx()].to()
            } else {
                self.ports[pid.idx()].owner
            };
            let d = TraceEvent::Drop;
            self.trace_row(now, node, d, Some(pid), p, None, Some(reason));
        }
    }
}
