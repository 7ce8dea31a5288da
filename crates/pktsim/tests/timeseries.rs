//! Per-flow time series (`[output.timeseries]`, issue 31): what a
//! transport's state does over a run, checked against what the state
//! machine must do (slow start, the path's RTT, DCTCP's alpha).

use crate::common::{pairs, prepare, run, star};
use pktsim::metrics::timeseries::SeriesRow;
use pktsim::metrics::RunOutput;
use pktsim::time::Duration;

/// `variable`'s rows of flow `f`, as (time in ps, value).
fn series(out: &RunOutput, f: u32, variable: &str) -> Vec<(u64, f64)> {
    out.timeseries
        .iter()
        .filter(|r| r.flow.0 == f && r.variable == variable)
        .map(|r| (r.time.ps(), r.value))
        .collect()
}

/// The value `variable` of flow `f` had at time `t` (its last row at or
/// before `t`).
fn at(rows: &[SeriesRow], f: u32, variable: &str, t: u64) -> Option<f64> {
    rows.iter()
        .rfind(|r| r.flow.0 == f && r.variable == variable && r.time.ps() <= t)
        .map(|r| r.value)
}

#[test]
fn one_flow_on_an_idle_path_slow_starts_exactly_and_measures_the_paths_rtt() {
    let toml = format!(
        "{}[transport]\nprotocol = \"tcp\"\n{}\n[output.timeseries]\n",
        star(2, "1us"),
        pairs("[[0, 1]]", 2_000_000)
    );
    let exp = prepare(&toml);
    let (mss, header) = (exp.format.mss as u64, exp.format.header as u64);
    let out = run(&toml);
    let rows = &out.timeseries;
    assert!(!rows.is_empty());
    let cwnd = series(&out, 0, "cwnd_bytes");
    let init = cwnd[0].1;
    assert_eq!(init, 10.0 * mss as f64, "IW 10");
    // Slow start with one ACK per segment (RFC 5681, ABC with L = 1 MSS):
    // every ACK adds what it acknowledges, so cwnd = IW + bytes acked, for
    // two round trips here (then the 64 KB receive window holds the flow
    // back and the window stops growing with every ACK).
    let growing: Vec<&(u64, f64)> = cwnd
        .windows(2)
        .filter(|w| w[1].1 > w[0].1 && w[1].1 <= 4.0 * init)
        .map(|w| &w[1])
        .collect();
    assert_eq!(growing.len(), 30, "30 ACKs of one segment each");
    for &&(t, c) in &growing {
        let acked = at(rows, 0, "bytes_acked", t).expect("acked");
        assert_eq!(c, init + acked, "cwnd at {t} ps");
    }
    // Hence it doubles per round trip: when the first k rounds are
    // acknowledged, IW (2^k - 1) bytes, the window is IW 2^k.
    for k in 1..=2u32 {
        let acked = init * f64::from(2u32.pow(k) - 1);
        let t = series(&out, 0, "bytes_acked")
            .into_iter()
            .find(|&(_, a)| a == acked)
            .map(|(t, _)| t)
            .expect("that many bytes acknowledged");
        assert_eq!(
            at(rows, 0, "cwnd_bytes", t),
            Some(init * f64::from(2u32.pow(k)))
        );
    }
    // The first RTT sample is the idle path's RTT, store-and-forward over
    // two 1 us hops each way: a full data packet out, a header-sized ACK
    // back, at 10 Gbit/s (0.8 ns per byte).
    let tx = |bytes: u64| bytes * 800;
    let hop = Duration::from_us(1).ps();
    let rtt = Duration::from_ps(2 * (tx(mss + header) + hop) + 2 * (tx(header) + hop));
    let srtt = series(&out, 0, "srtt_us");
    assert_eq!(srtt[0].1, rtt.ps() as f64 / 1e6, "first srtt");
    // Read after every change: no two rows of one variable repeat a value.
    for v in ["cwnd_bytes", "bytes_acked", "srtt_us"] {
        let s = series(&out, 0, v);
        assert!(s.windows(2).all(|w| w[0].1 != w[1].1), "{v} repeats");
    }
}

#[test]
fn dctcps_alpha_settles_at_the_fraction_of_packets_marked() {
    // Two long DCTCP flows share host 0's link; the port marks above
    // K = 20 packets. The link series counts marks and packets per 100 us.
    let toml = format!(
        "{}[network]\nswitch_queue = {{ kind = \"ecn\", k_packets = 20 }}\n\
         [transport]\nprotocol = \"dctcp\"\n{}\n\
         [output.timeseries]\ninterval = \"20us\"\n[output.links]\ninterval = \"100us\"\n\
         [run]\ntime_limit = \"20ms\"\n",
        star(3, "5us"),
        pairs("[[1, 0], [2, 0]]", 1_000_000_000)
    );
    let out = run(&toml);
    let half = 10_000_000_000u64; // 10 ms
                                  // The fraction of packets the bottleneck marked in the second half.
    let port = out
        .link_samples
        .iter()
        .filter(|s| s.peer.0 == 0)
        .max_by_key(|s| s.ecn_marked)
        .map(|s| s.port)
        .expect("the port into host 0");
    let (mut marked, mut sent) = (0u64, 0u64);
    let mid = out
        .link_samples
        .iter()
        .find(|s| s.port == port && s.time.ps() >= half)
        .copied()
        .expect("a sample at half time");
    let end = out
        .link_samples
        .iter()
        .rfind(|s| s.port == port)
        .copied()
        .unwrap();
    marked += end.ecn_marked - mid.ecn_marked;
    sent += end.packets - mid.packets;
    let fraction = marked as f64 / sent as f64;
    assert!(
        fraction > 0.02 && fraction < 0.9,
        "marked fraction {fraction}"
    );
    for f in [0, 1] {
        let alpha: Vec<f64> = series(&out, f, "dctcp_alpha")
            .into_iter()
            .filter(|&(t, _)| t >= half)
            .map(|(_, a)| a)
            .collect();
        assert!(alpha.len() > 100);
        let mean = alpha.iter().sum::<f64>() / alpha.len() as f64;
        eprintln!("flow {f}: mean alpha {mean:.4}, marked fraction {fraction:.4}");
        assert!(
            (mean - fraction).abs() < 0.25 * fraction + 0.02,
            "flow {f}: mean alpha {mean:.4} against the marked fraction {fraction:.4}"
        );
    }
}

#[test]
fn flows_tags_and_a_sample_choose_the_flows_followed() {
    let base = format!(
        "{}[transport]\nprotocol = \"tcp\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\n\
         load = 0.3\nflows = 40\ntag = \"bg\"\n",
        star(4, "1us"),
    );
    let followed = |table: &str| -> Vec<u32> {
        let out = run(&format!("{base}\n[output.timeseries]\n{table}\n"));
        let mut f: Vec<u32> = out.timeseries.iter().map(|r| r.flow.0).collect();
        f.dedup();
        f.sort_unstable();
        f.dedup();
        f
    };
    assert_eq!(followed("flows = [3, 7]"), [3, 7]);
    assert_eq!(followed("tags = [\"bg\"]").len(), 40);
    let some = followed("sample = 5\ninterval = \"50us\"");
    assert_eq!(some.len(), 5);
    assert_eq!(
        followed("sample = 5\ninterval = \"50us\""),
        some,
        "the same draw"
    );
    for (bad, field) in [
        ("flows = [40]", "output.timeseries.flows[0]"),
        ("tags = [\"nope\"]", "output.timeseries.tags[0]"),
        ("sample = 0", "output.timeseries.sample"),
        ("interval = \"0s\"", "output.timeseries.interval"),
    ] {
        let toml = format!("{base}\n[output.timeseries]\n{bad}\n");
        let cfg = pktsim::config::Config::from_toml_str(&toml, "<test>").expect("parses");
        let Err(e) = cfg.prepare(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))) else {
            panic!("{bad}: accepted");
        };
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }
}
