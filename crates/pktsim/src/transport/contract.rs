//! The contract between the run loop and a host protocol: the [`Transport`]
//! trait a protocol implements, and the [`Ctx`] through which it acts (send
//! packets, set timers, read its flows, report progress). A transport sees
//! only its hosts, its packets and its timers; it never touches the event
//! queue or the network's internals directly.
//!
//! Every call into a transport acts for one host (the flow's source for a
//! start, the packet's destination for a packet or a notice, the timer's or
//! the NIC's host), and the timers it sets belong to that host: they take
//! their place among that host's events ([`crate::engine::Tie`]).
//!
//! These are re-exported from the run loop (`sim`), which calls them; the
//! contract itself does not import the loop.

use crate::engine::{EventQueue, Rng, RngStreams};
use crate::event::Event;
use crate::net::Network;
use crate::packet::{FlowId, Header, NodeId, Packet, PacketKind};
use crate::time::{Duration, Rate, Time};
use crate::workload::FlowSpec;

/// A host protocol. One value per run holds the protocol state of every
/// host and flow. Implementations live in [`crate::transport`]. `Send`: a
/// partitioned run moves each group's copy to the thread that runs it.
pub trait Transport: Send {
    /// Protocol name, as in configs and result tables.
    fn name(&self) -> &'static str;
    /// Called once before the run starts (by the run loop's `Simulation::setup`,
    /// which the config path always calls): check what the protocol cannot
    /// run with (an error names the field), size tables, draw from its own
    /// random streams. Default: nothing to do.
    fn setup(&mut self, _env: &Setup) -> crate::Result<()> {
        Ok(())
    }
    /// A flow starts now at its source host.
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId);
    /// A packet reached its destination host `pkt.dst`.
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet);
    /// A timer set with [`Ctx::set_timer`] fired, at the host that set it
    /// ([`Ctx::host`]).
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8);
    /// Whether to call [`Transport::on_nic_idle`] (default: no).
    fn wants_nic_pull(&self) -> bool {
        false
    }
    /// `host`'s NIC has nothing left to send: the transport may send now.
    fn on_nic_idle(&mut self, _ctx: &mut Ctx, _host: NodeId) {}
    /// A switch refused one of this host's packets and sent a notice back
    /// (only when switches are configured to, `refusal = "notify_source"`):
    /// `pkt` carries the refused packet's flow and header, with
    /// [`crate::packet::flags::NOTICE`] set and `pkt.dst` the host that sent
    /// the refused packet. Default: ignore it (the protocol's own loss
    /// recovery still works).
    fn on_notice(&mut self, _ctx: &mut Ctx, _pkt: Packet) {}
    /// The state `host` keeps for `flow` (as its source or destination),
    /// for the per-flow time series (`[output.timeseries]`): each variable
    /// once, as `out(name, value)`, the name with its unit (`cwnd_bytes`,
    /// `srtt_us`, `dctcp_alpha`). Nothing for a flow `host` does not serve
    /// or has not started. Default: no variables.
    fn flow_state(&self, _host: NodeId, _flow: FlowId, _out: &mut dyn FnMut(&'static str, f64)) {}
    /// Protocol event counts for `summary.json` (e.g. timeouts), by name.
    /// Default: none.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// A fresh copy of this transport, not yet set up, to run another group
    /// of a partitioned run (`sim::groups`): each group sets its copy up
    /// and acts only for the hosts it holds. `None` (the default): the
    /// transport keeps state that one host's calls read for another, and
    /// runs on one thread.
    fn copy_for_group(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// Take from `other`, a copy made by [`Transport::copy_for_group`] that
    /// ran another group, the state of the hosts `theirs(host)` selects
    /// (gathering the groups into one). Called only on transports that
    /// made copies.
    fn absorb(&mut self, _other: Self, _theirs: &dyn Fn(NodeId) -> bool)
    where
        Self: Sized,
    {
    }
}

/// Per-flow progress kept by the simulation.
#[derive(Clone, Debug, Default)]
pub struct FlowProgress {
    /// In-order payload bytes the receiver holds.
    pub bytes_received: u64,
    /// When the last byte arrived.
    pub finish: Option<Time>,
    /// Data packets retransmitted.
    pub retransmits: u32,
}

/// How far a run's flows have come: kept by the run loop, updated through
/// [`Ctx::set_received`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Completion {
    /// Flows finished.
    pub finished: usize,
    /// When a flow last started or received a new in-order byte.
    pub last_progress: Time,
}

/// Segment sizes and header overhead of every transport in a run.
#[derive(Clone, Copy, Debug)]
pub struct PacketFormat {
    /// Payload bytes per full data packet.
    pub mss: u32,
    /// Header bytes on every packet.
    pub header: u32,
}

/// What a transport may read before the run starts, and its random streams.
pub struct Setup<'a> {
    net: &'a Network,
    flows: &'a [FlowSpec],
    format: PacketFormat,
    streams: RngStreams,
    protocol: &'static str,
    /// The hosts whose flows this copy runs (`None`: every host).
    runs: Option<&'a dyn Fn(NodeId) -> bool>,
}

impl<'a> Setup<'a> {
    /// The setup view of a run (built by the run loop).
    pub(crate) fn new(
        net: &'a Network,
        flows: &'a [FlowSpec],
        format: PacketFormat,
        streams: RngStreams,
        protocol: &'static str,
    ) -> Self {
        Setup {
            net,
            flows,
            format,
            streams,
            protocol,
            runs: None,
        }
    }
    /// The setup view of one group's copy in a partitioned run: it runs
    /// only the hosts `runs` accepts, so per-flow tables need entries for
    /// their flows alone ([`Setup::runs_host`]).
    pub(crate) fn for_hosts(mut self, runs: &'a dyn Fn(NodeId) -> bool) -> Self {
        self.runs = Some(runs);
        self
    }
    /// Whether this copy of the transport runs `host`'s calls: every host
    /// in a run on one group; in a partitioned run's other copies, only the
    /// hosts of the copy's group. A host it does not run is never called,
    /// and its state is replaced by its own group's when the run gathers.
    pub fn runs_host(&self, host: NodeId) -> bool {
        self.runs.is_none_or(|runs| runs(host))
    }
    /// Number of hosts in the network (`NodeId(0)..NodeId(n)`).
    pub fn n_hosts(&self) -> u32 {
        self.net.n_hosts()
    }
    /// Number of flows in the run.
    pub fn n_flows(&self) -> usize {
        self.flows.len()
    }
    /// A flow's spec.
    pub fn flow(&self, f: FlowId) -> &FlowSpec {
        &self.flows[f.idx()]
    }
    /// Packet sizes of the run.
    pub fn format(&self) -> PacketFormat {
        self.format
    }
    /// Access-link rate of a host.
    pub fn host_rate(&self, host: NodeId) -> Rate {
        self.net.host_rate(host)
    }
    /// The switch a host's access link leads to.
    pub fn attached_switch(&self, host: NodeId) -> NodeId {
        self.net.port(self.net.nic(host)).peer
    }
    /// One-way propagation delay along the first shortest path from host
    /// `src` to host `dst` (sum of the links' delays; no serialization).
    pub fn path_delay(&self, src: NodeId, dst: NodeId) -> Duration {
        self.net
            .path(src, dst)
            .iter()
            .fold(Duration::ZERO, |d, &p| d + self.net.port(p).delay)
    }
    /// The transport's own random stream `purpose`, instance `index` (e.g.
    /// one per host): named `transport.<protocol>.<purpose>` and seeded from
    /// the run seed, so a protocol's draws never shift those of the
    /// workload, the switches or another protocol.
    pub fn rng(&self, purpose: &str, index: u64) -> Rng {
        let name = format!("transport.{}.{purpose}", self.protocol);
        self.streams.stream(&name, index)
    }
}

/// What a transport may do: send, set timers, read flows, report progress.
pub struct Ctx<'a> {
    now: Time,
    host: NodeId,
    net: &'a mut Network,
    events: &'a mut EventQueue<Event>,
    flows: &'a [FlowSpec],
    progress: &'a mut [FlowProgress],
    completion: &'a mut Completion,
    format: PacketFormat,
}

impl<'a> Ctx<'a> {
    /// A context at `now`, acting for `host` (built by the run loop for
    /// each call).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        now: Time,
        host: NodeId,
        net: &'a mut Network,
        events: &'a mut EventQueue<Event>,
        flows: &'a [FlowSpec],
        progress: &'a mut [FlowProgress],
        completion: &'a mut Completion,
        format: PacketFormat,
    ) -> Self {
        Ctx {
            now,
            host,
            net,
            events,
            flows,
            progress,
            completion,
            format,
        }
    }
}

impl Ctx<'_> {
    /// Current time.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }
    /// Hand a packet to its source host's NIC.
    #[inline]
    pub fn send(&mut self, pkt: Packet) {
        self.net.send(pkt, self.now, self.events);
    }
    /// The host this call acts for: the flow's source in
    /// [`Transport::start_flow`], the packet's destination in
    /// [`Transport::on_packet`] and [`Transport::on_notice`], the host whose
    /// timer fired or whose NIC ran dry.
    #[inline]
    pub fn host(&self) -> NodeId {
        self.host
    }
    /// Fire `on_timer(id, kind)` at `at`, at this call's host
    /// ([`Ctx::host`]). `kind` must be below [`Event::TIMER_KINDS`] (it is
    /// part of the timer's place among same-time events). Timers cannot be
    /// cancelled: transports keep one pending per purpose and ignore stale
    /// ones.
    #[inline]
    pub fn set_timer(&mut self, at: Time, id: u32, kind: u8) {
        debug_assert!(kind < Event::TIMER_KINDS, "timer kind {kind} out of range");
        let timer = Event::Timer { id, kind };
        self.events.schedule(at, timer.tie(self.host), timer);
    }
    /// The flow's spec.
    #[inline]
    pub fn flow(&self, f: FlowId) -> &FlowSpec {
        &self.flows[f.idx()]
    }
    /// Number of flows in the run.
    pub fn n_flows(&self) -> usize {
        self.flows.len()
    }
    /// The receiver of `f` now holds `bytes` in-order payload bytes. When
    /// that reaches the flow size the flow is finished.
    #[inline]
    pub fn set_received(&mut self, f: FlowId, bytes: u64) {
        let p = &mut self.progress[f.idx()];
        if bytes > p.bytes_received {
            self.completion.last_progress = self.now;
        }
        p.bytes_received = bytes;
        if p.finish.is_none() && bytes >= self.flows[f.idx()].size {
            p.finish = Some(self.now);
            self.completion.finished += 1;
        }
    }
    /// Whether the receiver of `f` has every byte.
    #[inline]
    pub fn is_finished(&self, f: FlowId) -> bool {
        self.progress[f.idx()].finish.is_some()
    }
    /// Count one retransmitted data packet of `f`.
    #[inline]
    pub fn count_retransmit(&mut self, f: FlowId) {
        self.progress[f.idx()].retransmits += 1;
    }
    /// A data packet of flow `f` carrying payload from byte `first`: at most
    /// one MSS and `max_len` bytes, class 1, timestamped now. The caller sets
    /// protocol fields (priority, flags) before sending it.
    pub fn data_packet(&self, f: FlowId, first: u64, max_len: u64, header: Header) -> Packet {
        let spec = &self.flows[f.idx()];
        let len = (spec.size - first).min(self.format.mss as u64).min(max_len) as u32;
        let mut p = Packet::new(
            f,
            spec.src,
            spec.dst,
            len + self.format.header,
            PacketKind::Data,
            header,
        );
        p.payload = len;
        p.class = 1;
        p.sent_at = self.now;
        p
    }

    /// A control packet of flow `f` (request, token, credit, grant, ACK) of
    /// `size` bytes from `src` to `dst`: class 0 and priority 0, so that
    /// control goes ahead of data, timestamped now. The one place every
    /// transport makes its control packets.
    pub fn control_packet(
        &self,
        f: FlowId,
        src: NodeId,
        dst: NodeId,
        size: u32,
        header: Header,
    ) -> Packet {
        let mut p = Packet::new(f, src, dst, size, PacketKind::Control, header);
        p.class = 0;
        p.prio = 0;
        p.sent_at = self.now;
        p
    }

    /// Data bytes of flow `f` queued in its sender's NIC (not yet on the wire).
    #[inline]
    pub fn nic_flow_bytes(&self, f: FlowId) -> u64 {
        self.net.nic_flow_bytes(f)
    }
    /// When the last data packet of flow `f` left its sender's NIC queue,
    /// and how long it waited there (from its `sent_at`).
    #[inline]
    pub fn nic_flow_departed(&self, f: FlowId) -> (Time, Duration) {
        self.net.nic_flow_departed(f)
    }
    /// Free bytes in `host`'s NIC buffer.
    #[inline]
    pub fn nic_room(&self, host: NodeId) -> u64 {
        self.net.nic_room(host)
    }
    /// Ask for one [`Transport::on_nic_idle`] call when `host`'s NIC next
    /// runs dry (for transports that hold packets back while it is busy).
    #[inline]
    pub fn request_nic_idle(&mut self, host: NodeId) {
        self.net.request_nic_idle(host, self.now, self.events);
    }
    /// Whether `host`'s NIC is idle with nothing queued.
    #[inline]
    pub fn nic_idle(&self, host: NodeId) -> bool {
        self.net.nic_idle(host, self.now)
    }
    /// Access-link rate of a host.
    pub fn host_rate(&self, host: NodeId) -> Rate {
        self.net.host_rate(host)
    }
    /// Packet sizes of the run.
    #[inline]
    pub fn format(&self) -> PacketFormat {
        self.format
    }
    /// Number of hosts in the network (`NodeId(0)..NodeId(n)`).
    pub fn n_hosts(&self) -> u32 {
        self.net.n_hosts()
    }
    /// The switch a host's access link leads to (its rack). For centralised
    /// schedulers (Fastpass's arbiter) that must know the topology.
    pub fn attached_switch(&self, host: NodeId) -> NodeId {
        self.net.port(self.net.nic(host)).peer
    }
    /// Equal-cost egress ports at `node` towards host `dst` as the network
    /// was built (before any failure), with their rates: a source-routed
    /// packet's `path` indexes this list while routing has not changed.
    pub fn next_hop_rates(&self, node: NodeId, dst: NodeId) -> Vec<Rate> {
        self.net
            .built_routing()
            .next_hops(node, dst)
            .iter()
            .map(|&p| self.net.port(p).rate)
            .collect()
    }
    /// The nodes the equal-cost egress ports at `node` towards host `dst`
    /// lead to, in the order a source-routed packet's `path` indexes them:
    /// as the network was built with `as_built`, else as routing now knows
    /// them (around the failures it has learned of).
    pub fn next_hop_peers(&self, node: NodeId, dst: NodeId, as_built: bool) -> Vec<NodeId> {
        let routing = if as_built {
            self.net.built_routing()
        } else {
            self.net.routing()
        };
        routing
            .next_hops(node, dst)
            .iter()
            .map(|&p| self.net.port(p).peer)
            .collect()
    }
    /// How many times routing has recomputed its routes after learning of
    /// a failure or a recovery (`[network] failure_detection`); 0 in a run
    /// without scheduled events.
    pub fn route_changes(&self) -> u32 {
        self.net.route_changes()
    }
}
