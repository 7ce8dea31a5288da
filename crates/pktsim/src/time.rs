//! Simulated time, durations and link rates.
//!
//! Time is an integer count of picoseconds: no floats anywhere in the engine,
//! so that runs are exact and identical on every machine. A `u64` of
//! picoseconds covers 213 days of simulated time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Picoseconds per second.
pub const PS_PER_SEC: u64 = 1_000_000_000_000;

/// An instant of simulated time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// A time later than any event (used as "never").
    pub const MAX: Time = Time(u64::MAX);

    /// Picoseconds since the start of the run.
    pub const fn ps(self) -> u64 {
        self.0
    }

    /// Time since `earlier`, saturating at zero.
    pub fn since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// Seconds as a float, for display and rates in summaries only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_SEC as f64
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// A duration of `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Self {
        Duration(ps)
    }
    /// A duration of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns * 1_000)
    }
    /// A duration of `us` microseconds.
    pub const fn from_us(us: u64) -> Self {
        Duration(us * 1_000_000)
    }
    /// A duration of `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Self {
        Duration(ms * 1_000_000_000)
    }
    /// Picoseconds in this duration.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for display only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_SEC as f64
    }
    /// This duration times `n`, saturating.
    pub fn times(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, earlier: Time) -> Duration {
        debug_assert!(self >= earlier, "time went backwards");
        Duration(self.0 - earlier.0)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    /// A rate of `bps` bits per second; `None` for zero.
    pub const fn from_bps(bps: u64) -> Option<Rate> {
        if bps == 0 {
            None
        } else {
            Some(Rate(bps))
        }
    }
    /// A rate of `g` Gbit/s. Panics on zero (for constants in code and tests).
    pub const fn gbps(g: u64) -> Rate {
        assert!(g > 0);
        Rate(g * 1_000_000_000)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Time to serialize `bytes` onto a link of this rate, rounded up to the
    /// next picosecond. Exact for every common rate (1, 10, 25, 40, 100,
    /// 400 Gbit/s) since 8e12 is divisible by each.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Duration {
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        let d = self.0 as u128;
        Duration(num.div_ceil(d) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b % 1_000_000_000 == 0 {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else if b % 1_000_000 == 0 {
            write!(f, "{}Mbps", b / 1_000_000)
        } else {
            write!(f, "{b}bps")
        }
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        if p % 1_000_000_000 == 0 {
            write!(f, "{}ms", p / 1_000_000_000)
        } else if p % 1_000_000 == 0 {
            write!(f, "{}us", p / 1_000_000)
        } else if p % 1_000 == 0 {
            write!(f, "{}ns", p / 1_000)
        } else {
            write!(f, "{p}ps")
        }
    }
}

/// Split `"2.5 Gbps"` into its number (`"2.5"`) and lower-case unit (`"gbps"`).
fn split_number(s: &str) -> (&str, String) {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num.trim(), unit.trim().to_ascii_lowercase())
}

/// Parse a rate such as `"10Gbps"`, `"40 Gbit/s"`, `"100M"` or `"2.5Gbps"`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (num, unit) = split_number(s);
    let mult: f64 = match unit.as_str() {
        "" | "bps" | "bit/s" | "b/s" => 1.0,
        "k" | "kbps" | "kbit/s" | "kb/s" => 1e3,
        "m" | "mbps" | "mbit/s" | "mb/s" => 1e6,
        "g" | "gbps" | "gbit/s" | "gb/s" => 1e9,
        "t" | "tbps" | "tbit/s" | "tb/s" => 1e12,
        _ => {
            return Err(format!(
                "unknown rate unit {unit:?} in {s:?} (use e.g. \"10Gbps\")"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("cannot read a number in rate {s:?}"))?;
    let bps = v * mult;
    if !bps.is_finite() || bps < 1.0 {
        return Err(format!("rate must be positive, got {s:?}"));
    }
    Rate::from_bps(bps.round() as u64).ok_or_else(|| format!("rate must be positive, got {s:?}"))
}

/// Parse a duration such as `"0.2us"`, `"40ms"`, `"1s"`, `"500ns"` or `"200ps"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = split_number(s);
    let mult: f64 = match unit.as_str() {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        "" => return Err(format!("duration {s:?} needs a unit (ps, ns, us, ms, s)")),
        _ => return Err(format!("unknown duration unit {unit:?} in {s:?}")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("cannot read a number in duration {s:?}"))?;
    let ps = v * mult;
    if !ps.is_finite() || ps < 0.0 {
        return Err(format!("duration must not be negative, got {s:?}"));
    }
    if ps > u64::MAX as f64 / 2.0 {
        return Err(format!("duration {s:?} is too long"));
    }
    Ok(Duration(ps.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_for_common_rates() {
        assert_eq!(Rate::gbps(10).tx_time(1500), Duration::from_ns(1200));
        assert_eq!(Rate::gbps(40).tx_time(1500), Duration::from_ns(300));
        assert_eq!(Rate::gbps(100).tx_time(1), Duration::from_ps(80));
        assert_eq!(Rate::gbps(1).tx_time(64), Duration::from_ns(512));
    }

    #[test]
    fn tx_time_rounds_up() {
        // 3 Gbit/s: 8 bits take 2666.67 ps.
        let r = Rate::from_bps(3_000_000_000).unwrap();
        assert_eq!(r.tx_time(1), Duration::from_ps(2667));
    }

    #[test]
    fn parses_rates_and_durations() {
        assert_eq!(parse_rate("10Gbps").unwrap(), Rate::gbps(10));
        assert_eq!(parse_rate("40 Gbit/s").unwrap(), Rate::gbps(40));
        assert_eq!(parse_rate("2.5G").unwrap().bps(), 2_500_000_000);
        assert!(parse_rate("0Gbps").is_err());
        assert!(parse_rate("-1Gbps").is_err());
        assert!(parse_rate("10 furlongs").is_err());
        assert_eq!(parse_duration("0.2us").unwrap(), Duration::from_ns(200));
        assert_eq!(parse_duration("40ms").unwrap(), Duration::from_ms(40));
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_ms(1000));
        assert!(parse_duration("-1us").is_err());
        assert!(parse_duration("5").is_err());
    }
}
