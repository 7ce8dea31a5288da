//! Reading a run's `flows.parquet` back into flow records, for analyses
//! that start from results on disk (e.g. `pktsim reference`).

use crate::error::{Error, Result};
use crate::metrics::FlowResult;
use crate::packet::NodeId;
use crate::time::{Duration, Time};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::Path;

fn bad(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::File {
        file: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// Read every flow of a `flows.parquet` written by [`crate::output`].
pub fn read_flows(path: &Path) -> Result<Vec<FlowResult>> {
    let file = std::fs::File::open(path).map_err(|e| bad(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| bad(path, format!("not a flows table: {e}")))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(path, e))?;
        append(&batch, path, &mut out)?;
    }
    Ok(out)
}

fn append(b: &RecordBatch, path: &Path, out: &mut Vec<FlowResult>) -> Result<()> {
    let col = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| bad(path, format!("no column `{name}`")))
    };
    let u32s = |name: &str| {
        col(name).and_then(|c| {
            c.as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| bad(path, format!("column `{name}` is not u32")))
        })
    };
    let u64s = |name: &str| {
        col(name).and_then(|c| {
            c.as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| bad(path, format!("column `{name}` is not u64")))
        })
    };
    let (id, src, dst) = (u32s("flow_id")?, u32s("src")?, u32s("dst")?);
    let (size, start, finish) = (u64s("size_bytes")?, u64s("start_ps")?, u64s("finish_ps")?);
    let (ideal, received) = (u64s("ideal_fct_ps")?, u64s("bytes_received")?);
    let (retx, drops) = (u32s("retransmits")?, u32s("drops")?);
    let tag = col("tag")?
        .as_dictionary_opt::<Int32Type>()
        .ok_or_else(|| bad(path, "column `tag` is not a dictionary"))?;
    let tag_names = tag
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| bad(path, "column `tag` has no string values"))?;
    // Present only in runs with queries.
    let query = match b.column_by_name("query") {
        Some(c) => Some(
            c.as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| bad(path, "column `query` is not u32"))?,
        ),
        None => None,
    };
    for i in 0..b.num_rows() {
        let name = if tag.keys().is_valid(i) {
            tag_names.value(tag.keys().value(i) as usize).to_string()
        } else {
            String::new()
        };
        out.push(FlowResult {
            id: id.value(i),
            src: NodeId(src.value(i)),
            dst: NodeId(dst.value(i)),
            size_bytes: size.value(i),
            start: Time(start.value(i)),
            finish: finish.is_valid(i).then(|| Time(finish.value(i))),
            ideal_fct: Duration(ideal.value(i)),
            bytes_received: received.value(i),
            retransmits: retx.value(i),
            drops: drops.value(i),
            tag: name,
            query: query.and_then(|q| q.is_valid(i).then(|| q.value(i))),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixtures::two_flows;
    use crate::metrics::RunOutput;
    use crate::output::{write_run, OutDirLock, RunMeta};

    #[test]
    fn flows_written_are_read_back_unchanged() {
        let flows = two_flows(Some(9));
        let run = RunOutput::of_flows(flows.clone());
        let dir = std::env::temp_dir().join(format!("pktsim-flows-table-{}", std::process::id()));
        let s = crate::metrics::summary::Summary::from_run(
            &run,
            crate::metrics::summary::DEFAULT_BUCKETS,
        );
        let meta = RunMeta {
            pktsim_version: "0".into(),
            config_hash: "x".into(),
            seed: 1,
            command_line: None,
            git_commit: None,
        };
        let lock = OutDirLock::acquire(&dir).unwrap();
        write_run(&lock, &run, &s, "seed = 1\n", &meta, None).unwrap();
        drop(lock);
        let back = read_flows(&dir.join("flows.parquet")).unwrap();
        assert_eq!(back, flows);
        assert!(read_flows(&dir.join("summary.json")).is_err());
        assert!(read_flows(&dir.join("missing.parquet")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
