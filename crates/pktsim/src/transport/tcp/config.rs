//! The `[transport]` settings of the TCP family (`protocol = "tcp"`,
//! `"dctcp"`, `"cubic"`, one per registry line), their defaults (written
//! once, here) and their validation into [`TcpParams`], whose controller
//! the variant builds ([`TcpVariant::from_config`]).

use super::cc::{Cc, TcpVariant};
use super::newreno::NewReno;
use super::pacing::{Pacing, PacingMode, DEFAULT_CA_RATIO, DEFAULT_SS_RATIO};
use super::reorder::RankMarking;
use super::{TcpParams, TimerMode, DEFAULT_NIC_LIMIT, DEFAULT_RCV_WINDOW};
use crate::error::{Error, Result};
use crate::time::parse_duration;
use crate::transport::{ProtocolConfig, SimSetup};
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

/// DCTCP's default gain g = 1/16 (RFC 8257 §4.2).
pub use super::dctcp::DEFAULT_G as DEFAULT_DCTCP_G;

/// Settings shared by the TCP family (NewReno, DCTCP, CUBIC).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Initial window, packets.
    pub init_cwnd: u32,
    /// Largest window, packets (unlimited if absent).
    pub max_cwnd: Option<u32>,
    /// Retransmission timeout before the first RTT sample.
    pub initial_rto: String,
    /// Smallest retransmission timeout.
    pub min_rto: String,
    /// Largest retransmission timeout (after backoff).
    pub max_rto: String,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// DCTCP gain (DCTCP only).
    pub g: Option<f64>,
    /// SACK loss recovery (RFC 2018/6675). Default on; `false` gives
    /// NewReno-faithful recovery (RFC 6582).
    pub sack: bool,
    /// RFC 3042 Limited Transmit (default on).
    pub limited_transmit: bool,
    /// Timer restart rule in recovery: `"rfc"` (default; RFC 6582's first
    /// partial ACK only) or `"linux"` (every partial ACK and fast retransmit).
    pub timer_mode: TimerMode,
    /// Receive window advertised by receivers, bytes (default 6 MiB,
    /// Linux's `tcp_rmem` maximum; at most 1 GiB, RFC 7323 §2.3).
    pub rcv_window_bytes: u64,
    /// Bytes one flow may have queued in its host NIC before it waits for
    /// the NIC to run dry (default 64 KiB).
    pub nic_limit_bytes: u64,
    /// Rank written into data packets for rank-aware switches: `"none"`
    /// (default) or `"remaining_bytes"` (Vertigo/Canary hosts). Written to
    /// the resolved config only when not the default.
    #[serde(skip_serializing_if = "is_default_rank")]
    pub rank: RankMarking,
    /// Receiver ordering shim's hold time, e.g. `"360us"` (Vertigo/Canary
    /// hosts); absent: no shim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_window: Option<String>,
    /// Duplicate ACKs (and SACK's loss rule) start fast retransmit and
    /// recovery (default on). `false` leaves loss recovery to the RTO (and,
    /// with FastLane, to notices): the DIBS baselines run so, and FastLane
    /// with per-packet spraying, whose notices tell loss from reordering.
    /// Written to the resolved config only when off.
    #[serde(skip_serializing_if = "is_true")]
    pub fast_retransmit: bool,
    /// A FastLane notice halves the window once per window of data
    /// (default on; \[INFER\], the paper cites NewReno).
    #[serde(skip_serializing_if = "is_true")]
    pub notice_reduces_window: bool,
    /// FastLane ping-pong throttle base: the n-th notice of a segment
    /// (n ≥ 2) waits base · 2^(n−2), at most the RTO (default "10us",
    /// \[INFER\]: about one base RTT of a 10 Gbit/s fat tree).
    #[serde(skip_serializing_if = "is_default_notice_base")]
    pub notice_retx_base: String,
    /// Sender pacing: `"off"` (default) or `"fq"` (Linux TCP pacing with
    /// the fq qdisc, [`super::pacing`]). Written to the resolved config only
    /// when on, as are the ratios and the handshake settings below, so that
    /// runs without them keep their resolved config (and its hash).
    #[serde(skip_serializing_if = "is_off")]
    pub pacing: PacingMode,
    /// Pacing rate in slow start (cwnd < ssthresh / 2), percent of cwnd /
    /// srtt (Linux's `tcp_pacing_ss_ratio`, default 200).
    #[serde(skip_serializing_if = "is_default_ss_ratio")]
    pub pacing_ss_ratio: i64,
    /// Pacing rate otherwise, percent of cwnd / srtt (Linux's
    /// `tcp_pacing_ca_ratio`, default 120).
    #[serde(skip_serializing_if = "is_default_ca_ratio")]
    pub pacing_ca_ratio: i64,
    /// Open every flow with a three-way handshake (default off,
    /// [`super::handshake`]).
    #[serde(skip_serializing_if = "is_false")]
    pub handshake: bool,
    /// The data RTO after a SYN retransmission, if `initial_rto` is below
    /// it (RFC 6298 §5.7; default "3s", the RFC's value; clamped to
    /// `max_rto`).
    #[serde(skip_serializing_if = "is_default_syn_fallback")]
    pub syn_fallback_rto: String,
}

fn is_off(m: &PacingMode) -> bool {
    *m == PacingMode::Off
}
fn is_default_ss_ratio(r: &i64) -> bool {
    *r == DEFAULT_SS_RATIO as i64
}
fn is_default_ca_ratio(r: &i64) -> bool {
    *r == DEFAULT_CA_RATIO as i64
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// RFC 6298 §5.7's data RTO after a lost SYN.
const DEFAULT_SYN_FALLBACK_RTO: &str = "3s";

fn is_default_syn_fallback(s: &String) -> bool {
    s == DEFAULT_SYN_FALLBACK_RTO
}

fn is_default_rank(r: &RankMarking) -> bool {
    *r == RankMarking::None
}
fn is_true(b: &bool) -> bool {
    *b
}

/// FastLane's default ping-pong throttle base.
const DEFAULT_NOTICE_RETX_BASE: &str = "10us";

fn is_default_notice_base(s: &String) -> bool {
    s == DEFAULT_NOTICE_RETX_BASE
}

impl Default for TcpConfig {
    /// The defaults of every TCP setting (and so of [`TcpParams`]).
    fn default() -> Self {
        TcpConfig {
            init_cwnd: 10,
            max_cwnd: None,
            initial_rto: "1ms".into(),
            min_rto: "200us".into(),
            max_rto: "1s".into(),
            dupack_threshold: 3,
            g: None,
            sack: true,
            limited_transmit: true,
            timer_mode: TimerMode::default(),
            rcv_window_bytes: DEFAULT_RCV_WINDOW,
            nic_limit_bytes: DEFAULT_NIC_LIMIT,
            rank: RankMarking::None,
            reorder_window: None,
            fast_retransmit: true,
            notice_reduces_window: true,
            notice_retx_base: DEFAULT_NOTICE_RETX_BASE.into(),
            pacing: PacingMode::Off,
            pacing_ss_ratio: DEFAULT_SS_RATIO as i64,
            pacing_ca_ratio: DEFAULT_CA_RATIO as i64,
            handshake: false,
            syn_fallback_rto: DEFAULT_SYN_FALLBACK_RTO.into(),
        }
    }
}

impl TcpConfig {
    /// Validate into parameters for variant `C`, whose controller every
    /// flow starts from.
    pub fn params_for<C: TcpVariant + Into<Cc>>(&self) -> Result<TcpParams> {
        let dur = |s: &str, f: &str| {
            parse_duration(s).map_err(|m| Error::config(format!("transport.{f}"), m))
        };
        let mut p = TcpParams {
            init_cwnd: self.init_cwnd,
            max_cwnd: self.max_cwnd,
            initial_rto: dur(&self.initial_rto, "initial_rto")?,
            min_rto: dur(&self.min_rto, "min_rto")?,
            max_rto: dur(&self.max_rto, "max_rto")?,
            dupack_threshold: self.dupack_threshold,
            // Replaced below, once the shared settings are checked, so
            // that errors come in the order the settings are written.
            cc: Cc::from(NewReno::default()),
            sack: self.sack,
            limited_transmit: self.limited_transmit,
            timer: self.timer_mode,
            rcv_window: self.rcv_window_bytes,
            nic_limit: self.nic_limit_bytes,
            rank: self.rank,
            reorder_window: match &self.reorder_window {
                Some(w) => {
                    let d = dur(w, "reorder_window")?;
                    if d.ps() == 0 {
                        return Err(Error::config(
                            "transport.reorder_window",
                            "must be positive",
                        ));
                    }
                    Some(d)
                }
                None => None,
            },
            fast_retransmit: self.fast_retransmit,
            notice_reduces_window: self.notice_reduces_window,
            notice_retx_base: dur(&self.notice_retx_base, "notice_retx_base")?,
            pacing: match self.pacing {
                PacingMode::Off => None,
                PacingMode::Fq => Some(Pacing {
                    ss_ratio: ratio(self.pacing_ss_ratio, "pacing_ss_ratio")?,
                    ca_ratio: ratio(self.pacing_ca_ratio, "pacing_ca_ratio")?,
                }),
            },
            handshake: self.handshake,
            syn_fallback_rto: dur(&self.syn_fallback_rto, "syn_fallback_rto")?,
        };
        if p.pacing.is_none() {
            // Checked also when pacing is off, so that a bad value is
            // reported where it is written, not when pacing is turned on.
            ratio(self.pacing_ss_ratio, "pacing_ss_ratio")?;
            ratio(self.pacing_ca_ratio, "pacing_ca_ratio")?;
        }
        if p.syn_fallback_rto.ps() == 0 {
            return Err(Error::config(
                "transport.syn_fallback_rto",
                "must be positive",
            ));
        }
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
        p.cc = C::from_config(self)?.into();
        Ok(p)
    }

    /// For variants without a gain: reject `g`, which only DCTCP reads.
    pub fn no_gain(&self) -> Result<()> {
        match self.g {
            Some(_) => Err(Error::config("transport.g", "only DCTCP has a gain g")),
            None => Ok(()),
        }
    }
}

/// A pacing ratio: a whole percentage of cwnd / srtt, from 1 to 10,000.
fn ratio(v: i64, field: &str) -> Result<u32> {
    if (1..=10_000).contains(&v) {
        Ok(v as u32)
    } else {
        Err(Error::config(
            format!("transport.{field}"),
            format!(
                "must be a whole percentage of cwnd / srtt between 1 and 10000 \
                 (Linux's tcp_{field}; defaults 200 and 120), got {v}"
            ),
        ))
    }
}

/// The `[transport]` settings of one TCP variant (`protocol = "tcp"`,
/// `"dctcp"`, ...): the shared [`TcpConfig`], written and read exactly as
/// it; `C` is the variant's controller, which the registry line names.
#[derive(Deserialize, Serialize)]
#[serde(transparent)]
pub struct TcpVariantConfig<C> {
    /// The settings.
    pub settings: TcpConfig,
    #[serde(skip)]
    variant: PhantomData<fn() -> C>,
}

impl<C> TcpVariantConfig<C> {
    /// Variant `C` with these settings.
    pub fn new(settings: TcpConfig) -> Self {
        TcpVariantConfig {
            settings,
            variant: PhantomData,
        }
    }
}

impl<C: TcpVariant + Into<Cc>> TcpVariantConfig<C> {
    /// Validate into parameters with this variant's controller.
    pub fn params(&self) -> Result<TcpParams> {
        self.settings.params_for::<C>()
    }
}

// Written out rather than derived: derives would ask `C` for the same
// traits, and a controller need not be comparable.
impl<C> Clone for TcpVariantConfig<C> {
    fn clone(&self) -> Self {
        Self::new(self.settings.clone())
    }
}
impl<C> std::fmt::Debug for TcpVariantConfig<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.fmt(f)
    }
}
impl<C> PartialEq for TcpVariantConfig<C> {
    fn eq(&self, other: &Self) -> bool {
        self.settings == other.settings
    }
}
impl<C> Default for TcpVariantConfig<C> {
    fn default() -> Self {
        Self::new(TcpConfig::default())
    }
}

impl<C: TcpVariant + Into<Cc>> ProtocolConfig for TcpVariantConfig<C> {
    const TCP_FAMILY: bool = true;

    /// The resolved config shows variant-dependent defaults (DCTCP's gain).
    fn resolve(&mut self) {
        C::resolve(&mut self.settings);
    }

    fn tcp(&self) -> Result<Option<TcpParams>> {
        self.params().map(Some)
    }

    fn tcp_settings(&self) -> Option<&TcpConfig> {
        Some(&self.settings)
    }

    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
        Ok(setup.run(super::Tcp::new(super::TcpProtocol::new(self.params()?))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::cc::CongestionControl;

    #[test]
    fn an_empty_section_takes_every_default() {
        let c: TcpConfig = toml::from_str("").unwrap();
        assert_eq!(c, TcpConfig::default());
    }

    #[test]
    fn default_params_are_the_default_config_validated() {
        let p = TcpParams::default();
        assert_eq!(p.init_cwnd, 10);
        assert_eq!(p.min_rto, crate::time::Duration::from_us(200));
        assert_eq!(p.max_rto, crate::time::Duration::from_ms(1000));
        assert_eq!(p.cc.name(), "tcp");
        assert_eq!(p.rcv_window, DEFAULT_RCV_WINDOW);
    }
}
