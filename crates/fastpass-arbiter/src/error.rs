//! Errors for bad input to the arbiter. Every variant is the caller's
//! mistake and leaves the arbiter's state unchanged (nothing is half-done),
//! except [`ArbiterError::WorkerFailed`], after which the pipeline is unusable.

use thiserror::Error;

/// Why an arbiter call was refused.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ArbiterError {
    /// An allocator was asked for more endpoints than it supports.
    #[error("{requested} endpoints requested; at most {max} are supported")]
    TooManyEndpoints { requested: usize, max: usize },
    /// An endpoint id is not below the number of endpoints.
    #[error("endpoint {endpoint} is out of range (the arbiter has {endpoints} endpoints)")]
    EndpointOutOfRange { endpoint: u32, endpoints: usize },
    /// A demand from an endpoint to itself.
    #[error("endpoint {endpoint} cannot send to itself")]
    SelfDemand { endpoint: u32 },
    /// Adding the demand would overflow the pending-slot counter.
    #[error("demand overflow: more than 2^64 pending timeslots")]
    DemandOverflow,
    /// A batch must have between 1 and `max` timeslots.
    #[error("a batch of {slots} timeslots; it must have 1 to {max}")]
    BadBatch { slots: usize, max: usize },
    /// A pipeline needs at least one worker and a window of 1 to 64 slots.
    #[error("bad pipeline shape: {workers} workers, window of {window} slots (need >= 1 worker, 1..=64 slots)")]
    BadPipeline { workers: usize, window: usize },
    /// Path selection: a vertex (rack) id is out of range.
    #[error("rack {rack} is out of range ({racks} racks)")]
    RackOutOfRange { rack: u32, racks: usize },
    /// Path selection: a host id is out of range of the topology.
    #[error("host {host} is out of range ({hosts} hosts)")]
    HostOutOfRange { host: u32, hosts: usize },
    /// Path selection: a rack has more packets in the slot than its core
    /// links carry (core switches × packets per link), so some link would
    /// be over capacity.
    #[error("a rack has {degree} packets in one slot but its core links carry only {colours}")]
    TooFewColours { degree: usize, colours: usize },
    /// Path selection: the topology is empty or its core links carry more
    /// packets per slot than the bitmask engine supports.
    #[error("bad topology: {racks} racks x {hosts_per_rack} hosts, {cores} cores of {capacity} packets per slot (need >= 1 of each, cores x capacity <= 64)")]
    BadTopology {
        racks: usize,
        hosts_per_rack: u32,
        cores: usize,
        capacity: usize,
    },
    /// A pipeline worker thread died (a bug); the pipeline cannot be used.
    #[error("a pipeline worker thread stopped unexpectedly")]
    WorkerFailed,
}
