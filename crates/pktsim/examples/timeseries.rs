//! Per-window time series of one run: goodput of every flow and the queue
//! of every switch port that feeds a host, for experiments whose figure is a
//! curve over time (experiments/fastpass).
//!
//! Usage: `cargo run --release -p pktsim --example timeseries -- CONFIG WINDOW OUT_DIR`
//!
//! Writes `OUT_DIR/throughput.csv` (`t_end_us,flow,src,goodput_gbps`: payload
//! delivered in order during the window ending at `t_end_us`) and
//! `OUT_DIR/queues.csv` (`t_end_us,host,max_packets,max_bytes,mean_bytes`: the
//! switch port towards `host`, exact maximum and time average over the
//! window). The run ends at the config's `[run] time_limit` or when every
//! flow is done.

use pktsim::config::{base_dir_of, Config, Experiment};
use pktsim::sim::{Simulation, StopReason, Transport};
use pktsim::time::{parse_duration, Duration, Time};
use pktsim::transport::SimSetup;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

struct Series {
    exp: Experiment,
    window: Duration,
}

struct Tables {
    throughput: String,
    queues: String,
    protocol: &'static str,
}

impl SimSetup for Series {
    type Output = Tables;
    fn run<T: Transport>(self, t: T) -> Tables {
        let e = self.exp;
        let protocol = t.name();
        let srcs: Vec<u32> = e.workload.flows.iter().map(|f| f.src.0).collect();
        let mut sim = Simulation::new(e.net, t, e.workload, e.format, e.limits, e.config.seed);
        let mut throughput = String::from("t_end_us,flow,src,goodput_gbps\n");
        let mut queues = String::from("t_end_us,host,max_packets,max_bytes,mean_bytes\n");
        let mut before: Vec<u64> = vec![0; sim.progress().len()];
        let n_hosts = sim.net.n_hosts();
        let mut snaps: Vec<_> = sim.net.ports().iter().map(|p| p.stats.clone()).collect();
        let mut end = Time::ZERO;
        loop {
            end += self.window;
            let reason = sim.run_until(end, None);
            let t_us = end.ps() / 1_000_000;
            for (f, p) in sim.progress().iter().enumerate() {
                let got = p.bytes_received - before[f];
                if got > 0 || (p.finish.is_none() && p.bytes_received > 0) {
                    let gbps = got as f64 * 8.0 / self.window.as_secs_f64() / 1e9;
                    let _ = writeln!(throughput, "{t_us},{f},{},{gbps:.4}", srcs[f]);
                }
                before[f] = p.bytes_received;
            }
            for (i, p) in sim.net.ports().iter().enumerate() {
                if p.owner.0 < n_hosts || p.peer.0 >= n_hosts {
                    continue;
                }
                let mean = p.mean_bytes_since(&snaps[i]);
                let _ = writeln!(
                    queues,
                    "{t_us},{},{},{},{mean:.1}",
                    p.peer.0, p.stats.max_packets, p.stats.max_bytes
                );
                snaps[i] = p.stats.clone();
            }
            // Each window's peaks alone.
            sim.net.reset_queue_peaks();
            if reason != StopReason::Paused {
                break;
            }
        }
        Tables {
            throughput,
            queues,
            protocol,
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: timeseries CONFIG WINDOW OUT_DIR");
        std::process::exit(2);
    }
    let path = Path::new(&args[1]);
    let window = match parse_duration(&args[2]) {
        Ok(d) if d.ps() > 0 => d,
        _ => {
            eprintln!("timeseries: bad window {:?}", args[2]);
            std::process::exit(2);
        }
    };
    let out = PathBuf::from(&args[3]);
    let result = Config::load(path).and_then(|cfg| {
        let exp = cfg.prepare(&base_dir_of(path))?;
        let transport = exp.config.transport.clone();
        transport.run(Series { exp, window })
    });
    let tables = match result {
        Ok(t) => t,
        Err(e) => {
            eprintln!("timeseries: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out)
        .and_then(|_| std::fs::write(out.join("throughput.csv"), &tables.throughput))
        .and_then(|_| std::fs::write(out.join("queues.csv"), &tables.queues))
    {
        eprintln!("timeseries: {}: {e}", out.display());
        std::process::exit(1);
    }
    println!("{}: wrote {}", tables.protocol, out.display());
}
