//! The `[transport]` settings of `protocol = "fastpass"`, their defaults
//! (written once, here) and their validation into [`FastpassParams`] and
//! [`EpochParams`].

use super::epoch::{EpochModel, EpochParams, EpochProtocol};
use super::{Fastpass, FastpassParams, FastpassProtocol};
use crate::error::{Error, Result};
use crate::packet::NodeId;
use crate::time::{parse_duration, Duration};
use crate::transport::{ProtocolConfig, SimSetup};
use fastpass_arbiter::Order;
use serde::{Deserialize, Serialize};

/// Which Fastpass model runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FastpassModel {
    /// The real design: FCP demands, an arbiter host, exact timeslots,
    /// path selection (spec §3–6).
    #[default]
    Arbiter,
    /// The pHost paper's simplified model: 8-slot epochs, SRPT matching
    /// (spec §8).
    PhostEpoch,
}

/// The arbiter's priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FastpassOrder {
    /// Least recently allocated first (max-min fairness; the paper's).
    #[default]
    Lra,
    /// Arrival order.
    Fifo,
    /// Fewest remaining slots first.
    Shortest,
}

/// When a source applies a `phost_epoch` schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EpochStart {
    /// When the schedule packet arrives.
    #[default]
    Arrival,
    /// At the start of the next epoch (one epoch after the arbiter's tick).
    NextEpoch,
}

/// Fastpass settings (`model = "arbiter"` unless noted).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FastpassConfig {
    /// `"arbiter"` (default) or `"phost_epoch"`.
    pub model: FastpassModel,
    /// Timeslot length (default: one MTU at the host rate; the paper's
    /// code uses 1.251us).
    pub timeslot: Option<String>,
    /// Allocation order: `"lra"` (default), `"fifo"` or `"shortest"`.
    pub order: FastpassOrder,
    /// Timeslots per arbiter step (FCP's batch of 16).
    pub batch_slots: u32,
    /// Slots ahead of their start that the arbiter allocates them.
    pub lead_slots: u32,
    /// Fixed compute latency of one batch.
    pub arbiter_latency: String,
    /// Compute time per allocated slot on one allocation core.
    pub arbiter_per_alloc: String,
    /// Allocation cores (batches are computed round-robin, overlapping).
    pub arbiter_cores: u32,
    /// FCP request timeout: unacknowledged demands are re-sent after it.
    pub request_timeout: String,
    /// Smallest gap between two request packets of one host.
    pub request_gap: String,
    /// Unacknowledged data is re-queued this long after a flow's last
    /// waiting packet was sent.
    pub retx_timeout: String,
    /// Allocations up to this many slots late are still used.
    pub miss_threshold: u32,
    /// Host index of the arbiter (default: an extra host beside host 0,
    /// with a host-rate link, that no flow uses).
    pub arbiter_host: Option<u32>,
    /// Colour inter-rack pairs onto core switches and source-route them.
    pub path_selection: bool,
    /// Fault injection: the arbiter ignores the first N request packets.
    pub drop_first_requests: u32,
    /// `phost_epoch` model: timeslots per epoch.
    pub epoch_slots: u32,
    /// `phost_epoch` model: a schedule starts when it arrives (`"arrival"`,
    /// default, as the pHost code at HEAD does) or at the start of the epoch
    /// it was computed for (`"next_epoch"`, earlier versions).
    pub epoch_start: EpochStart,
}

impl Default for FastpassConfig {
    /// FCP's batch of 16 slots and miss threshold, compute costs from the
    /// single-thread benchmark (`BENCHMARKS.md`), the pHost code's 8-slot
    /// epochs.
    fn default() -> Self {
        FastpassConfig {
            model: FastpassModel::default(),
            timeslot: None,
            order: FastpassOrder::default(),
            batch_slots: 16,
            lead_slots: 32,
            arbiter_latency: "1us".into(),
            arbiter_per_alloc: "23.4ns".into(),
            arbiter_cores: 1,
            request_timeout: "20us".into(),
            request_gap: "1us".into(),
            retx_timeout: "20us".into(),
            miss_threshold: 16,
            arbiter_host: None,
            path_selection: true,
            drop_first_requests: 0,
            epoch_slots: 8,
            epoch_start: EpochStart::default(),
        }
    }
}

impl FastpassConfig {
    /// Validate into the arbiter model's parameters (also checks the
    /// settings the `phost_epoch` model reads).
    pub fn params(&self) -> Result<FastpassParams> {
        let dur = |s: &str, f: &str| {
            parse_duration(s).map_err(|m| Error::config(format!("transport.{f}"), m))
        };
        let positive = |d: Duration, f: &str| {
            if d.ps() == 0 {
                Err(Error::config(format!("transport.{f}"), "must be positive"))
            } else {
                Ok(d)
            }
        };
        let timeslot = match &self.timeslot {
            Some(s) => Some(positive(dur(s, "timeslot")?, "timeslot")?),
            None => None,
        };
        if self.batch_slots == 0 || self.batch_slots > 1024 {
            return Err(Error::config(
                "transport.batch_slots",
                "must be between 1 and 1024",
            ));
        }
        if self.lead_slots < self.batch_slots {
            return Err(Error::config(
                "transport.lead_slots",
                "must be at least batch_slots (a batch is allocated before it starts)",
            ));
        }
        if self.arbiter_cores == 0 || self.arbiter_cores > 64 {
            return Err(Error::config(
                "transport.arbiter_cores",
                "must be between 1 and 64",
            ));
        }
        if self.epoch_slots == 0 || self.epoch_slots > 1024 {
            return Err(Error::config(
                "transport.epoch_slots",
                "must be between 1 and 1024",
            ));
        }
        Ok(FastpassParams {
            timeslot,
            order: match self.order {
                FastpassOrder::Lra => Order::LeastRecentlyAllocated,
                FastpassOrder::Fifo => Order::Fifo,
                FastpassOrder::Shortest => Order::ShortestFirst,
            },
            batch_slots: self.batch_slots,
            lead_slots: self.lead_slots,
            arbiter_latency: dur(&self.arbiter_latency, "arbiter_latency")?,
            arbiter_per_alloc: dur(&self.arbiter_per_alloc, "arbiter_per_alloc")?,
            arbiter_cores: self.arbiter_cores,
            request_timeout: positive(
                dur(&self.request_timeout, "request_timeout")?,
                "request_timeout",
            )?,
            request_gap: dur(&self.request_gap, "request_gap")?,
            retx_timeout: positive(dur(&self.retx_timeout, "retx_timeout")?, "retx_timeout")?,
            miss_threshold: self.miss_threshold,
            arbiter: self.arbiter_host.map(NodeId),
            path_selection: self.path_selection,
            drop_first_requests: self.drop_first_requests,
        })
    }

    /// The `phost_epoch` model's parameters (1500-byte slots, as the pHost
    /// code's).
    pub fn epoch_params(&self) -> EpochParams {
        EpochParams {
            epoch_slots: self.epoch_slots,
            slot_bytes: 1500,
            arbiter: self.arbiter_host.map(NodeId),
            at_epoch_start: self.epoch_start == EpochStart::NextEpoch,
        }
    }
}

impl ProtocolConfig for FastpassConfig {
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        let params = self.params()?;
        Ok(match self.model {
            FastpassModel::Arbiter => setup.run(Fastpass::new(FastpassProtocol::new(params))),
            FastpassModel::PhostEpoch => {
                setup.run(EpochModel::new(EpochProtocol::new(self.epoch_params())))
            }
        })
    }

    /// The arbiter needs a server of its own unless placed on a workload host.
    fn wants_extra_host(&self) -> bool {
        self.arbiter_host.is_none()
    }

    fn validate_hosts(&self, n_hosts: u32) -> Result<()> {
        if let Some(h) = self.arbiter_host {
            if h >= n_hosts {
                return Err(Error::config(
                    "transport.arbiter_host",
                    format!("host {h} does not exist (hosts are 0..{})", n_hosts - 1),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_takes_every_default() {
        let c: FastpassConfig = toml::from_str("").unwrap();
        assert_eq!(c, FastpassConfig::default());
    }

    #[test]
    fn default_params_are_the_default_config_validated() {
        let p = FastpassParams::default();
        assert_eq!(p.batch_slots, 16);
        assert_eq!(p.arbiter_latency, Duration::from_ns(1000));
        assert_eq!(p.arbiter_per_alloc, Duration::from_ps(23_400));
        assert_eq!(p.order, Order::LeastRecentlyAllocated);
        let e = EpochParams::default();
        assert_eq!(
            (e.epoch_slots, e.slot_bytes, e.at_epoch_start),
            (8, 1500, false)
        );
    }
}
