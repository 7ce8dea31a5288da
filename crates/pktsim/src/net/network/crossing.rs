//! A network split among groups of a partitioned run (issue 33): every
//! group runs its own copy of the network and touches only the state of
//! the nodes it holds. A packet put on a link into another group's node
//! does not go into this copy's inbox for that link: it becomes a
//! [`Crossing`], handed to the receiving group between windows, which puts
//! it into its own inbox for the link. At the end the state of every node
//! is gathered back into one copy ([`Network::absorb`]).

use super::*;

/// A packet put on a link that leads into another group: what the sending
/// side's transmission decided, for the receiving side's inbox.
#[derive(Clone, Copy, Debug)]
pub struct Crossing {
    /// The port that feeds the link (it names the link and its inbox).
    pub link: PortId,
    /// The node the link leads to.
    pub to: NodeId,
    /// When the packet reaches the far end (the receiver's `Arrive`).
    pub arrival: Time,
    /// The packet.
    pub pkt: Packet,
    /// Its ready time there (the tail's arrival, for cut-through).
    pub ready_at: Time,
    /// Its hop count after this link.
    pub hops: u8,
}

impl Network {
    /// Mark the links that lead into another group ([`Port::remote`]):
    /// `ours(node)` says whether this copy holds `node`. Packets put on a
    /// remote link from here on become [`Crossing`]s.
    pub fn set_remote_links(&mut self, ours: &dyn Fn(NodeId) -> bool) {
        for p in &mut self.ports {
            p.remote = ours(p.owner) && !ours(p.peer);
        }
        for i in 0..self.ports.len() {
            self.refresh_detour(PortId(i as u32));
        }
    }

    /// The packets put on remote links since the last call, in the order
    /// they were put.
    pub fn take_crossings(&mut self) -> std::vec::Drain<'_, Crossing> {
        self.crossings.drain(..)
    }

    /// Take a packet another group put on a link into a node of this copy:
    /// into the link's inbox here, with the arrival event the sender would
    /// have scheduled had the inbox been its own (the event's place among
    /// its instant's events does not depend on when it is scheduled, see
    /// `engine::event_queue`).
    pub fn receive_crossing<E: From<NetEvent> + Copy>(
        &mut self,
        c: Crossing,
        ev: &mut EventQueue<E>,
    ) {
        let inbox = &mut self.inboxes[c.link.idx()];
        if inbox.put(c.arrival, c.pkt, c.ready_at, c.hops) {
            NetEvent::Arrive(c.link).schedule_for(inbox.to(), c.arrival, ev);
        }
    }

    /// Whether this copy can run as one group of a partitioned run: its
    /// switch stage keeps its state per node or port
    /// ([`RefusalHook::splits`]). The reason when it cannot.
    pub fn partition_blocker(&self) -> Option<&'static str> {
        // Plug-ins keep no state of their own during a run (their queues
        // are the ports', their hook is below).
        let zero_delay = self
            .fault_plan()
            .and_then(|p| p.shortest_delay_set())
            .is_some_and(|d| d.ps() == 0);
        if zero_delay {
            // A window lasts the shortest delay a cut link will ever have.
            return Some("an [[event]] that sets a link's delay to 0");
        }
        match &self.hook {
            Some(h) if !h.splits() => Some("a refusal hook whose state is not per node"),
            _ => None,
        }
    }

    /// Move into this copy the state `other` holds for the nodes
    /// `theirs(node)` says it held (its ports, the inboxes of the links
    /// into them, their shared buffers, NIC bookkeeping, random streams,
    /// round-robin counters and refusal-hook state), and add its records
    /// and counts to these. `src_of`
    /// gives a flow's source host (whose group kept the flow's NIC
    /// bookkeeping). Afterwards no link of this copy is remote.
    pub fn absorb(
        &mut self,
        other: &mut Network,
        theirs: &dyn Fn(NodeId) -> bool,
        src_of: &dyn Fn(usize) -> NodeId,
    ) {
        for (mine, o) in self.ports.iter_mut().zip(&mut other.ports) {
            if theirs(o.owner) {
                std::mem::swap(mine, o);
            }
        }
        for (mine, o) in self.inboxes.iter_mut().zip(&mut other.inboxes) {
            if theirs(o.to()) {
                std::mem::swap(mine, o);
            }
        }
        // One pool per switch, in node order (see `build`).
        for (j, (mine, o)) in self.pools.iter_mut().zip(&mut other.pools).enumerate() {
            if theirs(NodeId(self.n_hosts + j as u32)) {
                std::mem::swap(mine, o);
            }
        }
        self.records.merge(&other.records);
        if let (Some(mine), Some(o)) = (self.trace.as_deref_mut(), other.trace.as_deref_mut()) {
            mine.absorb(o);
        }
        for f in 0..self.nic_flow_bytes.len().min(other.nic_flow_bytes.len()) {
            if theirs(src_of(f)) {
                self.nic_flow_bytes[f] = other.nic_flow_bytes[f];
                self.nic_flow_departed[f] = other.nic_flow_departed[f];
            }
        }
        for h in 0..self.n_hosts {
            if theirs(NodeId(h)) {
                self.nic_idle.take_host(&mut other.nic_idle, h as usize);
            }
        }
        self.egress.absorb(&mut other.egress, theirs);
        let owners: Vec<NodeId> = self.ports.iter().map(|p| p.owner).collect();
        if let (Some(mine), Some(o)) = (self.hook.as_mut(), other.hook.as_mut()) {
            let port = |p: PortId| theirs(owners[p.idx()]);
            mine.absorb(
                o.as_mut(),
                &crate::net::switch::Theirs {
                    node: theirs,
                    port: &port,
                },
            );
        }
        for p in &mut self.ports {
            p.remote = false;
        }
        for i in 0..self.ports.len() {
            self.refresh_detour(PortId(i as u32));
        }
    }
}
