//! Cutting a topology into pieces for a partitioned run (issue 33, step 2).
//!
//! A piece is a set of nodes whose events one queue runs; pieces meet only
//! over *cut* links, and a packet takes at least a cut link's delay to
//! cross one. So within a window no longer than the smallest delay of a cut
//! link (the *lookahead*), nothing one piece does can reach another piece
//! in the same window, and the pieces can run the window independently.
//!
//! The cut is a function of the topology alone (never of the thread count),
//! so every run of a config is cut the same way:
//!
//! - each host is in the piece of the switch (or switches) it is linked to:
//!   a leaf/ToR with its hosts is one piece, and the host-side events
//!   (transport calls, NIC bookkeeping) stay with the switch that feeds them;
//! - every other switch is a piece of its own (aggregation, core, spine);
//! - links shorter than a floor (zero-delay links always) are never cut:
//!   their ends are in one piece, since a window cannot be shorter than
//!   the delay of a cut link.
//!
//! Pieces are numbered in the order of their smallest node id, so a piece's
//! number, like everything else here, is the same on every run.

use crate::packet::NodeId;
use crate::time::Duration;

use super::topology::TopologySpec;

/// A topology cut into pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// The piece of each node, by node id.
    piece_of: Vec<u32>,
    /// The nodes of each piece, in id order.
    pieces: Vec<Vec<NodeId>>,
    /// The smallest delay of a cut link (`None`: nothing is cut).
    lookahead: Option<Duration>,
}

impl Partition {
    /// The natural cut of `topo` (see the module docs), cutting no link
    /// shorter than `min_cut_delay` (zero-delay links are never cut).
    pub fn natural(topo: &TopologySpec, min_cut_delay: Duration) -> Partition {
        let n = topo.n_nodes();
        let mut sets = DisjointSets::new(n);
        for l in &topo.links {
            let host_link = l.a.0 < topo.n_hosts || l.b.0 < topo.n_hosts;
            let too_short = l.delay == Duration::ZERO || l.delay < min_cut_delay;
            if host_link || too_short {
                sets.join(l.a.idx(), l.b.idx());
            }
        }
        Partition::from_sets(topo, &mut sets)
    }

    /// The whole topology as one piece (what a serial run is).
    pub fn whole(topo: &TopologySpec) -> Partition {
        let mut sets = DisjointSets::new(topo.n_nodes());
        for i in 1..topo.n_nodes() {
            sets.join(0, i);
        }
        Partition::from_sets(topo, &mut sets)
    }

    /// Number the sets in order of their smallest node and find the
    /// lookahead over the links they cut.
    fn from_sets(topo: &TopologySpec, sets: &mut DisjointSets) -> Partition {
        let n = topo.n_nodes();
        let mut number = vec![u32::MAX; n];
        let mut piece_of = vec![0u32; n];
        let mut pieces: Vec<Vec<NodeId>> = Vec::new();
        for (node, piece) in piece_of.iter_mut().enumerate() {
            let root = sets.root(node);
            if number[root] == u32::MAX {
                number[root] = pieces.len() as u32;
                pieces.push(Vec::new());
            }
            *piece = number[root];
            pieces[number[root] as usize].push(NodeId(node as u32));
        }
        let lookahead = topo
            .links
            .iter()
            .filter(|l| piece_of[l.a.idx()] != piece_of[l.b.idx()])
            .map(|l| l.delay)
            .min();
        Partition {
            piece_of,
            pieces,
            lookahead,
        }
    }

    /// Number of pieces.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether there are no pieces (an empty topology).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The piece `node` is in.
    #[inline]
    pub fn piece_of(&self, node: NodeId) -> u32 {
        self.piece_of[node.idx()]
    }

    /// The nodes of piece `p`, in id order.
    pub fn nodes(&self, p: u32) -> &[NodeId] {
        &self.pieces[p as usize]
    }

    /// The longest window the pieces can run without hearing from each
    /// other: the smallest delay of a cut link (`None` when nothing is cut).
    pub fn lookahead(&self) -> Option<Duration> {
        self.lookahead
    }
}

/// Union-find over node indices (path halving, union by smaller root so
/// that the result does not depend on the order of joins).
struct DisjointSets {
    parent: Vec<usize>,
}

impl DisjointSets {
    fn new(n: usize) -> Self {
        DisjointSets {
            parent: (0..n).collect(),
        }
    }

    fn root(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[hi] = lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::{dumbbell, fat_tree, leaf_spine, LinkSpec};
    use crate::time::Rate;

    fn ns(x: u64) -> Duration {
        Duration::from_ns(x)
    }

    /// A k = 4 fat tree: 8 ToRs with their 2 hosts each, then 8
    /// aggregation and 4 core switches alone; every cut link is 500 ns.
    #[test]
    fn a_fat_tree_is_cut_at_every_switch_above_the_tors() {
        let rate = Rate::gbps(10);
        let topo = fat_tree(4, 4, 1, rate, rate, ns(500)).unwrap();
        let p = Partition::natural(&topo, Duration::ZERO);
        assert_eq!(p.len(), 8 + 8 + 4);
        assert_eq!(p.lookahead(), Some(ns(500)));
        // Hosts 0 and 1 hang off ToR 16 (hosts come first): piece 0.
        assert_eq!(p.nodes(0), &[NodeId(0), NodeId(1), NodeId(16)]);
        for tor in 0..8u32 {
            let piece = p.piece_of(NodeId(16 + tor));
            assert_eq!(piece, tor);
            assert_eq!(p.piece_of(NodeId(2 * tor)), piece);
            assert_eq!(p.piece_of(NodeId(2 * tor + 1)), piece);
        }
        for (i, sw) in (24..36u32).enumerate() {
            assert_eq!(p.nodes(8 + i as u32), &[NodeId(sw)]);
        }
    }

    /// A zero-delay link is never cut, and a link below the floor neither;
    /// the lookahead is the shortest link that is cut.
    #[test]
    fn short_links_are_not_cut() {
        let rate = Rate::gbps(10);
        let mut topo = leaf_spine(2, 2, 2, rate, rate, ns(1000)).unwrap();
        // Leaf 4 -- spine 6 gets zero delay, leaf 5 -- spine 7 gets 200 ns.
        for l in &mut topo.links {
            if (l.a, l.b) == (NodeId(4), NodeId(6)) {
                l.delay = Duration::ZERO;
            }
            if (l.a, l.b) == (NodeId(5), NodeId(7)) {
                l.delay = ns(200);
            }
        }
        let p = Partition::natural(&topo, Duration::ZERO);
        assert_eq!(p.len(), 3);
        assert_eq!(p.piece_of(NodeId(4)), p.piece_of(NodeId(6)));
        assert_eq!(p.lookahead(), Some(ns(200)));
        // With a 500 ns floor, 5 -- 7 is not cut either: two pieces, each a
        // leaf with its hosts and a spine, cut at the 1 us links between.
        let floor = Partition::natural(&topo, ns(500));
        assert_eq!(floor.len(), 2);
        assert_eq!(floor.piece_of(NodeId(5)), floor.piece_of(NodeId(7)));
        assert_eq!(floor.lookahead(), Some(ns(1000)));
    }

    /// The cut does not depend on the order links are listed in.
    #[test]
    fn the_cut_does_not_depend_on_link_order() {
        let rate = Rate::gbps(10);
        let topo = fat_tree(4, 4, 1, rate, rate, ns(500)).unwrap();
        let mut reversed = topo.clone();
        reversed.links.reverse();
        for l in &mut reversed.links {
            std::mem::swap(&mut l.a, &mut l.b);
        }
        assert_eq!(
            Partition::natural(&topo, Duration::ZERO),
            Partition::natural(&reversed, Duration::ZERO)
        );
    }

    /// A dumbbell: the two switches with their hosts, cut at the bottleneck.
    #[test]
    fn a_dumbbell_is_cut_at_the_bottleneck() {
        let rate = Rate::gbps(10);
        let topo = dumbbell(2, 2, rate, ns(100), rate, ns(5000), None).unwrap();
        let p = Partition::natural(&topo, Duration::ZERO);
        assert_eq!(p.len(), 2);
        assert_eq!(p.nodes(0), &[NodeId(0), NodeId(1), NodeId(4)]);
        assert_eq!(p.nodes(1), &[NodeId(2), NodeId(3), NodeId(5)]);
        assert_eq!(p.lookahead(), Some(ns(5000)));
        let whole = Partition::whole(&topo);
        assert_eq!((whole.len(), whole.lookahead()), (1, None));
        // Two hosts linked to each other directly share a piece.
        let mut direct = topo.clone();
        direct.links.push(LinkSpec {
            a: NodeId(0),
            b: NodeId(3),
            rate,
            delay: ns(10),
            buffer: None,
        });
        assert_eq!(Partition::natural(&direct, Duration::ZERO).len(), 1);
    }
}
