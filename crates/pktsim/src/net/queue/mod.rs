//! Queue disciplines: what an output port holds, which packet leaves next and
//! which packet is dropped when the buffer is full.
//!
//! A discipline knows nothing of transports. Every discipline implements
//! [`Discipline`]; the port holds a [`Queue`], an enum over all of them, so
//! the hot path dispatches with a `match`, not a virtual call. A new
//! discipline is one file here plus one variant in [`Queue`] and [`QueueConfig`].

pub mod ecn;
pub mod fifo;
pub mod pfabric;

use crate::metrics::DropReason;
use crate::net::packet::Packet;
use crate::time::Time;

pub use ecn::EcnThreshold;
pub use fifo::FifoQueue;
pub use pfabric::PfabricQueue;

/// Packets a discipline dropped during one operation, with reasons. The
/// network owns one and reuses it, so dropping allocates nothing.
pub type Drops = Vec<(Packet, DropReason)>;

/// The interface of a queue discipline.
pub trait Discipline {
    /// Offer `pkt` to the queue. `limit` is the byte budget for this port now
    /// (static per-port limit, or a shared-buffer dynamic threshold). A packet
    /// that is not kept (the arriving one or one pushed out) goes to `drops`.
    /// Returns the number of packets marked with ECN CE by this operation.
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32;
    /// Take the next packet to transmit. May drop packets (AQMs) into `drops`.
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet>;
    /// Bytes held.
    fn bytes(&self) -> u64;
    /// Packets held.
    fn len(&self) -> usize;
    /// Whether the queue holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Remove everything (end of run accounting).
    fn drain(&mut self) -> Vec<Packet>;
}

/// Queue configuration, as written in TOML under `switch_queue` / `host_queue`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// First in, first out; drop the arriving packet when full.
    DropTail,
    /// Drop-tail FIFO that marks ECN CE when the queue exceeds a threshold.
    Ecn {
        /// Marking threshold in packets (give this or `k_bytes`).
        k_packets: Option<u64>,
        /// Marking threshold in bytes.
        k_bytes: Option<u64>,
    },
    /// Strict priority over `classes` FIFOs by the packet's class (0 first),
    /// optionally ECN marking on total occupancy.
    Priority {
        /// Number of classes (1 to 8).
        classes: u8,
        /// Optional marking threshold in packets.
        k_packets: Option<u64>,
        /// Optional marking threshold in bytes.
        k_bytes: Option<u64>,
    },
    /// pFabric: serve the most urgent flow (lowest `prio`), drop the least
    /// urgent packet when full.
    Pfabric,
}

impl QueueConfig {
    /// Check the values; `field` is the config path for error messages.
    pub fn validate(&self, field: &str) -> crate::Result<()> {
        match self {
            QueueConfig::DropTail | QueueConfig::Pfabric => Ok(()),
            QueueConfig::Ecn { k_packets, k_bytes } => {
                EcnThreshold::from_config(*k_packets, *k_bytes, field, true).map(|_| ())
            }
            QueueConfig::Priority {
                classes,
                k_packets,
                k_bytes,
            } => {
                if !(1..=8).contains(classes) {
                    return Err(crate::Error::config(
                        format!("{field}.classes"),
                        format!("must be between 1 and 8, got {classes}"),
                    ));
                }
                EcnThreshold::from_config(*k_packets, *k_bytes, field, false).map(|_| ())
            }
        }
    }

    /// For single-FIFO disciplines (drop-tail, ECN, one-class priority), the
    /// ECN threshold (if any): such ports can schedule departures at enqueue
    /// time. `None` for everything else.
    pub fn eager_fifo(&self) -> Option<Option<EcnThreshold>> {
        match self {
            QueueConfig::DropTail => Some(None),
            QueueConfig::Ecn { k_packets, k_bytes } => {
                EcnThreshold::from_config(*k_packets, *k_bytes, "", true).ok()
            }
            QueueConfig::Priority {
                classes: 1,
                k_packets,
                k_bytes,
            } => EcnThreshold::from_config(*k_packets, *k_bytes, "", false).ok(),
            _ => None,
        }
    }

    /// Build an empty queue. Call [`QueueConfig::validate`] first.
    pub fn build(&self) -> Queue {
        match self {
            QueueConfig::DropTail => Queue::Fifo(FifoQueue::new(1, None)),
            QueueConfig::Ecn { k_packets, k_bytes } => Queue::Fifo(FifoQueue::new(
                1,
                EcnThreshold::from_config(*k_packets, *k_bytes, "", true)
                    .ok()
                    .flatten(),
            )),
            QueueConfig::Priority {
                classes,
                k_packets,
                k_bytes,
            } => Queue::Fifo(FifoQueue::new(
                *classes,
                EcnThreshold::from_config(*k_packets, *k_bytes, "", false)
                    .ok()
                    .flatten(),
            )),
            QueueConfig::Pfabric => Queue::Pfabric(PfabricQueue::new()),
        }
    }
}

/// A port's queue: one variant per discipline.
#[derive(Debug)]
pub enum Queue {
    /// Drop-tail, ECN and strict-priority FIFOs.
    Fifo(FifoQueue),
    /// pFabric's priority queue.
    Pfabric(PfabricQueue),
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Queue::Fifo($q) => $e,
            Queue::Pfabric($q) => $e,
        }
    };
}

impl Discipline for Queue {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        dispatch!(self, q => q.enqueue(pkt, now, limit, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn bytes(&self) -> u64 {
        dispatch!(self, q => q.bytes())
    }
    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    fn drain(&mut self) -> Vec<Packet> {
        dispatch!(self, q => q.drain())
    }
}
