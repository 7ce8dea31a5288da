//! Writing a run's results: `flows.parquet`, `queues.parquet`,
//! `links.parquet`, `packets.parquet`, `timeseries.parquet`,
//! `summary.json` and the resolved `config.toml`.
//!
//! Parquet files carry units in their column names and run metadata (pktsim
//! version, config hash, seed, protocol) in their key-value metadata. They
//! hold nothing that depends on where or when they were written, so the same
//! config and seed give byte-identical files. A run's files are written
//! into a staging directory and moved into place together (`output::dir`), so a
//! failure never leaves a half-written run under the results directory.

mod dir;
mod links;
mod packets;
pub mod pcap;
mod timeseries;

pub use dir::{OutDirLock, Staging};
pub use links::links_batch;
pub use packets::{header_name, packets_batch, read_packets};
pub use timeseries::timeseries_batch;

use crate::error::{Error, Result};
use crate::metrics::summary::Summary;
use crate::metrics::{FlowResult, QueueSample, RunOutput};
use arrow_array::builder::{Float64Builder, StringDictionaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Facts about the run that are not results: they go into `summary.json`
/// (all of them) and the Parquet metadata (the reproducible ones).
#[derive(Clone, Debug, Serialize)]
pub struct RunMeta {
    /// pktsim version.
    pub pktsim_version: String,
    /// Hash of the resolved config.
    pub config_hash: String,
    /// Run seed.
    pub seed: u64,
    /// The command that made the run (summary only).
    pub command_line: Option<String>,
    /// Git commit of the code (summary only).
    pub git_commit: Option<String>,
}

fn io(e: impl std::fmt::Display) -> Error {
    Error::Output(e.to_string())
}

/// Write `bytes` to `path` atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    // A failed write (a full disk) leaves neither a half file nor its
    // temporary behind.
    let written = std::fs::write(&tmp, bytes)
        .map_err(|e| io(format!("{}: {e}", tmp.display())))
        .and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|e| io(format!("{}: {e}", path.display())))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn parquet_bytes(batch: &RecordBatch, meta: &[(&str, String)]) -> Result<Vec<u8>> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        // A fixed creator string: bytes must not depend on the library build.
        .set_created_by("pktsim".to_string())
        .set_key_value_metadata(Some(
            meta.iter()
                .map(|(k, v)| KeyValue::new(k.to_string(), v.clone()))
                .collect(),
        ))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).map_err(io)?;
    w.write(batch).map_err(io)?;
    w.close().map_err(io)?;
    Ok(buf)
}

/// The flows table as an Arrow record batch. With `host_names` (an explicit
/// topology's, hosts first), `src_name` and `dst_name` columns follow
/// `dst`; other runs keep their columns.
pub fn flows_batch(
    flows: &[FlowResult],
    protocol: &str,
    host_names: Option<&[String]>,
) -> Result<RecordBatch> {
    // The `query` column only in runs with queries: other tables keep
    // their columns.
    let with_queries = flows.iter().any(|f| f.query.is_some());
    let mut cols = FlowColumns::new(flows.len(), with_queries);
    for f in flows {
        cols.push(f, protocol, host_names)?;
    }
    cols.finish(host_names.is_some())
}

/// The flows table's columns as they fill, one row per flow.
struct FlowColumns {
    id: UInt32Builder,
    src: UInt32Builder,
    dst: UInt32Builder,
    size: UInt64Builder,
    start: UInt64Builder,
    finish: UInt64Builder,
    fct: UInt64Builder,
    ideal: UInt64Builder,
    fct_us: Float64Builder,
    slowdown: Float64Builder,
    received: UInt64Builder,
    retx: UInt32Builder,
    drops: UInt32Builder,
    proto: StringDictionaryBuilder<Int32Type>,
    tag: StringDictionaryBuilder<Int32Type>,
    /// Filled only when the table has the column.
    query: UInt32Builder,
    with_queries: bool,
    src_name: StringDictionaryBuilder<Int32Type>,
    dst_name: StringDictionaryBuilder<Int32Type>,
}

impl FlowColumns {
    /// Empty columns for `n` flows.
    fn new(n: usize, with_queries: bool) -> FlowColumns {
        FlowColumns {
            id: UInt32Builder::with_capacity(n),
            src: UInt32Builder::with_capacity(n),
            dst: UInt32Builder::with_capacity(n),
            size: UInt64Builder::with_capacity(n),
            start: UInt64Builder::with_capacity(n),
            finish: UInt64Builder::with_capacity(n),
            fct: UInt64Builder::with_capacity(n),
            ideal: UInt64Builder::with_capacity(n),
            fct_us: Float64Builder::with_capacity(n),
            slowdown: Float64Builder::with_capacity(n),
            received: UInt64Builder::with_capacity(n),
            retx: UInt32Builder::with_capacity(n),
            drops: UInt32Builder::with_capacity(n),
            proto: StringDictionaryBuilder::<Int32Type>::new(),
            tag: StringDictionaryBuilder::<Int32Type>::new(),
            query: UInt32Builder::with_capacity(if with_queries { n } else { 0 }),
            with_queries,
            src_name: StringDictionaryBuilder::<Int32Type>::new(),
            dst_name: StringDictionaryBuilder::<Int32Type>::new(),
        }
    }

    /// One flow's row (its query only where the table has the column).
    fn push(
        &mut self,
        f: &FlowResult,
        protocol: &str,
        host_names: Option<&[String]>,
    ) -> Result<()> {
        let name_of = |names: &[String], node: u32| -> Result<String> {
            names
                .get(node as usize)
                .cloned()
                .ok_or_else(|| io(format!("flow endpoint {node} has no host name")))
        };
        self.id.append_value(f.id);
        self.src.append_value(f.src.0);
        self.dst.append_value(f.dst.0);
        if let Some(names) = host_names {
            self.src_name.append_value(name_of(names, f.src.0)?);
            self.dst_name.append_value(name_of(names, f.dst.0)?);
        }
        self.size.append_value(f.size_bytes);
        self.start.append_value(f.start.ps());
        self.finish.append_option(f.finish.map(|t| t.ps()));
        self.fct.append_option(f.fct().map(|d| d.ps()));
        self.ideal.append_value(f.ideal_fct.ps());
        self.fct_us
            .append_option(f.fct().map(|d| d.ps() as f64 / 1e6));
        self.slowdown.append_option(f.slowdown());
        self.received.append_value(f.bytes_received);
        self.retx.append_value(f.retransmits);
        self.drops.append_value(f.drops);
        self.proto.append_value(protocol);
        self.tag.append_value(&f.tag);
        if self.with_queries {
            self.query.append_option(f.query);
        }
        Ok(())
    }

    /// The batch: the schema and the finished columns, in table order.
    fn finish(mut self, with_names: bool) -> Result<RecordBatch> {
        let with_queries = self.with_queries;
        let dict = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let mut fields = vec![
            Field::new("flow_id", DataType::UInt32, false),
            Field::new("src", DataType::UInt32, false),
            Field::new("dst", DataType::UInt32, false),
        ];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.src.finish()),
            Arc::new(self.dst.finish()),
        ];
        if with_names {
            fields.push(Field::new("src_name", dict(), false));
            fields.push(Field::new("dst_name", dict(), false));
            cols.push(Arc::new(self.src_name.finish()));
            cols.push(Arc::new(self.dst_name.finish()));
        }
        fields.extend([
            Field::new("size_bytes", DataType::UInt64, false),
            Field::new("start_ps", DataType::UInt64, false),
            Field::new("finish_ps", DataType::UInt64, true),
            Field::new("fct_ps", DataType::UInt64, true),
            Field::new("ideal_fct_ps", DataType::UInt64, false),
            Field::new("fct_us", DataType::Float64, true),
            Field::new("slowdown", DataType::Float64, true),
            Field::new("bytes_received", DataType::UInt64, false),
            Field::new("retransmits", DataType::UInt32, false),
            Field::new("drops", DataType::UInt32, false),
            Field::new("protocol", dict(), false),
            Field::new("tag", dict(), false),
        ]);
        if with_queries {
            fields.push(Field::new("query", DataType::UInt32, true));
        }
        let schema = Schema::new(fields);
        cols.extend::<[ArrayRef; 12]>([
            Arc::new(self.size.finish()),
            Arc::new(self.start.finish()),
            Arc::new(self.finish.finish()),
            Arc::new(self.fct.finish()),
            Arc::new(self.ideal.finish()),
            Arc::new(self.fct_us.finish()),
            Arc::new(self.slowdown.finish()),
            Arc::new(self.received.finish()),
            Arc::new(self.retx.finish()),
            Arc::new(self.drops.finish()),
            Arc::new(self.proto.finish()),
            Arc::new(self.tag.finish()),
        ]);
        if with_queries {
            cols.push(Arc::new(self.query.finish()));
        }
        RecordBatch::try_new(Arc::new(schema), cols).map_err(io)
    }
}

/// The queue samples as an Arrow record batch.
pub fn queues_batch(samples: &[QueueSample]) -> Result<RecordBatch> {
    let n = samples.len();
    let mut time = UInt64Builder::with_capacity(n);
    let mut node = UInt32Builder::with_capacity(n);
    let mut port = UInt32Builder::with_capacity(n);
    let mut bytes = UInt64Builder::with_capacity(n);
    let mut packets = UInt32Builder::with_capacity(n);
    for s in samples {
        time.append_value(s.time.ps());
        node.append_value(s.node.0);
        port.append_value(s.port);
        bytes.append_value(s.bytes);
        packets.append_value(s.packets);
    }
    let schema = Schema::new(vec![
        Field::new("time_ps", DataType::UInt64, false),
        Field::new("node", DataType::UInt32, false),
        Field::new("port", DataType::UInt32, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("packets", DataType::UInt32, false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(time.finish()),
        Arc::new(node.finish()),
        Arc::new(port.finish()),
        Arc::new(bytes.finish()),
        Arc::new(packets.finish()),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).map_err(io)
}

/// Write a run's results into the directory `out` locks, all or nothing:
/// every file goes into a staging directory first, flushed to disk, and the
/// directory is swapped into place only when all are written. On an error
/// the results directory is as it was. `host_names` (an explicit
/// topology's, hosts first) add `src_name`/`dst_name` to `flows.parquet`.
pub fn write_run(
    out: &OutDirLock,
    run: &RunOutput,
    summary: &Summary,
    resolved_config_toml: &str,
    meta: &RunMeta,
    host_names: Option<&[String]>,
) -> Result<()> {
    let kv = [
        ("pktsim_version", meta.pktsim_version.clone()),
        ("config_hash", meta.config_hash.clone()),
        ("seed", meta.seed.to_string()),
        ("protocol", run.protocol.clone()),
    ];
    let staging = out.staging()?;
    let flows = parquet_bytes(&flows_batch(&run.flows, &run.protocol, host_names)?, &kv)?;
    staging.write("flows.parquet", &flows)?;
    drop(flows);
    if !run.queue_samples.is_empty() {
        let q = parquet_bytes(&queues_batch(&run.queue_samples)?, &kv)?;
        staging.write("queues.parquet", &q)?;
    }
    if !run.link_samples.is_empty() {
        let l = parquet_bytes(&links_batch(&run.link_samples)?, &kv)?;
        staging.write("links.parquet", &l)?;
    }
    if let Some((rows, _)) = &run.trace {
        let p = parquet_bytes(&packets_batch(rows)?, &kv)?;
        staging.write("packets.parquet", &p)?;
    }
    if !run.timeseries.is_empty() {
        let t = parquet_bytes(&timeseries_batch(&run.timeseries)?, &kv)?;
        staging.write("timeseries.parquet", &t)?;
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        meta: &'a RunMeta,
        #[serde(flatten)]
        summary: &'a Summary,
    }
    let json = serde_json::to_vec_pretty(&Doc { meta, summary }).map_err(io)?;
    staging.write("summary.json", &json)?;
    staging.write("config.toml", resolved_config_toml.as_bytes())?;
    staging.commit()
}

/// Write one row per flow with its measured FCT beside its SRPT and
/// processor-sharing reference FCTs (`pktsim reference`).
pub fn write_reference(
    path: &Path,
    flows: &[FlowResult],
    refs: &[crate::metrics::reference::FlowReference],
) -> Result<()> {
    let n = flows.len();
    let mut id = UInt32Builder::with_capacity(n);
    let mut size = UInt64Builder::with_capacity(n);
    let mut start = UInt64Builder::with_capacity(n);
    let mut fct = UInt64Builder::with_capacity(n);
    let mut ideal = UInt64Builder::with_capacity(n);
    let mut work = UInt64Builder::with_capacity(n);
    let mut srpt = UInt64Builder::with_capacity(n);
    let mut ps = UInt64Builder::with_capacity(n);
    for (f, r) in flows.iter().zip(refs) {
        id.append_value(f.id);
        size.append_value(f.size_bytes);
        start.append_value(f.start.ps());
        fct.append_option(f.fct().map(|d| d.ps()));
        ideal.append_value(f.ideal_fct.ps());
        work.append_value(r.work.ps());
        srpt.append_value(r.srpt_fct.ps());
        ps.append_value(r.ps_fct.ps());
    }
    let u64f = |name: &str, null: bool| Field::new(name, DataType::UInt64, null);
    let schema = Schema::new(vec![
        Field::new("flow_id", DataType::UInt32, false),
        u64f("size_bytes", false),
        u64f("start_ps", false),
        u64f("fct_ps", true),
        u64f("ideal_fct_ps", false),
        u64f("work_ps", false),
        u64f("srpt_fct_ps", false),
        u64f("ps_fct_ps", false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(size.finish()),
        Arc::new(start.finish()),
        Arc::new(fct.finish()),
        Arc::new(ideal.finish()),
        Arc::new(work.finish()),
        Arc::new(srpt.finish()),
        Arc::new(ps.finish()),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), cols).map_err(io)?;
    write_atomic(path, &parquet_bytes(&batch, &[])?)
}

/// The files a run writes into its directory, and those `pktsim report`
/// makes from them: a rerun does not carry the earlier run's copies into
/// its directory (nor the report's `plots/*.png`, `.svg`, `.pdf`), so that
/// none of them can pass for the new run's.
pub const RUN_FILES: &[&str] = &[
    "flows.parquet",
    "queues.parquet",
    "links.parquet",
    "packets.parquet",
    "timeseries.parquet",
    "summary.json",
    "config.toml",
    "report.html",
    "reference.parquet",
    "packets.pcapng",
];

/// Refuse to write `out` when it is one of the files of the run in `dir`
/// (a table, its config, its summary) other than `own`, the file the
/// command writes by default: `pktsim pcap --out` and `reference --out`
/// must not overwrite what they read or what the run wrote.
pub fn check_not_a_run_file(dir: &Path, out: &Path, own: &str) -> Result<()> {
    // By where they are, not how they are spelled: `res/./flows.parquet`
    // and a symbolic link to the folder are the same file.
    let place = |p: &Path| -> Option<PathBuf> {
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(parent.canonicalize().ok()?.join(p.file_name()?))
    };
    let (Some(out_at), Ok(dir_at)) = (place(out), dir.canonicalize()) else {
        return Ok(());
    };
    match RUN_FILES
        .iter()
        .find(|&&name| name != own && out_at == dir_at.join(name))
    {
        Some(name) => Err(Error::File {
            file: out.to_path_buf(),
            msg: format!("is the run's own {name}; give --out another file"),
        }),
        None => Ok(()),
    }
}

fn out_dir_err(dir: &Path, msg: impl Into<String>) -> Error {
    Error::OutDir {
        dir: dir.to_path_buf(),
        msg: msg.into(),
    }
}

/// Check that results can be written into `dir` before anything runs: it
/// is a directory (or can be made in one) and a file can be created there.
/// Creates nothing that stays.
pub fn check_out_dir(dir: &Path) -> Result<()> {
    // The nearest folder that exists: `dir` or one of its parents.
    let existing = dir
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        let msg = if existing == dir {
            "is a file, not a directory; give --out a directory".to_string()
        } else {
            format!(
                "{} is a file, so no directory can be made under it",
                existing.display()
            )
        };
        return Err(out_dir_err(dir, msg));
    }
    let probe = existing.join(format!(".pktsim-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| out_dir_err(dir, format!("cannot write in {}: {e}", existing.display())))
}

/// Peak resident memory of this process (Linux `VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixtures::two_flows;
    use crate::time::Time;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt64Type};
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn run(finish_us: Option<u64>) -> RunOutput {
        RunOutput {
            events: 10,
            windows: None,
            sim_time: Time(1_000_000),
            wall_time: std::time::Duration::from_millis(3),
            protocol: "tcp".into(),
            seed: 9,
            ..RunOutput::of_flows(two_flows(finish_us))
        }
    }

    fn meta() -> RunMeta {
        RunMeta {
            pktsim_version: "0".into(),
            config_hash: "abc".into(),
            seed: 9,
            command_line: Some("pktsim run x".into()),
            git_commit: None,
        }
    }

    fn try_write(dir: &Path, r: &RunOutput, names: Option<&[String]>) -> Result<()> {
        let s = Summary::from_run(r, crate::metrics::summary::DEFAULT_BUCKETS);
        let lock = OutDirLock::acquire(dir)?;
        write_run(&lock, r, &s, "seed = 9\n", &meta(), names)
    }

    fn write(dir: &Path, r: &RunOutput) -> Vec<u8> {
        try_write(dir, r, None).unwrap();
        std::fs::read(dir.join("flows.parquet")).unwrap()
    }

    /// Everything under `dir`, as sorted relative paths with their bytes.
    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                    out.push((rel, std::fs::read(e.path()).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    /// Names in `dir`'s parent that start with `.<name>.pktsim`: locks and
    /// staging directories.
    fn debris(dir: &Path) -> Vec<String> {
        let name = format!(".{}.pktsim", dir.file_name().unwrap().to_string_lossy());
        std::fs::read_dir(dir.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&name))
            .collect()
    }

    #[test]
    fn a_failed_write_leaves_the_previous_run_and_nothing_else() {
        let tmp = tempdir("fail");
        let d = tmp.join("run");
        write(&d, &run(Some(10)));
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let before = snapshot(&d);
        // Each file in turn fails as on a full disk: flows.parquet first,
        // then the later ones after the earlier were written.
        for f in ["flows.parquet", "summary.json", "config.toml"] {
            dir::FAIL_WRITE.with(|x| *x.borrow_mut() = Some(f.to_string()));
            let e = try_write(&d, &run(Some(99)), None).unwrap_err().to_string();
            dir::FAIL_WRITE.with(|x| *x.borrow_mut() = None);
            assert!(e.contains(f) && e.contains("No space left"), "{e}");
            assert!(snapshot(&d) == before, "{f}: the previous run changed");
            assert!(debris(&d).is_empty(), "{f}: left {:?}", debris(&d));
        }
        // And a first run that fails leaves no directory at all, not even
        // the folders made to hold it.
        let fresh = tmp.join("deeper/fresh");
        dir::FAIL_WRITE.with(|x| *x.borrow_mut() = Some("summary.json".into()));
        assert!(try_write(&fresh, &run(Some(10)), None).is_err());
        dir::FAIL_WRITE.with(|x| *x.borrow_mut() = None);
        assert!(!tmp.join("deeper").exists());
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let tmp = tempdir("lock");
        let d = tmp.join("run");
        let first = OutDirLock::acquire(&d).unwrap();
        let e = OutDirLock::acquire(&d).unwrap_err().to_string();
        assert!(e.contains("another pktsim run is writing into it"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // Another path to the same folder is the same lock.
        std::fs::create_dir_all(tmp.join("x")).unwrap();
        let e = OutDirLock::acquire(&tmp.join("x/../run")).unwrap_err();
        assert!(e.to_string().contains("another"), "{e}");
        drop(first);
        assert!(debris(&d).is_empty(), "{:?}", debris(&d));
        let again = OutDirLock::acquire(&d).unwrap();
        // A killed run's staging directory is removed by the next lock.
        let stale = tmp.join(".run.pktsim-tmp-1-0");
        drop(again);
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("flows.parquet"), "half").unwrap();
        drop(OutDirLock::acquire(&d).unwrap());
        assert!(!stale.exists());
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn explicit_host_names_sit_beside_the_indices() {
        let names = vec!["alice".to_string(), "bob".to_string()];
        let r = run(Some(10));
        let b = flows_batch(&r.flows, "tcp", Some(&names)).unwrap();
        let cols: Vec<&str> = b
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(cols[..5], ["flow_id", "src", "dst", "src_name", "dst_name"]);
        let name = |c: &str, i: usize| {
            let d = b.column_by_name(c).unwrap().as_dictionary::<Int32Type>();
            let v = d.values().as_string::<i32>();
            v.value(d.keys().value(i) as usize).to_string()
        };
        assert_eq!(
            (name("src_name", 0), name("dst_name", 0)),
            ("alice".into(), "bob".into())
        );
        assert_eq!(
            (name("src_name", 1), name("dst_name", 1)),
            ("bob".into(), "alice".into())
        );
        // Without names, the table is the one it always was, and the
        // columns after the names are the same bytes.
        let plain = flows_batch(&r.flows, "tcp", None).unwrap();
        assert_eq!(plain.num_columns() + 2, b.num_columns());
        assert!(plain.schema_ref().column_with_name("src_name").is_none());
        for f in plain.schema_ref().fields() {
            assert_eq!(plain.column_by_name(f.name()), b.column_by_name(f.name()));
        }
        // A flow whose endpoint has no name is an error, not a panic.
        assert!(flows_batch(&r.flows, "tcp", Some(&names[..1])).is_err());
    }

    fn tempdir(what: &str) -> std::path::PathBuf {
        let t = std::env::temp_dir().join(format!("pktsim-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(&t).unwrap();
        t
    }

    #[test]
    fn flows_round_trip_with_nulls_and_are_byte_identical() {
        let tmp = std::env::temp_dir().join(format!("pktsim-out-{}", std::process::id()));
        let a = write(&tmp.join("a"), &run(Some(10)));
        let b = write(&tmp.join("b"), &run(Some(10)));
        let c = write(&tmp.join("c"), &run(Some(11)));
        assert!(a == b, "same results, different bytes");
        assert!(a != c, "different results, same bytes");
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(a)).unwrap();
        let kv = reader
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .clone();
        assert!(kv
            .iter()
            .any(|k| k.key == "seed" && k.value.as_deref() == Some("9")));
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let fct = batch
            .column_by_name("fct_ps")
            .unwrap()
            .as_primitive::<UInt64Type>();
        assert_eq!(fct.value(0), 10_000_000);
        assert!(fct.is_null(1));
        let sd = batch
            .column_by_name("slowdown")
            .unwrap()
            .as_primitive::<Float64Type>();
        assert_eq!(sd.value(0), 5.0);
        assert!(tmp.join("a/summary.json").exists() && tmp.join("a/config.toml").exists());
        let summary = std::fs::read_to_string(tmp.join("a/summary.json")).unwrap();
        assert!(summary.contains("\"command_line\"") && summary.contains("\"slowdown\""));
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn out_dir_checks_and_stale_files() {
        let tmp = std::env::temp_dir().join(format!("pktsim-outdir-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let file = tmp.join("a-file");
        std::fs::write(&file, "x").unwrap();
        let e = check_out_dir(&file).unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
        let e = check_out_dir(&file.join("sub")).unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
        // A new directory is fine and is not created by the check.
        assert!(check_out_dir(&tmp.join("new/deeper")).is_ok());
        assert!(!tmp.join("new").exists());
        // A rerun's directory loses the old run's files, keeps others.
        let d = tmp.join("run");
        std::fs::create_dir_all(d.join("plots")).unwrap();
        std::fs::create_dir_all(d.join("mine/deep")).unwrap();
        for f in [
            "queues.parquet",
            "summary.json",
            "report.html",
            "notes.txt",
            "plots/old.png",
            "plots/old.svg",
            "plots/keep.txt",
            "mine/deep/data.csv",
        ] {
            std::fs::write(d.join(f), "old").unwrap();
        }
        write(&d, &run(Some(10)));
        assert!(!d.join("queues.parquet").exists() && !d.join("report.html").exists());
        assert!(std::fs::read(d.join("summary.json")).unwrap() != b"old");
        assert!(!d.join("plots/old.png").exists() && !d.join("plots/old.svg").exists());
        for f in ["notes.txt", "plots/keep.txt", "mine/deep/data.csv"] {
            assert_eq!(std::fs::read(d.join(f)).unwrap(), b"old", "{f}");
        }
        assert!(debris(&d).is_empty(), "{:?}", debris(&d));
        std::fs::remove_dir_all(&tmp).ok();
    }
}
