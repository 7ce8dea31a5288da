//! The path-selection engine for fabrics of more than 64 racks (up to
//! [`MAX_RACKS`](super::MAX_RACKS)): tables sized to the fabric, and the
//! colouring kept as one colour mask per (source rack, destination rack),
//! handed out to the pairs in a last pass.
//!
//! Parallel edges between the same two racks are interchangeable, so no
//! per-pair state is needed while colouring: an edge with a colour free at
//! both ends costs three ORs and a trailing-zeros count; otherwise the
//! alternating-path swap flips two bits in the masks of each rack pair on
//! the path (partner tables make each step O(1)). The greedy engine is
//! faster for small fabrics (its tables fit fixed-size arrays); this one
//! keeps memory proportional to racks² for large ones.

use crate::error::ArbiterError;

/// Colouring state sized for one fabric, reused from slot to slot.
#[derive(Clone, Debug)]
pub(crate) struct PairMaskEngine {
    racks: usize,
    /// Colours used at each source rack (uplinks) and destination rack
    /// (downlinks).
    up: Vec<u64>,
    down: Vec<u64>,
    /// `pair[u * racks + v]`: colours of the u→v edges not yet handed to a
    /// pair. All zero between calls.
    pair: Vec<u64>,
    /// `at_up[u * 64 + c]`: the destination rack of u's colour-c edge
    /// (valid while bit c of `up[u]` is set); `at_down` likewise.
    at_up: Vec<u16>,
    at_down: Vec<u16>,
}

impl PairMaskEngine {
    pub(crate) fn new(racks: usize) -> Self {
        PairMaskEngine {
            racks,
            up: vec![0; racks],
            down: vec![0; racks],
            pair: vec![0; racks * racks],
            at_up: vec![0; racks * 64],
            at_down: vec![0; racks * 64],
        }
    }

    /// Colour `pairs` (hosts already checked to be in range, `rack` maps a
    /// host to its rack) with the colours in `full`, writing one core per
    /// pair to `out` (preset to [`NO_CORE`](super::NO_CORE)).
    pub(crate) fn colour<F: Fn(u32) -> usize + Copy>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        full: u64,
        rack: F,
    ) -> Result<(), ArbiterError> {
        self.up.fill(0);
        self.down.fill(0);
        let mut g = Graph {
            r: self.racks,
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
                        degree: full.count_ones() as usize + 1,
                        colours: full.count_ones() as usize,
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
        let (pair, r) = (&mut self.pair, self.racks);
        for (&(s, d), o) in pairs.iter().zip(out.iter_mut()) {
            let (u, v) = (rack(s), rack(d));
            if u != v {
                let m = &mut pair[u * r + v];
                *o = m.trailing_zeros() as u8;
                *m &= *m - 1;
            }
        }
        Ok(())
    }
}

/// The colouring state of one [`PairMaskEngine::colour`] call, as local
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
