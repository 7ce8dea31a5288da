//! Queue disciplines: what an output port holds, which packet leaves next and
//! which packet is dropped when the buffer is full.
//!
//! A discipline knows nothing of transports. Every discipline implements
//! [`Discipline`]; the port holds a [`Queue`], an enum over all of them, so
//! the hot path dispatches with a `match`, not a virtual call. A discipline
//! that keeps its own packets embeds a [`Held`] (counts, ECN marking,
//! drop-tail admission) and writes only its order and its drop choice. A
//! new discipline is one file here plus one line in the `disciplines!`
//! list (which declares [`Queue`] and generates its dispatch), and its
//! `kind` in [`QueueConfig`] (see `docs/extending.md`).
//!
//! A queue answers three questions: take this packet (or drop something),
//! which packet leaves next — or "none before time T", for rate-limited
//! queues ([`Dequeue::NotBefore`], [`rate_limit`]) — and would you admit
//! this packet now ([`Discipline::admits`], which switch behaviours use to
//! pick a deflection port). Whatever a discipline drops goes through the
//! network's refusal stage ([`crate::net::switch::refusal`]).

pub mod aifo;
pub mod codel;
pub mod credit_port;
pub mod custom;
pub mod ecn;
pub mod fifo;
pub mod held;
pub mod link_down;
pub mod notice_lane;
pub mod pfabric;
pub mod pfabric_index;
pub mod rate_limit;
pub mod vertigo;

use crate::metrics::DropReason;
use crate::packet::Packet;
use crate::time::{parse_duration, parse_rate, Duration, Rate, Time};

pub use aifo::AifoQueue;
pub use codel::CodelQueue;
pub use credit_port::{CreditPort, CreditPortParams};
pub use custom::{register, CustomQueue};
pub use ecn::EcnThreshold;
pub use fifo::FifoQueue;
pub use held::{Held, Marking, Unmarked};
pub use link_down::LinkDownQueue;
pub use notice_lane::NoticeLane;
pub use pfabric::PfabricQueue;
pub use rate_limit::{RateLimited, TokenBucket};
pub use vertigo::VertigoQueue;

/// What a queue gives the transmitter when asked for its next packet.
#[derive(Clone, Copy, Debug)]
pub enum Dequeue {
    /// Send this packet now.
    Packet(Packet),
    /// Nothing is queued.
    Empty,
    /// Packets are queued but none may leave before this time (a rate
    /// limit). The port asks again then.
    NotBefore(Time),
}

/// Packets a discipline dropped during one operation, with reasons. The
/// network owns one and reuses it, so dropping allocates nothing.
pub type Drops = Vec<(Packet, DropReason)>;

/// Drop-tail's admission rule: `size` more bytes fit in a queue holding
/// `queued` under byte budget `limit`. The FIFOs (event-driven and eager)
/// and [`Discipline::admits`]'s default use it, so they cannot disagree.
#[inline(always)]
pub fn fits(queued: u64, size: u32, limit: u64) -> bool {
    queued + size as u64 <= limit
}

/// The interface of a queue discipline.
pub trait Discipline {
    /// Offer `pkt` to the queue. `limit` is the byte budget for this port now
    /// (static per-port limit, or a shared-buffer dynamic threshold). A packet
    /// that is not kept (the arriving one or one pushed out) goes to `drops`.
    /// Returns the number of packets marked with ECN CE by this operation.
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32;
    /// Take the next packet to transmit. May drop packets (AQMs) into `drops`.
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet>;
    /// What the transmitter calls: the next packet, nothing, or "not before
    /// T". The default is [`Discipline::dequeue`]; queues that hold packets
    /// back (rate limits) override it.
    #[inline]
    fn poll(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        match self.dequeue(now, drops) {
            Some(p) => Dequeue::Packet(p),
            None => Dequeue::Empty,
        }
    }
    /// Whether [`Discipline::enqueue`] with this `limit` would keep `pkt`
    /// (possibly by pushing out another packet). The default is drop-tail's
    /// rule: it fits in the byte budget.
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        fits(self.bytes(), pkt.size, limit)
    }
    /// Whether the discipline chooses which queued packet leaves next by
    /// priority or rank rather than arrival order (see
    /// [`QueueConfig::schedules_by_priority`]). Default: no.
    fn schedules_by_priority(&self) -> bool {
        false
    }
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
    /// Another discipline whose departures a token bucket limits to `rate`
    /// (see [`rate_limit`]), e.g.
    /// `{ kind = "rate_limited", rate = "1Gbps", burst_bytes = 3000, inner = { kind = "drop_tail" } }`.
    RateLimited {
        /// Largest long-run departure rate, e.g. `"500Mbps"`.
        rate: String,
        /// Bytes that may leave back to back beyond one packet when the
        /// bucket is full.
        #[serde(default)]
        burst_bytes: u64,
        /// The discipline that orders and drops.
        inner: Box<QueueConfig>,
    },
    /// CoDel (RFC 8289): head drops once the sojourn time stays above
    /// `target` for `interval`.
    Codel {
        /// Acceptable standing queue delay (default "5ms", Linux's; a
        /// datacenter wants a few microseconds).
        #[serde(default = "d_codel_target")]
        target: String,
        /// Window over which the delay must stay above target (default
        /// "100ms"; about a worst-case RTT).
        #[serde(default = "d_codel_interval")]
        interval: String,
    },
    /// A FIFO behind AIFO's quantile admission (see [`aifo`]): the AIFO
    /// baseline with `refusal = "drop"`, Canary's queue with
    /// `refusal = "deflect_two_admitting"`.
    Aifo {
        /// Sliding window of sampled ranks, in samples (default 20).
        #[serde(default = "d_aifo_window")]
        window: u32,
        /// One evaluation in this many is sampled into the window
        /// (default 15, AIFO's; Canary uses 20).
        #[serde(default = "d_aifo_sample")]
        sample: u32,
        /// Burst allowance k in [0, 1] (default 0.1, AIFO's; Canary 0.9).
        #[serde(default = "d_aifo_k")]
        k: f64,
        /// Optional ECN marking threshold in packets (DCTCP's K).
        k_packets: Option<u64>,
        /// Optional ECN marking threshold in bytes.
        k_bytes: Option<u64>,
    },
    /// Vertigo's rank-ordered queue that pushes out its lowest-priority
    /// packets to make room (see [`vertigo`]).
    Vertigo {
        /// Optional ECN marking threshold in packets (DCTCP's K).
        k_packets: Option<u64>,
        /// Optional ECN marking threshold in bytes.
        k_bytes: Option<u64>,
    },
    /// Control, rate-limited credit and data FIFOs of a credit-scheduled
    /// network (ExpressPass, FlashPass; see [`credit_port`]).
    CreditPort {
        /// Credit FIFO rate as a share of the link rate (default
        /// 84/(84+1538), ExpressPass' credit-to-data ratio).
        #[serde(default = "d_credit_share")]
        credit_share: f64,
        /// Credit FIFO capacity in packets (default 8).
        #[serde(default = "d_credit_packets")]
        credit_packets: u32,
        /// Credit bytes that may leave back to back beyond one (default 168,
        /// two credits: ExpressPass' `max_tokens_`).
        #[serde(default = "d_credit_burst")]
        credit_burst_bytes: u64,
        /// Non-ECT packets are dropped above this many queued packets
        /// (default 2, FlashPass' selective-dropping threshold).
        #[serde(default = "d_selective_drop")]
        selective_drop_packets: u32,
    },
    /// A discipline defined outside the library and registered under
    /// `name` by the program that runs the config (see [`custom`]).
    Custom {
        /// The name it was registered under ([`register`]).
        name: String,
    },
}

fn d_aifo_window() -> u32 {
    20
}
fn d_aifo_sample() -> u32 {
    15
}
fn d_aifo_k() -> f64 {
    0.1
}
fn d_credit_share() -> f64 {
    84.0 / (84.0 + 1538.0)
}
fn d_credit_packets() -> u32 {
    8
}
fn d_credit_burst() -> u64 {
    168
}
fn d_selective_drop() -> u32 {
    2
}

fn d_codel_target() -> String {
    "5ms".into()
}
fn d_codel_interval() -> String {
    "100ms".into()
}

/// Parse CoDel's durations; `field` names the config section for errors.
fn codel_times(target: &str, interval: &str, field: &str) -> crate::Result<(Duration, Duration)> {
    let t =
        parse_duration(target).map_err(|m| crate::Error::config(format!("{field}.target"), m))?;
    let i = parse_duration(interval)
        .map_err(|m| crate::Error::config(format!("{field}.interval"), m))?;
    if t.ps() == 0 || i.ps() == 0 {
        return Err(crate::Error::config(
            format!("{field}.interval"),
            "target and interval must be positive",
        ));
    }
    Ok((t, i))
}

impl QueueConfig {
    /// Check the values; `field` is the config path for error messages.
    pub fn validate(&self, field: &str) -> crate::Result<()> {
        match self {
            QueueConfig::DropTail | QueueConfig::Pfabric => Ok(()),
            QueueConfig::Custom { name } => match custom::factory(name) {
                Some(_) => Ok(()),
                None => Err(crate::Error::config(
                    format!("{field}.name"),
                    format!(
                        "no queue discipline is registered as \"{name}\" (registered: {}); \
                         a custom discipline is registered by the program that runs the \
                         config, with pktsim::net::queue::register",
                        match custom::registered() {
                            v if v.is_empty() => "none".to_string(),
                            v => v.join(", "),
                        }
                    ),
                )),
            },
            QueueConfig::CreditPort {
                credit_share,
                credit_packets,
                ..
            } => {
                if !(*credit_share > 0.0 && *credit_share <= 1.0) {
                    return Err(crate::Error::config(
                        format!("{field}.credit_share"),
                        format!("must be in (0, 1], got {credit_share}"),
                    ));
                }
                if *credit_packets == 0 {
                    return Err(crate::Error::config(
                        format!("{field}.credit_packets"),
                        "must be at least 1",
                    ));
                }
                Ok(())
            }
            QueueConfig::Codel { target, interval } => {
                codel_times(target, interval, field).map(|_| ())
            }
            QueueConfig::Ecn { k_packets, k_bytes } => {
                EcnThreshold::from_config(*k_packets, *k_bytes, field, true).map(|_| ())
            }
            QueueConfig::Vertigo { k_packets, k_bytes } => {
                EcnThreshold::from_config(*k_packets, *k_bytes, field, false).map(|_| ())
            }
            QueueConfig::Aifo {
                window,
                sample,
                k,
                k_packets,
                k_bytes,
            } => {
                if !(1..=1024).contains(window) {
                    return Err(crate::Error::config(
                        format!("{field}.window"),
                        format!("must be between 1 and 1024 samples, got {window}"),
                    ));
                }
                if *sample == 0 {
                    return Err(crate::Error::config(
                        format!("{field}.sample"),
                        "must be at least 1",
                    ));
                }
                if !(0.0..=1.0).contains(k) {
                    return Err(crate::Error::config(
                        format!("{field}.k"),
                        format!("must be in [0, 1], got {k}"),
                    ));
                }
                EcnThreshold::from_config(*k_packets, *k_bytes, field, false).map(|_| ())
            }
            QueueConfig::RateLimited { rate, inner, .. } => {
                parse_rate(rate).map_err(|m| crate::Error::config(format!("{field}.rate"), m))?;
                inner.validate(&format!("{field}.inner"))
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

    /// Whether the discipline chooses which queued packet leaves next by
    /// priority or rank rather than arrival order (pFabric, multi-class
    /// priority, Vertigo, credit ports, and a rate limit around one of
    /// them). A packet for such a queue at a cut-through switch arrives only
    /// once it could start there (see `Network::next_tx`), so that the port
    /// never picks a packet whose bits are still arriving over a slower link
    /// while complete packets wait.
    /// The discipline answers ([`Discipline::schedules_by_priority`]), so
    /// that a new one says it in its own file.
    pub fn schedules_by_priority(&self) -> bool {
        self.build().schedules_by_priority()
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

    /// Build an empty queue for a port whose link runs at `link` (credit
    /// ports size their credit rate from it). Call
    /// [`QueueConfig::validate`] first.
    pub fn build_for_link(&self, link: Rate) -> Queue {
        match self {
            QueueConfig::CreditPort {
                credit_share,
                credit_packets,
                credit_burst_bytes,
                selective_drop_packets,
            } => {
                let bps = (link.bps() as f64 * credit_share).round().max(1.0) as u64;
                Queue::CreditPort(Box::new(CreditPort::new(CreditPortParams {
                    credit_rate: Rate::from_bps(bps).unwrap_or(link),
                    credit_packets: *credit_packets,
                    credit_burst_bytes: *credit_burst_bytes,
                    selective_drop_packets: *selective_drop_packets,
                })))
            }
            _ => self.build(),
        }
    }

    /// Build an empty queue. Call [`QueueConfig::validate`] first. A credit
    /// port built here assumes a 10 Gbit/s link: ports use
    /// [`QueueConfig::build_for_link`].
    pub fn build(&self) -> Queue {
        match self {
            QueueConfig::CreditPort { .. } => self.build_for_link(Rate::gbps(10)),
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
            QueueConfig::Aifo {
                window,
                sample,
                k,
                k_packets,
                k_bytes,
            } => Queue::Aifo(AifoQueue::new(
                *window as usize,
                *sample,
                *k,
                EcnThreshold::from_config(*k_packets, *k_bytes, "", false)
                    .ok()
                    .flatten(),
            )),
            QueueConfig::Vertigo { k_packets, k_bytes } => Queue::Vertigo(VertigoQueue::new(
                EcnThreshold::from_config(*k_packets, *k_bytes, "", false)
                    .ok()
                    .flatten(),
            )),
            QueueConfig::RateLimited {
                rate,
                burst_bytes,
                inner,
            } => match parse_rate(rate) {
                Ok(r) => {
                    Queue::RateLimited(Box::new(RateLimited::new(inner.build(), r, *burst_bytes)))
                }
                // Not validated: no limit rather than a panic.
                Err(_) => inner.build(),
            },
            QueueConfig::Codel { target, interval } => {
                let (t, i) = codel_times(target, interval, "")
                    .unwrap_or((Duration::from_ms(5), Duration::from_ms(100)));
                Queue::Codel(CodelQueue::new(t, i))
            }
            QueueConfig::Custom { name } => match CustomQueue::new(name) {
                Some(q) => Queue::Custom(Box::new(q)),
                // Not validated: a drop-tail FIFO rather than a panic.
                None => Queue::Fifo(FifoQueue::new(1, None)),
            },
        }
    }
}

/// Declares [`Queue`], one variant per line, and its two dispatch macros:
/// `dispatch!` over every variant, and `dispatch_hot!`, which inlines the
/// per-packet call of the `inline` variants and sends the `boxed` ones
/// (which hold a `Queue` inside, so their dispatch recurses, which would
/// stop the compiler from inlining the per-packet calls) through a call of
/// their own. A new discipline is its file plus one line here.
macro_rules! disciplines {
    (
        inline { $($(#[$doc:meta])* $variant:ident($ty:ty),)* }
        boxed { $($(#[$bdoc:meta])* $bvariant:ident($bty:ty),)* }
    ) => {
        /// A port's queue: one variant per discipline.
        #[derive(Debug)]
        pub enum Queue {
            $($(#[$doc])* $variant($ty),)*
            $($(#[$bdoc])* $bvariant(Box<$bty>),)*
        }

        macro_rules! dispatch {
            ($self:ident, $q:ident => $e:expr) => {
                match $self {
                    $(Queue::$variant($q) => $e,)*
                    $(Queue::$bvariant($q) => $e,)*
                }
            };
        }

        macro_rules! dispatch_hot {
            ($self:ident, $q:ident => $e:expr, $boxed:expr) => {
                match $self {
                    $(Queue::$variant($q) => $e,)*
                    _ => $boxed,
                }
            };
        }
    };
}

disciplines! {
    inline {
        /// Drop-tail, ECN and strict-priority FIFOs.
        Fifo(FifoQueue),
        /// pFabric's priority queue.
        Pfabric(PfabricQueue),
        /// CoDel AQM.
        Codel(CodelQueue),
        /// AIFO admission in front of a FIFO.
        Aifo(AifoQueue),
        /// Vertigo's rank-ordered push-out queue.
        Vertigo(VertigoQueue),
    }
    boxed {
        /// A discipline behind a token bucket.
        RateLimited(RateLimited),
        /// FastLane's notice lane in front of another discipline.
        NoticeLane(NoticeLane),
        /// Control, rate-limited credit and data FIFOs.
        CreditPort(CreditPort),
        /// A discipline registered from outside the library.
        Custom(CustomQueue),
        /// A down link's queue (see [`link_down`]).
        LinkDown(LinkDownQueue),
    }
}

impl Queue {
    /// Whether the queue is empty and a packet offered now would be
    /// admitted and dequeued at once with no other effect (no marking,
    /// admission state or pacing): so an idle port may send it directly.
    #[inline]
    pub fn is_empty_pass_through(&self) -> bool {
        match self {
            Queue::Pfabric(q) => q.is_empty(),
            _ => false,
        }
    }

    /// Bytes and packets held, by one dispatch (a port reads both at
    /// every touch and after every change).
    #[inline]
    pub fn counts(&self) -> (u64, usize) {
        dispatch_hot!(self, q => (q.bytes(), q.len()), (self.bytes_boxed(), self.len_boxed()))
    }

    /// The variants behind a box (they hold a `Queue` inside): the dispatch
    /// through them recurses, which would stop the compiler from inlining
    /// the per-packet calls, so they get a call of their own.
    #[inline(never)]
    fn bytes_boxed(&self) -> u64 {
        dispatch!(self, q => q.bytes())
    }
    #[inline(never)]
    fn len_boxed(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    #[inline(never)]
    fn poll_boxed(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        dispatch!(self, q => q.poll(now, drops))
    }
    #[inline(never)]
    fn admits_boxed(&self, pkt: &Packet, limit: u64) -> bool {
        dispatch!(self, q => q.admits(pkt, limit))
    }
    #[inline(never)]
    fn enqueue_boxed(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        dispatch!(self, q => q.enqueue(pkt, now, limit, drops))
    }
}

impl Discipline for Queue {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        dispatch_hot!(self, q => q.enqueue(pkt, now, limit, drops), self.enqueue_boxed(pkt, now, limit, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn poll(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        dispatch_hot!(self, q => q.poll(now, drops), self.poll_boxed(now, drops))
    }
    #[inline]
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        dispatch_hot!(self, q => q.admits(pkt, limit), self.admits_boxed(pkt, limit))
    }
    #[inline]
    fn bytes(&self) -> u64 {
        dispatch_hot!(self, q => q.bytes(), self.bytes_boxed())
    }
    #[inline]
    fn len(&self) -> usize {
        dispatch_hot!(self, q => q.len(), self.len_boxed())
    }
    fn schedules_by_priority(&self) -> bool {
        dispatch!(self, q => q.schedules_by_priority())
    }
    fn drain(&mut self) -> Vec<Packet> {
        dispatch!(self, q => q.drain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// A port holds its queue inline (see `Port`'s layout), so the largest
    /// discipline sizes every port. A discipline that never marks holds an
    /// unmarked `Held` (counts only, 16 bytes), not a threshold it never
    /// reads: pFabric's queue, on every port of a pFabric run, stays within
    /// the size it had with its own byte count, and `Queue` within AIFO's.
    #[test]
    fn queues_hold_no_room_for_marks_they_never_make() {
        assert_eq!(size_of::<Held>(), 16);
        assert_eq!(size_of::<PfabricQueue>(), 120);
        assert_eq!(size_of::<CodelQueue>(), 112);
        assert_eq!(size_of::<AifoQueue>(), 120);
        assert_eq!(size_of::<Queue>(), 128);
    }
}
