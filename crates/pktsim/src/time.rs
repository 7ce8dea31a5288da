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
        // Packets (up to 2.3 MB) fit 64-bit arithmetic, whose division is
        // several times cheaper than the 128-bit one; this runs per packet-hop.
        const BIT_PS: u64 = 8 * PS_PER_SEC;
        if bytes <= u64::MAX / BIT_PS {
            return Duration((bytes * BIT_PS).div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        let d = self.0 as u128;
        Duration(num.div_ceil(d) as u64)
    }
}

impl Rate {
    /// [`Rate::tx_time`], or `None` when it exceeds the `u64` range (checks
    /// of user input; the hot path uses `tx_time`).
    pub fn checked_tx_time(self, bytes: u64) -> Option<Duration> {
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        u64::try_from(num.div_ceil(self.0 as u128))
            .ok()
            .map(Duration)
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

/// The longest duration a config may give: half the `u64` picosecond range
/// (about 106 days), so that adding two of them never overflows.
pub const MAX_DURATION: Duration = Duration(u64::MAX / 2);
/// [`MAX_DURATION`] in whole days, for messages.
pub const MAX_DURATION_DAYS: u64 = u64::MAX / 2 / PS_PER_SEC / 86_400;

/// The fastest link rate a config may give, 1 Pbit/s: beyond it a full
/// packet serializes in about 10 ps and rounding to whole picoseconds
/// stops being negligible.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000_000;

/// Split `"2.5 Gbps"` into its number (`"2.5"`, exponent included as in
/// `"1e30"`) and lower-case unit (`"gbps"`).
fn split_number(s: &str) -> (&str, String) {
    let t = s.trim();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    // An exponent only when digits follow: "1e30Gbps", not the unit "e...".
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let (num, unit) = t.split_at(i);
    (num.trim(), unit.trim().to_ascii_lowercase())
}

/// A decimal number read exactly: `(negative, mantissa, exponent)` with
/// value `mantissa × 10^exponent`. Floats would turn `"0.2us"` into
/// 199999.99... ps and silently round sub-picosecond values to zero.
fn parse_decimal(num: &str) -> Option<(bool, u128, i64)> {
    let (neg, rest) = match num.as_bytes().first()? {
        b'-' => (true, &num[1..]),
        b'+' => (false, &num[1..]),
        _ => (false, num),
    };
    let (digits, exp) = match rest.find(['e', 'E']) {
        Some(k) => (&rest[..k], rest[k + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut mantissa: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        let d = c.to_digit(10)? as u128;
        // Over 38 significant digits: not a number anyone means.
        mantissa = mantissa.checked_mul(10)?.checked_add(d)?;
    }
    Some((neg, mantissa, exp - frac.len() as i64))
}

/// How a decimal scaled to whole base units came out.
enum Whole {
    /// An exact whole number that fits.
    Value(u64),
    /// Not a whole number of base units (e.g. `0.1ps`).
    Fraction,
    /// Larger than `u64`.
    Overflow,
}

/// `mantissa × 10^exp` as a whole `u64`, exactly.
fn to_whole(mantissa: u128, exp: i64) -> Whole {
    if mantissa == 0 {
        return Whole::Value(0);
    }
    if exp >= 0 {
        let mut v = mantissa;
        for _ in 0..exp {
            v = match v.checked_mul(10) {
                Some(x) if x <= u64::MAX as u128 => x,
                _ => return Whole::Overflow,
            };
        }
        return u64::try_from(v).map_or(Whole::Overflow, Whole::Value);
    }
    let mut v = mantissa;
    for _ in 0..(-exp).min(40) {
        if v % 10 != 0 {
            return Whole::Fraction;
        }
        v /= 10;
    }
    if -exp > 40 {
        return Whole::Fraction;
    }
    u64::try_from(v).map_or(Whole::Overflow, Whole::Value)
}

/// Parse a rate such as `"10Gbps"`, `"40 Gbit/s"`, `"100M"` or `"2.5Gbps"`:
/// a whole number of bits per second between 1 bit/s and 1 Pbit/s.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (num, unit) = split_number(s);
    let exp: i64 = match unit.as_str() {
        "" | "bps" | "bit/s" | "b/s" => 0,
        "k" | "kbps" | "kbit/s" | "kb/s" => 3,
        "m" | "mbps" | "mbit/s" | "mb/s" => 6,
        "g" | "gbps" | "gbit/s" | "gb/s" => 9,
        "t" | "tbps" | "tbit/s" | "tb/s" => 12,
        _ => {
            return Err(format!(
                "unknown rate unit {unit:?} in {s:?} (use e.g. \"10Gbps\")"
            ))
        }
    };
    let (neg, m, e) =
        parse_decimal(num).ok_or_else(|| format!("cannot read a number in rate {s:?}"))?;
    if neg && m != 0 {
        return Err(format!("rate must be positive, got {s:?}"));
    }
    match to_whole(m, e.saturating_add(exp)) {
        Whole::Value(0) => Err(format!("rate must be positive, got {s:?}")),
        Whole::Value(v) if v <= MAX_RATE_BPS => Ok(Rate(v)),
        Whole::Value(_) | Whole::Overflow => {
            Err(format!("rate {s:?} is out of range (at most 1000Tbps)"))
        }
        Whole::Fraction => Err(format!(
            "rate {s:?} is not a whole number of bits per second"
        )),
    }
}

/// Parse a duration such as `"0.2us"`, `"40ms"`, `"1s"`, `"500ns"` or
/// `"200ps"`: a whole number of picoseconds (the simulator's resolution),
/// at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = split_number(s);
    let exp: i64 = match unit.as_str() {
        "ps" => 0,
        "ns" => 3,
        "us" | "µs" => 6,
        "ms" => 9,
        "s" => 12,
        "" => return Err(format!("duration {s:?} needs a unit (ps, ns, us, ms, s)")),
        _ => return Err(format!("unknown duration unit {unit:?} in {s:?}")),
    };
    let (neg, m, e) =
        parse_decimal(num).ok_or_else(|| format!("cannot read a number in duration {s:?}"))?;
    if neg && m != 0 {
        return Err(format!("duration must not be negative, got {s:?}"));
    }
    match to_whole(m, e.saturating_add(exp)) {
        Whole::Value(v) if v <= MAX_DURATION.0 => Ok(Duration(v)),
        Whole::Value(_) | Whole::Overflow => Err(format!(
            "duration {s:?} is out of range (at most {MAX_DURATION_DAYS} days)"
        )),
        Whole::Fraction => Err(format!(
            "duration {s:?} is not a whole number of picoseconds (the simulator's resolution)"
        )),
    }
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

    /// The 64-bit fast path and the 128-bit path give the same times on
    /// both sides of the boundary between them.
    #[test]
    fn tx_time_paths_agree() {
        let edge = u64::MAX / (8 * PS_PER_SEC);
        for bps in [1_000_000, 7_000_000_001, 10_000_000_000, 999_999_999_999] {
            let r = Rate::from_bps(bps).unwrap();
            for bytes in [1, 1500, 9000, edge - 1, edge, edge + 1, edge * 3] {
                let wide = (bytes as u128 * 8 * PS_PER_SEC as u128).div_ceil(bps as u128);
                assert_eq!(r.tx_time(bytes).ps() as u128, wide, "{bps} bps, {bytes} B");
            }
        }
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

    #[test]
    fn decimal_values_are_read_exactly() {
        assert_eq!(parse_duration("0.2us").unwrap(), Duration(200_000));
        assert_eq!(parse_duration("1.5ns").unwrap(), Duration(1_500));
        assert_eq!(parse_duration("2e3ns").unwrap(), Duration::from_us(2));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_rate("2.5G").unwrap().bps(), 2_500_000_000);
        assert_eq!(parse_rate("1e2Gbps").unwrap(), Rate::gbps(100));
    }

    #[test]
    fn sub_picosecond_and_out_of_range_values_are_rejected() {
        for s in ["0.1ps", "0.0004ns", "1.5ps", "1e-13s"] {
            let e = parse_duration(s).unwrap_err();
            assert!(e.contains("whole number of picoseconds"), "{s}: {e}");
        }
        for s in ["1e30s", "1000000000s", "99999999999999999999ps"] {
            let e = parse_duration(s).unwrap_err();
            assert!(e.contains("out of range"), "{s}: {e}");
        }
        let e = parse_rate("1e30Gbps").unwrap_err();
        assert!(e.contains("out of range") && !e.contains("unit"), "{e}");
        assert!(parse_rate("2Pbps").is_err());
        assert!(parse_rate("0.5bps").unwrap_err().contains("whole number"));
        assert!(parse_duration("-0.1us").unwrap_err().contains("negative"));
        assert!(parse_duration("1e5").unwrap_err().contains("unit"));
    }

    #[test]
    fn checked_tx_time_refuses_what_does_not_fit() {
        let slow = Rate::from_bps(1).unwrap();
        assert_eq!(slow.checked_tx_time(1), Some(Duration(8 * PS_PER_SEC)));
        assert_eq!(slow.checked_tx_time(u64::MAX / 8), None);
        assert_eq!(
            Rate::gbps(10).checked_tx_time(1500),
            Some(Duration::from_ns(1200))
        );
    }
}
