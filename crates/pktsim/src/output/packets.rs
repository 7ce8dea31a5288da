//! `packets.parquet`: the packet trace (`[output.trace]`), one row per hop
//! event of a traced packet, in time order ([`crate::net::trace`]).

use super::io;
use crate::error::Result;
use crate::net::trace::TraceRow;
use crate::packet::{flags, Header, PacketKind};
use arrow_array::builder::{BooleanBuilder, StringDictionaryBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
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
    let (mut node, mut port, mut flow, mut src, mut dst) = (u32s(), u32s(), u32s(), u32s(), u32s());
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
