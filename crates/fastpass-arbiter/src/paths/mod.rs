//! Path selection (Fastpass §4): in a two-tier topology, each timeslot's
//! matching induces a bipartite multigraph between source racks and
//! destination racks (one edge per allocated pair that crosses racks,
//! Fig. 5b). A proper edge colouring — no two edges at the same rack share a
//! colour — assigns each colour to one core switch (Fig. 5c, d), so no
//! uplink or downlink carries two packets in the slot. A bipartite
//! multigraph of maximum degree Δ can always be coloured with Δ colours
//! (König's theorem), and a rack sends and receives at most one packet per
//! host per slot, so `hosts_per_rack` core switches always suffice.
//!
//! [`PathSelector`] colours edge by edge: the lowest colour free at both
//! ends if there is one; otherwise a colour `a` free at the source rack and
//! `b` free at the destination rack are swapped along the path from the
//! destination that alternates a, b, a, ..., which frees `a` there without
//! touching the source (the classic constructive proof of König's theorem).
//! The colours in use at each rack are one `u64` mask, so "a colour free at
//! both ends" is one OR and one trailing-zeros count. Two engines share
//! this method: `greedy.rs` for up to 64 racks (fixed-size tables; most
//! conflicts fixed by recolouring a single pair) and
//! `pair_masks.rs` for larger fabrics (tables sized to the fabric). The
//! paper's arbiter uses Euler splits on a padded regular graph instead
//! (O(E log Δ)); for the sizes here (≤ 64 colours) conflicts are few and
//! short, and one pass over the pairs is faster. Links that carry several
//! packets per slot (the paper's own 4 paths) are the same problem with
//! one colour per packet a link carries; on crowded slots `lanes.rs`
//! balances room per core instead, which leaves almost nothing to fix.
//! [`colour_edges`] colours a general bipartite multigraph (any vertex
//! counts and colour counts).

mod colouring;
mod greedy;
mod lanes;
mod pair_masks;

pub use colouring::colour_edges;
pub use greedy::GREEDY_MAX_RACKS;

use crate::error::ArbiterError;
use greedy::GreedyEngine;
use lanes::LaneEngine;
use pair_masks::PairMaskEngine;

/// Largest number of colours (core switches) of [`PathSelector`] and of the
/// bitmask engine of [`colour_edges`].
pub const MAX_COLOURS: usize = 64;
/// Largest number of racks of a [`PathSelector`] (beyond 64 racks it keeps
/// a racks × racks table of masks).
pub const MAX_RACKS: usize = 1024;
/// The core [`PathSelector::select_cores`] gives a pair within a rack (it
/// crosses no core switch).
pub const NO_CORE: u8 = u8::MAX;

/// Path selection for a two-tier topology of `racks` racks of
/// `hosts_per_rack` hosts (host `h` is in rack `h / hosts_per_rack`) and
/// `cores` core switches, reusing its buffers from one timeslot to the next.
/// Each rack–core link carries one packet per timeslot
/// ([`PathSelector::new`]) or several
/// ([`PathSelector::with_link_capacity`]; Fastpass's own arbiter splits a
/// rack's traffic over 4 such paths).
#[derive(Clone, Debug)]
pub struct PathSelector {
    racks: usize,
    hosts_per_rack: u32,
    /// log2(hosts_per_rack) when it is a power of two (a shift, not a
    /// division, per packet).
    shift: Option<u32>,
    /// One bit per colour: per core switch, times the packets a link carries.
    full: u64,
    engine: Engine,
    /// For links carrying more than one packet per slot: the first try on
    /// crowded slots (`engine`, with one colour per packet a link carries,
    /// colours the others and the few this cannot finish).
    lanes: Option<LaneEngine>,
    /// With `lanes`: the core of each colour (`NO_CORE` stays), and
    /// `cores - 1` when that is a power of two (colour & mask = core).
    core_of_colour: Box<[u8; 256]>,
    core_mask: Option<u8>,
    /// Scratch for [`PathSelector::select`].
    cores_buf: Vec<u8>,
}

#[derive(Clone, Debug)]
enum Engine {
    Greedy(GreedyEngine),
    PairMasks(PairMaskEngine),
}

impl PathSelector {
    /// A selector for `racks` × `hosts_per_rack` hosts and `cores` core
    /// switches (1 to 64; at least `hosts_per_rack` for every matching to be
    /// routable), each rack–core link carrying one packet per timeslot.
    pub fn new(racks: usize, hosts_per_rack: u32, cores: usize) -> Result<Self, ArbiterError> {
        Self::with_link_capacity(racks, hosts_per_rack, cores, 1)
    }

    /// A selector whose rack–core links each carry `capacity` packets per
    /// timeslot (`cores × capacity` from 1 to 64; at least
    /// `hosts_per_rack` for every matching to be routable). Fastpass's own
    /// arbiter: 4 cores of capacity 8 for racks of 32 hosts.
    pub fn with_link_capacity(
        racks: usize,
        hosts_per_rack: u32,
        cores: usize,
        capacity: usize,
    ) -> Result<Self, ArbiterError> {
        let colours = cores.saturating_mul(capacity);
        if racks == 0
            || racks > MAX_RACKS
            || hosts_per_rack == 0
            || cores == 0
            || capacity == 0
            || colours > MAX_COLOURS
            || (racks as u64) * (hosts_per_rack as u64) > u32::MAX as u64
        {
            return Err(ArbiterError::BadTopology {
                racks,
                hosts_per_rack,
                cores,
                capacity,
            });
        }
        Ok(PathSelector {
            racks,
            hosts_per_rack,
            shift: hosts_per_rack
                .is_power_of_two()
                .then(|| hosts_per_rack.trailing_zeros()),
            full: if colours >= 64 {
                u64::MAX
            } else {
                (1u64 << colours) - 1
            },
            engine: if racks <= GREEDY_MAX_RACKS {
                Engine::Greedy(GreedyEngine::new())
            } else {
                Engine::PairMasks(PairMaskEngine::new(racks))
            },
            lanes: (capacity > 1).then(|| LaneEngine::new(racks, cores, capacity)),
            core_mask: cores.is_power_of_two().then(|| (cores - 1) as u8),
            core_of_colour: Box::new(std::array::from_fn(|c| {
                if c < colours {
                    (c % cores) as u8
                } else {
                    NO_CORE
                }
            })),
            cores_buf: Vec::new(),
        })
    }

    /// For one timeslot's `(src, dst)` pairs, write to `out` the core switch
    /// each pair crosses, [`NO_CORE`] for a pair within a rack: no two pairs
    /// leaving one rack, or entering one rack, get the same core. An error
    /// (and `out` empty) if a host is out of range or a rack has more
    /// cross-rack pairs than there are cores; the selector stays usable.
    ///
    /// The same pairs in the same order always get the same cores.
    pub fn select_cores(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut Vec<u8>,
    ) -> Result<(), ArbiterError> {
        out.clear();
        self.check_hosts(pairs)?;
        out.resize(pairs.len(), NO_CORE);
        // Greedy colouring of a random matching meets its first conflict
        // only when nearly every host is busy (16 × 32 hosts: in 2 % of
        // slots at 70 % of hosts, 52 % at 85 %, all at 100 %).
        let crowded = pairs.len() * 20 >= self.racks * self.hosts_per_rack as usize * 17;
        // Links of several packets: below that load the colouring (one
        // colour per packet a link carries) is the faster way, and has no
        // conflicts to fix; above it balancing room per core is (see
        // `lanes.rs`; 2.2 against 2.9 µs for nearly full 16 × 32 slots
        // with 4 cores of 8, 1.9 against 1.5 µs at 70 % of hosts busy).
        if let (Some(lanes), true) = (&mut self.lanes, crowded) {
            let done = match self.shift {
                Some(k) => lanes.assign(pairs, out, move |h| (h >> k) as usize),
                None => {
                    let hpr = self.hosts_per_rack;
                    lanes.assign(pairs, out, move |h| (h / hpr) as usize)
                }
            };
            if done {
                return Ok(());
            }
            out.fill(NO_CORE);
        }
        let full = self.full;
        let result = match (&mut self.engine, self.shift) {
            (Engine::Greedy(g), Some(k)) => {
                g.colour(pairs, out, full, crowded, move |h| (h >> k) as usize)
            }
            (Engine::Greedy(g), None) => {
                let hpr = self.hosts_per_rack;
                g.colour(pairs, out, full, crowded, move |h| (h / hpr) as usize)
            }
            (Engine::PairMasks(p), Some(k)) => {
                p.colour(pairs, out, full, move |h| (h >> k) as usize)
            }
            (Engine::PairMasks(p), None) => {
                let hpr = self.hosts_per_rack;
                p.colour(pairs, out, full, move |h| (h / hpr) as usize)
            }
        };
        if result.is_err() {
            out.clear();
        } else if self.lanes.is_some() {
            // Colour c is one of the packets core c % cores carries.
            if let Some(m) = self.core_mask {
                // One AND per byte (NO_CORE kept), vectorised.
                for c in out.iter_mut() {
                    *c &= m | ((*c == NO_CORE) as u8).wrapping_neg();
                }
            } else {
                for c in out.iter_mut() {
                    *c = self.core_of_colour[*c as usize];
                }
            }
        }
        result
    }

    /// [`PathSelector::select_cores`] with `None` for a pair within a rack
    /// and `Some(core)` otherwise (one more pass over the pairs).
    pub fn select(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut Vec<Option<u32>>,
    ) -> Result<(), ArbiterError> {
        out.clear();
        let mut cores = std::mem::take(&mut self.cores_buf);
        let result = self.select_cores(pairs, &mut cores);
        if result.is_ok() {
            out.extend(cores.iter().map(|&c| (c != NO_CORE).then_some(c as u32)));
        }
        self.cores_buf = cores;
        result
    }

    /// An error naming the first host out of range.
    fn check_hosts(&self, pairs: &[(u32, u32)]) -> Result<(), ArbiterError> {
        let hosts = self.racks * self.hosts_per_rack as usize;
        // One OR over all hosts (vectorised) proves the common case; only a
        // large OR looks for the culprit.
        let any = pairs.iter().fold(0u32, |m, &(s, d)| m | s | d);
        if (any as usize) < hosts {
            return Ok(());
        }
        match pairs
            .iter()
            .flat_map(|&(s, d)| [s, d])
            .find(|&h| h as usize >= hosts)
        {
            Some(host) => Err(ArbiterError::HostOutOfRange { host, hosts }),
            None => Ok(()),
        }
    }
}

/// For a timeslot's allocation of `(src, dst)` hosts in a two-tier topology
/// with `hosts_per_rack` hosts per rack and `cores` core switches, the core
/// switch each pair crosses (`None` for pairs within a rack). `None` if a
/// rack has more cross-rack packets than `cores` or a host is out of range.
/// Allocates; [`PathSelector`] reuses its buffers.
pub fn assign_cores(
    pairs: &[(u32, u32)],
    hosts_per_rack: u32,
    racks: usize,
    cores: usize,
) -> Option<Vec<Option<u32>>> {
    if cores <= MAX_COLOURS && racks <= MAX_RACKS {
        let mut sel = PathSelector::new(racks, hosts_per_rack, cores).ok()?;
        let mut out = Vec::new();
        sel.select(pairs, &mut out).ok()?;
        return Some(out);
    }
    let hosts = racks as u64 * hosts_per_rack as u64;
    if hosts_per_rack == 0
        || pairs
            .iter()
            .any(|&(s, d)| s as u64 >= hosts || d as u64 >= hosts)
    {
        return None;
    }
    let mut edges = Vec::with_capacity(pairs.len());
    let mut which = Vec::with_capacity(pairs.len());
    for (i, &(s, d)) in pairs.iter().enumerate() {
        let (rs, rd) = (s / hosts_per_rack, d / hosts_per_rack);
        if rs != rd {
            edges.push((rs, rd));
            which.push(i);
        }
    }
    let colours = colour_edges(&edges, racks, racks, cores)?;
    let mut out = vec![None; pairs.len()];
    for (k, &i) in which.iter().enumerate() {
        out[i] = Some(colours[k]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proper(edges: &[(u32, u32)], c: &[u32]) -> bool {
        for (i, &(u, v)) in edges.iter().enumerate() {
            for (j, &(x, y)) in edges.iter().enumerate() {
                if i != j && (u == x || v == y) && c[i] == c[j] {
                    return false;
                }
            }
        }
        true
    }

    #[test]
    fn colours_a_case_that_needs_a_swap() {
        // Lowest-first: (0,1) and (1,0) take 0, (0,2) takes 1; then (1,2)
        // has only 1 free at left 1 and only 0 free at right 2, so the
        // alternating path from right 2 is swapped (the case of
        // `a_conflict_is_resolved_by_swapping_along_the_alternating_path`).
        let edges = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)];
        let c = colour_edges(&edges, 3, 3, 2).unwrap();
        assert!(proper(&edges, &c));
        assert!(colour_edges(&edges, 3, 3, 1).is_none());
    }

    #[test]
    fn more_than_64_colours_use_the_table_engine() {
        // A star of 70 parallel edges needs 70 colours.
        let edges = vec![(0u32, 0u32); 70];
        let c = colour_edges(&edges, 1, 1, 70).unwrap();
        let mut s = c.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 70);
        assert!(colour_edges(&edges, 1, 1, 69).is_none());
    }

    #[test]
    fn out_of_range_input_is_refused() {
        assert!(colour_edges(&[(2, 0)], 2, 2, 2).is_none());
        assert!(assign_cores(&[(0, 64)], 8, 8, 8).is_none());
        let mut p = PathSelector::new(2, 4, 4).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            p.select(&[(0, 8)], &mut out),
            Err(ArbiterError::HostOutOfRange { host: 8, hosts: 8 })
        );
        // Five packets out of rack 0 (hosts 0..4 twice over) with 4 cores.
        let many = [(0, 4), (1, 5), (2, 6), (3, 7), (0, 5)];
        assert!(matches!(
            p.select(&many, &mut out),
            Err(ArbiterError::TooFewColours { .. })
        ));
        // Usable again afterwards.
        p.select(&[(0, 4), (5, 1)], &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert!(PathSelector::new(0, 4, 4).is_err());
        assert!(PathSelector::new(2, 4, 65).is_err());
    }

    /// Checks that no (rack, core) uplink or downlink is used twice and
    /// that exactly the cross-rack pairs get a core.
    fn assert_routable(pairs: &[(u32, u32)], cores: &[u8], hpr: u32, n_cores: u8) {
        assert_within_capacity(pairs, cores, hpr, n_cores, 1);
    }

    /// Colours `pairs` of racks of 2 hosts with 2 cores, both with every
    /// host of the fabric busy (partner table kept from the start) and in
    /// racks of 4 hosts with the same two busy (table built at the
    /// conflict), and checks the exact answer.
    fn check_exact(racks: usize, pairs: &[(u32, u32)], expect: &[u8]) {
        let mut out = Vec::new();
        let mut sel = PathSelector::new(racks, 2, 2).unwrap();
        sel.select_cores(pairs, &mut out).unwrap();
        assert_eq!(out, expect);
        assert_routable(pairs, &out, 2, 2);
        let spread = |h: u32| h / 2 * 4 + h % 2;
        let sparse: Vec<(u32, u32)> = pairs.iter().map(|&(s, d)| (spread(s), spread(d))).collect();
        let mut sel = PathSelector::new(racks, 4, 2).unwrap();
        sel.select_cores(&sparse, &mut out).unwrap();
        assert_eq!(out, expect);
        // The fabric-sized engine (more than 64 racks) on the same pairs:
        // its own order, so only routable.
        let mut big = PathSelector::new(GREEDY_MAX_RACKS + 1, 2, 2).unwrap();
        big.select_cores(pairs, &mut out).unwrap();
        assert_routable(pairs, &out, 2, 2);
    }

    #[test]
    fn a_conflict_fixed_by_recolouring_one_pair_of_the_source_rack() {
        // 3 racks of 2 hosts, 2 cores. Rack pairs in order: 0→1 takes core
        // 0, 0→2 core 1, 1→0 core 0; then 1→2 finds core 0 busy on rack
        // 1's uplinks and core 1 on rack 2's downlinks. Rack 1's core-0 pair
        // (1→0) can move to core 1 (free on rack 0's downlinks), which frees
        // core 0 for 1→2. The last two pairs colour greedily.
        check_exact(
            3,
            &[(0, 2), (1, 4), (2, 0), (3, 5), (4, 1), (5, 3)],
            &[0, 1, 1, 0, 0, 1],
        );
    }

    #[test]
    fn a_conflict_fixed_by_recolouring_one_pair_of_the_destination_rack() {
        // 4 racks of 2 hosts, 2 cores. At 7→3 (rack 3 → rack 1), core 0
        // is busy on rack 1's downlinks (1→2, from rack 0) and core 1 on
        // rack 3's uplinks (6→5). Rack 0 has core 1 free on its uplinks, so
        // 1→2 moves to core 1 and 7→3 takes core 0.
        check_exact(
            4,
            &[(1, 2), (2, 4), (3, 1), (4, 6), (5, 7), (6, 5), (7, 3)],
            &[1, 0, 1, 0, 1, 1, 0],
        );
    }

    #[test]
    fn a_conflict_needing_a_longer_alternating_path() {
        // At 7→5 (rack 3 → rack 2), core 0 is busy on rack 2's downlinks
        // (2→4, from rack 1) and core 1 on rack 3's uplinks (6→3, to rack
        // 1); rack 1 has both cores busy up and down, so no single pair can
        // move. The path from rack 2 by core 0 (2→4), then from rack 1 by
        // core 1 (3→1), is swapped, which frees core 0 at rack 2.
        check_exact(
            4,
            &[(1, 2), (2, 4), (3, 1), (4, 6), (5, 7), (6, 3), (7, 5)],
            &[0, 1, 0, 0, 1, 1, 0],
        );
    }

    #[test]
    fn select_agrees_with_select_cores() {
        let pairs = [(0, 2), (1, 4), (2, 0), (3, 5), (4, 1), (5, 3), (0, 1)];
        let mut sel = PathSelector::new(3, 2, 2).unwrap();
        let (mut cores, mut opts) = (Vec::new(), Vec::new());
        sel.select_cores(&pairs, &mut cores).unwrap();
        sel.select(&pairs, &mut opts).unwrap();
        assert_eq!(cores.last(), Some(&NO_CORE));
        let expect: Vec<Option<u32>> = cores
            .iter()
            .map(|&c| (c != NO_CORE).then_some(c as u32))
            .collect();
        assert_eq!(opts, expect);
    }

    #[test]
    fn errors_leave_both_engines_usable() {
        for racks in [2, GREEDY_MAX_RACKS + 1] {
            let mut p = PathSelector::new(racks, 4, 4).unwrap();
            let mut out = vec![7];
            let hosts = racks * 4;
            assert_eq!(
                p.select_cores(&[(0, 4), (hosts as u32, 1)], &mut out),
                Err(ArbiterError::HostOutOfRange {
                    host: hosts as u32,
                    hosts
                })
            );
            assert!(out.is_empty());
            // Five packets out of rack 0 with 4 cores, after a conflict-free
            // start; the error comes from the swap path.
            let many = [(0, 4), (1, 5), (2, 6), (3, 7), (0, 5)];
            assert!(matches!(
                p.select_cores(&many, &mut out),
                Err(ArbiterError::TooFewColours { .. })
            ));
            assert!(out.is_empty());
            p.select_cores(&[(0, 4), (5, 1), (2, 3)], &mut out).unwrap();
            assert_eq!(out.len(), 3);
            assert_eq!(out[2], NO_CORE);
            assert_routable(&[(0, 4), (5, 1), (2, 3)], &out, 4, 4);
        }
    }

    /// Checks that exactly the cross-rack pairs get a core below `cores`
    /// and that no rack's uplink or downlink to a core carries more than
    /// `capacity` of them.
    fn assert_within_capacity(
        pairs: &[(u32, u32)],
        out: &[u8],
        hpr: u32,
        cores: u8,
        capacity: usize,
    ) {
        let mut load = std::collections::BTreeMap::new();
        for (&(s, d), &c) in pairs.iter().zip(out) {
            if s / hpr == d / hpr {
                assert_eq!(c, NO_CORE);
            } else {
                assert!(c < cores);
                *load.entry(("up", s / hpr, c)).or_insert(0) += 1;
                *load.entry(("down", d / hpr, c)).or_insert(0) += 1;
            }
        }
        assert!(load.values().all(|&n| n <= capacity), "{load:?}");
    }

    #[test]
    fn links_carrying_several_packets() {
        // 4 racks of 4 hosts, 2 cores of 2 packets per link: a full
        // permutation the room-balancing pass cannot finish, even moving
        // one pair (see `lanes.rs`), so the slot is coloured with 4
        // colours, two per core.
        let pairs: Vec<(u32, u32)> = (0..).zip(lanes::NO_SINGLE_MOVE).collect();
        let mut sel = PathSelector::with_link_capacity(4, 4, 2, 2).unwrap();
        let mut out = Vec::new();
        sel.select_cores(&pairs, &mut out).unwrap();
        assert_within_capacity(&pairs, &out, 4, 2, 2);
        // The same selector then colours a lighter slot (4 colours, core =
        // colour mod 2: 0→4 colour 0, 1→5 colour 1, 2→8 colour 2, ...).
        let easy = [(0, 4), (1, 5), (2, 8), (4, 0), (5, 1)];
        sel.select_cores(&easy, &mut out).unwrap();
        assert_eq!(out, [0, 1, 0, 0, 1]);
        // Five packets out of rack 0 do not fit 2 cores of 2.
        let five = [(0, 4), (1, 5), (2, 8), (3, 9), (0, 12)];
        assert_eq!(
            sel.select_cores(&five, &mut out),
            Err(ArbiterError::TooFewColours {
                degree: 5,
                colours: 4
            })
        );
        assert!(out.is_empty());
        assert!(PathSelector::with_link_capacity(4, 4, 2, 0).is_err());
        assert!(PathSelector::with_link_capacity(4, 4, 9, 8).is_err());
    }

    #[test]
    fn non_power_of_two_racks() {
        let mut p = PathSelector::new(3, 3, 3).unwrap();
        let mut out = Vec::new();
        // 0,1,2 | 3,4,5 | 6,7,8: a full cyclic shift by 3 hosts.
        let pairs: Vec<(u32, u32)> = (0..9).map(|h| (h, (h + 3) % 9)).collect();
        p.select(&pairs, &mut out).unwrap();
        let mut up = std::collections::BTreeSet::new();
        let mut down = std::collections::BTreeSet::new();
        for (&(s, d), c) in pairs.iter().zip(&out) {
            let c = c.unwrap();
            assert!(c < 3);
            assert!(up.insert((s / 3, c)));
            assert!(down.insert((d / 3, c)));
        }
    }
}
