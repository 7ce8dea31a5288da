//! `timeseries.parquet`: the per-flow time series (`[output.timeseries]`),
//! one row per value, in time order ([`crate::metrics::timeseries`]).

use super::io;
use crate::error::Result;
use crate::metrics::timeseries::SeriesRow;
use arrow_array::builder::{Float64Builder, StringDictionaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// The series as an Arrow record batch: `time_ps`, `flow`, `host` (where
/// the value was read: the flow's source or destination), `variable` (its
/// unit in its name) and `value`.
pub fn timeseries_batch(rows: &[SeriesRow]) -> Result<RecordBatch> {
    let n = rows.len();
    let mut time = UInt64Builder::with_capacity(n);
    let (mut flow, mut host) = (
        UInt32Builder::with_capacity(n),
        UInt32Builder::with_capacity(n),
    );
    let mut variable = StringDictionaryBuilder::<Int32Type>::new();
    let mut value = Float64Builder::with_capacity(n);
    for r in rows {
        time.append_value(r.time.ps());
        flow.append_value(r.flow.0);
        host.append_value(r.host.0);
        variable.append_value(r.variable);
        value.append_value(r.value);
    }
    let text = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let schema = Schema::new(vec![
        Field::new("time_ps", DataType::UInt64, false),
        Field::new("flow", DataType::UInt32, false),
        Field::new("host", DataType::UInt32, false),
        Field::new("variable", text, false),
        Field::new("value", DataType::Float64, false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(time.finish()),
        Arc::new(flow.finish()),
        Arc::new(host.finish()),
        Arc::new(variable.finish()),
        Arc::new(value.finish()),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).map_err(io)
}
