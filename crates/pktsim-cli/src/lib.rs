//! The `pktsim` command: a thin command line over the pktsim library.
//!
//! It is a library so that the Python package (`pktsim-py`) can offer the
//! same commands as the binary: [`main_with_args`] parses and runs one
//! command line and returns the exit code.
//!
//! Exit codes: 0 success, 2 bad input (config, topology, workload files, a
//! config too large for the resource limits, an `--out` that is a file or
//! cannot be written: all found before the simulation runs), 1 anything
//! else (e.g. writing the results failed after the run).

pub mod allocator;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pktsim::config::{base_dir_of, Config, Experiment};
use pktsim::metrics::summary::{Summary, DEFAULT_BUCKETS};
use pktsim::metrics::RunOutput;
use pktsim::net::topology::{node_by_text, TopologyConfig};
use pktsim::output::{check_out_dir, peak_rss_bytes, write_run, OutDirLock, RunMeta};
use pktsim::sim::{Progress, StopReason};
use pktsim::time::{parse_rate, Rate, Time};
use pktsim::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The reference run of the benchmark (see BENCHMARKS.md).
const BENCH_CONFIG: &str = include_str!("../../../examples/bench_leafspine_dctcp.toml");

/// What `pktsim --help` says below the Rust commands.
const PYTHON_COMMANDS: &str = "\
Commands of the Python package (`pip install .` installs a `pktsim` command
that has these and every command above):
  sweep      Run a grid of experiments x seeds (serially, on processes or Dask)
  report     Write RESULTS_DIR/report.html and plots of a run or a sweep
  reproduce  Run experiments/NAME scaled down and report it beside the paper";

#[derive(Parser)]
#[command(
    name = "pktsim",
    version,
    about = "Fast, deterministic packet-level network simulator",
    after_help = PYTHON_COMMANDS
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment and write its results.
    Run {
        /// The experiment's TOML file.
        config: PathBuf,
        /// Output directory (default: results/<the config file's stem>).
        /// Written all or nothing: it holds the earlier run until this one
        /// is complete, then this one (files pktsim did not write are kept).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the config's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Threads for the run (overrides `[run] threads`; default 1). The
        /// results are the same for every count. Use at most the idle
        /// cores: each window waits for the slowest thread.
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Print nothing but errors and warnings.
        #[arg(long, short)]
        quiet: bool,
        /// Print the full summary (summary.json) instead of the short one.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Check an experiment file (and its topology and workload) without running it.
    Validate {
        /// The experiment's TOML file.
        config: PathBuf,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Run the reference benchmark and print events/s, packet-hops/s and peak memory.
    Bench {
        /// Number of flows (default: the reference config's 20,000).
        #[arg(long)]
        flows: Option<u64>,
        /// Benchmark another config instead of the reference run.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Threads for the run (default 1).
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Groups the network is dealt into (default: one per thread).
        /// With more groups than threads the threads take them in turn; the
        /// bench then prints how much a thread per group could gain at
        /// most, from the balance of the groups' events window by window.
        #[arg(long, value_name = "N")]
        groups: Option<usize>,
    },
    /// Compare a finished run through one bottleneck with flow-level SRPT
    /// and processor sharing on the same arrivals.
    Reference {
        /// A results directory of `pktsim run` (flows.parquet, config.toml).
        run_dir: PathBuf,
        /// Bottleneck rate (default: the topology's bottleneck rate for a
        /// star or dumbbell, else its host rate).
        #[arg(long)]
        rate: Option<String>,
        /// Per-flow table to write (default: RUN_DIR/reference.parquet).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Turn a run's packet trace ([output.trace]) into a pcapng file for
    /// Wireshark or tshark: every packet as its sender puts it on the wire,
    /// or what one host or one link sees.
    Pcap {
        /// A results directory of `pktsim run` (packets.parquet, config.toml).
        run_dir: PathBuf,
        /// Capture at this host's NIC (its index or name): what it sends
        /// and what it receives.
        #[arg(long, conflicts_with = "link")]
        host: Option<String>,
        /// Capture on the link between two nodes, both ways, e.g. `h0,s1`
        /// or `0,16`.
        #[arg(long, value_name = "A,B")]
        link: Option<String>,
        /// File to write (default: RUN_DIR/packets.pcapng).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Resource limits given on the command line (they override the config's
/// `[limits]` and the environment; see `pktsim::resources`).
#[derive(clap::Args)]
struct LimitArgs {
    /// Refuse a run estimated to need more memory than this, e.g. 64GB
    /// (default: 16GB or the machine's memory, whichever is smaller; also
    /// [limits] max_memory or PKTSIM_MAX_MEMORY).
    #[arg(long, value_name = "SIZE")]
    max_memory: Option<String>,
    /// Refuse a run estimated to take more events than this (default 1e12;
    /// also [limits] max_events or PKTSIM_MAX_EVENTS).
    #[arg(long, value_name = "N")]
    max_events: Option<u64>,
}

impl LimitArgs {
    fn apply(&self, cfg: &mut Config) {
        if let Some(m) = &self.max_memory {
            cfg.limits.max_memory = Some(m.clone());
        }
        if let Some(n) = self.max_events {
            cfg.limits.max_events = Some(n);
        }
    }
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    msg: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        // Bad input (config, files, an unusable --out) is 2; failing to
        // write results once the run has happened is 1.
        let code = match e {
            Error::Output(_) => 1,
            _ => 2,
        };
        Failure {
            code,
            msg: e.to_string(),
        }
    }
}

/// Parse `args` (the program name first) and run the command; returns the
/// exit code. Help and usage errors are printed as clap prints them.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            // --help and --version are "errors" that exit 0.
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return u8::try_from(e.exit_code()).unwrap_or(2);
            }
            eprintln!("{}", usage_error_line(&e));
            return 2;
        }
    };
    let result = match cli.command {
        Command::Run {
            config,
            out,
            seed,
            threads,
            quiet,
            json,
            limits,
        } => cmd_run(&config, out, (seed, threads), quiet, json, &limits),
        Command::Validate { config, limits } => cmd_validate(&config, &limits),
        Command::Bench {
            flows,
            config,
            threads,
            groups,
        } => cmd_bench(flows, config, (threads, groups)),
        Command::Reference { run_dir, rate, out } => cmd_reference(&run_dir, rate, out),
        Command::Pcap {
            run_dir,
            host,
            link,
            out,
        } => cmd_pcap(&run_dir, host, link, out),
    };
    match result {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("error: {}", f.msg);
            f.code
        }
    }
}

/// A command-line mistake as one line: clap's first line (which names the
/// argument), where to look next, and for the Python package's commands
/// where they come from.
fn usage_error_line(e: &clap::Error) -> String {
    // clap's message without its usage block, its lines joined: "the
    // following required arguments were not provided:" with the names,
    // "unexpected argument '--sed' found" with its "tip: ... '--seed'".
    let text = e.render().to_string();
    let mut first = String::new();
    for l in text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        if !first.is_empty() {
            first.push_str(if first.ends_with(':') { " " } else { "; " });
        }
        first.push_str(l);
    }
    if first.is_empty() {
        first.push_str("error: bad arguments");
    }
    let python = ["sweep", "report", "reproduce"].into_iter().find(|c| {
        e.kind() == clap::error::ErrorKind::InvalidSubcommand && first.contains(&format!("'{c}'"))
    });
    match python {
        Some(c) => format!(
            "{first}: `{c}` is a command of the Python package (`pip install .` installs a pktsim command that has it)"
        ),
        None => format!("{first} (pktsim --help lists the commands, pktsim COMMAND --help their options)"),
    }
}

/// Scale of the progress bar: it counts per-myriad of the estimated work,
/// not flows (see [`progress_fraction`]).
const BAR_STEPS: u64 = 10_000;

/// How much of a run is done, in [0, 1], for the progress bar's ETA.
///
/// Flows done alone is a poor measure early on: a flow finishes a while
/// after it starts, so for the first part of a run almost none have
/// finished while the simulation is busy with hundreds, and an ETA from
/// them came out some 30 times too long. Until the last flow has started,
/// the simulated time against the last flow's start (`last_start`) is the
/// better measure for the arrival processes pktsim generates (work arrives
/// at a steady rate); after it, only the backlog is left, which flows done
/// measures. The two are blended by the time fraction itself, so the
/// estimate moves from one to the other without a jump; it is never below
/// the flows-done fraction. A workload whose flows all start at once
/// (incast) has no time fraction: flows alone.
pub fn progress_fraction(
    flows_done: usize,
    flows_total: usize,
    now: Time,
    last_start: Time,
) -> f64 {
    let flows = if flows_total == 0 {
        1.0
    } else {
        flows_done as f64 / flows_total as f64
    };
    if last_start == Time::ZERO {
        return flows;
    }
    let time = (now.ps() as f64 / last_start.ps() as f64).min(1.0);
    // Never below what flows done already show (all done is done).
    ((1.0 - time) * time + time * flows)
        .max(flows)
        .clamp(0.0, 1.0)
}

fn progress_bar(quiet: bool) -> ProgressBar {
    let target = if quiet {
        ProgressDrawTarget::hidden()
    } else {
        // Hidden automatically when stderr is not a terminal.
        ProgressDrawTarget::stderr()
    };
    let pb = ProgressBar::with_draw_target(Some(BAR_STEPS), target);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {msg}  [{elapsed_precise}, eta {eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

fn run_with_progress(cfg: &Config, base: &Path, quiet: bool) -> Result<RunOutput, Error> {
    run_experiment(cfg.prepare(base)?, quiet)
}

fn run_experiment(exp: Experiment, quiet: bool) -> Result<RunOutput, Error> {
    let pb = progress_bar(quiet);
    let started = std::time::Instant::now();
    let last_start = exp.workload.flows.last().map_or(Time::ZERO, |f| f.start);
    let mut report = |p: &Progress| {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let done = progress_fraction(p.flows_done, p.flows_total, p.now, last_start);
        pb.set_position((done * BAR_STEPS as f64) as u64);
        pb.set_message(format!(
            "{}/{} flows, sim {:.3} ms, {:.1} M events/s",
            p.flows_done,
            p.flows_total,
            p.now.as_secs_f64() * 1e3,
            p.events as f64 / secs / 1e6
        ));
    };
    let out = exp.run(Some(&mut report))?;
    pb.finish_and_clear();
    Ok(out)
}

fn buckets(cfg: &Config) -> Vec<u64> {
    cfg.output
        .size_buckets
        .clone()
        .unwrap_or_else(|| DEFAULT_BUCKETS.to_vec())
}

fn cmd_run(
    path: &Path,
    out: Option<PathBuf>,
    (seed, threads): (Option<u64>, Option<usize>),
    quiet: bool,
    json: bool,
    limits: &LimitArgs,
) -> Result<(), Failure> {
    let mut cfg = Config::load(path)?;
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if threads.is_some() {
        cfg.run.threads = threads;
    }
    limits.apply(&mut cfg);
    let dir = out.unwrap_or_else(|| {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        PathBuf::from("results").join(stem.unwrap_or_else(|| "run".into()))
    });
    // The run replaces DIR/config.toml with the resolved config: running
    // that very file into its own folder would overwrite the user's input.
    let ours = dir.join("config.toml");
    if let (Ok(a), Ok(b)) = (path.canonicalize(), ours.canonicalize()) {
        if a == b {
            return Err(Failure {
                code: 2,
                msg: format!(
                    "--out {}: holds the config being run ({}), which the run would \
                     overwrite with its resolved copy; give --out another folder",
                    dir.display(),
                    path.display()
                ),
            });
        }
    }
    let command_line = Some(std::env::args().collect::<Vec<_>>().join(" "));
    let RunDone { summary, warnings } =
        run_to_dir(&cfg, &base_dir_of(path), &dir, quiet, command_line, None)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if let Some(w) = no_flow_finished(&summary) {
        eprintln!("warning: {w}");
    }
    if json {
        print_summary(&summary);
    } else if !quiet {
        print_out(&short_summary(&summary, &dir));
    }
    Ok(())
}

/// The warning for a run in which no flow finished (a time limit too
/// short, a rate too slow), or None.
pub fn no_flow_finished(s: &Summary) -> Option<String> {
    (s.flows > 0 && s.finished == 0).then(|| {
        format!(
            "no flow finished: the run stopped ({}) at {} of simulated time with all {} flows unfinished",
            s.stop_reason.replace('_', " "),
            human_us(s.sim_time_us),
            s.flows
        )
    })
}

fn human_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3} ms", us / 1e3)
    } else {
        format!("{us:.3} µs")
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| format!("{x:.3}"))
}

/// What `pktsim run` prints: a few lines for people. The JSON is in
/// `summary.json` (or printed by `--json`).
pub fn short_summary(s: &Summary, dir: &Path) -> String {
    let pct = if s.flows > 0 {
        100.0 * s.finished as f64 / s.flows as f64
    } else {
        0.0
    };
    let drops: Vec<String> = s
        .drops
        .iter()
        .flat_map(|(kind, by)| {
            by.iter()
                .filter(|(_, n)| **n > 0)
                .map(move |(why, n)| format!("{kind} {} {n}", why.replace('_', " ")))
        })
        .collect();
    let mut out = String::new();
    let mut line = |l: String| {
        out.push_str(&l);
        out.push('\n');
    };
    line(format!(
        "flows       {} of {} finished ({pct:.1} %), protocol {}, stopped: {}",
        s.finished,
        s.flows,
        s.protocol,
        s.stop_reason.replace('_', " ")
    ));
    line(format!(
        "slowdown    mean {}  p50 {}  p99 {}",
        num(s.slowdown.mean),
        num(s.slowdown.p50),
        num(s.slowdown.p99)
    ));
    line(format!(
        "FCT         mean {}  p99 {}",
        s.fct_us.mean.map_or("–".into(), human_us),
        s.fct_us.p99.map_or("–".into(), human_us)
    ));
    line(format!(
        "drops       {}{}  retransmits {}",
        s.drops_total,
        if drops.is_empty() {
            String::new()
        } else {
            format!(" ({})", drops.join(", "))
        },
        s.retransmits
    ));
    line(format!(
        "time        {} simulated in {:.2} s wall ({:.1} M events/s){}",
        human_us(s.sim_time_us),
        s.wall_time_s,
        s.events_per_sec / 1e6,
        if s.conservation.ok {
            ""
        } else {
            "; packet books do NOT balance"
        }
    ));
    line(format!(
        "results     {}/ (summary.json has everything; --json prints it)",
        dir.display()
    ));
    out
}

/// A run written by [`run_to_dir`]: its summary, and the warnings to show
/// the user (the config's, as `pktsim validate` prints them, and one when
/// the run asks for more threads than the process has cores).
pub struct RunDone {
    /// What `summary.json` holds.
    pub summary: Summary,
    /// One line each, without a `warning: ` prefix.
    pub warnings: Vec<String>,
}

/// The warning for a run split over more threads than the cores this
/// process may use (its CPU affinity and cgroup quota, as the standard
/// library reads them): every window waits for its slowest thread, so
/// threads that share a core make the run slower, not faster
/// (docs/engine.md, "When it pays"). `None` when the cores are not known.
pub fn threads_over_cores(threads: usize, cores: Option<usize>) -> Option<String> {
    let cores = cores?;
    (threads > cores).then(|| {
        format!(
            "run.threads = {threads} is more than the {cores} cores this process may use: \
             every window waits for its slowest thread, so the run is slower than on \
             {cores} (the results are the same)"
        )
    })
}

/// Run `cfg` (relative paths resolve against `base`) and write its results
/// into `dir`: what `pktsim run` does, minus printing (the warnings come
/// back to the caller). A progress bar shows on a terminal unless `quiet`.
///
/// The directory is checked and locked before the config is prepared (a
/// second run into it is refused while this one holds the lock), and the
/// results replace its earlier run all at once, only when every file is
/// written (see `pktsim::output`). Setting `cancel` stops the run (within
/// 65,536 events) and writes nothing: the error says so.
pub fn run_to_dir(
    cfg: &Config,
    base: &Path,
    dir: &Path,
    quiet: bool,
    command_line: Option<String>,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<RunDone, Error> {
    let cancelled = || {
        cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    };
    check_out_dir(dir)?;
    let lock = OutDirLock::acquire(dir)?;
    let mut exp = cfg.prepare(base)?;
    let mismatches = exp.allowed_mismatches.clone();
    let mut warnings = exp.warnings.clone();
    // A run that cannot split has said so, and uses one thread.
    if !exp.keeps_to_one_thread() {
        let cores = std::thread::available_parallelism().ok().map(|n| n.get());
        warnings.extend(threads_over_cores(exp.threads, cores));
    }
    if cancelled() {
        return Err(cancelled_error());
    }
    // An explicit topology's host names are the user's: they go into
    // flows.parquet beside the indices. Built topologies' (h0, h1, ...)
    // would only repeat the index.
    let host_names = matches!(cfg.topology, TopologyConfig::Explicit { .. }).then(|| {
        let hosts = exp.topology.n_hosts as usize;
        exp.topology
            .names
            .iter()
            .take(hosts)
            .cloned()
            .collect::<Vec<_>>()
    });
    exp.limits.cancel = cancel.clone();
    let run = run_experiment(exp, quiet)?;
    if run.stop_reason == StopReason::Cancelled.name() || cancelled() {
        return Err(cancelled_error());
    }
    let mut summary = Summary::from_run(&run, &buckets(cfg));
    summary.allow_mismatch = cfg.network.allow_mismatch;
    summary.mismatches = mismatches;
    let resolved = cfg.to_toml();
    let meta = RunMeta {
        pktsim_version: env!("CARGO_PKG_VERSION").to_string(),
        config_hash: config_hash(&resolved),
        seed: cfg.seed,
        command_line,
        git_commit: git_commit().map(str::to_string),
    };
    write_run(
        &lock,
        &run,
        &summary,
        &resolved,
        &meta,
        host_names.as_deref(),
    )?;
    Ok(RunDone { summary, warnings })
}

fn cancelled_error() -> Error {
    Error::Output("the run was cancelled; nothing was written".into())
}

/// The git commit the code was built from, when it was built in a checkout.
pub fn git_commit() -> Option<&'static str> {
    option_env!("PKTSIM_GIT_COMMIT")
}

fn cmd_validate(path: &Path, limits: &LimitArgs) -> Result<(), Failure> {
    let mut cfg = Config::load(path)?;
    limits.apply(&mut cfg);
    let exp = cfg.prepare(&base_dir_of(path))?;
    for w in &exp.warnings {
        eprintln!("warning: {w}");
    }
    print_out(&format!(
        "ok: {} hosts, {} switches, {} links, {} flows, protocol {}\n",
        exp.topology.n_hosts,
        exp.topology.n_nodes() - exp.topology.n_hosts as usize,
        exp.topology.links.len(),
        exp.workload.flows.len(),
        cfg.transport.name()
    ));
    Ok(())
}

fn cmd_bench(
    flows: Option<u64>,
    config: Option<PathBuf>,
    (threads, groups): (Option<usize>, Option<usize>),
) -> Result<(), Failure> {
    let (src, label, base) = match &config {
        Some(p) => (
            std::fs::read_to_string(p).map_err(|e| Failure {
                code: 2,
                msg: format!("{}: {e}", p.display()),
            })?,
            p.display().to_string(),
            base_dir_of(p),
        ),
        None => (
            BENCH_CONFIG.to_string(),
            "reference".to_string(),
            PathBuf::from("."),
        ),
    };
    let mut text = src;
    if let Some(n) = flows {
        text = text.replace("flows = 20000", &format!("flows = {n}"));
    }
    let mut cfg = Config::from_toml_str(&text, &label)?;
    if threads.is_some() {
        cfg.run.threads = threads;
    }
    if groups.is_some() {
        cfg.run.groups = groups;
    }
    let run = run_with_progress(&cfg, &base, false)?;
    let wall = run.wall_time.as_secs_f64();
    let s = Summary::from_run(&run, &buckets(&cfg));
    let finished = run.flows.iter().filter(|f| f.finish.is_some()).count();
    // Written whole, then printed: a closed stdout (`| head`) is no panic.
    let mut t = String::new();
    let mut line = |s: String| {
        t.push_str(&s);
        t.push('\n');
    };
    line(format!(
        "benchmark: {label} ({} flows, {} finished, protocol {})",
        run.flows.len(),
        finished,
        run.protocol
    ));
    line(format!("threads          {}", cfg.run.threads.unwrap_or(1)));
    line(format!("wall time        {wall:.3} s (event loop)"));
    line(format!(
        "simulated time   {:.3} ms",
        run.sim_time.as_secs_f64() * 1e3
    ));
    line(format!(
        "events           {}  ({:.2} M/s)",
        run.events,
        run.events as f64 / wall / 1e6
    ));
    line(format!(
        "packet-hops      {}  ({:.2} M/s)",
        run.counters.packet_hops,
        run.counters.packet_hops as f64 / wall / 1e6
    ));
    let data_pkts = run.counters.delivered[0];
    line(format!(
        "data packets     {}  ({:.2} M/s delivered, {:.2} events each)",
        data_pkts,
        data_pkts as f64 / wall / 1e6,
        run.events as f64 / data_pkts.max(1) as f64
    ));
    if let Some(w) = &run.windows {
        line(format!(
            "windows          {} over {} groups on {} threads, {:.0} events each",
            w.windows,
            w.groups,
            w.threads,
            w.events as f64 / w.windows.max(1) as f64,
        ));
        line(format!(
            "balance          a thread per group gains at most {:.2}x on the windows' events; \
             busiest group {:.3}x the mean over the run",
            w.balance_bound(),
            w.busiest_over_mean()
        ));
    }
    line(match peak_rss_bytes() {
        Some(b) => format!("peak RSS         {:.1} MB", b as f64 / 1e6),
        None => "peak RSS         unknown on this platform".to_string(),
    });
    print_out(&t);
    print_summary(&s);
    Ok(())
}

fn cmd_reference(dir: &Path, rate: Option<String>, out: Option<PathBuf>) -> Result<(), Failure> {
    let rate = match rate {
        Some(r) => Some(parse_rate(&r).map_err(|m| Failure {
            code: 2,
            msg: format!("--rate: {m}"),
        })?),
        None => None,
    };
    let summary = reference_to_file(dir, rate, out.as_deref())?;
    let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
    print_out(&format!("{json}\n"));
    Ok(())
}

fn cmd_pcap(
    dir: &Path,
    host: Option<String>,
    link: Option<String>,
    out: Option<PathBuf>,
) -> Result<(), Failure> {
    let out = out.unwrap_or_else(|| dir.join("packets.pcapng"));
    let n = pcap_to_file(dir, host.as_deref(), link.as_deref(), &out)?;
    print_out(&format!("{n} packets -> {}\n", out.display()));
    Ok(())
}

/// What `pktsim pcap` does, minus printing: the capture of the run in `dir`
/// at `host` or on `link` ("A,B"; nodes by index or name; neither: every
/// packet as its sender sends it) written to `out`. Returns the number of
/// packets.
pub fn pcap_to_file(
    dir: &Path,
    host: Option<&str>,
    link: Option<&str>,
    out: &Path,
) -> Result<u64, Error> {
    use pktsim::output::pcap::{write_pcap, Capture};
    let cfg = Config::load(&dir.join("config.toml"))?;
    let topo = cfg.topology_spec()?;
    let names = &topo.names;
    let node = |s: &str, field: &str| -> Result<u32, Error> {
        node_by_text(s, names.len(), names, "node").map_err(|m| Error::config(field, m))
    };
    // A capture that cannot hold a packet is refused, not written empty.
    let capture = match (host, link) {
        (Some(h), _) => {
            let i = node(h, "--host")?;
            if i >= topo.n_hosts {
                return Err(Error::config(
                    "--host",
                    format!(
                        "{} is a switch, and --host captures at a host's NIC; a switch's \
                         packets are captured on one of its links, with --link {},NODE",
                        names[i as usize], names[i as usize]
                    ),
                ));
            }
            Capture::Host(i)
        }
        (None, Some(l)) => match l.split_once(',') {
            Some((a, b)) => {
                let (a, b) = (node(a, "--link")?, node(b, "--link")?);
                let linked = topo
                    .links
                    .iter()
                    .any(|k| (k.a.0, k.b.0) == (a, b) || (k.a.0, k.b.0) == (b, a));
                if !linked {
                    return Err(Error::config(
                        "--link",
                        format!(
                            "no link between {} and {}",
                            names[a as usize], names[b as usize]
                        ),
                    ));
                }
                Capture::Link(a, b)
            }
            None => return Err(Error::config("--link", "give two nodes, as A,B")),
        },
        (None, None) => Capture::Senders,
    };
    pktsim::output::check_not_a_run_file(dir, out, "packets.pcapng")?;
    write_pcap(dir, capture, out)
}

/// What `pktsim reference` does, minus printing: the flow-level SRPT and
/// processor-sharing references (`pktsim::metrics::reference`) of the run
/// in `dir` (its `flows.parquet` and `config.toml`) through one bottleneck
/// of `rate` (default: the `bottleneck_rate` of a star or dumbbell, else
/// the topology's host rate). Writes the per-flow table to `out` (default
/// `dir/reference.parquet`) and returns the summary.
pub fn reference_to_file(
    dir: &Path,
    rate: Option<Rate>,
    out: Option<&Path>,
) -> Result<pktsim::metrics::reference::ReferenceSummary, Error> {
    use pktsim::metrics::reference::{flow_references, summarize};
    if let Some(out) = out {
        pktsim::output::check_not_a_run_file(dir, out, "reference.parquet")?;
    }
    let cfg = Config::load(&dir.join("config.toml"))?;
    let rate = match rate {
        Some(r) => r,
        None => bottleneck_rate(&cfg.topology)?,
    };
    let flows = pktsim::metrics::flows_table::read_flows(&dir.join("flows.parquet"))?;
    let refs =
        flow_references(&flows, cfg.network.mss, cfg.network.header_bytes, rate).map_err(|e| {
            Error::File {
                file: dir.join("flows.parquet"),
                msg: e.to_string(),
            }
        })?;
    let default_out = dir.join("reference.parquet");
    pktsim::output::write_reference(out.unwrap_or(&default_out), &flows, &refs)?;
    Ok(summarize(&flows, &refs, rate))
}

/// The single bottleneck of a star (the last host's link) or a dumbbell;
/// the host rate of any other topology.
fn bottleneck_rate(t: &TopologyConfig) -> Result<Rate, Error> {
    let (text, field) = match t {
        TopologyConfig::Star {
            bottleneck_rate: Some(r),
            ..
        } => (r, "topology.bottleneck_rate"),
        TopologyConfig::Dumbbell {
            bottleneck_rate, ..
        } => (bottleneck_rate, "topology.bottleneck_rate"),
        _ => return t.host_rate(),
    };
    parse_rate(text).map_err(|m| Error::config(field, m))
}

/// Hash of a resolved config (the `config_hash` of the run metadata).
pub fn config_hash(resolved: &str) -> String {
    // FNV-1a: stable across platforms and releases, enough to tell configs apart.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in resolved.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    format!("{h:016x}")
}

fn print_summary(s: &Summary) {
    let json = serde_json::to_value(s).unwrap_or_default();
    print_out(&format!(
        "{}\n",
        serde_json::to_string_pretty(&json).unwrap_or_default()
    ));
}

/// Print to stdout; a closed pipe (`pktsim run ... | head`) is not an
/// error worth a panic: the results are in their files already.
fn print_out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_threads_than_cores_warns_and_no_more_does_not() {
        let w = threads_over_cores(8, Some(2)).expect("8 threads on 2 cores");
        assert!(
            w.starts_with("run.threads = 8 is more than the 2 cores"),
            "{w}"
        );
        assert_eq!(threads_over_cores(2, Some(2)), None);
        assert_eq!(threads_over_cores(1, Some(16)), None);
        // Cores unknown: no guess.
        assert_eq!(threads_over_cores(64, None), None);
    }

    #[test]
    fn progress_follows_simulated_time_until_the_last_start_then_flows() {
        let last = Time(1_000_000);
        // Early on few flows have finished, but a tenth of the arrivals
        // has been simulated: the bar says about a tenth, not about zero
        // (an ETA from flows alone came out some 30 times too long).
        let early = progress_fraction(3, 1000, Time(100_000), last);
        assert!((0.08..=0.11).contains(&early), "{early}");
        // After the last start only the backlog is left: flows measure it.
        assert_eq!(progress_fraction(900, 1000, Time(2_000_000), last), 0.9);
        // Everything done is done; flows that all start at once (incast)
        // are measured by flows alone.
        assert_eq!(progress_fraction(1000, 1000, Time(5), last), 1.0);
        assert_eq!(progress_fraction(1, 4, Time(7), Time::ZERO), 0.25);
        assert_eq!(progress_fraction(0, 0, Time(7), Time::ZERO), 1.0);
        // It never goes backwards as the run moves on at a steady pace.
        let mut prev = 0.0;
        for i in 0..=20u64 {
            let f = progress_fraction((i * 45) as usize, 1000, Time(i * 60_000), last);
            assert!(f >= prev, "step {i}: {f} < {prev}");
            prev = f;
        }
    }
}
