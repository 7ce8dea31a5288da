//! Topology builders. Each turns a [`TopologyConfig`] into a
//! [`TopologySpec`]: a list of hosts, switches and bidirectional links.
//! Hosts always come first, so host `i` is `NodeId(i)`.

use crate::error::{Error, Result};
use crate::packet::NodeId;
use crate::time::{parse_duration, parse_rate, Duration, Rate};
use serde::{Deserialize, Serialize};

/// A bidirectional link between two nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
    /// Rate in each direction.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Byte limit of both output queues of this link, overriding the
    /// network-wide default (e.g. a dumbbell's bottleneck buffer).
    pub buffer: Option<u64>,
}

/// A built topology: nodes and links, hosts first.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologySpec {
    /// Number of hosts (`NodeId(0)..NodeId(n_hosts)`).
    pub n_hosts: u32,
    /// Names of all nodes, hosts first.
    pub names: Vec<String>,
    /// Links.
    pub links: Vec<LinkSpec>,
}

impl TopologySpec {
    /// Total number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.names.len()
    }

    /// The same network plus one more host, `name`, on the switch that host
    /// `beside` hangs off, with a link like `beside`'s. The new host gets id
    /// `n_hosts` (hosts stay first, switch ids shift up by one), so the
    /// hosts a workload may use are unchanged. For dedicated servers such as
    /// Fastpass's arbiter.
    pub fn with_extra_host(&self, beside: NodeId, name: &str) -> Result<TopologySpec> {
        let n = self.n_hosts;
        let access = self
            .links
            .iter()
            .find(|l| l.a == beside || l.b == beside)
            .ok_or_else(|| Error::Topology(format!("host {} has no link", beside.0)))?;
        let switch = if access.a == beside {
            access.b
        } else {
            access.a
        };
        let shift = |x: NodeId| if x.0 >= n { NodeId(x.0 + 1) } else { x };
        let mut links: Vec<LinkSpec> = self
            .links
            .iter()
            .map(|l| LinkSpec {
                a: shift(l.a),
                b: shift(l.b),
                ..l.clone()
            })
            .collect();
        links.push(LinkSpec {
            a: NodeId(n),
            b: shift(switch),
            rate: access.rate,
            delay: access.delay,
            buffer: None,
        });
        let mut names = self.names.clone();
        names.insert(n as usize, name.to_string());
        Ok(TopologySpec {
            n_hosts: n + 1,
            names,
            links,
        })
    }
}

/// Topology section of a config.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologyConfig {
    /// Two-tier leaf-spine: every leaf links to every spine.
    LeafSpine {
        /// Number of spine switches.
        spines: u32,
        /// Number of leaf (top-of-rack) switches.
        leaves: u32,
        /// Hosts under each leaf.
        hosts_per_leaf: u32,
        /// Host link rate, e.g. "10Gbps".
        host_rate: String,
        /// Leaf-spine link rate.
        fabric_rate: String,
        /// Propagation delay of every link, e.g. "0.2us".
        link_delay: String,
    },
    /// k-ary three-tier fat tree (Al-Fares et al.), with optional ToR
    /// oversubscription: each ToR has `k/2 × oversubscription` hosts.
    FatTree {
        /// Switch radix (even, ≥ 2).
        k: u32,
        /// Pods to build (default k; fewer gives a smaller tree).
        pods: Option<u32>,
        /// Hosts per ToR divided by ToR uplinks (default 1).
        oversubscription: Option<u32>,
        /// Host link rate.
        host_rate: String,
        /// Rate of switch-to-switch links.
        fabric_rate: String,
        /// Propagation delay of every link.
        link_delay: String,
    },
    /// Senders on a left switch, receivers on a right switch, one bottleneck
    /// link between them.
    Dumbbell {
        /// Hosts on the left.
        senders: u32,
        /// Hosts on the right (default 1).
        receivers: Option<u32>,
        /// Host link rate.
        host_rate: String,
        /// Host link delay.
        host_delay: String,
        /// Bottleneck rate.
        bottleneck_rate: String,
        /// Bottleneck one-way delay.
        bottleneck_delay: String,
        /// Bottleneck queue limit in bytes (default: the switch default).
        bottleneck_buffer_bytes: Option<u64>,
    },
    /// N hosts on one switch (N-to-1 incast: the bottleneck is the port to
    /// the receiver). The last host's link may be given its own rate.
    Star {
        /// Number of hosts.
        hosts: u32,
        /// Host link rate.
        host_rate: String,
        /// Rate of the last host's link (default host_rate).
        bottleneck_rate: Option<String>,
        /// Link delay.
        link_delay: String,
        /// Queue limit of the port towards the last host, bytes.
        bottleneck_buffer_bytes: Option<u64>,
    },
    /// An explicit list of nodes and links.
    Explicit {
        /// Host names (hosts get ids in this order).
        hosts: Vec<String>,
        /// Switch names.
        switches: Vec<String>,
        /// Links between named nodes.
        links: Vec<ExplicitLink>,
    },
}

/// One link of an explicit topology.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitLink {
    /// Name of one end.
    pub a: String,
    /// Name of the other end.
    pub b: String,
    /// Link rate.
    pub rate: String,
    /// One-way delay.
    pub delay: String,
    /// Queue limit in bytes for both directions (default: network default).
    pub buffer_bytes: Option<u64>,
}

fn rate(s: &str, field: &str) -> Result<Rate> {
    parse_rate(s).map_err(|m| Error::config(format!("topology.{field}"), m))
}
/// The longest one-way link delay a topology may give: 10 s, several times
/// the Earth–Moon distance. Longer is a typo (`"1000s"` for `"1000us"`), and
/// every timer of every protocol would wait for it.
pub const MAX_LINK_DELAY: Duration = Duration::from_ms(10_000);

fn delay(s: &str, field: &str) -> Result<Duration> {
    let d = parse_duration(s).map_err(|m| Error::config(format!("topology.{field}"), m))?;
    if d > MAX_LINK_DELAY {
        return Err(Error::config(
            format!("topology.{field}"),
            format!("{s:?} is longer than the 10 s pktsim accepts for one link"),
        ));
    }
    Ok(d)
}
fn positive(v: u32, field: &str) -> Result<u32> {
    if v == 0 {
        Err(Error::config(
            format!("topology.{field}"),
            "must be at least 1",
        ))
    } else {
        Ok(v)
    }
}

impl TopologyConfig {
    /// Build the topology, checking every value.
    pub fn build(&self) -> Result<TopologySpec> {
        match self {
            TopologyConfig::LeafSpine {
                spines,
                leaves,
                hosts_per_leaf,
                host_rate,
                fabric_rate,
                link_delay,
            } => leaf_spine(
                positive(*spines, "spines")?,
                positive(*leaves, "leaves")?,
                positive(*hosts_per_leaf, "hosts_per_leaf")?,
                rate(host_rate, "host_rate")?,
                rate(fabric_rate, "fabric_rate")?,
                delay(link_delay, "link_delay")?,
            ),
            TopologyConfig::FatTree {
                k,
                pods,
                oversubscription,
                host_rate,
                fabric_rate,
                link_delay,
            } => {
                let pods = fat_tree_pods(*k, *pods)?;
                fat_tree(
                    *k,
                    pods,
                    positive(oversubscription.unwrap_or(1), "oversubscription")?,
                    rate(host_rate, "host_rate")?,
                    rate(fabric_rate, "fabric_rate")?,
                    delay(link_delay, "link_delay")?,
                )
            }
            TopologyConfig::Dumbbell {
                senders,
                receivers,
                host_rate,
                host_delay,
                bottleneck_rate,
                bottleneck_delay,
                bottleneck_buffer_bytes,
            } => dumbbell(
                positive(*senders, "senders")?,
                positive(receivers.unwrap_or(1), "receivers")?,
                rate(host_rate, "host_rate")?,
                delay(host_delay, "host_delay")?,
                rate(bottleneck_rate, "bottleneck_rate")?,
                delay(bottleneck_delay, "bottleneck_delay")?,
                *bottleneck_buffer_bytes,
            ),
            TopologyConfig::Star {
                hosts,
                host_rate,
                bottleneck_rate,
                link_delay,
                bottleneck_buffer_bytes,
            } => {
                if *hosts < 2 {
                    return Err(Error::config(
                        "topology.hosts",
                        "a star needs at least 2 hosts",
                    ));
                }
                let hr = rate(host_rate, "host_rate")?;
                let br = match bottleneck_rate {
                    Some(s) => rate(s, "bottleneck_rate")?,
                    None => hr,
                };
                Ok(star(
                    *hosts,
                    hr,
                    br,
                    delay(link_delay, "link_delay")?,
                    *bottleneck_buffer_bytes,
                ))
            }
            TopologyConfig::Explicit {
                hosts,
                switches,
                links,
            } => explicit(hosts, switches, links),
        }
    }

    /// Hosts, nodes and links this config builds, counted without building
    /// it (for the resource estimate) and checked to fit pktsim's `u32`
    /// node ids.
    pub fn counts(&self) -> Result<TopologyCounts> {
        let (hosts, switches, links) = match self {
            TopologyConfig::LeafSpine {
                spines,
                leaves,
                hosts_per_leaf,
                ..
            } => {
                let (s, l, h) = (*spines as u128, *leaves as u128, *hosts_per_leaf as u128);
                (l * h, l + s, l * h + l * s)
            }
            TopologyConfig::FatTree {
                k,
                pods,
                oversubscription,
                ..
            } => {
                let pods = fat_tree_pods(*k, *pods)? as u128;
                let half = *k as u128 / 2;
                let hosts = pods * half * half * oversubscription.unwrap_or(1) as u128;
                // ToRs and aggregation switches per pod, cores shared.
                let switches = 2 * pods * half + half * half;
                (hosts, switches, hosts + 2 * pods * half * half)
            }
            TopologyConfig::Dumbbell {
                senders, receivers, ..
            } => {
                let h = *senders as u128 + receivers.unwrap_or(1) as u128;
                (h, 2, h + 1)
            }
            TopologyConfig::Star { hosts, .. } => (*hosts as u128, 1, *hosts as u128),
            TopologyConfig::Explicit {
                hosts,
                switches,
                links,
            } => (
                hosts.len() as u128,
                switches.len() as u128,
                links.len() as u128,
            ),
        };
        // Wide enough for any u32 inputs; one spare id for a transport's
        // extra host (Fastpass's arbiter).
        let nodes = hosts + switches;
        if nodes >= u32::MAX as u128 || links >= (u32::MAX / 2) as u128 {
            return Err(Error::config(
                "topology",
                format!(
                    "{nodes} nodes and {links} links: more than pktsim can number \
                     (node ids are 32-bit)"
                ),
            ));
        }
        Ok(TopologyCounts {
            hosts: hosts as u64,
            nodes: nodes as u64,
            links: links as u64,
        })
    }

    /// Rate of host access links (the reference for offered load), taken
    /// from the config without building.
    pub fn host_rate(&self) -> Result<Rate> {
        match self {
            TopologyConfig::LeafSpine { host_rate, .. }
            | TopologyConfig::FatTree { host_rate, .. }
            | TopologyConfig::Dumbbell { host_rate, .. }
            | TopologyConfig::Star { host_rate, .. } => rate(host_rate, "host_rate"),
            TopologyConfig::Explicit { links, .. } => links
                .first()
                .ok_or_else(|| Error::config("topology.links", "no links"))
                .and_then(|l| rate(&l.rate, "links[0].rate")),
        }
    }
}

/// Hosts, nodes and links of a topology, counted before it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyCounts {
    /// Hosts.
    pub hosts: u64,
    /// Hosts and switches.
    pub nodes: u64,
    /// Bidirectional links.
    pub links: u64,
}

/// Check a fat tree's radix and pod count; the pods to build.
fn fat_tree_pods(k: u32, pods: Option<u32>) -> Result<u32> {
    if k < 2 || k % 2 != 0 {
        return Err(Error::config(
            "topology.k",
            format!("must be even and ≥ 2, got {k}"),
        ));
    }
    let pods = pods.unwrap_or(k);
    if pods == 0 || pods > k {
        return Err(Error::config(
            "topology.pods",
            format!("must be between 1 and k = {k}"),
        ));
    }
    Ok(pods)
}

/// `names` in short, for messages: a run of numbered names such as `h0`,
/// `h1`, … `h31` as `h0..h31`; past a dozen runs, how many more there are.
pub fn names_in_short(names: &[String]) -> String {
    /// A name's text before its number, and the number (none, or one with
    /// a leading zero, is a name of its own).
    fn split(name: &str) -> (&str, Option<u64>) {
        let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, num) = name.split_at(name.len() - digits);
        let n = (!num.is_empty() && (num == "0" || !num.starts_with('0')))
            .then(|| num.parse().ok())
            .flatten();
        (prefix, n)
    }
    const MOST: usize = 12;
    // Runs of names as [first, last] indices.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (prefix, n) = split(name);
        match runs.last_mut() {
            Some(run)
                if {
                    let (last_prefix, last_n) = split(&names[run.1]);
                    last_prefix == prefix && matches!((last_n, n), (Some(l), Some(n)) if l + 1 == n)
                } =>
            {
                run.1 = i
            }
            _ => runs.push((i, i)),
        }
    }
    let mut parts: Vec<String> = runs
        .iter()
        .take(MOST)
        .map(|&(a, b)| match b - a {
            0 => names[a].clone(),
            1 => format!("{}, {}", names[a], names[b]),
            _ => format!("{}..{}", names[a], names[b]),
        })
        .collect();
    if runs.len() > MOST {
        let shown = runs[MOST - 1].1 + 1;
        parts.push(format!("and {} more", names.len() - shown));
    }
    parts.join(", ")
}

/// The message for a node name that is none of `names`, listing them.
pub fn no_node_named(name: &str, names: &[String]) -> String {
    no_such_name("node", name, names)
}

/// "no `what` is named `name` (the `what`s are …)", listing `names`.
fn no_such_name(what: &str, name: &str, names: &[String]) -> String {
    format!(
        "no {what} is named {name:?} (the {what}s are {})",
        names_in_short(names)
    )
}

/// One rule for a node written as text (a flow list's column, `pktsim
/// pcap --host`): a number is an index into `names`, other text a name; a
/// number that is also the name of *another* node is refused as
/// ambiguous rather than read either way. Indices run `0..n`; `what` is
/// "host" or "node".
pub fn node_by_text(
    s: &str,
    n: usize,
    names: &[String],
    what: &str,
) -> std::result::Result<u32, String> {
    let s = s.trim();
    let named = names.iter().position(|n| n == s);
    match (s.parse::<u32>(), named) {
        // Ambiguous only where the index exists too: "7" on two hosts can
        // only be a name.
        (Ok(i), Some(p)) if p != i as usize && (i as usize) < n => Err(format!(
            "{s:?} is ambiguous: {what} {i} is named {:?}, and {what} {p} is named {s:?}; \
             give another {what}'s name or rename it",
            names.get(i as usize).map_or("(unnamed)", String::as_str)
        )),
        (_, Some(p)) => Ok(p as u32),
        (Ok(i), None) if (i as usize) < n => Ok(i),
        (Ok(i), None) => Err(format!(
            "{what} {i} does not exist ({what}s are 0..{})",
            n.saturating_sub(1)
        )),
        (Err(_), None) => Err(no_such_name(what, s, names)),
    }
}

fn names(prefix: &str, n: u32) -> impl Iterator<Item = String> + '_ {
    (0..n).map(move |i| format!("{prefix}{i}"))
}

fn link(a: u32, b: u32, rate: Rate, delay: Duration) -> LinkSpec {
    LinkSpec {
        a: NodeId(a),
        b: NodeId(b),
        rate,
        delay,
        buffer: None,
    }
}

/// Two-tier leaf-spine.
pub fn leaf_spine(
    spines: u32,
    leaves: u32,
    hosts_per_leaf: u32,
    host_rate: Rate,
    fabric_rate: Rate,
    delay: Duration,
) -> Result<TopologySpec> {
    let n_hosts = leaves * hosts_per_leaf;
    let leaf0 = n_hosts;
    let spine0 = leaf0 + leaves;
    let mut names: Vec<String> = names("h", n_hosts).collect();
    names.extend(self::names("leaf", leaves));
    names.extend(self::names("spine", spines));
    let mut links = Vec::new();
    for h in 0..n_hosts {
        links.push(link(h, leaf0 + h / hosts_per_leaf, host_rate, delay));
    }
    for l in 0..leaves {
        for s in 0..spines {
            links.push(link(leaf0 + l, spine0 + s, fabric_rate, delay));
        }
    }
    Ok(TopologySpec {
        n_hosts,
        names,
        links,
    })
}

/// k-ary fat tree with `pods` pods and `oversub × k/2` hosts per ToR.
pub fn fat_tree(
    k: u32,
    pods: u32,
    oversub: u32,
    host_rate: Rate,
    fabric_rate: Rate,
    delay: Duration,
) -> Result<TopologySpec> {
    let half = k / 2;
    let hosts_per_tor = half * oversub;
    let tors = pods * half;
    let n_hosts = tors * hosts_per_tor;
    let tor0 = n_hosts;
    let agg0 = tor0 + tors;
    let core0 = agg0 + pods * half;
    let cores = half * half;
    let mut names: Vec<String> = names("h", n_hosts).collect();
    names.extend(self::names("tor", tors));
    names.extend(self::names("agg", pods * half));
    names.extend(self::names("core", cores));
    let mut links = Vec::new();
    for h in 0..n_hosts {
        links.push(link(h, tor0 + h / hosts_per_tor, host_rate, delay));
    }
    for p in 0..pods {
        for e in 0..half {
            for a in 0..half {
                links.push(link(
                    tor0 + p * half + e,
                    agg0 + p * half + a,
                    fabric_rate,
                    delay,
                ));
            }
        }
        // Aggregation switch a of every pod links to cores a*half .. a*half+half.
        for a in 0..half {
            for c in 0..half {
                links.push(link(
                    agg0 + p * half + a,
                    core0 + a * half + c,
                    fabric_rate,
                    delay,
                ));
            }
        }
    }
    Ok(TopologySpec {
        n_hosts,
        names,
        links,
    })
}

/// Dumbbell: senders — left switch — bottleneck — right switch — receivers.
pub fn dumbbell(
    senders: u32,
    receivers: u32,
    host_rate: Rate,
    host_delay: Duration,
    bottleneck_rate: Rate,
    bottleneck_delay: Duration,
    buffer: Option<u64>,
) -> Result<TopologySpec> {
    let n_hosts = senders + receivers;
    let left = n_hosts;
    let right = n_hosts + 1;
    let mut names: Vec<String> = names("s", senders).collect();
    names.extend(self::names("r", receivers));
    names.push("left".into());
    names.push("right".into());
    let mut links = Vec::new();
    for h in 0..senders {
        links.push(link(h, left, host_rate, host_delay));
    }
    for h in senders..n_hosts {
        links.push(link(h, right, host_rate, host_delay));
    }
    let mut b = link(left, right, bottleneck_rate, bottleneck_delay);
    b.buffer = buffer;
    links.push(b);
    Ok(TopologySpec {
        n_hosts,
        names,
        links,
    })
}

/// Star: `hosts` hosts on one switch; the last host's link is the bottleneck.
pub fn star(
    hosts: u32,
    host_rate: Rate,
    bottleneck_rate: Rate,
    delay: Duration,
    buffer: Option<u64>,
) -> TopologySpec {
    let sw = hosts;
    let mut names: Vec<String> = names("h", hosts).collect();
    names.push("switch".into());
    let mut links: Vec<LinkSpec> = (0..hosts - 1)
        .map(|h| link(h, sw, host_rate, delay))
        .collect();
    let mut last = link(hosts - 1, sw, bottleneck_rate, delay);
    last.buffer = buffer;
    links.push(last);
    TopologySpec {
        n_hosts: hosts,
        names,
        links,
    }
}

/// Explicit topology from named nodes and links.
pub fn explicit(
    hosts: &[String],
    switches: &[String],
    links: &[ExplicitLink],
) -> Result<TopologySpec> {
    if hosts.len() < 2 {
        return Err(Error::config("topology.hosts", "need at least 2 hosts"));
    }
    let names: Vec<String> = hosts.iter().chain(switches).cloned().collect();
    let mut index = std::collections::BTreeMap::new();
    for (i, n) in names.iter().enumerate() {
        if index.insert(n.as_str(), i as u32).is_some() {
            return Err(Error::config(
                "topology",
                format!("node name {n:?} is used twice"),
            ));
        }
    }
    let mut out = Vec::new();
    for (i, l) in links.iter().enumerate() {
        let end = |n: &str, f: &str| {
            index.get(n).copied().ok_or_else(|| {
                Error::config(
                    format!("topology.links[{i}].{f}"),
                    format!("unknown node {n:?}"),
                )
            })
        };
        let (a, b) = (end(&l.a, "a")?, end(&l.b, "b")?);
        if a == b {
            return Err(Error::config(
                format!("topology.links[{i}]"),
                "a link needs two different ends",
            ));
        }
        out.push(LinkSpec {
            a: NodeId(a),
            b: NodeId(b),
            rate: rate(&l.rate, &format!("links[{i}].rate"))?,
            delay: delay(&l.delay, &format!("links[{i}].delay"))?,
            buffer: l.buffer_bytes,
        });
    }
    Ok(TopologySpec {
        n_hosts: hosts.len() as u32,
        names,
        links: out,
    })
}

/// Test helper: the topology a `[topology]` table's text describes.
#[cfg(test)]
pub(crate) fn topology_from_toml(src: &str) -> TopologySpec {
    let t: TopologyConfig = toml::from_str(src).expect("topology parses");
    t.build().expect("builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_short_folds_numbered_runs_and_says_how_many_more() {
        let t = leaf_spine(
            2,
            4,
            4,
            Rate::gbps(10),
            Rate::gbps(40),
            Duration::from_ns(200),
        )
        .expect("leaf-spine");
        assert_eq!(
            names_in_short(&t.names),
            "h0..h15, leaf0..leaf3, spine0, spine1"
        );
        let odd: Vec<String> = ["a", "x1", "x2", "x02", "b10", "b11", "b12"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // "x02" has a leading zero: a name of its own, not x3.
        assert_eq!(names_in_short(&odd), "a, x1, x2, x02, b10..b12");
        let many: Vec<String> = (0..40).map(|i| format!("n{}", i * 2)).collect();
        assert_eq!(
            names_in_short(&many),
            "n0, n2, n4, n6, n8, n10, n12, n14, n16, n18, n20, n22, and 28 more"
        );
        assert_eq!(
            no_node_named("s0", &t.names),
            "no node is named \"s0\" (the nodes are h0..h15, leaf0..leaf3, spine0, spine1)"
        );
    }

    #[test]
    fn a_node_by_text_is_an_index_or_a_name_and_never_both() {
        let names: Vec<String> = ["h0", "h1", "sw"].iter().map(|s| s.to_string()).collect();
        assert_eq!(node_by_text("1", 3, &names, "node"), Ok(1));
        assert_eq!(node_by_text(" sw ", 3, &names, "node"), Ok(2));
        assert_eq!(
            node_by_text("7", 3, &names, "node"),
            Err("node 7 does not exist (nodes are 0..2)".to_string())
        );
        let named: Vec<String> = ["1", "0"].iter().map(|s| s.to_string()).collect();
        assert!(node_by_text("0", 2, &named, "host")
            .unwrap_err()
            .contains("is ambiguous"));
        // No index 7 among two hosts: "7" can only be the name.
        let seven: Vec<String> = ["7", "x"].iter().map(|s| s.to_string()).collect();
        assert_eq!(node_by_text("7", 2, &seven, "host"), Ok(0));
    }

    #[test]
    fn leaf_spine_counts() {
        let t = leaf_spine(
            4,
            9,
            16,
            Rate::gbps(10),
            Rate::gbps(40),
            Duration::from_ns(200),
        )
        .unwrap();
        assert_eq!(t.n_hosts, 144);
        assert_eq!(t.n_nodes(), 144 + 9 + 4);
        assert_eq!(t.links.len(), 144 + 36);
    }

    #[test]
    fn extra_host_joins_the_rack_of_its_neighbour() {
        let t = leaf_spine(
            2,
            2,
            2,
            Rate::gbps(10),
            Rate::gbps(40),
            Duration::from_ns(200),
        )
        .unwrap();
        let e = t.with_extra_host(NodeId(0), "arbiter").unwrap();
        assert_eq!(e.n_hosts, 5);
        assert_eq!(e.names[4], "arbiter");
        assert_eq!(e.names[5], "leaf0");
        let last = e.links.last().unwrap();
        assert_eq!(
            (last.a, last.b, last.rate),
            (NodeId(4), NodeId(5), Rate::gbps(10))
        );
        // Host 0 still hangs off leaf0, now id 5.
        assert_eq!((e.links[0].a, e.links[0].b), (NodeId(0), NodeId(5)));
    }

    #[test]
    fn fat_tree_counts() {
        // FastLane's 128 servers at 4:1: k = 8, 2 pods, 16 hosts per ToR.
        let t = fat_tree(
            8,
            2,
            4,
            Rate::gbps(10),
            Rate::gbps(10),
            Duration::from_ns(200),
        )
        .unwrap();
        assert_eq!(t.n_hosts, 128);
        // Full k = 4 tree: 16 hosts, 8 ToR, 8 agg, 4 core.
        let t = fat_tree(
            4,
            4,
            1,
            Rate::gbps(10),
            Rate::gbps(10),
            Duration::from_ns(200),
        )
        .unwrap();
        assert_eq!(t.n_hosts, 16);
        assert_eq!(t.n_nodes(), 16 + 8 + 8 + 4);
        assert_eq!(t.links.len(), 16 + 16 + 16);
    }

    #[test]
    fn counts_match_what_is_built() {
        let configs = [
            "kind = \"leaf_spine\"\nspines = 3\nleaves = 5\nhosts_per_leaf = 7\nhost_rate = \"10G\"\nfabric_rate = \"40G\"\nlink_delay = \"1us\"",
            "kind = \"fat_tree\"\nk = 8\npods = 3\noversubscription = 2\nhost_rate = \"10G\"\nfabric_rate = \"40G\"\nlink_delay = \"1us\"",
            "kind = \"fat_tree\"\nk = 4\nhost_rate = \"10G\"\nfabric_rate = \"40G\"\nlink_delay = \"1us\"",
            "kind = \"dumbbell\"\nsenders = 4\nreceivers = 2\nhost_rate = \"10G\"\nhost_delay = \"1us\"\nbottleneck_rate = \"1G\"\nbottleneck_delay = \"1us\"",
            "kind = \"star\"\nhosts = 9\nhost_rate = \"10G\"\nlink_delay = \"1us\"",
        ];
        for text in configs {
            let cfg: TopologyConfig = toml::from_str(text).unwrap();
            let t = cfg.build().unwrap();
            let c = cfg.counts().unwrap();
            assert_eq!(
                (c.hosts, c.nodes, c.links),
                (t.n_hosts as u64, t.n_nodes() as u64, t.links.len() as u64),
                "{text}"
            );
        }
        let huge: TopologyConfig = toml::from_str(
            "kind = \"fat_tree\"\nk = 100000\nhost_rate = \"10G\"\nfabric_rate = \"40G\"\nlink_delay = \"1us\"",
        )
        .unwrap();
        let e = huge.counts().unwrap_err().to_string();
        assert!(e.starts_with("topology: ") && e.contains("32-bit"), "{e}");
    }
}
