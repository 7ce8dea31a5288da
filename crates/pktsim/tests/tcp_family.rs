//! The TCP family end to end: the closed form of slow start, loss recovery
//! in incast, no spurious timeouts, and the pHost data-mining DCTCP run.

use crate::common::{
    assert_conserved, dumbbell, pairs, prepare, simulation, star, tcp_params, tcp_simulation,
    Intercept,
};
use pktsim::metrics::ideal::{ideal_fct, Hop};
use pktsim::metrics::summary::{Summary, DEFAULT_BUCKETS};
use pktsim::metrics::RunOutput;
use pktsim::net::switch::{RefusalHook, Refused, SwitchView, Verdict};
use pktsim::packet::FlowId;
use pktsim::packet::{flags, Header, Packet};
use pktsim::sim::Ctx;
use pktsim::time::{Duration, Rate, Time};
use pktsim::transport::tcp::{SenderStats, Tcp, TcpProtocol};
use std::sync::{Arc, Mutex};

/// Run a TCP-family config with the transport built here, so that per-flow
/// sender stats can be read afterwards.
fn run_tcp(toml: &str) -> (RunOutput, Vec<SenderStats>) {
    let exp = prepare(toml);
    let seed = exp.config.seed;
    let mut sim = tcp_simulation(exp, seed);
    let reason = sim.run(None);
    let n = sim.progress().len();
    let stats = (0..n)
        .map(|i| sim.transport.stats(FlowId(i as u32)))
        .collect();
    let out = sim.finish(reason);
    assert_conserved(&out);
    (out, stats)
}

fn counter(out: &RunOutput, name: &str) -> u64 {
    *out.protocol_counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// One flow of `size` bytes on an idle dumbbell, 10 Gbit/s everywhere:
/// host links 1 us, bottleneck 10 us, store-and-forward, IW 10.
///
/// Closed form. Let τ = tx(1500 B) and RTT₀ = Σᵢ(dᵢ + τ) + Σᵢ(dᵢ + tx(40 B)),
/// the time from a data packet's first bit leaving the sender to its ACK's
/// arrival. With one ACK per packet, each ACK in slow start releases two
/// packets, so round r (r = 1, 2, ...) sends W_r = IW·2^(r−1) packets back to
/// back from t_r = (r−1)·RTT₀, until the first round r* with W_r*·τ ≥ RTT₀:
/// from then on ACKs return while the round is still being sent and the
/// NIC never idles. The flow ends in round r = min(r*, last round), and
/// FCT = t_r + ideal(S − IW·(2^(r−1) − 1)·MSS), where ideal(·) is the
/// back-to-back time of [`ideal_fct`] over the same path.
fn slow_start_closed_form(size: u64) -> Duration {
    let (mss, hdr, iw) = (1460u64, 40u64, 10u64);
    let rate = Rate::gbps(10);
    let delays = [1u64, 10, 1];
    let path: Vec<Hop> = delays
        .iter()
        .map(|&d| Hop {
            rate,
            delay: Duration::from_us(d),
            cut_through: false,
        })
        .collect();
    let tau = rate.tx_time(mss + hdr).ps();
    let rtt0: u64 = delays
        .iter()
        .map(|&d| 2 * Duration::from_us(d).ps() + tau + rate.tx_time(hdr).ps())
        .sum();
    let n = size.div_ceil(mss);
    let (mut r, mut before) = (1u64, 0u64);
    loop {
        let w = iw << (r - 1);
        if w * tau >= rtt0 || before + w >= n {
            break;
        }
        before += w;
        r += 1;
    }
    let rest = ideal_fct(size - before * mss, mss as u32, hdr as u32, &path);
    Duration::from_ps((r - 1) * rtt0 + rest.ps())
}

#[test]
fn single_flows_finish_at_the_slow_start_closed_form() {
    for size in [1_000_000u64, 10_000_000] {
        let toml = format!(
            "{}[transport]\nprotocol = \"tcp\"\ninit_cwnd = 10\n{}",
            dumbbell(1),
            pairs("[[0, 1]]", size)
        );
        let (out, stats) = run_tcp(&toml);
        let fct = out.flows[0].fct().expect("finished");
        let want = slow_start_closed_form(size);
        let err = (fct.ps() as f64 / want.ps() as f64 - 1.0).abs();
        assert!(
            err < 0.005,
            "{size} B: FCT {fct:?} vs closed form {want:?} ({:.3} %)",
            err * 100.0
        );
        assert_eq!(out.flows[0].retransmits, 0);
        assert_eq!(stats[0].timeouts, 0);
    }
}

/// What the network did to one data packet: dropped, or delivered to its
/// receiver.
#[derive(Clone, Copy, Debug)]
struct Fate {
    at: Time,
    flow: usize,
    /// Segment index (sequence number / MSS).
    seg: u64,
    /// The packet carried the sender's retransmission flag.
    retx: bool,
    dropped: bool,
}

type FateLog = Arc<Mutex<Vec<Fate>>>;

/// Log what happened to `pkt` at `at`, if it carries data.
fn log_fate(log: &FateLog, pkt: &Packet, at: Time, dropped: bool) {
    if let Header::TcpData { seq } = pkt.header {
        log.lock().unwrap().push(Fate {
            at,
            flow: pkt.flow.idx(),
            seg: seq / INCAST_MSS,
            retx: pkt.has(flags::RETX),
            dropped,
        });
    }
}

/// A refusal hook that only records dropped data packets: its verdict is
/// the plain drop, so the run is the one without it.
struct RecordDrops(FateLog);

impl RefusalHook for RecordDrops {
    fn on_refused(&mut self, at: &Refused, pkt: &Packet, _view: &SwitchView) -> Verdict {
        log_fate(&self.0, pkt, at.now, true);
        Verdict::Drop
    }
}

/// Record a data packet that reached its receiver; lose nothing.
fn record_arrival(log: &mut FateLog, ctx: &mut Ctx, pkt: &Packet) -> bool {
    log_fate(log, pkt, ctx.now(), false);
    true
}

const INCAST_MSS: u64 = 1460;
const INCAST_SENDERS: usize = 16;
const INCAST_SIZE: u64 = 65536;
/// The default `min_rto` (the config below leaves it).
const INCAST_RTO_US: u64 = 200;

/// The incast config with run seed `seed`, which draws the order of the
/// senders' simultaneous arrivals at the switch.
fn seeded_incast_config(sack: bool, timer_mode: &str, seed: u64) -> String {
    format!(
        r#"
seed = {seed}
{}bottleneck_buffer_bytes = 100000
[transport]
protocol = "tcp"
sack = {sack}
timer_mode = "{timer_mode}"
[[workload]]
kind = "incast"
senders = {INCAST_SENDERS}
size = {INCAST_SIZE}
receiver = 16
queries = 1
interval = "1ms"
"#,
        star(17, "1us")
    )
}

/// The incast with every data drop and arrival recorded, time-ordered.
fn incast_observed(toml: &str) -> (RunOutput, Vec<SenderStats>, Vec<Fate>) {
    let mut exp = prepare(toml);
    let params = tcp_params(&exp);
    let log = FateLog::default();
    exp.net
        .set_refusal_hook(Some(Box::new(RecordDrops(log.clone()))));
    // TCP, with every data packet that reaches its receiver recorded.
    let transport = Intercept {
        inner: Tcp::new(TcpProtocol::new(params)),
        state: log.clone(),
        keep: record_arrival,
    };
    let seed = exp.config.seed;
    let mut sim = simulation(exp, transport, seed);
    let reason = sim.run(None);
    let stats = (0..sim.progress().len())
        .map(|i| sim.transport.inner.stats(FlowId(i as u32)))
        .collect();
    let out = sim.finish(reason);
    assert_conserved(&out);
    let fates = std::mem::take(&mut *log.lock().unwrap());
    (out, stats, fates)
}

/// RFC 6582 NewReno (no SACK, "impatient" timer) timeouts expected for the
/// incast, from what the network did to each data packet (`fates`: drops
/// and deliveries, in time order); it reads nothing of the senders.
///
/// Constants of the run: RTO = `min_rto` = 200 us, the floor of RFC 6298
/// §2.4 (assumed to bind: a round trip here is at most d₀ + B/C ≈ 87 us,
/// B/C the full 100 KB buffer at 10 Gbit/s); d₀ ≈ 6.5 us the idle round
/// trip; τ = tx(1500 B) = 1.2 us.
///
/// Rule 1, a window of lost original segments (those of one flow dropped
/// within one RTO of the window's first drop):
/// - fewer than DupThresh = 3 later segments delivered within that RTO:
///   no fast retransmit (RFC 5681 §3.2 step 2), one timeout;
/// - else fast retransmit, and NewReno repairs one hole per round trip
///   (RFC 6582 §3.2 step 5: each partial ACK retransmits the next hole).
///   The "Impatient" variant restarts the timer on the first partial ACK
///   only (RFC 6582 §3.2 step 5, §6), so at most k = 1 + ⌊RTO / RTT⌋
///   holes are repaired before it fires. With all N = 16 flows recovering
///   together, each releasing at least one segment per round trip into
///   the shared queue, RTT ≥ d₀ + N·τ ≈ 26 us, so k = 8: a window with
///   more holes times out, at about RTO after its first repaired hole
///   arrives (its first partial ACK).
///
/// Rule 2, a lost retransmission of a segment the receiver still lacks:
/// after a timeout the sender goes back to snd_una in slow start from one
/// segment (RFC 5681 §3.1) and, below `recover`, does not fast retransmit
/// again (RFC 6582 §3.2 step 4, §4), so a lost retransmission is found
/// only by the next timeout (about one RTO later). Covered (no extra
/// timeout) if a timeout predicted by either rule fires within one RTO
/// after it, since that timeout's go-back-N resends it. Retransmissions
/// of segments already delivered (go-back-N duplicates) need nothing.
///
/// Left out: the duplicate ACKs that go-back-N duplicates raise once the
/// cumulative ACK reaches `recover` (RFC 6582 §4; its heuristics are
/// optional), which can start a needless fast recovery whose extra
/// partial-ACK round trips may end in another timeout.
fn newreno_expected_timeouts(fates: &[Fate]) -> u32 {
    let rate = Rate::gbps(10);
    let link = Duration::from_us(1).ps();
    let (data, ack) = (rate.tx_time(1500).ps(), rate.tx_time(40).ps());
    // Two hops each way, store-and-forward.
    let d0 = 2 * (link + data) + 2 * (link + ack);
    let rto = Duration::from_us(INCAST_RTO_US).ps();
    let rtt = d0 + INCAST_SENDERS as u64 * data;
    let k_max = 1 + rto / rtt;
    let segs = INCAST_SIZE.div_ceil(INCAST_MSS);
    let mut expected = 0;
    for f in 0..INCAST_SENDERS {
        let mine: Vec<&Fate> = fates.iter().filter(|x| x.flow == f).collect();
        // Losses that may each need a timeout: (loss instant, instant the
        // timeout would fire), both in ps.
        let mut candidates: Vec<(u64, u64)> = Vec::new();
        // Rule 1: windows of lost original segments.
        let originals: Vec<&&Fate> = mine.iter().filter(|x| x.dropped && !x.retx).collect();
        let mut i = 0;
        while i < originals.len() {
            let start = originals[i].at.ps();
            let mut holes: Vec<u64> = Vec::new();
            while i < originals.len() && originals[i].at.ps() <= start + rto {
                holes.push(originals[i].seg);
                i += 1;
            }
            holes.sort_unstable();
            holes.dedup();
            let delivered_after = |x: &&&Fate| !x.dropped && x.at.ps() > start;
            let dupacks = mine
                .iter()
                .filter(|x| delivered_after(x) && x.at.ps() <= start + rto && x.seg > holes[0])
                .count();
            if dupacks < 3 {
                candidates.push((start, start + rto));
            } else if holes.len() as u64 > k_max {
                let first_partial_ack = mine
                    .iter()
                    .find(|x| delivered_after(x) && holes.contains(&x.seg))
                    .map_or(start, |x| x.at.ps());
                candidates.push((start, first_partial_ack + rto));
            }
        }
        // Rule 2: lost retransmissions of segments whose original was lost
        // and that the receiver still lacks.
        let mut have = vec![false; segs as usize];
        let mut lost = vec![false; segs as usize];
        for x in &mine {
            let s = x.seg as usize;
            if !x.dropped {
                have[s] = true;
            } else if !x.retx {
                lost[s] = true;
            } else if lost[s] && !have[s] {
                candidates.push((x.at.ps(), x.at.ps() + rto));
            }
        }
        // A timeout's go-back-N resends every loss before it: a loss needs
        // a timeout of its own only if none fires within one RTO after it.
        candidates.sort_unstable();
        let mut timeouts: Vec<u64> = Vec::new();
        for (t, fires) in candidates {
            if !timeouts.iter().any(|&to| to >= t && to <= t + rto) {
                timeouts.push(fires);
            }
        }
        expected += timeouts.len() as u32;
    }
    expected
}

/// Incast 16 × 64 KiB into a 100 KB buffer: NewReno without SACK in RFC
/// timer mode times out about as the RFC 6582 model above predicts, never
/// spuriously; with SACK nearly every retransmission repairs a real loss,
/// where NewReno's go-back-N resends much that arrived.
///
/// Which packets are lost depends on the order of the senders'
/// simultaneous arrivals at the switch, which the seed draws
/// (engine::event_queue), so every bound is taken over four seeds together.
/// Measured over seeds 1-12: NewReno's timeouts were 0.96-1.36 times the
/// model's (1.19 over all twelve; the model leaves out the needless fast
/// recoveries that go-back-N duplicates can start, RFC 6582 §4), never
/// spurious, and deferred for data waiting in the NIC 0-2 times a run;
/// SACK's retransmissions were 1.04-1.13 times its drops (1.07 over all)
/// and the receiver got 4-13 % of that count twice (7 % over all; after a
/// timeout the sender forgets its scoreboard, RFC 2018 §8). SACK drops more
/// than NewReno here (about 280 against 210 packets: its windows stay
/// larger), so its retransmissions are compared per drop.
#[test]
fn incast_newreno_timeouts_match_rfc6582_and_sack_retransmits_less() {
    let retx = |o: &RunOutput| o.flows.iter().map(|f| f.retransmits as u64).sum::<u64>();
    let (mut timeouts, mut expected) = (0, 0);
    let (mut plain_drops, mut plain_resent) = (0, 0);
    for seed in 1..=4 {
        let toml = seeded_incast_config(false, "rfc", seed);
        let (plain, stats, fates) = incast_observed(&toml);
        assert_eq!(plain.stop_reason, "all_flows_done");
        // The recording changed nothing: the run without the recorders.
        let (bare, bare_stats) = run_tcp(&toml);
        assert_eq!(bare.flows, plain.flows);
        assert_eq!(bare_stats, stats);
        let drops = fates.iter().filter(|x| x.dropped).count() as u64;
        assert_eq!(drops, plain.counters.dropped_total(0));
        let model = newreno_expected_timeouts(&fates);
        // Nearly every sender loses part of its first window and needs a
        // timeout (at seed 1 one sender of 16 loses none).
        assert!(model >= INCAST_SENDERS as u32 * 3 / 4, "model: {model}");
        timeouts += stats.iter().map(|s| s.timeouts).sum::<u32>();
        expected += model;
        // Every timeout here has a real hole behind it (RFC 3522 Eifel must
        // not fire on the ACK of a retransmission sent earlier in the same
        // recovery); a sender's data seldom waits a quarter RTO in its own
        // NIC, so a timeout is seldom deferred for it.
        assert_eq!(counter(&plain, "spurious_timeouts"), 0);
        assert!(counter(&plain, "rto_deferred_in_nic") <= 2);
        plain_drops += drops;
        plain_resent += retx(&plain);
    }
    let ratio = timeouts as f64 / expected as f64;
    assert!(
        (0.9..=1.4).contains(&ratio),
        "{timeouts} timeouts, RFC 6582 model {expected}"
    );

    let (mut drops, mut resent, mut duplicates) = (0, 0, 0);
    for seed in 1..=4 {
        let (out, _) = run_tcp(&seeded_incast_config(true, "rfc", seed));
        assert_eq!(out.stop_reason, "all_flows_done");
        drops += out.counters.dropped_total(0);
        resent += retx(&out);
        duplicates += counter(&out, "duplicate_deliveries");
    }
    assert!(
        resent as f64 <= 1.1 * drops as f64,
        "{resent} retransmissions for {drops} drops"
    );
    assert!(
        duplicates * 10 <= drops,
        "{duplicates} duplicate deliveries for {drops} drops"
    );
    let per_drop = |r: u64, d: u64| r as f64 / d as f64;
    assert!(
        per_drop(resent, drops) < per_drop(plain_resent, plain_drops),
        "SACK {resent} retransmissions for {drops} drops, NewReno {plain_resent} for {plain_drops}"
    );
}

#[test]
fn leafspine_flows_without_drops_never_time_out() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/leafspine_dctcp.toml"
    );
    let toml = std::fs::read_to_string(path).expect("example exists");
    let (out, stats) = run_tcp(&toml);
    assert_eq!(out.stop_reason, "all_flows_done");
    let mut bad = Vec::new();
    for (f, s) in out.flows.iter().zip(&stats) {
        if f.drops == 0 && s.timeouts > 0 {
            bad.push((f.id, s.timeouts, f.retransmits));
        }
    }
    assert!(
        bad.is_empty(),
        "flows without drops that timed out: {bad:?}"
    );
    let timeouts = counter(&out, "timeouts");
    let spurious = counter(&out, "spurious_timeouts");
    assert!(
        spurious <= 2 && spurious * 20 <= timeouts.max(1),
        "{spurious} spurious of {timeouts} timeouts"
    );
}

#[test]
fn datamining_dctcp_retransmits_only_what_was_lost() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/phost/datamining_dctcp.toml"
    );
    let text = std::fs::read_to_string(path).expect("config exists");
    assert!(text.contains("flows = 100000"));
    let (out, _) = run_tcp(&text.replace("flows = 100000", "flows = 2000"));
    assert_eq!(out.stop_reason, "all_flows_done");
    let s = Summary::from_run(&out, DEFAULT_BUCKETS);
    let data_drops = out.counters.dropped_total(0);
    assert!(
        s.retransmits as f64 <= 1.5 * data_drops as f64,
        "{} retransmissions for {data_drops} data drops",
        s.retransmits
    );
    let mean = s.slowdown.mean.expect("finished");
    assert!(mean < 10.0, "mean slowdown {mean:.2}");
    assert_eq!(out.counters.in_flight[0], 0, "data left queued at the end");
}

#[test]
fn host_nic_can_mark_ecn_and_dctcp_reacts_without_drops() {
    // The NIC's own queue marks above 5 packets (host_queue accepts a
    // marking threshold); switches do not mark. DCTCP's slow start builds
    // a queue in its own NIC, is marked there and backs off.
    let toml = format!(
        "{}[network]\nhost_queue = {{ kind = \"priority\", classes = 2, k_packets = 5 }}\n\
         [transport]\nprotocol = \"dctcp\"\n{}",
        dumbbell(1),
        pairs("[[0, 1]]", 10_000_000)
    );
    let (out, stats) = run_tcp(&toml);
    assert!(out.counters.ecn_marked > 0, "the NIC marked nothing");
    assert_eq!(out.counters.dropped_total(0), 0);
    assert_eq!(stats[0].timeouts, 0);
    assert_eq!(out.stop_reason, "all_flows_done");
}
