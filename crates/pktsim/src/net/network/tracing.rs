//! The packet trace's recording points on the per-hop path
//! ([`crate::net::trace`]): each tests whether a trace is on and, only
//! then, records out of line.

use super::*;
use crate::net::trace::TraceRow;

impl Network {
    /// Whether a trace is on: the per-hop path's one test, in front of
    /// any argument for a row is made.
    #[inline(always)]
    pub(super) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Record a trace row if a trace is on. Out of line and cold, so that
    /// the per-hop path keeps nothing alive for it.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trace_row(
        &mut self,
        time: Time,
        node: NodeId,
        event: TraceEvent,
        port: Option<PortId>,
        pkt: &Packet,
        queue_bytes: Option<u64>,
        reason: Option<DropReason>,
    ) {
        if let Some(t) = self.trace.as_deref_mut() {
            let port = port.map(|p| (p, self.ports[p.idx()].peer));
            t.record(time, node, event, port, pkt, queue_bytes, reason);
        }
    }

    /// Trace `pkt` offered to port `pid`'s queue discipline at `now`, with
    /// `marked` packets marked: queued (unless the discipline refused it),
    /// and marked. The port's queue is as the offer left it.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_offer(&mut self, pid: PortId, pkt: &Packet, now: Time, marked: u32) {
        let refused = self.drops.iter().any(|(d, _)| d == pkt);
        if refused {
            return;
        }
        let port = &self.ports[pid.idx()];
        let (node, queued) = (port.owner, port.queued_bytes());
        let q = TraceEvent::Enqueue;
        self.trace_row(now, node, q, Some(pid), pkt, Some(queued), None);
        if marked > 0 {
            let mut m = *pkt;
            m.flags |= flags::CE;
            self.trace_row(now, node, TraceEvent::Mark, Some(pid), &m, None, None);
        }
    }

    /// Trace `pkt` taken by eager FIFO port `pid` of `node` at `now`:
    /// queued (`queued` bytes wait after it joined), marked if `marked`,
    /// and put on the link, its transmission starting at `leaves` or when
    /// its last bits are in.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trace_eager(
        &mut self,
        node: NodeId,
        pid: PortId,
        pkt: &Packet,
        now: Time,
        queued: u64,
        marked: bool,
        leaves: Time,
    ) {
        let port = Some(pid);
        self.trace_row(
            now,
            node,
            TraceEvent::Enqueue,
            port,
            pkt,
            Some(queued),
            None,
        );
        if marked {
            self.trace_row(now, node, TraceEvent::Mark, port, pkt, None, None);
        }
        let start = leaves.max(pkt.ready_at);
        self.trace_row(start, node, TraceEvent::Dequeue, port, pkt, None, None);
    }

    /// The trace's rows, in order, and whether more passed its filters than
    /// it kept (`None` without a trace). Empties the trace.
    pub fn take_trace(&mut self) -> Option<(Vec<TraceRow>, bool)> {
        let t = self.trace.take()?;
        Some(t.finish())
    }
}
