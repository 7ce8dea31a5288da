//! `packets.parquet`: the packet trace (`[output.trace]`), one row per hop
//! event of a traced packet, in time order ([`crate::net::trace`]).
//!
//! One table, [`COLUMNS`], says what each column holds and how to read it
//! from a row; writing and reading back both go through it.

use super::io;
use crate::error::{Error, Result};
use crate::metrics::DropReason;
use crate::net::trace::{TraceEvent, TraceRow};
use crate::packet::{flags, FlowId, Header, NodeId, Packet, PacketKind, PortId};
use crate::time::Time;
use arrow_array::builder::{BooleanBuilder, StringDictionaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::Path;
use std::sync::Arc;

/// The name of a header's layout in the `header` column.
pub fn header_name(h: &Header) -> &'static str {
    match h {
        Header::TcpData { .. } => "tcp_data",
        Header::TcpAck { .. } => "tcp_ack",
        Header::Ctrl { .. } => "ctrl",
    }
}

/// How a column's value comes from a row (`None`: null).
enum Get {
    U64(fn(&TraceRow) -> Option<u64>),
    U32(fn(&TraceRow) -> Option<u32>),
    Flag(u8),
    Text(fn(&TraceRow) -> Option<&'static str>),
}

/// Every column, in order: its name and how to get it.
const COLUMNS: &[(&str, Get)] = &[
    ("time_ps", Get::U64(|r| Some(r.time.ps()))),
    ("event", Get::Text(|r| Some(r.event.name()))),
    ("node", Get::U32(|r| Some(r.node.0))),
    ("port", Get::U32(|r| r.port.map(|p| p.0))),
    ("peer", Get::U32(|r| r.peer.map(|p| p.0))),
    ("flow", Get::U32(|r| Some(r.pkt.flow.0))),
    ("kind", Get::Text(|r| Some(kind_name(r.pkt.kind)))),
    ("src", Get::U32(|r| Some(r.pkt.src.0))),
    ("dst", Get::U32(|r| Some(r.pkt.dst.0))),
    ("size_bytes", Get::U32(|r| Some(r.pkt.size))),
    ("payload_bytes", Get::U32(|r| Some(r.pkt.payload))),
    ("prio", Get::U32(|r| Some(r.pkt.prio))),
    ("class", Get::U32(|r| Some(r.pkt.class as u32))),
    ("hops", Get::U32(|r| Some(r.pkt.hops as u32))),
    ("ect", Get::Flag(flags::ECT)),
    ("ce", Get::Flag(flags::CE)),
    ("ece", Get::Flag(flags::ECE)),
    ("cwr", Get::Flag(flags::CWR)),
    ("retx", Get::Flag(flags::RETX)),
    ("notice", Get::Flag(flags::NOTICE)),
    ("trimmed", Get::Flag(flags::TRIMMED)),
    ("sent_ps", Get::U64(|r| Some(r.pkt.sent_at.ps()))),
    ("queue_bytes", Get::U64(|r| r.queue_bytes)),
    ("reason", Get::Text(|r| r.reason.map(DropReason::name))),
    ("header", Get::Text(|r| Some(header_name(&r.pkt.header)))),
    ("seq", Get::U64(|r| header_fields(&r.pkt.header).0)),
    ("ack", Get::U64(|r| header_fields(&r.pkt.header).1)),
    ("sack", Get::U32(|r| header_fields(&r.pkt.header).2)),
    ("wnd", Get::U32(|r| header_fields(&r.pkt.header).3)),
    ("ctrl_kind", Get::U32(|r| header_fields(&r.pkt.header).4)),
    ("ctrl_a", Get::U64(|r| header_fields(&r.pkt.header).5)),
    ("ctrl_b", Get::U32(|r| header_fields(&r.pkt.header).6)),
];

/// Columns that are never null.
const NOT_NULL: &[&str] = &[
    "time_ps",
    "event",
    "node",
    "flow",
    "kind",
    "src",
    "dst",
    "size_bytes",
    "payload_bytes",
    "prio",
    "class",
    "hops",
    "sent_ps",
    "header",
];

fn kind_name(k: PacketKind) -> &'static str {
    match k {
        PacketKind::Data => "data",
        PacketKind::Control => "control",
    }
}

/// The header's fields by column: seq, ack, sack, wnd, ctrl kind, ctrl a,
/// ctrl b (each set only in the layout that has it).
#[allow(clippy::type_complexity)]
fn header_fields(
    h: &Header,
) -> (
    Option<u64>,
    Option<u64>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    Option<u64>,
    Option<u32>,
) {
    match *h {
        Header::TcpData { seq } => (Some(seq), None, None, None, None, None, None),
        Header::TcpAck { ack, sack, wnd } => (
            None,
            Some(ack),
            Some(sack),
            Some(wnd as u32),
            None,
            None,
            None,
        ),
        Header::Ctrl { kind, a, b } => {
            (None, None, None, None, Some(kind as u32), Some(a), Some(b))
        }
    }
}

/// The trace's rows as an Arrow record batch.
pub fn packets_batch(rows: &[TraceRow]) -> Result<RecordBatch> {
    let n = rows.len();
    let text = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let mut fields = Vec::with_capacity(COLUMNS.len());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(COLUMNS.len());
    for (name, get) in COLUMNS {
        let (ty, col): (DataType, ArrayRef) = match get {
            Get::U64(f) => {
                let mut b = UInt64Builder::with_capacity(n);
                rows.iter().for_each(|r| b.append_option(f(r)));
                (DataType::UInt64, Arc::new(b.finish()))
            }
            Get::U32(f) => {
                let mut b = UInt32Builder::with_capacity(n);
                rows.iter().for_each(|r| b.append_option(f(r)));
                (DataType::UInt32, Arc::new(b.finish()))
            }
            Get::Flag(flag) => {
                let mut b = BooleanBuilder::with_capacity(n);
                rows.iter().for_each(|r| b.append_value(r.pkt.has(*flag)));
                (DataType::Boolean, Arc::new(b.finish()))
            }
            Get::Text(f) => {
                let mut b = StringDictionaryBuilder::<Int32Type>::new();
                rows.iter().for_each(|r| b.append_option(f(r)));
                (text(), Arc::new(b.finish()))
            }
        };
        let nullable = !NOT_NULL.contains(name) && !matches!(get, Get::Flag(_));
        fields.push(Field::new(*name, ty, nullable));
        cols.push(col);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(io)
}

/// Read `packets.parquet` back into trace rows. What the table does not
/// keep is left at its default: a row's number among its node's rows (the
/// rows come in order), a packet's path choice, ready time and
/// source-routing flag.
pub fn read_packets(path: &Path) -> Result<Vec<TraceRow>> {
    let bad = |msg: String| Error::File {
        file: path.to_path_buf(),
        msg,
    };
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| bad(format!("not a packet trace: {e}")))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        let table = Table::of(&batch).map_err(&bad)?;
        for i in 0..batch.num_rows() {
            out.push(table.row(i).map_err(&bad)?);
        }
    }
    Ok(out)
}

/// A record batch's columns by name, to read rows from.
struct Table<'a> {
    batch: &'a RecordBatch,
}

impl<'a> Table<'a> {
    /// The batch, once every column [`COLUMNS`] names is there.
    fn of(batch: &'a RecordBatch) -> std::result::Result<Self, String> {
        for (name, _) in COLUMNS {
            if batch.column_by_name(name).is_none() {
                return Err(format!("no column `{name}`"));
            }
        }
        Ok(Table { batch })
    }

    fn col(&self, name: &str) -> &'a ArrayRef {
        self.batch
            .column_by_name(name)
            .expect("checked by Table::of")
    }

    fn u64(&self, name: &str, i: usize) -> std::result::Result<Option<u64>, String> {
        let a = self.col(name).as_primitive_opt::<UInt64Type>();
        let a = a.ok_or(format!("column `{name}` is not u64"))?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    }

    fn u32(&self, name: &str, i: usize) -> std::result::Result<Option<u32>, String> {
        let a = self.col(name).as_primitive_opt::<UInt32Type>();
        let a = a.ok_or(format!("column `{name}` is not u32"))?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    }

    fn flag(&self, name: &str, i: usize) -> std::result::Result<bool, String> {
        let a = self.col(name).as_boolean_opt();
        Ok(a.ok_or(format!("column `{name}` is not boolean"))?.value(i))
    }

    fn text(&self, name: &str, i: usize) -> std::result::Result<Option<&'a str>, String> {
        let d = self.col(name).as_dictionary_opt::<Int32Type>();
        let d = d.ok_or(format!("column `{name}` is not a dictionary"))?;
        let values = d.values().as_string_opt::<i32>();
        let values = values.ok_or(format!("column `{name}` has no string values"))?;
        Ok(d.keys()
            .is_valid(i)
            .then(|| values.value(d.keys().value(i) as usize)))
    }

    /// Row `i` as a trace row.
    fn row(&self, i: usize) -> std::result::Result<TraceRow, String> {
        let need = |v: Option<u64>, name: &str| v.ok_or(format!("row {i}: no {name}"));
        let event = self.text("event", i)?.unwrap_or_default();
        let event = TraceEvent::ALL
            .into_iter()
            .find(|e| e.name() == event)
            .ok_or(format!("row {i}: unknown event {event:?}"))?;
        let kind = match self.text("kind", i)? {
            Some("data") => PacketKind::Data,
            _ => PacketKind::Control,
        };
        let u32_or_0 = |name: &str| self.u32(name, i).map(Option::unwrap_or_default);
        let u64_or_0 = |name: &str| self.u64(name, i).map(Option::unwrap_or_default);
        let header = match self.text("header", i)? {
            Some("tcp_data") => Header::TcpData {
                seq: u64_or_0("seq")?,
            },
            Some("tcp_ack") => Header::TcpAck {
                ack: u64_or_0("ack")?,
                sack: u32_or_0("sack")?,
                wnd: u32_or_0("wnd")? as u16,
            },
            _ => Header::Ctrl {
                kind: u32_or_0("ctrl_kind")? as u8,
                a: u64_or_0("ctrl_a")?,
                b: u32_or_0("ctrl_b")?,
            },
        };
        let (flow, src, dst) = (u32_or_0("flow")?, u32_or_0("src")?, u32_or_0("dst")?);
        let mut pkt = Packet::new(
            FlowId(flow),
            NodeId(src),
            NodeId(dst),
            u32_or_0("size_bytes")?,
            kind,
            header,
        );
        pkt.payload = u32_or_0("payload_bytes")?;
        pkt.prio = u32_or_0("prio")?;
        pkt.class = u32_or_0("class")? as u8;
        pkt.hops = u32_or_0("hops")? as u8;
        pkt.sent_at = Time(u64_or_0("sent_ps")?);
        for (name, get) in COLUMNS {
            if let Get::Flag(f) = get {
                if self.flag(name, i)? {
                    pkt.flags |= f;
                }
            }
        }
        let reason = self.text("reason", i)?;
        Ok(TraceRow {
            time: Time(need(self.u64("time_ps", i)?, "time")?),
            node: NodeId(u32_or_0("node")?),
            seq: 0,
            event,
            port: self.u32("port", i)?.map(PortId),
            peer: self.u32("peer", i)?.map(NodeId),
            queue_bytes: self.u64("queue_bytes", i)?,
            reason: DropReason::ALL
                .into_iter()
                .find(|r| reason == Some(r.name())),
            pkt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_they_were_written() {
        let mut pkt = Packet::new(
            FlowId(4),
            NodeId(1),
            NodeId(2),
            1500,
            PacketKind::Data,
            Header::TcpData { seq: 2920 },
        );
        pkt.flags = flags::ECT | flags::RETX;
        pkt.payload = 1460;
        let data = TraceRow {
            time: Time(5),
            node: NodeId(3),
            seq: 0,
            event: TraceEvent::Drop,
            port: Some(PortId(7)),
            peer: Some(NodeId(2)),
            queue_bytes: None,
            reason: Some(DropReason::BufferFull),
            pkt,
        };
        let mut ack = data;
        ack.event = TraceEvent::Deliver;
        ack.reason = None;
        ack.queue_bytes = Some(9);
        ack.pkt.kind = PacketKind::Control;
        ack.pkt.header = Header::TcpAck {
            ack: 9,
            sack: 3,
            wnd: 40,
        };
        let ctrl = TraceRow {
            pkt: Packet {
                header: Header::Ctrl {
                    kind: 2,
                    a: 1 << 40,
                    b: 6,
                },
                ..ack.pkt
            },
            port: None,
            peer: None,
            ..ack
        };
        let rows = [data, ack, ctrl];
        let batch = packets_batch(&rows).unwrap();
        let table = Table::of(&batch).unwrap();
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(table.row(i).unwrap(), *r);
        }
    }
}
