//! Configs that are well-formed but wrong or absurd: each is refused with
//! an error that names the field (or fields) to change, before anything
//! runs. One table; every row also proves the check can fail, since the
//! unedited base config validates.

use pktsim::config::Config;
use std::path::Path;

/// A valid leaf-spine (2 × 2 leaves, 4 hosts each) DCTCP run.
const BASE: &str = r#"seed = 1
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us"
[network]
switch_queue = { kind = "ecn", k_packets = 20 }
[transport]
protocol = "dctcp"
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 50
"#;

const LEAF_SPINE: &str = r#"kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us""#;

const CREDIT_NETWORK: &str = r#"switch_queue = { kind = "credit_port" }
host_queue = { kind = "credit_port" }
load_balancing = "symmetric_ecmp""#;

const ECN: &str = r#"switch_queue = { kind = "ecn", k_packets = 20 }"#;

/// `BASE` with each `(from, to)` replaced; `from` must be there, so a
/// typo cannot turn a case into the valid base config.
pub fn edited(edits: &[(&str, &str)]) -> String {
    let mut s = BASE.to_string();
    for (from, to) in edits {
        assert!(s.contains(from), "{from:?} not in the config:\n{s}");
        s = s.replacen(from, to, 1);
    }
    s
}

/// Parse and prepare; the error as one line, or `None` when valid.
pub fn check(toml: &str) -> Option<String> {
    Config::from_toml_str(toml, "<t>")
        .and_then(|c| c.prepare(Path::new(env!("CARGO_MANIFEST_DIR"))))
        .err()
        .map(|e| e.to_string())
}

/// One wrong config: what it is, its edits of `BASE`, and what the error
/// must name.
pub struct Wrong {
    /// What is wrong, for failure messages.
    pub what: &'static str,
    /// Edits of [`BASE`].
    pub edits: Vec<(&'static str, &'static str)>,
    /// Field names (and other words) the error must contain.
    pub names: Vec<&'static str>,
}

fn wrong(
    what: &'static str,
    edits: &[(&'static str, &'static str)],
    names: &[&'static str],
) -> Wrong {
    Wrong {
        what,
        edits: edits.to_vec(),
        names: names.to_vec(),
    }
}

/// Every wrong config of the table.
pub fn table() -> Vec<Wrong> {
    let net = "[network]\n";
    vec![
        // Protocol and network that do not belong together.
        wrong(
            "ExpressPass on ECN queues",
            &[("protocol = \"dctcp\"", "protocol = \"expresspass\"")],
            &["network.switch_queue", "transport.protocol", "credit_port"],
        ),
        wrong(
            "pFabric on plain FIFO queues",
            &[
                (ECN, "switch_queue = { kind = \"drop_tail\" }"),
                ("protocol = \"dctcp\"", "protocol = \"pfabric\""),
            ],
            &["network.switch_queue", "transport.protocol", "pfabric"],
        ),
        wrong(
            "credit_port queues under DCTCP",
            &[(ECN, CREDIT_NETWORK)],
            &["network.switch_queue", "transport.protocol", "\"ecn\""],
        ),
        wrong(
            "credit_port host queues under TCP",
            &[
                ("protocol = \"dctcp\"", "protocol = \"tcp\""),
                (net, "[network]\nhost_queue = { kind = \"credit_port\" }\n"),
            ],
            &["network.host_queue", "transport.protocol"],
        ),
        wrong(
            "CUBIC on credit_port switches",
            &[
                ("protocol = \"dctcp\"", "protocol = \"cubic\""),
                (ECN, "switch_queue = { kind = \"credit_port\" }"),
            ],
            &["network.switch_queue", "transport.protocol"],
        ),
        wrong(
            "DCTCP on queues that never mark",
            &[(ECN, "switch_queue = { kind = \"drop_tail\" }")],
            &["network.switch_queue", "transport.protocol", "k_packets"],
        ),
        wrong(
            "DCTCP on an AIFO queue without a marking threshold",
            &[(ECN, "switch_queue = { kind = \"aifo\" }")],
            &["network.switch_queue", "transport.protocol"],
        ),
        wrong(
            "DCTCP on Vertigo queues without ranks",
            &[(ECN, "switch_queue = { kind = \"vertigo\", k_packets = 20 }")],
            &["transport.rank", "network.switch_queue", "remaining_bytes"],
        ),
        wrong(
            "pHost on ECN queues",
            &[("protocol = \"dctcp\"", "protocol = \"phost\"")],
            &["network.switch_queue", "transport.protocol"],
        ),
        wrong(
            "pFabric on a rate limit around a FIFO",
            &[
                (
                    ECN,
                    "switch_queue = { kind = \"rate_limited\", rate = \"5Gbps\", inner = { kind = \"drop_tail\" } }",
                ),
                ("protocol = \"dctcp\"", "protocol = \"pfabric\""),
            ],
            &["network.switch_queue", "transport.protocol"],
        ),
        wrong(
            "FlashPass on priority queues",
            &[
                (ECN, "switch_queue = { kind = \"priority\", classes = 2 }"),
                ("protocol = \"dctcp\"", "protocol = \"flashpass\""),
            ],
            &["network.switch_queue", "transport.protocol"],
        ),
        wrong(
            "ExpressPass with plain ECMP",
            &[
                (ECN, "switch_queue = { kind = \"credit_port\" }\nhost_queue = { kind = \"credit_port\" }"),
                ("protocol = \"dctcp\"", "protocol = \"expresspass\""),
            ],
            &["network.load_balancing", "transport.protocol", "symmetric_ecmp"],
        ),
        wrong(
            "ExpressPass with a priority host NIC",
            &[
                (ECN, "switch_queue = { kind = \"credit_port\" }\nload_balancing = \"symmetric_ecmp\""),
                ("protocol = \"dctcp\"", "protocol = \"expresspass\""),
            ],
            &["network.host_queue", "transport.protocol"],
        ),
        wrong(
            "ExpressPass headers larger than its credits",
            &[
                (ECN, CREDIT_NETWORK),
                (net, "[network]\nheader_bytes = 100\n"),
                ("protocol = \"dctcp\"", "protocol = \"expresspass\""),
            ],
            &["network.header_bytes", "transport.protocol", "84"],
        ),
        wrong(
            "FastLane under pHost, which ignores notices",
            &[
                (ECN, "switch_queue = { kind = \"pfabric\" }\n[network.fastlane]"),
                ("protocol = \"dctcp\"", "protocol = \"phost\""),
            ],
            &["network.fastlane", "transport.protocol"],
        ),
        wrong(
            "notify_source under Fastpass, which ignores notices",
            &[
                (net, "[network]\nrefusal = \"notify_source\"\n"),
                ("protocol = \"dctcp\"", "protocol = \"fastpass\""),
            ],
            &["network.refusal", "transport.protocol"],
        ),
        wrong(
            "FastLane with a refusal of its own",
            &[(ECN, "switch_queue = { kind = \"ecn\", k_packets = 20 }\nrefusal = \"deflect\"\n[network.fastlane]")],
            &["network.fastlane", "refusal"],
        ),
        // Hop limits below the topology's paths.
        wrong(
            "hop_limit = 2 on a leaf-spine",
            &[(net, "[network]\nhop_limit = 2\n")],
            &["network.hop_limit", "4 links"],
        ),
        wrong(
            "hop_limit = 5 on a k = 4 fat tree",
            &[
                (
                    LEAF_SPINE,
                    "kind = \"fat_tree\"\nk = 4\nhost_rate = \"10Gbps\"\nfabric_rate = \"10Gbps\"\nlink_delay = \"1us\"",
                ),
                (net, "[network]\nhop_limit = 5\n"),
            ],
            &["network.hop_limit", "6 links"],
        ),
        wrong(
            "hop_limit = 1",
            &[(net, "[network]\nhop_limit = 1\n")],
            &["network.hop_limit"],
        ),
        // Timers.
        wrong(
            "initial_rto = 1ps",
            &[("protocol = \"dctcp\"", "protocol = \"dctcp\"\ninitial_rto = \"1ps\"")],
            &["transport.initial_rto", "1us"],
        ),
        wrong(
            "an initial RTO below the minimum",
            &[(
                "protocol = \"dctcp\"",
                "protocol = \"dctcp\"\ninitial_rto = \"100us\"\nmin_rto = \"200us\"",
            )],
            &["transport.initial_rto", "transport.min_rto"],
        ),
        wrong(
            "an initial RTO above the maximum",
            &[(
                "protocol = \"dctcp\"",
                "protocol = \"dctcp\"\ninitial_rto = \"2s\"\nmax_rto = \"1s\"",
            )],
            &["transport.initial_rto", "transport.max_rto"],
        ),
        wrong(
            "a maximum RTO below the minimum",
            &[(
                "protocol = \"dctcp\"",
                "protocol = \"dctcp\"\nmin_rto = \"10ms\"\nmax_rto = \"1ms\"\ninitial_rto = \"5ms\"",
            )],
            &["transport.max_rto", "transport.min_rto"],
        ),
        wrong(
            "min_rto = 1ns",
            &[("protocol = \"dctcp\"", "protocol = \"dctcp\"\nmin_rto = \"1ns\"")],
            &["transport.min_rto"],
        ),
        wrong(
            "a pFabric RTO of 1 ps",
            &[
                (ECN, "switch_queue = { kind = \"pfabric\" }"),
                ("protocol = \"dctcp\"", "protocol = \"pfabric\"\nrto = \"1ps\""),
            ],
            &["transport.rto"],
        ),
        wrong(
            "an ExpressPass RTO of 10 ns",
            &[
                (ECN, CREDIT_NETWORK),
                ("protocol = \"dctcp\"", "protocol = \"expresspass\"\nrto = \"10ns\""),
            ],
            &["transport.rto"],
        ),
        wrong(
            "a Fastpass retransmission timeout of 1 ps",
            &[("protocol = \"dctcp\"", "protocol = \"fastpass\"\nretx_timeout = \"1ps\"")],
            &["transport.retx_timeout"],
        ),
        // Packets and buffers.
        wrong(
            "an MSS larger than the switch buffer",
            &[(net, "[network]\nmss = 9000\nswitch_buffer_bytes = 5000\n")],
            &["network.switch_buffer_bytes", "network.mss"],
        ),
        wrong(
            "a host buffer smaller than a packet",
            &[(net, "[network]\nhost_buffer_bytes = 1000\n")],
            &["network.host_buffer_bytes", "network.mss"],
        ),
        wrong(
            "switch_buffer_bytes and shared_buffer both given",
            &[(
                net,
                "[network]\nswitch_buffer_bytes = 100000\nshared_buffer = { bytes = 1000000, alpha = 1.0 }\n",
            )],
            &["network.switch_buffer_bytes", "network.shared_buffer"],
        ),
        wrong(
            "a shared buffer smaller than a packet",
            &[(net, "[network]\nshared_buffer = { bytes = 1000, alpha = 1.0 }\n")],
            &["network.shared_buffer.bytes"],
        ),
        wrong(
            "a shared-buffer alpha that admits no packet",
            &[(net, "[network]\nshared_buffer = { bytes = 200000, alpha = 0.001 }\n")],
            &["network.shared_buffer.alpha"],
        ),
        wrong(
            "a bottleneck buffer smaller than a packet",
            &[(
                LEAF_SPINE,
                "kind = \"dumbbell\"\nsenders = 4\nreceivers = 4\nhost_rate = \"10Gbps\"\n\
                 host_delay = \"1us\"\nbottleneck_rate = \"10Gbps\"\nbottleneck_delay = \"1us\"\n\
                 bottleneck_buffer_bytes = 100",
            )],
            &["topology.bottleneck_buffer_bytes"],
        ),
        wrong(
            "an explicit link buffer smaller than a packet",
            &[(
                LEAF_SPINE,
                "kind = \"explicit\"\nhosts = [\"a\", \"b\"]\nswitches = [\"s\"]\nlinks = [\n\
                 { a = \"a\", b = \"s\", rate = \"10Gbps\", delay = \"1us\" },\n\
                 { a = \"s\", b = \"b\", rate = \"10Gbps\", delay = \"1us\", buffer_bytes = 10 },\n]",
            )],
            &["topology.links[1].buffer_bytes"],
        ),
        wrong(
            "a header of 0 bytes",
            &[(net, "[network]\nheader_bytes = 0\n")],
            &["network.header_bytes"],
        ),
        wrong(
            "an MSS beyond the largest IP packet",
            &[(net, "[network]\nmss = 70000\nswitch_buffer_bytes = 1000000\n")],
            &["network.mss"],
        ),
        wrong(
            "an MSS of 0",
            &[(net, "[network]\nmss = 0\n")],
            &["network.mss"],
        ),
        // The clock's range and fields that name it.
        wrong(
            "a time limit of 200 days",
            &[("flows = 50", "flows = 50\n[run]\ntime_limit = \"17280000s\"")],
            &["run.time_limit", "106 days"],
        ),
        wrong(
            "a workload starting after 200 days",
            &[("flows = 50", "flows = 50\nstart = \"17280000s\"")],
            &["workload[0].start"],
        ),
        wrong(
            "a static flow that cannot finish in the time range",
            &[
                ("host_rate = \"10Gbps\"", "host_rate = \"1kbps\""),
                (
                    "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50",
                    "kind = \"static\"\npairs = [[0, 7]]\nsize = 10000000000\nstart = \"8640000s\"",
                ),
            ],
            &["workload[0].size", "slowest link", "106 days"],
        ),
        wrong(
            "a CSV flow starting at 1e20 ns",
            &[(
                "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50",
                "kind = \"csv\"\nfile = \"tests/data/start_1e20.csv\"",
            )],
            &["start_1e20.csv:3:", "column 4 (start_ns)", "106 days"],
        ),
        wrong(
            "a seed above 2^63 - 1",
            &[("seed = 1", "seed = 18446744073709551615")],
            &["<t>:1:", "seed"],
        ),
        wrong(
            "an integer above 2^63 - 1 in the second workload",
            &[(
                "flows = 50",
                "flows = 50\n[[workload]]\nkind = \"static\"\npairs = [[0, 1]]\n\
                 size = 99999999999999999999",
            )],
            &["<t>:22:", "workload[1].size", "2^63 - 1"],
        ),
        wrong(
            "an event limit of 0",
            &[("flows = 50", "flows = 50\n[run]\nevent_limit = 0")],
            &["run.event_limit"],
        ),
        // Absurd traffic.
        wrong(
            "a load above 1",
            &[("load = 0.5", "load = 1.5")],
            &["workload[0].load"],
        ),
        wrong(
            "a load of 0",
            &[("load = 0.5", "load = 0.0")],
            &["workload[0].load"],
        ),
        wrong(
            "a negative load",
            &[("load = 0.5", "load = -0.5")],
            &["workload[0].load"],
        ),
        wrong(
            "zero flows",
            &[("flows = 50", "flows = 0")],
            &["workload[0].flows"],
        ),
        wrong(
            "an empty CDF",
            &[("cdf = \"websearch\"", "cdf = \"tests/data/empty.cdf\"")],
            &["empty.cdf"],
        ),
        wrong(
            "more incast senders than hosts",
            &[(
                "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50",
                "kind = \"incast\"\nsenders = 100\nsize = 10000\nqueries = 2\ninterval = \"1ms\"",
            )],
            &["workload[0].senders"],
        ),
        wrong(
            "a zero host rate",
            &[("host_rate = \"10Gbps\"", "host_rate = \"0Gbps\"")],
            &["topology.host_rate"],
        ),
        wrong(
            "a zero fabric rate",
            &[("fabric_rate = \"40Gbps\"", "fabric_rate = \"0bps\"")],
            &["topology.fabric_rate"],
        ),
        wrong(
            "no spines",
            &[("spines = 2", "spines = 0")],
            &["topology.spines"],
        ),
        wrong(
            "a static flow to a host that does not exist",
            &[(
                "kind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 50",
                "kind = \"static\"\npairs = [[0, 99]]\nsize = 1000",
            )],
            &["workload[0].pairs"],
        ),
        wrong(
            "a queue sample interval of 0",
            &[("flows = 50", "flows = 50\n[output]\nqueue_sample_interval = \"0ps\"")],
            &["output.queue_sample_interval"],
        ),
        wrong(
            "size buckets out of order",
            &[("flows = 50", "flows = 50\n[output]\nsize_buckets = [100000, 1000]")],
            &["output.size_buckets"],
        ),
        wrong(
            "a FastLane bandwidth cap above 1",
            &[(ECN, "switch_queue = { kind = \"ecn\", k_packets = 20 }\n[network.fastlane]\nbandwidth_cap = 2.0")],
            &["network.fastlane.bandwidth_cap"],
        ),
        wrong(
            "a memory limit of 1 KB",
            &[("flows = 50", "flows = 50\n[limits]\nmax_memory = \"1KB\"")],
            &["above the limit of 1 KB", "max_memory"],
        ),
    ]
}

#[test]
fn the_base_config_is_valid() {
    assert_eq!(check(BASE), None);
}

#[test]
fn every_wrong_config_is_refused_with_the_fields_to_change() {
    let cases = table();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for w in &cases {
        assert!(!w.names.is_empty(), "{}: names nothing", w.what);
        match check(&edited(&w.edits)) {
            None => failures.push(format!("{}: accepted", w.what)),
            Some(e) => {
                let missing: Vec<_> = w.names.iter().filter(|n| !e.contains(**n)).collect();
                if !missing.is_empty() || e.contains('\n') {
                    failures.push(format!("{}: {missing:?} not in {e:?}", w.what));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_deliberate_mismatch_runs_with_allow_mismatch_and_is_recorded() {
    let toml = edited(&[
        ("protocol = \"dctcp\"", "protocol = \"expresspass\""),
        ("[network]\n", "[network]\nallow_mismatch = true\n"),
        ("flows = 50", "flows = 5"),
    ]);
    let exp = Config::from_toml_str(&toml, "<t>")
        .unwrap()
        .prepare(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("allowed");
    let m = exp.allowed_mismatches.clone();
    assert!(
        m.iter().any(|s| s.starts_with("network.switch_queue: ")),
        "{m:?}"
    );
    assert!(
        m.iter().any(|s| s.starts_with("network.host_queue: ")),
        "{m:?}"
    );
    assert!(exp.warnings.iter().any(|w| w.contains("allow_mismatch")));
    // The resolved config keeps the opt-out, so a rerun of it runs too.
    assert!(exp.config.to_toml().contains("allow_mismatch = true"));
    let out = exp.run(None).expect("runs");
    assert_eq!(out.flows.len(), 5);
    crate::common::assert_conserved(&out);
}

#[test]
fn the_opt_out_does_not_excuse_absurd_numbers() {
    let toml = edited(&[(
        "[network]\n",
        "[network]\nallow_mismatch = true\nhop_limit = 2\n",
    )]);
    let e = check(&toml).expect("refused");
    assert!(e.starts_with("network.hop_limit: "), "{e}");
}

#[test]
fn a_shared_buffer_alone_is_each_ports_only_limit() {
    // Without switch_buffer_bytes the default per-port buffer (225 KB)
    // does not cap ports silently below the shared threshold.
    let toml = edited(&[(
        "[network]\n",
        "[network]\nshared_buffer = { bytes = 4000000, alpha = 1.0 }\n",
    )]);
    let exp = Config::from_toml_str(&toml, "<t>")
        .unwrap()
        .prepare(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("valid");
    assert_eq!(exp.net.params().switch_buffer, u64::MAX);
    assert!(!exp.config.to_toml().contains("switch_buffer_bytes"));
    let plain = Config::from_toml_str(BASE, "<t>").unwrap();
    assert!(plain.to_toml().contains("switch_buffer_bytes = 225000"));
}
