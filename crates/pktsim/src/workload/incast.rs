//! Many-to-one queries (partition/aggregate): each query picks `senders`
//! distinct hosts other than the receiver, and each sends `size` bytes to
//! the receiver, all starting at the query time.

use super::{Gen, RawFlow};
use crate::error::Result;
use crate::packet::NodeId;
use crate::time::{Time, MAX_DURATION};

/// Generate incast queries.
#[allow(clippy::too_many_arguments)]
pub fn generate(
    g: &Gen,
    senders: u32,
    size: u64,
    queries: u32,
    interval: &str,
    poisson: bool,
    receiver: Option<u32>,
    start: &Option<String>,
) -> Result<Vec<RawFlow>> {
    let n = g.env.n_hosts;
    if senders == 0 || senders > n - 1 {
        return Err(g.err(
            "senders",
            format!("must be between 1 and {} (hosts − 1)", n - 1),
        ));
    }
    if queries == 0 {
        return Err(g.err("queries", "must be at least 1"));
    }
    let size = g.size(size)?;
    let gap = g.duration(interval, "interval")?;
    let fixed = receiver.map(|r| g.host(r, "receiver")).transpose()?;
    let mut rng = g.rng("incast");
    let mut t = g.start(start)?;
    // Fixed gaps: the last query must fall inside the time range.
    if !poisson && (t + gap.times(queries as u64 - 1)) > Time::ZERO + MAX_DURATION {
        return Err(g.err(
            "interval",
            format!("{queries} queries {interval} apart run past the simulator's time range"),
        ));
    }
    let mut out = Vec::with_capacity(senders as usize * queries as usize);
    let mut pool: Vec<u32> = Vec::with_capacity(n as usize);
    for q in 0..queries {
        if q > 0 {
            t = if poisson {
                let next = t.ps() as f64 + rng.exponential(gap.ps() as f64).round();
                if next > MAX_DURATION.ps() as f64 {
                    return Err(g.err(
                        "interval",
                        format!(
                            "{queries} queries {interval} apart run past the simulator's time range"
                        ),
                    ));
                }
                Time(next as u64)
            } else {
                t + gap
            };
        }
        let dst = fixed.unwrap_or_else(|| NodeId(rng.below(n as u64) as u32));
        // A partial Fisher-Yates shuffle picks distinct senders.
        pool.clear();
        pool.extend((0..n).filter(|&h| h != dst.0));
        for i in 0..senders as usize {
            let j = i + rng.below((pool.len() - i) as u64) as usize;
            pool.swap(i, j);
            out.push((NodeId(pool[i]), dst, size, t));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::env;

    #[test]
    fn senders_are_distinct_and_not_the_receiver() {
        let names: Vec<String> = (0..10).map(|i| format!("h{i}")).collect();
        let e = env(10, &names);
        let g = Gen { env: &e, index: 0 };
        let f = generate(&g, 9, 2000, 20, "100us", false, None, &None).unwrap();
        assert_eq!(f.len(), 180);
        for q in f.chunks(9) {
            let dst = q[0].1;
            let mut srcs: Vec<u32> = q.iter().map(|x| x.0 .0).collect();
            srcs.sort();
            srcs.dedup();
            assert_eq!(srcs.len(), 9);
            assert!(q.iter().all(|x| x.1 == dst && x.0 != dst && x.3 == q[0].3));
        }
        assert_eq!(f[9].3.ps() - f[0].3.ps(), 100_000_000);
        assert!(generate(&g, 10, 2000, 1, "1us", false, None, &None).is_err());
        assert!(generate(&g, 3, 2000, 1, "1us", false, Some(10), &None).is_err());
    }
}
