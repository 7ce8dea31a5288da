//! Which packets of a flow have arrived, by packet index: the receive
//! bitmap of the receiver-driven transports (pHost, Fastpass), with the
//! count received and the first index still missing (the in-order edge).

/// Received packets of one flow.
#[derive(Clone, Debug, Default)]
pub struct PacketBitmap {
    got: Vec<bool>,
    count: u32,
    until: u32,
}

impl PacketBitmap {
    /// Start tracking a flow of `n` packets, none received.
    pub fn reset(&mut self, n: u32) {
        self.got = vec![false; n as usize];
        self.count = 0;
        self.until = 0;
    }

    /// Record packet `i`; whether it was new (duplicates and indices past
    /// the end change nothing).
    pub fn mark(&mut self, i: u32) -> bool {
        let i = i as usize;
        if i >= self.got.len() || self.got[i] {
            return false;
        }
        self.got[i] = true;
        self.count += 1;
        while (self.until as usize) < self.got.len() && self.got[self.until as usize] {
            self.until += 1;
        }
        true
    }

    /// Whether packet `i` has arrived.
    pub fn has(&self, i: u32) -> bool {
        self.got[i as usize]
    }

    /// Packets in the flow (0 before `reset`).
    pub fn len(&self) -> u32 {
        self.got.len() as u32
    }

    /// Whether the bitmap tracks no packets (not yet reset).
    pub fn is_empty(&self) -> bool {
        self.got.is_empty()
    }

    /// Packets received.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// First packet index not yet received.
    pub fn until(&self) -> u32 {
        self.until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_edge_advances_over_filled_gaps() {
        let mut b = PacketBitmap::default();
        b.reset(4);
        assert!(b.mark(2));
        assert_eq!((b.count(), b.until()), (1, 0));
        assert!(!b.mark(2));
        assert!(!b.mark(9));
        assert!(b.mark(0));
        assert_eq!((b.count(), b.until()), (2, 1));
        assert!(b.mark(1));
        assert_eq!((b.count(), b.until()), (3, 3));
        assert!(b.has(2) && !b.has(3));
        assert!(b.mark(3));
        assert_eq!((b.count(), b.until(), b.len()), (4, 4, 4));
    }
}
