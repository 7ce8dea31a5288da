//! Poisson arrivals at a target load.
//!
//! Offered load counts wire bytes, as pFabric's and pHost's simulators do: a
//! flow of `S` payload bytes puts `S + ⌈S/mss⌉·header` bytes on the wire.
//! The aggregate arrival rate is
//! `λ = load · host_rate · n_hosts / (8 · E[wire bytes])`,
//! each arrival picks a source uniformly and a destination uniformly among
//! the other hosts, so every host is offered `load` of its link on average.
//!
//! With a fixed `receiver`, every flow goes to that host from a source drawn
//! uniformly among the others, and `load` is the fraction of the
//! receiver's link (at the host rate) that the flows offer:
//! `λ = load · host_rate / (8 · E[wire bytes])`. This is one bottleneck fed
//! by Poisson flows, the M/G/1 setting of the flow-level references
//! (`metrics::reference`).
//!
//! With `group_size = k` (and no receiver), hosts form groups of `k`
//! consecutive ids and the destination is uniform among the hosts outside
//! the source's group (FlashPass' WAN: every flow goes between two
//! datacenters). The same λ offers each host `load` of its link.
//!
//! With `permutation = true`, each host sends only to one fixed partner, a
//! random derangement drawn once per run: the pHost paper's permutation
//! traffic matrix (Gao et al., CoNEXT 2015, §4.1, Fig. 9a/b; the 2015
//! simulator's `PermutationTM`). The source is uniform, so the same λ
//! offers every host `load` of its uplink and, through the derangement, of
//! its downlink.

use super::{Cdf, Gen, RawFlow};
use crate::engine::Rng;
use crate::error::Result;
use crate::packet::NodeId;
use crate::time::{Rate, Time, MAX_DURATION, MAX_DURATION_DAYS, PS_PER_SEC};

/// The Poisson workload's settings, as the config gives them.
#[derive(Clone, Copy, Debug)]
pub struct PoissonSpec<'a> {
    /// Flow-size CDF: a shipped name or a file.
    pub cdf: &'a str,
    /// Offered load per host link, in (0, 1).
    pub load: f64,
    /// Stop after this many flows...
    pub flows: Option<u64>,
    /// ...or after this much time.
    pub duration: Option<&'a str>,
    /// Time of the first arrival window.
    pub start: &'a Option<String>,
    /// Every flow goes to this host.
    pub receiver: Option<u32>,
    /// Flows go only between groups of this many hosts.
    pub group_size: Option<u32>,
    /// Each host sends to one fixed partner.
    pub permutation: bool,
}

/// Who sends to whom (see the module docs).
enum Pairs {
    /// Any source to any other host.
    Any,
    /// Any other host to this receiver.
    ToReceiver(NodeId),
    /// Any source to a host outside its group of this many.
    Groups(u64),
    /// Each source to its fixed partner (a derangement).
    Partners(Vec<u32>),
}

impl Pairs {
    /// The pattern the spec asks for; the permutation's derangement is drawn
    /// here, from its own stream.
    fn of(g: &Gen, spec: &PoissonSpec, n: u64) -> Result<Pairs> {
        let receiver = spec.receiver.map(|r| g.host(r, "receiver")).transpose()?;
        if let Some(k) = spec.group_size {
            if receiver.is_some() {
                return Err(g.err("group_size", "give group_size or receiver, not both"));
            }
            if k == 0 || n % k as u64 != 0 || k as u64 >= n {
                return Err(g.err(
                    "group_size",
                    format!("must divide the {n} hosts into at least two groups, got {k}"),
                ));
            }
        }
        if spec.permutation {
            if receiver.is_some() || spec.group_size.is_some() {
                return Err(g.err(
                    "permutation",
                    "give one of permutation, receiver and group_size",
                ));
            }
            if n < 2 {
                return Err(g.err("permutation", "needs at least two hosts"));
            }
            // Its own stream: the other streams' draws stay as without it.
            let partners =
                super::patterns::derangement(&mut g.rng("poisson.permutation"), n as u32);
            return Ok(Pairs::Partners(partners));
        }
        Ok(match (receiver, spec.group_size) {
            (Some(r), _) => Pairs::ToReceiver(r),
            (None, Some(k)) => Pairs::Groups(k as u64),
            (None, None) => Pairs::Any,
        })
    }

    /// One flow's (source, destination) among `n` hosts, drawn from `hosts`.
    fn draw(&self, hosts: &mut Rng, n: u64) -> (u64, u64) {
        match self {
            Pairs::Partners(p) => {
                let src = hosts.below(n);
                (src, p[src as usize] as u64)
            }
            Pairs::Groups(k) => {
                let src = hosts.below(n);
                // Uniform among the n − k hosts of the other groups.
                let first = src / k * k;
                let mut dst = hosts.below(n - k);
                if dst >= first {
                    dst += k;
                }
                (src, dst)
            }
            Pairs::Any => {
                let src = hosts.below(n);
                // Uniform among the other n − 1 hosts.
                let mut dst = hosts.below(n - 1);
                if dst >= src {
                    dst += 1;
                }
                (src, dst)
            }
            Pairs::ToReceiver(r) => {
                let r = r.0 as u64;
                let mut src = hosts.below(n - 1);
                if src >= r {
                    src += 1;
                }
                (src, r)
            }
        }
    }
}

/// Generate Poisson flows (see the module docs).
pub fn generate(g: &Gen, spec: &PoissonSpec) -> Result<Vec<RawFlow>> {
    let load = spec.load;
    if !(load > 0.0 && load < 1.0) {
        return Err(g.err("load", format!("must be in (0, 1), got {load}")));
    }
    let end = match (spec.flows, spec.duration) {
        (Some(0), _) => return Err(g.err("flows", "must be at least 1")),
        (Some(_), Some(_)) => return Err(g.err("flows", "give flows or duration, not both")),
        (None, None) => return Err(g.err("flows", "give flows or duration")),
        (_, Some(d)) => Some(g.duration(d, "duration")?),
        (Some(_), None) => None,
    };
    let cdf = Cdf::load(spec.cdf, g.env.base_dir).map_err(|e| match e {
        crate::Error::File { file, msg } => crate::Error::File {
            file,
            msg: format!("{msg} (from {})", g.field("cdf")),
        },
        other => other,
    })?;
    let t0 = g.start(spec.start)?;
    let n = g.env.n_hosts as u64;
    let pairs = Pairs::of(g, spec, n)?;
    // Mean wire bytes: payload plus headers, estimated from the CDF's mean
    // payload and mean packet count (exact for whole-packet sizes).
    let mean_wire = g.wire_bytes(cdf.mean());
    let links = if matches!(pairs, Pairs::ToReceiver(_)) {
        1
    } else {
        n
    };
    let rate_bps = g.env.host_rate.bps() as f64 * load * links as f64;
    let mean_gap_ps = mean_wire * 8.0 / rate_bps * PS_PER_SEC as f64;
    let mut arrivals = g.rng("poisson.arrivals");
    let mut sizes = g.rng("poisson.sizes");
    let mut hosts = g.rng("poisson.hosts");
    let mut out = Vec::new();
    let mut t = t0.ps() as f64;
    loop {
        t += arrivals.exponential(mean_gap_ps);
        if t > MAX_DURATION.ps() as f64 {
            return Err(g.err(
                "load",
                format!(
                    "at load {load:?} of {} host links the flows arrive over more than {MAX_DURATION_DAYS} days, \
                     the simulator's time range",
                    g.env.host_rate
                ),
            ));
        }
        let start = Time(t.round() as u64);
        if end.is_some_and(|d| start > t0 + d) {
            break;
        }
        let (src, dst) = pairs.draw(&mut hosts, n);
        out.push((
            NodeId(src as u32),
            NodeId(dst as u32),
            cdf.sample(&mut sizes),
            start,
        ));
        if spec.flows.is_some_and(|f| out.len() as u64 >= f) {
            break;
        }
    }
    Ok(out)
}

/// Flows a Poisson workload with a `duration` (and no flow count) is
/// expected to generate: the duration over the mean gap between arrivals.
pub fn expected_flows(
    cdf_mean_wire_bytes: f64,
    load: f64,
    n_hosts: u64,
    host_rate: Rate,
    duration_ps: u64,
) -> f64 {
    let rate_bps = host_rate.bps() as f64 * load * n_hosts as f64;
    let mean_gap_ps = cdf_mean_wire_bytes * 8.0 / rate_bps * PS_PER_SEC as f64;
    duration_ps as f64 / mean_gap_ps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::env;

    /// All-to-all arrivals of `cdf` sizes at `load`, `flows` of them.
    fn spec(cdf: &str, load: f64, flows: Option<u64>) -> PoissonSpec<'_> {
        PoissonSpec {
            cdf,
            load,
            flows,
            duration: None,
            start: &None,
            receiver: None,
            group_size: None,
            permutation: false,
        }
    }

    #[test]
    fn offered_load_matches_the_target() {
        let names: Vec<String> = (0..144).map(|i| format!("h{i}")).collect();
        let e = env(144, &names);
        let g = Gen { env: &e, index: 0 };
        let flows = generate(&g, &spec("websearch", 0.6, Some(20_000))).unwrap();
        assert_eq!(flows.len(), 20_000);
        let span = flows.last().unwrap().3.as_secs_f64();
        let wire: f64 = flows.iter().map(|f| g.wire_bytes(f.2 as f64)).sum();
        let load = wire * 8.0 / span / (144.0 * 10e9);
        assert!((load - 0.6).abs() < 0.6 * 0.05, "offered load {load}");
        assert!(flows.iter().all(|f| f.0 != f.1));
        assert!(flows.windows(2).all(|w| w[0].3 <= w[1].3));
    }

    #[test]
    fn rejects_bad_loads() {
        let names: Vec<String> = (0..4).map(|i| format!("h{i}")).collect();
        let e = env(4, &names);
        let g = Gen { env: &e, index: 2 };
        for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            let err = generate(&g, &spec("websearch", bad, Some(10)))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("workload[2].load"), "{err}");
        }
    }

    #[test]
    fn a_load_so_low_that_arrivals_leave_the_time_range_is_rejected() {
        let names: Vec<String> = (0..4).map(|i| format!("h{i}")).collect();
        let e = env(4, &names);
        let g = Gen { env: &e, index: 0 };
        let err = generate(&g, &spec("websearch", 1e-12, Some(2000)))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("workload[0].load") && err.contains("time range"),
            "{err}"
        );
    }

    #[test]
    fn duration_bounds_arrivals() {
        let names: Vec<String> = (0..8).map(|i| format!("h{i}")).collect();
        let e = env(8, &names);
        let g = Gen { env: &e, index: 0 };
        let f = generate(
            &g,
            &PoissonSpec {
                duration: Some("1ms"),
                start: &Some("10us".into()),
                ..spec("imc10", 0.5, None)
            },
        )
        .unwrap();
        assert!(!f.is_empty());
        assert!(f
            .iter()
            .all(|x| x.3.ps() >= 10_000_000 && x.3.ps() <= 1_010_000_000));
    }

    #[test]
    fn a_fixed_receiver_gets_every_flow_at_the_load_of_its_link() {
        let names: Vec<String> = (0..17).map(|i| format!("h{i}")).collect();
        let e = env(17, &names);
        let g = Gen { env: &e, index: 0 };
        let flows = generate(
            &g,
            &PoissonSpec {
                receiver: Some(16),
                ..spec("websearch", 0.5, Some(20_000))
            },
        )
        .unwrap();
        assert!(flows.iter().all(|f| f.1 == NodeId(16) && f.0 != NodeId(16)));
        // Every other host sends.
        assert!((0..16).all(|h| flows.iter().any(|f| f.0 == NodeId(h))));
        let span = flows.last().unwrap().3.as_secs_f64();
        let wire: f64 = flows.iter().map(|f| g.wire_bytes(f.2 as f64)).sum();
        let load = wire * 8.0 / span / 10e9;
        assert!((load - 0.5).abs() < 0.5 * 0.05, "offered load {load}");
        let err = generate(
            &g,
            &PoissonSpec {
                receiver: Some(17),
                ..spec("websearch", 0.5, Some(10))
            },
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("workload[0].receiver"), "{err}");
    }

    #[test]
    fn with_groups_every_flow_crosses_groups_uniformly() {
        let names: Vec<String> = (0..6).map(|i| format!("h{i}")).collect();
        let e = env(6, &names);
        let g = Gen { env: &e, index: 0 };
        let flows = generate(
            &g,
            &PoissonSpec {
                group_size: Some(2),
                ..spec("websearch", 0.5, Some(6000))
            },
        )
        .unwrap();
        assert!(flows.iter().all(|f| f.0 .0 / 2 != f.1 .0 / 2));
        // Each of the 6 × 4 cross-group pairs gets about 1/24 of the flows.
        for s in 0..6u32 {
            for d in (0..6u32).filter(|d| d / 2 != s / 2) {
                let c = flows
                    .iter()
                    .filter(|f| f.0 == NodeId(s) && f.1 == NodeId(d))
                    .count();
                assert!((180..320).contains(&c), "{s}->{d}: {c}");
            }
        }
        let err = generate(
            &g,
            &PoissonSpec {
                group_size: Some(4),
                ..spec("websearch", 0.5, Some(10))
            },
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("workload[0].group_size"),
            "{err}"
        );
    }

    #[test]
    fn a_permutation_sends_each_host_to_one_partner_at_the_load() {
        let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
        let e = env(16, &names);
        let g = Gen { env: &e, index: 0 };
        let flows = generate(
            &g,
            &PoissonSpec {
                permutation: true,
                ..spec("websearch", 0.6, Some(20_000))
            },
        )
        .unwrap();
        // One partner per source, a different one per source, never itself.
        let mut partner = [None; 16];
        for f in &flows {
            let p = partner[f.0 .0 as usize].get_or_insert(f.1);
            assert_eq!(*p, f.1, "host {} sends to two hosts", f.0 .0);
        }
        let mut dsts: Vec<u32> = partner
            .iter()
            .map(|p| p.expect("every host sends").0)
            .collect();
        assert!(dsts.iter().enumerate().all(|(s, &d)| s as u32 != d));
        dsts.sort_unstable();
        assert_eq!(dsts, (0..16).collect::<Vec<u32>>());
        let span = flows.last().unwrap().3.as_secs_f64();
        let wire: f64 = flows.iter().map(|f| g.wire_bytes(f.2 as f64)).sum();
        let load = wire * 8.0 / span / (16.0 * 10e9);
        assert!((load - 0.6).abs() < 0.6 * 0.05, "offered load {load}");
        // The sizes and arrival times are those of the all-to-all run.
        let all = generate(&g, &spec("websearch", 0.6, Some(20_000))).unwrap();
        assert!(flows
            .iter()
            .zip(&all)
            .all(|(a, b)| a.2 == b.2 && a.3 == b.3));
        let err = generate(
            &g,
            &PoissonSpec {
                receiver: Some(3),
                permutation: true,
                ..spec("websearch", 0.5, Some(10))
            },
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("workload[0].permutation"),
            "{err}"
        );
    }
}
