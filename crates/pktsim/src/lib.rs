//! # pktsim
//!
//! A fast, deterministic packet-level simulator for datacenter and WAN
//! transport research.
//!
//! Data flows one way: a [`config::Config`] is validated into a topology, a
//! workload and a transport; [`sim::Simulation`] runs the event loop; the
//! results are per-flow records, queue samples and counters that
//! [`output`] writes as Parquet and JSON.
//!
//! The layers, bottom up: `packet` knows nothing of the network, `net`
//! nothing of the run loop, transports or configs (a test checks it), a
//! transport only its [`transport::contract`]:
//!
//! - [`time`]: integer picosecond time and exact serialization delays.
//! - [`engine`]: the event queue and named random streams.
//! - [`packet`]: the packet, ids and typed headers (wire types only).
//! - [`net`]: ports (output queue + link), queue disciplines, the switch
//!   stage (egress choice, refusal hook, hop limit), routing, topologies;
//!   the network's own events.
//! - [`transport`]: the transport contract ([`transport::contract`]:
//!   `Transport`, `Ctx`) and the host protocols (TCP NewReno, DCTCP, ...),
//!   one file each.
//! - [`sim`]: the run loop.
//! - [`workload`]: flow-size distributions and traffic patterns.
//! - [`metrics`]: flow records, counters, ideal FCT and summaries.

pub mod config;
pub mod engine;
pub mod error;
pub mod event;
pub mod metrics;
pub mod net;
pub mod output;
pub mod packet;
pub mod resources;
pub mod sim;
pub mod time;
pub mod transport;
pub mod workload;

/// The worked examples of `docs/extending.md`, compiled and run as
/// doctests so that the guide cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/extending.md")]
pub struct ExtendingGuide;

pub use error::{Error, Result};
pub use time::{Duration, Rate, Time};
