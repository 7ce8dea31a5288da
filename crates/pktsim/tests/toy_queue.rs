//! A toy queue discipline written outside the library (issue 34: a new
//! discipline is one file plus one line). This file is the discipline, a
//! last-in first-out stack on `Held`'s counts and drop-tail admission; its
//! one line is `register(LIFO, || Box::new(Lifo::default()))`, after which
//! `switch_queue = { kind = "custom", name = "toy_lifo" }` selects it. A
//! library discipline is the same file in `net/queue/` plus its line in the
//! `disciplines!` list (see docs/extending.md).

use crate::common::{assert_all_finished, incast, prepare, run, star};
use pktsim::config::Config;
use pktsim::metrics::{DropReason, RunOutput};
use pktsim::net::queue::{register, Discipline, Drops, Held};
use pktsim::packet::Packet;
use pktsim::Time;

/// The name the toy is registered under.
const LIFO: &str = "toy_lifo";

/// The newest packet leaves first; an arrival that does not fit is dropped.
#[derive(Debug, Default)]
struct Lifo {
    pkts: Vec<Packet>,
    held: Held,
}

impl Discipline for Lifo {
    fn enqueue(&mut self, mut pkt: Packet, _now: Time, limit: u64, drops: &mut Drops) -> u32 {
        if !self.held.fits(&pkt, limit) {
            drops.push((pkt, DropReason::BufferFull));
            return 0;
        }
        let marked = self.held.admit(&mut pkt);
        self.pkts.push(pkt);
        marked
    }
    fn dequeue(&mut self, _now: Time, _drops: &mut Drops) -> Option<Packet> {
        let p = self.pkts.pop()?;
        self.held.remove(&p);
        Some(p)
    }
    pktsim::counts_from_held!();
    fn drain(&mut self) -> Vec<Packet> {
        self.held.clear();
        std::mem::take(&mut self.pkts)
    }
}

/// Four hosts send 300 KB each to a fifth through one switch port, whose
/// queue is `queue`; the buffer holds every packet, so nothing is lost.
fn incast_through(queue: &str) -> RunOutput {
    register(LIFO, || Box::new(Lifo::default()));
    let toml = format!(
        "{}[network]\nswitch_queue = {queue}\nswitch_buffer_bytes = 10000000\n\
         [transport]\nprotocol = \"tcp\"\n{}",
        star(5, "1us"),
        incast(4, 4, 300_000)
    );
    let out = run(&toml);
    assert_all_finished(&out);
    out
}

#[test]
fn the_toy_lifo_reorders_what_drop_tail_delivers_in_order() {
    let fifo = incast_through("{ kind = \"drop_tail\" }");
    let lifo = incast_through(&format!("{{ kind = \"custom\", name = \"{LIFO}\" }}"));
    let retransmits = |o: &RunOutput| o.flows.iter().map(|f| f.retransmits).sum::<u32>();
    let drops = |o: &RunOutput| o.counters.dropped_total(0);
    // Neither queue overflows: whatever the senders resend, loss did not
    // cause it.
    assert_eq!((drops(&fifo), drops(&lifo)), (0, 0));
    // In arrival order nothing is resent; newest first, the stack's
    // bottom waits while later packets overtake it, and the duplicate
    // ACKs they raise make TCP resend what was only late.
    assert_eq!(retransmits(&fifo), 0);
    assert!(
        retransmits(&lifo) > 0,
        "LIFO must reorder: {:?}",
        lifo.counters
    );
    assert!(lifo.counters.sent[0] > fifo.counters.sent[0]);
}

#[test]
fn an_unregistered_name_is_a_config_error_not_a_panic() {
    let toml = format!(
        "{}[network]\nswitch_queue = {{ kind = \"custom\", name = \"toy_nobody\" }}\n\
         [transport]\nprotocol = \"tcp\"\n{}",
        star(2, "1us"),
        incast(1, 1, 1000)
    );
    let cfg = Config::from_toml_str(&toml, "<test>").expect("parses");
    let Err(err) = cfg.prepare(std::path::Path::new(".")) else {
        panic!("nobody registered toy_nobody");
    };
    let err = err.to_string();
    assert!(err.contains("network.switch_queue.name"), "{err}");
    assert!(err.contains("toy_nobody"), "{err}");
    // A registered one prepares.
    register(LIFO, || Box::new(Lifo::default()));
    prepare(&toml.replace("toy_nobody", LIFO));
}
