//! The Fastpass arbiter (Perry et al., "Fastpass: A Centralized 'Zero-Queue'
//! Datacenter Network", SIGCOMM 2014) as a standalone library:
//!
//! - [`alloc`]: timeslot allocation, a greedy maximal matching of pending
//!   (source, destination) demands per timeslot (§3), one slot at a time or
//!   a batch of slots in one pass over the demands;
//! - [`pipeline`]: the same batch allocation spread over worker threads,
//!   each worker owning a window of slots and handing the demands it could
//!   not satisfy to the next (§3.3, Fig. 3);
//! - [`paths`]: path selection, an edge colouring of each timeslot's
//!   rack-to-rack multigraph so that no link carries two packets (§4).
//!
//! It has no dependency on the simulator; pktsim drives it through the same
//! API a real arbiter would use. Bad input is an [`ArbiterError`], never a
//! panic (the original panicking entry points `Allocator::new` and
//! `Allocator::add_demand` remain, with `try_` variants beside them).

pub mod alloc;
pub mod error;
pub mod paths;
pub mod pipeline;

pub use alloc::{Allocator, Batch, Order, MAX_BATCH_SLOTS, MAX_ENDPOINTS, WINDOW_SLOTS};
pub use error::ArbiterError;
pub use paths::{assign_cores, colour_edges, PathSelector, GREEDY_MAX_RACKS, NO_CORE};
pub use pipeline::Pipeline;
