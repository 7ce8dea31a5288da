//! Helpers shared by the command's end-to-end tests. Each test binary
//! compiles this module and uses a part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Run the built `pktsim` command with `args` in `cwd`.
pub fn pktsim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pktsim"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("pktsim runs")
}

/// A small valid run: a leaf-spine (2 spines, 2 leaves of 4 hosts), DCTCP
/// on ECN queues, `flows` Poisson flows of sizes from `cdf` at load 0.5.
pub fn leaf_spine_dctcp(cdf: &str, flows: u32) -> String {
    format!(
        r#"seed = 1
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us"
[network]
switch_queue = {{ kind = "ecn", k_packets = 20 }}
[transport]
protocol = "dctcp"
[[workload]]
kind = "poisson"
cdf = "{cdf}"
load = 0.5
flows = {flows}
"#
    )
}
