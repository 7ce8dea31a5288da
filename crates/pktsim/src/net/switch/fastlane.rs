//! FastLane (Zats et al., "FastLane: Making Short Flows Shorter with Agile
//! Drop Notification", SoCC 2015): a switch that drops a data packet turns
//! it into a small notification and sends it to the packet's source at top
//! priority, within caps on the bandwidth and buffer notifications use.
//!
//! What the sources say (specs `fastlane-evidence.md` §1–2) and what is
//! inferred (tagged there \[INFER\]; each is a field of [`FastLaneConfig`]):
//!
//! - the dropped packet is transformed, not copied: the notice keeps the
//!   flow and the transport header (sequence number), loses the payload,
//!   and goes back to the source (slides, abstract). Its size on the wire,
//!   64 B, is inferred (`notice_bytes`);
//! - it travels in a strict top-priority lane ([`NoticeLane`]) at every
//!   switch port (abstract: "high priority");
//! - which drops qualify: buffer overflow on either admission path; a
//!   queued packet evicted by a priority queue (pFabric) and an AQM's drop
//!   (CoDel) are inferred, on by default (`notify_evictions`,
//!   `notify_aqm_drops`); never for a notice or a control packet;
//! - caps: at most 1 % of a port's rate and 2.5 % of its buffer
//!   (abstract). Above a cap the drop stays silent (slides: "if cap
//!   exceeded, best to time out"). Mechanism inferred: every switch port
//!   paces its notices with a token bucket at 1 % of its rate
//!   (`burst_notices` deep: by default as many notices as its buffer cap
//!   holds) and holds at most 2.5 % of its buffer in notices
//!   ([`NoticeLane`]); a notice is made only while the lanes of every port
//!   it may leave by have room, so a rate cap that binds fills the lane
//!   and silences further drops. Optionally (`generation_bucket`) a second
//!   token bucket per refusing port caps the rate of notice generation.

use crate::error::{Error, Result};
use crate::metrics::DropReason;
use crate::net::network::Network;
use crate::net::port::Port;
use crate::net::queue::{NoticeLane, Queue, TokenBucket};
use crate::net::switch::{
    notice_to_source, same_hook, RefusalHook, Refused, SwitchPlugin, SwitchView, Theirs, Verdict,
};
use crate::packet::{flags, Packet, PacketKind, PortId};
use crate::time::{Rate, Time};
use serde::{Deserialize, Serialize};

/// `[network.fastlane]`: turn drops into notifications to the source.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FastLaneConfig {
    /// Largest share of a port's rate notices may use (paper: 1 %).
    pub bandwidth_cap: f64,
    /// Largest share of a port's buffer notices may hold (paper: 2.5 %).
    pub buffer_cap: f64,
    /// Size of a notice on the wire, bytes (\[INFER\] 64: L2–L4 headers).
    pub notice_bytes: u32,
    /// Depth of the notice token buckets, in notices. Default: as many
    /// as the port's notice buffer holds (2.5 % of a 36 KB buffer: 14),
    /// so a burst of drops is notified up to the buffer cap and the rate
    /// cap binds on longer scales. \[INFER\]: the spec suggests "a few", e.g.
    /// 4, which silences most drops of an incast burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst_notices: Option<u32>,
    /// Notify for a queued packet a priority queue pushed out (pFabric)
    /// (\[INFER\] on).
    pub notify_evictions: bool,
    /// Notify for an AQM's drop (CoDel) (\[INFER\] on).
    pub notify_aqm_drops: bool,
    /// Also cap notice generation per refusing port with a token bucket at
    /// `bandwidth_cap` of its rate (\[INFER\] off: the lanes already pace
    /// notices at that rate on every port they leave by, and a notice is
    /// made only while the lanes towards the source have room).
    pub generation_bucket: bool,
}

impl Default for FastLaneConfig {
    /// The paper's caps (SoCC'15 abstract) and the spec's inferred choices.
    fn default() -> Self {
        FastLaneConfig {
            bandwidth_cap: 0.01,
            buffer_cap: 0.025,
            notice_bytes: 64,
            burst_notices: None,
            notify_evictions: true,
            notify_aqm_drops: true,
            generation_bucket: false,
        }
    }
}

impl FastLaneConfig {
    /// Check the values (`network.fastlane.<field>` in errors).
    pub fn validate(&self) -> Result<()> {
        for (v, f) in [
            (self.bandwidth_cap, "bandwidth_cap"),
            (self.buffer_cap, "buffer_cap"),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(Error::config(
                    format!("network.fastlane.{f}"),
                    format!("must be in (0, 1], got {v}"),
                ));
            }
        }
        if self.notice_bytes == 0 {
            return Err(Error::config(
                "network.fastlane.notice_bytes",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// The notice rate allowed on a port of rate `r` (at least 1 bit/s).
    pub fn notice_rate(&self, r: Rate) -> Rate {
        let bps = (r.bps() as f64 * self.bandwidth_cap).floor() as u64;
        Rate::from_bps(bps.max(1)).unwrap_or(r)
    }

    /// Bytes of notices a port with buffer `limit` may hold.
    pub fn lane_bytes(&self, limit: u64) -> u64 {
        (limit as f64 * self.buffer_cap).floor() as u64
    }

    /// Burst allowance of the token buckets of a port with buffer
    /// `limit`, bytes.
    pub fn burst_bytes(&self, limit: u64) -> u64 {
        let n = self.notice_bytes as u64;
        match self.burst_notices {
            Some(b) => b as u64 * n,
            None => (self.lane_bytes(limit) / n).max(1) * n,
        }
    }

    /// Wrap a switch port's queue in a notice lane.
    pub fn lane(&self, inner: Queue, rate: Rate, limit: u64) -> Queue {
        Queue::NoticeLane(Box::new(NoticeLane::new(
            inner,
            self.lane_bytes(limit),
            self.notice_rate(rate),
            self.burst_bytes(limit),
        )))
    }
}

/// FastLane as a switch-stage plug-in: a notice lane in front of every
/// switch port's queue, the [`FastLaneHook`] as the refusal hook, notices
/// of `notice_bytes`, and the lanes' overhead in the run summary.
pub struct FastLane {
    cfg: FastLaneConfig,
}

impl FastLane {
    /// FastLane with these parameters (validated).
    pub fn new(cfg: FastLaneConfig) -> Self {
        FastLane { cfg }
    }
}

impl SwitchPlugin for FastLane {
    fn switch_queue(&self, queue: Queue, rate: Rate, limit: u64) -> Queue {
        self.cfg.lane(queue, rate, limit)
    }

    /// No: an eager FIFO would bypass the notice lane.
    fn allows_eager_fifo(&self) -> bool {
        false
    }

    fn refusal_hook(&self, ports: &[Port]) -> Option<Box<dyn RefusalHook>> {
        Some(Box::new(FastLaneHook::new(self.cfg.clone(), ports)))
    }

    fn notice_bytes(&self) -> Option<u32> {
        Some(self.cfg.notice_bytes)
    }

    fn counters(&self, net: &Network, now: Time) -> Vec<(&'static str, u64)> {
        lane_counters(net, now)
    }
}

/// Counts of the refusal decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastLaneCounts {
    /// Notices made.
    pub made: u64,
    /// Eligible drops left silent: the generation bucket was empty.
    pub silent_bandwidth: u64,
    /// Eligible drops left silent: a lane towards the source was full.
    pub silent_buffer: u64,
}

/// The FastLane refusal hook.
pub struct FastLaneHook {
    cfg: FastLaneConfig,
    /// Notice generation bucket per port (index = port id).
    generation: Vec<TokenBucket>,
    /// Decisions so far.
    pub counts: FastLaneCounts,
}

impl FastLaneHook {
    /// A hook for a network with these ports.
    pub fn new(cfg: FastLaneConfig, ports: &[Port]) -> Self {
        let generation = ports
            .iter()
            .map(|p| TokenBucket::new(cfg.notice_rate(p.rate), cfg.burst_bytes(p.limit)))
            .collect();
        FastLaneHook {
            cfg,
            generation,
            counts: FastLaneCounts::default(),
        }
    }

    /// Whether a drop of `pkt` for `reason` calls for a notice at all.
    fn eligible(&self, at: &Refused, pkt: &Packet) -> bool {
        if at.at_host
            || at.final_refusal
            || pkt.kind != PacketKind::Data
            || pkt.has(flags::NOTICE)
            || pkt.has(flags::TRIMMED)
        {
            return false;
        }
        match at.reason {
            DropReason::BufferFull => true,
            DropReason::Evicted => self.cfg.notify_evictions,
            DropReason::Aqm => self.cfg.notify_aqm_drops,
            // A dead or lossy link is not congestion: nothing to slow down for.
            DropReason::Protocol
            | DropReason::HopLimit
            | DropReason::LinkDown
            | DropReason::LinkLoss => false,
        }
    }
}

impl RefusalHook for FastLaneHook {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, view: &SwitchView) -> Verdict {
        if !self.eligible(at, pkt) {
            return Verdict::Drop;
        }
        let probe = notice_to_source(pkt, self.cfg.notice_bytes);
        // Every port the notice may leave by must have lane room (the
        // egress choice is made afterwards, so ask all of them).
        let room = view
            .next_hops(pkt.src)
            .iter()
            .all(|&p| view.would_admit(p, &probe));
        if !room {
            self.counts.silent_buffer += 1;
            return Verdict::Drop;
        }
        if self.cfg.generation_bucket {
            let bucket = &mut self.generation[at.port.idx()];
            if bucket.ready_at(at.now) > at.now {
                self.counts.silent_bandwidth += 1;
                return Verdict::Drop;
            }
            bucket.charge(at.now, self.cfg.notice_bytes as u64);
        }
        self.counts.made += 1;
        Verdict::NotifySource
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("fastlane_notices_made", self.counts.made),
            (
                "fastlane_silent_bandwidth_cap",
                self.counts.silent_bandwidth,
            ),
            ("fastlane_silent_buffer_cap", self.counts.silent_buffer),
        ]
    }

    fn splits(&self) -> bool {
        true
    }

    fn absorb(&mut self, other: &mut dyn RefusalHook, theirs: &Theirs) {
        let Some(o) = same_hook::<Self>(other) else {
            return;
        };
        for (i, (a, b)) in self.generation.iter_mut().zip(&o.generation).enumerate() {
            if (theirs.port)(PortId(i as u32)) {
                *a = *b;
            }
        }
        self.counts.made += o.counts.made;
        self.counts.silent_bandwidth += o.counts.silent_bandwidth;
        self.counts.silent_buffer += o.counts.silent_buffer;
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// Overhead of the notice lanes of `net` over a run that lasted until
/// `now`: notice bytes sent, the largest share of a port's capacity they
/// used (parts per million of rate × time) and of its buffer (peak lane
/// bytes over the port's limit, ppm). Empty when no port has a lane.
pub fn lane_counters(net: &Network, now: Time) -> Vec<(&'static str, u64)> {
    let (mut bytes, mut pkts, mut bw_ppm, mut buf_ppm, mut lanes) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut all_bytes = 0u64;
    let secs = now.ps() as f64 / 1e12;
    for p in net.ports() {
        let Queue::NoticeLane(l) = &p.queue else {
            continue;
        };
        lanes += 1;
        bytes += l.sent_bytes;
        pkts += l.sent_packets;
        all_bytes += p.stats.tx_bytes;
        if secs > 0.0 {
            let cap = p.rate.bps() as f64 * secs / 8.0;
            bw_ppm = bw_ppm.max((l.sent_bytes as f64 / cap * 1e6).round() as u64);
        }
        if p.limit > 0 {
            buf_ppm = buf_ppm.max((l.peak_bytes as f64 / p.limit as f64 * 1e6).round() as u64);
        }
    }
    if lanes == 0 {
        return Vec::new();
    }
    let share = if all_bytes > 0 {
        (bytes as f64 / all_bytes as f64 * 1e6).round() as u64
    } else {
        0
    };
    vec![
        ("fastlane_notice_bytes", bytes),
        ("fastlane_notice_packets", pkts),
        ("fastlane_notice_share_of_switch_bytes_ppm", share),
        ("fastlane_max_port_bandwidth_share_ppm", bw_ppm),
        ("fastlane_max_port_buffer_share_ppm", buf_ppm),
    ]
}
