//! Switch-stage plug-ins: a feature that changes what every switch does
//! (the queues of its ports, the refusal hook, the notices it makes) and
//! reports on it at the end of a run. The network builder installs the one
//! the parameters ask for ([`from_params`]) through this interface, so the
//! network itself names no feature. FastLane ([`super::fastlane`]) is one.

use crate::net::network::{Network, NetworkParams};
use crate::net::port::Port;
use crate::net::queue::Queue;
use crate::net::switch::fastlane::FastLane;
use crate::net::switch::RefusalHook;
use crate::time::{Rate, Time};

/// What a switch-stage plug-in does to the network it is installed in.
/// Every method has a default that leaves the network as it would be
/// without the plug-in.
pub trait SwitchPlugin: Send {
    /// The queue of a switch port whose link runs at `rate` with byte
    /// limit `limit`, given `queue`, the one its configured discipline
    /// built. Default: `queue` itself.
    fn switch_queue(&self, queue: Queue, _rate: Rate, _limit: u64) -> Queue {
        queue
    }

    /// Whether a switch port may still schedule FIFO departures at enqueue
    /// time ([`crate::net::eager_fifo`]), which bypasses its queue: a
    /// plug-in whose [`SwitchPlugin::switch_queue`] changes the queue must
    /// say no. Default: yes.
    fn allows_eager_fifo(&self) -> bool {
        true
    }

    /// The refusal hook that replaces the configured refusal behaviour,
    /// made once every port exists. Default: none (keep the configured one).
    fn refusal_hook(&self, _ports: &[Port]) -> Option<Box<dyn RefusalHook>> {
        None
    }

    /// Size on the wire of the notices switches send to the source of a
    /// refused packet ([`crate::net::switch::Verdict::NotifySource`]).
    /// Default: none (a header's size).
    fn notice_bytes(&self) -> Option<u32> {
        None
    }

    /// Counts for the run summary, over a run that lasted until `now`.
    /// Default: none.
    fn counters(&self, _net: &Network, _now: Time) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// The plug-in `params` ask for, if any: the one place that reads the
/// plug-ins' parameters.
pub fn from_params(params: &NetworkParams) -> Option<Box<dyn SwitchPlugin>> {
    let fastlane = params.fastlane.as_ref()?;
    Some(Box::new(FastLane::new(fastlane.clone())))
}
