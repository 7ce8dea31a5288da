//! Shortest-path routing: for every switch and destination host, the set of
//! egress ports that lie on some shortest path (hop count). Load balancing
//! over that set (ECMP hash, spraying, source routes) is done per packet by
//! the network.

use crate::error::{Error, Result};
use crate::net::packet::{NodeId, PortId};
use std::collections::{HashMap, VecDeque};

/// Equal-cost next hops for every (node, destination host).
#[derive(Debug, Clone)]
pub struct Routing {
    n_hosts: usize,
    /// (start, len) into `hops` for entry `node * n_hosts + dst`.
    entries: Vec<(u32, u32)>,
    hops: Vec<PortId>,
}

impl Routing {
    /// Compute routes. `adj[node]` lists `(port, peer)` for the node's output
    /// ports. Hosts never forward, so paths cross only switches. Fails if a
    /// host cannot reach another host.
    pub fn compute(
        n_hosts: usize,
        adj: &[Vec<(PortId, NodeId)>],
        names: &[String],
    ) -> Result<Routing> {
        let n = adj.len();
        let mut entries = vec![(0u32, 0u32); n * n_hosts];
        let mut hops: Vec<PortId> = Vec::new();
        let mut dedup: HashMap<Vec<PortId>, u32> = HashMap::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        let mut set = Vec::new();
        for dst in 0..n_hosts {
            // BFS backwards from dst; links are bidirectional so forward
            // adjacency serves. Do not expand through other hosts.
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            queue.push_back(dst);
            while let Some(u) = queue.pop_front() {
                if u != dst && u < n_hosts {
                    continue;
                }
                for &(_, v) in &adj[u] {
                    if dist[v.idx()] == u32::MAX {
                        dist[v.idx()] = dist[u] + 1;
                        queue.push_back(v.idx());
                    }
                }
            }
            for src in 0..n_hosts {
                if dist[src] == u32::MAX {
                    return Err(Error::Topology(format!(
                        "host {} cannot reach host {}",
                        names[src], names[dst]
                    )));
                }
            }
            for (u, ports) in adj.iter().enumerate() {
                if u == dst || dist[u] == u32::MAX {
                    continue;
                }
                set.clear();
                for &(p, v) in ports {
                    let v = v.idx();
                    // The next hop must be closer, and be a switch or dst itself.
                    if dist[v] != u32::MAX && dist[v] + 1 == dist[u] && (v == dst || v >= n_hosts) {
                        set.push(p);
                    }
                }
                let len = set.len() as u32;
                let start = *dedup.entry(set.clone()).or_insert_with(|| {
                    let s = hops.len() as u32;
                    hops.extend_from_slice(&set);
                    s
                });
                entries[u * n_hosts + dst] = (start, len);
            }
        }
        Ok(Routing {
            n_hosts,
            entries,
            hops,
        })
    }

    /// Equal-cost egress ports at `node` towards host `dst`.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst: NodeId) -> &[PortId] {
        let (s, l) = self.entries[node.idx() * self.n_hosts + dst.idx()];
        &self.hops[s as usize..(s + l) as usize]
    }

    /// Index of the routing entry for (node, dst): used for per-entry state
    /// such as round-robin counters.
    #[inline]
    pub fn entry_index(&self, node: NodeId, dst: NodeId) -> usize {
        node.idx() * self.n_hosts + dst.idx()
    }

    /// Number of entries.
    pub fn n_entries(&self) -> usize {
        self.entries.len()
    }
}
