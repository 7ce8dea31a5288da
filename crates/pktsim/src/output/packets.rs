//! `packets.parquet`: the packet trace (`[output.trace]`), one row per hop
//! event of a traced packet, in time order ([`crate::net::trace`]).

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

/// The trace's rows as an Arrow record batch.
pub fn packets_batch(rows: &[TraceRow]) -> Result<RecordBatch> {
    let n = rows.len();
    let u64s = || UInt64Builder::with_capacity(n);
    let u32s = || UInt32Builder::with_capacity(n);
    let dict = StringDictionaryBuilder::<Int32Type>::new;
    let bools = || BooleanBuilder::with_capacity(n);
    let (mut time, mut sent, mut queue) = (u64s(), u64s(), u64s());
    let (mut event, mut kind, mut reason, mut header) = (dict(), dict(), dict(), dict());
    let (mut node, mut port, mut peer) = (u32s(), u32s(), u32s());
    let (mut flow, mut src, mut dst) = (u32s(), u32s(), u32s());
    let (mut size, mut payload, mut prio, mut class, mut hops) =
        (u32s(), u32s(), u32s(), u32s(), u32s());
    let (mut ect, mut ce, mut ece, mut cwr, mut retx, mut notice, mut trimmed) = (
        bools(),
        bools(),
        bools(),
        bools(),
        bools(),
        bools(),
        bools(),
    );
    let (mut seq, mut ack, mut ctrl_a) = (u64s(), u64s(), u64s());
    let (mut sack, mut wnd, mut ctrl_kind, mut ctrl_b) = (u32s(), u32s(), u32s(), u32s());
    for r in rows {
        let p = &r.pkt;
        time.append_value(r.time.ps());
        event.append_value(r.event.name());
        node.append_value(r.node.0);
        port.append_option(r.port.map(|p| p.0));
        peer.append_option(r.peer.map(|p| p.0));
        flow.append_value(p.flow.0);
        kind.append_value(match p.kind {
            PacketKind::Data => "data",
            PacketKind::Control => "control",
        });
        src.append_value(p.src.0);
        dst.append_value(p.dst.0);
        size.append_value(p.size);
        payload.append_value(p.payload);
        prio.append_value(p.prio);
        class.append_value(p.class as u32);
        hops.append_value(p.hops as u32);
        for (col, f) in [
            (&mut ect, flags::ECT),
            (&mut ce, flags::CE),
            (&mut ece, flags::ECE),
            (&mut cwr, flags::CWR),
            (&mut retx, flags::RETX),
            (&mut notice, flags::NOTICE),
            (&mut trimmed, flags::TRIMMED),
        ] {
            col.append_value(p.has(f));
        }
        sent.append_value(p.sent_at.ps());
        queue.append_option(r.queue_bytes);
        match r.reason {
            Some(x) => reason.append_value(x.name()),
            None => reason.append_null(),
        }
        header.append_value(header_name(&p.header));
        let (s, a, sk, w, ck, ca, cb) = match p.header {
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
        };
        seq.append_option(s);
        ack.append_option(a);
        sack.append_option(sk);
        wnd.append_option(w);
        ctrl_kind.append_option(ck);
        ctrl_a.append_option(ca);
        ctrl_b.append_option(cb);
    }
    let text = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let columns: Vec<(&str, DataType, bool, ArrayRef)> = vec![
        ("time_ps", DataType::UInt64, false, Arc::new(time.finish())),
        ("event", text(), false, Arc::new(event.finish())),
        ("node", DataType::UInt32, false, Arc::new(node.finish())),
        ("port", DataType::UInt32, true, Arc::new(port.finish())),
        ("peer", DataType::UInt32, true, Arc::new(peer.finish())),
        ("flow", DataType::UInt32, false, Arc::new(flow.finish())),
        ("kind", text(), false, Arc::new(kind.finish())),
        ("src", DataType::UInt32, false, Arc::new(src.finish())),
        ("dst", DataType::UInt32, false, Arc::new(dst.finish())),
        (
            "size_bytes",
            DataType::UInt32,
            false,
            Arc::new(size.finish()),
        ),
        (
            "payload_bytes",
            DataType::UInt32,
            false,
            Arc::new(payload.finish()),
        ),
        ("prio", DataType::UInt32, false, Arc::new(prio.finish())),
        ("class", DataType::UInt32, false, Arc::new(class.finish())),
        ("hops", DataType::UInt32, false, Arc::new(hops.finish())),
        ("ect", DataType::Boolean, false, Arc::new(ect.finish())),
        ("ce", DataType::Boolean, false, Arc::new(ce.finish())),
        ("ece", DataType::Boolean, false, Arc::new(ece.finish())),
        ("cwr", DataType::Boolean, false, Arc::new(cwr.finish())),
        ("retx", DataType::Boolean, false, Arc::new(retx.finish())),
        (
            "notice",
            DataType::Boolean,
            false,
            Arc::new(notice.finish()),
        ),
        (
            "trimmed",
            DataType::Boolean,
            false,
            Arc::new(trimmed.finish()),
        ),
        ("sent_ps", DataType::UInt64, false, Arc::new(sent.finish())),
        (
            "queue_bytes",
            DataType::UInt64,
            true,
            Arc::new(queue.finish()),
        ),
        ("reason", text(), true, Arc::new(reason.finish())),
        ("header", text(), false, Arc::new(header.finish())),
        ("seq", DataType::UInt64, true, Arc::new(seq.finish())),
        ("ack", DataType::UInt64, true, Arc::new(ack.finish())),
        ("sack", DataType::UInt32, true, Arc::new(sack.finish())),
        ("wnd", DataType::UInt32, true, Arc::new(wnd.finish())),
        (
            "ctrl_kind",
            DataType::UInt32,
            true,
            Arc::new(ctrl_kind.finish()),
        ),
        ("ctrl_a", DataType::UInt64, true, Arc::new(ctrl_a.finish())),
        ("ctrl_b", DataType::UInt32, true, Arc::new(ctrl_b.finish())),
    ];
    let (fields, cols): (Vec<Field>, Vec<ArrayRef>) = columns
        .into_iter()
        .map(|(name, ty, nullable, col)| (Field::new(name, ty, nullable), col))
        .unzip();
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
        append(&batch, &mut out).map_err(bad)?;
    }
    Ok(out)
}

/// The rows of one record batch.
fn append(b: &RecordBatch, out: &mut Vec<TraceRow>) -> std::result::Result<(), String> {
    let col = |name: &str| b.column_by_name(name).ok_or(format!("no column `{name}`"));
    let u32s = |name: &str| {
        col(name)?
            .as_primitive_opt::<UInt32Type>()
            .ok_or(format!("column `{name}` is not u32"))
    };
    let u64s = |name: &str| {
        col(name)?
            .as_primitive_opt::<UInt64Type>()
            .ok_or(format!("column `{name}` is not u64"))
    };
    let bools = |name: &str| {
        col(name)?
            .as_boolean_opt()
            .ok_or(format!("column `{name}` is not boolean"))
    };
    let text = |name: &str| -> std::result::Result<Vec<Option<String>>, String> {
        let d = col(name)?
            .as_dictionary_opt::<Int32Type>()
            .ok_or(format!("column `{name}` is not a dictionary"))?;
        let values = d
            .values()
            .as_string_opt::<i32>()
            .ok_or(format!("column `{name}` has no string values"))?;
        Ok((0..b.num_rows())
            .map(|i| {
                d.keys()
                    .is_valid(i)
                    .then(|| values.value(d.keys().value(i) as usize).to_string())
            })
            .collect())
    };
    let (time, sent, queue) = (u64s("time_ps")?, u64s("sent_ps")?, u64s("queue_bytes")?);
    let (event, kind, reason, header) = (
        text("event")?,
        text("kind")?,
        text("reason")?,
        text("header")?,
    );
    let (node, port, peer, flow) = (u32s("node")?, u32s("port")?, u32s("peer")?, u32s("flow")?);
    let (src, dst, size, payload) = (
        u32s("src")?,
        u32s("dst")?,
        u32s("size_bytes")?,
        u32s("payload_bytes")?,
    );
    let (prio, class, hops) = (u32s("prio")?, u32s("class")?, u32s("hops")?);
    let (seq, ack, ctrl_a) = (u64s("seq")?, u64s("ack")?, u64s("ctrl_a")?);
    let (sack, wnd, ctrl_kind, ctrl_b) = (
        u32s("sack")?,
        u32s("wnd")?,
        u32s("ctrl_kind")?,
        u32s("ctrl_b")?,
    );
    let flag_cols = [
        (bools("ect")?, flags::ECT),
        (bools("ce")?, flags::CE),
        (bools("ece")?, flags::ECE),
        (bools("cwr")?, flags::CWR),
        (bools("retx")?, flags::RETX),
        (bools("notice")?, flags::NOTICE),
        (bools("trimmed")?, flags::TRIMMED),
    ];
    let opt32 = |a: &arrow_array::UInt32Array, i: usize| a.is_valid(i).then(|| a.value(i));
    let opt64 = |a: &arrow_array::UInt64Array, i: usize| a.is_valid(i).then(|| a.value(i));
    for i in 0..b.num_rows() {
        let name = |v: &[Option<String>]| v[i].clone().unwrap_or_default();
        let event = TraceEvent::ALL
            .into_iter()
            .find(|e| e.name() == name(&event))
            .ok_or(format!("row {i}: unknown event {:?}", name(&event)))?;
        let kind = if name(&kind) == "data" {
            PacketKind::Data
        } else {
            PacketKind::Control
        };
        let header = match name(&header).as_str() {
            "tcp_data" => Header::TcpData {
                seq: opt64(seq, i).unwrap_or(0),
            },
            "tcp_ack" => Header::TcpAck {
                ack: opt64(ack, i).unwrap_or(0),
                sack: opt32(sack, i).unwrap_or(0),
                wnd: opt32(wnd, i).unwrap_or(0) as u16,
            },
            _ => Header::Ctrl {
                kind: opt32(ctrl_kind, i).unwrap_or(0) as u8,
                a: opt64(ctrl_a, i).unwrap_or(0),
                b: opt32(ctrl_b, i).unwrap_or(0),
            },
        };
        let mut pkt = Packet::new(
            FlowId(flow.value(i)),
            NodeId(src.value(i)),
            NodeId(dst.value(i)),
            size.value(i),
            kind,
            header,
        );
        pkt.payload = payload.value(i);
        pkt.prio = prio.value(i);
        pkt.class = class.value(i) as u8;
        pkt.hops = hops.value(i) as u8;
        pkt.sent_at = Time(sent.value(i));
        for (c, f) in &flag_cols {
            if c.value(i) {
                pkt.flags |= f;
            }
        }
        out.push(TraceRow {
            time: Time(time.value(i)),
            node: NodeId(node.value(i)),
            seq: 0,
            event,
            port: opt32(port, i).map(PortId),
            peer: opt32(peer, i).map(NodeId),
            queue_bytes: opt64(queue, i),
            reason: DropReason::ALL
                .into_iter()
                .find(|r| reason[i].as_deref() == Some(r.name())),
            pkt,
        });
    }
    Ok(())
}
