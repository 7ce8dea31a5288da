//! `[[event]]`: scheduled failures and changes, resolved against the
//! topology into the network's fault plan ([`crate::net::fault`]).
//!
//! ```toml
//! [network]
//! failure_detection = "1ms"     # when routing reacts: "0" (default), a time, or "never"
//!
//! [[event]]
//! at = "10ms"
//! action = "down"               # down | up | rate | delay | loss | flap
//! link = ["leaf0", "spine1"]    # or links = [[a, b], ...], switch = "spine0",
//!                               # uplinks_of = "leaf3", links_of = "spine0"
//! ```
//!
//! `rate = "10Gbps"`, `delay = "5us"` and `loss = 0.01` (with an optional
//! `stream` name) go with their actions; `flap` takes `period`, `count` and
//! optionally `down_for` (half the period by default): down at
//! `at + k × period`, up `down_for` later, for k in 0..count. A link's two
//! directions change together; `one_way = true` changes only `a → b` of a
//! `link` (not for `down`/`up`/`flap`: a link fails both ways).

use super::trace::NodeRef;
use crate::engine::RngStreams;
use crate::error::{Error, Result};
use crate::net::fault::{loss_threshold, Detection, FaultPlan, FaultStep, LinkChange};
use crate::net::topology::{no_node_named, TopologySpec, MAX_LINK_DELAY};
use crate::packet::{NodeId, PortId};
use crate::time::{parse_duration, parse_rate, Duration, Time, MAX_DURATION};
use serde::{Deserialize, Serialize};

/// The most link changes the `[[event]]`s may expand to (a flap is two
/// per period): a plan is expanded before the run, so its size is bounded
/// before anything is allocated.
pub const MAX_EVENT_STEPS: usize = 1_000_000;

/// What an `[[event]]` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventAction {
    /// Fail the links or switches.
    Down,
    /// Recover them.
    Up,
    /// Set the links' rate (`rate`).
    Rate,
    /// Set the links' propagation delay (`delay`).
    Delay,
    /// Make the links lose packets with probability `loss` (0 restores).
    Loss,
    /// Down and up again `count` times, every `period`.
    Flap,
}

/// One `[[event]]` table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EventConfig {
    /// When, e.g. `"10ms"`.
    pub at: String,
    /// What happens.
    pub action: EventAction,
    /// One link, by its two ends (names or indices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<[NodeRef; 2]>,
    /// Several links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<[NodeRef; 2]>>,
    /// A switch: `down`/`up`/`flap` fail the switch itself (it drops all it
    /// holds); the other actions change every link of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<NodeRef>,
    /// Every link from this switch to a switch farther from the hosts
    /// (a leaf's links to the spines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplinks_of: Option<NodeRef>,
    /// Every link of this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links_of: Option<NodeRef>,
    /// Change only the `a → b` direction of `link` (rate, delay, loss).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_way: bool,
    /// The rate of `action = "rate"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The delay of `action = "delay"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// The loss probability of `action = "loss"`, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// The random stream's name for `loss` (default `"loss"`): links with
    /// the same stream and seed lose the same packet numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// A flap's period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// How long each flap is down (default half the period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_for: Option<String>,
    /// How many times a flap goes down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// What an event's target resolved to.
struct Target {
    /// Link directions.
    ports: Vec<PortId>,
    /// The switch a `switch =` names.
    switch: Option<NodeId>,
    /// In words.
    name: String,
}

/// Parse `[network] failure_detection`: `None` or `"0"` is instant.
pub fn detection(s: Option<&str>) -> Result<Detection> {
    let field = "network.failure_detection";
    match s.map(str::trim) {
        None => Ok(Detection::Instant),
        Some("never") => Ok(Detection::Never),
        Some("0") => Ok(Detection::Instant),
        Some(s) => {
            let d = parse_duration(s).map_err(|e| {
                Error::config(
                    field,
                    format!("{e} (give a time such as \"1ms\", or \"never\")"),
                )
            })?;
            Ok(if d.ps() == 0 {
                Detection::Instant
            } else {
                Detection::After(d)
            })
        }
    }
}

/// Resolve `events` against `topo` into the run's fault plan (`None`
/// without events). `seed` keys the loss streams.
pub fn plan(
    events: &[EventConfig],
    detection: Detection,
    topo: &TopologySpec,
    seed: u64,
) -> Result<Option<FaultPlan>> {
    if events.is_empty() {
        return Ok(None);
    }
    let mut steps = Vec::new();
    for (i, e) in events.iter().enumerate() {
        e.steps(i, topo, seed, &mut steps)?;
    }
    // By time, the file's order within an instant (a stable sort).
    steps.sort_by_key(|s: &FaultStep| s.at);
    Ok(Some(FaultPlan { steps, detection }))
}

impl EventConfig {
    /// This event's steps, appended to `out`.
    fn steps(
        &self,
        i: usize,
        topo: &TopologySpec,
        seed: u64,
        out: &mut Vec<FaultStep>,
    ) -> Result<()> {
        let field = |f: &str| format!("event[{i}].{f}");
        let at = time(&self.at, &field("at"))?;
        let target = self.target(i, topo)?;
        let fails = matches!(
            self.action,
            EventAction::Down | EventAction::Up | EventAction::Flap
        );
        if fails && self.one_way {
            return Err(Error::config(
                field("one_way"),
                "a link goes down and up both ways; one_way is for rate, delay and loss",
            ));
        }
        let (switches, ports) = match (fails, target.switch) {
            (true, Some(s)) => (vec![s], Vec::new()),
            _ => (Vec::new(), target.ports.clone()),
        };
        let step = |at: Time, change: LinkChange, what: String| FaultStep {
            at,
            ports: ports.clone(),
            switches: switches.clone(),
            change,
            what,
        };
        let on = &target.name;
        match self.action {
            EventAction::Down => out.push(step(at, LinkChange::Down, format!("down {on}"))),
            EventAction::Up => out.push(step(at, LinkChange::Up, format!("up {on}"))),
            EventAction::Rate => {
                let s = self.needs(&self.rate, i, "rate", "a rate such as \"10Gbps\"")?;
                let r = parse_rate(s).map_err(|e| Error::config(field("rate"), e))?;
                out.push(step(at, LinkChange::Rate(r), format!("rate {s} on {on}")));
            }
            EventAction::Delay => {
                let s = self.needs(&self.delay, i, "delay", "a time such as \"5us\"")?;
                let d = time(s, &field("delay"))?.since(Time::ZERO);
                // The same bound as a link's delay in [topology].
                if d > MAX_LINK_DELAY {
                    return Err(Error::config(
                        field("delay"),
                        format!("{s:?} is longer than the 10 s pktsim accepts for one link"),
                    ));
                }
                out.push(step(at, LinkChange::Delay(d), format!("delay {s} on {on}")));
            }
            EventAction::Loss => {
                let p = *self.needs(&self.loss, i, "loss", "a probability in [0, 1]")?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(Error::config(
                        field("loss"),
                        format!("{p} is not in [0, 1]"),
                    ));
                }
                let name = self.stream.as_deref().unwrap_or("loss");
                let stream = RngStreams::new(seed).stream(name, 0).next_u64();
                let change = LinkChange::Loss {
                    threshold: loss_threshold(p),
                    stream,
                };
                out.push(step(at, change, format!("loss {p} on {on}")));
            }
            EventAction::Flap => {
                let period = self.needs(&self.period, i, "period", "a time such as \"1ms\"")?;
                let period = time(period, &field("period"))?.since(Time::ZERO);
                let count = *self.needs(&self.count, i, "count", "how many times it goes down")?;
                let down_for = match &self.down_for {
                    Some(s) => time(s, &field("down_for"))?.since(Time::ZERO),
                    None => Duration::from_ps(period.ps() / 2),
                };
                if down_for.ps() == 0 || down_for >= period {
                    return Err(Error::config(
                        field("down_for"),
                        "must be above 0 and below the period",
                    ));
                }
                // Checked before a step is made: a huge count must be a
                // clean refusal, not billions of steps allocated one by one.
                if count == 0 {
                    return Err(Error::config(
                        field("count"),
                        "must be at least 1 (a flap with count = 0 never goes down)",
                    ));
                }
                let steps = 2 * count as usize;
                if out.len() + steps > MAX_EVENT_STEPS {
                    return Err(Error::config(
                        field("count"),
                        format!(
                            "{count} flaps make {steps} link changes; the events may make at most \
                             {MAX_EVENT_STEPS} in all"
                        ),
                    ));
                }
                let last_up = period
                    .ps()
                    .checked_mul(count as u64 - 1)
                    .and_then(|d| d.checked_add(at.since(Time::ZERO).ps()))
                    .and_then(|d| d.checked_add(down_for.ps()));
                if last_up.is_none_or(|ps| Duration::from_ps(ps) > MAX_DURATION) {
                    return Err(Error::config(
                        field("count"),
                        "the flaps run past the clock's end",
                    ));
                }
                out.reserve(steps);
                for k in 0..count as u64 {
                    let down = at + Duration::from_ps(period.ps() * k);
                    let up = down + down_for;
                    out.push(step(
                        down,
                        LinkChange::Down,
                        format!("down {on} (flap {})", k + 1),
                    ));
                    out.push(step(
                        up,
                        LinkChange::Up,
                        format!("up {on} (flap {})", k + 1),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The value `v` of field `name` the action needs, or an error.
    fn needs<'a, V>(&self, v: &'a Option<V>, i: usize, name: &str, what: &str) -> Result<&'a V> {
        v.as_ref().ok_or_else(|| {
            Error::config(
                format!("event[{i}].{name}"),
                format!("action = \"{}\" needs {name} ({what})", self.action_name()),
            )
        })
    }

    fn action_name(&self) -> &'static str {
        match self.action {
            EventAction::Down => "down",
            EventAction::Up => "up",
            EventAction::Rate => "rate",
            EventAction::Delay => "delay",
            EventAction::Loss => "loss",
            EventAction::Flap => "flap",
        }
    }

    /// The links (or switch) this event names: exactly one of `link`,
    /// `links`, `switch`, `uplinks_of`, `links_of`.
    fn target(&self, i: usize, topo: &TopologySpec) -> Result<Target> {
        let given = [
            self.link.is_some(),
            self.links.is_some(),
            self.switch.is_some(),
            self.uplinks_of.is_some(),
            self.links_of.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(Error::config(
                format!("event[{i}]"),
                "name exactly one of link, links, switch, uplinks_of, links_of",
            ));
        }
        let node = |r: &NodeRef, f: &str| node(r, topo, &format!("event[{i}].{f}"));
        if let Some([a, b]) = &self.link {
            let (a, b) = (node(a, "link")?, node(b, "link")?);
            let ports = link_ports(topo, a, b, self.one_way, &format!("event[{i}].link"))?;
            let name = format!("link {}-{}", topo.names[a.idx()], topo.names[b.idx()]);
            return Ok(Target {
                ports,
                switch: None,
                name,
            });
        }
        if let Some(links) = &self.links {
            if links.is_empty() {
                return Err(Error::config(
                    format!("event[{i}].links"),
                    "is empty: the event would change nothing; name at least one link",
                ));
            }
            let mut ports = Vec::new();
            for (j, [a, b]) in links.iter().enumerate() {
                let f = format!("links[{j}]");
                let (a, b) = (node(a, &f)?, node(b, &f)?);
                ports.extend(link_ports(topo, a, b, false, &format!("event[{i}].{f}"))?);
            }
            let name = format!("{} links", links.len());
            return Ok(Target {
                ports,
                switch: None,
                name,
            });
        }
        let (r, f) = match (&self.switch, &self.uplinks_of, &self.links_of) {
            (Some(r), _, _) => (r, "switch"),
            (_, Some(r), _) => (r, "uplinks_of"),
            (_, _, Some(r)) => (r, "links_of"),
            _ => unreachable!("one target is given"),
        };
        let n = node(r, f)?;
        let name = &topo.names[n.idx()];
        if f != "links_of" && n.0 < topo.n_hosts {
            return Err(Error::config(
                format!("event[{i}].{f}"),
                format!("{name} is a host; name a switch (or use links_of)"),
            ));
        }
        let up = f == "uplinks_of";
        let far = up.then(|| distance_from_hosts(topo));
        let ports: Vec<PortId> = topo
            .links
            .iter()
            .enumerate()
            .filter_map(|(k, l)| {
                let other = if l.a == n {
                    l.b
                } else if l.b == n {
                    l.a
                } else {
                    return None;
                };
                match &far {
                    Some(d) if d[other.idx()] <= d[n.idx()] => None,
                    _ => Some([PortId(2 * k as u32), PortId(2 * k as u32 + 1)]),
                }
            })
            .flatten()
            .collect();
        if ports.is_empty() {
            return Err(Error::config(
                format!("event[{i}].{f}"),
                format!("{name} has no {}", if up { "uplinks" } else { "links" }),
            ));
        }
        let name = match f {
            "switch" => format!("switch {name}"),
            "uplinks_of" => format!("uplinks of {name}"),
            _ => format!("links of {name}"),
        };
        let switch = (f == "switch").then_some(n);
        Ok(Target {
            ports,
            switch,
            name,
        })
    }
}

/// A time field: a duration from the start, within the clock's range.
fn time(s: &str, field: &str) -> Result<Time> {
    let d = parse_duration(s).map_err(|e| Error::config(field, e))?;
    if d > MAX_DURATION {
        return Err(Error::config(field, "beyond the clock's range"));
    }
    Ok(Time::ZERO + d)
}

/// A node by index or name.
fn node(r: &NodeRef, topo: &TopologySpec, field: &str) -> Result<NodeId> {
    let n = topo.n_nodes();
    match r {
        NodeRef::Index(i) if (*i as usize) < n => Ok(NodeId(*i)),
        NodeRef::Index(i) => Err(Error::config(
            field,
            format!("node {i} does not exist (the topology has {n} nodes)"),
        )),
        NodeRef::Name(s) => topo
            .names
            .iter()
            .position(|x| x == s)
            .map(|i| NodeId(i as u32))
            .ok_or_else(|| Error::config(field, no_node_named(s, &topo.names))),
    }
}

/// The ports of every link between `a` and `b` (the `a → b` direction
/// only if `one_way`): link `k`'s ports are `2k` (its `a` to its `b`) and
/// `2k + 1`, as the network builds them.
fn link_ports(
    topo: &TopologySpec,
    a: NodeId,
    b: NodeId,
    one_way: bool,
    field: &str,
) -> Result<Vec<PortId>> {
    let mut out = Vec::new();
    for (k, l) in topo.links.iter().enumerate() {
        let (fwd, rev) = (PortId(2 * k as u32), PortId(2 * k as u32 + 1));
        if (l.a, l.b) == (a, b) {
            out.push(fwd);
            if !one_way {
                out.push(rev);
            }
        } else if (l.a, l.b) == (b, a) {
            out.push(rev);
            if !one_way {
                out.push(fwd);
            }
        }
    }
    if out.is_empty() {
        return Err(Error::config(
            field,
            format!(
                "no link between {} and {}",
                topo.names[a.idx()],
                topo.names[b.idx()]
            ),
        ));
    }
    Ok(out)
}

/// Each node's fewest links to a host (hosts 0).
fn distance_from_hosts(topo: &TopologySpec) -> Vec<u32> {
    let n = topo.n_nodes();
    let mut adj = vec![Vec::new(); n];
    for l in &topo.links {
        adj[l.a.idx()].push(l.b.idx());
        adj[l.b.idx()].push(l.a.idx());
    }
    let mut dist = vec![u32::MAX; n];
    let mut queue: std::collections::VecDeque<usize> = (0..topo.n_hosts as usize).collect();
    for &h in &queue {
        dist[h] = 0;
    }
    while let Some(u) = queue.pop_front() {
        for &v in &adj[u] {
            if dist[v] == u32::MAX {
                dist[v] = dist[u] + 1;
                queue.push_back(v);
            }
        }
    }
    dist
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::leaf_spine;
    use crate::time::Rate;

    /// 2 leaves × 2 hosts, 2 spines.
    fn topo() -> TopologySpec {
        let r = Rate::gbps(10);
        leaf_spine(2, 2, 2, r, r, Duration::from_ns(500)).expect("leaf-spine")
    }

    fn events(toml: &str) -> Vec<EventConfig> {
        #[derive(Deserialize)]
        struct F {
            event: Vec<EventConfig>,
        }
        toml::from_str::<F>(toml).expect("toml").event
    }

    fn plan_of(toml: &str) -> Result<FaultPlan> {
        plan(&events(toml), Detection::Instant, &topo(), 1).map(|p| p.expect("a plan"))
    }

    #[test]
    fn a_link_by_names_is_both_its_ports_and_a_switch_is_the_switch() {
        let t = topo();
        let leaf = &t.names[t.n_hosts as usize];
        let spine = &t.names[t.n_nodes() - 1];
        let p = plan_of(&format!(
            "[[event]]\nat = \"1ms\"\naction = \"down\"\nlink = [\"{leaf}\", \"{spine}\"]\n\
             [[event]]\nat = \"0.5ms\"\naction = \"down\"\nswitch = \"{spine}\"\n"
        ))
        .unwrap();
        // Sorted by time.
        assert_eq!(p.steps[0].switches.len(), 1);
        assert!(p.steps[0].ports.is_empty());
        assert_eq!(p.steps[0].what, format!("down switch {spine}"));
        let ports = &p.steps[1].ports;
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].0 ^ 1, ports[1].0, "the two directions of one link");
        assert_eq!(p.steps[1].at, Time::ZERO + Duration::from_ms(1));
    }

    #[test]
    fn uplinks_of_a_leaf_are_its_links_to_the_spines() {
        let t = topo();
        let leaf = &t.names[t.n_hosts as usize];
        let p = plan_of(&format!(
            "[[event]]\nat = \"1ms\"\naction = \"loss\"\nloss = 0.01\nuplinks_of = \"{leaf}\"\n"
        ))
        .unwrap();
        // Two spines, two directions each; not the links down to hosts.
        assert_eq!(p.steps[0].ports.len(), 4);
        for port in &p.steps[0].ports {
            let l = &t.links[port.idx() / 2];
            assert!(l.a.0 >= t.n_hosts && l.b.0 >= t.n_hosts, "{l:?}");
        }
    }

    #[test]
    fn a_flap_is_its_downs_and_ups_at_exact_times() {
        let p = plan_of(
            "[[event]]\nat = \"1ms\"\naction = \"flap\"\nlink = [0, 4]\nperiod = \"2ms\"\n\
             count = 3\ndown_for = \"0.5ms\"\n",
        )
        .unwrap();
        let times: Vec<(u64, LinkChange)> = p
            .steps
            .iter()
            .map(|s| (s.at.ps() / 1_000_000, s.change))
            .collect();
        use LinkChange::{Down, Up};
        assert_eq!(
            times,
            vec![
                (1000, Down),
                (1500, Up),
                (3000, Down),
                (3500, Up),
                (5000, Down),
                (5500, Up)
            ]
        );
    }

    #[test]
    fn a_flap_count_is_bounded_before_any_step_is_made() {
        let flap = |count: u64, period: &str| {
            plan_of(&format!(
                "[[event]]\nat = \"1ms\"\naction = \"flap\"\nlink = [0, 4]\n\
                 period = \"{period}\"\ncount = {count}\n"
            ))
        };
        // u32::MAX flaps would be 8.6 billion steps: refused at once.
        let e = flap(u32::MAX as u64, "1ns").unwrap_err().to_string();
        assert!(
            e.starts_with("event[0].count: 4294967295 flaps make 8589934590 link changes"),
            "{e}"
        );
        // A count that fits the step bound but not the clock.
        let e = flap(400_000, "1000s").unwrap_err().to_string();
        assert!(e.contains("past the clock's end"), "{e}");
        let e = flap(0, "1ms").unwrap_err().to_string();
        assert!(e.starts_with("event[0].count: must be at least 1"), "{e}");
        // The bound itself is allowed.
        let most = (MAX_EVENT_STEPS / 2) as u64;
        assert_eq!(flap(most, "1us").unwrap().steps.len(), MAX_EVENT_STEPS);
        assert!(flap(most + 1, "1us").is_err());
    }

    #[test]
    fn bad_events_are_errors_that_name_the_field() {
        let cases = [
            ("at = \"1ms\"\naction = \"down\"\nlink = [\"h0\", \"nope\"]", "event[0].link: no node is named"),
            ("at = \"1ms\"\naction = \"down\"\nlink = [0, 1]", "event[0].link: no link between"),
            ("at = \"1ms\"\naction = \"rate\"\nlink = [0, 4]", "event[0].rate: action = \"rate\" needs rate"),
            ("at = \"1ms\"\naction = \"loss\"\nloss = 1.5\nlink = [0, 4]", "event[0].loss: 1.5 is not in [0, 1]"),
            ("at = \"1ms\"\naction = \"down\"", "event[0]: name exactly one of"),
            ("at = \"1ms\"\naction = \"down\"\nswitch = 0", "is a host"),
            ("at = \"1ms\"\naction = \"down\"\none_way = true\nlink = [0, 4]", "event[0].one_way"),
            ("at = \"soon\"\naction = \"down\"\nlink = [0, 4]", "event[0].at"),
            ("at = \"1ms\"\naction = \"flap\"\nperiod = \"1ms\"\ncount = 2\ndown_for = \"1ms\"\nlink = [0, 4]", "event[0].down_for"),
            ("at = \"1ms\"\naction = \"down\"\nlinks = []", "event[0].links: is empty"),
            ("at = \"1ms\"\naction = \"delay\"\ndelay = \"100s\"\nlink = [0, 4]", "event[0].delay: \"100s\" is longer than the 10 s"),
        ];
        for (body, want) in cases {
            let e = plan_of(&format!("[[event]]\n{body}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
        assert_eq!(detection(Some("never")).unwrap(), Detection::Never);
        assert_eq!(detection(Some("0")).unwrap(), Detection::Instant);
        assert_eq!(
            detection(Some("2us")).unwrap(),
            Detection::After(Duration::from_us(2))
        );
        assert!(detection(Some("later")).is_err());
    }
}
