//! One simulation run: the network, the flows, a transport, and the event
//! loop that ties them together. The loop's [`Event`] ([`crate::event`])
//! holds the network's own events beside transport timers and samples; the
//! transport contract ([`Transport`], [`Ctx`]) lives in
//! [`crate::transport::contract`]; both are re-exported here.
//!
//! The loop takes the earlier of the next pending event and the next flow
//! start (flows are kept sorted by start time, so starts never sit in the
//! heap). It ends when every flow has finished, at the time limit, or at the
//! event limit.

use crate::engine::{EventQueue, Popped, RngStreams, Tie};
use crate::metrics::ideal::{ideal_fct, Hop};
use crate::metrics::timeseries::{FlowSeries, SeriesSpec};
use crate::metrics::{FlowResult, LinkSample, QueueSample, RunOutput, WindowStats};
use crate::net::Network;
use crate::packet::{flags, FlowId, NodeId};
use crate::time::{Duration, Time};
use crate::workload::{FlowSpec, Workload};

pub use crate::event::Event;
pub use groups::endgame_flows;

mod groups;
pub use crate::transport::contract::{
    Completion, Ctx, FlowProgress, PacketFormat, Setup, Transport,
};

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
    /// Take link samples of every port at this interval, the first one
    /// interval in ([`LinkSample`]); the run's end takes a last one.
    pub link_sample_interval: Option<Duration>,
    /// Follow these flows' transport state ([`FlowSeries`]).
    pub timeseries: Option<SeriesSpec>,
    /// Stop ([`StopReason::NoProgress`]) when, with flows unfinished, no
    /// flow has started or received a new byte for this long.
    pub no_progress_limit: Option<Duration>,
    /// Set by another thread to end the run early ([`StopReason::Cancelled`]),
    /// e.g. on Ctrl-C in Python; read beside the progress report, every
    /// 65,536 events, so it costs nothing per event.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
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
    /// [`RunLimits::cancel`] was set: the caller stopped the run.
    Cancelled,
    /// No flow started or received a new byte for
    /// [`RunLimits::no_progress_limit`] while flows were unfinished.
    NoProgress,
    /// The next event lies beyond the clock's range
    /// ([`crate::time::MAX_DURATION`], 106 days).
    ClockRange,
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
            StopReason::Cancelled => "cancelled",
            StopReason::NoProgress => "no_progress",
            StopReason::ClockRange => "clock_range",
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
    completion: Completion,
    n_events: u64,
    format: PacketFormat,
    limits: RunLimits,
    samples: Vec<QueueSample>,
    link_samples: Vec<LinkSample>,
    /// The per-flow time series, when followed.
    series: Option<FlowSeries>,
    /// The scheduled network changes applied so far.
    fault_marks: Vec<crate::metrics::FaultMark>,
    seed: u64,
    wall: std::time::Duration,
    set_up: bool,
    /// The groups the run starts in, if it was split ([`Simulation::split`]).
    split: Option<Box<groups::Split<T>>>,
    /// How the windows of the split went, once it ran.
    window_stats: Option<WindowStats>,
}

/// The end of the clock's range: events are never run past it.
const CLOCK_END: Time = Time(crate::time::MAX_DURATION.ps());

impl<T: Transport> Simulation<T> {
    /// A sample belongs to no component; it is the last phase of an instant.
    const SAMPLE_TIE: Tie = Event::Sample.tie(NodeId(Tie::GLOBAL));
    /// A link sample's tie: right after a queue sample of the same instant.
    const LINK_SAMPLE_TIE: Tie = Event::LinkSample.tie(NodeId(Tie::GLOBAL));
    /// A time-series sample's tie: after the link sample.
    const SERIES_SAMPLE_TIE: Tie = Event::SeriesSample.tie(NodeId(Tie::GLOBAL));

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
        net.set_flow_count(n);
        net.set_nic_pull(transport.wants_nic_pull());
        // The order of simultaneous events is seeded like every other
        // random choice of the run (see `engine::event_queue`).
        let ties = RngStreams::new(seed).stream("engine.ties", 0).next_u64();
        let mut events = EventQueue::with_salt(ties);
        if let Some(iv) = limits.queue_sample_interval {
            if iv.ps() > 0 {
                events.schedule(Time::ZERO, Self::SAMPLE_TIE, Event::Sample);
            }
        }
        if let Some(iv) = limits.link_sample_interval.filter(|iv| iv.ps() > 0) {
            events.schedule(Time::ZERO + iv, Self::LINK_SAMPLE_TIE, Event::LinkSample);
        }
        let series = limits
            .timeseries
            .as_ref()
            .map(|s| FlowSeries::new(s, &workload.flows, net.n_hosts() as usize));
        if series.as_ref().and_then(|s| s.interval()).is_some() {
            events.schedule(Time::ZERO, Self::SERIES_SAMPLE_TIE, Event::SeriesSample);
        }
        Self::schedule_faults(&net, &mut events);
        Simulation {
            net,
            transport,
            events,
            flows: workload.flows,
            tags: workload.tags,
            progress: vec![FlowProgress::default(); n],
            next_flow: 0,
            completion: Completion::default(),
            n_events: 0,
            format,
            limits,
            samples: Vec::new(),
            link_samples: Vec::new(),
            series,
            fault_marks: Vec::new(),
            seed,
            wall: std::time::Duration::ZERO,
            set_up: false,
            split: None,
            window_stats: None,
        }
    }

    /// Let the transport check and prepare itself ([`Transport::setup`])
    /// before the first event. Runs once; later calls do nothing. Runs made
    /// from a config always call it; a caller that builds a `Simulation`
    /// directly should too, to get the transport's errors as errors.
    pub fn setup(&mut self) -> crate::Result<()> {
        if self.set_up {
            return Ok(());
        }
        self.set_up = true;
        let env = Setup::new(
            &self.net,
            &self.flows,
            self.format,
            RngStreams::new(self.seed),
            self.transport.name(),
        );
        self.transport.setup(&env)
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
        if !self.set_up {
            // A caller that built the simulation directly and did not call
            // `setup` gets it here; its errors are for `setup` to return.
            if let Err(e) = self.setup() {
                panic!(
                    "transport setup failed (call Simulation::setup to get this as an error): {e}"
                );
            }
        }
        let started = std::time::Instant::now();
        if let Some(split) = self.split.take() {
            if let Some(reason) = self.run_split(*split, pause, &mut report) {
                self.wall += started.elapsed();
                self.net.touch_all(self.events.now());
                return reason;
            }
        }
        let time_limit = self.limits.time_limit.unwrap_or(Time::MAX);
        let event_limit = self.limits.event_limit.unwrap_or(u64::MAX);
        let n_flows = self.flows.len();
        let reason = loop {
            if self.cancel_requested() {
                break StopReason::Cancelled;
            }
            if self.completion.finished == n_flows && self.next_flow == n_flows {
                break StopReason::AllFlowsDone;
            }
            let next_ev = self.events.peek_time().unwrap_or(Time::MAX);
            let next_start = self
                .flows
                .get(self.next_flow)
                .map_or(Time::MAX, |f| f.start);
            let t = next_ev.min(next_start);
            if let Some(reason) = self.stop_before(t, time_limit, pause, event_limit) {
                break reason;
            }
            // Flow starts go before events at the same instant.
            if next_start <= next_ev {
                self.n_events += 1;
                self.report_every_64k(t, report.as_mut());
                let (f, src) = (
                    self.flows[self.next_flow].id,
                    self.flows[self.next_flow].src,
                );
                self.next_flow += 1;
                self.events.advance_to(next_start);
                self.completion.last_progress = next_start;
                self.with_ctx(next_start, src, |t, ctx| t.start_flow(ctx, f));
                continue;
            }
            // Run the events up to the next flow start or limit without
            // going back through the checks above: none of their inputs
            // change until then, except the count of finished flows, which
            // matters only once every flow has started.
            let horizon = Time(next_start.0.saturating_sub(1))
                .min(time_limit)
                .min(pause)
                .min(CLOCK_END);
            let all_started = self.next_flow == n_flows;
            loop {
                let Some((now, tie, ev)) = self.events.pop() else {
                    unreachable!()
                };
                self.n_events += 1;
                self.report_every_64k(now, report.as_mut());
                self.run_event(now, tie, ev);
                if all_started && self.completion.finished == n_flows {
                    break;
                }
                if self.n_events >= event_limit
                    || (self.n_events & 0xFFFF == 0 && self.cancel_requested())
                {
                    break;
                }
                // The progress deadline moves as flows progress; past it,
                // the checks above decide.
                match self.events.peek_time() {
                    Some(t) if t <= horizon && t <= self.progress_deadline() => {}
                    _ => break,
                }
            }
        };
        self.wall += started.elapsed();
        self.net.touch_all(self.events.now());
        reason
    }

    /// Why the run stops before running anything at `t`, the earliest
    /// pending event or flow start (`Time::MAX`: none), if it does. Idle
    /// time with no started flow unfinished moves the progress deadline.
    fn stop_before(
        &mut self,
        t: Time,
        time_limit: Time,
        pause: Time,
        event_limit: u64,
    ) -> Option<StopReason> {
        if t == Time::MAX {
            // Nothing pending yet flows unfinished: a transport gave up.
            return Some(StopReason::Stalled);
        }
        if t > time_limit {
            self.events.advance_to(time_limit.max(self.events.now()));
            return Some(StopReason::TimeLimit);
        }
        if t > CLOCK_END {
            // The clock's range (106 days) is enforced here as well as
            // on the config's times: nothing runs where time saturates.
            return Some(StopReason::ClockRange);
        }
        if self.next_flow == self.completion.finished {
            // Nothing that started is unfinished: idle time is not a
            // lack of progress.
            self.completion.last_progress = self.events.now();
        } else if t > self.progress_deadline() {
            return Some(StopReason::NoProgress);
        }
        if t > pause {
            self.events.advance_to(pause.max(self.events.now()));
            return Some(StopReason::Paused);
        }
        (self.n_events >= event_limit).then_some(StopReason::EventLimit)
    }

    /// The time after which the run has made no progress for
    /// [`RunLimits::no_progress_limit`] (never without a limit).
    #[inline(always)]
    fn progress_deadline(&self) -> Time {
        match self.limits.no_progress_limit {
            Some(limit) => Time(self.completion.last_progress.0.saturating_add(limit.ps())),
            None => Time::MAX,
        }
    }

    /// Whether the caller asked the run to stop ([`RunLimits::cancel`]).
    fn cancel_requested(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.limits
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Call the progress callback once every 65,536 events.
    #[inline(always)]
    fn report_every_64k(&self, now: Time, report: Option<&mut &mut dyn FnMut(&Progress)>) {
        if self.n_events & 0xFFFF == 0 {
            if let Some(cb) = report {
                cb(&Progress {
                    now,
                    flows_done: self.completion.finished,
                    flows_total: self.flows.len(),
                    events: self.n_events,
                });
            }
        }
    }

    /// Handle one event popped at `now`; `popped` gives its tie.
    #[inline(always)]
    fn run_event(&mut self, now: Time, popped: Popped, ev: Event) {
        if let Some(kind) = self.stage().run_event(now, popped, ev) {
            self.take_sample(kind, now, ev);
        }
    }

    /// Schedule every moment of `net`'s fault plan ([`Event::Fault`]).
    fn schedule_faults(net: &Network, events: &mut EventQueue<Event>) {
        for (i, &(at, _)) in net.fault_actions().iter().enumerate() {
            let e = Event::Fault(i as u32);
            events.schedule(at, e.tie(NodeId(Tie::GLOBAL)), e);
        }
    }

    /// Run moment `i` of the fault plan on `net` at `now` for the nodes
    /// `ours` selects; an applied step is recorded in `marks` with
    /// `net`'s counters just before it.
    fn run_fault(
        net: &mut Network,
        i: u32,
        now: Time,
        ours: &dyn Fn(NodeId) -> bool,
        events: &mut EventQueue<Event>,
        marks: &mut Vec<crate::metrics::FaultMark>,
    ) {
        let counters_before = net.counters().clone();
        if let Some(what) = net.run_fault(i as usize, now, ours, events) {
            marks.push(crate::metrics::FaultMark {
                at: now,
                what,
                counters_before,
            });
        }
    }

    /// Take a sample of every port (the serial loop's; a group of a
    /// partitioned run samples its own) and schedule the next one.
    #[cold]
    fn take_sample(&mut self, kind: SampleKind, now: Time, ev: Event) {
        match kind {
            SampleKind::Fault => {
                if let Event::Fault(i) = ev {
                    let marks = &mut self.fault_marks;
                    Self::run_fault(&mut self.net, i, now, &|_| true, &mut self.events, marks);
                }
            }
            SampleKind::Queues => {
                let switches_only = !self.limits.sample_host_queues;
                self.net
                    .sample_queues(now, switches_only, &mut self.samples);
                if let Some(iv) = self.limits.queue_sample_interval {
                    self.events
                        .schedule(now + iv, Self::SAMPLE_TIE, Event::Sample);
                }
            }
            SampleKind::Links => {
                self.net
                    .sample_links_of(now, &|_| true, &mut self.link_samples);
                if let Some(iv) = self.limits.link_sample_interval {
                    self.events
                        .schedule(now + iv, Self::LINK_SAMPLE_TIE, Event::LinkSample);
                }
            }
            SampleKind::Series => {
                let Some(series) = self.series.as_mut() else {
                    return;
                };
                series.sample(now, &self.flows, &|_| true, &self.transport);
                if let Some(iv) = series.interval() {
                    self.events
                        .schedule(now + iv, Self::SERIES_SAMPLE_TIE, Event::SeriesSample);
                }
            }
        }
    }

    /// The run's state, borrowed for one event.
    #[inline(always)]
    fn stage(&mut self) -> Stage<'_, T> {
        Stage {
            net: &mut self.net,
            transport: &mut self.transport,
            events: &mut self.events,
            flows: &self.flows,
            progress: &mut self.progress,
            completion: &mut self.completion,
            format: self.format,
            series: self.series.as_mut(),
        }
    }

    /// Call into the transport with a context at time `now`, acting for
    /// `host` (the timers it sets belong to that host).
    #[inline]
    fn with_ctx(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut T, &mut Ctx)) {
        self.stage().with_ctx(now, host, f);
    }

    /// Path of a flow as ideal-FCT hops.
    fn hops(&self, src: NodeId, dst: NodeId) -> Vec<Hop> {
        self.net
            .path(src, dst)
            .iter()
            .map(|p| {
                let port = self.net.port(*p);
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

    /// With link samples on, one more at the run's end, unless one was
    /// just taken: the samples then add up to what the links did in the
    /// whole run.
    fn last_link_sample(&mut self) {
        if self.limits.link_sample_interval.is_none() {
            return;
        }
        let now = self.events.now();
        if self.link_samples.last().is_some_and(|s| s.time >= now) {
            return;
        }
        self.net
            .sample_links_of(now, &|_| true, &mut self.link_samples);
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
                drops: self.net.records().flow_drops(s.id),
                tag: self.tags.get(s.tag as usize).cloned().unwrap_or_default(),
                query: s.query,
            });
        }
        let switch_counters = self.net.switch_counters(self.events.now());
        self.last_link_sample();
        self.net.drain_in_flight(self.events.now());
        RunOutput {
            flows,
            queue_samples: std::mem::take(&mut self.samples),
            link_samples: std::mem::take(&mut self.link_samples),
            trace: self.net.take_trace(),
            timeseries: self
                .series
                .take()
                .map(FlowSeries::finish)
                .unwrap_or_default(),
            counters: self.net.counters().clone(),
            faults: std::mem::take(&mut self.fault_marks),
            events: self.n_events,
            windows: self.window_stats.take(),
            sim_time: self.events.now(),
            wall_time: self.wall,
            protocol: self.transport.name().to_string(),
            protocol_counters: self
                .transport
                .counters()
                .into_iter()
                .chain(switch_counters)
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            seed: self.seed,
            stop_reason: reason.name().to_string(),
        }
    }
}

/// What a sample event asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SampleKind {
    /// Every (switch) port's queue ([`QueueSample`]).
    Queues,
    /// Every port's link counters ([`LinkSample`]).
    Links,
    /// The followed flows' state ([`FlowSeries`]).
    Series,
    /// A moment of the network's fault plan (the event,
    /// [`Event::Fault`], says which): no data here, so that the answer of
    /// every event stays one byte.
    Fault,
}

/// The state that events change, borrowed: the whole run's in the serial
/// loop, one group's copy in a partitioned run (`groups`). Both run their
/// events through [`Stage::run_event`], so they do the same thing.
pub(crate) struct Stage<'a, T> {
    pub(crate) net: &'a mut Network,
    pub(crate) transport: &'a mut T,
    pub(crate) events: &'a mut EventQueue<Event>,
    pub(crate) flows: &'a [FlowSpec],
    pub(crate) progress: &'a mut [FlowProgress],
    pub(crate) completion: &'a mut Completion,
    pub(crate) format: PacketFormat,
    /// The per-flow time series, when followed after every event.
    pub(crate) series: Option<&'a mut FlowSeries>,
}

impl<T: Transport> Stage<'_, T> {
    /// Handle one event popped at `now`; `popped` gives its tie. Returns
    /// the sample it asks for, if it is a sample, which the caller takes
    /// (the serial loop samples every port, a group its own).
    #[inline(always)]
    #[must_use]
    pub(crate) fn run_event(&mut self, now: Time, popped: Popped, ev: Event) -> Option<SampleKind> {
        // Start loading the state the next event will need while this
        // one runs (see [`Network::prefetch_port`]).
        match self.events.peek() {
            Some(&Event::Arrive(p)) => self.net.prefetch_arrival(p),
            Some(&Event::TxDone(p)) => self.net.prefetch_port(p),
            _ => {}
        }
        match ev {
            Event::Arrive(p) => {
                if let Some(pkt) = self.net.on_arrive(p, now, self.events) {
                    if pkt.has(flags::NOTICE) {
                        self.with_ctx(now, pkt.dst, |t, ctx| t.on_notice(ctx, pkt));
                    } else {
                        self.with_ctx(now, pkt.dst, |t, ctx| t.on_packet(ctx, pkt));
                    }
                }
            }
            Event::TxDone(p) => self.net.on_tx_done(p, now, self.events),
            Event::Timer { id, kind } => {
                let host = NodeId(popped.tie().owner());
                self.with_ctx(now, host, |t, ctx| t.on_timer(ctx, id, kind));
            }
            Event::NicIdle(host) => {
                self.with_ctx(now, host, |t, ctx| t.on_nic_idle(ctx, host));
            }
            Event::Sample => return Some(SampleKind::Queues),
            Event::LinkSample => return Some(SampleKind::Links),
            Event::SeriesSample => return Some(SampleKind::Series),
            Event::Fault(_) => return Some(SampleKind::Fault),
        }
        None
    }

    /// Call into the transport with a context at time `now`, acting for
    /// `host` (the timers it sets belong to that host).
    #[inline(always)]
    pub(crate) fn with_ctx(&mut self, now: Time, host: NodeId, f: impl FnOnce(&mut T, &mut Ctx)) {
        let mut ctx = Ctx::new(
            now,
            host,
            self.net,
            self.events,
            self.flows,
            self.progress,
            self.completion,
            self.format,
        );
        f(self.transport, &mut ctx);
        if let Some(s) = self.series.as_deref_mut() {
            s.after_event(now, host, &*self.transport);
        }
    }
}
