//! Transport state per host (issue 33, step 1): a protocol written as
//! [`HostProtocol`] keeps its run-wide settings and tables in one value that
//! no call may change, and everything that changes in a value per host.
//!
//! Every call into a transport acts for one host ([`Ctx::host`]); here that
//! host's state is the only state the call can write: the handler gets the
//! protocol by shared reference and that host's state by mutable
//! reference. A host's flows (the sender side of the flows it sends, the
//! receiver side of those it receives), its timers' targets, its random
//! streams and its event counts live in its state. That is what lets a
//! partitioned run give each piece of the network the hosts it contains,
//! and why the result cannot depend on how the network is cut.
//!
//! [`PerHost`] turns a [`HostProtocol`] into the run loop's [`Transport`];
//! [`FlowSlots`] numbers each host's flows so that per-host tables are
//! plain vectors.

use crate::packet::{FlowId, NodeId, Packet};
use crate::transport::contract::{Ctx, Setup, Transport};

/// A host protocol whose state is kept per host (see the module docs).
/// `&self` is the run-wide part: settings and tables built in
/// [`HostProtocol::setup`], read-only once the run starts.
pub trait HostProtocol: Send {
    /// The state of one host: its flows, timers, random streams, counts.
    type Host: Send;
    /// Protocol name, as in configs and result tables.
    fn name(&self) -> &'static str;
    /// Called once before the run, before any host is made: check what the
    /// protocol cannot run with, build run-wide tables. Default: nothing.
    fn setup(&mut self, _env: &Setup) -> crate::Result<()> {
        Ok(())
    }
    /// The state of `host` at the start of the run (after `setup`).
    fn new_host(&self, env: &Setup, host: NodeId) -> Self::Host;
    /// A flow starts now at its source host (`host` is its state).
    fn start_flow(&self, host: &mut Self::Host, ctx: &mut Ctx, flow: FlowId);
    /// A packet reached its destination host.
    fn on_packet(&self, host: &mut Self::Host, ctx: &mut Ctx, pkt: Packet);
    /// A timer this host set fired.
    fn on_timer(&self, host: &mut Self::Host, ctx: &mut Ctx, id: u32, kind: u8);
    /// Whether to call [`HostProtocol::on_nic_idle`] (default: no).
    fn wants_nic_pull(&self) -> bool {
        false
    }
    /// This host's NIC has nothing left to send.
    fn on_nic_idle(&self, _host: &mut Self::Host, _ctx: &mut Ctx) {}
    /// A switch refused one of this host's packets and sent a notice back
    /// (see [`Transport::on_notice`]). Default: ignore it.
    fn on_notice(&self, _host: &mut Self::Host, _ctx: &mut Ctx, _pkt: Packet) {}
    /// [`Transport::flow_state`] of `flow` at host `at`, whose state is
    /// `host`. Default: no variables.
    fn flow_state(
        &self,
        _host: &Self::Host,
        _at: NodeId,
        _flow: FlowId,
        _out: &mut dyn FnMut(&'static str, f64),
    ) {
    }
    /// Protocol event counts for `summary.json`, summed over `hosts` (given
    /// in host order, so any merge is the same on every run). Default: none.
    fn counters(&self, _hosts: &[Self::Host]) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// A copy of the run-wide part before setup, for another group of a
    /// partitioned run ([`Transport::copy_for_group`]). `None` (the
    /// default) until the protocol is known to share nothing between hosts
    /// but packets.
    fn copy_for_group(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
}

/// A [`HostProtocol`] with the state of every host: the run loop's
/// [`Transport`]. Each call goes to the state of the host it acts for.
pub struct PerHost<P: HostProtocol> {
    protocol: P,
    hosts: Vec<P::Host>,
}

impl<P: HostProtocol> PerHost<P> {
    /// A transport running `protocol`; hosts are made at setup.
    pub fn new(protocol: P) -> Self {
        PerHost {
            protocol,
            hosts: Vec::new(),
        }
    }
    /// The run-wide part.
    pub fn protocol(&self) -> &P {
        &self.protocol
    }
    /// The run-wide part, to change settings before the run starts.
    pub fn protocol_mut(&mut self) -> &mut P {
        &mut self.protocol
    }
    /// Every host's state, in host order (empty before setup).
    pub fn hosts(&self) -> &[P::Host] {
        &self.hosts
    }
    /// Every host's state, mutable (tests switch logs on through it).
    pub fn hosts_mut(&mut self) -> &mut [P::Host] {
        &mut self.hosts
    }
    /// The state of the host `ctx` acts for.
    #[inline(always)]
    fn split(&mut self, host: NodeId) -> (&P, &mut P::Host) {
        (&self.protocol, &mut self.hosts[host.idx()])
    }
}

impl<P: HostProtocol> Transport for PerHost<P> {
    fn name(&self) -> &'static str {
        self.protocol.name()
    }
    fn setup(&mut self, env: &Setup) -> crate::Result<()> {
        self.protocol.setup(env)?;
        let protocol = &self.protocol;
        self.hosts = (0..env.n_hosts())
            .map(|h| protocol.new_host(env, NodeId(h)))
            .collect();
        Ok(())
    }
    #[inline]
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        let (p, h) = self.split(ctx.host());
        p.start_flow(h, ctx, flow);
    }
    #[inline]
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet) {
        let (p, h) = self.split(ctx.host());
        p.on_packet(h, ctx, pkt);
    }
    #[inline]
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8) {
        let (p, h) = self.split(ctx.host());
        p.on_timer(h, ctx, id, kind);
    }
    fn wants_nic_pull(&self) -> bool {
        self.protocol.wants_nic_pull()
    }
    #[inline]
    fn on_nic_idle(&mut self, ctx: &mut Ctx, host: NodeId) {
        debug_assert_eq!(host, ctx.host());
        let (p, h) = self.split(host);
        p.on_nic_idle(h, ctx);
    }
    #[inline]
    fn on_notice(&mut self, ctx: &mut Ctx, pkt: Packet) {
        let (p, h) = self.split(ctx.host());
        p.on_notice(h, ctx, pkt);
    }
    fn flow_state(&self, host: NodeId, flow: FlowId, out: &mut dyn FnMut(&'static str, f64)) {
        if let Some(h) = self.hosts.get(host.idx()) {
            self.protocol.flow_state(h, host, flow, out);
        }
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.protocol.counters(&self.hosts)
    }
    fn copy_for_group(&self) -> Option<Self> {
        Some(PerHost::new(self.protocol.copy_for_group()?))
    }
    fn absorb(&mut self, mut other: Self, theirs: &dyn Fn(NodeId) -> bool) {
        for (h, (mine, o)) in self.hosts.iter_mut().zip(&mut other.hosts).enumerate() {
            if theirs(NodeId(h as u32)) {
                std::mem::swap(mine, o);
            }
        }
    }
}

/// Where each flow's state sits in its hosts' tables: a flow is the
/// `send(f)`-th flow its source sends and the `recv(f)`-th flow its
/// destination receives, counting in flow-id order. A host's sender table
/// has `n_send(host)` entries and its receiver table `n_recv(host)`; a
/// host's flows in slot order are its flows in id order.
///
/// Each flow's two hosts are kept too, for the calls that are given a host
/// and must first tell whether it is the flow's source or destination
/// ([`FlowSlots::send_slot_at`], [`FlowSlots::recv_slot_at`]: the time
/// series). The packet path never reads them: a packet's handler already
/// acts at the right host and takes `send(f)` or `recv(f)` directly.
#[derive(Clone, Debug, Default)]
pub struct FlowSlots {
    send: Vec<u32>,
    recv: Vec<u32>,
    n_send: Vec<u32>,
    n_recv: Vec<u32>,
    /// Each flow's (source, destination).
    ends: Vec<(NodeId, NodeId)>,
}

impl FlowSlots {
    /// The slots of every flow of the run. A host the copy does not run
    /// ([`Setup::runs_host`]) gets empty tables: its flows keep their slot
    /// numbers, but `n_send` and `n_recv` are 0 there, so a group of a
    /// partitioned run holds per-flow state only for its own hosts' flows
    /// (sixteen copies of every flow's sender would cost gigabytes on a
    /// run of a million flows).
    pub fn new(env: &Setup) -> Self {
        let ends = (0..env.n_flows()).map(|i| {
            let spec = env.flow(FlowId(i as u32));
            (spec.src, spec.dst)
        });
        FlowSlots::from_ends(env.n_hosts() as usize, ends).only_at(|h| env.runs_host(h))
    }
    /// These slots with empty tables at every host `runs` refuses: their
    /// flows keep their slot numbers (the host that does run them counts
    /// them alike).
    fn only_at(mut self, runs: impl Fn(NodeId) -> bool) -> Self {
        for h in 0..self.n_send.len() {
            if !runs(NodeId(h as u32)) {
                self.n_send[h] = 0;
                self.n_recv[h] = 0;
            }
        }
        self
    }
    /// The slots of flows `0..` with these (source, destination) pairs, on
    /// `n_hosts` hosts.
    fn from_ends(n_hosts: usize, ends: impl ExactSizeIterator<Item = (NodeId, NodeId)>) -> Self {
        let n = ends.len();
        let mut s = FlowSlots {
            send: Vec::with_capacity(n),
            recv: Vec::with_capacity(n),
            n_send: vec![0; n_hosts],
            n_recv: vec![0; n_hosts],
            ends: Vec::with_capacity(n),
        };
        for (src, dst) in ends {
            s.send.push(s.n_send[src.idx()]);
            s.n_send[src.idx()] += 1;
            s.recv.push(s.n_recv[dst.idx()]);
            s.n_recv[dst.idx()] += 1;
            s.ends.push((src, dst));
        }
        s
    }
    /// The flow's index in its source host's sender table.
    #[inline(always)]
    pub fn send(&self, f: FlowId) -> usize {
        self.send[f.idx()] as usize
    }
    /// The flow's index in its destination host's receiver table.
    #[inline(always)]
    pub fn recv(&self, f: FlowId) -> usize {
        self.recv[f.idx()] as usize
    }
    /// How many flows `host` sends.
    pub fn n_send(&self, host: NodeId) -> usize {
        self.n_send.get(host.idx()).map_or(0, |&n| n as usize)
    }
    /// How many flows `host` receives.
    pub fn n_recv(&self, host: NodeId) -> usize {
        self.n_recv.get(host.idx()).map_or(0, |&n| n as usize)
    }
    /// The flow's source host (`None` for a flow not in the run).
    pub fn source(&self, f: FlowId) -> Option<NodeId> {
        self.ends.get(f.idx()).map(|e| e.0)
    }
    /// The flow's destination host (`None` for a flow not in the run).
    pub fn destination(&self, f: FlowId) -> Option<NodeId> {
        self.ends.get(f.idx()).map(|e| e.1)
    }
    /// The flow's index in `host`'s sender table if `host` is its source;
    /// `None` if it is not, or the flow is not in the run. For calls given
    /// any host (the time series), not the packet path.
    pub fn send_slot_at(&self, host: NodeId, f: FlowId) -> Option<usize> {
        (self.source(f)? == host).then(|| self.send(f))
    }
    /// The flow's index in `host`'s receiver table if `host` is its
    /// destination; `None` if it is not, or the flow is not in the run. For
    /// calls given any host (the time series), not the packet path.
    pub fn recv_slot_at(&self, host: NodeId, f: FlowId) -> Option<usize> {
        (self.destination(f)? == host).then(|| self.recv(f))
    }
    /// The flow's entry at `host`: in its sender table `send` if `host` is
    /// the source, else in its receiver table `recv` if the destination;
    /// `None` if neither, or the table has no such entry. For calls given
    /// any host (the time series' `flow_state`), not the packet path.
    pub fn end_at<'t, S, R>(
        &self,
        host: NodeId,
        f: FlowId,
        send: &'t [S],
        recv: &'t [R],
    ) -> Option<FlowEnd<&'t S, &'t R>> {
        if let Some(slot) = self.send_slot_at(host, f) {
            send.get(slot).map(FlowEnd::Sender)
        } else {
            let slot = self.recv_slot_at(host, f)?;
            recv.get(slot).map(FlowEnd::Receiver)
        }
    }
}

/// A flow's state at one of its two hosts ([`FlowSlots::end_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEnd<S, R> {
    /// At its source: the sender's state.
    Sender(S),
    /// At its destination: the receiver's state.
    Receiver(R),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three hosts; flows 0: 0→1, 1: 2→1, 2: 0→2, 3: 1→0.
    fn slots() -> FlowSlots {
        let ends = [(0, 1), (2, 1), (0, 2), (1, 0)].map(|(s, d)| (NodeId(s), NodeId(d)));
        FlowSlots::from_ends(3, ends.into_iter())
    }

    #[test]
    fn slots_count_each_hosts_flows_in_id_order() {
        let s = slots();
        let send: Vec<usize> = (0..4).map(|f| s.send(FlowId(f))).collect();
        let recv: Vec<usize> = (0..4).map(|f| s.recv(FlowId(f))).collect();
        assert_eq!(send, [0, 0, 1, 0]);
        assert_eq!(recv, [0, 1, 0, 0]);
        let n_send: Vec<usize> = (0..4).map(|h| s.n_send(NodeId(h))).collect();
        let n_recv: Vec<usize> = (0..4).map(|h| s.n_recv(NodeId(h))).collect();
        // Host 3 is not in the run: no flows.
        assert_eq!(n_send, [2, 1, 1, 0]);
        assert_eq!(n_recv, [1, 2, 1, 0]);
    }

    #[test]
    fn a_copy_holds_tables_only_for_its_own_hosts() {
        // The copy runs host 1 alone: hosts 0 and 2 get empty tables, and
        // host 1's flows keep the numbers the whole run gives them.
        let all = slots();
        let s = slots().only_at(|h| h == NodeId(1));
        let n_send: Vec<usize> = (0..3).map(|h| s.n_send(NodeId(h))).collect();
        let n_recv: Vec<usize> = (0..3).map(|h| s.n_recv(NodeId(h))).collect();
        assert_eq!(n_send, [0, 1, 0]);
        assert_eq!(n_recv, [0, 2, 0]);
        for f in 0..4 {
            assert_eq!(s.send(FlowId(f)), all.send(FlowId(f)));
            assert_eq!(s.recv(FlowId(f)), all.recv(FlowId(f)));
        }
    }

    #[test]
    fn ends_are_each_flows_hosts() {
        let s = slots();
        assert_eq!(s.source(FlowId(1)), Some(NodeId(2)));
        assert_eq!(s.destination(FlowId(1)), Some(NodeId(1)));
        assert_eq!(s.source(FlowId(4)), None);
        assert_eq!(s.destination(FlowId(4)), None);
    }

    #[test]
    fn send_slot_only_at_the_source() {
        let s = slots();
        assert_eq!(s.send_slot_at(NodeId(0), FlowId(0)), Some(0));
        assert_eq!(s.send_slot_at(NodeId(0), FlowId(2)), Some(1));
        assert_eq!(s.send_slot_at(NodeId(2), FlowId(1)), Some(0));
        // The destination, a host not on the flow, a host not in the run.
        assert_eq!(s.send_slot_at(NodeId(1), FlowId(0)), None);
        assert_eq!(s.send_slot_at(NodeId(2), FlowId(0)), None);
        assert_eq!(s.send_slot_at(NodeId(9), FlowId(0)), None);
        // A flow id out of range.
        assert_eq!(s.send_slot_at(NodeId(0), FlowId(4)), None);
        assert_eq!(s.send_slot_at(NodeId(0), FlowId(u32::MAX)), None);
    }

    #[test]
    fn recv_slot_only_at_the_destination() {
        let s = slots();
        assert_eq!(s.recv_slot_at(NodeId(1), FlowId(0)), Some(0));
        assert_eq!(s.recv_slot_at(NodeId(1), FlowId(1)), Some(1));
        assert_eq!(s.recv_slot_at(NodeId(2), FlowId(2)), Some(0));
        assert_eq!(s.recv_slot_at(NodeId(0), FlowId(3)), Some(0));
        // The source, a host not on the flow, a host not in the run.
        assert_eq!(s.recv_slot_at(NodeId(0), FlowId(0)), None);
        assert_eq!(s.recv_slot_at(NodeId(2), FlowId(0)), None);
        assert_eq!(s.recv_slot_at(NodeId(9), FlowId(0)), None);
        // A flow id out of range.
        assert_eq!(s.recv_slot_at(NodeId(1), FlowId(4)), None);
        assert_eq!(s.recv_slot_at(NodeId(1), FlowId(u32::MAX)), None);
    }

    #[test]
    fn a_flow_to_its_own_source_has_both_slots_there() {
        let s = FlowSlots::from_ends(2, [(NodeId(1), NodeId(1))].into_iter());
        assert_eq!(s.send_slot_at(NodeId(1), FlowId(0)), Some(0));
        assert_eq!(s.recv_slot_at(NodeId(1), FlowId(0)), Some(0));
        assert_eq!(s.send_slot_at(NodeId(0), FlowId(0)), None);
    }

    #[test]
    fn a_flows_end_is_its_sender_at_the_source_and_its_receiver_at_the_destination() {
        let s = slots();
        // Host 0 sends flows 0 and 2 and receives flow 3.
        let (send, recv) = (["f0", "f2"], ["f3"]);
        let at = |h, f| s.end_at(NodeId(h), FlowId(f), &send, &recv);
        assert_eq!(at(0, 2), Some(FlowEnd::Sender(&"f2")));
        assert_eq!(at(0, 3), Some(FlowEnd::Receiver(&"f3")));
        // Not on the flow, or a table without the entry.
        assert_eq!(at(0, 1), None);
        assert_eq!(
            s.end_at::<&str, &str>(NodeId(0), FlowId(2), &["f0"], &[]),
            None
        );
    }
}
