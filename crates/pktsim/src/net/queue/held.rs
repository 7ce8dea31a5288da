//! What every discipline that keeps its own packets shares: the bytes and
//! packets it holds, ECN marking of arrivals, and drop-tail's admission
//! rule. A discipline embeds one [`Held`] and writes only its ordering and
//! its drop choice; the count it reports, the marks and the "does it fit"
//! answer are then the same for all of them.

use super::{fits, EcnThreshold};
use crate::packet::Packet;

/// Inside `impl Discipline for ...`: the discipline's [`Discipline::bytes`]
/// and [`Discipline::len`] are those of its `held` field (a [`Held`]), so
/// that a discipline on the base writes only its ordering, its drop choice
/// and its `drain`. A discipline outside the library writes
/// `pktsim::counts_from_held!();` the same way.
///
/// [`Discipline::bytes`]: super::Discipline::bytes
/// [`Discipline::len`]: super::Discipline::len
#[macro_export]
macro_rules! counts_from_held {
    () => {
        fn bytes(&self) -> u64 {
            self.held.bytes()
        }
        fn len(&self) -> usize {
            self.held.len()
        }
    };
}

/// How a [`Held`] marks what it admits. A discipline that never marks
/// holds [`Unmarked`], which takes no room and leaves no test on the
/// per-packet path (pFabric's queue is a `Queue` variant of its own size,
/// and its enqueue is inlined into the hop); an ECN-capable one holds an
/// `Option<EcnThreshold>`, set or not by its config.
pub trait Marking: Copy + std::fmt::Debug + Default {
    /// Mark `pkt` (or not) for the occupancy it finds on arrival; returns
    /// the number of packets marked (0 or 1).
    fn mark(&self, pkt: &mut Packet, queued_packets: usize, queued_bytes: u64) -> u32;
}

/// Never marks: the counts and the admission rule alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unmarked;

impl Marking for Unmarked {
    #[inline(always)]
    fn mark(&self, _pkt: &mut Packet, _queued_packets: usize, _queued_bytes: u64) -> u32 {
        0
    }
}

/// DCTCP's rule when a threshold is set: marked on arrival above K.
impl Marking for Option<EcnThreshold> {
    #[inline(always)]
    fn mark(&self, pkt: &mut Packet, queued_packets: usize, queued_bytes: u64) -> u32 {
        match self {
            Some(k) => k.apply(pkt, queued_packets, queued_bytes) as u32,
            None => 0,
        }
    }
}

/// A discipline's occupancy, its ECN marking ([`Marking`]: none by
/// default) and its admission rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Held<M: Marking = Unmarked> {
    bytes: u64,
    len: usize,
    marking: M,
}

impl Held<Unmarked> {
    /// Nothing held; nothing is ever marked.
    #[inline]
    pub fn unmarked() -> Self {
        Held::default()
    }
}

impl<M: Marking> Held<M> {
    /// Nothing held; arrivals are marked by `marking` (for ECN, above its
    /// threshold if it has one).
    pub fn new(marking: M) -> Self {
        Held {
            bytes: 0,
            len: 0,
            marking,
        }
    }

    /// Drop-tail's rule: `pkt` fits in byte budget `limit` with what is
    /// held now.
    #[inline]
    pub fn fits(&self, pkt: &Packet, limit: u64) -> bool {
        fits(self.bytes, pkt.size, limit)
    }

    /// Take `pkt` in: mark it CE if the occupancy it finds is above the
    /// threshold (DCTCP's rule: marked on arrival), then count it. Call it
    /// once the discipline keeps the packet (after any push-out), just
    /// before storing it. Returns the number of packets marked (0 or 1).
    #[inline]
    pub fn admit(&mut self, pkt: &mut Packet) -> u32 {
        let marked = self.marking.mark(pkt, self.len, self.bytes);
        self.bytes += pkt.size as u64;
        self.len += 1;
        marked
    }

    /// `pkt` left (sent, pushed out or dropped by the discipline).
    #[inline]
    pub fn remove(&mut self, pkt: &Packet) {
        self.bytes -= pkt.size as u64;
        self.len -= 1;
    }

    /// Everything left (a drain).
    #[inline]
    pub fn clear(&mut self) {
        self.bytes = 0;
        self.len = 0;
    }

    /// Bytes held.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Packets held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::flags;

    #[test]
    fn counts_follow_admissions_and_removals_and_marks_above_k() {
        let mut h = Held::new(Some(EcnThreshold::Packets(1)));
        let mut p = Packet::test_data(0, 1000, 0);
        p.flags |= flags::ECT;
        let mut q = p;
        assert!(h.fits(&p, 1000));
        assert_eq!(h.admit(&mut p), 0);
        assert!(!h.fits(&q, 1999));
        assert_eq!(h.admit(&mut q), 0, "finds one packet: not above K = 1");
        let mut r = Packet::test_data(0, 1000, 0);
        r.flags |= flags::ECT;
        assert_eq!(h.admit(&mut r), 1, "finds two packets: marked");
        assert!(r.has(flags::CE));
        assert_eq!((h.bytes(), h.len()), (3000, 3));
        h.remove(&q);
        assert_eq!((h.bytes(), h.len()), (2000, 2));
        h.clear();
        assert!(h.is_empty());
    }

    #[test]
    fn an_unmarked_held_never_marks_and_costs_only_its_counts() {
        let mut h = Held::unmarked();
        let mut p = Packet::test_data(0, 1000, 0);
        p.flags |= flags::ECT;
        for _ in 0..3 {
            assert_eq!(h.admit(&mut p), 0);
        }
        assert!(!p.has(flags::CE));
        assert_eq!((h.bytes(), h.len()), (3000, 3));
        assert_eq!(std::mem::size_of::<Held>(), 16);
        assert_eq!(std::mem::size_of::<Held<Option<EcnThreshold>>>(), 32);
    }
}
