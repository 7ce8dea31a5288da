//! Golden snapshots: every shipped config (`examples/*.toml`,
//! `experiments/*/*.toml`), cut to CI size, must give exactly the results
//! recorded in `tests/golden/snapshots.txt`: a hash of the flows table's
//! content, the event count and the packet counters of each run, plus the
//! event count of the reference benchmark at 2,000 flows.
//!
//! A refactoring must leave every line unchanged. A change of behaviour that
//! is intended is re-recorded with `PKTSIM_BLESS=1 cargo test -p pktsim
//! --test e2e golden` and the diff of the snapshot file is reviewed in the
//! commit. For that review, `PKTSIM_GOLDEN_TABLE=FILE` also writes each
//! run's mean slowdown, finished flows and drops to FILE (run it before and
//! after the change and compare: an order change should look like a change
//! of seed, not of behaviour).

use pktsim::config::{base_dir_of, Config};
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::workload::WorkloadConfig;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Largest number of flows of a Poisson workload in a snapshot run.
const MAX_FLOWS: u64 = 300;
/// Largest number of incast queries in a snapshot run.
const MAX_QUERIES: u32 = 10;
/// Longest simulated time of a snapshot run, in milliseconds.
const MAX_TIME_MS: u64 = 5;
/// Flows of the benchmark's small variant (`pktsim bench --flows 2000`).
const BENCH_FLOWS: u64 = 2000;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn snapshot_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/snapshots.txt")
}

/// Every experiment config of the repository, as paths relative to the root,
/// sorted. Files without a `[topology]` table (e.g. published numbers) are
/// not experiments.
fn configs() -> Vec<String> {
    let root = repo_root();
    let mut dirs = vec![root.join("examples")];
    let mut exps: Vec<PathBuf> = std::fs::read_dir(root.join("experiments"))
        .expect("experiments/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.is_dir())
        .collect();
    exps.sort();
    dirs.extend(exps);
    let mut out = Vec::new();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .expect("readable folder")
            .map(|e| e.expect("readable").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter(|p| {
                std::fs::read_to_string(p)
                    .expect("readable config")
                    .lines()
                    .any(|l| l.trim() == "[topology]")
            })
            .collect();
        files.sort();
        for f in files {
            let rel = f.strip_prefix(&root).expect("under the root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    out
}

/// Cut a config to snapshot size: few flows, few queries, a short run.
fn shrink(cfg: &mut Config) {
    for w in &mut cfg.workload {
        match w {
            WorkloadConfig::Poisson { flows: Some(f), .. } => *f = (*f).min(MAX_FLOWS),
            WorkloadConfig::Incast { queries, .. } => *queries = (*queries).min(MAX_QUERIES),
            WorkloadConfig::Queries {
                queries: Some(q), ..
            } => *q = (*q).min(MAX_QUERIES),
            _ => {}
        }
    }
    let cap = pktsim::time::Duration::from_ms(MAX_TIME_MS);
    let limit = match &cfg.run.time_limit {
        Some(s) => pktsim::time::parse_duration(s)
            .expect("valid time limit")
            .min(cap),
        None => cap,
    };
    cfg.run.time_limit = Some(format!("{}ps", limit.ps()));
}

/// FNV-1a, 64 bits: stable across platforms and releases.
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// A hash of the flows table's content (every column of `flows.parquet`
/// follows from these fields; the Parquet bytes themselves would also hash
/// the writer's metadata).
fn flows_hash(out: &RunOutput) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    let mut line = String::new();
    for f in &out.flows {
        line.clear();
        let _ = write!(
            line,
            "{},{},{},{},{},{:?},{},{},{},{},{};",
            f.id,
            f.src.0,
            f.dst.0,
            f.size_bytes,
            f.start.ps(),
            f.finish.map(|t| t.ps()),
            f.ideal_fct.ps(),
            f.bytes_received,
            f.retransmits,
            f.drops,
            f.tag
        );
        // Only flows of queries have one: other runs keep their hash.
        if let Some(q) = f.query {
            let _ = write!(line, "q{q};");
        }
        h = fnv(line.as_bytes(), h);
    }
    fnv(out.protocol.as_bytes(), h)
}

/// A hash of the queue samples (time, node, port, bytes, packets).
fn samples_hash(out: &RunOutput) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    for s in &out.queue_samples {
        h = fnv(&s.time.ps().to_le_bytes(), h);
        h = fnv(&s.node.0.to_le_bytes(), h);
        h = fnv(&s.port.to_le_bytes(), h);
        h = fnv(&s.bytes.to_le_bytes(), h);
        h = fnv(&s.packets.to_le_bytes(), h);
    }
    h
}

/// One snapshot line of a run.
fn snapshot_line(name: &str, out: &RunOutput) -> String {
    let c = &out.counters;
    let drops: Vec<String> = DropReason::ALL
        .iter()
        .filter_map(|r| {
            let n = c.dropped[0][*r as usize] + c.dropped[1][*r as usize];
            (n > 0).then(|| format!("{}:{n}", r.name()))
        })
        .collect();
    let finished = out.flows.iter().filter(|f| f.finish.is_some()).count();
    format!(
        "{name} flows={} finished={finished} flows_hash={:016x} events={} stop={} \
         sim_time_ps={} sent={:?} delivered={:?} in_flight={:?} drops=[{}] ecn={} hops={} \
         samples={} samples_hash={:016x}",
        out.flows.len(),
        flows_hash(out),
        out.events,
        out.stop_reason,
        out.sim_time.ps(),
        c.sent,
        c.delivered,
        c.in_flight,
        drops.join(","),
        c.ecn_marked,
        c.packet_hops,
        out.queue_samples.len(),
        samples_hash(out)
    )
}

fn run_config(rel: &str) -> RunOutput {
    run_config_on(rel, 1).0
}

/// [`run_config`] on `threads` threads; also whether the run was split
/// (a config that cannot split runs on one thread with a warning).
fn run_config_on(rel: &str, threads: usize) -> (RunOutput, bool) {
    let path = repo_root().join(rel);
    let mut cfg = Config::load(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    shrink(&mut cfg);
    cfg.run.threads = Some(threads);
    let exp = cfg
        .prepare(&base_dir_of(&path))
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    let split = threads > 1 && !exp.keeps_to_one_thread();
    let out = exp.run(None).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(out.counters.conserved(), "{rel}: {:?}", out.counters);
    (out, split)
}

/// The reference benchmark (`pktsim bench --flows 2000`): the same config
/// text the CLI embeds, with the same substitution.
fn run_bench() -> RunOutput {
    let path = repo_root().join("examples/bench_leafspine_dctcp.toml");
    let text = std::fs::read_to_string(&path).expect("bench config");
    assert!(text.contains("flows = 20000"), "bench config changed");
    let text = text.replace("flows = 20000", &format!("flows = {BENCH_FLOWS}"));
    let cfg = Config::from_toml_str(&text, "bench").expect("bench config parses");
    let out = cfg
        .prepare(&repo_root())
        .expect("bench config valid")
        .run(None)
        .expect("runs");
    assert!(out.counters.conserved());
    out
}

/// One line of the review table: mean slowdown of the finished flows, how
/// many finished, and the drops (see the module doc).
fn table_line(name: &str, out: &RunOutput) -> String {
    let slowdowns: Vec<f64> = out
        .flows
        .iter()
        .filter_map(|f| {
            let fct = f.fct()?;
            (f.ideal_fct.ps() > 0).then(|| fct.ps() as f64 / f.ideal_fct.ps() as f64)
        })
        .collect();
    let mean = slowdowns.iter().sum::<f64>() / slowdowns.len().max(1) as f64;
    let c = &out.counters;
    let drops: u64 = c.dropped.iter().flatten().sum();
    format!(
        "{name}\t{mean:.4}\t{}\t{drops}\t{}",
        slowdowns.len(),
        out.events
    )
}

/// Every line of the snapshot, in file order.
fn current_snapshot() -> String {
    let mut s = String::from(
        "# Golden snapshots (tests/golden.rs): each shipped config cut to CI size, and\n\
         # `pktsim bench --flows 2000`. Re-record: PKTSIM_BLESS=1 cargo test -p pktsim --test e2e golden\n",
    );
    let mut table = String::from("config\tmean_slowdown\tfinished\tdrops\tevents\n");
    for rel in configs() {
        let out = run_config(&rel);
        s.push_str(&snapshot_line(&rel, &out));
        s.push('\n');
        table.push_str(&table_line(&rel, &out));
        table.push('\n');
    }
    let name = format!("bench --flows {BENCH_FLOWS}");
    let out = run_bench();
    s.push_str(&snapshot_line(&name, &out));
    s.push('\n');
    table.push_str(&table_line(&name, &out));
    table.push('\n');
    if let Ok(path) = std::env::var("PKTSIM_GOLDEN_TABLE") {
        std::fs::write(&path, table).expect("write the review table");
    }
    s
}

#[test]
fn every_shipped_config_matches_its_golden_snapshot() {
    let got = current_snapshot();
    let file = snapshot_file();
    if std::env::var("PKTSIM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(file.parent().expect("has a folder")).expect("mkdir");
        std::fs::write(&file, &got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (record it with PKTSIM_BLESS=1)", file.display()));
    let mut diffs = Vec::new();
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied(), g.get(i).copied());
        if a != b {
            diffs.push(format!("- {}\n+ {}", a.unwrap_or(""), b.unwrap_or("")));
        }
    }
    assert!(
        diffs.is_empty(),
        "golden snapshots differ ({} lines):\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn snapshot_covers_every_shipped_config() {
    // A config added without a snapshot line fails here, not silently.
    let want = std::fs::read_to_string(snapshot_file()).unwrap_or_default();
    for rel in configs() {
        assert!(
            want.lines().any(|l| l.starts_with(&format!("{rel} "))),
            "{rel} has no golden snapshot (record it with PKTSIM_BLESS=1)"
        );
    }
}

/// The partitioned engine (issue 33): every shipped config that can run
/// split gives, on 2, 3 and 8 threads, exactly its golden line: the same
/// flows, events, counters and queue samples as the serial run.
#[test]
fn every_config_gives_its_golden_line_on_2_3_and_8_threads() {
    let want = std::fs::read_to_string(snapshot_file()).expect("snapshot file");
    let mut split_configs = 0;
    let mut diffs = Vec::new();
    for rel in configs() {
        let line = want
            .lines()
            .find(|l| l.starts_with(&format!("{rel} ")))
            .unwrap_or_else(|| panic!("{rel} has no golden line"));
        for threads in [2, 3, 8] {
            let (out, split) = run_config_on(&rel, threads);
            if !split {
                break;
            }
            if threads == 2 {
                split_configs += 1;
            }
            let got = snapshot_line(&rel, &out);
            if got != line {
                diffs.push(format!("{threads} threads:\n- {line}\n+ {got}"));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{} runs differ from the serial run:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    // The TCP-family configs split; a change that stopped them from
    // splitting would make this test pass without testing anything.
    assert!(
        split_configs >= 10,
        "only {split_configs} configs ran split"
    );
}
