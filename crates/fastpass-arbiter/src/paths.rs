//! Path selection (Fastpass §4): in a two-tier topology, each timeslot's
//! matching induces a bipartite multigraph between source racks and
//! destination racks (one edge per allocated pair that crosses racks). A
//! proper edge colouring — no two edges at the same rack share a colour —
//! assigns each colour to one core switch, so no link carries two packets in
//! the slot. A bipartite multigraph of maximum degree Δ can always be
//! coloured with Δ colours (König's theorem); we use the classic
//! alternating-path construction: to colour edge (u, v), take a colour `a`
//! free at u and `b` free at v; if a ≠ b, swap a and b along the path from v
//! that alternates b, a, b, ..., which frees `a` at v without touching u.

/// Colour the edges `(left, right)` of a bipartite multigraph with
/// `n_left` and `n_right` vertices using `colours` colours (at least the
/// maximum degree). Returns one colour per edge, or `None` if `colours` is
/// smaller than the maximum degree.
pub fn colour_edges(
    edges: &[(u32, u32)],
    n_left: usize,
    n_right: usize,
    colours: usize,
) -> Option<Vec<u32>> {
    const NONE: u32 = u32::MAX;
    // at_left[u * colours + c] = edge with colour c at left vertex u.
    let mut at_left = vec![NONE; n_left * colours];
    let mut at_right = vec![NONE; n_right * colours];
    let mut colour = vec![NONE; edges.len()];
    let mut path: Vec<u32> = Vec::new();
    for (e, &(u, v)) in edges.iter().enumerate() {
        let (u, v) = (u as usize, v as usize);
        let free_u = (0..colours).find(|&c| at_left[u * colours + c] == NONE)?;
        let free_v = (0..colours).find(|&c| at_right[v * colours + c] == NONE)?;
        let (a, b) = (free_u, free_v);
        if a != b && at_right[v * colours + a] != NONE {
            // Collect the path from v alternating a, b, a, ... (it cannot
            // reach u, since the graph is bipartite and a is free at u).
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
            // Swap a and b on the path: clear, then re-set.
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
/// switch each pair crosses (`None` for pairs within a rack). Requires
/// `cores ≥ hosts_per_rack` (full bisection); returns `None` otherwise.
pub fn assign_cores(
    pairs: &[(u32, u32)],
    hosts_per_rack: u32,
    racks: usize,
    cores: usize,
) -> Option<Vec<Option<u32>>> {
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

    #[test]
    fn colours_a_case_that_needs_a_swap() {
        // Path a-b: (0,0) gets colour 0, (1,1) colour 0, (0,1) colour 1;
        // then (1,0) needs the swap machinery with 2 colours.
        let edges = [(0, 0), (1, 1), (0, 1), (1, 0)];
        let c = colour_edges(&edges, 2, 2, 2).unwrap();
        for (i, &(u, v)) in edges.iter().enumerate() {
            for (j, &(x, y)) in edges.iter().enumerate() {
                if i != j && (u == x || v == y) {
                    assert_ne!(c[i], c[j]);
                }
            }
        }
        assert!(colour_edges(&edges, 2, 2, 1).is_none());
    }
}
