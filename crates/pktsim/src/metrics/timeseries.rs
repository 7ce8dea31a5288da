//! Per-flow time series (`[output.timeseries]`, issue 31): the state each
//! transport keeps for a flow (its window, RTT estimates, DCTCP's alpha,
//! ...), read through [`Transport::flow_state`] either after every event
//! at one of the flow's hosts (rows only for the variables that changed) or
//! at an interval (every variable of every started, unfinished flow).
//!
//! A row is read at a flow's host, by the part of the run that holds that
//! host, and numbered in that host's order; sorted by (time, flow, host,
//! number), the rows are the same whatever the run's thread count.

use crate::packet::{FlowId, NodeId};
use crate::time::{Duration, Time};
use crate::transport::contract::Transport;
use crate::workload::FlowSpec;

/// One value of one variable of one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeriesRow {
    /// When it was read.
    pub time: Time,
    /// The flow.
    pub flow: FlowId,
    /// The host it was read at (the flow's source or destination).
    pub host: NodeId,
    /// Its number among the rows read at `host`.
    pub seq: u64,
    /// The variable, with its unit in the name.
    pub variable: &'static str,
    /// Its value.
    pub value: f64,
}

/// Which flows to follow, and how often.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSpec {
    /// The flows followed (by id, sorted).
    pub flows: Vec<FlowId>,
    /// Read every flow at this interval; `None`: after every event at its
    /// hosts, the variables that changed.
    pub interval: Option<Duration>,
}

/// The rows one part of a run recorded.
#[derive(Clone, Debug)]
pub struct FlowSeries {
    interval: Option<Duration>,
    /// Whether each flow is followed, by id.
    followed: Vec<bool>,
    /// Followed flows by host (as source or destination).
    at_host: Vec<Vec<FlowId>>,
    /// The last value written of each (flow, host, variable), for "every
    /// change": a few variables per followed flow and host.
    last: Vec<Vec<(&'static str, f64)>>,
    /// Index into `last` for each (followed flow, side): source 0, dest 1.
    last_slot: std::collections::HashMap<(u32, u32), usize>,
    /// Rows numbered so far, per host.
    next_seq: Vec<u64>,
    rows: Vec<SeriesRow>,
}

impl FlowSeries {
    /// An empty recorder for `spec` over `flows` on `hosts` hosts.
    pub fn new(spec: &SeriesSpec, flows: &[FlowSpec], hosts: usize) -> Self {
        let mut followed = vec![false; flows.len()];
        let mut at_host = vec![Vec::new(); hosts];
        let mut last_slot = std::collections::HashMap::new();
        for &f in &spec.flows {
            let Some(s) = flows.get(f.idx()) else {
                continue;
            };
            followed[f.idx()] = true;
            for h in [s.src, s.dst] {
                if let Some(list) = at_host.get_mut(h.idx()) {
                    if !list.contains(&f) {
                        list.push(f);
                        let n = last_slot.len();
                        last_slot.insert((f.0, h.0), n);
                    }
                }
            }
        }
        FlowSeries {
            interval: spec.interval,
            followed,
            at_host,
            last: vec![Vec::new(); last_slot.len()],
            last_slot,
            next_seq: vec![0; hosts],
            rows: Vec::new(),
        }
    }

    /// The sampling interval (`None`: every change).
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// After an event at `host` (every-change mode): the variables of its
    /// followed flows that changed.
    pub fn after_event<T: Transport>(&mut self, now: Time, host: NodeId, transport: &T) {
        if self.interval.is_some() {
            return;
        }
        let Some(flows) = self.at_host.get(host.idx()) else {
            return;
        };
        for &f in flows {
            let slot = self.last_slot[&(f.0, host.0)];
            let (last, rows, seq) = (&mut self.last[slot], &mut self.rows, &mut self.next_seq);
            transport.flow_state(host, f, &mut |variable, value| {
                let changed = match last.iter_mut().find(|(n, _)| *n == variable) {
                    Some((_, v)) if v.to_bits() == value.to_bits() => false,
                    Some((_, v)) => {
                        *v = value;
                        true
                    }
                    None => {
                        last.push((variable, value));
                        true
                    }
                };
                if changed {
                    let s = &mut seq[host.idx()];
                    rows.push(SeriesRow {
                        time: now,
                        flow: f,
                        host,
                        seq: *s,
                        variable,
                        value,
                    });
                    *s += 1;
                }
            });
        }
    }

    /// A sample (interval mode): every variable of the followed flows that
    /// started, at their hosts that `ours` selects. A transport reports
    /// nothing for a flow its host is done with (a sender once every byte
    /// is acknowledged): what the host knows, so a part of a partitioned
    /// run that holds the sender but not the receiver answers the same.
    pub fn sample<T: Transport>(
        &mut self,
        now: Time,
        flows: &[FlowSpec],
        ours: &dyn Fn(NodeId) -> bool,
        transport: &T,
    ) {
        for (i, spec) in flows.iter().enumerate() {
            if !self.followed[i] || spec.start > now {
                continue;
            }
            for host in [spec.src, spec.dst] {
                if !ours(host) || (host == spec.dst && spec.dst == spec.src) {
                    continue;
                }
                let (rows, seq) = (&mut self.rows, &mut self.next_seq);
                transport.flow_state(host, spec.id, &mut |variable, value| {
                    let s = &mut seq[host.idx()];
                    rows.push(SeriesRow {
                        time: now,
                        flow: spec.id,
                        host,
                        seq: *s,
                        variable,
                        value,
                    });
                    *s += 1;
                });
            }
        }
    }

    /// Take in the rows another part of the run recorded, and what it
    /// knows of the hosts `theirs` selects (their last values and row
    /// numbers), so that the run goes on from there in one part.
    pub fn absorb(&mut self, other: &mut FlowSeries, theirs: &dyn Fn(NodeId) -> bool) {
        self.rows.append(&mut other.rows);
        for (h, (mine, o)) in self.next_seq.iter_mut().zip(&other.next_seq).enumerate() {
            if theirs(NodeId(h as u32)) {
                *mine = *o;
            }
        }
        for (&(_, host), &slot) in &self.last_slot {
            if theirs(NodeId(host)) {
                self.last[slot] = std::mem::take(&mut other.last[slot]);
            }
        }
    }

    /// The rows in order.
    pub fn finish(mut self) -> Vec<SeriesRow> {
        self.rows
            .sort_unstable_by_key(|r| (r.time, r.flow, r.host, r.seq));
        self.rows
    }
}
