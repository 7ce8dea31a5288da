//! Helpers shared by the end-to-end tests: config sections that many tests
//! build (a star, a leaf-spine, a dumbbell, static workloads), runs with a
//! transport built by the test, and the assertions every run must pass.

use pktsim::config::{Config, Experiment};
use pktsim::metrics::RunOutput;
use pktsim::net::Network;
use pktsim::packet::{FlowId, NodeId, Packet};
use pktsim::sim::{Ctx, Setup, Simulation, Transport};
use pktsim::transport::tcp::{Tcp, TcpParams, TcpProtocol};
use pktsim::Duration;
use std::path::Path;

/// Parse and prepare a config given as TOML text.
pub fn prepare(toml: &str) -> Experiment {
    let cfg = Config::from_toml_str(toml, "<test>").expect("config parses");
    cfg.prepare(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("config is valid")
}

/// Run a config to the end and check conservation.
pub fn run(toml: &str) -> RunOutput {
    let out = prepare(toml).run(None).expect("runs");
    assert_conserved(&out);
    out
}

/// The conservation invariant: sent = delivered + dropped + in flight.
pub fn assert_conserved(out: &RunOutput) {
    let c = &out.counters;
    assert!(c.conserved(), "conservation violated: {c:?}");
    for k in 0..2 {
        let by_site: u64 = c.dropped_at[k].iter().sum();
        assert_eq!(
            by_site,
            c.dropped_total(k),
            "a drop without its site: {c:?}"
        );
    }
    assert!(c.sent[0] > 0, "no data sent");
}

/// Every flow of the run finished.
pub fn assert_all_finished(out: &RunOutput) {
    let open: Vec<usize> = (out.flows.iter().enumerate())
        .filter(|(_, f)| f.finish.is_none())
        .map(|(i, _)| i)
        .collect();
    assert!(open.is_empty(), "flows that never finished: {open:?}");
}

/// A simulation of a prepared experiment with a transport the test built
/// (to reach its state afterwards), seeded with `seed`.
pub fn simulation<T: Transport>(exp: Experiment, transport: T, seed: u64) -> Simulation<T> {
    Simulation::new(
        exp.net,
        transport,
        exp.workload,
        exp.format,
        exp.limits,
        seed,
    )
}

/// The TCP parameters of a TCP-family config.
pub fn tcp_params(exp: &Experiment) -> TcpParams {
    exp.config
        .transport
        .tcp()
        .expect("valid")
        .expect("a TCP-family protocol")
}

/// A simulation of a TCP-family experiment with the transport its config
/// names, built here so that its per-flow state can be read afterwards.
pub fn tcp_simulation(exp: Experiment, seed: u64) -> Simulation<Tcp> {
    let tcp = Tcp::new(TcpProtocol::new(tcp_params(&exp)));
    simulation(exp, tcp, seed)
}

/// A default TCP whose retransmission timer never goes below `min_rto`.
pub fn tcp_with_min_rto(min_rto: Duration) -> Tcp {
    Tcp::new(TcpProtocol::new(TcpParams {
        min_rto,
        ..Default::default()
    }))
}

/// Per port of `net`, whether it leads to a host.
pub fn host_facing(net: &Network) -> Vec<bool> {
    net.ports()
        .iter()
        .map(|p| p.peer.0 < net.n_hosts())
        .collect()
}

/// Each flow's completion time in nanoseconds, sorted.
pub fn fcts_ns(out: &RunOutput) -> Vec<f64> {
    let mut v: Vec<f64> = out
        .flows
        .iter()
        .map(|f| f.fct().expect("finished").ps() as f64 / 1e3)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// A `[topology]` section: `hosts` hosts on one switch, 10 Gbit/s links of
/// `link_delay`.
pub fn star(hosts: u32, link_delay: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\nhost_rate = \"10Gbps\"\n\
         link_delay = \"{link_delay}\"\n"
    )
}

/// A leaf-spine `[topology]` section; start from [`LeafSpine::TEN_G`] and
/// name what differs.
#[derive(Clone, Copy, Debug)]
pub struct LeafSpine {
    /// Spine switches.
    pub spines: u32,
    /// Leaf switches.
    pub leaves: u32,
    /// Hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Host to leaf links.
    pub host_rate: &'static str,
    /// Leaf to spine links.
    pub fabric_rate: &'static str,
    /// Every link's one-way delay.
    pub link_delay: &'static str,
}

impl LeafSpine {
    /// Two spines, two leaves of four hosts, every link 10 Gbit/s and 1 us.
    pub const TEN_G: LeafSpine = LeafSpine {
        spines: 2,
        leaves: 2,
        hosts_per_leaf: 4,
        host_rate: "10Gbps",
        fabric_rate: "10Gbps",
        link_delay: "1us",
    };

    /// The section as TOML.
    pub fn toml(&self) -> String {
        let LeafSpine {
            spines,
            leaves,
            hosts_per_leaf,
            host_rate,
            fabric_rate,
            link_delay,
        } = self;
        format!(
            "[topology]\nkind = \"leaf_spine\"\nspines = {spines}\nleaves = {leaves}\n\
             hosts_per_leaf = {hosts_per_leaf}\nhost_rate = \"{host_rate}\"\n\
             fabric_rate = \"{fabric_rate}\"\nlink_delay = \"{link_delay}\"\n"
        )
    }
}

/// A `[topology]` section: `senders` hosts, 10 Gbit/s and 1 us each, into a
/// 10 Gbit/s, 10 us bottleneck to one receiver.
pub fn dumbbell(senders: u32) -> String {
    format!(
        "[topology]\nkind = \"dumbbell\"\nsenders = {senders}\nhost_rate = \"10Gbps\"\n\
         host_delay = \"1us\"\nbottleneck_rate = \"10Gbps\"\nbottleneck_delay = \"10us\"\n"
    )
}

/// A static `[[workload]]`: hosts `0..senders` each send `size` bytes to
/// `receiver`, all at time zero.
pub fn incast(senders: u32, receiver: u32, size: u64) -> String {
    let list: Vec<String> = (0..senders).map(|i| i.to_string()).collect();
    format!(
        "[[workload]]\nkind = \"static\"\nsenders = [{}]\nreceiver = {receiver}\nsize = {size}\n",
        list.join(", ")
    )
}

/// A static `[[workload]]`: each `[src, dst]` pair of `pairs` (TOML, e.g.
/// `[[0, 1]]`) sends `size` bytes at time zero.
pub fn pairs(pairs: &str, size: u64) -> String {
    format!("[[workload]]\nkind = \"static\"\npairs = {pairs}\nsize = {size}\n")
}

/// A config shipped under `experiments/` (`rel` below it), cut from its
/// `shipped` flows to `flows`.
pub fn shipped_config(rel: &str, shipped: u64, flows: u64) -> String {
    let path = format!("{}/../../experiments/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("shipped config");
    let key = format!("flows = {shipped}");
    assert!(text.contains(&key), "{path}: no longer {key}");
    text.replace(&key, &format!("flows = {flows}"))
}

/// A transport whose arriving packets are first shown to `keep`, with
/// state of the test's own: a packet `keep` returns false for is lost
/// before the transport sees it (the network counted it delivered, as if
/// the last link had lost it). Everything else goes to `inner` unchanged.
pub struct Intercept<T, S> {
    /// The transport.
    pub inner: T,
    /// The test's state, for `keep`.
    pub state: S,
    /// Sees every arriving packet first; false loses it.
    pub keep: fn(&mut S, &mut Ctx, &Packet) -> bool,
}

impl<T: Transport, S: Send> Transport for Intercept<T, S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn setup(&mut self, env: &Setup) -> pktsim::Result<()> {
        self.inner.setup(env)
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: Packet) {
        if (self.keep)(&mut self.state, ctx, &pkt) {
            self.inner.on_packet(ctx, pkt)
        }
    }
    fn on_timer(&mut self, ctx: &mut Ctx, id: u32, kind: u8) {
        self.inner.on_timer(ctx, id, kind)
    }
    fn wants_nic_pull(&self) -> bool {
        self.inner.wants_nic_pull()
    }
    fn on_nic_idle(&mut self, ctx: &mut Ctx, host: NodeId) {
        self.inner.on_nic_idle(ctx, host)
    }
    fn on_notice(&mut self, ctx: &mut Ctx, pkt: Packet) {
        self.inner.on_notice(ctx, pkt)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }
}
