//! Edge colouring of a general bipartite multigraph (any vertex counts,
//! any number of colours): the alternating-path construction with bitmask
//! vertex states for up to 64 colours, and per-vertex colour tables beyond.
//! The simulator's arbiter uses it to colour rack-to-rack edges onto
//! (core, lane) paths; [`PathSelector`](super::PathSelector) is the
//! faster, allocation-free version for one timeslot of a two-tier fabric.

use super::MAX_COLOURS;
use crate::error::ArbiterError;

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
