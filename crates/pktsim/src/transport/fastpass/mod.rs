//! Fastpass (Perry et al., "Fastpass: A Centralized 'Zero-Queue' Datacenter
//! Network", SIGCOMM 2014): a central arbiter decides when every packet is
//! sent and which path it takes. Two models, chosen by `model` in the config:
//!
//! - [`Fastpass`] (`model = "arbiter"`, this file): the real design as in
//!   `../shared/specs/fastpass.md` §3–6. Endpoints send cumulative demands
//!   (timeslots wanted per destination) to an arbiter host over the network
//!   at top priority (FCP); the arbiter allocates timeslots with
//!   [`fastpass_arbiter::Allocator`] (greedy maximal matching, least recently
//!   allocated first by default), colours inter-rack pairs onto core switches
//!   ([`fastpass_arbiter::colour_edges`]) and replies with per-source ALLOC
//!   messages; endpoints send exactly at the start of each allocated slot,
//!   source-routed on the allocated path.
//! - [`epoch::EpochModel`] (`model = "phost_epoch"`): the simplified model
//!   the pHost paper's simulator used (spec §8), to reproduce its comparison.
//!
//! Time is a global slot clock (slot `k` starts at `k × timeslot`): the
//! paper synchronises clocks with PTP, which we take as exact.
//!
//! State is kept per host ([`crate::transport::per_host`]): a host's FCP
//! endpoint, its flows and, on the arbiter host, the arbiter are its
//! [`FastpassHost`]. Requests and allocations are numbered by their sending
//! host and their contents wait in a run-wide mailbox while their packet is
//! on the wire (`mailbox.rs`).
//!
//! Readings where the spec leaves room (see `experiments/fastpass/README.md`):
//! - One packet per slot (FCP also packs several small packets into one).
//! - Control packets (requests, their ACKs, ALLOCs, data ACKs) are not
//!   scheduled; they travel in strict-priority class 0. Real Fastpass
//!   schedules the TCP ACKs too and carries FCP inside the same timeslots.
//! - The arbiter's compute time per batch of `batch_slots` slots is a fixed
//!   pipeline latency plus a cost per allocated (src, dst) slot, both from
//!   the single-thread benchmark (`BENCHMARKS.md`); batches are computed one
//!   after another (one allocation core). Path selection runs on other
//!   cores in the paper and is not charged.
//! - Data loss recovery: the receiver ACKs every data packet; a sender whose
//!   flow has no packet left waiting for a slot re-queues the unacknowledged
//!   ones after `retx_timeout` and asks for slots for them. (In the paper
//!   TCP above Fastpass does this.)
//! - Lost ALLOC messages are not recovered (the arbiter's FCP retransmission
//!   is not modelled); requests lost on the way are (FCP's timeout, §4).
//! - With scheduled failures the arbiter learns of them when routing does
//!   and selects paths around them (`reroute`).

pub mod config;
pub mod epoch;
mod mailbox;
mod reroute;
pub mod wire;

pub use config::{EpochStart, FastpassConfig, FastpassModel, FastpassOrder};

use crate::packet::{flags, FlowId, Header, Message, NodeId, Packet};
use crate::time::{Duration, Time};
use crate::transport::contract::{Ctx, Setup};
use crate::transport::host::packet_bitmap::PacketBitmap;
use crate::transport::per_host::{FlowEnd, FlowSlots, HostProtocol, PerHost};
use fastpass_arbiter::{colour_edges, Allocator, Order};
use mailbox::{Mailbox, MessageSeq};
use reroute::KnownRoutes;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use wire::FcpMsg;

/// Host timer: an allocated slot starts.
const T_SEND: u8 = 0;
/// Host timer: a paced request may go.
const T_REQ: u8 = 1;
/// Host timer: FCP request timeout.
const T_REQ_TIMEOUT: u8 = 2;
/// Flow timer: re-queue unacknowledged data.
const T_RETX: u8 = 3;
/// Arbiter timer: allocate the next batch.
const T_TICK: u8 = 4;
/// Arbiter timer: a computed batch is ready to send.
const T_OUT: u8 = 5;
/// A granted slot's place in a batch once it is given back (`reroute`).
const DEFERRED: u64 = u64::MAX;

/// Control packets that belong to no flow (FCP traffic). Drops of them are
/// counted network-wide, not against a flow.
pub(crate) const NO_FLOW: FlowId = FlowId(u32::MAX);

/// FCP header bytes on top of the transport header (sequence, ack, ack bitmap).
const FCP_HEADER: u32 = 8;

/// Fastpass parameters (model "arbiter").
#[derive(Clone, Debug)]
pub struct FastpassParams {
    /// Timeslot length (`None`: one MTU at the host rate).
    pub timeslot: Option<Duration>,
    /// Priority order of the allocator.
    pub order: Order,
    /// Timeslots allocated per arbiter step (FCP's `BATCH_SIZE` is 16).
    pub batch_slots: u32,
    /// How many slots ahead of a slot's start the arbiter allocates it.
    pub lead_slots: u32,
    /// Fixed compute latency of one batch.
    pub arbiter_latency: Duration,
    /// Compute cost per allocated (src, dst) slot.
    pub arbiter_per_alloc: Duration,
    /// Allocation cores in a ring: batch `k` is computed by core `k mod
    /// cores`, so batches overlap (the paper's pipelined allocator).
    pub arbiter_cores: u32,
    /// FCP: re-send unacknowledged demands after this long.
    pub request_timeout: Duration,
    /// Smallest gap between two request packets of one host.
    pub request_gap: Duration,
    /// Re-queue unacknowledged data this long after a flow's last queued
    /// packet was sent.
    pub retx_timeout: Duration,
    /// Allocations arriving up to this many slots late are used at once;
    /// later ones are discarded and re-requested (FCP's `miss_threshold`).
    pub miss_threshold: u32,
    /// The arbiter host (`None`: the last host, an extra one the config adds).
    pub arbiter: Option<NodeId>,
    /// Colour inter-rack pairs onto core switches and source-route them.
    pub path_selection: bool,
    /// Fault injection: the arbiter discards the first this many request
    /// packets that reach it, as if lost on the way.
    pub drop_first_requests: u32,
}

impl Default for FastpassParams {
    /// [`FastpassConfig`]'s defaults (the one place they are written).
    fn default() -> Self {
        FastpassConfig::default()
            .params()
            .expect("the default Fastpass config is valid")
    }
}

/// Counters of what the protocol did (for tests and reports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FastpassStats {
    /// Request packets sent by endpoints.
    pub requests_sent: u64,
    /// Request packets re-sent after an FCP timeout.
    pub requests_resent: u64,
    /// Request packets the arbiter discarded (`drop_first_requests`).
    pub requests_dropped: u64,
    /// Timeslots allocated.
    pub slots_allocated: u64,
    /// Allocations that arrived after their slot began (sent at once).
    pub allocs_late: u64,
    /// Allocations too late to use (re-requested).
    pub allocs_missed: u64,
    /// Allocations for which the endpoint had nothing to send.
    pub allocs_unwanted: u64,
    /// Timeslots whose inter-rack pairs could not be coloured onto the
    /// cores (left to the network's load balancing).
    pub path_conflicts: u64,
    /// Data packets re-queued after `retx_timeout`.
    pub data_requeued: u64,
    /// Allocated timeslots given back because no core was left for the
    /// pair's racks in that slot after a failure (`reroute`).
    pub slots_deferred: u64,
    /// Allocations not used because routing dropped their core after they
    /// were made (asked for again).
    pub allocs_on_lost_paths: u64,
}

impl FastpassStats {
    /// The counts of every host together.
    pub fn total(hosts: &[FastpassHost]) -> FastpassStats {
        let mut t = FastpassStats::default();
        for h in hosts {
            let s = &h.stats;
            t.requests_sent += s.requests_sent;
            t.requests_resent += s.requests_resent;
            t.requests_dropped += s.requests_dropped;
            t.slots_allocated += s.slots_allocated;
            t.allocs_late += s.allocs_late;
            t.allocs_missed += s.allocs_missed;
            t.allocs_unwanted += s.allocs_unwanted;
            t.path_conflicts += s.path_conflicts;
            t.data_requeued += s.data_requeued;
            t.slots_deferred += s.slots_deferred;
            t.allocs_on_lost_paths += s.allocs_on_lost_paths;
        }
        t
    }
}

/// Contents of a control message, in the [`Mailbox`] while its packet is
/// on the wire (packets are small `Copy` values; their wire size is
/// computed from the FCP format).
#[derive(Clone, Debug)]
enum Msg {
    /// (destination, cumulative timeslots requested).
    Req(Vec<(u32, u64)>),
    /// (slot index, destination, path).
    Alloc(Vec<(u64, u32, Option<u16>)>),
}

/// One destination of one source (FCP's per-destination flow state, §3).
#[derive(Clone, Debug, Default)]
struct Dest {
    dst: u32,
    /// Cumulative timeslots of data queued for this destination.
    demand: u64,
    /// Highest cumulative count sent to the arbiter.
    requested: u64,
    /// Highest cumulative count the arbiter acknowledged.
    acked: u64,
    /// Timeslots allocated for this destination so far (late and missed
    /// ones included).
    granted: u64,
    /// Packets waiting for a slot: (flow, first, end) index ranges.
    queue: VecDeque<(FlowId, u32, u32)>,
}

/// A host's FCP endpoint: its demands per destination, its allocated slots
/// and its request timers.
#[derive(Clone, Debug, Default)]
struct Endpoint {
    dests: Vec<Dest>,
    index: HashMap<u32, usize>,
    /// Allocated slots: (start, destination, path).
    slots: BinaryHeap<Reverse<(Time, u32, Option<u16>)>>,
    /// Pending `T_SEND` timer.
    send_at: Option<Time>,
    last_req: Option<Time>,
    /// Pending paced request.
    req_at: Option<Time>,
    /// Pending request timeout.
    timeout_at: Option<Time>,
    /// What each request not yet acknowledged asked for, by its sequence
    /// number (looked up by number only: its order decides nothing). One
    /// whose request or acknowledgement was lost stays, as its message did
    /// in the one table of every message before.
    unacked: HashMap<u64, Vec<(u32, u64)>>,
}

impl Endpoint {
    fn dest(&mut self, dst: u32) -> &mut Dest {
        let i = *self.index.entry(dst).or_insert_with(|| {
            self.dests.push(Dest {
                dst,
                ..Dest::default()
            });
            self.dests.len() - 1
        });
        &mut self.dests[i]
    }
}

#[derive(Clone, Debug, Default)]
struct SendFlow {
    acked: Vec<bool>,
    n_acked: u32,
    /// Packets waiting in the destination queue.
    queued: u32,
    /// Allocated timeslots this flow sent a packet in.
    slots_used: u32,
    retx_at: Option<Time>,
    active: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct RecvFlow {
    /// Packets received, by index.
    pub(crate) received: PacketBitmap,
}

impl RecvFlow {
    /// Take in packet `idx` of a flow of `n` packets; the in-order payload
    /// bytes now held.
    pub(crate) fn take(&mut self, idx: u32, n: u32, mss: u64, size: u64) -> u64 {
        if self.received.is_empty() {
            self.received.reset(n);
        }
        self.received.mark(idx);
        (self.received.until() as u64 * mss).min(size)
    }
}

/// The arbiter's state: part of the arbiter host's state.
#[derive(Debug)]
struct Arbiter {
    node: NodeId,
    alloc: Allocator,
    /// Cumulative count received per (src, dst): requests are idempotent
    /// (looked up by pair only: its order decides nothing).
    seen: HashMap<(u32, u32), u64>,
    ticking: bool,
    /// First slot of the next batch.
    next_batch: u64,
    /// End of each allocation core's current computation.
    busy_until: Vec<Time>,
    /// Batches allocated so far.
    batches: u64,
    /// Computed batches: (ready time, one (source, slots) ALLOC per source).
    outbox: VecDeque<(Time, AllocBatch)>,
    /// Request packets still to discard (`drop_first_requests`).
    drops_left: u32,
    /// Rack index of every host.
    rack: Vec<u32>,
    n_racks: usize,
    /// Core (spine) switches reachable from a rack.
    cores: usize,
    /// Packets per slot a rack uplink carries (fabric rate / host rate).
    lanes: usize,
    /// Each rack's switch and one of its hosts (to read routes towards it).
    rack_switch: Vec<NodeId>,
    rack_host: Vec<NodeId>,
    /// The core switches, in the order colours name them.
    core_node: Vec<NodeId>,
    /// Which cores each pair of racks can use, as routing last said.
    known: KnownRoutes,
}

/// One allocated timeslot: (source, slot, destination, path).
type Grant = (u32, u64, u32, Option<u16>);

/// Buffers of [`FastpassProtocol::select_paths`], kept over a batch: the
/// slot's inter-rack pairs as (source rack, destination rack), and their
/// places among the slot's grants.
#[derive(Default)]
struct PathScratch {
    edges: Vec<(u32, u32)>,
    which: Vec<usize>,
}

/// The ALLOC messages of one batch: (source, its (slot, destination, path)
/// list).
type AllocBatch = Vec<(u32, Vec<(u64, u32, Option<u16>)>)>;

/// Number of packets of a flow of `size` payload bytes.
pub(crate) fn n_packets(size: u64, mss: u32) -> u32 {
    size.div_ceil(mss as u64).max(1) as u32
}

/// A Fastpass control packet of `size` bytes ([`Ctx::control_packet`])
/// carrying `header` (an [`FcpMsg`] or an [`EpochMsg`](wire::EpochMsg)).
pub(crate) fn ctrl(
    ctx: &Ctx,
    f: FlowId,
    src: NodeId,
    dst: NodeId,
    size: u32,
    header: Header,
) -> Packet {
    ctx.control_packet(f, src, dst, size, header)
}

/// Fastpass with an arbiter host, for every host and flow of a run: the
/// run loop's transport ([`FastpassProtocol`] with one [`FastpassHost`]
/// per host).
pub type Fastpass = PerHost<FastpassProtocol>;

/// The run-wide part of Fastpass: its settings, the tables built at setup
/// and the mailbox of control messages in flight.
pub struct FastpassProtocol {
    params: FastpassParams,
    /// The timeslot length.
    slot: Duration,
    /// The arbiter host.
    arbiter: NodeId,
    /// Each flow's place in its source's sender and its destination's
    /// receiver table.
    slots: FlowSlots,
    /// Requests and allocations on the wire (see [`Mailbox`]).
    mailbox: std::sync::Arc<Mailbox<Msg>>,
    /// Set before the run: every host logs the data packets it sends
    /// ([`FastpassHost::data_log`], tests).
    pub log_data: bool,
}

/// One host's state: its FCP endpoint, the flows it sends and receives, its
/// message numbering, and, on the arbiter host, the arbiter.
#[derive(Debug, Default)]
pub struct FastpassHost {
    ep: Endpoint,
    /// Senders of this host's outgoing flows, by [`FlowSlots::send`].
    send: Vec<SendFlow>,
    /// Receivers of this host's incoming flows, by [`FlowSlots::recv`].
    recv: Vec<RecvFlow>,
    /// Sequence numbers of the messages this host sends.
    seq: MessageSeq,
    /// The arbiter, on the arbiter host once the first request reached it
    /// (it reads the routing tables, which a call's `Ctx` holds).
    arb: Option<Box<Arbiter>>,
    /// What this host did.
    pub stats: FastpassStats,
    /// With [`FastpassProtocol::log_data`]: every data packet this host
    /// sent, as (flow, packet, send time), in sending order.
    pub data_log: Option<Vec<(FlowId, u32, Time)>>,
}

impl FastpassProtocol {
    /// A protocol with these parameters.
    pub fn new(params: FastpassParams) -> Self {
        FastpassProtocol {
            params,
            slot: Duration::ZERO,
            arbiter: NodeId(0),
            slots: FlowSlots::default(),
            mailbox: Default::default(),
            log_data: false,
        }
    }

    /// The timeslot length in force (after setup).
    pub fn timeslot(&self) -> Duration {
        self.slot
    }

    /// The arbiter, made for the arbiter host `ctx` acts for.
    fn new_arbiter(&self, ctx: &Ctx) -> Arbiter {
        let n = ctx.n_hosts();
        // Racks = the switches hosts hang off, numbered in host order.
        let mut switches: Vec<NodeId> = Vec::new();
        let rack: Vec<u32> = (0..n)
            .map(|h| {
                let sw = ctx.attached_switch(NodeId(h));
                match switches.iter().position(|&s| s == sw) {
                    Some(i) => i as u32,
                    None => {
                        switches.push(sw);
                        switches.len() as u32 - 1
                    }
                }
            })
            .collect();
        let (mut cores, mut lanes) = (1, 1);
        let mut core_node = Vec::new();
        if let Some(other) = (1..n).find(|&h| rack[h as usize] != rack[0]) {
            let rates = ctx.next_hop_rates(switches[0], NodeId(other));
            cores = rates.len().max(1);
            core_node = ctx.next_hop_peers(switches[0], NodeId(other), true);
            let host = ctx.host_rate(NodeId(0)).bps();
            lanes = rates
                .first()
                .map_or(1, |r| (r.bps() / host).max(1) as usize);
        }
        let mut rack_host = vec![NodeId(0); switches.len()];
        for h in (0..n).rev() {
            rack_host[rack[h as usize] as usize] = NodeId(h);
        }
        Arbiter {
            node: self.arbiter,
            alloc: Allocator::new(n as usize, self.params.order),
            seen: HashMap::new(),
            ticking: false,
            next_batch: 0,
            busy_until: vec![Time::ZERO; self.params.arbiter_cores.max(1) as usize],
            batches: 0,
            outbox: VecDeque::new(),
            drops_left: self.params.drop_first_requests,
            n_racks: switches.len(),
            known: KnownRoutes::built(switches.len(), cores),
            rack_switch: switches,
            rack_host,
            core_node,
            rack,
            cores,
            lanes,
        }
    }

    fn slot_start(&self, k: u64) -> Time {
        Time(k * self.slot.ps())
    }

    // ---- endpoint: requests (FCP, spec §3–4) ----

    /// Ask for slots soon, respecting the request gap.
    fn schedule_request(&self, h: &mut FastpassHost, ctx: &mut Ctx) {
        let gap = self.params.request_gap;
        let ep = &mut h.ep;
        if ep.req_at.is_some() {
            return;
        }
        let at = ep.last_req.map_or(ctx.now(), |t| (t + gap).max(ctx.now()));
        if at == ctx.now() {
            self.send_request(h, ctx, false);
        } else {
            ep.req_at = Some(at);
            ctx.set_timer(at, ctx.host().0, T_REQ);
        }
    }

    /// Send the cumulative counts of every destination with new demand (and,
    /// after a timeout, of every destination not yet acknowledged).
    fn send_request(&self, h: &mut FastpassHost, ctx: &mut Ctx, resend: bool) {
        let me = ctx.host();
        let ep = &mut h.ep;
        let mut entries = Vec::new();
        for d in &mut ep.dests {
            if d.demand > d.requested || (resend && d.acked < d.requested) {
                d.requested = d.demand;
                entries.push((d.dst, d.demand));
            }
        }
        if entries.is_empty() {
            return;
        }
        let now = ctx.now();
        ep.last_req = Some(now);
        let deadline = now + self.params.request_timeout;
        ep.timeout_at = Some(deadline);
        ctx.set_timer(deadline, me.0, T_REQ_TIMEOUT);
        // A-REQ: 2 B type/count + 4 B per destination.
        let size = ctx.format().header + FCP_HEADER + 2 + 4 * entries.len() as u32;
        let seq = h.seq.next();
        // The endpoint keeps what it asked for until the arbiter's
        // acknowledgement; the arbiter gets its own copy.
        h.ep.unacked.insert(seq, entries.clone());
        self.mailbox.post(me, seq, Msg::Req(entries));
        let req = FcpMsg::Req { seq }.header();
        ctx.send(ctrl(ctx, NO_FLOW, me, self.arbiter, size, req));
        h.stats.requests_sent += 1;
        if resend {
            h.stats.requests_resent += 1;
        }
    }

    fn on_req_timeout(&self, h: &mut FastpassHost, ctx: &mut Ctx) {
        let ep = &mut h.ep;
        if ep.timeout_at != Some(ctx.now()) {
            return;
        }
        ep.timeout_at = None;
        if ep.dests.iter().any(|d| d.acked < d.requested) {
            self.send_request(h, ctx, true);
        }
    }

    // ---- arbiter (spec §5–6) ----

    fn on_request(&self, h: &mut FastpassHost, ctx: &mut Ctx, src: NodeId, seq: u64) {
        let arb = h.arb.get_or_insert_with(|| Box::new(self.new_arbiter(ctx)));
        let message = self.mailbox.take(src, seq);
        if arb.drops_left > 0 {
            arb.drops_left -= 1;
            h.stats.requests_dropped += 1;
            return;
        }
        let Some(Msg::Req(entries)) = message else {
            return;
        };
        for (dst, count) in entries {
            if dst == src.0 || dst as usize >= arb.alloc.endpoints() {
                continue;
            }
            let seen = arb.seen.entry((src.0, dst)).or_insert(0);
            if count > *seen {
                // Cumulative counts: a re-sent request adds nothing twice.
                let mut add = count - *seen;
                while add > 0 {
                    let k = add.min(u32::MAX as u64) as u32;
                    arb.alloc.add_demand(src.0, dst, k);
                    add -= k as u64;
                }
                *seen = count;
            }
        }
        let node = arb.node;
        let size = ctx.format().header + FCP_HEADER;
        let ack = FcpMsg::ReqAck { seq }.header();
        ctx.send(ctrl(ctx, NO_FLOW, node, src, size, ack));
        if !arb.ticking && arb.alloc.pending_pairs() > 0 {
            arb.ticking = true;
            let now_slot = ctx.now().ps().div_ceil(self.slot.ps());
            arb.next_batch = now_slot + self.params.lead_slots as u64;
            self.tick(h, ctx);
        }
    }

    /// Allocate one batch of slots and queue the ALLOC messages for when the
    /// computation is done.
    fn tick(&self, h: &mut FastpassHost, ctx: &mut Ctx) {
        let now = ctx.now();
        let b = self.params.batch_slots as u64;
        let Some(arb) = h.arb.as_mut() else { return };
        // An arbiter that fell behind (its cores busy past this tick)
        // allocates slots a lead ahead of when it can start, not slots that
        // will be gone by the time they are sent.
        let core = (arb.batches % arb.busy_until.len() as u64) as usize;
        let start = now.max(arb.busy_until[core]);
        let earliest = start.ps().div_ceil(self.slot.ps()) + self.params.lead_slots as u64;
        arb.next_batch = arb.next_batch.max(earliest);
        let mut granted: Vec<Grant> = Vec::new();
        let routed = self.params.path_selection && arb.n_racks > 1;
        if routed {
            arb.known
                .refresh(ctx, &arb.rack_switch, &arb.rack_host, &arb.core_node);
        }
        let mut scratch = PathScratch::default();
        for i in 0..b {
            let slot = arb.next_batch + i;
            let pairs = arb.alloc.allocate_slot();
            let first = granted.len();
            granted.extend(pairs.iter().map(|&(s, d)| (s, slot, d, None)));
            if routed {
                Self::select_paths(arb, &mut granted[first..], &mut scratch, &mut h.stats);
            }
        }
        granted.retain(|g| g.1 != DEFERRED);
        let count = granted.len() as u64;
        h.stats.slots_allocated += count;
        arb.batches += 1;
        let ready =
            start + self.params.arbiter_latency + self.params.arbiter_per_alloc.times(count);
        arb.busy_until[core] = ready;
        arb.next_batch += b;
        let more = arb.alloc.pending_pairs() > 0;
        let next_tick = arb.next_batch - self.params.lead_slots as u64;
        if more {
            let at = Time(next_tick * self.slot.ps()).max(now);
            ctx.set_timer(at, arb.node.0, T_TICK);
        } else {
            arb.ticking = false;
        }
        // A core that finishes early still sends after the batches before
        // it (one communication core, in order).
        let ready = arb.outbox.back().map_or(ready, |&(t, _)| ready.max(t));
        // One ALLOC per source, slots in order.
        granted.sort_by_key(|&(s, slot, _, _)| (s, slot));
        let mut out: AllocBatch = Vec::new();
        let mut i = 0;
        while i < granted.len() {
            let s = granted[i].0;
            let mut j = i;
            while j < granted.len() && granted[j].0 == s {
                j += 1;
            }
            let slots = granted[i..j]
                .iter()
                .map(|&(_, t, d, p)| (t, d, p))
                .collect();
            out.push((s, slots));
            i = j;
        }
        if !out.is_empty() {
            arb.outbox.push_back((ready, out));
            ctx.set_timer(ready, arb.node.0, T_OUT);
        }
    }

    /// Path selection for one timeslot's `granted` pairs (spec §6): each
    /// inter-rack packet a core, so that no rack–core link carries more
    /// packets than it has lanes; after a failure only cores routing still
    /// uses (`reroute`), and a packet no free one is left for gives its
    /// slot back (marked [`DEFERRED`]) for its pair's next slot.
    fn select_paths(
        arb: &mut Arbiter,
        granted: &mut [Grant],
        scratch: &mut PathScratch,
        stats: &mut FastpassStats,
    ) {
        let PathScratch { edges, which } = scratch;
        edges.clear();
        which.clear();
        for (k, &(s, _, d, _)) in granted.iter().enumerate() {
            let (rs, rd) = (arb.rack[s as usize], arb.rack[d as usize]);
            if rs != rd {
                edges.push((rs, rd));
                which.push(k);
            }
        }
        if edges.is_empty() {
            return;
        }
        let n_colours = arb.cores * arb.lanes;
        match colour_edges(edges, arb.n_racks, arb.n_racks, n_colours) {
            Some(colours) if arb.known.restricted() => {
                let paths = arb.known.paths(edges, &colours, n_colours);
                for (&g, path) in which.iter().zip(paths) {
                    match path {
                        Some(p) => granted[g].3 = Some(p),
                        None => {
                            let (s, _, d, _) = granted[g];
                            arb.alloc.add_demand(s, d, 1);
                            granted[g].1 = DEFERRED;
                            stats.slots_deferred += 1;
                        }
                    }
                }
            }
            Some(colours) => {
                for (k, &g) in which.iter().enumerate() {
                    // Colour c is lane c / cores of core c % cores:
                    // spread over cores first.
                    granted[g].3 = Some((colours[k] as usize % arb.cores) as u16);
                }
            }
            None => stats.path_conflicts += 1,
        }
    }

    /// Send every computed batch that is ready.
    fn flush(&self, h: &mut FastpassHost, ctx: &mut Ctx) {
        let now = ctx.now();
        let header = ctx.format().header;
        let Some(arb) = h.arb.as_mut() else { return };
        let node = arb.node;
        let mut ready = Vec::new();
        while arb.outbox.front().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, v)) = arb.outbox.pop_front() {
                ready.extend(v);
            }
        }
        for (src, slots) in ready {
            // ALLOC: 2 B type/counts, 2 B base slot, 2 B per destination,
            // 1 B per slot.
            let mut dsts: Vec<u32> = slots.iter().map(|s| s.1).collect();
            dsts.sort_unstable();
            dsts.dedup();
            let size = header + FCP_HEADER + 4 + 2 * dsts.len() as u32 + slots.len() as u32;
            let seq = h.seq.next();
            self.mailbox.post(node, seq, Msg::Alloc(slots));
            let alloc = FcpMsg::Alloc { seq }.header();
            ctx.send(ctrl(ctx, NO_FLOW, node, NodeId(src), size, alloc));
        }
    }

    // ---- endpoint: allocations and data ----

    fn on_alloc(&self, h: &mut FastpassHost, ctx: &mut Ctx, from: NodeId, seq: u64) {
        let Some(Msg::Alloc(slots)) = self.mailbox.take(from, seq) else {
            return;
        };
        let now = ctx.now();
        let miss = self.slot.times(self.params.miss_threshold as u64);
        let mut rerequest = false;
        for (k, dst, path) in slots {
            if let Some(&i) = h.ep.index.get(&dst) {
                h.ep.dests[i].granted += 1;
            }
            let start = self.slot_start(k);
            if start + miss < now {
                // Too late: the slot is gone; ask for another if still needed.
                h.stats.allocs_missed += 1;
                let d = h.ep.dest(dst);
                if !d.queue.is_empty() {
                    d.demand += 1;
                    rerequest = true;
                }
                continue;
            }
            if start < now {
                h.stats.allocs_late += 1;
            }
            let at = start.max(now);
            let ep = &mut h.ep;
            ep.slots.push(Reverse((at, dst, path)));
            if ep.send_at.is_none_or(|t| at < t) {
                ep.send_at = Some(at);
                ctx.set_timer(at, ctx.host().0, T_SEND);
            }
        }
        if rerequest {
            self.schedule_request(h, ctx);
        }
    }

    fn on_send_timer(&self, h: &mut FastpassHost, ctx: &mut Ctx) {
        let now = ctx.now();
        if h.ep.send_at != Some(now) {
            return;
        }
        h.ep.send_at = None;
        while let Some(&Reverse((at, dst, path))) = h.ep.slots.peek() {
            if at > now {
                h.ep.send_at = Some(at);
                ctx.set_timer(at, ctx.host().0, T_SEND);
                break;
            }
            h.ep.slots.pop();
            self.use_slot(h, ctx, dst, path);
        }
    }

    /// Send the next waiting packet for `dst` in this slot.
    fn use_slot(&self, h: &mut FastpassHost, ctx: &mut Ctx, dst: u32, path: Option<u16>) {
        let path = match path.map(|core| reroute::live_path(ctx, NodeId(dst), core)) {
            None => None,
            Some(Some(p)) => Some(p),
            Some(None) => {
                // Allocated on a core routing has since dropped: the packet
                // would collide on the cores left, so it asks for another
                // slot instead.
                h.stats.allocs_on_lost_paths += 1;
                let d = h.ep.dest(dst);
                if !d.queue.is_empty() {
                    d.demand += 1;
                    self.schedule_request(h, ctx);
                }
                return;
            }
        };
        let d = h.ep.dest(dst);
        let pick = loop {
            let Some(front) = d.queue.front_mut() else {
                break None;
            };
            let (f, i) = (front.0, front.1);
            front.1 += 1;
            if front.1 >= front.2 {
                d.queue.pop_front();
            }
            let s = &mut h.send[self.slots.send(f)];
            s.queued -= 1;
            let done = !s.active || s.acked.get(i as usize).copied().unwrap_or(true);
            if s.queued == 0 && s.active {
                let at = ctx.now() + self.params.retx_timeout;
                s.retx_at = Some(at);
                ctx.set_timer(at, f.0, T_RETX);
            }
            if !done {
                s.slots_used += 1;
                break Some((f, i));
            }
        };
        let Some((f, i)) = pick else {
            h.stats.allocs_unwanted += 1;
            return;
        };
        let first = i as u64 * ctx.format().mss as u64;
        let mut p = ctx.data_packet(f, first, u64::MAX, FcpMsg::Data { pkt: i }.header());
        p.prio = 1;
        if let Some(path) = path {
            p.flags |= flags::SOURCE_ROUTED;
            p.path = path;
        }
        if let Some(log) = h.data_log.as_mut() {
            log.push((f, i, ctx.now()));
        }
        ctx.send(p);
    }

    fn on_retx(&self, h: &mut FastpassHost, ctx: &mut Ctx, f: FlowId) {
        let s = &mut h.send[self.slots.send(f)];
        if s.retx_at != Some(ctx.now()) || !s.active || s.queued > 0 {
            return;
        }
        s.retx_at = None;
        let missing: Vec<u32> = (0..s.acked.len() as u32)
            .filter(|&i| !s.acked[i as usize])
            .collect();
        if missing.is_empty() {
            return;
        }
        s.queued += missing.len() as u32;
        h.stats.data_requeued += missing.len() as u64;
        let dst = ctx.flow(f).dst;
        for _ in &missing {
            ctx.count_retransmit(f);
        }
        let d = h.ep.dest(dst.0);
        d.demand += missing.len() as u64;
        // Runs of consecutive missing packets as ranges.
        let mut k = 0;
        while k < missing.len() {
            let mut e = k + 1;
            while e < missing.len() && missing[e] == missing[e - 1] + 1 {
                e += 1;
            }
            d.queue.push_back((f, missing[k], missing[e - 1] + 1));
            k = e;
        }
        self.schedule_request(h, ctx);
    }
}

/// The arbiter's allocator handles at most
/// [`fastpass_arbiter::MAX_ENDPOINTS`] hosts: a bigger topology is a
/// config error, not a panic.
fn check_hosts(n_hosts: u32) -> crate::Result<()> {
    if n_hosts as usize > fastpass_arbiter::MAX_ENDPOINTS {
        return Err(crate::Error::config(
            "topology",
            format!(
                "Fastpass's arbiter allocates timeslots for at most {} hosts (arbiter included); this topology has {n_hosts}",
                fastpass_arbiter::MAX_ENDPOINTS
            ),
        ));
    }
    Ok(())
}

impl HostProtocol for FastpassProtocol {
    type Host = FastpassHost;

    fn name(&self) -> &'static str {
        "fastpass"
    }

    fn setup(&mut self, env: &Setup) -> crate::Result<()> {
        let n = env.n_hosts();
        check_hosts(n)?;
        let f = env.format();
        self.slot = self
            .params
            .timeslot
            .unwrap_or_else(|| env.host_rate(NodeId(0)).tx_time((f.mss + f.header) as u64));
        self.arbiter = self.params.arbiter.unwrap_or(NodeId(n.saturating_sub(1)));
        self.slots = FlowSlots::new(env);
        Ok(())
    }

    fn new_host(&self, _env: &Setup, host: NodeId) -> FastpassHost {
        FastpassHost {
            send: vec![SendFlow::default(); self.slots.n_send(host)],
            recv: vec![RecvFlow::default(); self.slots.n_recv(host)],
            data_log: self.log_data.then(Vec::new),
            ..FastpassHost::default()
        }
    }

    fn start_flow(&self, h: &mut FastpassHost, ctx: &mut Ctx, f: FlowId) {
        let spec = ctx.flow(f);
        let (dst, size) = (spec.dst, spec.size);
        let n = n_packets(size, ctx.format().mss);
        let s = &mut h.send[self.slots.send(f)];
        s.acked = vec![false; n as usize];
        s.queued = n;
        s.active = true;
        let d = h.ep.dest(dst.0);
        d.queue.push_back((f, 0, n));
        d.demand += n as u64;
        self.schedule_request(h, ctx);
    }

    fn on_packet(&self, h: &mut FastpassHost, ctx: &mut Ctx, pkt: Packet) {
        let Some(msg) = FcpMsg::parse(&pkt.header) else {
            debug_assert!(false, "Fastpass got a foreign or unknown packet");
            return;
        };
        match msg {
            FcpMsg::Req { seq } => self.on_request(h, ctx, pkt.src, seq),
            FcpMsg::ReqAck { seq } => {
                if let Some(entries) = h.ep.unacked.remove(&seq) {
                    for (dst, count) in entries {
                        let d = h.ep.dest(dst);
                        d.acked = d.acked.max(count);
                    }
                }
            }
            FcpMsg::Alloc { seq } => self.on_alloc(h, ctx, pkt.src, seq),
            FcpMsg::Data { pkt: idx } => {
                let f = pkt.flow;
                let (n, size) = {
                    let s = ctx.flow(f);
                    (n_packets(s.size, ctx.format().mss), s.size)
                };
                let mss = ctx.format().mss as u64;
                let got = h.recv[self.slots.recv(f)].take(idx, n, mss, size);
                ctx.set_received(f, got);
                let size = ctx.format().header;
                let ack = FcpMsg::DataAck { pkt: idx }.header();
                ctx.send(ctrl(ctx, f, pkt.dst, pkt.src, size, ack));
            }
            FcpMsg::DataAck { pkt: idx } => {
                let s = &mut h.send[self.slots.send(pkt.flow)];
                let i = idx as usize;
                if s.active && i < s.acked.len() && !s.acked[i] {
                    s.acked[i] = true;
                    s.n_acked += 1;
                    if s.n_acked as usize == s.acked.len() {
                        s.active = false;
                        s.acked = Vec::new();
                    }
                }
            }
        }
    }

    fn on_timer(&self, h: &mut FastpassHost, ctx: &mut Ctx, id: u32, kind: u8) {
        // Host and arbiter timers carry the host, flow timers the flow.
        match kind {
            T_SEND => self.on_send_timer(h, ctx),
            T_REQ => {
                if h.ep.req_at == Some(ctx.now()) {
                    h.ep.req_at = None;
                    self.send_request(h, ctx, false);
                }
            }
            T_REQ_TIMEOUT => self.on_req_timeout(h, ctx),
            T_RETX => self.on_retx(h, ctx, FlowId(id)),
            T_TICK => self.tick(h, ctx),
            T_OUT => self.flush(h, ctx),
            _ => debug_assert!(false, "unknown Fastpass timer"),
        }
    }

    /// At the source, from the flow's start until every packet is
    /// acknowledged: its demand (packets waiting for a timeslot, re-queued
    /// ones included), the timeslots it sent in, its packets acknowledged,
    /// and the FCP state of its destination, which the source's flows to
    /// that destination share: timeslots wanted in all (cumulative),
    /// told to the arbiter, granted by it, and granted but not yet begun.
    /// At the destination, from the first packet until the last: packets
    /// received.
    fn flow_state(
        &self,
        h: &FastpassHost,
        at: NodeId,
        f: FlowId,
        out: &mut dyn FnMut(&'static str, f64),
    ) {
        match self.slots.end_at(at, f, &h.send, &h.recv) {
            Some(FlowEnd::Sender(s)) if s.active => {
                let Some(dst) = self.slots.destination(f) else {
                    return;
                };
                out("demand_packets", f64::from(s.queued));
                out("slots_used", f64::from(s.slots_used));
                out("acked_packets", f64::from(s.n_acked));
                if let Some(d) = h.ep.index.get(&dst.0).map(|&i| &h.ep.dests[i]) {
                    let pending = h.ep.slots.iter().filter(|r| r.0 .1 == dst.0).count();
                    out("dest_demand_slots", d.demand as f64);
                    out("dest_requested_slots", d.requested as f64);
                    out("dest_granted_slots", d.granted as f64);
                    out("dest_pending_slots", pending as f64);
                }
            }
            Some(FlowEnd::Receiver(r)) => {
                let got = r.received.count();
                if got > 0 && got < r.received.len() {
                    out("received_packets", f64::from(got));
                }
            }
            _ => {}
        }
    }

    fn copy_for_group(&self) -> Option<Self> {
        // Hosts share nothing but packets and the mailbox their messages
        // ride in, which the copies share (the arbiter is its host's).
        let mut copy = FastpassProtocol::new(self.params.clone());
        copy.mailbox = self.mailbox.clone();
        copy.log_data = self.log_data;
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_hosts_than_the_allocator_takes_is_an_error_not_a_panic() {
        let max = fastpass_arbiter::MAX_ENDPOINTS as u32;
        assert!(check_hosts(max).is_ok());
        let e = check_hosts(max + 1).unwrap_err().to_string();
        assert!(e.contains("topology") && e.contains("16384"), "{e}");
    }

    #[test]
    fn receiver_counts_in_order_bytes_once() {
        let mut r = RecvFlow::default();
        assert_eq!(r.take(1, 3, 1000, 2500), 0);
        assert_eq!(r.take(1, 3, 1000, 2500), 0);
        assert_eq!(r.received.count(), 1);
        assert_eq!(r.take(0, 3, 1000, 2500), 2000);
        assert_eq!(r.take(2, 3, 1000, 2500), 2500);
        assert_eq!(r.received.count(), 3);
    }

    #[test]
    fn host_keeps_one_dest_per_destination() {
        let mut h = Endpoint::default();
        h.dest(7).demand += 3;
        h.dest(2).demand += 1;
        h.dest(7).demand += 2;
        assert_eq!(h.dests.len(), 2);
        assert_eq!(h.dest(7).demand, 5);
    }
}
