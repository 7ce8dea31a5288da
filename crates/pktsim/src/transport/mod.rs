//! Host protocols. Each protocol is one file implementing
//! [`contract::Transport`], plus one variant in [`TransportConfig`] and
//! one arm in [`TransportConfig::run`]: the registry (see
//! `docs/extending.md`).

pub mod contract;
pub mod fastpass;
pub mod pfabric;
pub mod phost;
pub mod receiver;
pub mod tcp;

/// DCTCP's estimator and controller (kept at its old path).
pub use tcp::dctcp;

use crate::error::{Error, Result};
use crate::metrics::RunOutput;
use crate::sim::{Progress, Simulation, StopReason, Transport};
use crate::time::parse_duration;
use serde::{Deserialize, Serialize};

/// Settings shared by the TCP family (NewReno, DCTCP, CUBIC).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Initial window, packets.
    #[serde(default = "d_init_cwnd")]
    pub init_cwnd: u32,
    /// Largest window, packets (unlimited if absent).
    #[serde(default)]
    pub max_cwnd: Option<u32>,
    /// Retransmission timeout before the first RTT sample.
    #[serde(default = "d_initial_rto")]
    pub initial_rto: String,
    /// Smallest retransmission timeout.
    #[serde(default = "d_min_rto")]
    pub min_rto: String,
    /// Largest retransmission timeout (after backoff).
    #[serde(default = "d_max_rto")]
    pub max_rto: String,
    /// Duplicate ACKs that trigger fast retransmit.
    #[serde(default = "d_dupack")]
    pub dupack_threshold: u32,
    /// DCTCP gain (DCTCP only).
    #[serde(default)]
    pub g: Option<f64>,
    /// SACK loss recovery (RFC 2018/6675). Default on; `false` gives
    /// NewReno-faithful recovery (RFC 6582).
    #[serde(default = "d_true")]
    pub sack: bool,
    /// RFC 3042 Limited Transmit (default on).
    #[serde(default = "d_true")]
    pub limited_transmit: bool,
    /// Timer restart rule in recovery: `"rfc"` (default; RFC 6582's first
    /// partial ACK only) or `"linux"` (every partial ACK and fast retransmit).
    #[serde(default)]
    pub timer_mode: tcp::TimerMode,
    /// Receive window advertised by receivers, bytes (default 6 MiB,
    /// Linux's `tcp_rmem` maximum; at most 1 GiB, RFC 7323 §2.3).
    #[serde(default = "d_rcv_window")]
    pub rcv_window_bytes: u64,
    /// Bytes one flow may have queued in its host NIC before it waits for
    /// the NIC to run dry (default 64 KiB).
    #[serde(default = "d_nic_limit")]
    pub nic_limit_bytes: u64,
}

fn d_rcv_window() -> u64 {
    tcp::DEFAULT_RCV_WINDOW
}
fn d_nic_limit() -> u64 {
    tcp::DEFAULT_NIC_LIMIT
}

fn d_init_cwnd() -> u32 {
    10
}
fn d_initial_rto() -> String {
    "1ms".into()
}
fn d_min_rto() -> String {
    "200us".into()
}
fn d_max_rto() -> String {
    "1s".into()
}
fn d_dupack() -> u32 {
    3
}

/// pFabric host settings.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PfabricConfig {
    /// Initial window, packets (≈ 1 BDP).
    #[serde(default = "d_pf_init")]
    pub init_cwnd: u32,
    /// Largest window, packets.
    #[serde(default = "d_pf_max")]
    pub max_cwnd: u32,
    /// Fixed retransmission timeout (≈ 3 RTT).
    #[serde(default = "d_pf_rto")]
    pub rto: String,
    /// Consecutive timeouts before probe mode.
    #[serde(default = "d_pf_probe")]
    pub probe_after: u32,
    /// Out-of-order data the receiver holds does not count against the
    /// window (default, as pHost's pFabric); `false` counts it, as ns-2's
    /// FullTcp does after a timeout.
    #[serde(default = "d_true")]
    pub sacked_outside_window: bool,
}

fn d_pf_init() -> u32 {
    12
}
fn d_pf_max() -> u32 {
    23
}
fn d_pf_rto() -> String {
    "45us".into()
}
fn d_pf_probe() -> u32 {
    5
}

impl PfabricConfig {
    fn params(&self) -> Result<pfabric::PfabricParams> {
        let rto = parse_duration(&self.rto).map_err(|m| Error::config("transport.rto", m))?;
        if rto.ps() == 0 {
            return Err(Error::config("transport.rto", "must be positive"));
        }
        if self.init_cwnd == 0 || self.max_cwnd < self.init_cwnd {
            return Err(Error::config(
                "transport.max_cwnd",
                "need 1 ≤ init_cwnd ≤ max_cwnd",
            ));
        }
        if self.probe_after == 0 {
            return Err(Error::config("transport.probe_after", "must be at least 1"));
        }
        Ok(pfabric::PfabricParams {
            init_cwnd: self.init_cwnd,
            max_cwnd: self.max_cwnd,
            rto,
            probe_after: self.probe_after,
            sacked_outside_window: self.sacked_outside_window,
        })
    }
}

/// pHost settings (times in packet times at the host rate).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PhostConfig {
    /// Flows of at most this many packets are sent unsolicited.
    #[serde(default = "d_ph_free")]
    pub free_tokens: u32,
    /// Token lifetime at the sender.
    #[serde(default = "d_ph_ttl")]
    pub token_timeout: f64,
    /// Re-issue tokens for missing packets after this long.
    #[serde(default = "d_ph_resend")]
    pub resend_timeout: f64,
    /// Unused tokens before a flow is downgraded.
    #[serde(default = "d_ph_window")]
    pub window: u32,
    /// Wait of a downgraded flow for its next token.
    #[serde(default = "d_ph_window_timeout")]
    pub window_timeout: f64,
    /// Bytes per token slot (default: one MTU, tokens at line rate; pHost's
    /// 2015 simulator used 1540).
    #[serde(default)]
    pub token_slot_bytes: Option<u32>,
    /// Give every flow free tokens for its first `free_tokens` packets (the
    /// paper); default: only flows of at most `free_tokens` packets (the
    /// 2015 code).
    #[serde(default)]
    pub free_tokens_every_flow: bool,
    /// Send data of flows of at most this many packets one priority level
    /// above longer flows' (the paper's three levels); default: one data
    /// level (the 2015 code).
    #[serde(default)]
    pub short_flow_packets: Option<u32>,
}

fn d_ph_free() -> u32 {
    8
}
fn d_ph_ttl() -> f64 {
    1.5
}
fn d_ph_resend() -> f64 {
    9.0
}
fn d_ph_window() -> u32 {
    8
}
fn d_ph_window_timeout() -> f64 {
    15.0
}

impl PhostConfig {
    fn params(&self) -> Result<phost::PhostParams> {
        for (v, f) in [
            (self.token_timeout, "token_timeout"),
            (self.resend_timeout, "resend_timeout"),
            (self.window_timeout, "window_timeout"),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::config(
                    format!("transport.{f}"),
                    format!("must be positive, got {v}"),
                ));
            }
        }
        if self.window == 0 {
            return Err(Error::config("transport.window", "must be at least 1"));
        }
        if self.token_slot_bytes == Some(0) {
            return Err(Error::config(
                "transport.token_slot_bytes",
                "must be positive",
            ));
        }
        Ok(phost::PhostParams {
            free_tokens: self.free_tokens,
            token_timeout: self.token_timeout,
            resend_timeout: self.resend_timeout,
            window: self.window,
            window_timeout: self.window_timeout,
            hold: true,
            token_slot_bytes: self.token_slot_bytes,
            free_tokens_every_flow: self.free_tokens_every_flow,
            short_flow_packets: self.short_flow_packets,
        })
    }
}

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

/// Fastpass settings (`model = "arbiter"` unless noted).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FastpassConfig {
    /// `"arbiter"` (default) or `"phost_epoch"`.
    #[serde(default)]
    pub model: FastpassModel,
    /// Timeslot length (default: one MTU at the host rate; the paper's
    /// code uses 1.251us).
    #[serde(default)]
    pub timeslot: Option<String>,
    /// Allocation order: `"lra"` (default), `"fifo"` or `"shortest"`.
    #[serde(default)]
    pub order: FastpassOrder,
    /// Timeslots per arbiter step (FCP's batch of 16).
    #[serde(default = "d_fp_batch")]
    pub batch_slots: u32,
    /// Slots ahead of their start that the arbiter allocates them.
    #[serde(default = "d_fp_lead")]
    pub lead_slots: u32,
    /// Fixed compute latency of one batch.
    #[serde(default = "d_fp_latency")]
    pub arbiter_latency: String,
    /// Compute time per allocated slot on one allocation core.
    #[serde(default = "d_fp_per_alloc")]
    pub arbiter_per_alloc: String,
    /// Allocation cores (batches are computed round-robin, overlapping).
    #[serde(default = "d_fp_cores")]
    pub arbiter_cores: u32,
    /// FCP request timeout: unacknowledged demands are re-sent after it.
    #[serde(default = "d_fp_req_timeout")]
    pub request_timeout: String,
    /// Smallest gap between two request packets of one host.
    #[serde(default = "d_fp_req_gap")]
    pub request_gap: String,
    /// Unacknowledged data is re-queued this long after a flow's last
    /// waiting packet was sent.
    #[serde(default = "d_fp_retx")]
    pub retx_timeout: String,
    /// Allocations up to this many slots late are still used.
    #[serde(default = "d_fp_miss")]
    pub miss_threshold: u32,
    /// Host index of the arbiter (default: an extra host beside host 0,
    /// with a host-rate link, that no flow uses).
    #[serde(default)]
    pub arbiter_host: Option<u32>,
    /// Colour inter-rack pairs onto core switches and source-route them.
    #[serde(default = "d_true")]
    pub path_selection: bool,
    /// Fault injection: the arbiter ignores the first N request packets.
    #[serde(default)]
    pub drop_first_requests: u32,
    /// `phost_epoch` model: timeslots per epoch.
    #[serde(default = "d_fp_epoch")]
    pub epoch_slots: u32,
    /// `phost_epoch` model: a schedule starts when it arrives (`"arrival"`,
    /// default, as the pHost code at HEAD does) or at the start of the epoch
    /// it was computed for (`"next_epoch"`, earlier versions).
    #[serde(default)]
    pub epoch_start: EpochStart,
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

fn d_fp_batch() -> u32 {
    16
}
fn d_fp_lead() -> u32 {
    32
}
fn d_fp_latency() -> String {
    "1us".into()
}
fn d_fp_per_alloc() -> String {
    "23.4ns".into()
}
fn d_fp_cores() -> u32 {
    1
}
fn d_fp_req_timeout() -> String {
    "20us".into()
}
fn d_fp_req_gap() -> String {
    "1us".into()
}
fn d_fp_retx() -> String {
    "20us".into()
}
fn d_fp_miss() -> u32 {
    16
}
fn d_true() -> bool {
    true
}
fn d_fp_epoch() -> u32 {
    8
}

impl FastpassConfig {
    fn params(&self) -> Result<fastpass::FastpassParams> {
        let dur = |s: &str, f: &str| {
            parse_duration(s).map_err(|m| Error::config(format!("transport.{f}"), m))
        };
        let positive = |d: crate::time::Duration, f: &str| {
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
        Ok(fastpass::FastpassParams {
            timeslot,
            order: match self.order {
                FastpassOrder::Lra => fastpass_arbiter::Order::LeastRecentlyAllocated,
                FastpassOrder::Fifo => fastpass_arbiter::Order::Fifo,
                FastpassOrder::Shortest => fastpass_arbiter::Order::ShortestFirst,
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
            arbiter: self.arbiter_host.map(crate::net::NodeId),
            path_selection: self.path_selection,
            drop_first_requests: self.drop_first_requests,
        })
    }

    fn epoch_params(&self) -> fastpass::epoch::EpochParams {
        fastpass::epoch::EpochParams {
            epoch_slots: self.epoch_slots,
            slot_bytes: 1500,
            arbiter: self.arbiter_host.map(crate::net::NodeId),
            at_epoch_start: self.epoch_start == EpochStart::NextEpoch,
        }
    }
}

/// The `[transport]` section: which protocol, and its parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "protocol", rename_all = "snake_case")]
pub enum TransportConfig {
    /// TCP NewReno.
    Tcp(TcpConfig),
    /// DCTCP: NewReno plus ECN-proportional window cuts.
    Dctcp(TcpConfig),
    /// TCP CUBIC (RFC 9438).
    Cubic(TcpConfig),
    /// pFabric's minimal rate control (use with `switch_queue = { kind = "pfabric" }`).
    Pfabric(PfabricConfig),
    /// pHost's receiver-driven tokens (use with `switch_queue = { kind = "pfabric" }`).
    Phost(PhostConfig),
    /// Fastpass: a central arbiter allocates every packet a timeslot.
    Fastpass(FastpassConfig),
}

impl TransportConfig {
    /// Protocol name.
    pub fn name(&self) -> &'static str {
        match self {
            TransportConfig::Tcp(_) => "tcp",
            TransportConfig::Dctcp(_) => "dctcp",
            TransportConfig::Cubic(_) => "cubic",
            TransportConfig::Pfabric(_) => "pfabric",
            TransportConfig::Phost(_) => "phost",
            TransportConfig::Fastpass(_) => "fastpass",
        }
    }

    /// Fill in defaults that depend on the protocol (DCTCP's g).
    pub fn resolve(&mut self) {
        if let TransportConfig::Dctcp(c) = self {
            c.g.get_or_insert(1.0 / 16.0);
        }
    }

    /// Whether the protocol is one of the TCP family (NIC backpressure,
    /// finite default host buffer).
    pub fn is_tcp_family(&self) -> bool {
        matches!(
            self,
            TransportConfig::Tcp(_) | TransportConfig::Dctcp(_) | TransportConfig::Cubic(_)
        )
    }

    /// The TCP parameters of a TCP-family protocol (`None` for others), for
    /// callers that build the transport themselves.
    pub fn tcp(&self) -> Result<Option<tcp::TcpParams>> {
        Ok(match self {
            TransportConfig::Tcp(c) => Some(Self::tcp_params(c, false)?),
            TransportConfig::Dctcp(c) => Some(Self::tcp_params(c, true)?),
            TransportConfig::Cubic(c) => Some(tcp::TcpParams {
                variant: tcp::Variant::Cubic,
                ..Self::tcp_params(c, false)?
            }),
            _ => None,
        })
    }

    fn tcp_params(c: &TcpConfig, dctcp: bool) -> Result<tcp::TcpParams> {
        let dur = |s: &str, f: &str| {
            parse_duration(s).map_err(|m| Error::config(format!("transport.{f}"), m))
        };
        let p = tcp::TcpParams {
            init_cwnd: c.init_cwnd,
            max_cwnd: c.max_cwnd,
            initial_rto: dur(&c.initial_rto, "initial_rto")?,
            min_rto: dur(&c.min_rto, "min_rto")?,
            max_rto: dur(&c.max_rto, "max_rto")?,
            dupack_threshold: c.dupack_threshold,
            dctcp_g: if dctcp {
                Some(c.g.unwrap_or(1.0 / 16.0))
            } else {
                None
            },
            variant: tcp::Variant::NewReno,
            sack: c.sack,
            limited_transmit: c.limited_transmit,
            timer: c.timer_mode,
            rcv_window: c.rcv_window_bytes,
            nic_limit: c.nic_limit_bytes,
        };
        if p.rcv_window == 0 || p.rcv_window > 1 << 30 {
            return Err(Error::config(
                "transport.rcv_window_bytes",
                "must be between 1 and 2^30 (RFC 7323 §2.3)",
            ));
        }
        if p.init_cwnd == 0 {
            return Err(Error::config("transport.init_cwnd", "must be at least 1"));
        }
        if p.max_cwnd == Some(0) {
            return Err(Error::config("transport.max_cwnd", "must be at least 1"));
        }
        if p.initial_rto.ps() == 0 || p.min_rto.ps() == 0 {
            return Err(Error::config("transport.min_rto", "RTOs must be positive"));
        }
        if p.dupack_threshold == 0 {
            return Err(Error::config(
                "transport.dupack_threshold",
                "must be at least 1",
            ));
        }
        if !dctcp && c.g.is_some() {
            return Err(Error::config("transport.g", "only DCTCP has a gain g"));
        }
        if let Some(g) = p.dctcp_g {
            if !(g > 0.0 && g <= 1.0) {
                return Err(Error::config(
                    "transport.g",
                    format!("must be in (0, 1], got {g}"),
                ));
            }
        }
        Ok(p)
    }

    /// Check the parameters without running.
    pub fn validate(&self) -> Result<()> {
        match self {
            TransportConfig::Tcp(c) => Self::tcp_params(c, false).map(|_| ()),
            TransportConfig::Dctcp(c) => Self::tcp_params(c, true).map(|_| ()),
            TransportConfig::Cubic(c) => Self::tcp_params(c, false).map(|_| ()),
            TransportConfig::Pfabric(c) => c.params().map(|_| ()),
            TransportConfig::Phost(c) => c.params().map(|_| ()),
            TransportConfig::Fastpass(c) => c.params().map(|_| ()),
        }
    }

    /// Whether the protocol needs a server of its own (Fastpass's arbiter,
    /// unless placed on a workload host): the config then adds one host.
    pub fn wants_extra_host(&self) -> bool {
        matches!(self, TransportConfig::Fastpass(c) if c.arbiter_host.is_none())
    }

    /// Check host indices in the parameters against the topology's `n_hosts`.
    pub fn validate_hosts(&self, n_hosts: u32) -> Result<()> {
        if let TransportConfig::Fastpass(FastpassConfig {
            arbiter_host: Some(h),
            ..
        }) = self
        {
            if *h >= n_hosts {
                return Err(Error::config(
                    "transport.arbiter_host",
                    format!("host {h} does not exist (hosts are 0..{})", n_hosts - 1),
                ));
            }
        }
        Ok(())
    }

    /// Build this protocol and run `setup` with it: the one place that maps
    /// config names to implementations.
    pub fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        Ok(match self {
            TransportConfig::Tcp(c) => setup.run(tcp::Tcp::new(Self::tcp_params(c, false)?)),
            TransportConfig::Dctcp(c) => setup.run(tcp::Tcp::new(Self::tcp_params(c, true)?)),
            TransportConfig::Cubic(_) => setup
                .run(tcp::Tcp::new(self.tcp()?.ok_or_else(|| {
                    Error::config("transport.protocol", "not a TCP variant")
                })?)),
            TransportConfig::Pfabric(c) => setup.run(pfabric::Pfabric::new(c.params()?)),
            TransportConfig::Phost(c) => setup.run(phost::Phost::new(c.params()?)),
            TransportConfig::Fastpass(c) => match c.model {
                FastpassModel::Arbiter => setup.run(fastpass::Fastpass::new(c.params()?)),
                FastpassModel::PhostEpoch => {
                    c.params()?;
                    setup.run(fastpass::epoch::EpochModel::new(c.epoch_params()))
                }
            },
        })
    }
}

/// Something that runs a simulation with a concrete transport type; lets the
/// registry hand over a monomorphic transport without boxing.
pub trait SimSetup {
    /// What the run produces.
    type Output;
    /// Run with transport `t`.
    fn run<T: Transport>(self, t: T) -> Self::Output;
}

/// Set a simulation up, run it to the end and collect its output.
pub fn run_to_end<T: Transport>(
    mut sim: Simulation<T>,
    report: Option<&mut dyn FnMut(&Progress)>,
) -> Result<RunOutput> {
    sim.setup()?;
    let reason: StopReason = sim.run(report);
    Ok(sim.finish(reason))
}
