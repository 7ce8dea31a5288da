//! Fixed traffic patterns: all-to-all, permutation, static long flows.

use super::{Gen, RawFlow};
use crate::engine::Rng;
use crate::error::Result;
use crate::packet::NodeId;

/// One flow between every ordered pair of distinct hosts.
pub fn all_to_all(g: &Gen, size: u64, start: &Option<String>) -> Result<Vec<RawFlow>> {
    let size = g.size(size)?;
    let t = g.start(start)?;
    let n = g.env.n_hosts;
    Ok((0..n)
        .flat_map(|s| {
            (0..n)
                .filter(move |&d| d != s)
                .map(move |d| (NodeId(s), NodeId(d), size, t))
        })
        .collect())
}

/// Each host sends to exactly one other host and receives from exactly one:
/// a uniformly random derangement (rejection sampling of shuffles; the
/// expected number of tries is e ≈ 2.7).
pub fn permutation(g: &Gen, size: u64, start: &Option<String>) -> Result<Vec<RawFlow>> {
    let size = g.size(size)?;
    let t = g.start(start)?;
    let p = derangement(&mut g.rng("permutation"), g.env.n_hosts);
    Ok(p.iter()
        .enumerate()
        .map(|(s, &d)| (NodeId(s as u32), NodeId(d), size, t))
        .collect())
}

/// A uniformly random derangement of `0..n` (`p[i] != i` for every `i`;
/// `n` ≥ 2): Fisher-Yates shuffles until one has no fixed point.
pub(super) fn derangement(rng: &mut Rng, n: u32) -> Vec<u32> {
    let n = n as usize;
    let mut p: Vec<u32> = (0..n as u32).collect();
    loop {
        for i in (1..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
            return p;
        }
    }
}

/// Long flows that start together.
pub fn static_flows(
    g: &Gen,
    pairs: Option<&[[u32; 2]]>,
    senders: Option<&[u32]>,
    receiver: Option<u32>,
    size: u64,
    start: &Option<String>,
) -> Result<Vec<RawFlow>> {
    let size = g.size(size)?;
    let t = g.start(start)?;
    let list: Vec<(u32, u32)> = match (pairs, senders, receiver) {
        (Some(p), None, None) => p.iter().map(|x| (x[0], x[1])).collect(),
        (None, Some(s), Some(r)) => s.iter().map(|&x| (x, r)).collect(),
        _ => return Err(g.err("pairs", "give `pairs`, or `senders` with `receiver`")),
    };
    if list.is_empty() {
        return Err(g.err("pairs", "no flows given"));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, (s, d)) in list.into_iter().enumerate() {
        let src = g.host(s, &format!("pairs[{i}]"))?;
        let dst = g.host(d, &format!("pairs[{i}]"))?;
        if src == dst {
            return Err(g.err(
                &format!("pairs[{i}]"),
                "source and destination are the same host",
            ));
        }
        out.push((src, dst, size, t));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::env;

    #[test]
    fn permutation_is_a_derangement() {
        let names: Vec<String> = (0..32).map(|i| format!("h{i}")).collect();
        let e = env(32, &names);
        for index in 0..20 {
            let g = Gen { env: &e, index };
            let f = permutation(&g, 100, &None).unwrap();
            let mut dsts: Vec<u32> = f.iter().map(|x| x.1 .0).collect();
            assert!(f.iter().all(|x| x.0 != x.1));
            dsts.sort();
            assert_eq!(dsts, (0..32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn all_to_all_covers_every_ordered_pair() {
        let names: Vec<String> = (0..5).map(|i| format!("h{i}")).collect();
        let e = env(5, &names);
        let f = all_to_all(&Gen { env: &e, index: 0 }, 100, &None).unwrap();
        assert_eq!(f.len(), 20);
    }

    #[test]
    fn static_checks_hosts() {
        let names: Vec<String> = (0..4).map(|i| format!("h{i}")).collect();
        let e = env(4, &names);
        let g = Gen { env: &e, index: 1 };
        assert_eq!(
            static_flows(&g, None, Some(&[0, 1, 2]), Some(3), 10, &None)
                .unwrap()
                .len(),
            3
        );
        let err = static_flows(&g, Some(&[[0, 9]]), None, None, 10, &None)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("workload[1].pairs[0]"), "{err}");
        assert!(static_flows(&g, Some(&[[2, 2]]), None, None, 10, &None).is_err());
    }
}
