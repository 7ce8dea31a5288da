//! The Fastpass arbiter (Perry et al., "Fastpass: A Centralized 'Zero-Queue'
//! Datacenter Network", SIGCOMM 2014) as a standalone library:
//!
//! - [`alloc`]: timeslot allocation, a greedy maximal matching of pending
//!   (source, destination) demands per timeslot (§3);
//! - [`paths`]: path selection, an edge colouring of each timeslot's
//!   rack-to-rack multigraph so that no link carries two packets (§4).
//!
//! It has no dependency on the simulator; pktsim drives it through the same
//! API a real arbiter would use.

pub mod alloc;
pub mod paths;

pub use alloc::{Allocator, Order};
pub use paths::{assign_cores, colour_edges};
