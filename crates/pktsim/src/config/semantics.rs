//! Whether the parts of a config belong together: what each protocol needs
//! from the network (queue disciplines at switches and hosts, load
//! balancing, header room, a reaction to switch notices) and what each
//! queue and refusal option needs from the protocol. Every rule is one row
//! of `PROTOCOLS` or `OPTIONS`; nothing else in pktsim decides whether
//! a combination is meaningful.
//!
//! A well-formed config that breaks a row runs with plausible-looking
//! numbers (ExpressPass on ECN queues has a mean slowdown of 1,226, on its
//! credit ports 2.26), so a mismatch is an error that names both fields and
//! what to use instead. A deliberate experiment opts out with
//! `[network] allow_mismatch = true`; the run then records the mismatches
//! it ran with in `summary.json`.

use super::paths::has_equal_cost_paths;
use super::Config;
use crate::net::queue::QueueConfig;
use crate::net::switch::Refusal;
use crate::net::topology::TopologySpec;
use crate::net::LoadBalancing;
use crate::transport::tcp::RankMarking;
use crate::transport::TransportConfig;

/// A queue discipline as the table names it (a rate limit is named by the
/// discipline inside it: the limit changes when packets leave, not which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    DropTail,
    Ecn,
    Priority,
    Pfabric,
    Codel,
    Aifo,
    Vertigo,
    CreditPort,
    /// A discipline registered from outside the library: no protocol's
    /// row names it, so it suits the rows that ask only "not a credit
    /// port" (and runs under the others with `allow_mismatch`).
    Custom,
}

impl Kind {
    fn of(q: &QueueConfig) -> Kind {
        match q {
            QueueConfig::DropTail => Kind::DropTail,
            QueueConfig::Ecn { .. } => Kind::Ecn,
            QueueConfig::Priority { .. } => Kind::Priority,
            QueueConfig::Pfabric => Kind::Pfabric,
            QueueConfig::Codel { .. } => Kind::Codel,
            QueueConfig::Aifo { .. } => Kind::Aifo,
            QueueConfig::Vertigo { .. } => Kind::Vertigo,
            QueueConfig::CreditPort { .. } => Kind::CreditPort,
            QueueConfig::RateLimited { inner, .. } => Kind::of(inner),
            QueueConfig::Custom { .. } => Kind::Custom,
        }
    }

    /// The `kind` as written in TOML.
    fn name(self) -> &'static str {
        match self {
            Kind::DropTail => "drop_tail",
            Kind::Ecn => "ecn",
            Kind::Priority => "priority",
            Kind::Pfabric => "pfabric",
            Kind::Codel => "codel",
            Kind::Aifo => "aifo",
            Kind::Vertigo => "vertigo",
            Kind::CreditPort => "credit_port",
            Kind::Custom => "custom",
        }
    }
}

/// Whether a queue marks ECN CE (an `ecn` queue, or a threshold given to
/// a priority, AIFO or Vertigo queue). A custom discipline is taken not
/// to: its config says nothing of marks.
fn marks_ecn(q: &QueueConfig) -> bool {
    match q {
        QueueConfig::Ecn { .. } => true,
        QueueConfig::Priority {
            k_packets, k_bytes, ..
        }
        | QueueConfig::Aifo {
            k_packets, k_bytes, ..
        }
        | QueueConfig::Vertigo { k_packets, k_bytes } => k_packets.is_some() || k_bytes.is_some(),
        QueueConfig::RateLimited { inner, .. } => marks_ecn(inner),
        _ => false,
    }
}

/// What a port queue must be for a protocol.
#[derive(Clone, Copy, Debug)]
enum QueueNeed {
    /// Anything but a credit port: credit ports drop non-ECT packets above
    /// two queued ones (FlashPass' selective dropping), and only the credit
    /// transports send ECT data.
    NotCredit,
    /// One of these disciplines; the text says what to write instead.
    OneOf(&'static [Kind], &'static str),
}

impl QueueNeed {
    /// `None` when `q` meets `row`'s need, else why not and what to use
    /// instead.
    fn unmet(self, q: &QueueConfig, row: &ProtocolNeeds) -> Option<(&'static str, &'static str)> {
        let k = Kind::of(q);
        match self {
            QueueNeed::NotCredit => (k == Kind::CreditPort).then_some((
                "credit_port queues drop every non-ECT packet above two queued ones, and only \
                 expresspass and flashpass send ECT data",
                // A protocol that needs marks is pointed at a marking queue.
                row.ecn_marks
                    .unwrap_or("a queue such as { kind = \"drop_tail\" }"),
            )),
            QueueNeed::OneOf(kinds, instead) => {
                (!kinds.contains(&k)).then_some((row.design, instead))
            }
        }
    }
}

/// What one protocol needs from the network.
#[derive(Debug)]
struct ProtocolNeeds {
    /// `transport.protocol`.
    protocol: &'static str,
    /// Why the protocol needs its queues, as a clause after "since" in
    /// errors.
    design: &'static str,
    /// `network.switch_queue`.
    switch_queue: QueueNeed,
    /// `network.host_queue`.
    host_queue: QueueNeed,
    /// ECN marks from the switches or the host NICs, and what to write
    /// for them.
    ecn_marks: Option<&'static str>,
    /// `network.load_balancing`, when the protocol needs one on a topology
    /// with a choice of equal-cost paths.
    load_balancing: Option<(LoadBalancing, &'static str)>,
    /// Whether the protocol acts on a switch's notice of a refused packet
    /// (`Transport::on_notice`): FastLane and `refusal = "notify_source"`
    /// are pointless, extra traffic, without it.
    acts_on_notices: bool,
    /// Largest `network.header_bytes` the protocol's fixed-size packets
    /// can carry.
    max_header_bytes: Option<(u32, &'static str)>,
}

impl ProtocolNeeds {
    /// A protocol that needs nothing special of the network: any queue
    /// but a credit port, no ECN marks, no load balancing, any header
    /// size, and it acts on notices. A row says only how its protocol
    /// differs.
    const fn plain(protocol: &'static str, design: &'static str) -> Self {
        ProtocolNeeds {
            protocol,
            design,
            switch_queue: QueueNeed::NotCredit,
            host_queue: QueueNeed::NotCredit,
            ecn_marks: None,
            load_balancing: None,
            acts_on_notices: true,
            max_header_bytes: None,
        }
    }

    /// A credit design: credit_port queues at switches and hosts, symmetric
    /// ECMP so that data take the path back of what released them
    /// (`path_back` says what), headers that fit an 84-byte credit, and no
    /// use for notices.
    const fn credit(protocol: &'static str, design: &'static str, path_back: &'static str) -> Self {
        ProtocolNeeds {
            switch_queue: QueueNeed::OneOf(&[Kind::CreditPort], CREDIT_QUEUE),
            host_queue: QueueNeed::OneOf(&[Kind::CreditPort], CREDIT_QUEUE),
            load_balancing: Some((LoadBalancing::SymmetricEcmp, path_back)),
            acts_on_notices: false,
            max_header_bytes: Some((CREDIT_BYTES, "an 84-byte credit")),
            ..ProtocolNeeds::plain(protocol, design)
        }
    }
}

const ECN_QUEUE: &str =
    "{ kind = \"ecn\", k_packets = 20 }, or k_packets on a priority, aifo or vertigo queue";
const CREDIT_QUEUE: &str = "{ kind = \"credit_port\" }";
/// The credit transports' credits are 84-byte frames (ExpressPass' minimum
/// Ethernet frame with preamble and gap): the header must fit in one.
const CREDIT_BYTES: u32 = 84;

/// The one table of protocol needs, a row per registered protocol (a
/// protocol without a row is refused, so a new one cannot skip this).
const PROTOCOLS: [ProtocolNeeds; 8] = [
    ProtocolNeeds::plain("tcp", "TCP NewReno needs nothing special of its queues"),
    ProtocolNeeds {
        ecn_marks: Some(ECN_QUEUE),
        ..ProtocolNeeds::plain("dctcp", "DCTCP reacts only to ECN marks, RFC 8257")
    },
    ProtocolNeeds::plain("cubic", "TCP CUBIC needs nothing special of its queues"),
    ProtocolNeeds {
        switch_queue: QueueNeed::OneOf(&[Kind::Pfabric], "{ kind = \"pfabric\" }"),
        ..ProtocolNeeds::plain(
            "pfabric",
            "pFabric's minimal rate control relies on switches that serve and drop by \
             remaining size",
        )
    },
    ProtocolNeeds {
        switch_queue: QueueNeed::OneOf(
            &[Kind::Pfabric, Kind::Priority],
            "{ kind = \"pfabric\" } or { kind = \"priority\", classes = 3 }",
        ),
        acts_on_notices: false,
        ..ProtocolNeeds::plain(
            "phost",
            "pHost relies on switches that send its tokens and RTS ahead of data",
        )
    },
    ProtocolNeeds {
        acts_on_notices: false,
        ..ProtocolNeeds::plain(
            "fastpass",
            "Fastpass' arbiter keeps queues short whatever they are",
        )
    },
    ProtocolNeeds::credit(
        "expresspass",
        "ExpressPass paces data by credits that credit_port queues rate-limit and drop",
        "data must take its credits' path back",
    ),
    ProtocolNeeds::credit(
        "flashpass",
        "FlashPass paces data by emulation packets that credit_port queues rate-limit \
         and drop",
        "data must take its emulation packets' path back",
    ),
];

/// What a queue or refusal option needs from the protocol.
#[derive(Debug)]
enum OptionNeed {
    /// A switch queue of this kind orders or admits packets by rank: the
    /// TCP family must write ranks (`transport.rank`), or every packet
    /// ties at rank 0 and the queue is a plain FIFO.
    RankedQueue(Kind),
    /// This refusal sends the source a notice that the protocol must act on.
    Notice(Refusal),
}

/// The one table of option needs.
const OPTIONS: [OptionNeed; 3] = [
    OptionNeed::RankedQueue(Kind::Aifo),
    OptionNeed::RankedQueue(Kind::Vertigo),
    OptionNeed::Notice(Refusal::NotifySource),
];

/// One broken rule: the field to blame (for `Error::Config`) and a message
/// that names the other field and what to use instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Dotted path of the field to change.
    pub field: String,
    /// What does not fit and what to use instead.
    pub msg: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.msg)
    }
}

fn mismatch(field: &str, msg: String) -> Mismatch {
    Mismatch {
        field: field.to_string(),
        msg,
    }
}

/// The serde name of a load-balancing mode.
fn lb_name(lb: LoadBalancing) -> String {
    toml::Value::try_from(lb)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{lb:?}"))
}

/// The serde name of a refusal behaviour.
fn refusal_name(r: Refusal) -> String {
    toml::Value::try_from(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{r:?}"))
}

/// The protocols that act on switch notices, from the table.
fn notice_protocols() -> String {
    let names: Vec<&str> = PROTOCOLS
        .iter()
        .filter(|r| r.acts_on_notices)
        .map(|r| r.protocol)
        .collect();
    names.join(", ")
}

/// The TCP family's rank marking, `None` for other protocols.
fn tcp_rank(t: &TransportConfig) -> Option<RankMarking> {
    t.tcp_settings().map(|c| c.rank)
}

/// Every rule of `PROTOCOLS` and `OPTIONS` that `cfg` breaks on its
/// built topology `topo`, in table order (empty: the parts belong
/// together). The caller refuses the first unless the config opts out.
pub fn mismatches(cfg: &Config, topo: &TopologySpec) -> Vec<Mismatch> {
    let n = &cfg.network;
    let proto = cfg.transport.name();
    let mut out = Vec::new();
    let Some(row) = PROTOCOLS.iter().find(|r| r.protocol == proto) else {
        out.push(mismatch(
            "transport.protocol",
            format!("{proto:?} has no row in pktsim's compatibility table (config/semantics.rs)"),
        ));
        return out;
    };
    let with = format!("transport.protocol = {proto:?}");
    for (field, q, need) in [
        ("network.switch_queue", &n.switch_queue, row.switch_queue),
        ("network.host_queue", &n.host_queue, row.host_queue),
    ] {
        if let Some((why, instead)) = need.unmet(q, row) {
            out.push(mismatch(
                field,
                format!(
                    "{:?} queues do not suit {with}, since {why}; use {instead}",
                    Kind::of(q).name(),
                ),
            ));
        }
    }
    if let Some(instead) = row.ecn_marks {
        if !marks_ecn(&n.switch_queue) && !marks_ecn(&n.host_queue) {
            out.push(mismatch(
                "network.switch_queue",
                format!(
                    "{:?} queues do not mark ECN, nor does network.host_queue, and {with} \
                     needs marks, since {}; use {instead}",
                    Kind::of(&n.switch_queue).name(),
                    row.design
                ),
            ));
        }
    }
    if let Some((lb, why)) = row.load_balancing {
        // Where every pair of hosts has one shortest path, every mode
        // takes it.
        if n.load_balancing != lb && has_equal_cost_paths(topo) {
            out.push(mismatch(
                "network.load_balancing",
                format!(
                    "{:?} does not suit {with}, since {why}; use {:?}",
                    lb_name(n.load_balancing),
                    lb_name(lb)
                ),
            ));
        }
    }
    if let Some((max, what)) = row.max_header_bytes {
        if n.header_bytes > max {
            out.push(mismatch(
                "network.header_bytes",
                format!(
                    "{} bytes do not fit in {what} of {with}; use at most {max}",
                    n.header_bytes
                ),
            ));
        }
    }
    if n.fastlane.is_some() && !row.acts_on_notices {
        out.push(mismatch(
            "network.fastlane",
            format!(
                "{with} ignores FastLane's notices (only {} act on them); \
                 leave [network.fastlane] out",
                notice_protocols()
            ),
        ));
    }
    out.extend(option_mismatches(cfg, row, &with));
    out
}

/// The rules of [`OPTIONS`] that `cfg` breaks, given its protocol's `row`
/// (`with` names the protocol in messages).
fn option_mismatches(cfg: &Config, row: &ProtocolNeeds, with: &str) -> Vec<Mismatch> {
    let n = &cfg.network;
    let mut out = Vec::new();
    for need in &OPTIONS {
        match need {
            OptionNeed::RankedQueue(kind) => {
                if Kind::of(&n.switch_queue) == *kind
                    && tcp_rank(&cfg.transport) == Some(RankMarking::None)
                {
                    out.push(mismatch(
                        "transport.rank",
                        format!(
                            "network.switch_queue = {:?} orders packets by rank, but {with} writes \
                             none; use rank = \"remaining_bytes\"",
                            kind.name()
                        ),
                    ));
                }
            }
            OptionNeed::Notice(refusal) => {
                if n.refusal == *refusal && !row.acts_on_notices {
                    out.push(mismatch(
                        "network.refusal",
                        format!(
                            "{:?} sends notices that {with} ignores (only {} act on them); \
                             use \"drop\"",
                            refusal_name(*refusal),
                            notice_protocols()
                        ),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(network: &str, transport: &str) -> Config {
        let src = format!(
            "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
             host_rate = \"10Gbps\"\nfabric_rate = \"40Gbps\"\nlink_delay = \"1us\"\n\
             [network]\n{network}\n[transport]\n{transport}\n\
             [[workload]]\nkind = \"static\"\npairs = [[0, 1]]\nsize = 1000\n"
        );
        Config::from_toml_str(&src, "<t>").expect("parses")
    }

    fn check(c: &Config) -> Vec<Mismatch> {
        mismatches(c, &c.topology.build().expect("builds"))
    }

    #[test]
    fn the_table_has_one_row_per_protocol() {
        for row in &PROTOCOLS {
            let c = cfg("", &format!("protocol = {:?}", row.protocol));
            assert_eq!(c.transport.name(), row.protocol);
        }
        let mut names: Vec<_> = PROTOCOLS.iter().map(|r| r.protocol).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PROTOCOLS.len());
    }

    #[test]
    fn each_protocol_on_its_own_network_has_no_mismatch() {
        for (network, transport) in [
            ("", "protocol = \"tcp\""),
            ("switch_queue = { kind = \"ecn\", k_packets = 20 }", "protocol = \"dctcp\""),
            ("switch_queue = { kind = \"pfabric\" }", "protocol = \"pfabric\""),
            ("switch_queue = { kind = \"pfabric\" }", "protocol = \"phost\""),
            (
                "switch_queue = { kind = \"credit_port\" }\nhost_queue = { kind = \"credit_port\" }\n\
                 load_balancing = \"symmetric_ecmp\"",
                "protocol = \"expresspass\"",
            ),
        ] {
            assert_eq!(check(&cfg(network, transport)), vec![], "{transport}");
        }
    }

    #[test]
    fn a_mismatch_names_both_fields_and_what_to_use() {
        let m = check(&cfg(
            "switch_queue = { kind = \"ecn\", k_packets = 20 }",
            "protocol = \"expresspass\"",
        ));
        let all: Vec<String> = m.iter().map(ToString::to_string).collect();
        assert!(
            all[0].starts_with(
                "network.switch_queue: \"ecn\" queues do not suit \
                 transport.protocol = \"expresspass\""
            ),
            "{all:?}"
        );
        assert!(all[0].contains("credit_port"), "{all:?}");
        // The host queue (the default priority NIC) and load balancing too.
        assert!(all.iter().any(|s| s.starts_with("network.host_queue")));
        assert!(all.iter().any(|s| s.starts_with("network.load_balancing")));
    }

    #[test]
    fn a_rate_limit_is_judged_by_the_queue_inside_it() {
        let inner = |k: &str| {
            format!(
                "switch_queue = {{ kind = \"rate_limited\", rate = \"1Gbps\", inner = {{ kind = \"{k}\" }} }}"
            )
        };
        assert!(check(&cfg(&inner("pfabric"), "protocol = \"pfabric\"")).is_empty());
        assert_eq!(
            check(&cfg(&inner("drop_tail"), "protocol = \"pfabric\""))[0].field,
            "network.switch_queue"
        );
    }
}
