//! The per-hop path: a packet handed to a NIC, offered to a port's queue,
//! transmitted onto its link, arriving at the far end and forwarded.

use super::faults::Faults;
use super::*;
use crate::net::fault::{LOST_MARK, LOST_TO_LINK_LOSS};

impl Network {
    /// A transport hands `pkt` to its host's NIC.
    #[inline]
    pub fn send<E: From<NetEvent> + Copy>(
        &mut self,
        mut pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.records.counters.sent[pkt.kind as usize] += 1;
        if self.tracing() {
            self.trace_row(now, pkt.src, TraceEvent::Send, None, &pkt, None, None);
        }
        if pkt.kind == PacketKind::Data {
            if let Some(b) = self.nic_flow_bytes.get_mut(pkt.flow.idx()) {
                *b += pkt.size as u64;
            }
        }
        let nic = self.nic(pkt.src);
        // Offered from the argument's own slot, not a copy of it.
        self.offer_in_place(nic, &mut pkt, now, ev, Offer::FIRST);
    }

    /// Offer a packet to a port's queue and start transmitting if idle.
    #[inline(always)]
    pub fn enqueue<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.enqueue_offer(pid, pkt, now, ev, Offer::FIRST);
    }

    /// [`Network::enqueue`] for a first or a second offer.
    #[inline(always)]
    pub(super) fn enqueue_offer<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        mut pkt: Packet,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        self.offer_in_place(pid, &mut pkt, now, ev, offer);
    }

    /// [`Network::enqueue_offer`] of the packet in the caller's slot (an
    /// eager port may mark it there). The hop's callers hold the packet
    /// in a slot of their own already (taken from a link's inbox, or
    /// handed over by a transport): offered by reference, an eager port
    /// copies it once, from that slot into the next link's inbox. Offered
    /// by value, the compiler kept a second slot for the argument of this
    /// inlined function and copied the 64 bytes between the two on every
    /// hop (BENCHMARKS.md, "The queue base again").
    #[inline(always)]
    pub(super) fn offer_in_place<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: &mut Packet,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let port = &mut self.ports[pid.idx()];
        port.touch(now);
        if port.fifo.is_some() {
            self.enqueue_eager(pid, pkt, now, ev, offer);
            return;
        }
        let limit = Self::offer_limit(port, &self.pools, offer);
        if port.busy_until <= now
            && !port.tx_pending
            && port.pool.is_none()
            && port.queue.is_empty_pass_through()
            && Self::port_admits(port, pkt, limit)
        {
            // An idle port with an empty queue that would take the packet
            // and hand it straight back: send it without the round trip
            // through the queue (most packet-hops below full load).
            port.note_size_with(pkt.size);
            if self.trace.is_some() {
                let (node, q) = (port.owner, TraceEvent::Enqueue);
                self.trace_row(now, node, q, Some(pid), pkt, Some(0), None);
            }
            self.start_transmission(pid, pkt, now, ev);
            return;
        }
        // A shared buffer's occupancy follows the queue's bytes; a port
        // without one (most) reads them only for its own record.
        let before = port.pool.map(|_| port.queue.bytes());
        let marked = port.queue.enqueue(*pkt, now, limit, &mut self.drops);
        let traced = self.trace.is_some();
        port.note_size();
        if let (Some(pool), Some(before)) = (port.pool, before) {
            self.pools[pool as usize].adjust(before, port.queue.bytes());
        }
        self.records.counters.ecn_marked += marked as u64;
        port.stats.ecn_marked += marked as u64;
        if traced {
            self.trace_offer(pid, pkt, now, marked);
        }
        if !self.drops.is_empty() {
            self.account_drops(pid, now, ev, offer);
        }
        self.try_start(pid, now, ev);
    }

    /// Enqueue on an eager FIFO port: admit or drop, mark, and schedule the
    /// departure right away. The port was touched at `now`.
    #[inline(always)]
    pub(super) fn enqueue_eager<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: &mut Packet,
        now: Time,
        ev: &mut EventQueue<E>,
        offer: Offer,
    ) {
        let next_tx = self.next_tx(pid, pkt);
        let port = &mut self.ports[pid.idx()];
        let limit = Self::offer_limit(port, &self.pools, offer);
        if !Self::port_admits(port, pkt, limit) {
            let node = port.owner;
            self.refuse(node, pid, *pkt, DropReason::BufferFull, now, ev, offer);
            return;
        }
        let Some(fifo) = port.fifo.as_mut() else {
            return;
        };
        let mut marked = false;
        if let Some(k) = fifo.ecn {
            if k.apply(pkt, fifo.len(), fifo.bytes) {
                self.records.counters.ecn_marked += 1;
                port.stats.ecn_marked += 1;
                marked = true;
            }
        }
        // It leaves the queue when the transmitter frees up.
        let leaves = now.max(port.busy_until);
        if leaves > now {
            fifo.push(leaves, pkt.size);
            port.note_size();
        }
        let inbox = &mut self.inboxes[pid.idx()];
        Self::transmit(
            port,
            inbox,
            pkt,
            leaves,
            next_tx,
            ev,
            pid,
            &mut self.records.counters,
            &mut self.crossings,
            self.faults.as_deref(),
        );
        if self.tracing() {
            let port = &self.ports[pid.idx()];
            let (node, queued) = (port.owner, port.queued_bytes());
            self.trace_eager(node, pid, pkt, now, queued, marked, leaves);
        }
    }

    /// Put `pkt` on `port`'s link, starting no earlier than `at` (and its
    /// cut-through ready time): into `inbox`, the link's inbox at the far
    /// end, or, on a remote link, into `crossings`. `next_tx`: the packet's transmission time on its next hop when
    /// that hop's queue picks by priority and may be faster than this link,
    /// so that the packet arrives there only once it could start (see
    /// [`Network::next_tx`]); else 0.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn transmit<E: From<NetEvent> + Copy>(
        port: &mut Port,
        inbox: &mut LinkInbox,
        pkt: &Packet,
        at: Time,
        next_tx: u64,
        ev: &mut EventQueue<E>,
        pid: PortId,
        counters: &mut Counters,
        crossings: &mut Vec<Crossing>,
        faults: Option<&Faults>,
    ) {
        let start = at.max(pkt.ready_at);
        let tx = port.tx_time(pkt.size);
        let end = start + tx;
        let tail = end + port.delay;
        let arrival = if port.cut_through {
            let header = start + port.header_time + port.delay;
            if next_tx == 0 {
                header
            } else {
                header.max(Time(tail.ps().saturating_sub(next_tx)))
            }
        } else {
            tail
        };
        // The new hop count is computed from the local copy, since reading
        // it back from the inbox's slot would wait for that line to arrive.
        let hops = pkt.hops.saturating_add(1);
        if port.detour {
            Self::transmit_detour(
                port, inbox, pkt, arrival, tail, hops, ev, pid, crossings, faults,
            );
        } else if inbox.put(arrival, *pkt, tail, hops) {
            // The link was empty: its head packet's arrival, for the node
            // it leads to.
            NetEvent::Arrive(pid).schedule_for(port.peer, arrival, ev);
        }
        port.busy_until = end;
        port.stats.busy += tx;
        port.stats.tx_bytes += pkt.size as u64;
        port.stats.tx_packets += 1;
        counters.packet_hops += 1;
    }

    /// [`Network::transmit`]'s slow road ([`Port::detour`]): a lossy link
    /// marks the packets it loses (the receiving side counts them when they
    /// would have arrived, [`Network::lost_on_arrival`]), and a link into
    /// another group hands its packets over between windows instead of
    /// into the inbox here.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn transmit_detour<E: From<NetEvent> + Copy>(
        port: &Port,
        inbox: &mut LinkInbox,
        pkt: &Packet,
        arrival: Time,
        tail: Time,
        mut hops: u8,
        ev: &mut EventQueue<E>,
        pid: PortId,
        crossings: &mut Vec<Crossing>,
        faults: Option<&Faults>,
    ) {
        if faults.is_some_and(|f| f.loses(pid, port.stats.tx_packets)) && hops < LOST_MARK {
            hops = LOST_TO_LINK_LOSS;
        }
        if port.remote {
            // The inbox is another group's: handed over between windows.
            crossings.push(Crossing {
                link: pid,
                to: port.peer,
                arrival,
                pkt: *pkt,
                ready_at: tail,
                hops,
            });
        } else if inbox.put(arrival, *pkt, tail, hops) {
            NetEvent::Arrive(pid).schedule_for(port.peer, arrival, ev);
        }
    }

    /// Start the next transmission on a port if it is idle and has packets.
    #[inline]
    pub(super) fn try_start<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let port = &mut self.ports[pid.idx()];
        if port.tx_pending {
            return;
        }
        if port.busy_until > now {
            if !port.queue.is_empty() {
                port.tx_pending = true;
                NetEvent::TxDone(pid).schedule_for(port.owner, port.busy_until, ev);
            }
            return;
        }
        port.touch(now);
        let before = port.pool.map(|_| port.queue.bytes());
        let got = port.queue.poll(now, &mut self.drops);
        if let (Some(pool), Some(before)) = (port.pool, before) {
            self.pools[pool as usize].adjust(before, port.queue.bytes());
        }
        match got {
            // By reference: binding the packet by value copied it out of
            // `got` into a slot of its own first.
            Dequeue::Packet(ref pkt) => self.start_transmission(pid, pkt, now, ev),
            Dequeue::NotBefore(t) => {
                // A rate limit holds the head back: come back then.
                let port = &mut self.ports[pid.idx()];
                port.tx_pending = true;
                NetEvent::TxDone(pid).schedule_for(port.owner, t, ev);
            }
            Dequeue::Empty => {}
        }
        // Drops at dequeue (AQMs) go to the refusal stage only now, when the
        // port's own transmission is settled: a verdict may offer packets to
        // ports, this one included.
        if !self.drops.is_empty() {
            self.account_drops(pid, now, ev, Offer::FIRST);
        }
    }

    /// Send `pkt`, which idle port `pid`'s queue just gave up (or would
    /// have), at `now`; come back when it ends if more packets wait; the
    /// NIC bookkeeping when the port is a host's.
    #[inline(always)]
    pub(super) fn start_transmission<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        pkt: &Packet,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        let next_tx = self.next_tx(pid, pkt);
        if self.tracing() {
            let owner = self.ports[pid.idx()].owner;
            let d = TraceEvent::Dequeue;
            self.trace_row(now.max(pkt.ready_at), owner, d, Some(pid), pkt, None, None);
        }
        let port = &mut self.ports[pid.idx()];
        let owner = port.owner;
        let inbox = &mut self.inboxes[pid.idx()];
        Self::transmit(
            port,
            inbox,
            pkt,
            now,
            next_tx,
            ev,
            pid,
            &mut self.records.counters,
            &mut self.crossings,
            self.faults.as_deref(),
        );
        let end = port.busy_until;
        let more = !port.queue.is_empty();
        if more {
            port.tx_pending = true;
            NetEvent::TxDone(pid).schedule_for(owner, end, ev);
        }
        if owner.0 < self.n_hosts {
            self.nic_sent(owner, pkt, now, end, more, ev);
        }
    }

    /// The `next_tx` argument of [`Network::transmit`] for `pkt` leaving on
    /// port `pid`: its transmission time on the fastest of its next hops at
    /// a cut-through peer whose queues there pick by priority, when one of
    /// them may be faster than this link ([`Port::waits_at_peer`]); else 0.
    ///
    /// A packet from a slower link (a 10 Gbit/s host into a 40 Gbit/s
    /// uplink) cannot start before its tail arrives less its own
    /// transmission time at the faster rate. A FIFO port sends its head
    /// first anyway and waits for those bits (see `transmit`); a priority
    /// queue offered the packet at header time would pick it as the most
    /// urgent and hold the port idle for up to the difference of the two
    /// transmission times while complete packets wait, taking up to three
    /// quarters of a 40 Gbit/s uplink's time when one urgent flow feeds it,
    /// which pFabric's long flows paid for in timeouts (issue 20). So the
    /// packet arrives at such a queue only once it could start. The
    /// earliest start over the next hops (the fastest one) is used, since
    /// the choice among them is made when the packet arrives.
    #[inline(always)]
    pub(super) fn next_tx(&self, pid: PortId, pkt: &Packet) -> u64 {
        let port = &self.ports[pid.idx()];
        if !port.waits_at_peer {
            return 0;
        }
        self.next_tx_at(port.peer, pkt)
    }

    /// [`Network::next_tx`] for a port whose peer, `peer`, may hold packets.
    #[inline(never)]
    pub(super) fn next_tx_at(&self, peer: NodeId, pkt: &Packet) -> u64 {
        let hops = self.routing.next_hops(peer, pkt.dst);
        self.priority_tx(pkt.size, hops).unwrap_or(0)
    }

    /// A port finished a transmission and has more packets waiting.
    #[inline]
    pub fn on_tx_done<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) {
        self.ports[pid.idx()].tx_pending = false;
        self.try_start(pid, now, ev);
    }

    /// Ask the CPU to start loading port `pid` for the event after the
    /// current one, a [`Network::on_tx_done`]: the run loop calls this one
    /// event ahead, so that its cache misses overlap the current event's
    /// work.
    #[inline]
    pub fn prefetch_port(&self, pid: PortId) {
        if let Some(port) = self.ports.get(pid.idx()) {
            prefetch(port);
        }
    }

    /// [`Network::prefetch_port`] for an arrival on the link port `pid`
    /// feeds ([`Network::on_arrive`]): its inbox, which holds the head
    /// packet, all the arrival reads before it picks an egress.
    #[inline]
    pub fn prefetch_arrival(&self, pid: PortId) {
        if let Some(inbox) = self.inboxes.get(pid.idx()) {
            prefetch(inbox);
        }
    }

    /// The head packet of a link reached the far end. Switches forward it
    /// (a packet for a cut-through switch's priority queue arrives only once
    /// it could start, see `Network::next_tx`); for a host, the packet is
    /// returned for its transport.
    #[inline]
    pub fn on_arrive<E: From<NetEvent> + Copy>(
        &mut self,
        pid: PortId,
        now: Time,
        ev: &mut EventQueue<E>,
    ) -> Option<Packet> {
        // The receiving side's inbox, not the sending port's state.
        let inbox = &mut self.inboxes[pid.idx()];
        let node = inbox.to();
        let cut_through = inbox.cut_through();
        // Copied once, from the inbox's head into this slot, before the
        // head is let go (`LinkInbox::pop_head`): taken out as an
        // `Option<Packet>`, it went through a temporary first.
        let &(_, mut pkt) = inbox.head()?;
        inbox.pop_head(pid, ev);
        if node.0 < self.n_hosts {
            if pkt.hops >= LOST_MARK {
                self.lost_on_arrival(pid, &pkt, now);
                return None;
            }
            debug_assert_eq!(node, pkt.dst, "packet delivered to the wrong host");
            self.records.counters.delivered[pkt.kind as usize] += 1;
            if self.tracing() {
                self.trace_row(now, node, TraceEvent::Deliver, Some(pid), &pkt, None, None);
            }
            return Some(pkt);
        }
        if self.tracing() && pkt.hops < LOST_MARK {
            self.trace_row(now, node, TraceEvent::Arrive, Some(pid), &pkt, None, None);
        }
        if pkt.hops >= self.params.hop_limit {
            // A lost packet's mark is above every hop limit.
            if pkt.hops >= LOST_MARK {
                self.lost_on_arrival(pid, &pkt, now);
            } else {
                self.refuse(node, pid, pkt, DropReason::HopLimit, now, ev, Offer::LAST);
            }
            return None;
        }
        let egress = self.route(node, &pkt, now);
        if cut_through {
            // Start no earlier than the moment that lets the transmission end
            // exactly when the last bit has arrived.
            let out = self.ports[egress.idx()].tx_time(pkt.size);
            pkt.ready_at = Time(pkt.ready_at.ps().saturating_sub(out.ps()));
        }
        self.offer_in_place(egress, &mut pkt, now, ev, Offer::FIRST);
        None
    }

    /// The transmission time of `size` bytes on the fastest of `hops` (in
    /// ps) if every one of them picks by priority, else `None`. Reads the
    /// dense `priority_rate` rather than the ports, which would be a cache
    /// line each.
    #[inline]
    pub(super) fn priority_tx(&self, size: u32, hops: &[PortId]) -> Option<u64> {
        let (mut fastest, mut fastest_rate) = (*hops.first()?, 0);
        for &h in hops {
            let r = self.priority_rate[h.idx()];
            if r == 0 {
                return None;
            }
            if r > fastest_rate {
                (fastest, fastest_rate) = (h, r);
            }
        }
        Some(self.ports[fastest.idx()].tx_time(size).ps())
    }

    /// Pick the egress port at switch `sw` for `pkt` (the switch stage's
    /// egress choice, [`crate::net::switch::egress`]).
    #[inline(always)]
    pub(super) fn route(&mut self, sw: NodeId, pkt: &Packet, now: Time) -> PortId {
        let hops = self.routing.next_hops(sw, pkt.dst);
        Self::choose_egress(&mut self.ports, &mut self.egress, sw, pkt, now, hops)
    }

    /// [`Network::route`] among `hops`, the equal-cost egress ports at `sw`
    /// towards `pkt`'s destination, already looked up.
    #[inline(always)]
    pub(super) fn choose_egress(
        ports: &mut [Port],
        egress: &mut Egress,
        sw: NodeId,
        pkt: &Packet,
        now: Time,
        hops: &[PortId],
    ) -> PortId {
        let n = hops.len();
        debug_assert!(n > 0, "no route");
        if n == 1 {
            return hops[0];
        }
        if egress.policy.reads_queues() {
            for &p in hops {
                ports[p.idx()].touch(now);
            }
        }
        let ports = &*ports;
        let i = egress.choose(sw, pkt, n, |i| ports[hops[i].idx()].queued_bytes());
        hops[i]
    }
}
