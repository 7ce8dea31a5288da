//! The path-selection engine for fabrics of up to [`GREEDY_MAX_RACKS`]
//! racks: a greedy edge colouring that walks the pairs once in the order
//! given, and a repair for the few pairs that find no colour free at both
//! ends.
//!
//! Per pair the work is a handful of register operations: the colour is the
//! lowest one free on the source rack's uplinks and the destination rack's
//! downlinks (`!(up | down)`, one trailing-zeros count), written straight to
//! the output. The source rack's mask stays in a register while consecutive
//! pairs share it (slots usually list the hosts of a rack together).
//!
//! A conflict is repaired by recolouring one pair when that is enough (it
//! usually is), else by the alternating-path swap. Both need, for a rack
//! and a colour, the pair that uses it (a partner table). Keeping that
//! table costs two stores per pair, and most slots never need it: on a
//! random 16 × 32 fabric the allocator's slots (about 0.7 of the hosts
//! busy) colour greedily without a single conflict, while a full
//! permutation meets its first conflict about 70 % of the way through and
//! about ten in all. So a slot with idle hosts starts without the table and
//! builds it from the colours given so far at its first conflict; a crowded
//! slot keeps it from the start.
//!
//! Tables have fixed sizes (64 racks; partner rows for colours 0..64 plus a
//! scratch row for pairs inside a rack), so every index is masked into
//! range and the hot loop has no bounds checks.

use crate::error::ArbiterError;

/// Largest number of racks this engine handles.
pub const GREEDY_MAX_RACKS: usize = 64;

const R: usize = GREEDY_MAX_RACKS;
/// Colours the partner table has rows for: 0..64, and `NO_CORE & 127` =
/// 127 as a scratch row for pairs inside a rack.
const COLOURS: usize = 128;
/// Entries per side (uplinks, then downlinks) of the partner table.
const SIDE: usize = COLOURS * R;
/// Offset of the downlink masks in `used`.
const DOWN: usize = R;

/// Where the uplink entry of rack `u`, colour `c` lives in the partner
/// table. Colour-major, so one pair's two entries share `c * R`.
#[inline(always)]
fn up_entry(u: usize, c: usize) -> usize {
    ((c * R) | u) & (SIDE - 1)
}

/// Where the downlink entry of rack `v`, colour `c` lives.
#[inline(always)]
fn down_entry(v: usize, c: usize) -> usize {
    SIDE + (((c * R) | v) & (SIDE - 1))
}

/// Colouring state for up to 64 racks, reused from slot to slot.
#[derive(Clone)]
pub(crate) struct GreedyEngine {
    /// Both tables in one allocation (one base address in the hot loop).
    t: Box<Tables>,
}

#[derive(Clone)]
struct Tables {
    /// Colours in use: `used[u]` on rack u's uplinks, `used[DOWN + v]` on
    /// rack v's downlinks. Colours beyond the core count start out set, so
    /// "free" is just the complement.
    used: [u64; 2 * R],
    /// `partner[up_entry(u, c)]`: the index of the pair on rack u's colour-c
    /// uplink; `partner[down_entry(v, c)]` likewise for downlinks. Valid
    /// only for colours set in `used`, and only once the slot keeps the
    /// table (from the start, or from its first conflict).
    partner: [u32; 2 * SIDE],
}

impl Tables {
    /// Move pair `e`, from source rack `src` to destination rack `dst`, to
    /// colour `to` (the other colour of `ab`, which it holds now): both
    /// racks trade one colour of `ab` for the other.
    fn move_pair(&mut self, out: &mut [u8], e: usize, src: usize, dst: usize, ab: u64, to: usize) {
        self.used[src] ^= ab;
        self.used[DOWN + dst] ^= ab;
        self.partner[up_entry(src, to)] = e as u32;
        self.partner[down_entry(dst, to)] = e as u32;
        if let Some(o) = out.get_mut(e) {
            *o = to as u8;
        }
    }
}

impl std::fmt::Debug for GreedyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GreedyEngine").finish_non_exhaustive()
    }
}

impl GreedyEngine {
    pub(crate) fn new() -> Self {
        GreedyEngine {
            t: Box::new(Tables {
                used: [0; 2 * R],
                partner: [0; 2 * SIDE],
            }),
        }
    }

    /// Colour `pairs` (hosts already checked to be in range, `rack` maps a
    /// host to its rack < 64) with the colours in `full`; `out` has one
    /// entry per pair, preset to [`NO_CORE`](super::NO_CORE). `crowded`
    /// says a conflict is likely (nearly every host busy), so the partner
    /// table is kept from the start rather than built at the first one.
    pub(crate) fn colour<F: Fn(u32) -> usize + Copy>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        full: u64,
        crowded: bool,
        rack: F,
    ) -> Result<(), ArbiterError> {
        self.t.used.fill(!full);
        let n = pairs.len();
        let mut k = if crowded {
            self.greedy::<true, F>(pairs, out, 0, rack)
        } else {
            let k = self.greedy::<false, F>(pairs, out, 0, rack);
            if k == n {
                return Ok(());
            }
            // The first conflict: record who holds each colour so far.
            let partner: &mut [u32; 2 * SIDE] = &mut self.t.partner;
            for (i, (&(s, d), &c)) in pairs[..k].iter().zip(&out[..k]).enumerate() {
                let (u, v, c) = (rack(s) & (R - 1), rack(d) & (R - 1), c as usize);
                partner[up_entry(u, c)] = i as u32;
                partner[down_entry(v, c)] = i as u32;
            }
            k
        };
        while k < n {
            let (s, d) = pairs[k];
            let (u, v) = (rack(s) & (R - 1), rack(d) & (R - 1));
            let c = self.swap(pairs, out, u, v, full, rack)?;
            self.t.used[u] |= 1 << c;
            self.t.used[DOWN + v] |= 1 << c;
            self.t.partner[up_entry(u, c)] = k as u32;
            self.t.partner[down_entry(v, c)] = k as u32;
            out[k] = c as u8;
            k = self.greedy::<true, F>(pairs, out, k + 1, rack);
        }
        Ok(())
    }

    /// Colour `pairs[from..]` greedily (keeping the partner table when
    /// `TABLE`); returns the index of the first pair with no colour free at
    /// both ends (nothing is recorded for it), or `pairs.len()`.
    #[inline(always)]
    fn greedy<const TABLE: bool, F: Fn(u32) -> usize>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        from: usize,
        rack: F,
    ) -> usize {
        let n = pairs.len().min(out.len());
        let Tables { used, partner } = &mut *self.t;
        // The current source rack's uplink mask, kept in a register.
        let (mut cu, mut cm) = (0, used[0]);
        let mut stop = n;
        let from = from.min(n);
        for (j, (&(s, d), o)) in pairs[from..n].iter().zip(&mut out[from..n]).enumerate() {
            let (u, v) = (rack(s) & (R - 1), rack(d) & (R - 1));
            if u != cu {
                used[cu] = cm;
                (cu, cm) = (u, used[u]);
            }
            if u != v {
                let down = used[DOWN + v];
                let free = !(cm | down);
                if free == 0 {
                    stop = from + j;
                    break;
                }
                let c = free.trailing_zeros() as usize;
                cm |= 1 << c;
                used[DOWN + v] = down | 1 << c;
                if TABLE {
                    partner[up_entry(u, c)] = (from + j) as u32;
                    partner[down_entry(v, c)] = (from + j) as u32;
                }
                *o = c as u8;
            }
        }
        used[cu] = cm;
        stop
    }

    /// Make a colour free at both source rack `u` and destination rack `v`
    /// (no colour is free at both) and return it; an error if u or v has no
    /// free colour at all.
    ///
    /// With `a` free at u (so used at v) and `b` free at v (used at u),
    /// swapping a and b along the path that alternates a, b, a, ... from v
    /// (v -a- y1 -b- z1 -a- y2 ...) frees a at v and leaves u untouched (the
    /// path enters source racks by an a-edge, and a is free at u); the path
    /// from u alternating b, a, ... likewise frees b at u. Most conflicts
    /// have some choice of a, b and side whose path is one pair long (95 %
    /// of them in full 16 × 32 permutations, against 14 % for the lowest a
    /// and b from v), so those are looked for first: one recoloured pair, no
    /// walk.
    #[cold]
    #[inline(never)]
    fn swap<F: Fn(u32) -> usize + Copy>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        u: usize,
        v: usize,
        full: u64,
        rack: F,
    ) -> Result<usize, ArbiterError> {
        let (free_u, free_v) = (!self.t.used[u], !self.t.used[DOWN + v]);
        if free_u == 0 || free_v == 0 {
            return Err(ArbiterError::TooFewColours {
                degree: full.count_ones() as usize + 1,
                colours: full.count_ones() as usize,
            });
        }
        if let Some(c) = self.recolour_one(pairs, out, u, v, free_u, free_v, rack) {
            return Ok(c);
        }
        Ok(self.walk(
            pairs,
            out,
            v,
            free_u.trailing_zeros() as usize,
            free_v.trailing_zeros() as usize,
            rack,
        ))
    }

    /// The one-pair paths: for a free at u and b free at v, if v's a-pair
    /// comes from a source rack without b, that pair becomes b and a is
    /// free at both u and v; if u's b-pair goes to a destination rack
    /// without a, that pair becomes a and b is free at both. Returns the
    /// colour now free at both, or `None` if no such path exists.
    #[allow(clippy::too_many_arguments)]
    fn recolour_one<F: Fn(u32) -> usize>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        u: usize,
        v: usize,
        free_u: u64,
        free_v: u64,
        rack: F,
    ) -> Option<usize> {
        let t = &mut *self.t;
        let mut fa = free_u;
        while fa != 0 {
            let a = fa.trailing_zeros() as usize;
            fa &= fa - 1;
            let mut fb = free_v;
            while fb != 0 {
                let b = fb.trailing_zeros() as usize;
                fb &= fb - 1;
                let ab = (1u64 << a) | (1u64 << b);
                // v's a-pair e, from source rack y.
                let e = t.partner[down_entry(v, a)] as usize;
                let (&(s, _), o) = pairs.get(e).zip(out.get(e))?;
                let y = rack(s) & (R - 1);
                if t.used[y] >> b & 1 == 0 && *o as usize == a {
                    t.move_pair(out, e, y, v, ab, b);
                    return Some(a);
                }
                // u's b-pair e, to destination rack w.
                let e = t.partner[up_entry(u, b)] as usize;
                let (&(_, d), o) = pairs.get(e).zip(out.get(e))?;
                let w = rack(d) & (R - 1);
                if t.used[DOWN + w] >> a & 1 == 0 && *o as usize == b {
                    t.move_pair(out, e, u, w, ab, a);
                    return Some(b);
                }
            }
        }
        None
    }

    /// Swap `a` (free at source rack u, used at v) and `b` (free at v) along
    /// the alternating path from destination rack `v`; returns a, now free
    /// at both.
    fn walk<F: Fn(u32) -> usize>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        v: usize,
        a: usize,
        b: usize,
        rack: F,
    ) -> usize {
        let Tables { used, partner } = &mut *self.t;
        let ab = (1u64 << a) | (1u64 << b);
        // v trades a for b; interior racks keep both; the last one trades.
        used[DOWN + v] ^= ab;
        let mut x = v;
        let mut e = partner[down_entry(v, a)] as usize;
        // (Indices from the partner table are always in range; `get` keeps
        // the walk free of bounds checks that could panic.)
        while let Some(&(s, _)) = pairs.get(e) {
            // Destination rack x's a-edge e, from source rack y, becomes b.
            let y = rack(s) & (R - 1);
            if let Some(o) = out.get_mut(e) {
                *o = b as u8;
            }
            partner[down_entry(x, b)] = e as u32;
            let y_has_b = used[y] >> b & 1 == 1;
            let e2 = partner[up_entry(y, b)] as usize;
            partner[up_entry(y, b)] = e as u32;
            if !y_has_b {
                used[y] ^= ab;
                break;
            }
            // y's b-edge e2, to destination rack z, becomes a.
            let Some(&(_, d)) = pairs.get(e2) else { break };
            let z = rack(d) & (R - 1);
            if let Some(o) = out.get_mut(e2) {
                *o = a as u8;
            }
            partner[up_entry(y, a)] = e2 as u32;
            let z_has_a = used[DOWN + z] >> a & 1 == 1;
            let e3 = partner[down_entry(z, a)] as usize;
            partner[down_entry(z, a)] = e2 as u32;
            if !z_has_a {
                used[DOWN + z] ^= ab;
                break;
            }
            (x, e) = (z, e3);
        }
        a
    }
}
