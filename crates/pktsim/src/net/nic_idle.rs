//! Telling transports that a host NIC ran dry ([`NetEvent::NicIdle`]).
//!
//! Transports that hold packets back while their NIC is busy (pHost's
//! tokens, the TCP family's NIC backpressure) send the next one when it runs
//! dry. An event for every packet a NIC sends would be one event per packet,
//! most of which find nothing to send (a pHost sender clocked by tokens sends
//! one packet per token and is usually out of tokens when that packet ends).
//! So when a NIC starts its last queued packet it only notes when that packet
//! ends, and the event is scheduled if a transport asks for it while that
//! packet is on the wire. An event's place among same-time events is a
//! function of the event alone ([`crate::engine::Tie`]), so an event
//! scheduled late runs exactly where it would have run had it been scheduled
//! when the packet started: a run is the run in which every run-dry event was
//! scheduled and the unneeded ones did nothing, only with fewer events.

use crate::engine::EventQueue;
use crate::net::event::NetEvent;
use crate::packet::NodeId;
use crate::time::Time;

/// What is known of a NIC's next run-dry moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dry {
    /// Nothing noted or scheduled for the transmission under way.
    None,
    /// The NIC's last queued packet ends at `at`; no event scheduled yet.
    Noted { at: Time },
    /// An event is scheduled at `at`.
    Scheduled { at: Time },
}

/// Per host: requests for run-dry events and the moments noted.
#[derive(Debug)]
pub(crate) struct NicIdleRequests {
    /// A transport asked for the next run-dry moment (none was under way).
    wanted: Vec<bool>,
    dry: Vec<Dry>,
}

impl NicIdleRequests {
    /// Take host `h`'s requests and noted moments from `other` (gathering
    /// a partitioned run's groups into one).
    pub(crate) fn take_host(&mut self, other: &mut NicIdleRequests, h: usize) {
        std::mem::swap(&mut self.wanted[h], &mut other.wanted[h]);
        std::mem::swap(&mut self.dry[h], &mut other.dry[h]);
    }

    /// No requests for `n_hosts` hosts.
    pub(crate) fn new(n_hosts: usize) -> Self {
        NicIdleRequests {
            wanted: vec![false; n_hosts],
            dry: vec![Dry::None; n_hosts],
        }
    }

    /// `host`'s NIC started its last queued packet, ending at `end`: schedule
    /// the run-dry event if it is wanted (`every_time`: the transport wants
    /// one after every packet), otherwise note when it would be.
    #[inline(always)]
    pub(crate) fn on_last_packet<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        end: Time,
        every_time: bool,
        ev: &mut EventQueue<E>,
    ) {
        let h = host.idx();
        self.dry[h] = if every_time || std::mem::take(&mut self.wanted[h]) {
            NetEvent::NicIdle(host).schedule_for(host, end, ev);
            Dry::Scheduled { at: end }
        } else {
            Dry::Noted { at: end }
        };
    }

    /// A transport asks for one run-dry event for `host`. `last_packet_ends`:
    /// when the packet on the wire ends if it is the NIC's last one (nothing
    /// queued behind it), `None` when the NIC is idle or has a queue. That
    /// packet's event is scheduled (once); otherwise the request waits for
    /// the next last packet.
    #[inline]
    pub(crate) fn request<E: From<NetEvent> + Copy>(
        &mut self,
        host: NodeId,
        last_packet_ends: Option<Time>,
        ev: &mut EventQueue<E>,
    ) {
        let h = host.idx();
        match (self.dry[h], last_packet_ends) {
            (Dry::Noted { at }, Some(end)) if at == end => {
                NetEvent::NicIdle(host).schedule_for(host, at, ev);
                self.dry[h] = Dry::Scheduled { at };
            }
            (Dry::Scheduled { at }, Some(end)) if at == end => {}
            _ => self.wanted[h] = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PortId;

    fn drain(ev: &mut EventQueue<NetEvent>) -> Vec<(u64, NetEvent)> {
        std::iter::from_fn(|| ev.pop().map(|(t, _, e)| (t.ps(), e))).collect()
    }

    const H: NodeId = NodeId(3);

    #[test]
    fn a_run_dry_event_exists_only_when_asked_for_and_then_once() {
        let mut ev = EventQueue::new();
        let mut r = NicIdleRequests::new(4);
        // Unasked: no event.
        r.on_last_packet(H, Time(100), false, &mut ev);
        assert!(drain(&mut ev).is_empty());
        // Asked twice while the last packet is on the wire: one event, at
        // its end.
        r.on_last_packet(H, Time(200), false, &mut ev);
        r.request(H, Some(Time(200)), &mut ev);
        r.request(H, Some(Time(200)), &mut ev);
        assert_eq!(drain(&mut ev), vec![(200, NetEvent::NicIdle(H))]);
        // Asked while packets are queued (or the NIC is idle): at the end of
        // the next last packet.
        r.request(H, None, &mut ev);
        assert!(ev.is_empty());
        r.on_last_packet(H, Time(300), false, &mut ev);
        assert_eq!(drain(&mut ev), vec![(300, NetEvent::NicIdle(H))]);
        // A noted moment of an earlier packet is not used for a later one.
        r.on_last_packet(H, Time(400), false, &mut ev);
        r.request(H, Some(Time(450)), &mut ev);
        r.on_last_packet(H, Time(500), false, &mut ev);
        assert_eq!(drain(&mut ev), vec![(500, NetEvent::NicIdle(H))]);
        // A transport that pulls gets one after every packet.
        r.on_last_packet(H, Time(600), true, &mut ev);
        assert_eq!(drain(&mut ev), vec![(600, NetEvent::NicIdle(H))]);
    }

    /// Scheduled late, the event runs where its tie puts it, as if it had
    /// been scheduled when the packet started.
    #[test]
    fn a_requested_event_takes_its_place_among_same_time_events() {
        let run = |late: bool| {
            let mut ev = EventQueue::with_salt(7);
            let mut r = NicIdleRequests::new(4);
            for (i, owner) in [2, 3, 4].into_iter().enumerate() {
                NetEvent::Arrive(PortId(i as u32)).schedule_for(NodeId(owner), Time(100), &mut ev);
                NetEvent::TxDone(PortId(9 + i as u32)).schedule_for(
                    NodeId(owner),
                    Time(100),
                    &mut ev,
                );
            }
            r.on_last_packet(H, Time(100), !late, &mut ev);
            NetEvent::TxDone(PortId(20)).schedule_for(NodeId(5), Time(100), &mut ev);
            if late {
                r.request(H, Some(Time(100)), &mut ev);
            }
            drain(&mut ev)
        };
        let late = run(true);
        assert_eq!(late.len(), 8);
        assert_eq!(late.last(), Some(&(100, NetEvent::NicIdle(H))));
        assert_eq!(late, run(false));
    }
}
