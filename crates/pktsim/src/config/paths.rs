//! Shortest paths between the hosts of a built topology, as validation
//! needs them: the longest one (for the hop limit) and whether any pair
//! has a choice of equal-cost paths (for load balancing rules). Read-only
//! breadth-first searches over the topology's links; the network's own
//! routing is not touched.
//!
//! Hosts that hang off one switch share that switch's search, so a
//! leaf-spine costs one search per leaf, not one per host.

use crate::net::topology::TopologySpec;
use crate::time::Duration;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The topology as adjacency lists, with each host's access switch.
struct Graph {
    adj: Vec<Vec<usize>>,
    hosts: usize,
    /// The switch a host with one link (to a switch) hangs off.
    access: Vec<Option<usize>>,
}

/// One host-to-host shortest path length and how many such paths there
/// are (counted up to 2: one, or a choice).
struct Pair {
    from: usize,
    to: usize,
    links: usize,
    paths: u8,
}

impl Graph {
    fn new(topo: &TopologySpec) -> Graph {
        let n = topo.n_nodes();
        let hosts = topo.n_hosts as usize;
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
        for l in &topo.links {
            adj[l.a.idx()].push(l.b.idx());
            adj[l.b.idx()].push(l.a.idx());
        }
        let access = (0..hosts)
            .map(|h| match adj[h].as_slice() {
                [s] if *s >= hosts => Some(*s),
                _ => None,
            })
            .collect();
        Graph { adj, hosts, access }
    }

    /// Visit every pair of distinct hosts (each at least once) with its
    /// shortest path, until `visit` returns true; returns whether it did.
    fn pairs(&self, mut visit: impl FnMut(Pair) -> bool) -> bool {
        let n = self.adj.len();
        let mut sources: Vec<usize> = (0..self.hosts)
            .map(|h| self.access[h].unwrap_or(h))
            .collect();
        sources.sort_unstable();
        sources.dedup();
        let mut dist = vec![usize::MAX; n];
        let mut count = vec![0u8; n];
        let mut queue = VecDeque::new();
        for src in sources {
            dist.fill(usize::MAX);
            count.fill(0);
            dist[src] = 0;
            count[src] = 1;
            queue.push_back(src);
            while let Some(u) = queue.pop_front() {
                for &v in &self.adj[u] {
                    if dist[v] == usize::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                    if dist[v] == dist[u] + 1 {
                        count[v] = count[v].saturating_add(count[u]).min(2);
                    }
                }
            }
            // From a switch, the paths start one link earlier, at one of
            // its hosts (all of them alike).
            let (from, extra) = if src < self.hosts {
                (src, 0)
            } else {
                match (0..self.hosts).find(|&h| self.access[h] == Some(src)) {
                    Some(h) => (h, 1),
                    None => continue,
                }
            };
            for to in 0..self.hosts {
                if to == from {
                    continue;
                }
                let end = self.access[to].unwrap_or(to);
                if dist[end] == usize::MAX {
                    continue;
                }
                let links = dist[end] + extra + usize::from(self.access[to].is_some());
                if visit(Pair {
                    from,
                    to,
                    links,
                    paths: count[end],
                }) {
                    return true;
                }
            }
        }
        false
    }
}

/// An upper bound on the links of any shortest path between two hosts,
/// from one search: a path from host `a` to host `b` through host 0 is
/// no shorter than the shortest, so twice the farthest host from host 0
/// bounds them all. Lets the common case (the default hop limit of 64)
/// skip the search from every switch.
pub fn host_path_bound(topo: &TopologySpec) -> Option<usize> {
    let g = Graph::new(topo);
    if g.hosts == 0 {
        return None;
    }
    let mut dist = vec![usize::MAX; g.adj.len()];
    let mut queue = VecDeque::from([0]);
    dist[0] = 0;
    while let Some(u) = queue.pop_front() {
        for &v in &g.adj[u] {
            if dist[v] == usize::MAX {
                dist[v] = dist[u] + 1;
                queue.push_back(v);
            }
        }
    }
    dist[..g.hosts]
        .iter()
        .filter(|&&d| d != usize::MAX)
        .max()
        .map(|e| 2 * e)
}

/// A base round-trip time some pair of hosts of `topo` really has (twice
/// the propagation delay of the pair's lowest-delay path), found by two
/// sweeps: the host farthest in delay from host 0, then the host farthest
/// from that one. On trees and the symmetric fabrics pktsim builds this is
/// the longest base RTT; elsewhere it is a lower bound of it, so a warning
/// that compares a timer with it never fires without cause. `None`
/// without two connected hosts.
pub fn long_base_rtt(topo: &TopologySpec) -> Option<Duration> {
    let hosts = topo.n_hosts as usize;
    if hosts < 2 {
        return None;
    }
    let mut adj: Vec<Vec<(usize, u64)>> = vec![Vec::new(); topo.n_nodes()];
    for l in &topo.links {
        adj[l.a.idx()].push((l.b.idx(), l.delay.ps()));
        adj[l.b.idx()].push((l.a.idx(), l.delay.ps()));
    }
    // Dijkstra by delay from `src`: the farthest other host and its delay.
    let farthest = |src: usize| -> Option<(usize, u64)> {
        let mut dist = vec![u64::MAX; adj.len()];
        let mut heap = BinaryHeap::from([Reverse((0u64, src))]);
        dist[src] = 0;
        while let Some(Reverse((d, u))) = heap.pop() {
            if d > dist[u] {
                continue;
            }
            for &(v, w) in &adj[u] {
                let nd = d.saturating_add(w);
                if nd < dist[v] {
                    dist[v] = nd;
                    heap.push(Reverse((nd, v)));
                }
            }
        }
        (0..hosts)
            .filter(|&h| h != src && dist[h] != u64::MAX)
            .map(|h| (h, dist[h]))
            .max_by_key(|&(h, d)| (d, std::cmp::Reverse(h)))
    };
    let (far, _) = farthest(0)?;
    let (_, one_way) = farthest(far)?;
    Some(Duration::from_ps(one_way.saturating_mul(2)))
}

/// The most links on a shortest path between two hosts of `topo`, with
/// such a pair: `(links, host, host)`; `None` without two connected hosts.
pub fn longest_host_path(topo: &TopologySpec) -> Option<(usize, usize, usize)> {
    let mut best: Option<(usize, usize, usize)> = None;
    Graph::new(topo).pairs(|p| {
        if best.is_none_or(|(b, _, _)| p.links > b) {
            best = Some((p.links, p.from, p.to));
        }
        false
    });
    best
}

/// Whether some pair of hosts has more than one shortest path, so that
/// load balancing chooses between them (a leaf-spine with two spines does;
/// a star, a dumbbell or a ring of three switches does not).
pub fn has_equal_cost_paths(topo: &TopologySpec) -> bool {
    Graph::new(topo).pairs(|p| p.paths > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::topology_from_toml;

    #[test]
    fn a_long_base_rtt_is_twice_the_farthest_pairs_delay() {
        // Two hosts 1 ms and 18 ms from a switch that is 10 ms from a third.
        let t = topology_from_toml(
            r#"kind = "explicit"
hosts = ["a", "b", "r"]
switches = ["sw"]
links = [
  { a = "a", b = "sw", rate = "10Gbps", delay = "1ms" },
  { a = "b", b = "sw", rate = "10Gbps", delay = "18ms" },
  { a = "sw", b = "r", rate = "10Gbps", delay = "10ms" },
]"#,
        );
        // b to r: 28 ms one way, the farthest pair.
        assert_eq!(long_base_rtt(&t), Some(Duration::from_ms(56)));
        let ls = topology_from_toml(
            "kind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
             host_rate = \"10Gbps\"\nfabric_rate = \"40Gbps\"\nlink_delay = \"1us\"\n",
        );
        assert_eq!(long_base_rtt(&ls), Some(Duration::from_us(8)));
    }

    #[test]
    fn the_longest_host_path_of_common_shapes() {
        let star = topology_from_toml(
            "kind = \"star\"\nhosts = 3\nhost_rate = \"1Gbps\"\nlink_delay = \"1us\"",
        );
        assert_eq!(longest_host_path(&star).map(|p| p.0), Some(2));
        let ls = topology_from_toml(
            "kind = \"leaf_spine\"\nspines = 2\nleaves = 3\nhosts_per_leaf = 2\n\
             host_rate = \"10Gbps\"\nfabric_rate = \"40Gbps\"\nlink_delay = \"1us\"",
        );
        assert_eq!(longest_host_path(&ls).map(|p| p.0), Some(4));
        let ft = topology_from_toml(
            "kind = \"fat_tree\"\nk = 4\nhost_rate = \"10Gbps\"\nfabric_rate = \"10Gbps\"\n\
             link_delay = \"1us\"",
        );
        assert_eq!(longest_host_path(&ft).map(|p| p.0), Some(6));
        for t in [&star, &ls, &ft] {
            let longest = longest_host_path(t).unwrap().0;
            let bound = host_path_bound(t).unwrap();
            assert!(
                longest <= bound && bound <= 2 * longest,
                "{longest} {bound}"
            );
        }
    }

    #[test]
    fn a_chain_of_explicit_switches_and_a_multihomed_host() {
        // h0 - s0 - s1 - s2 - h1, and h2 on both s0 and s2.
        let t = topology_from_toml(
            r#"kind = "explicit"
hosts = ["h0", "h1", "h2"]
switches = ["s0", "s1", "s2"]
links = [
  { a = "h0", b = "s0", rate = "1Gbps", delay = "1us" },
  { a = "s0", b = "s1", rate = "1Gbps", delay = "1us" },
  { a = "s1", b = "s2", rate = "1Gbps", delay = "1us" },
  { a = "s2", b = "h1", rate = "1Gbps", delay = "1us" },
  { a = "h2", b = "s0", rate = "1Gbps", delay = "1us" },
  { a = "h2", b = "s2", rate = "1Gbps", delay = "1us" },
]"#,
        );
        let (links, a, b) = longest_host_path(&t).unwrap();
        assert_eq!((links, a.min(b), a.max(b)), (4, 0, 1));
    }

    #[test]
    fn equal_cost_choices_are_found_where_there_are_some() {
        let star = topology_from_toml(
            "kind = \"star\"\nhosts = 3\nhost_rate = \"1Gbps\"\nlink_delay = \"1us\"",
        );
        assert!(!has_equal_cost_paths(&star));
        let one_spine = topology_from_toml(
            "kind = \"leaf_spine\"\nspines = 1\nleaves = 3\nhosts_per_leaf = 2\n\
             host_rate = \"10Gbps\"\nfabric_rate = \"40Gbps\"\nlink_delay = \"1us\"",
        );
        assert!(!has_equal_cost_paths(&one_spine));
        let two_spines = topology_from_toml(
            "kind = \"leaf_spine\"\nspines = 2\nleaves = 3\nhosts_per_leaf = 2\n\
             host_rate = \"10Gbps\"\nfabric_rate = \"40Gbps\"\nlink_delay = \"1us\"",
        );
        assert!(has_equal_cost_paths(&two_spines));
    }
}
