//! `pktsim._core`: the compiled half of the Python package.
//!
//! Deliberately small: it parses and validates configs, runs one simulation
//! (with the GIL released) into a results directory, and runs the Rust
//! command line. Everything else (result objects, sweeps, plots, reports)
//! is Python in `python/pktsim/`, which reads the Parquet and JSON files the
//! run wrote, so there is one output format, not two. The statistics the
//! report shows per size bucket come from here too (`stats`,
//! `size_buckets`), so they are `summary.json`'s, not a restatement.
//!
//! Ctrl-C: the core runs on a thread of its own while the calling thread
//! waits with the GIL released and looks at Python's signals every
//! `SIGNAL_POLL`; on Ctrl-C it cancels the run (which stops within
//! 65,536 events and writes nothing) and raises `KeyboardInterrupt`.
//!
//! Errors from user input become `pktsim.ConfigError` with the offending
//! field, file and line as attributes.

// jemalloc in transparent huge pages, as the command has
// (pktsim_cli::allocator).
pktsim_cli::huge_page_allocator!();

use pktsim::config::Config;
use pktsim::metrics::summary::{in_bucket, Stats, DEFAULT_BUCKETS};
use pktsim::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How often a waiting call looks at Python's signals: Ctrl-C is answered
/// within this plus the time the core takes to see its cancel flag.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Run `work` on a thread of its own and wait for it with the GIL
/// released, checking Python's signals every [`SIGNAL_POLL`]. On a signal
/// (a `KeyboardInterrupt` from Ctrl-C), `cancel` is set and, if `join`,
/// the thread is waited for (it must then end soon: a run checks the flag
/// every 65,536 events); otherwise it is left to finish on its own (work
/// with no effects outside itself, such as building a topology).
fn interruptible<R: Send + 'static>(
    py: Python<'_>,
    cancel: &Arc<AtomicBool>,
    join: bool,
    work: impl FnOnce() -> R + Send + 'static,
) -> PyResult<R> {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("pktsim-core".into())
        .spawn(move || {
            // The receiver may be gone (an interrupt did not wait): fine.
            let _ = tx.send(work());
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the core's thread: {e}")))?;
    let mut rx = rx;
    loop {
        // The receiver is not Sync: it goes into the GIL-free closure and
        // comes back out with what it got.
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(r) => {
                let _ = handle.join();
                return Ok(r);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the core's thread ended without a result (a bug: please report it)",
                ));
            }
        }
        if let Err(e) = py.check_signals() {
            cancel.store(true, Ordering::Relaxed);
            if join {
                let _ = py.detach(|| handle.join());
            }
            return Err(e);
        }
    }
}

/// The label `pktsim._config` gives configs that were dicts.
const DICT_LABEL: &str = "<dict>";

/// What `pktsim.ConfigError` carries: message, field, file, line.
struct Located {
    msg: String,
    field: Option<String>,
    file: Option<String>,
    line: Option<usize>,
}

/// The field a parse message names: serde's path (`topology`,
/// `workload[0].load`) joined with the key of an "unknown field `key`".
fn field_of_parse_msg(msg: &str) -> Option<String> {
    let mut path = None;
    // "a.b[0].c: rest" — a path has no spaces and comes first.
    if let Some((head, _)) = msg.split_once(": ") {
        if !head.is_empty() && !head.contains(' ') {
            path = Some(head.to_string());
        }
    }
    let key = msg.find("unknown field `").and_then(|i| {
        let rest = &msg[i + "unknown field `".len()..];
        rest.find('`').map(|j| rest[..j].to_string())
    });
    match (path, key) {
        (Some(p), Some(k)) => Some(format!("{p}.{k}")),
        (Some(p), None) => Some(p),
        (None, Some(k)) => Some(k),
        (None, None) => {
            // "missing field `x`" at the top level.
            let i = msg.find("missing field `")?;
            let rest = &msg[i + "missing field `".len()..];
            rest.find('`').map(|j| rest[..j].to_string())
        }
    }
}

fn locate(e: &Error) -> Located {
    let msg = e.to_string();
    match e {
        Error::Config { field, .. } => Located {
            msg,
            field: Some(field.clone()),
            file: None,
            line: None,
        },
        // A dict was turned into TOML text for the parser: a line in that
        // text means nothing to the caller, the key path does.
        Error::Parse { file, msg: m, .. } if file == DICT_LABEL => Located {
            field: field_of_parse_msg(m),
            msg: format!("{file}: {m}"),
            file: Some(file.clone()),
            line: None,
        },
        Error::Parse { file, line, msg: m } => Located {
            field: field_of_parse_msg(m),
            msg,
            file: Some(file.clone()),
            line: Some(*line),
        },
        Error::FileLine { file, line, .. } => Located {
            msg,
            field: None,
            file: Some(file.display().to_string()),
            line: Some(*line),
        },
        Error::File { file, .. } => Located {
            msg,
            field: None,
            file: Some(file.display().to_string()),
            line: None,
        },
        Error::Topology(_) => Located {
            msg,
            field: Some("topology".into()),
            file: None,
            line: None,
        },
        Error::Output(_) | Error::OutDir { .. } => Located {
            msg,
            field: None,
            file: None,
            line: None,
        },
    }
}

/// Turn a library error into the Python exception users catch.
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match &e {
        Error::Output(m) => return PyOSError::new_err(format!("output: {m}")),
        Error::OutDir { .. } => return PyOSError::new_err(e.to_string()),
        _ => {}
    }
    let l = locate(&e);
    let made = py
        .import("pktsim._errors")
        .and_then(|m| m.getattr("ConfigError"))
        .and_then(|cls| cls.call1((l.msg.clone(), l.field, l.file, l.line)));
    match made {
        Ok(obj) => PyErr::from_value(obj),
        // The Python half is missing (the module used on its own).
        Err(_) => PyValueError::new_err(l.msg),
    }
}

fn parse(py: Python<'_>, toml_text: &str, label: &str) -> PyResult<Config> {
    Config::from_toml_str(toml_text, label).map_err(|e| to_py(py, e))
}

/// Parse and validate a config (TOML text; `label` names it in errors;
/// relative paths resolve against `base_dir`) without running it. Returns
/// the resolved config as TOML, every default filled in, and the warnings
/// `pktsim validate` prints.
#[pyfunction]
#[pyo3(signature = (toml_text, label = "<string>", base_dir = "."))]
fn validate(
    py: Python<'_>,
    toml_text: &str,
    label: &str,
    base_dir: &str,
) -> PyResult<(String, Vec<String>)> {
    let cfg = parse(py, toml_text, label)?;
    let base = PathBuf::from(base_dir);
    let c = cfg.clone();
    // Building a large topology can take a while: Ctrl-C answers at once
    // and leaves the thread to drop what it built.
    let cancel = Arc::new(AtomicBool::new(false));
    let warnings = interruptible(py, &cancel, false, move || {
        c.prepare(&base).map(|exp| exp.warnings)
    })?
    .map_err(|e| to_py(py, e))?;
    Ok((cfg.to_toml(), warnings))
}

/// Turn a JSON object (a config as nested dicts) into TOML text, so that
/// dicts go through the very same parser and errors as files.
#[pyfunction]
fn json_to_toml(json_text: &str) -> PyResult<String> {
    let v: serde_json::Value =
        serde_json::from_str(json_text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let t: toml::Value = toml::Value::try_from(v)
        .map_err(|e| PyValueError::new_err(format!("config cannot be written as TOML: {e}")))?;
    toml::to_string_pretty(&t)
        .map_err(|e| PyValueError::new_err(format!("config cannot be written as TOML: {e}")))
}

/// Run a config (TOML text) and write its results into `out_dir`
/// (`flows.parquet`, `summary.json`, `config.toml`, maybe
/// `queues.parquet`), all or nothing: the directory holds its earlier run
/// until every file of this one is written. Returns the run's warnings
/// (what `pktsim run` prints after `warning: `). The GIL is released while the
/// simulation runs, so Python threads (a progress bar, a Dask worker's
/// heartbeat) keep going; Ctrl-C stops the run, writes nothing and raises
/// `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (toml_text, out_dir, label = "<string>", base_dir = ".", seed = None, quiet = true, command_line = None, threads = None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    toml_text: &str,
    out_dir: &str,
    label: &str,
    base_dir: &str,
    seed: Option<u64>,
    quiet: bool,
    command_line: Option<String>,
    threads: Option<usize>,
) -> PyResult<Vec<String>> {
    let mut cfg = parse(py, toml_text, label)?;
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if threads.is_some() {
        cfg.run.threads = threads;
    }
    let base = PathBuf::from(base_dir);
    let dir = PathBuf::from(out_dir);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Some(cancel.clone());
    interruptible(py, &cancel, true, move || {
        pktsim_cli::run_to_dir(&cfg, &base, &dir, quiet, command_line, flag)
    })?
    .map(|done| done.warnings)
    .map_err(|e| to_py(py, e))
}

/// Flow-level SRPT and processor-sharing references of the run in
/// `run_dir` through one bottleneck (what `pktsim reference` computes):
/// writes the per-flow table to `out` (default `run_dir/reference.parquet`)
/// and returns the summary as JSON text. `rate` (e.g. `"10Gbps"`) overrides
/// the bottleneck rate taken from the run's topology.
#[pyfunction]
#[pyo3(signature = (run_dir, rate = None, out = None))]
fn reference(
    py: Python<'_>,
    run_dir: &str,
    rate: Option<&str>,
    out: Option<&str>,
) -> PyResult<String> {
    let rate = match rate {
        Some(r) => {
            Some(pktsim::time::parse_rate(r).map_err(|m| to_py(py, Error::config("rate", m)))?)
        }
        None => None,
    };
    let dir = PathBuf::from(run_dir);
    let out = out.map(PathBuf::from);
    let summary = py
        .detach(move || pktsim_cli::reference_to_file(&dir, rate, out.as_deref()))
        .map_err(|e| to_py(py, e))?;
    serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Write the pcapng capture of the run in `run_dir` (what `pktsim pcap`
/// does): at `host`, on `link` ("A,B"), or, with neither, every packet as
/// its sender sends it; nodes by index or name. Returns the number of
/// packets written to `out` (default `run_dir/packets.pcapng`).
#[pyfunction]
#[pyo3(signature = (run_dir, host = None, link = None, out = None))]
fn pcap(
    py: Python<'_>,
    run_dir: &str,
    host: Option<&str>,
    link: Option<&str>,
    out: Option<&str>,
) -> PyResult<u64> {
    let dir = PathBuf::from(run_dir);
    let out = out.map_or_else(|| dir.join("packets.pcapng"), PathBuf::from);
    let (host, link) = (host.map(str::to_string), link.map(str::to_string));
    py.detach(move || pktsim_cli::pcap_to_file(&dir, host.as_deref(), link.as_deref(), &out))
        .map_err(|e| to_py(py, e))
}

/// Run the Rust command line (`argv[0]` is the program name); returns the
/// exit code. The GIL is released for the whole command.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || pktsim_cli::main_with_args(argv))
}

/// Count, mean, p50, p99, p99.9 and max of `values`, exactly as
/// `summary.json` computes them (nearest-rank percentiles; None for an
/// empty list).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn stats(
    values: Vec<f64>,
) -> (
    usize,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
) {
    let s = Stats::of(values);
    (s.count, s.mean, s.p50, s.p99, s.p999, s.max)
}

/// The default upper edges of the size buckets, bytes (`summary.json`'s
/// unless a config sets `[output] size_buckets`).
#[pyfunction]
fn default_size_buckets() -> Vec<u64> {
    DEFAULT_BUCKETS.to_vec()
}

/// The buckets that `upper_edges` make: `(above_bytes, up_to_bytes or
/// None, label)` each, as in `summary.json`.
#[pyfunction]
fn size_buckets(upper_edges: Vec<u64>) -> Vec<(u64, Option<u64>, String)> {
    pktsim::metrics::summary::size_buckets(&upper_edges)
}

/// The index of each size's bucket among `size_buckets(upper_edges)`.
#[pyfunction]
fn size_bucket_index(sizes: Vec<u64>, upper_edges: Vec<u64>) -> Vec<usize> {
    let b = pktsim::metrics::summary::size_buckets(&upper_edges);
    sizes
        .iter()
        .map(|&s| {
            b.iter()
                .position(|&(lo, hi, _)| in_bucket(s, lo, hi))
                .unwrap_or(0)
        })
        .collect()
}

/// The pktsim version of the compiled core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The git commit the core was built from, if it was built in a checkout.
#[pyfunction]
fn git_commit() -> Option<&'static str> {
    pktsim_cli::git_commit()
}

/// The module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    m.add_function(wrap_pyfunction!(pcap, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(default_size_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(size_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(size_bucket_index, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(git_commit, m)?)?;
    Ok(())
}
