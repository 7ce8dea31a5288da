//! The transport contract: a setup hook whose errors reach the caller, and
//! named random streams per transport; runs that cannot progress stop with
//! a reason.

use crate::common::{pairs, prepare, simulation, star};
use pktsim::packet::{FlowId, Packet};
use pktsim::sim::{Ctx, Setup, Simulation, Transport};
use pktsim::transport::run_to_end;

/// A transport that only sets itself up: it fails when told to, and
/// records its first random draws.
struct Toy {
    name: &'static str,
    fail: bool,
    draws: Vec<u64>,
}

impl Transport for Toy {
    fn name(&self) -> &'static str {
        self.name
    }
    fn setup(&mut self, env: &Setup) -> pktsim::Result<()> {
        if self.fail {
            return Err(pktsim::Error::config(
                "transport",
                format!("toy cannot run on {} hosts", env.n_hosts()),
            ));
        }
        let mut r = env.rng("draws", 0);
        self.draws = (0..4).map(|_| r.next_u64()).collect();
        Ok(())
    }
    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        // Finish at once: nothing to send.
        let size = ctx.flow(f).size;
        ctx.set_received(f, size);
    }
    fn on_packet(&mut self, _ctx: &mut Ctx, _pkt: Packet) {}
    fn on_timer(&mut self, _ctx: &mut Ctx, _id: u32, _kind: u8) {}
}

/// A three-host star with one 10 KB flow.
fn star3() -> String {
    format!(
        "{}[transport]\nprotocol = \"tcp\"\n{}",
        star(3, "1us"),
        pairs("[[0, 1]]", 10_000)
    )
}

fn sim(toy: Toy, seed: u64) -> Simulation<Toy> {
    simulation(prepare(&star3()), toy, seed)
}

fn toy(name: &'static str, fail: bool) -> Toy {
    Toy {
        name,
        fail,
        draws: Vec::new(),
    }
}

#[test]
fn a_failing_setup_is_an_error_of_the_run() {
    let err = run_to_end(sim(toy("toy", true), 1), None).unwrap_err();
    assert_eq!(err.to_string(), "transport: toy cannot run on 3 hosts");
    let out = run_to_end(sim(toy("toy", false), 1), None).unwrap();
    assert_eq!(out.stop_reason, "all_flows_done");
}

#[test]
fn each_transport_draws_from_its_own_named_stream() {
    let draws = |name, seed| {
        let mut s = sim(toy(name, false), seed);
        s.setup().unwrap();
        // Set up once: a second call changes nothing.
        s.setup().unwrap();
        s.transport.draws.clone()
    };
    assert_eq!(draws("toy", 1), draws("toy", 1), "not reproducible");
    assert_ne!(draws("toy", 1), draws("toy", 2), "ignores the seed");
    assert_ne!(
        draws("toy", 1),
        draws("other", 1),
        "shared between protocols"
    );
}

/// A transport that never sends: each flow only re-arms a timer every
/// `period`, so events go on while no byte ever moves.
struct Idle {
    period: pktsim::Duration,
}

impl Transport for Idle {
    fn name(&self) -> &'static str {
        "idle"
    }
    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        ctx.set_timer(ctx.now() + self.period, f.0, 0);
    }
    fn on_packet(&mut self, _ctx: &mut Ctx, _pkt: Packet) {}
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, _kind: u8) {
        ctx.set_timer(ctx.now() + self.period, id, 0);
    }
}

/// A run in which no flow can progress stops with `no_progress` once the
/// configured time has passed without a new byte, not when the clock runs
/// out; the same run with no such limit stops at the end of the clock's
/// range (106 days), never where time saturates.
#[test]
fn a_run_without_progress_stops_with_a_reason_before_the_clock_ends() {
    let limited = star3().replace(
        "[transport]",
        "[run]\nno_progress_limit = \"30s\"\n[transport]",
    );
    let e = prepare(&limited);
    let idle = Idle {
        period: pktsim::Duration::from_ms(7_000),
    };
    let sim = simulation(e, idle, 1);
    let out = run_to_end(sim, None).unwrap();
    assert_eq!(out.stop_reason, "no_progress");
    // The last timer that ran is the last one within 30 s of the start.
    assert_eq!(out.sim_time.ps(), 28 * pktsim::time::PS_PER_SEC);

    let mut e = prepare(&star3());
    assert_eq!(
        e.limits.no_progress_limit,
        Some(pktsim::config::DEFAULT_NO_PROGRESS_LIMIT)
    );
    e.limits.no_progress_limit = None;
    let idle = Idle {
        period: pktsim::Duration::from_ms(20 * 86_400_000),
    };
    let sim = simulation(e, idle, 1);
    let out = run_to_end(sim, None).unwrap();
    assert_eq!(out.stop_reason, "clock_range");
    let day = 86_400 * pktsim::time::PS_PER_SEC;
    assert_eq!(out.sim_time.ps(), 100 * day);
}
