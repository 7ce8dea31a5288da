//! `links.parquet`: what every port's link did, interval by interval
//! (`[output.links]`).
//!
//! The run records each port's totals at every sample
//! ([`LinkSample`]); a row here is the difference between a port's sample
//! and its previous one (the run's start for the first), so the rows of a
//! port add up to its totals at the last sample, which the run takes at its
//! end.

use super::io;
use crate::error::Result;
use crate::metrics::{DropReason, LinkSample};
use arrow_array::builder::{Float64Builder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// One column of counts per drop reason, named `drops_<reason>`.
fn drop_column(reason: DropReason) -> String {
    format!("drops_{}", reason.name())
}

/// The link samples (by time, then port) as an Arrow record batch of one
/// row per port and interval.
pub fn links_batch(samples: &[LinkSample]) -> Result<RecordBatch> {
    let n = samples.len();
    let u64s = || UInt64Builder::with_capacity(n);
    let (mut time, mut interval) = (u64s(), u64s());
    let (mut node, mut port, mut peer) = (
        UInt32Builder::with_capacity(n),
        UInt32Builder::with_capacity(n),
        UInt32Builder::with_capacity(n),
    );
    let (mut bytes, mut packets, mut busy) = (u64s(), u64s(), u64s());
    let mut utilisation = Float64Builder::with_capacity(n);
    let mut gbps = Float64Builder::with_capacity(n);
    let (mut marked, mut deflected, mut notices) = (u64s(), u64s(), u64s());
    let mut drops: Vec<UInt64Builder> = DropReason::ALL.iter().map(|_| u64s()).collect();

    // Each port's previous sample (none before its first).
    let ports = samples
        .iter()
        .map(|s| s.port as usize + 1)
        .max()
        .unwrap_or(0);
    let mut last: Vec<Option<LinkSample>> = vec![None; ports];
    for s in samples {
        // Before its first sample, a port had done nothing.
        let before = last[s.port as usize].unwrap_or_default();
        let dt = s.time.ps().saturating_sub(before.time.ps());
        // Busy time is monotone except where a cut-through packet waiting
        // for its last bits made a sample's time ahead too long (see
        // `Port::link_totals`): never a negative interval.
        let busy_ps = s.busy.ps().saturating_sub(before.busy.ps());
        time.append_value(s.time.ps());
        interval.append_value(dt);
        node.append_value(s.node.0);
        port.append_value(s.port);
        peer.append_value(s.peer.0);
        let b = s.bytes - before.bytes;
        bytes.append_value(b);
        packets.append_value(s.packets - before.packets);
        busy.append_value(busy_ps);
        if dt == 0 {
            utilisation.append_value(0.0);
            gbps.append_value(0.0);
        } else {
            utilisation.append_value(busy_ps as f64 / dt as f64);
            // bytes × 8 bit / (dt ps × 1e-12 s/ps) / 1e9 = bytes × 8000 / dt.
            gbps.append_value(b as f64 * 8000.0 / dt as f64);
        }
        marked.append_value(s.ecn_marked - before.ecn_marked);
        deflected.append_value(s.deflected_in - before.deflected_in);
        notices.append_value(s.notices - before.notices);
        for (r, col) in drops.iter_mut().enumerate() {
            col.append_value(s.dropped[r] - before.dropped[r]);
        }
        last[s.port as usize] = Some(*s);
    }

    let mut fields = vec![
        Field::new("time_ps", DataType::UInt64, false),
        Field::new("interval_ps", DataType::UInt64, false),
        Field::new("node", DataType::UInt32, false),
        Field::new("port", DataType::UInt32, false),
        Field::new("peer", DataType::UInt32, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("packets", DataType::UInt64, false),
        Field::new("busy_ps", DataType::UInt64, false),
        Field::new("utilisation", DataType::Float64, false),
        Field::new("throughput_gbps", DataType::Float64, false),
        Field::new("ecn_marked", DataType::UInt64, false),
        Field::new("deflected_in", DataType::UInt64, false),
        Field::new("notices", DataType::UInt64, false),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(time.finish()),
        Arc::new(interval.finish()),
        Arc::new(node.finish()),
        Arc::new(port.finish()),
        Arc::new(peer.finish()),
        Arc::new(bytes.finish()),
        Arc::new(packets.finish()),
        Arc::new(busy.finish()),
        Arc::new(utilisation.finish()),
        Arc::new(gbps.finish()),
        Arc::new(marked.finish()),
        Arc::new(deflected.finish()),
        Arc::new(notices.finish()),
    ];
    for (reason, mut col) in DropReason::ALL.into_iter().zip(drops) {
        fields.push(Field::new(drop_column(reason), DataType::UInt64, false));
        cols.push(Arc::new(col.finish()));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use crate::time::{Duration, Time};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};

    fn sample(t_ns: u64, port: u32, bytes: u64, busy_ns: u64, buffer_full: u64) -> LinkSample {
        let mut dropped = [0; DropReason::COUNT];
        dropped[DropReason::BufferFull as usize] = buffer_full;
        LinkSample {
            time: Time::ZERO + Duration::from_ns(t_ns),
            node: NodeId(port),
            port,
            peer: NodeId(9),
            rate_bps: 10_000_000_000,
            bytes,
            packets: bytes / 1000,
            busy: Duration::from_ns(busy_ns),
            ecn_marked: 0,
            deflected_in: 0,
            notices: 0,
            dropped,
        }
    }

    #[test]
    fn rows_are_each_ports_differences_between_its_samples() {
        // Two ports sampled at 100 ns and 200 ns, then at the run's end.
        let samples = [
            sample(100, 0, 1000, 80, 0),
            sample(100, 3, 0, 0, 0),
            sample(200, 0, 1000, 80, 1),
            sample(200, 3, 2000, 100, 0),
            sample(250, 0, 3000, 110, 1),
            sample(250, 3, 2000, 100, 2),
        ];
        let b = links_batch(&samples).unwrap();
        let col = |name: &str| -> Vec<u64> {
            b.column_by_name(name)
                .unwrap()
                .as_primitive::<UInt64Type>()
                .values()
                .to_vec()
        };
        assert_eq!(
            col("interval_ps"),
            [100_000, 100_000, 100_000, 100_000, 50_000, 50_000]
        );
        assert_eq!(col("bytes"), [1000, 0, 0, 2000, 2000, 0]);
        assert_eq!(col("busy_ps"), [80_000, 0, 0, 100_000, 30_000, 0]);
        assert_eq!(col("drops_buffer_full"), [0, 0, 1, 0, 0, 2]);
        let util: Vec<f64> = b
            .column_by_name("utilisation")
            .unwrap()
            .as_primitive::<Float64Type>()
            .values()
            .to_vec();
        assert_eq!(util, [0.8, 0.0, 0.0, 1.0, 0.6, 0.0]);
        // 2000 bytes in 100 ns is 160 Gbit/s.
        let gbps = b.column_by_name("throughput_gbps").unwrap();
        assert_eq!(gbps.as_primitive::<Float64Type>().value(3), 160.0);
        // Each port's rows add up to its last totals.
        let ports: Vec<u32> = b
            .column_by_name("port")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .values()
            .to_vec();
        let bytes = col("bytes");
        let sum = |p: u32| -> u64 {
            ports
                .iter()
                .zip(&bytes)
                .filter(|(q, _)| **q == p)
                .map(|(_, b)| b)
                .sum()
        };
        assert_eq!((sum(0), sum(3)), (3000, 2000));
    }
}
