//! A lazy per-flow timer: at most one event pending in the simulator's
//! queue, never later than the flow's deadline. Moving the deadline later
//! schedules nothing; the early event, when it fires, re-arms for the new
//! deadline. Moving it earlier schedules a new event, and the older one is
//! recognised as stale when it fires (its time is not the pending one).
//! This keeps one timer event per deadline change out of the event queue
//! (an RTO restart on every ACK would otherwise schedule one per ACK).

use crate::time::Time;

/// Time of a flow's pending timer event (`Time::MAX`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LazyTimer {
    pending: Time,
}

impl Default for LazyTimer {
    fn default() -> Self {
        LazyTimer::IDLE
    }
}

impl LazyTimer {
    /// No event pending.
    pub const IDLE: LazyTimer = LazyTimer { pending: Time::MAX };

    /// Keep an event pending at or before `deadline` (`Time::MAX`: no
    /// deadline, nothing to do). Returns the time of a new event the caller
    /// must schedule, if one is needed; a deadline in the past fires `now`.
    #[must_use]
    pub fn arm(&mut self, now: Time, deadline: Time) -> Option<Time> {
        if deadline == Time::MAX {
            return None;
        }
        let at = deadline.max(now);
        if at < self.pending {
            self.pending = at;
            Some(at)
        } else {
            None
        }
    }

    /// A timer event fired at `now`: whether it is the pending one (which
    /// is then no longer pending) rather than a stale one to ignore.
    pub fn fire(&mut self, now: Time) -> bool {
        if now == self.pending {
            self.pending = Time::MAX;
            true
        } else {
            false
        }
    }

    /// Time of the pending event, if any.
    pub fn pending(&self) -> Option<Time> {
        (self.pending != Time::MAX).then_some(self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ps: u64) -> Time {
        Time(ps)
    }

    #[test]
    fn later_deadline_reuses_event_earlier_one_schedules_and_old_goes_stale() {
        let mut timer = LazyTimer::default();
        assert_eq!(timer.arm(t(0), Time::MAX), None);
        assert_eq!(timer.pending(), None);
        assert_eq!(timer.arm(t(0), t(100)), Some(t(100)));
        // Later deadline: the event at 100 stays, nothing new.
        assert_eq!(timer.arm(t(10), t(150)), None);
        assert_eq!(timer.pending(), Some(t(100)));
        // Earlier deadline: a new event; the one at 100 becomes stale.
        assert_eq!(timer.arm(t(20), t(60)), Some(t(60)));
        assert!(timer.fire(t(60)));
        assert_eq!(timer.pending(), None);
        assert!(!timer.fire(t(100)));
        // A deadline already passed fires now.
        assert_eq!(timer.arm(t(200), t(150)), Some(t(200)));
        assert!(!timer.fire(t(199)));
        assert!(timer.fire(t(200)));
    }
}
