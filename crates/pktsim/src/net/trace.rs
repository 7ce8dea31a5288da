//! The packet trace (`[output.trace]`, issue 31): every hop event of the
//! packets a filter selects (sent, queued, dequeued, dropped, marked,
//! deflected, trimmed, turned into a notice, arrived, delivered), for
//! `packets.parquet` and `pktsim pcap`.
//!
//! Off unless asked for: the network holds no trace then, and each place
//! that would record a row tests for it and goes on.
//!
//! A row is recorded by the node whose event it is (the sending host, the
//! port's node, the node a link leads to), and numbered in that node's
//! order. A node runs its events in the same order whatever the run's
//! thread count, so the rows sorted by (time, node, number) are the same
//! for every thread count, and so are the `max_rows` first of them, which
//! each part of a run can keep on its own: the whole run's first rows are
//! among each part's first.

use crate::metrics::DropReason;
use crate::packet::{FlowId, NodeId, Packet, PortId};
use crate::time::Time;

/// What happened to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceEvent {
    /// A transport handed it to its host's NIC.
    Send,
    /// A port's queue took it (`queue_bytes`: the queue after it joined).
    Enqueue,
    /// Its transmission on a port's link started.
    Dequeue,
    /// It was dropped (`reason` says why).
    Drop,
    /// A port marked it ECN CE.
    Mark,
    /// A switch deflected it to another port (the row's port).
    Deflect,
    /// A switch cut it to its header.
    Trim,
    /// A switch made it: a notice to the source of a refused packet.
    Notice,
    /// Its last bit (or, cut-through, its header) reached a switch.
    Arrive,
    /// It reached its destination host.
    Deliver,
}

impl TraceEvent {
    /// Every event, in index order.
    pub const ALL: [TraceEvent; 10] = [
        TraceEvent::Send,
        TraceEvent::Enqueue,
        TraceEvent::Dequeue,
        TraceEvent::Drop,
        TraceEvent::Mark,
        TraceEvent::Deflect,
        TraceEvent::Trim,
        TraceEvent::Notice,
        TraceEvent::Arrive,
        TraceEvent::Deliver,
    ];

    /// Name in `packets.parquet`.
    pub fn name(self) -> &'static str {
        match self {
            TraceEvent::Send => "send",
            TraceEvent::Enqueue => "enqueue",
            TraceEvent::Dequeue => "dequeue",
            TraceEvent::Drop => "drop",
            TraceEvent::Mark => "mark",
            TraceEvent::Deflect => "deflect",
            TraceEvent::Trim => "trim",
            TraceEvent::Notice => "notice",
            TraceEvent::Arrive => "arrive",
            TraceEvent::Deliver => "deliver",
        }
    }
}

/// One row of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRow {
    /// When it happened (a dequeue scheduled ahead, by an eager FIFO port,
    /// carries the time its transmission starts).
    pub time: Time,
    /// The node whose event it is.
    pub node: NodeId,
    /// The row's number among the node's rows: its order among rows of
    /// the same node and time.
    pub seq: u64,
    /// What happened.
    pub event: TraceEvent,
    /// The port, where there is one (for an arrival or a delivery: the
    /// link's sending port, whose number names the link).
    pub port: Option<PortId>,
    /// The node at the far end of the port's link.
    pub peer: Option<NodeId>,
    /// Bytes in the port's queue after an enqueue.
    pub queue_bytes: Option<u64>,
    /// Why a drop happened.
    pub reason: Option<DropReason>,
    /// The packet as it was then.
    pub pkt: Packet,
}

/// Which packets and events to trace, and how many rows at most.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSpec {
    /// Flow ids (`None`: every flow).
    pub flows: Option<Vec<u32>>,
    /// Node indices (`None`: every node).
    pub nodes: Option<Vec<u32>>,
    /// Port indices (`None`: every port; rows without a port pass).
    pub ports: Option<Vec<u32>>,
    /// Rows from this time on.
    pub from: Time,
    /// Rows before this time.
    pub until: Time,
    /// At most this many rows, the earliest ones.
    pub max_rows: usize,
}

impl TraceSpec {
    /// The default cap on rows.
    pub const DEFAULT_MAX_ROWS: usize = 1_000_000;
}

/// A set of small indices, as a bitmap (`None`: everything).
#[derive(Clone, Debug)]
struct IndexSet(Option<Vec<bool>>);

impl IndexSet {
    fn new(list: &Option<Vec<u32>>) -> Self {
        IndexSet(list.as_ref().map(|l| {
            let n = l.iter().map(|&i| i as usize + 1).max().unwrap_or(0);
            let mut bits = vec![false; n];
            for &i in l {
                bits[i as usize] = true;
            }
            bits
        }))
    }

    #[inline]
    fn has(&self, i: u32) -> bool {
        match &self.0 {
            None => true,
            Some(bits) => bits.get(i as usize).copied().unwrap_or(false),
        }
    }
}

/// The rows one network (a whole run's, or a part's) recorded.
#[derive(Clone, Debug)]
pub struct PacketTrace {
    flows: IndexSet,
    nodes: IndexSet,
    ports: IndexSet,
    from: Time,
    until: Time,
    max_rows: usize,
    rows: Vec<TraceRow>,
    /// Rows numbered so far, per node.
    next_seq: Vec<u64>,
    /// Rows that passed the filter, kept or not.
    passed: u64,
}

impl PacketTrace {
    /// An empty trace for a network of `nodes` nodes.
    pub fn new(spec: &TraceSpec, nodes: usize) -> Self {
        PacketTrace {
            flows: IndexSet::new(&spec.flows),
            nodes: IndexSet::new(&spec.nodes),
            ports: IndexSet::new(&spec.ports),
            from: spec.from,
            until: spec.until,
            max_rows: spec.max_rows.max(1),
            rows: Vec::new(),
            next_seq: vec![0; nodes],
            passed: 0,
        }
    }

    /// Record a row if the filter selects it. Out of line: the per-hop
    /// path only tests whether a trace is on.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        time: Time,
        node: NodeId,
        event: TraceEvent,
        port: Option<(PortId, NodeId)>,
        pkt: &Packet,
        queue_bytes: Option<u64>,
        reason: Option<DropReason>,
    ) {
        let (port, peer) = (port.map(|p| p.0), port.map(|p| p.1));
        if time < self.from
            || time >= self.until
            || !self.flows.has(pkt.flow.0)
            || !self.nodes.has(node.0)
            || !port.is_none_or(|p| self.ports.has(p.0))
        {
            return;
        }
        let Some(next) = self.next_seq.get_mut(node.idx()) else {
            return;
        };
        let seq = *next;
        *next += 1;
        self.passed += 1;
        self.rows.push(TraceRow {
            time,
            node,
            seq,
            event,
            port,
            peer,
            queue_bytes,
            reason,
            pkt: *pkt,
        });
        if self.rows.len() >= 2 * self.max_rows {
            self.keep_earliest();
        }
    }

    /// Sort the rows and keep the `max_rows` earliest.
    fn keep_earliest(&mut self) {
        self.rows.sort_unstable_by_key(|r| (r.time, r.node, r.seq));
        self.rows.truncate(self.max_rows);
    }

    /// Take in the rows of another part of the run (its nodes' rows).
    pub fn absorb(&mut self, other: &mut PacketTrace) {
        self.passed += other.passed;
        self.rows.append(&mut other.rows);
        if self.rows.len() > self.max_rows {
            self.keep_earliest();
        }
    }

    /// The rows in order, the `max_rows` earliest, and whether more passed
    /// the filter than were kept.
    pub fn finish(mut self) -> (Vec<TraceRow>, bool) {
        self.keep_earliest();
        (self.rows, self.passed > self.max_rows as u64)
    }

    /// Whether the flow `f` is traced at all.
    pub fn traces_flow(&self, f: FlowId) -> bool {
        self.flows.has(f.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Header, PacketKind};
    use crate::time::Duration;

    fn spec(max_rows: usize) -> TraceSpec {
        TraceSpec {
            flows: Some(vec![1, 3]),
            nodes: None,
            ports: Some(vec![5]),
            from: Time::ZERO + Duration::from_ns(10),
            until: Time::ZERO + Duration::from_ns(100),
            max_rows,
        }
    }

    fn pkt(flow: u32) -> Packet {
        Packet::new(
            FlowId(flow),
            NodeId(0),
            NodeId(1),
            1500,
            PacketKind::Data,
            Header::TcpData { seq: 0 },
        )
    }

    fn at(ns: u64) -> Time {
        Time::ZERO + Duration::from_ns(ns)
    }

    #[test]
    fn the_filter_keeps_the_selected_flows_ports_and_times() {
        let mut t = PacketTrace::new(&spec(100), 4);
        let send = TraceEvent::Send;
        t.record(at(20), NodeId(0), send, None, &pkt(1), None, None); // kept
        t.record(at(20), NodeId(0), send, None, &pkt(2), None, None); // flow
        t.record(at(5), NodeId(0), send, None, &pkt(1), None, None); // early
        t.record(at(100), NodeId(0), send, None, &pkt(1), None, None); // late
        let q = TraceEvent::Enqueue;
        t.record(
            at(30),
            NodeId(2),
            q,
            Some((PortId(5), NodeId(1))),
            &pkt(3),
            Some(9),
            None,
        ); // kept
        t.record(
            at(30),
            NodeId(2),
            q,
            Some((PortId(4), NodeId(1))),
            &pkt(3),
            Some(9),
            None,
        ); // port
        let (rows, cut) = t.finish();
        assert!(!cut);
        let kept: Vec<(u32, u32)> = rows.iter().map(|r| (r.pkt.flow.0, r.node.0)).collect();
        assert_eq!(kept, [(1, 0), (3, 2)]);
    }

    #[test]
    fn parts_merged_keep_the_same_earliest_rows_as_one_trace() {
        // Rows of two nodes, recorded out of time order (a dequeue ahead).
        let times = [50u64, 20, 70, 30, 60, 40, 90, 80];
        let row = |t: &mut PacketTrace, i: usize| {
            let node = NodeId((i % 2) as u32);
            t.record(
                at(times[i]),
                node,
                TraceEvent::Send,
                None,
                &pkt(1),
                None,
                None,
            );
        };
        let mut whole = PacketTrace::new(&spec(3), 2);
        let (mut even, mut odd) = (PacketTrace::new(&spec(3), 2), PacketTrace::new(&spec(3), 2));
        for i in 0..times.len() {
            row(&mut whole, i);
            row(if i % 2 == 0 { &mut even } else { &mut odd }, i);
        }
        even.absorb(&mut odd);
        let (a, cut_a) = whole.finish();
        let (b, cut_b) = even.finish();
        assert_eq!(a, b);
        assert!(cut_a && cut_b);
        let kept: Vec<u64> = a.iter().map(|r| r.time.ps() / 1000).collect();
        assert_eq!(kept, [20, 30, 40]);
    }
}
