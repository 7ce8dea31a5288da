//! Sender-side pacing of the TCP family (`pacing = "fq"`), after Linux's
//! TCP pacing with the `fq` qdisc.
//!
//! The rate follows Linux's `tcp_update_pacing_rate` (net/ipv4/tcp_input.c,
//! ratios added by commit 43e122b014c9 "tcp: refine pacing rate
//! determination"): the current rate max(cwnd, bytes outstanding) / srtt,
//! times `tcp_pacing_ss_ratio` = 200 % while cwnd < ssthresh / 2 (slow start
//! well before its end) and times `tcp_pacing_ca_ratio` = 120 % otherwise.
//! Both ratios are integer percentages, as the Linux sysctls, and settable.
//!
//! Enforcement (as `fq`'s per-flow `time_next_packet`): a packet of `len`
//! wire bytes handed to the NIC at `t` lets the flow's next packet go no
//! earlier than max(t, previous release) + len / rate. Unlike `fq`, no
//! burst credit (`quantum`, `initial_quantum`) is given: every packet is
//! spaced. The rate is read when each packet leaves, so it follows every
//! change of cwnd and srtt, which is what Linux's update on every ACK does.
//!
//! Before the first RTT sample there is no srtt and so no rate: the flow is
//! not paced. Linux does the same (a socket's pacing rate starts unlimited
//! and the kernel divides by srtt only once one is measured); on Linux the
//! handshake always gives that sample, so with `handshake = true` (whose
//! SYN-ACK gives the first sample) every data packet is paced, and without
//! it the first window leaves at line rate.
//!
//! Time is integer picoseconds; the spacing is rounded up, so a flow never
//! runs faster than its rate.

use crate::time::Duration;
use serde::{Deserialize, Serialize};

/// Linux's default `tcp_pacing_ss_ratio`, percent.
pub const DEFAULT_SS_RATIO: u32 = 200;
/// Linux's default `tcp_pacing_ca_ratio`, percent.
pub const DEFAULT_CA_RATIO: u32 = 120;

/// The `pacing` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PacingMode {
    /// No pacing: windows leave as fast as the NIC takes them.
    #[default]
    Off,
    /// Linux TCP pacing with the `fq` qdisc.
    Fq,
}

/// Pacing ratios of a paced run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// Percent of cwnd / srtt while cwnd < ssthresh / 2.
    pub ss_ratio: u32,
    /// Percent of cwnd / srtt otherwise.
    pub ca_ratio: u32,
}

impl Default for Pacing {
    /// Linux's ratios.
    fn default() -> Self {
        Pacing {
            ss_ratio: DEFAULT_SS_RATIO,
            ca_ratio: DEFAULT_CA_RATIO,
        }
    }
}

impl Pacing {
    /// Spacing after a packet of `len` wire bytes, for a window of `cwnd`
    /// bytes (with `ssthresh`), `outstanding` bytes sent and unacknowledged,
    /// and smoothed RTT `srtt`: len / (ratio · max(cwnd, outstanding) /
    /// srtt), rounded up to the next picosecond.
    pub fn gap(
        &self,
        len: u64,
        cwnd: u64,
        ssthresh: u64,
        outstanding: u64,
        srtt: Duration,
    ) -> Duration {
        let ratio = if cwnd < ssthresh / 2 {
            self.ss_ratio
        } else {
            self.ca_ratio
        };
        let win = cwnd.max(outstanding).max(1) as u128;
        let num = len as u128 * srtt.ps() as u128 * 100;
        let den = ratio.max(1) as u128 * win;
        Duration::from_ps(num.div_ceil(den).min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_follow_the_linux_ratios_by_phase() {
        let p = Pacing::default();
        let srtt = Duration::from_us(100);
        // 100 kB window over 100 us = 1 GB/s; 200 % in slow start: 1500 B
        // every 750 ns; 120 % after: every 1250 ns.
        let ss = p.gap(1500, 100_000, u64::MAX, 0, srtt);
        assert_eq!(ss, Duration::from_ps(750_000));
        let ca = p.gap(1500, 100_000, 150_000, 0, srtt);
        assert_eq!(ca, Duration::from_ps(1_250_000));
        // At ssthresh / 2 slow start already counts as ending (Linux).
        assert_eq!(p.gap(1500, 100_000, 200_000, 0, srtt), ca);
        assert_eq!(p.gap(1500, 100_000, 200_002, 0, srtt), ss);
        // More outstanding than cwnd (recovery): Linux paces by it.
        assert_eq!(p.gap(1500, 50_000, u64::MAX, 100_000, srtt), ss);
        // Rounded up, never faster than the rate.
        let odd = p.gap(1, 3, u64::MAX, 0, Duration::from_ps(1));
        assert_eq!(odd, Duration::from_ps(1));
    }
}
