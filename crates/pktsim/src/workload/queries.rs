//! Partition/aggregate queries at a target load, as the Vertigo and Canary
//! evaluations run them (specs `canary.md` §2, `vertigo.md` §2): at Poisson
//! times a random client asks `servers` distinct other hosts for data —
//! one `request_bytes` flow to each — and each server answers with a
//! `reply_bytes` flow back. Every flow of one query carries the query's id
//! (the `query` column of `flows.parquet`), and a query completes when its
//! last reply has arrived (its QCT, [`crate::metrics::queries`]).
//!
//! The simulator starts flows at fixed times, so a reply does not wait for
//! its request: it starts `reply_delay` after the query (the artifact's
//! ~20 µs service time; a 250 B request needs about 1–2 µs on an idle
//! 10 Gbit/s path). Requests still load the network as in the paper.
//!
//! `load` is the share of host link capacity the replies offer, counted in
//! wire bytes like [`super::poisson`]'s: queries arrive at
//! `λ = load · host_rate · n_hosts / (8 · servers · wire(reply_bytes))`.

use super::{Gen, RawFlow};
use crate::error::Result;
use crate::packet::NodeId;
use crate::time::{Time, MAX_DURATION, PS_PER_SEC};

/// The query settings, validated.
pub struct QuerySpec<'a> {
    /// Replies' share of host link capacity, in (0, 1).
    pub load: f64,
    /// Servers asked per query.
    pub servers: u32,
    /// Request bytes per server (0: no request flows).
    pub request_bytes: u64,
    /// Reply bytes per server.
    pub reply_bytes: u64,
    /// Time from the query to its replies' start.
    pub reply_delay: &'a str,
    /// Stop after this many queries...
    pub queries: Option<u32>,
    /// ...or after this much time.
    pub duration: Option<&'a str>,
    /// Time of the first arrival window.
    pub start: &'a Option<String>,
}

/// Generate the queries' flows, each with its query number (from 0).
pub fn generate(g: &Gen, q: &QuerySpec) -> Result<Vec<(RawFlow, u32)>> {
    let n = g.env.n_hosts;
    if !(q.load > 0.0 && q.load < 1.0) {
        return Err(g.err("load", format!("must be in (0, 1), got {}", q.load)));
    }
    if q.servers == 0 || q.servers > n - 1 {
        return Err(g.err(
            "servers",
            format!("must be between 1 and {} (hosts − 1)", n - 1),
        ));
    }
    let reply = g.size(q.reply_bytes)?;
    let delay = g.duration(q.reply_delay, "reply_delay")?;
    let end = match (q.queries, q.duration) {
        (Some(0), _) => return Err(g.err("queries", "must be at least 1")),
        (Some(_), Some(_)) => return Err(g.err("queries", "give queries or duration, not both")),
        (None, None) => return Err(g.err("queries", "give queries or duration")),
        (_, Some(d)) => Some(g.duration(d, "duration")?),
        (Some(_), None) => None,
    };
    let t0 = g.start(q.start)?;
    let wire = g.wire_bytes(reply as f64) * q.servers as f64;
    let rate_bps = g.env.host_rate.bps() as f64 * q.load * n as f64;
    let mean_gap_ps = wire * 8.0 / rate_bps * PS_PER_SEC as f64;
    let mut arrivals = g.rng("queries.arrivals");
    let mut hosts = g.rng("queries.hosts");
    let mut out = Vec::new();
    let mut pool: Vec<u32> = Vec::with_capacity(n as usize);
    let mut t = t0.ps() as f64;
    let mut id = 0u32;
    loop {
        t += arrivals.exponential(mean_gap_ps);
        if t + delay.ps() as f64 > MAX_DURATION.ps() as f64 {
            return Err(g.err(
                "load",
                "the queries run past the simulator's time range; raise load or give fewer",
            ));
        }
        let at = Time(t.round() as u64);
        if end.is_some_and(|d| at > t0 + d) || q.queries.is_some_and(|m| id >= m) {
            break;
        }
        let client = hosts.below(n as u64) as u32;
        // A partial Fisher-Yates shuffle picks distinct servers.
        pool.clear();
        pool.extend((0..n).filter(|&h| h != client));
        for i in 0..q.servers as usize {
            let j = i + hosts.below((pool.len() - i) as u64) as usize;
            pool.swap(i, j);
            let server = NodeId(pool[i]);
            if q.request_bytes > 0 {
                out.push(((NodeId(client), server, q.request_bytes, at), id));
            }
            out.push(((server, NodeId(client), reply, at + delay), id));
        }
        id += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::env;

    fn spec(queries: Option<u32>, duration: Option<&str>) -> QuerySpec<'_> {
        QuerySpec {
            load: 0.2,
            servers: 5,
            request_bytes: 250,
            reply_bytes: 40_000,
            reply_delay: "20us",
            queries,
            duration,
            start: &None,
        }
    }

    #[test]
    fn each_query_asks_distinct_servers_and_gets_their_replies() {
        let names: Vec<String> = (0..10).map(|i| format!("h{i}")).collect();
        let e = env(10, &names);
        let g = Gen { env: &e, index: 0 };
        let f = generate(&g, &spec(Some(50), None)).unwrap();
        assert_eq!(f.len(), 50 * 5 * 2);
        for (qid, q) in f.chunks(10).enumerate() {
            let client = q[0].0 .0;
            let mut servers = Vec::new();
            for pair in q.chunks(2) {
                let ((c, s, rb, t), a) = pair[0];
                let ((s2, c2, pb, t2), b) = pair[1];
                assert_eq!((a, b), (qid as u32, qid as u32));
                assert_eq!((c, s, rb), (client, s2, 250));
                assert_eq!((c2, pb), (client, 40_000));
                assert_eq!(t2.ps() - t.ps(), 20_000_000);
                assert_ne!(s, client);
                servers.push(s.0);
            }
            servers.sort();
            servers.dedup();
            assert_eq!(servers.len(), 5);
        }
    }

    #[test]
    fn the_arrival_rate_gives_the_load() {
        let names: Vec<String> = (0..10).map(|i| format!("h{i}")).collect();
        let e = env(10, &names);
        let g = Gen { env: &e, index: 0 };
        let f = generate(&g, &spec(None, Some("200ms"))).unwrap();
        // Reply wire bytes over 200 ms against 10 links of 10 Gbit/s.
        let reply_wire: f64 = f
            .iter()
            .filter(|(x, _)| x.2 == 40_000)
            .map(|_| g.wire_bytes(40_000.0))
            .sum();
        let load = reply_wire * 8.0 / (10.0 * 10e9 * 0.2);
        assert!((load - 0.2).abs() < 0.02, "load {load}");
        assert!(generate(&g, &spec(Some(0), None)).is_err());
        assert!(generate(&g, &spec(None, None)).is_err());
        let mut bad = spec(Some(1), None);
        bad.servers = 10;
        assert!(generate(&g, &bad).is_err());
    }
}
