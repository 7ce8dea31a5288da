//! The results directory end to end: a second run into a directory that
//! another run holds is refused and changes nothing; argument mistakes are
//! one line; `--help` says where the Python package's commands come from;
//! an explicit topology's host names reach `flows.parquet`.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type};
use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::Path;
use std::process::Output;

mod common;
use common::{leaf_spine_dctcp, pktsim};

/// The run these tests write: 100 web search flows.
fn config() -> String {
    leaf_spine_dctcp("websearch", 100)
}

/// Every file under `dir` with its bytes, sorted by path.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            out.push((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

fn one_line_error(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "want one line, got: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

#[test]
fn a_second_run_into_a_locked_directory_is_refused_and_changes_nothing() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("exp.toml"), config()).unwrap();
    let first = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], t.path());
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let before = snapshot(&t.path().join("res"));
    assert!(before.iter().any(|(n, _)| n == "flows.parquet"));
    // Another run holds the directory: this process, through the library
    // the command uses, for as long as the test needs (no race with a
    // run that might end first).
    let held = pktsim::output::OutDirLock::acquire(&t.path().join("res")).unwrap();
    let o = pktsim(&["run", "exp.toml", "--quiet", "--out", "res"], t.path());
    let err = one_line_error(&o);
    assert!(
        err.contains("another pktsim run is writing into it"),
        "{err}"
    );
    assert!(
        snapshot(&t.path().join("res")) == before,
        "the refused run wrote"
    );
    // Released, the directory takes the next run.
    drop(held);
    let o = pktsim(
        &["run", "exp.toml", "--quiet", "--out", "res", "--seed", "2"],
        t.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(snapshot(&t.path().join("res")) != before);
    // And leaves neither its lock nor a staging directory beside it.
    let beside: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("pktsim"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}

#[test]
fn help_names_the_python_commands_and_argument_errors_are_one_line() {
    let t = tempfile::tempdir().unwrap();
    let help = pktsim(&["--help"], t.path());
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for c in ["sweep", "report", "reproduce", "pip install ."] {
        assert!(text.contains(c), "{c:?} not in --help:\n{text}");
    }
    let err = one_line_error(&pktsim(&["sweep", "s.toml"], t.path()));
    assert!(
        err.contains("Python package") && err.contains("pip install"),
        "{err}"
    );
    let err = one_line_error(&pktsim(&["run", "x.toml", "--bogus"], t.path()));
    assert!(err.contains("--bogus") && err.contains("--help"), "{err}");
    let err = one_line_error(&pktsim(&["run"], t.path()));
    assert!(err.contains("CONFIG"), "{err}");
    let err = one_line_error(&pktsim(&["run", "x.toml", "--seed", "many"], t.path()));
    assert!(err.contains("--seed") && err.contains("many"), "{err}");
}

#[test]
fn explicit_host_names_reach_flows_parquet() {
    let t = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = repo.join("examples/explicit_csv.toml");
    let out = t.path().join("res");
    let o = pktsim(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        t.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (cols, batch) = read_parquet(&out.join("flows.parquet"));
    assert_eq!(cols[..5], ["flow_id", "src", "dst", "src_name", "dst_name"]);
    let hosts = ["a", "b", "c"];
    for (idx, name) in [("src", "src_name"), ("dst", "dst_name")] {
        let ids = batch
            .column_by_name(idx)
            .unwrap()
            .as_primitive::<UInt32Type>();
        let names = batch
            .column_by_name(name)
            .unwrap()
            .as_dictionary::<Int32Type>();
        let values = names.values().as_string::<i32>();
        assert!(batch.num_rows() > 0);
        for i in 0..batch.num_rows() {
            let n = values.value(names.keys().value(i) as usize);
            assert_eq!(n, hosts[ids.value(i) as usize], "row {i} of {name}");
        }
    }
    std::fs::write(t.path().join("exp.toml"), config()).unwrap();
    let o = pktsim(&["run", "exp.toml", "--quiet", "--out", "plain"], t.path());
    assert!(o.status.success());
    let (cols, _) = read_parquet(&t.path().join("plain/flows.parquet"));
    assert!(!cols.iter().any(|c| c.ends_with("_name")), "{cols:?}");
}

/// The column names and the (single) record batch of a Parquet file.
fn read_parquet(path: &Path) -> (Vec<String>, RecordBatch) {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batch = reader.next().unwrap().unwrap();
    let cols = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    (cols, batch)
}
