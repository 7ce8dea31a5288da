//! `[output.trace]`: which packets the packet trace follows, checked
//! against the topology and the flows ([`crate::net::trace`]).

use crate::error::{Error, Result};
use crate::net::topology::{no_node_named, TopologySpec};
use crate::net::trace::TraceSpec;
use crate::time::{parse_duration, Time};
use serde::{Deserialize, Serialize};

/// A node named by its index (hosts first) or by its name.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum NodeRef {
    /// Index among all nodes, hosts first.
    Index(u32),
    /// Name in the topology (`h0`, `s1`, or an explicit topology's own).
    Name(String),
}

/// The `[output.trace]` table: every filter optional; a row passes when
/// it passes them all.
#[derive(Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Flow ids to trace (default: every flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<u32>>,
    /// Nodes whose events to trace (default: every node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeRef>>,
    /// Ports whose events to trace, by index (default: every port; sends
    /// and deliveries have no port and always pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<u32>>,
    /// Trace from this simulated time on, e.g. `"1ms"` (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Trace up to this simulated time (default: the run's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Keep at most this many rows, the earliest (default 1,000,000);
    /// `summary.json` says when more passed the filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rows: Option<u64>,
}

impl TraceConfig {
    /// The trace's filter for `topo`, every field checked; errors name the
    /// field.
    pub fn spec(&self, topo: &TopologySpec) -> Result<TraceSpec> {
        let n_nodes = topo.n_nodes() as u32;
        let nodes = match &self.nodes {
            None => None,
            Some(list) => Some(
                list.iter()
                    .enumerate()
                    .map(|(i, r)| resolve(r, topo, n_nodes, i))
                    .collect::<Result<Vec<u32>>>()?,
            ),
        };
        let n_ports = 2 * topo.links.len() as u32;
        if let Some(ports) = &self.ports {
            if let Some((i, p)) = ports.iter().enumerate().find(|(_, &p)| p >= n_ports) {
                return Err(Error::config(
                    format!("output.trace.ports[{i}]"),
                    format!("port {p} does not exist (the network has {n_ports} ports)"),
                ));
            }
        }
        let time = |s: &Option<String>, field: &str| -> Result<Option<Time>> {
            s.as_ref()
                .map(|s| {
                    parse_duration(s)
                        .map(|d| Time::ZERO + d)
                        .map_err(|m| Error::config(field, m))
                })
                .transpose()
        };
        let from = time(&self.from, "output.trace.from")?.unwrap_or(Time::ZERO);
        let until = time(&self.until, "output.trace.until")?.unwrap_or(Time::MAX);
        if until <= from {
            return Err(Error::config(
                "output.trace.until",
                "must be later than output.trace.from",
            ));
        }
        let max_rows = match self.max_rows {
            Some(0) => return Err(Error::config("output.trace.max_rows", "must be at least 1")),
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => TraceSpec::DEFAULT_MAX_ROWS,
        };
        Ok(TraceSpec {
            flows: self.flows.clone(),
            nodes,
            ports: self.ports.clone(),
            from,
            until,
            max_rows,
        })
    }

    /// Check the flow ids against the run's `n_flows` flows.
    pub fn check_flows(&self, n_flows: usize) -> Result<()> {
        let Some(flows) = &self.flows else {
            return Ok(());
        };
        match flows
            .iter()
            .enumerate()
            .find(|(_, &f)| f as usize >= n_flows)
        {
            Some((i, f)) => Err(Error::config(
                format!("output.trace.flows[{i}]"),
                format!("flow {f} does not exist (the run has {n_flows} flows, ids from 0)"),
            )),
            None => Ok(()),
        }
    }
}

/// The index of node `r` (entry `i` of the list).
fn resolve(r: &NodeRef, topo: &TopologySpec, n_nodes: u32, i: usize) -> Result<u32> {
    let field = || format!("output.trace.nodes[{i}]");
    match r {
        NodeRef::Index(n) if *n < n_nodes => Ok(*n),
        NodeRef::Index(n) => Err(Error::config(
            field(),
            format!("node {n} does not exist (the topology has {n_nodes} nodes)"),
        )),
        NodeRef::Name(name) => topo
            .names
            .iter()
            .position(|x| x == name)
            .map(|p| p as u32)
            .ok_or_else(|| Error::config(field(), no_node_named(name, &topo.names))),
    }
}
