//! One simulation run: the network, the flows, a transport, and the event
//! loop that ties them together.
//!
//! The loop takes the earlier of the next pending event and the next flow
//! start (flows are kept sorted by start time, so starts never sit in the
//! heap). It ends when every flow has finished, at the time limit, or at the
//! event limit.

use crate::engine::EventQueue;
use crate::metrics::ideal::{ideal_fct, Hop};
use crate::metrics::{FlowResult, QueueSample, RunOutput};
use crate::net::packet::{FlowId, Header, NodeId, Packet, PacketKind, PortId};
use crate::net::Network;
use crate::time::{Duration, Rate, Time};
use crate::workload::{FlowSpec, Workload};

/// Everything that can happen. Small and `Copy`: ids only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A port finished a transmission and has more packets queued.
    TxDone(PortId),
    /// The head packet on a port's link reached the far end.
    Arrive(PortId),
    /// A transport timer. `id` and `kind` are the transport's own.
    Timer {
        /// Transport-defined target (usually a flow id).
        id: u32,
        /// Transport-defined timer kind.
        kind: u8,
    },
    /// A host NIC finished sending and has nothing queued (only when the
    /// transport asked for NIC pulls).
    NicIdle(NodeId),
    /// Take a queue sample.
    Sample,
}

/// A host protocol. One value per run holds the protocol state of every
/// host and flow. Implementations live in [`crate::transport`].
pub trait Transport {
    /// Protocol name, as in configs and result tables.
    fn name(&self) -> &'static str;
    /// A flow starts now at its source host.
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId);
    /// A packet reached its destination host `pkt.dst`.
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet);
    /// A timer set with [`Ctx::set_timer`] fired.
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8);
    /// Whether to call [`Transport::on_nic_idle`] (default: no).
    fn wants_nic_pull(&self) -> bool {
        false
    }
    /// `host`'s NIC has nothing left to send: the transport may send now.
    fn on_nic_idle(&mut self, _ctx: &mut Ctx, _host: NodeId) {}
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

/// Segment sizes and header overhead of every transport in a run.
#[derive(Clone, Copy, Debug)]
pub struct PacketFormat {
    /// Payload bytes per full data packet.
    pub mss: u32,
    /// Header bytes on every packet.
    pub header: u32,
}

/// What a transport may do: send, set timers, read flows, report progress.
pub struct Ctx<'a> {
    now: Time,
    net: &'a mut Network,
    events: &'a mut EventQueue<Event>,
    flows: &'a [FlowSpec],
    progress: &'a mut [FlowProgress],
    finished: &'a mut usize,
    format: PacketFormat,
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
    /// Fire `on_timer(id, kind)` at `at`. Timers cannot be cancelled:
    /// transports keep one pending per purpose and ignore stale ones.
    #[inline]
    pub fn set_timer(&mut self, at: Time, id: u32, kind: u8) {
        self.events.schedule(at, Event::Timer { id, kind });
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
        p.bytes_received = bytes;
        if p.finish.is_none() && bytes >= self.flows[f.idx()].size {
            p.finish = Some(self.now);
            *self.finished += 1;
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
        self.net.ports[self.net.nic(host).idx()].peer
    }
    /// Equal-cost egress ports at `node` towards host `dst`, with their
    /// rates: a source-routed packet's `path` indexes this list.
    pub fn next_hop_rates(&self, node: NodeId, dst: NodeId) -> Vec<Rate> {
        self.net
            .routing
            .next_hops(node, dst)
            .iter()
            .map(|p| self.net.ports[p.idx()].rate)
            .collect()
    }
}

/// Progress report for long runs (progress bars).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time.
    pub now: Time,
    /// Flows finished.
    pub flows_done: usize,
    /// Flows in the run.
    pub flows_total: usize,
    /// Events processed.
    pub events: u64,
}

/// When to stop and what to record.
#[derive(Clone, Debug)]
pub struct RunLimits {
    /// Stop at this simulated time.
    pub time_limit: Option<Time>,
    /// Stop after this many events.
    pub event_limit: Option<u64>,
    /// Sample switch (or all) queues at this interval.
    pub queue_sample_interval: Option<Duration>,
    /// Sample host NIC queues too.
    pub sample_host_queues: bool,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every flow finished.
    AllFlowsDone,
    /// The simulated-time limit was reached.
    TimeLimit,
    /// The event limit was reached.
    EventLimit,
    /// `run_until` reached its time (the run can continue).
    Paused,
    /// Flows are unfinished but nothing is pending: the transport gave up.
    Stalled,
}

impl StopReason {
    /// Name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::AllFlowsDone => "all_flows_done",
            StopReason::TimeLimit => "time_limit",
            StopReason::EventLimit => "event_limit",
            StopReason::Paused => "paused",
            StopReason::Stalled => "stalled",
        }
    }
}

/// A simulation, generic over the transport so the hot path is monomorphic.
pub struct Simulation<T: Transport> {
    /// The network.
    pub net: Network,
    /// The transport.
    pub transport: T,
    events: EventQueue<Event>,
    flows: Vec<FlowSpec>,
    tags: Vec<String>,
    progress: Vec<FlowProgress>,
    next_flow: usize,
    finished: usize,
    n_events: u64,
    format: PacketFormat,
    limits: RunLimits,
    samples: Vec<QueueSample>,
    seed: u64,
    wall: std::time::Duration,
}

impl<T: Transport> Simulation<T> {
    /// Set up a run. Flows must be sorted by start time with ids equal to
    /// their index (the workload generator guarantees this).
    pub fn new(
        mut net: Network,
        transport: T,
        workload: Workload,
        format: PacketFormat,
        limits: RunLimits,
        seed: u64,
    ) -> Self {
        let n = workload.flows.len();
        debug_assert!(workload.flows.windows(2).all(|w| w[0].start <= w[1].start));
        debug_assert!(workload
            .flows
            .iter()
            .enumerate()
            .all(|(i, f)| f.id.idx() == i));
        net.flow_drops = vec![0; n];
        net.set_nic_pull(transport.wants_nic_pull());
        let mut events = EventQueue::new();
        if let Some(iv) = limits.queue_sample_interval {
            if iv.ps() > 0 {
                events.schedule(Time::ZERO, Event::Sample);
            }
        }
        Simulation {
            net,
            transport,
            events,
            flows: workload.flows,
            tags: workload.tags,
            progress: vec![FlowProgress::default(); n],
            next_flow: 0,
            finished: 0,
            n_events: 0,
            format,
            limits,
            samples: Vec::new(),
            seed,
            wall: std::time::Duration::ZERO,
        }
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.events.now()
    }

    /// Progress of every flow.
    pub fn progress(&self) -> &[FlowProgress] {
        &self.progress
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.n_events
    }

    /// Run to the end (all flows done or a limit).
    pub fn run(&mut self, report: Option<&mut dyn FnMut(&Progress)>) -> StopReason {
        self.run_until(Time::MAX, report)
    }

    /// Run until `pause` (exclusive of later events), the end, or a limit.
    pub fn run_until(
        &mut self,
        pause: Time,
        mut report: Option<&mut dyn FnMut(&Progress)>,
    ) -> StopReason {
        let started = std::time::Instant::now();
        let time_limit = self.limits.time_limit.unwrap_or(Time::MAX);
        let event_limit = self.limits.event_limit.unwrap_or(u64::MAX);
        let n_flows = self.flows.len();
        let reason = loop {
            if self.finished == n_flows && self.next_flow == n_flows {
                break StopReason::AllFlowsDone;
            }
            let next_ev = self.events.peek_time().unwrap_or(Time::MAX);
            let next_start = self
                .flows
                .get(self.next_flow)
                .map_or(Time::MAX, |f| f.start);
            let t = next_ev.min(next_start);
            if t == Time::MAX {
                // Nothing pending yet flows unfinished: a transport gave up.
                break StopReason::Stalled;
            }
            if t > time_limit {
                self.events.advance_to(time_limit.max(self.events.now()));
                break StopReason::TimeLimit;
            }
            if t > pause {
                self.events.advance_to(pause.max(self.events.now()));
                break StopReason::Paused;
            }
            if self.n_events >= event_limit {
                break StopReason::EventLimit;
            }
            self.n_events += 1;
            if self.n_events & 0xFFFF == 0 {
                if let Some(cb) = report.as_mut() {
                    cb(&Progress {
                        now: t,
                        flows_done: self.finished,
                        flows_total: n_flows,
                        events: self.n_events,
                    });
                }
            }
            // Flow starts go before events at the same instant.
            if next_start <= next_ev {
                let f = self.flows[self.next_flow].id;
                self.next_flow += 1;
                self.events.advance_to(next_start);
                self.with_ctx(next_start, |t, ctx| t.start_flow(ctx, f));
                continue;
            }
            let Some((now, ev)) = self.events.pop() else {
                unreachable!()
            };
            match ev {
                Event::Arrive(p) => {
                    if let Some(pkt) = self.net.on_arrive(p, now, &mut self.events) {
                        self.with_ctx(now, |t, ctx| t.on_packet(ctx, pkt));
                    }
                }
                Event::TxDone(p) => self.net.on_tx_done(p, now, &mut self.events),
                Event::Timer { id, kind } => {
                    self.with_ctx(now, |t, ctx| t.on_timer(ctx, id, kind));
                }
                Event::NicIdle(host) => {
                    self.with_ctx(now, |t, ctx| t.on_nic_idle(ctx, host));
                }
                Event::Sample => {
                    self.net
                        .sample_queues(now, !self.limits.sample_host_queues, &mut self.samples);
                    if let Some(iv) = self.limits.queue_sample_interval {
                        self.events.schedule(now + iv, Event::Sample);
                    }
                }
            }
        };
        self.wall += started.elapsed();
        self.net.touch_all(self.events.now());
        reason
    }

    /// Call into the transport with a context at time `now`.
    #[inline]
    fn with_ctx(&mut self, now: Time, f: impl FnOnce(&mut T, &mut Ctx)) {
        let mut ctx = Ctx {
            now,
            net: &mut self.net,
            events: &mut self.events,
            flows: &self.flows,
            progress: &mut self.progress,
            finished: &mut self.finished,
            format: self.format,
        };
        f(&mut self.transport, &mut ctx);
    }

    /// Path of a flow as ideal-FCT hops.
    fn hops(&self, src: NodeId, dst: NodeId) -> Vec<Hop> {
        self.net
            .path(src, dst)
            .iter()
            .map(|p| {
                let port = &self.net.ports[p.idx()];
                Hop {
                    rate: port.rate,
                    delay: port.delay,
                    cut_through: port.cut_through,
                }
            })
            .collect()
    }

    /// Ideal FCT of a flow (see [`crate::metrics::ideal`]).
    pub fn ideal_fct(&self, f: FlowId) -> Duration {
        let s = &self.flows[f.idx()];
        ideal_fct(
            s.size,
            self.format.mss,
            self.format.header,
            &self.hops(s.src, s.dst),
        )
    }

    /// End the run: count what is still in flight and collect the results.
    pub fn finish(mut self, reason: StopReason) -> RunOutput {
        let mut ideal_cache: std::collections::HashMap<(NodeId, NodeId), Vec<Hop>> =
            std::collections::HashMap::new();
        let mut flows = Vec::with_capacity(self.flows.len());
        for (s, p) in self.flows.iter().zip(&self.progress) {
            let hops = ideal_cache
                .entry((s.src, s.dst))
                .or_insert_with(|| self.hops(s.src, s.dst));
            flows.push(FlowResult {
                id: s.id.0,
                src: s.src,
                dst: s.dst,
                size_bytes: s.size,
                start: s.start,
                finish: p.finish,
                ideal_fct: ideal_fct(s.size, self.format.mss, self.format.header, hops),
                bytes_received: p.bytes_received,
                retransmits: p.retransmits,
                drops: self.net.flow_drops[s.id.idx()],
                tag: self.tags.get(s.tag as usize).cloned().unwrap_or_default(),
            });
        }
        self.net.drain_in_flight();
        RunOutput {
            flows,
            queue_samples: std::mem::take(&mut self.samples),
            counters: self.net.counters.clone(),
            events: self.n_events,
            sim_time: self.events.now(),
            wall_time: self.wall,
            protocol: self.transport.name().to_string(),
            seed: self.seed,
            stop_reason: reason.name().to_string(),
        }
    }
}
