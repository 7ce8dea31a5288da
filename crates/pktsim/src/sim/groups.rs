//! A partitioned run (issue 33, step 2): the run's pieces
//! ([`crate::net::partition`]) dealt into groups, each group with its own
//! copy of the network and the transport, its own event queue and its
//! share of the flows, run in lookahead windows on threads
//! ([`crate::engine::windows`]).
//!
//! A group acts only for its own nodes: its copy of the network changes
//! only their ports, the inboxes of the links into them and their NIC
//! bookkeeping; its copy of the transport only their hosts' state. A
//! packet put on a link into another group becomes a [`Crossing`], handed
//! over at the window's end; the window is no longer than the shortest cut
//! link, so it cannot take effect inside the window. Each group runs its
//! events in the order one queue for the whole network would
//! (`engine::event_queue`), so the groups together run the serial run's
//! events.
//!
//! The run ends in one queue: when few flows are left
//! ([`endgame_flows`]), or near a limit, the groups are gathered back into
//! the simulation's own network, transport and queue, and the serial loop
//! goes on from there, stopping exactly where a serial run stops. Flows,
//! event counts and counters are then those of the serial run, whatever the
//! number of threads.

use super::{Event, Progress, SampleKind, Simulation, Stage, CLOCK_END};
use crate::engine::windows::{Piece, WindowEnd, Windows};
use crate::engine::EventQueue;
use crate::metrics::timeseries::FlowSeries;
use crate::metrics::{FaultMark, LinkSample, QueueSample, WindowStats};
use crate::net::partition::Partition;
use crate::net::{Crossing, Network};
use crate::packet::NodeId;
use crate::time::{Duration, Time};
use crate::transport::contract::{Completion, FlowProgress, PacketFormat, Setup, Transport};
use crate::workload::FlowSpec;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A run's split into groups, prepared before it starts
/// ([`Simulation::split`]).
pub(super) struct Split<T> {
    /// The group of each node, by node id.
    group_of: Vec<u32>,
    /// Network and transport copies of groups 1.. (group 0 runs on the
    /// simulation's own).
    copies: Vec<(Network, T)>,
    /// The window: the shortest delay of a link between two pieces.
    lookahead: Duration,
    /// Threads to run the groups on.
    threads: usize,
}

/// How many unfinished flows the groups leave to the serial loop, given
/// the most flows that finished in one window so far (`burst`): the groups
/// stop once no more than this many are left, so that the run's last
/// events run in one queue and stop where a serial run stops. A window in
/// which all of them finished would end past the serial run's last event
/// (the run is then still the same on every thread count, since the
/// windows are, but counts a few events more than a serial run); four
/// times the largest burst seen, and at least 8, keeps that far from
/// anything measured, while the serial tail stays short.
pub fn endgame_flows(burst: usize) -> usize {
    burst.saturating_mul(4).max(8)
}

/// Deal `partition`'s pieces into at most `groups` groups of about equal
/// weight, keeping neighbours together so that few packets cross between
/// groups: pieces are laid out in the order of the hosts nearest them (a
/// leaf with its hosts by its first host, a fat tree's aggregation switch
/// next to its pod's leaves), then cut into consecutive runs of equal
/// weight. Returns the group of each node and the number of groups.
///
/// A piece weighs the ports of its nodes, which matches the events of a
/// fabric's switches when traffic spreads evenly; the pieces with hosts
/// share their ports' weight in proportion to the bytes `flows` will send
/// from and to their hosts, known before the run. Weighed by ports alone,
/// the busiest of 16 groups of the 20,000-flow k = 32 bench ran 1.088× the
/// mean group's events (BENCHMARKS.md, "Without sixteen cores").
fn deal(
    partition: &Partition,
    net: &Network,
    groups: usize,
    flows: &[FlowSpec],
) -> (Vec<u32>, usize) {
    let groups = groups.clamp(1, partition.len().max(1));
    let nearest = nearest_host(net);
    let weights = piece_weights(partition, net, flows);
    let mut order: Vec<(u32, u32, u64)> = (0..partition.len() as u32)
        .map(|p| {
            let key = partition
                .nodes(p)
                .iter()
                .map(|n| nearest[n.idx()])
                .min()
                .unwrap_or(u32::MAX);
            (key, p, weights[p as usize])
        })
        .collect();
    order.sort_unstable();
    let total: u64 = order.iter().map(|o| o.2).sum::<u64>().max(1);
    let mut group_of = vec![0u32; net.nodes().len()];
    let mut before = 0u64;
    for (_, p, w) in order {
        // The group whose share of the weight holds this piece's middle.
        let middle = before as u128 * 2 + w as u128;
        let g = (middle * groups as u128 / (2 * total as u128)).min(groups as u128 - 1) as u32;
        before += w;
        for n in partition.nodes(p) {
            group_of[n.idx()] = g;
        }
    }
    (group_of, groups)
}

/// Each piece's weight for [`deal`]: its nodes' ports, the total of the
/// pieces with hosts shared among them by the bytes their hosts send and
/// receive (by ports alone when the flows carry no bytes).
fn piece_weights(partition: &Partition, net: &Network, flows: &[FlowSpec]) -> Vec<u64> {
    let ports = |p: u32| -> u64 {
        partition
            .nodes(p)
            .iter()
            .map(|n| net.nodes()[n.idx()].ports.len() as u64)
            .sum()
    };
    let mut weights: Vec<u64> = (0..partition.len() as u32).map(ports).collect();
    let mut bytes = vec![0u128; partition.len()];
    for f in flows {
        for end in [f.src, f.dst] {
            bytes[partition.piece_of(end) as usize] += f.size as u128;
        }
    }
    let all_bytes: u128 = bytes.iter().sum();
    let hosts_ports: u128 = (0..partition.len())
        .filter(|&p| bytes[p] > 0)
        .map(|p| weights[p] as u128)
        .sum();
    for (w, &b) in weights.iter_mut().zip(&bytes) {
        // b > 0 makes all_bytes > 0.
        if b > 0 {
            *w = (hosts_ports * b / all_bytes) as u64;
        }
    }
    weights
}

/// For each node, the smallest id among the hosts nearest to it (fewest
/// links away): a breadth-first search from every host at once, in host
/// order.
fn nearest_host(net: &Network) -> Vec<u32> {
    let n = net.nodes().len();
    let mut nearest = vec![u32::MAX; n];
    let mut frontier: Vec<usize> = (0..net.n_hosts() as usize).collect();
    for &h in &frontier {
        nearest[h] = h as u32;
    }
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &u in &frontier {
            for pid in &net.nodes()[u].ports {
                let v = net.port(*pid).peer.idx();
                if nearest[v] == u32::MAX {
                    next.push(v);
                }
            }
        }
        next.sort_unstable();
        next.dedup();
        // A node reached at this distance takes the smallest host among its
        // neighbours already reached.
        let found: Vec<(usize, u32)> = next
            .iter()
            .map(|&v| {
                let best = net.nodes()[v]
                    .ports
                    .iter()
                    .map(|pid| nearest[net.port(*pid).peer.idx()])
                    .min()
                    .unwrap_or(u32::MAX);
                (v, best)
            })
            .collect();
        for (v, best) in found {
            nearest[v] = best;
        }
        frontier = next;
    }
    nearest
}

impl<T: Transport> Simulation<T> {
    /// Run this simulation on `threads` threads: `partition`'s pieces dealt
    /// into one group more than `nets` holds copies, each group running its
    /// own copy of the network (the simulation's own for the first group,
    /// then `nets`, built like it) and of the transport. One copy fewer than
    /// threads gives a group per thread; more groups than threads are taken
    /// in turn, heaviest first. Call after [`Simulation::setup`] and before
    /// the run starts. Returns the number of groups, or why the run stays in
    /// one (then nothing changes).
    pub fn split(
        &mut self,
        partition: &Partition,
        nets: Vec<Network>,
        threads: usize,
    ) -> Result<usize, String> {
        if self.n_events > 0 || !self.set_up {
            return Err("a run splits only after setup, before its first event".into());
        }
        if let Some(why) = self.net.partition_blocker() {
            return Err(format!("{why} runs on one thread"));
        }
        let Some(mut lookahead) = partition.lookahead() else {
            return Err("the topology has no link to cut between pieces".into());
        };
        // A scheduled delay change may shorten a cut link: the window must
        // stay within the shortest delay the run will ever have.
        // (A delay of 0 is a partition blocker, above.)
        if let Some(d) = self.net.fault_plan().and_then(|p| p.shortest_delay_set()) {
            lookahead = lookahead.min(d);
        }
        let (group_of, groups) = deal(partition, &self.net, nets.len() + 1, &self.flows);
        if groups < 2 {
            return Err("one group".into());
        }
        let mut copies = Vec::with_capacity(groups - 1);
        for (copy, mut net) in nets.into_iter().take(groups - 1).enumerate() {
            // Copy `copy` runs group `copy + 1` (the simulation's own is 0).
            let g = copy as u32 + 1;
            let runs = |h: NodeId| group_of[h.idx()] == g;
            let Some(mut t) = self.transport.copy_for_group() else {
                return Err(format!(
                    "{}'s hosts read each other's state; it runs on one thread",
                    self.transport.name()
                ));
            };
            net.set_flow_count(self.flows.len());
            net.set_nic_pull(t.wants_nic_pull());
            let env = Setup::new(
                &net,
                &self.flows,
                self.format,
                crate::engine::RngStreams::new(self.seed),
                t.name(),
            )
            .for_hosts(&runs);
            t.setup(&env).map_err(|e| e.to_string())?;
            copies.push((net, t));
        }
        self.split = Some(Box::new(Split {
            group_of,
            copies,
            lookahead,
            threads: threads.max(1),
        }));
        Ok(groups)
    }

    /// Run the groups of `split` in windows until few flows are left, a
    /// limit or `pause` is near, then gather them back into this simulation.
    /// Returns why the run stops, if it stops here.
    pub(super) fn run_split(
        &mut self,
        split: Split<T>,
        pause: Time,
        report: &mut Option<&mut dyn FnMut(&Progress)>,
    ) -> Option<super::StopReason> {
        let Split {
            group_of,
            mut copies,
            lookahead,
            threads,
        } = split;
        let n_flows = self.flows.len();
        if n_flows - self.completion.finished <= endgame_flows(0) {
            return None;
        }
        let time_limit = self.limits.time_limit.unwrap_or(Time::MAX);
        let limit = Time(time_limit.min(pause).min(CLOCK_END).0.saturating_add(1));
        let sampling = self.limits.queue_sample_interval.filter(|iv| iv.ps() > 0);
        let link_sampling = self.limits.link_sample_interval.filter(|iv| iv.ps() > 0);
        let totals = Totals::default();
        let salt = self.events.salt();
        let flows: &[FlowSpec] = &self.flows;
        let n_groups = copies.len() + 1;
        let mut groups = Vec::with_capacity(n_groups);
        let own = (&mut self.net, &mut self.transport);
        let nets = std::iter::once(own).chain(copies.iter_mut().map(|(n, t)| (n, t)));
        for (g, (net, transport)) in nets.enumerate() {
            let g = g as u32;
            net.set_remote_links(&|n| group_of[n.idx()] == g);
            let mut events = EventQueue::with_salt(salt);
            let progress = if g == 0 {
                // The simulation's own queue holds the first sample.
                std::mem::swap(&mut events, &mut self.events);
                std::mem::take(&mut self.progress)
            } else {
                Self::schedule_first_samples(&self.limits, self.series.as_ref(), &mut events);
                Self::schedule_faults(net, &mut events);
                vec![FlowProgress::default(); n_flows]
            };
            let starts = flows
                .iter()
                .filter(|f| group_of[f.src.idx()] == g)
                .map(|f| f.id.0)
                .collect();
            groups.push(Group {
                id: g,
                net,
                transport,
                events,
                flows,
                starts,
                next_start: 0,
                progress,
                completion: Completion::default(),
                format: self.format,
                group_of: &group_of,
                sampling,
                link_sampling,
                switches_only: !self.limits.sample_host_queues,
                samples: Vec::new(),
                link_samples: Vec::new(),
                fault_marks: Vec::new(),
                series: self.series.clone(),
                totals: &totals,
            });
        }
        let mut windows = Windows::new(groups, lookahead, threads);
        let mut watch = Watch {
            n_flows,
            lookahead,
            limits: &self.limits,
            totals: &totals,
            last: (0, 0),
            finished_before: 0,
            burst: 0,
            reported: 0,
            stopped: None,
        };
        let end = windows.run(limit, |we: &WindowEnd| watch.go_on(we, report));
        self.window_stats = Some(WindowStats {
            groups: n_groups,
            threads: threads.min(n_groups),
            windows: end.windows,
            events: end.events,
            critical: end.critical,
            events_by_group: windows.events_by_piece(),
        });
        let stopped = watch.stopped;
        let parts: Vec<Part> = windows
            .into_pieces()
            .into_iter()
            .map(|g| Part {
                events: g.events,
                progress: g.progress,
                completion: g.completion,
                samples: g.samples,
                link_samples: g.link_samples,
                fault_marks: g.fault_marks,
                series: g.series,
                started: g.next_start,
            })
            .collect();
        self.gather(parts, &group_of, copies, end.events);
        stopped
    }

    /// The first sample events of a group other than the first (whose
    /// queue is the simulation's own, which holds them already).
    fn schedule_first_samples(
        limits: &super::RunLimits,
        series: Option<&FlowSeries>,
        events: &mut EventQueue<Event>,
    ) {
        if limits.queue_sample_interval.is_some_and(|iv| iv.ps() > 0) {
            events.schedule(Time::ZERO, Self::SAMPLE_TIE, Event::Sample);
        }
        if let Some(iv) = limits.link_sample_interval.filter(|iv| iv.ps() > 0) {
            events.schedule(Time::ZERO + iv, Self::LINK_SAMPLE_TIE, Event::LinkSample);
        }
        if series.and_then(|s| s.interval()).is_some() {
            events.schedule(Time::ZERO, Self::SERIES_SAMPLE_TIE, Event::SeriesSample);
        }
    }

    /// Gather the groups back into this simulation: state of each node from
    /// the group that held it, every pending event into one queue.
    fn gather(
        &mut self,
        parts: Vec<Part>,
        group_of: &[u32],
        copies: Vec<(Network, T)>,
        events: u64,
    ) {
        let mut parts = parts.into_iter();
        let Some(first) = parts.next() else {
            return;
        };
        self.events = first.events;
        self.progress = first.progress;
        self.completion = first.completion;
        self.samples = first.samples;
        self.link_samples = first.link_samples;
        self.fault_marks = first.fault_marks;
        self.series = first.series;
        self.next_flow = first.started;
        self.n_events = events;
        let rest: Vec<Part> = parts.collect();
        let latest = rest
            .iter()
            .map(|p| p.events.now())
            .fold(self.events.now(), Time::max);
        self.events.advance_to(latest);
        for (g, (mut part, (mut net, transport))) in rest.into_iter().zip(copies).enumerate() {
            let g = g as u32 + 1;
            let theirs = |n: NodeId| group_of[n.idx()] == g;
            let flows = &self.flows;
            self.net.absorb(&mut net, &theirs, &|f| flows[f].src);
            self.transport.absorb(transport, &theirs);
            for (f, (mine, o)) in self.progress.iter_mut().zip(&part.progress).enumerate() {
                if theirs(flows[f].dst) {
                    mine.bytes_received = o.bytes_received;
                    mine.finish = o.finish;
                }
                if theirs(flows[f].src) {
                    mine.retransmits = o.retransmits;
                }
            }
            self.completion.finished += part.completion.finished;
            self.completion.last_progress = self
                .completion
                .last_progress
                .max(part.completion.last_progress);
            self.next_flow += part.started;
            // Every group samples at the same instants: one sample event
            // stays.
            while let Some((t, popped, e)) = part.events.pop() {
                let every_group = matches!(
                    e,
                    Event::Sample | Event::LinkSample | Event::SeriesSample | Event::Fault(_)
                );
                if !every_group {
                    self.events.schedule(t, popped.tie(), e);
                }
            }
            self.samples.append(&mut part.samples);
            self.link_samples.append(&mut part.link_samples);
            // Every group ran every change; each counted its own packets.
            for (mine, o) in self.fault_marks.iter_mut().zip(&part.fault_marks) {
                mine.counters_before.add(&o.counters_before);
            }
            if let (Some(mine), Some(o)) = (self.series.as_mut(), part.series.as_mut()) {
                mine.absorb(o, &theirs);
            }
        }
        self.net.set_remote_links(&|_| true);
        // Samples as the serial loop takes them: by time, then port.
        self.samples.sort_by_key(|s| (s.time, s.port));
        self.link_samples.sort_by_key(|s| (s.time, s.port));
        // A link between two groups was sampled on both sides.
        self.link_samples.dedup_by(|later, kept| {
            let same = (later.time, later.port) == (kept.time, kept.port);
            if same {
                kept.add(later);
            }
            same
        });
    }
}

/// What the coordinator watches between windows: whether to run another
/// or leave the rest to the serial loop.
struct Watch<'a> {
    n_flows: usize,
    lookahead: Duration,
    limits: &'a super::RunLimits,
    totals: &'a Totals,
    /// (events at the last window's end, most events in one window).
    last: (u64, u64),
    finished_before: usize,
    /// Most flows finished in one window.
    burst: usize,
    /// Progress reports made, in units of 65,536 events.
    reported: u64,
    /// Why the run stops, if it stops here.
    stopped: Option<super::StopReason>,
}

impl Watch<'_> {
    /// Whether to run another window after `we`; reports progress.
    fn go_on(&mut self, we: &WindowEnd, report: &mut Option<&mut dyn FnMut(&Progress)>) -> bool {
        let window = we.events - self.last.0;
        self.last = (we.events, self.last.1.max(window));
        let finished = self.totals.finished.load(Ordering::Relaxed);
        self.burst = self.burst.max(finished - self.finished_before);
        self.finished_before = finished;
        if we.events >> 16 > self.reported {
            self.reported = we.events >> 16;
            if let Some(cb) = report.as_mut() {
                cb(&Progress {
                    now: we.next.unwrap_or(Time::ZERO),
                    flows_done: finished,
                    flows_total: self.n_flows,
                    events: we.events,
                });
            }
        }
        if self
            .limits
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            self.stopped = Some(super::StopReason::Cancelled);
            return false;
        }
        // The serial loop counts the last events exactly: leave it a
        // margin of the largest windows seen.
        let near_event_limit = self
            .limits
            .event_limit
            .is_some_and(|l| we.events.saturating_add(4 * self.last.1 + 1024) >= l);
        // A window that could reach past the no-progress deadline is left
        // to the serial loop, which stops exactly there.
        let past_deadline = match (self.limits.no_progress_limit, we.next) {
            (Some(d), Some(next)) => {
                let lp = self.totals.last_progress.load(Ordering::Relaxed);
                next.0.saturating_add(self.lookahead.ps()) > lp.saturating_add(d.ps())
            }
            _ => false,
        };
        self.n_flows - finished > endgame_flows(self.burst) && !near_event_limit && !past_deadline
    }
}

/// What a group leaves behind once its borrows end.
struct Part {
    events: EventQueue<Event>,
    progress: Vec<FlowProgress>,
    completion: Completion,
    samples: Vec<QueueSample>,
    link_samples: Vec<LinkSample>,
    fault_marks: Vec<FaultMark>,
    series: Option<FlowSeries>,
    started: usize,
}

/// What groups tell the coordinator between windows.
#[derive(Default)]
struct Totals {
    /// Flows finished, over all groups.
    finished: AtomicUsize,
    /// The latest moment a flow started or received a new byte.
    last_progress: AtomicU64,
}

/// One group of a partitioned run: its nodes' copy of the state, its own
/// queue and the flows its hosts start.
struct Group<'a, T> {
    id: u32,
    net: &'a mut Network,
    transport: &'a mut T,
    events: EventQueue<Event>,
    flows: &'a [FlowSpec],
    /// Ids of the flows whose source is in this group, in start order.
    starts: Vec<u32>,
    next_start: usize,
    progress: Vec<FlowProgress>,
    completion: Completion,
    format: PacketFormat,
    group_of: &'a [u32],
    sampling: Option<Duration>,
    link_sampling: Option<Duration>,
    switches_only: bool,
    samples: Vec<QueueSample>,
    link_samples: Vec<LinkSample>,
    fault_marks: Vec<FaultMark>,
    /// This group's copy of the per-flow time series (its hosts' rows).
    series: Option<FlowSeries>,
    totals: &'a Totals,
}

impl<T: Transport> Group<'_, T> {
    /// When the group's next flow starts.
    fn next_start(&self) -> Time {
        self.starts
            .get(self.next_start)
            .map_or(Time::MAX, |&f| self.flows[f as usize].start)
    }
}

impl<T: Transport> Piece for Group<'_, T> {
    type Message = Crossing;

    fn next_time(&mut self) -> Option<Time> {
        let t = self
            .events
            .peek_time()
            .unwrap_or(Time::MAX)
            .min(self.next_start());
        (t != Time::MAX).then_some(t)
    }

    fn run_until(&mut self, end: Time, out: &mut Vec<(u32, Crossing)>) -> u64 {
        let finished_before = self.completion.finished;
        let mut n = 0u64;
        let (id, group_of, switches_only) = (self.id, self.group_of, self.switches_only);
        let (sampling, link_sampling) = (self.sampling, self.link_sampling);
        let samples = &mut self.samples;
        let link_samples = &mut self.link_samples;
        let fault_marks = &mut self.fault_marks;
        let mut stage = Stage {
            net: &mut *self.net,
            transport: &mut *self.transport,
            events: &mut self.events,
            flows: self.flows,
            progress: &mut self.progress,
            completion: &mut self.completion,
            format: self.format,
            series: self.series.as_mut(),
        };
        loop {
            let next_ev = stage.events.peek_time().unwrap_or(Time::MAX);
            let next_start = self
                .starts
                .get(self.next_start)
                .map_or(Time::MAX, |&f| self.flows[f as usize].start);
            if next_ev.min(next_start) >= end {
                break;
            }
            // Flow starts go before events at the same instant, as in the
            // serial loop.
            if next_start <= next_ev {
                let spec = &self.flows[self.starts[self.next_start] as usize];
                self.next_start += 1;
                stage.events.advance_to(next_start);
                stage.completion.last_progress = next_start;
                stage.with_ctx(next_start, spec.src, |t, ctx| t.start_flow(ctx, spec.id));
                n += 1;
                continue;
            }
            let Some((now, tie, ev)) = stage.events.pop() else {
                break;
            };
            // Every group samples its own ports; the run counts one event.
            let sample = matches!(
                ev,
                Event::Sample | Event::LinkSample | Event::SeriesSample | Event::Fault(_)
            );
            n += u64::from(id == 0 || !sample);
            let ours = |node: NodeId| group_of[node.idx()] == id;
            match stage.run_event(now, tie, ev) {
                None => {}
                Some(SampleKind::Queues) => {
                    stage
                        .net
                        .sample_queues_of(now, switches_only, &ours, samples);
                    if let Some(iv) = sampling {
                        let tie = Simulation::<T>::SAMPLE_TIE;
                        stage.events.schedule(now + iv, tie, Event::Sample);
                    }
                }
                Some(SampleKind::Links) => {
                    stage.net.sample_links_of(now, &ours, link_samples);
                    if let Some(iv) = link_sampling {
                        let tie = Simulation::<T>::LINK_SAMPLE_TIE;
                        stage.events.schedule(now + iv, tie, Event::LinkSample);
                    }
                }
                Some(SampleKind::Fault) => {
                    if let Event::Fault(i) = ev {
                        let (net, events) = (&mut *stage.net, &mut *stage.events);
                        Simulation::<T>::run_fault(net, i, now, &ours, events, fault_marks);
                    }
                }
                Some(SampleKind::Series) => {
                    if let Some(series) = stage.series.as_deref_mut() {
                        let t = &*stage.transport;
                        series.sample(now, stage.flows, &ours, t);
                        if let Some(iv) = series.interval() {
                            let tie = Simulation::<T>::SERIES_SAMPLE_TIE;
                            stage.events.schedule(now + iv, tie, Event::SeriesSample);
                        }
                    }
                }
            }
        }
        out.extend(self.net.take_crossings().map(|c| (group_of[c.to.idx()], c)));
        self.totals.finished.fetch_add(
            self.completion.finished - finished_before,
            Ordering::Relaxed,
        );
        self.totals
            .last_progress
            .fetch_max(self.completion.last_progress.0, Ordering::Relaxed);
        n
    }

    fn receive(&mut self, c: Crossing) {
        self.net.receive_crossing(c, &mut self.events);
    }

    fn arrival(c: &Crossing) -> Time {
        c.arrival
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;
    use crate::net::queue::QueueConfig;
    use crate::net::topology::{fat_tree, TopologySpec};
    use crate::net::{NetworkParams, Refusal};
    use crate::packet::{FlowId, Packet};
    use crate::time::Rate;
    use crate::transport::per_host::{FlowSlots, HostProtocol, PerHost};

    fn k4() -> (Partition, Network) {
        let (topo, params) = k4_spec();
        let net = Network::build(&topo, params, &RngStreams::new(1)).expect("network");
        (Partition::natural(&topo, Duration::ZERO), net)
    }

    /// A k = 4 fat tree (16 hosts, 20 switches) and drop-tail ports.
    fn k4_spec() -> (TopologySpec, NetworkParams) {
        let rate = Rate::gbps(10);
        let topo = fat_tree(4, 4, 1, rate, rate, Duration::from_ns(500)).expect("fat tree");
        let params = NetworkParams {
            forwarding: Default::default(),
            load_balancing: Default::default(),
            header_bytes: 40,
            switch_queue: QueueConfig::DropTail,
            switch_buffer: 100_000,
            shared_buffer: None,
            host_queue: QueueConfig::DropTail,
            host_buffer: u64::MAX,
            nic_pull: false,
            eager_fifo: true,
            hop_limit: NetworkParams::DEFAULT_HOP_LIMIT,
            refusal: Refusal::default(),
            fastlane: None,
            trace: None,
            faults: None,
        };
        (topo, params)
    }

    /// A group's copy of the network shares the built network's routing
    /// tables (one set for every copy), and routes as a network built on
    /// its own does.
    #[test]
    fn a_groups_copy_of_the_network_shares_its_routing_tables() {
        let (topo, params) = k4_spec();
        let streams = RngStreams::new(1);
        let built = Network::build(&topo, params.clone(), &streams).expect("network");
        let alone = Network::build(&topo, params.clone(), &streams).expect("network");
        let copy = Network::build_sharing(&topo, params, &streams, built.routing()).expect("copy");
        assert!(copy.routing().shares_tables_with(built.routing()));
        assert!(!alone.routing().shares_tables_with(built.routing()));
        for node in 0..36 {
            for dst in 0..16 {
                let (node, dst) = (NodeId(node), NodeId(dst));
                let hops = copy.routing().next_hops(node, dst);
                assert_eq!(
                    hops,
                    alone.routing().next_hops(node, dst),
                    "{node:?} to {dst:?}"
                );
                assert!(!hops.is_empty());
            }
        }
    }

    /// Hosts 0-15, ToRs 16-23 (two per pod), aggregation 24-31, cores
    /// 32-35: a switch's nearest hosts are its pod's (the cores are
    /// equally near every host, so they take host 0).
    #[test]
    fn nearest_host_follows_the_pods() {
        let (_, net) = k4();
        let nearest = nearest_host(&net);
        assert_eq!(&nearest[..16], &(0..16).collect::<Vec<u32>>()[..]);
        assert_eq!(&nearest[16..24], &[0, 2, 4, 6, 8, 10, 12, 14]);
        assert_eq!(&nearest[24..32], &[0, 0, 4, 4, 8, 8, 12, 12]);
        assert_eq!(&nearest[32..36], &[0, 0, 0, 0]);
    }

    /// Two groups of about equal weight (a node weighs its ports, 96 in
    /// all), each piece whole in one group, the first pods in the first
    /// group and the last in the second.
    #[test]
    fn a_deal_keeps_pieces_whole_and_pods_together() {
        let (p, net) = k4();
        let (group_of, groups) = deal(&p, &net, 2, &[]);
        assert_eq!(groups, 2);
        for piece in 0..p.len() as u32 {
            let g = group_of[p.nodes(piece)[0].idx()];
            assert!(p.nodes(piece).iter().all(|n| group_of[n.idx()] == g));
        }
        let mut weight = [0usize; 2];
        for (n, &g) in group_of.iter().enumerate() {
            weight[g as usize] += net.nodes()[n].ports.len();
        }
        assert_eq!(weight[0] + weight[1], 96);
        assert!(weight[0].abs_diff(weight[1]) <= 8, "{weight:?}");
        assert_eq!((group_of[16], group_of[17], group_of[24]), (0, 0, 0));
        assert_eq!((group_of[22], group_of[23], group_of[30]), (1, 1, 1));
        // More groups than pieces: one piece per group at most.
        assert_eq!(deal(&p, &net, 100, &[]).1, p.len());
    }

    /// Flow `id` of `size` bytes from host `src` to host `dst`, at time 0.
    fn flow(id: u32, src: u32, dst: u32, size: u64) -> FlowSpec {
        FlowSpec {
            id: FlowId(id),
            src: NodeId(src),
            dst: NodeId(dst),
            size,
            start: Time::ZERO,
            tag: 0,
            query: None,
        }
    }

    /// The pieces whose hosts send or receive share their ports' weight
    /// by those bytes; the others weigh their ports.
    #[test]
    fn the_pieces_with_traffic_share_their_weight_by_bytes() {
        let (p, net) = k4();
        // Leaf pieces: a ToR (4 ports) and two hosts (1 each). Bytes: the
        // leaf of hosts 0-1 4,000, of 2-3 1,000, of 4-5 3,000, of 18
        // ports in all.
        let flows = [flow(0, 0, 2, 1000), flow(1, 4, 0, 3000)];
        let by_ports = piece_weights(&p, &net, &[]);
        let by_bytes = piece_weights(&p, &net, &flows);
        let leaf = |h: u32| p.piece_of(NodeId(h)) as usize;
        assert_eq!(by_ports[leaf(0)], 6);
        assert_eq!(
            (by_bytes[leaf(0)], by_bytes[leaf(2)], by_bytes[leaf(4)]),
            (18 * 4000 / 8000, 18 * 1000 / 8000, 18 * 3000 / 8000)
        );
        for piece in 0..p.len() {
            if ![leaf(0), leaf(2), leaf(4)].contains(&piece) {
                assert_eq!(by_bytes[piece], by_ports[piece], "piece {piece}");
            }
        }
    }

    /// A protocol whose host state is the size of its flow tables.
    struct TableSizes(FlowSlots);

    impl HostProtocol for TableSizes {
        type Host = (usize, usize);
        fn name(&self) -> &'static str {
            "table-sizes"
        }
        fn setup(&mut self, env: &Setup) -> crate::Result<()> {
            self.0 = FlowSlots::new(env);
            Ok(())
        }
        fn new_host(&self, _env: &Setup, host: NodeId) -> (usize, usize) {
            (self.0.n_send(host), self.0.n_recv(host))
        }
        fn start_flow(&self, _: &mut Self::Host, _: &mut crate::sim::Ctx, _: FlowId) {}
        fn on_packet(&self, _: &mut Self::Host, _: &mut crate::sim::Ctx, _: Packet) {}
        fn on_timer(&self, _: &mut Self::Host, _: &mut crate::sim::Ctx, _: u32, _: u8) {}
        fn copy_for_group(&self) -> Option<Self> {
            Some(TableSizes(Default::default()))
        }
    }

    /// A group's copy of the transport holds flow tables for its own hosts
    /// only; the simulation's own copy (group 0, which gathers every host
    /// at the end) holds them for all.
    #[test]
    fn a_groups_copy_holds_flow_tables_only_for_its_hosts() {
        let (p, net) = k4();
        let (_, copy) = k4();
        // Every host sends to the host five further on.
        let flows: Vec<FlowSpec> = (0..16).map(|i| flow(i, i, (i + 5) % 16, 1000)).collect();
        let workload = crate::workload::Workload {
            flows,
            tags: Vec::new(),
        };
        let format = PacketFormat {
            mss: 1460,
            header: 40,
        };
        let limits = crate::sim::RunLimits {
            time_limit: None,
            event_limit: None,
            queue_sample_interval: None,
            sample_host_queues: false,
            link_sample_interval: None,
            timeseries: None,
            no_progress_limit: None,
            cancel: None,
        };
        let transport = PerHost::new(TableSizes(Default::default()));
        let mut sim = Simulation::new(net, transport, workload, format, limits, 1);
        sim.setup().expect("setup");
        assert_eq!(sim.split(&p, vec![copy], 2), Ok(2));
        let split = sim.split.as_ref().expect("split");
        assert!(sim.transport.hosts().iter().all(|&h| h == (1, 1)));
        let copy = split.copies[0].1.hosts();
        let mut own = 0;
        for (h, &sizes) in copy.iter().enumerate() {
            if split.group_of[h] == 1 {
                own += 1;
                assert_eq!(sizes, (1, 1), "host {h}");
            } else {
                assert_eq!(sizes, (0, 0), "host {h}");
            }
        }
        // Each group has hosts of its own.
        assert!((1..16).contains(&own), "{own} of 16 hosts in group 1");
    }
}
