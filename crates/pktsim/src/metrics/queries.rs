//! Query completion: the flows of one partition/aggregate query (the
//! `queries` workload, [`crate::workload::queries`]) share a query id, and
//! the query completes when its last flow has finished. Its query
//! completion time (QCT, the metric of Vertigo's and Canary's evaluations)
//! runs from the query's first flow start to that moment.

use super::summary::Stats;
use super::FlowResult;
use serde::Serialize;
use std::collections::BTreeMap;

/// Query statistics of a run, in `summary.json` under `queries` (present
/// only when the run has queries).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct QueryStats {
    /// Queries in the run.
    pub queries: usize,
    /// Queries whose every flow finished.
    pub completed: usize,
    /// `completed / queries`.
    pub completed_share: f64,
    /// QCT of completed queries, microseconds.
    pub qct_us: Stats,
}

/// One query's start and, if every flow finished, its completion time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// First flow start, picoseconds.
    pub start_ps: u64,
    /// Last flow finish, picoseconds (`None`: a flow did not finish).
    pub finish_ps: Option<u64>,
}

/// The queries of a run by id (empty when no flow belongs to one).
pub fn queries(flows: &[FlowResult]) -> BTreeMap<u32, Query> {
    let mut out: BTreeMap<u32, Query> = BTreeMap::new();
    for f in flows {
        let Some(id) = f.query else { continue };
        let start = f.start.ps();
        let finish = f.finish.map(|t| t.ps());
        out.entry(id)
            .and_modify(|q| {
                q.start_ps = q.start_ps.min(start);
                q.finish_ps = match (q.finish_ps, finish) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            })
            .or_insert(Query {
                start_ps: start,
                finish_ps: finish,
            });
    }
    out
}

impl QueryStats {
    /// The statistics of a run's queries; `None` if it has none.
    pub fn of(flows: &[FlowResult]) -> Option<QueryStats> {
        let qs = queries(flows);
        if qs.is_empty() {
            return None;
        }
        let qct: Vec<f64> = qs
            .values()
            .filter_map(|q| q.finish_ps.map(|f| (f - q.start_ps) as f64 / 1e6))
            .collect();
        Some(QueryStats {
            queries: qs.len(),
            completed: qct.len(),
            completed_share: qct.len() as f64 / qs.len() as f64,
            qct_us: Stats::of(qct),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::time::{Duration, Time};

    fn flow(query: Option<u32>, start_us: u64, finish_us: Option<u64>) -> FlowResult {
        FlowResult {
            id: 0,
            src: NodeId(0),
            dst: NodeId(1),
            size_bytes: 1000,
            start: Time::ZERO + Duration::from_us(start_us),
            finish: finish_us.map(|u| Time::ZERO + Duration::from_us(u)),
            ideal_fct: Duration::from_us(1),
            bytes_received: 0,
            retransmits: 0,
            drops: 0,
            tag: String::new(),
            query,
        }
    }

    #[test]
    fn a_query_completes_with_its_last_flow() {
        let flows = vec![
            flow(Some(0), 10, Some(15)),
            flow(Some(0), 12, Some(40)),
            flow(None, 0, Some(1000)),
            flow(Some(1), 20, Some(30)),
            flow(Some(1), 20, None),
            flow(Some(2), 50, Some(60)),
        ];
        let s = QueryStats::of(&flows).unwrap();
        assert_eq!((s.queries, s.completed), (3, 2));
        assert!((s.completed_share - 2.0 / 3.0).abs() < 1e-12);
        // Query 0: 10 → 40 µs; query 2: 50 → 60 µs.
        assert_eq!(s.qct_us.mean, Some(20.0));
        assert_eq!(s.qct_us.max, Some(30.0));
        assert_eq!(QueryStats::of(&flows[2..3]), None);
    }
}
