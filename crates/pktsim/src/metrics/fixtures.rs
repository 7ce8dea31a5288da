//! Test-only run results, shared by the unit tests of the metrics and the
//! output writer, so that each test spells out only what it is about.

use super::{Counters, FlowResult, RunOutput};
use crate::packet::NodeId;
use crate::time::{Duration, Time};

impl RunOutput {
    /// A finished run of `flows` and nothing else: no samples, traces or
    /// faults, zero counters, 100 µs simulated, protocol `"x"`, seed 1,
    /// stopped at its time limit. Tests set the fields they look at.
    pub(crate) fn of_flows(flows: Vec<FlowResult>) -> RunOutput {
        RunOutput {
            flows,
            queue_samples: vec![],
            link_samples: vec![],
            trace: None,
            timeseries: vec![],
            counters: Counters::default(),
            faults: Vec::new(),
            events: 0,
            windows: None,
            sim_time: Time::ZERO + Duration::from_us(100),
            wall_time: std::time::Duration::ZERO,
            protocol: "x".into(),
            protocol_counters: Default::default(),
            seed: 1,
            stop_reason: "time_limit".into(),
        }
    }
}

/// Two flows unlike in every column: flow 0 (host 0 to 1, 1000 B from
/// time 0, ideal 2 µs, finished at `finish_us` or not) and flow 1 (host 1
/// to 0, 5000 B from 7 ps, unfinished, of query 3).
pub(crate) fn two_flows(finish_us: Option<u64>) -> Vec<FlowResult> {
    vec![
        FlowResult {
            id: 0,
            src: NodeId(0),
            dst: NodeId(1),
            size_bytes: 1000,
            start: Time::ZERO,
            finish: finish_us.map(|u| Time::ZERO + Duration::from_us(u)),
            ideal_fct: Duration::from_us(2),
            bytes_received: 1000,
            retransmits: 1,
            drops: 2,
            tag: "poisson".into(),
            query: None,
        },
        FlowResult {
            id: 1,
            src: NodeId(1),
            dst: NodeId(0),
            size_bytes: 5000,
            start: Time(7),
            finish: None,
            ideal_fct: Duration::from_us(4),
            bytes_received: 10,
            retransmits: 0,
            drops: 0,
            tag: "incast".into(),
            query: Some(3),
        },
    ]
}
