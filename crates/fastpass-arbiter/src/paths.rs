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
//! We colour edge by edge with the classic alternating-path construction:
//! to colour edge (u, v), take the lowest colour free at both ends if there
//! is one; otherwise a colour `a` free at u and `b` free at v, and swap a and
//! b along the path from v that alternates a, b, a, ..., which frees `a` at
//! v without touching u. The colours used at each rack are one `u64` mask
//! (so "a colour free at both ends" is one OR and one trailing-zeros count),
//! and the partner rack of each (rack, colour) is a table entry, so a swap
//! exchanges two table entries and two mask bits per rack on the path;
//! edges are matched back to packets only at the end. The paper's arbiter
//! uses Euler splits on a padded regular graph instead (O(E log Δ)); for
//! the sizes here (≤ 64 colours) the alternating paths are short and the
//! bitmask version is faster.

use crate::error::ArbiterError;

/// Largest number of colours (core switches) of the bitmask engine.
pub const MAX_COLOURS: usize = 64;
/// Largest number of racks of a [`PathSelector`] (it keeps a racks × racks
/// table of masks).
pub const MAX_RACKS: usize = 1024;

const NONE: u32 = u32::MAX;

/// Edge-colouring state of a bipartite multigraph with ≤ 64 colours.
#[derive(Clone, Debug)]
struct Colouring {
    full: u64,
    colours: usize,
    left_used: Vec<u64>,
    right_used: Vec<u64>,
    /// `at_left[u * 64 + c]`: the right vertex joined to u by colour c
    /// (valid when bit c of `left_used[u]` is set).
    at_left: Vec<u32>,
    at_right: Vec<u32>,
    path: Vec<u32>,
}

impl Colouring {
    fn new(n_left: usize, n_right: usize, colours: usize) -> Self {
        debug_assert!(colours <= MAX_COLOURS);
        Colouring {
            full: if colours >= 64 {
                u64::MAX
            } else {
                (1u64 << colours) - 1
            },
            colours,
            left_used: vec![0; n_left],
            right_used: vec![0; n_right],
            at_left: vec![NONE; n_left * 64],
            at_right: vec![NONE; n_right * 64],
            path: Vec::new(),
        }
    }

    #[inline]
    fn set(&mut self, u: usize, v: usize, c: u32) {
        self.left_used[u] |= 1 << c;
        self.right_used[v] |= 1 << c;
        self.at_left[u * 64 + c as usize] = v as u32;
        self.at_right[v * 64 + c as usize] = u as u32;
    }

    /// Colour one more edge (u, v); an error if u or v already has an edge
    /// of every colour.
    #[inline]
    fn add(&mut self, u: usize, v: usize) -> Result<(), ArbiterError> {
        let (lu, rv) = (self.left_used[u], self.right_used[v]);
        let common = !(lu | rv) & self.full;
        if common != 0 {
            self.set(u, v, common.trailing_zeros());
            return Ok(());
        }
        let (fu, fv) = (!lu & self.full, !rv & self.full);
        if fu == 0 || fv == 0 {
            return Err(ArbiterError::TooFewColours {
                degree: self.colours + 1,
                colours: self.colours,
            });
        }
        let (a, b) = (fu.trailing_zeros(), fv.trailing_zeros());
        // The a/b path from v: v (right) -a- left -b- right -a- ... It never
        // reaches u: left vertices are entered by an a-edge and a is free
        // at u.
        self.path.clear();
        let (mut x, mut right, mut c) = (v, true, a);
        loop {
            self.path.push(x as u32);
            let (used, at) = if right {
                (self.right_used[x], &self.at_right)
            } else {
                (self.left_used[x], &self.at_left)
            };
            if used >> c & 1 == 0 {
                break;
            }
            x = at[x * 64 + c as usize] as usize;
            right = !right;
            c = if c == a { b } else { a };
        }
        // Swap a and b at every vertex of the path: masks and partners.
        let swap_bits = |m: &mut u64| {
            if (*m >> a ^ *m >> b) & 1 == 1 {
                *m ^= (1 << a) | (1 << b);
            }
        };
        for (i, &x) in self.path.iter().enumerate() {
            let x = x as usize;
            let (used, at) = if i % 2 == 0 {
                (&mut self.right_used[x], &mut self.at_right)
            } else {
                (&mut self.left_used[x], &mut self.at_left)
            };
            swap_bits(used);
            at.swap(x * 64 + a as usize, x * 64 + b as usize);
        }
        self.set(u, v, a);
        Ok(())
    }
}

/// Path selection for a two-tier topology of `racks` racks of
/// `hosts_per_rack` hosts (host `h` is in rack `h / hosts_per_rack`) and
/// `cores` core switches, reusing its buffers from one timeslot to the next.
///
/// Parallel edges between the same two racks are interchangeable, so the
/// colouring is kept as one colour mask per (source rack, destination rack)
/// — no per-edge or per-colour table — and handed out to the packets at the
/// end: an uncontended edge costs three ORs and a trailing-zeros count.
#[derive(Clone, Debug)]
pub struct PathSelector {
    racks: usize,
    hosts_per_rack: u32,
    /// log2(hosts_per_rack) when it is a power of two (a shift, not a
    /// division, per packet).
    shift: Option<u32>,
    cores: usize,
    full: u64,
    /// Colours used at each source rack (uplinks) and destination rack
    /// (downlinks).
    up: Vec<u64>,
    down: Vec<u64>,
    /// `pair[u * racks + v]`: colours of the u→v edges not yet handed to a
    /// packet. All zero between calls.
    pair: Vec<u64>,
    /// `at_up[u * 64 + c]`: the destination rack of u's colour-c edge
    /// (valid while bit c of `up[u]` is set); `at_down` likewise.
    at_up: Vec<u16>,
    at_down: Vec<u16>,
}

impl PathSelector {
    /// A selector for `racks` × `hosts_per_rack` hosts and `cores` core
    /// switches (1 to 64; at least `hosts_per_rack` for every matching to be
    /// routable).
    pub fn new(racks: usize, hosts_per_rack: u32, cores: usize) -> Result<Self, ArbiterError> {
        if racks == 0
            || racks > MAX_RACKS
            || hosts_per_rack == 0
            || cores == 0
            || cores > MAX_COLOURS
            || (racks as u64) * (hosts_per_rack as u64) > u32::MAX as u64
        {
            return Err(ArbiterError::BadTopology {
                racks,
                hosts_per_rack,
                cores,
            });
        }
        Ok(PathSelector {
            racks,
            hosts_per_rack,
            shift: hosts_per_rack
                .is_power_of_two()
                .then(|| hosts_per_rack.trailing_zeros()),
            cores,
            full: if cores >= 64 {
                u64::MAX
            } else {
                (1u64 << cores) - 1
            },
            up: vec![0; racks],
            down: vec![0; racks],
            pair: vec![0; racks * racks],
            at_up: vec![0; racks * 64],
            at_down: vec![0; racks * 64],
        })
    }

    /// For one timeslot's `(src, dst)` pairs, write to `out` the core switch
    /// each pair crosses (`None` within a rack). An error if a host is out
    /// of range or a rack has more packets than there are cores.
    pub fn select(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut Vec<Option<u32>>,
    ) -> Result<(), ArbiterError> {
        out.clear();
        let hosts = self.racks * self.hosts_per_rack as usize;
        self.up.fill(0);
        self.down.fill(0);
        let (r, full, shift, hpr) = (self.racks, self.full, self.shift, self.hosts_per_rack);
        let rack = |h: u32| match shift {
            Some(k) => (h >> k) as usize,
            None => (h / hpr) as usize,
        };
        let mut g = Graph {
            r,
            up: &mut self.up,
            down: &mut self.down,
            pair: &mut self.pair,
            at_up: &mut self.at_up,
            at_down: &mut self.at_down,
        };
        // Colour in two interleaved streams (the first and second half of
        // the pairs): consecutive pairs often share a rack, and one stream
        // would wait on each edge's update of that rack's mask before
        // starting the next. Any order gives a proper colouring; this one is
        // fixed, so the result is deterministic.
        let half = pairs.len().div_ceil(2);
        for i in 0..half {
            for &(s, d) in [Some(&pairs[i]), pairs.get(i + half)].into_iter().flatten() {
                if s as usize >= hosts || d as usize >= hosts {
                    g.pair.fill(0);
                    let host = if s as usize >= hosts { s } else { d };
                    return Err(ArbiterError::HostOutOfRange { host, hosts });
                }
                let (u, v) = (rack(s), rack(d));
                if u == v {
                    continue;
                }
                let (lu, rv) = (g.up[u], g.down[v]);
                let common = !(lu | rv) & full;
                if common != 0 {
                    g.set(u, v, common.trailing_zeros());
                } else if (!lu & full) == 0 || (!rv & full) == 0 {
                    g.pair.fill(0);
                    return Err(ArbiterError::TooFewColours {
                        degree: self.cores + 1,
                        colours: self.cores,
                    });
                } else {
                    g.add_by_swap(
                        u,
                        v,
                        (!lu & full).trailing_zeros(),
                        (!rv & full).trailing_zeros(),
                    );
                }
            }
        }
        let pair = &mut self.pair;
        out.extend(pairs.iter().map(|&(s, d)| {
            let (rs, rd) = (rack(s), rack(d));
            if rs == rd {
                None
            } else {
                let m = &mut pair[rs * r + rd];
                let c = m.trailing_zeros();
                *m &= *m - 1;
                Some(c)
            }
        }));
        Ok(())
    }
}

/// The colouring state of one [`PathSelector::select`] call, as local
/// slices (so the hot loop keeps them in registers).
struct Graph<'a> {
    r: usize,
    up: &'a mut [u64],
    down: &'a mut [u64],
    pair: &'a mut [u64],
    at_up: &'a mut [u16],
    at_down: &'a mut [u16],
}

impl Graph<'_> {
    #[inline]
    fn set(&mut self, u: usize, v: usize, c: u32) {
        let bit = 1u64 << c;
        self.up[u] |= bit;
        self.down[v] |= bit;
        self.pair[u * self.r + v] |= bit;
        self.at_up[u * 64 + c as usize] = v as u16;
        self.at_down[v * 64 + c as usize] = u as u16;
    }

    /// Colour u→v when no colour is free at both ends: `a` is free at u
    /// (used at v), `b` free at v (used at u). Swap a and b along the path
    /// from v that alternates a, b, a, ... (v -a- u1 -b- v2 -a- ...), which
    /// frees a at v; the path never reaches u (left vertices are entered by
    /// an a-edge and a is free at u). Then colour u→v with a.
    #[cold]
    #[inline(never)]
    fn add_by_swap(&mut self, u: usize, v: usize, a: u32, b: u32) {
        let r = self.r;
        let ab = (1u64 << a) | (1u64 << b);
        let (ia, ib) = (a as usize, b as usize);
        // Swap a and b at each vertex of the path (masks and partners) and
        // on each edge (pair masks) as we go: the walk reads only vertices
        // ahead of the swaps. Each edge on the path has exactly one of a, b.
        let swap_bits = |m: &mut u64| {
            if (*m >> a ^ *m >> b) & 1 == 1 {
                *m ^= ab;
            }
        };
        let mut x = v;
        let mut c = ia;
        loop {
            // Right vertex x, by colour c, to its left partner.
            let has = self.down[x] >> c & 1 == 1;
            let y = self.at_down[x * 64 + c] as usize;
            swap_bits(&mut self.down[x]);
            self.at_down.swap(x * 64 + ia, x * 64 + ib);
            if !has {
                break;
            }
            self.pair[y * r + x] ^= ab;
            c ^= ia ^ ib;
            // Left vertex y, by colour c, to its right partner.
            let has = self.up[y] >> c & 1 == 1;
            let z = self.at_up[y * 64 + c] as usize;
            swap_bits(&mut self.up[y]);
            self.at_up.swap(y * 64 + ia, y * 64 + ib);
            if !has {
                break;
            }
            self.pair[y * r + z] ^= ab;
            c ^= ia ^ ib;
            x = z;
        }
        self.set(u, v, a);
    }
}

/// Colour the edges `(left, right)` of a bipartite multigraph with
/// `n_left` and `n_right` vertices using `colours` colours (at least the
/// maximum degree). Returns one colour per edge, or `None` if `colours` is
/// smaller than the maximum degree or a vertex is out of range.
pub fn colour_edges(
    edges: &[(u32, u32)],
    n_left: usize,
    n_right: usize,
    colours: usize,
) -> Option<Vec<u32>> {
    if edges
        .iter()
        .any(|&(u, v)| u as usize >= n_left || v as usize >= n_right)
    {
        return None;
    }
    if colours > MAX_COLOURS {
        return colour_edges_any(edges, n_left, n_right, colours);
    }
    let mut col = Colouring::new(n_left, n_right, colours);
    for &(u, v) in edges {
        col.add(u as usize, v as usize).ok()?;
    }
    // Hand the colours of each (u, v) pair out to its edges: sort the
    // coloured (u, v, c) triples and the edges by (u, v).
    let mut coloured: Vec<(u32, u32, u32)> = Vec::with_capacity(edges.len());
    for (u, &used) in col.left_used.iter().enumerate() {
        let mut m = used;
        while m != 0 {
            let c = m.trailing_zeros();
            coloured.push((u as u32, col.at_left[u * 64 + c as usize], c));
            m &= m - 1;
        }
    }
    coloured.sort_unstable();
    let mut order: Vec<u32> = (0..edges.len() as u32).collect();
    order.sort_by_key(|&e| edges[e as usize]);
    let mut out = vec![0; edges.len()];
    for (&e, &(_, _, c)) in order.iter().zip(&coloured) {
        out[e as usize] = c;
    }
    Some(out)
}

/// The alternating-path colouring with per-vertex colour tables, for any
/// number of colours (the bitmask engine handles up to 64).
fn colour_edges_any(
    edges: &[(u32, u32)],
    n_left: usize,
    n_right: usize,
    colours: usize,
) -> Option<Vec<u32>> {
    // at_left[u * colours + c] = edge with colour c at left vertex u.
    let mut at_left = vec![NONE; n_left * colours];
    let mut at_right = vec![NONE; n_right * colours];
    let mut colour = vec![NONE; edges.len()];
    let mut path: Vec<u32> = Vec::new();
    for (e, &(u, v)) in edges.iter().enumerate() {
        let (u, v) = (u as usize, v as usize);
        let a = (0..colours).find(|&c| at_left[u * colours + c] == NONE)?;
        let b = (0..colours).find(|&c| at_right[v * colours + c] == NONE)?;
        if a != b && at_right[v * colours + a] != NONE {
            path.clear();
            let mut on_right = true;
            let mut x = v;
            let mut c = a;
            loop {
                let next = if on_right {
                    at_right[x * colours + c]
                } else {
                    at_left[x * colours + c]
                };
                if next == NONE {
                    break;
                }
                path.push(next);
                let (l, r) = edges[next as usize];
                x = if on_right { l as usize } else { r as usize };
                on_right = !on_right;
                c = if c == a { b } else { a };
            }
            for &p in &path {
                let (l, r) = edges[p as usize];
                let pc = colour[p as usize] as usize;
                at_left[l as usize * colours + pc] = NONE;
                at_right[r as usize * colours + pc] = NONE;
            }
            for &p in &path {
                let (l, r) = edges[p as usize];
                let nc = if colour[p as usize] as usize == a {
                    b
                } else {
                    a
                };
                colour[p as usize] = nc as u32;
                at_left[l as usize * colours + nc] = p;
                at_right[r as usize * colours + nc] = p;
            }
        }
        colour[e] = a as u32;
        at_left[u * colours + a] = e as u32;
        at_right[v * colours + a] = e as u32;
    }
    Some(colour)
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
        // (0,0) and (1,1) get colour 0, (0,1) colour 1; then (1,0) has
        // colour 1 free at 1 and 0 free at 0: a swap with 2 colours.
        let edges = [(0, 0), (1, 1), (0, 1), (1, 0)];
        let c = colour_edges(&edges, 2, 2, 2).unwrap();
        assert!(proper(&edges, &c));
        assert!(colour_edges(&edges, 2, 2, 1).is_none());
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
