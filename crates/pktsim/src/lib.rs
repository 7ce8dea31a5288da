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
//! - [`time`]: integer picosecond time and exact serialization delays.
//! - [`engine`]: the event queue and named random streams.
//! - [`net`]: packets, ports (output queue + link), switches, routing, topologies.
//! - [`transport`]: host protocols (TCP NewReno, DCTCP, ...), one file each.
//! - [`workload`]: flow-size distributions and traffic patterns.
//! - [`metrics`]: flow records, counters, ideal FCT and summaries.

pub mod config;
pub mod engine;
pub mod error;
pub mod metrics;
pub mod net;
pub mod output;
pub mod sim;
pub mod time;
pub mod transport;
pub mod workload;

pub use error::{Error, Result};
pub use time::{Duration, Rate, Time};
