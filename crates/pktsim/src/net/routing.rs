//! Shortest-path routing: for every node and destination host, the set of
//! egress ports that lie on some shortest path (hop count). Load balancing
//! over that set (ECMP hash, spraying, source routes) is done per packet by
//! the network.
//!
//! Every host has exactly one link, to a switch (the network checks this),
//! so the shortest paths towards a host are those towards its switch plus
//! the last link. Tables are therefore kept per *leaf* (a switch with hosts
//! attached), not per host: one entry per (switch, leaf) and one per host.
//! A k = 48 fat tree (27,648 hosts, 2,880 switches, 1,152 leaves) needs
//! 3.3 M entries instead of 845 M, and one breadth-first search per leaf
//! instead of one per host.

use crate::error::{Error, Result};
use crate::packet::{NodeId, PortId};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// No leaf: the node is not a switch with hosts attached.
const NONE: u32 = u32::MAX;

/// What routing keeps per host, together so that one lookup reads one line.
#[derive(Debug, Clone, Copy)]
struct HostRoute {
    /// The switch the host is attached to.
    attach: NodeId,
    /// That switch's index among the leaves.
    leaf: u32,
    /// (start, len) into `hops` of the host's NIC: its only next hop.
    nic: (u32, u32),
    /// (start, len) into `hops` of the port from its switch down to it.
    down: (u32, u32),
}

/// Equal-cost next hops for every (node, destination host).
///
/// The tables never change once computed (routes around a failure are a
/// new `Routing`), so they are shared: a clone is three reference counts,
/// and the copies of the network that a run on several threads keeps (one
/// per group), and the routes a run with failures keeps as built, hold one
/// set of tables (5.2 MB at k = 32, 26 MB at k = 48). Indexing a shared
/// slice costs what indexing a `Vec` does.
#[derive(Debug, Clone)]
pub struct Routing {
    n_hosts: usize,
    /// Leaves (switches with hosts attached).
    n_leaves: usize,
    /// Per host.
    host: Arc<[HostRoute]>,
    /// (start, len) into `hops` for entry `(switch - n_hosts) * n_leaves +
    /// leaf` (switches are numbered after the hosts).
    entries: Arc<[(u32, u32)]>,
    hops: Arc<[PortId]>,
}

/// Hops from `leaf` to every switch, through switches only (`u32::MAX`:
/// unreachable), by breadth-first search; links are bidirectional, so the
/// forward adjacency serves. `queue` is scratch.
fn switch_distances(
    adj: &[Vec<(PortId, NodeId)>],
    n_hosts: usize,
    leaf: NodeId,
    dist: &mut [u32],
    queue: &mut VecDeque<usize>,
) {
    dist.iter_mut().for_each(|d| *d = u32::MAX);
    dist[leaf.idx()] = 0;
    queue.push_back(leaf.idx());
    while let Some(u) = queue.pop_front() {
        for &(_, v) in &adj[u] {
            if v.idx() >= n_hosts && dist[v.idx()] == u32::MAX {
                dist[v.idx()] = dist[u] + 1;
                queue.push_back(v.idx());
            }
        }
    }
}

/// A table of `len` empty entries, allocated where it will stay: a `Vec`
/// turned into an `Arc<[_]>` is copied, and at k = 48 the table is 26 MB.
fn empty_entries(len: usize) -> Arc<[(u32, u32)]> {
    (0..len).map(|_| (0, 0)).collect()
}

/// Next-hop sets stored once each, one after the other: an entry is a
/// `(start, len)` range of `hops`, and equal sets share one range.
#[derive(Default)]
struct PortSets {
    hops: Vec<PortId>,
    dedup: HashMap<Vec<PortId>, u32>,
}

impl PortSets {
    /// The range of `set`, stored now if it is new.
    fn intern(&mut self, set: &[PortId]) -> (u32, u32) {
        let hops = &mut self.hops;
        let start = *self.dedup.entry(set.to_vec()).or_insert_with(|| {
            let s = hops.len() as u32;
            hops.extend_from_slice(set);
            s
        });
        (start, set.len() as u32)
    }
}

/// Into `set`, the ports of switch `u` that lead to a switch one step
/// closer to the leaf whose distances are `dist`.
fn closer_hops(
    adj: &[Vec<(PortId, NodeId)>],
    n_hosts: usize,
    u: usize,
    dist: &[u32],
    set: &mut Vec<PortId>,
) {
    set.clear();
    for &(p, v) in &adj[u] {
        let v = v.idx();
        if v >= n_hosts && dist[v] != u32::MAX && dist[v] + 1 == dist[u] {
            set.push(p);
        }
    }
}

impl Routing {
    /// Compute routes. `adj[node]` lists `(port, peer)` for the node's output
    /// ports; nodes `0..n_hosts` are hosts, each with exactly one port, to a
    /// switch. Hosts never forward, so paths cross only switches. Fails if a
    /// host cannot reach another host.
    pub fn compute(
        n_hosts: usize,
        adj: &[Vec<(PortId, NodeId)>],
        names: &[String],
    ) -> Result<Routing> {
        let n = adj.len();
        let mut sets = PortSets::default();
        let mut intern = |set: &[PortId]| sets.intern(set);

        // Hosts: their switch, their NIC and the port down to them.
        let mut attach = Vec::with_capacity(n_hosts);
        let mut nic = Vec::with_capacity(n_hosts);
        let mut down = Vec::with_capacity(n_hosts);
        for (h, ports) in adj.iter().enumerate().take(n_hosts) {
            debug_assert_eq!(ports.len(), 1, "one link per host");
            let (p, sw) = ports[0];
            attach.push(sw);
            nic.push(intern(&[p]));
            let to_host: Vec<PortId> = adj[sw.idx()]
                .iter()
                .filter(|&&(_, v)| v.idx() == h)
                .map(|&(q, _)| q)
                .collect();
            down.push(intern(&to_host));
        }

        // Leaves, numbered in order of their first host; switch rows.
        let mut leaf_index = vec![NONE; n];
        let mut leaves: Vec<NodeId> = Vec::new();
        for &sw in &attach {
            if leaf_index[sw.idx()] == NONE {
                leaf_index[sw.idx()] = leaves.len() as u32;
                leaves.push(sw);
            }
        }
        let n_leaves = leaves.len();
        let mut shared_entries = empty_entries((n - n_hosts) * n_leaves);
        let entries = Arc::get_mut(&mut shared_entries).expect("not shared yet");

        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        let mut set = Vec::new();
        for (l, &leaf) in leaves.iter().enumerate() {
            switch_distances(adj, n_hosts, leaf, &mut dist, &mut queue);
            if let Some(src) = (0..n_hosts).find(|&h| dist[attach[h].idx()] == u32::MAX) {
                // The first leaf is host 0's, and reachability is symmetric,
                // so the first failure names a host that cannot reach host 0.
                return Err(Error::Topology(format!(
                    "host {} cannot reach host {}",
                    names[src], names[0]
                )));
            }
            for u in n_hosts..n {
                if u == leaf.idx() || dist[u] == u32::MAX {
                    continue;
                }
                closer_hops(adj, n_hosts, u, &dist, &mut set);
                entries[(u - n_hosts) * n_leaves + l] = intern(&set);
            }
        }
        let host: Arc<[HostRoute]> = (0..n_hosts)
            .map(|h| HostRoute {
                attach: attach[h],
                leaf: leaf_index[attach[h].idx()],
                nic: nic[h],
                down: down[h],
            })
            .collect();
        Ok(Routing {
            n_hosts,
            n_leaves,
            host,
            entries: shared_entries,
            hops: sets.hops.into(),
        })
    }

    /// Routes over `adj`, a part of the links the routes `built` were
    /// computed on (some failed), keeping `built`'s hosts and leaves: each
    /// switch's next hops towards a leaf are those on its shortest paths
    /// over the links left; where no path is left, `built`'s (the packets
    /// then reach a failed link and are dropped there, and their flows
    /// wait for it to come back, as a network without another path does).
    pub fn compute_around(
        n_hosts: usize,
        adj: &[Vec<(PortId, NodeId)>],
        built: &Routing,
    ) -> Routing {
        let n = adj.len();
        let mut sets = PortSets::default();
        let mut intern = |set: &[PortId]| sets.intern(set);
        let host: Arc<[HostRoute]> = built
            .host
            .iter()
            .map(|h| HostRoute {
                nic: intern(built.slice(h.nic)),
                down: intern(built.slice(h.down)),
                ..*h
            })
            .collect();
        let mut leaves = vec![NodeId(0); built.n_leaves];
        for h in built.host.iter() {
            leaves[h.leaf as usize] = h.attach;
        }
        let n_leaves = built.n_leaves;
        let mut shared_entries = empty_entries((n - n_hosts) * n_leaves);
        let entries = Arc::get_mut(&mut shared_entries).expect("not shared yet");
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        let mut set = Vec::new();
        for (l, &leaf) in leaves.iter().enumerate() {
            switch_distances(adj, n_hosts, leaf, &mut dist, &mut queue);
            for u in n_hosts..n {
                if u == leaf.idx() {
                    continue;
                }
                let i = (u - n_hosts) * n_leaves + l;
                set.clear();
                if dist[u] != u32::MAX {
                    closer_hops(adj, n_hosts, u, &dist, &mut set);
                }
                entries[i] = if set.is_empty() {
                    intern(built.slice(built.entries[i]))
                } else {
                    intern(&set)
                };
            }
        }
        Routing {
            n_hosts,
            n_leaves,
            host,
            entries: shared_entries,
            hops: sets.hops.into(),
        }
    }

    /// The ports of a `(start, len)` range into `hops`.
    fn slice(&self, (s, l): (u32, u32)) -> &[PortId] {
        &self.hops[s as usize..(s + l) as usize]
    }

    /// Equal-cost egress ports at `node` towards host `dst`.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst: NodeId) -> &[PortId] {
        let (s, l) = if node.idx() < self.n_hosts {
            self.host[node.idx()].nic
        } else {
            let to = &self.host[dst.idx()];
            if node == to.attach {
                to.down
            } else {
                self.entries[(node.idx() - self.n_hosts) * self.n_leaves + to.leaf as usize]
            }
        };
        &self.hops[s as usize..(s + l) as usize]
    }

    /// Whether `self` and `other` hold one set of tables (for tests of
    /// the sharing between copies of a network).
    #[cfg(test)]
    pub(crate) fn shares_tables_with(&self, other: &Routing) -> bool {
        Arc::ptr_eq(&self.entries, &other.entries)
            && Arc::ptr_eq(&self.hops, &other.hops)
            && Arc::ptr_eq(&self.host, &other.host)
    }

    /// Routing entries held (switch × leaf tables plus two per host).
    pub fn n_entries(&self) -> usize {
        self.entries.len() + 2 * self.n_hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("n{i}")).collect()
    }

    /// Hosts 0,1 on switch 4, hosts 2,3 on switch 5, spines 6 and 7 each
    /// linked to both leaves. Ports are numbered in link order.
    fn leaf_spine() -> Vec<Vec<(PortId, NodeId)>> {
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); 8];
        let mut next = 0u32;
        let mut link = |adj: &mut Vec<Vec<(PortId, NodeId)>>, a: usize, b: usize| {
            adj[a].push((PortId(next), NodeId(b as u32)));
            adj[b].push((PortId(next + 1), NodeId(a as u32)));
            next += 2;
        };
        for (h, s) in [(0, 4), (1, 4), (2, 5), (3, 5)] {
            link(&mut adj, h, s);
        }
        for spine in [6, 7] {
            for leaf in [4, 5] {
                link(&mut adj, leaf, spine);
            }
        }
        adj
    }

    #[test]
    fn next_hops_follow_every_shortest_path_down_to_the_host() {
        let adj = leaf_spine();
        let r = Routing::compute(4, &adj, &names(8)).unwrap();
        let ports = |node: u32, dst: u32| port_numbers(&r, node, dst);
        // A host's only next hop is its NIC.
        assert_eq!(ports(0, 3), vec![0]);
        assert_eq!(ports(3, 0), vec![6]);
        // Leaf 4 to a remote host: both spines, in port order.
        assert_eq!(ports(4, 2), vec![8, 12]);
        // Leaf 4 to its own hosts: the port down to each.
        assert_eq!(ports(4, 0), vec![1]);
        assert_eq!(ports(4, 1), vec![3]);
        // Spine 6 down to each leaf.
        assert_eq!(ports(6, 0), vec![9]);
        assert_eq!(ports(6, 3), vec![11]);
        assert_eq!(r.n_entries(), 4 * 2 + 2 * 4);
    }

    /// The numbers of the next-hop ports at `node` towards host `dst`.
    fn port_numbers(r: &Routing, node: u32, dst: u32) -> Vec<u32> {
        r.next_hops(NodeId(node), NodeId(dst))
            .iter()
            .map(|p| p.0)
            .collect()
    }

    /// A topology's adjacency, ports numbered as the network numbers them.
    fn adjacency(t: &crate::net::topology::TopologySpec) -> Vec<Vec<(PortId, NodeId)>> {
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); t.n_nodes()];
        for (i, l) in t.links.iter().enumerate() {
            adj[l.a.idx()].push((PortId(2 * i as u32), l.b));
            adj[l.b.idx()].push((PortId(2 * i as u32 + 1), l.a));
        }
        adj
    }

    /// A k-ary fat tree of 10 Gbit/s links, its adjacency and its routes.
    fn fat_tree_routes(
        k: u32,
    ) -> (
        crate::net::topology::TopologySpec,
        Vec<Vec<(PortId, NodeId)>>,
        Routing,
    ) {
        use crate::net::topology::fat_tree;
        use crate::time::{Duration, Rate};
        let gbps = Rate::gbps(10);
        let t = fat_tree(k, k, 1, gbps, gbps, Duration::from_ns(100)).unwrap();
        let adj = adjacency(&t);
        let r = Routing::compute(t.n_hosts as usize, &adj, &t.names).unwrap();
        (t, adj, r)
    }

    /// `adj` without the two directions of the link `port` feeds (ports
    /// of a link are numbered one after the other).
    fn without_link(adj: &[Vec<(PortId, NodeId)>], port: u32) -> Vec<Vec<(PortId, NodeId)>> {
        adj.iter()
            .map(|ps| {
                ps.iter()
                    .copied()
                    .filter(|(p, _)| p.0 / 2 != port / 2)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn routes_around_a_failed_link_stay_shortest_and_mirror_each_other() {
        let adj = leaf_spine();
        let built = Routing::compute(4, &adj, &names(8)).unwrap();
        // Leaf 4's link to spine 6 (ports 8 and 9) fails.
        let r = Routing::compute_around(4, &without_link(&adj, 8), &built);
        let ports = |node: u32, dst: u32| port_numbers(&r, node, dst);
        // Both leaves now go through spine 7 only, each way: a symmetric
        // hash over one choice is the mirror path.
        assert_eq!(ports(4, 2), vec![12]);
        assert_eq!(ports(5, 0), vec![14]);
        // Spine 6 reaches leaf 4 only through leaf 5 and spine 7 (a
        // longer path, the only one left).
        assert_eq!(ports(6, 0), vec![11]);
        // Hosts and the last hops are as built.
        assert_eq!(ports(0, 3), vec![0]);
        assert_eq!(ports(4, 1), vec![3]);
        // Both of leaf 4's uplinks fail: no path is left towards leaf 5,
        // and leaf 4 keeps the routes it was built with (the packets die
        // on the failed links; the flows wait for them).
        let cut = without_link(&without_link(&adj, 8), 12);
        let r = Routing::compute_around(4, &cut, &built);
        assert_eq!(
            r.next_hops(NodeId(4), NodeId(2)),
            built.next_hops(NodeId(4), NodeId(2))
        );
    }

    #[test]
    fn a_fat_tree_routes_around_a_failed_core_link_through_another_core() {
        let (t, adj, built) = fat_tree_routes(4);
        // The first core link of the aggregation switch host 0's packets
        // reach first fails.
        let tor = t
            .links
            .iter()
            .find(|l| l.a.idx() == 0)
            .map(|l| l.b)
            .unwrap();
        let agg_port = built.next_hops(tor, NodeId(15))[0];
        let agg = {
            let l = &t.links[agg_port.idx() / 2];
            if agg_port.0 % 2 == 0 {
                l.b
            } else {
                l.a
            }
        };
        let up = built.next_hops(agg, NodeId(15)).to_vec();
        assert_eq!(up.len(), 2, "two cores above each aggregation switch");
        let r = Routing::compute_around(16, &without_link(&adj, up[0].0), &built);
        assert_eq!(r.next_hops(agg, NodeId(15)), &up[1..]);
        // Every host still reaches every other, on at most 6 links.
        for src in 0..16u32 {
            for dst in 0..16u32 {
                let (mut at, mut n) = (NodeId(src), 0);
                while at.0 != dst {
                    let p = r.next_hops(at, NodeId(dst))[0];
                    assert_ne!(p.0 / 2, up[0].0 / 2, "a route over the failed link");
                    let l = &t.links[p.idx() / 2];
                    at = if p.0 % 2 == 0 { l.b } else { l.a };
                    n += 1;
                    assert!(n <= 6, "loop from {src} to {dst}");
                }
            }
        }
    }

    #[test]
    fn a_host_that_cannot_reach_another_is_an_error() {
        // Two separate leaves with one host each.
        let adj = vec![
            vec![(PortId(0), NodeId(2))],
            vec![(PortId(2), NodeId(3))],
            vec![(PortId(1), NodeId(0))],
            vec![(PortId(3), NodeId(1))],
        ];
        let err = Routing::compute(2, &adj, &names(4)).unwrap_err();
        assert!(
            err.to_string().contains("host n1 cannot reach host n0"),
            "{err}"
        );
    }

    #[test]
    fn a_fat_tree_keeps_tables_per_leaf_not_per_host() {
        // k = 8: 128 hosts, 32 ToRs, 32 aggregation and 16 core switches.
        let (t, _, r) = fat_tree_routes(8);
        // 80 switches × 32 leaves, plus two per host: not nodes × hosts
        // (208 × 128), which grows as k^6 and was 6.9 GB at k = 48.
        assert_eq!(r.n_entries(), 80 * 32 + 2 * 128);
        // Every host reaches every other along a shortest path: up to the
        // core and back is 6 hops between pods, 4 within a pod, 2 on a ToR.
        let hops = |src: usize, dst: usize| -> usize {
            let (mut at, mut n) = (NodeId(src as u32), 0);
            while at.idx() != dst {
                let p = r.next_hops(at, NodeId(dst as u32))[0];
                let i = p.0 as usize / 2;
                let l = &t.links[i];
                at = if p.0 % 2 == 0 { l.b } else { l.a };
                n += 1;
                assert!(n <= 6, "loop from {src} to {dst}");
            }
            n
        };
        assert_eq!(hops(0, 1), 2);
        assert_eq!(hops(0, 4), 4);
        assert_eq!(hops(0, 127), 6);
        // Between pods there are (k/2)^2 = 16 shortest paths: 4 choices up
        // at the ToR, 4 at the aggregation switch, 1 on the way down.
        assert_eq!(r.next_hops(NodeId(128), NodeId(127)).len(), 4);
    }
}
