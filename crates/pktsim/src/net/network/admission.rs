//! The admission rule: the one byte limit a port applies to an offer, and
//! the one predicate that says whether the port takes a packet under it.
//!
//! Every place that decides or predicts admission goes through these two:
//! the eager FIFO's check, the idle port's pass-through, the limit handed
//! to a discipline's `enqueue` and [`Network::admits`] (what refusal hooks
//! ask before they deflect or notify). They used to compute the limit each
//! its own way, and a prediction that differs from what the enqueue then
//! does sends a deflected packet or a notice into a refusal it was meant to
//! avoid.

use super::*;

impl Network {
    /// The byte limit `port` applies to `offer` now: its static limit, or
    /// its switch's shared-buffer threshold when that is lower, plus the
    /// room beyond it the offer may use (a trimmed header's).
    #[inline(always)]
    pub(super) fn offer_limit(port: &Port, pools: &[SharedBuffer], offer: Offer) -> u64 {
        let limit = match port.pool {
            Some(pool) => port.limit.min(pools[pool as usize].threshold()),
            None => port.limit,
        };
        limit + offer.extra_room
    }

    /// Whether `port` takes `pkt` under byte budget `limit` (from
    /// [`Network::offer_limit`]): an eager FIFO's drop-tail rule, else its
    /// discipline's [`Discipline::admits`] (which may push another packet
    /// out to make room). The port must be touched at the current time.
    #[inline(always)]
    pub(super) fn port_admits(port: &Port, pkt: &Packet, limit: u64) -> bool {
        match &port.fifo {
            Some(f) => f.admits(pkt.size, limit),
            None => port.queue.admits(pkt, limit),
        }
    }

    /// Whether port `pid` would admit `pkt` now, offered for the first time
    /// (a notice or a deflected packet, offered last, has the same limit).
    /// Its queue must be up to date (touched at the current time): see
    /// [`Network::would_admit`].
    pub fn admits(&self, pid: PortId, pkt: &Packet) -> bool {
        let port = &self.ports[pid.idx()];
        Self::port_admits(
            port,
            pkt,
            Self::offer_limit(port, &self.pools, Offer::FIRST),
        )
    }

    /// Whether port `pid` would admit `pkt` at `now` ("would you take this
    /// packet now?"), bringing its queue up to `now` first.
    pub fn would_admit(&mut self, pid: PortId, pkt: &Packet, now: Time) -> bool {
        self.ports[pid.idx()].touch(now);
        self.admits(pid, pkt)
    }
}
