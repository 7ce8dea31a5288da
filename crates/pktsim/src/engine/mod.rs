//! The discrete-event engine: a deterministic event queue and named, seeded
//! random streams. It knows nothing of packets or protocols; the simulation
//! in [`crate::sim`] defines its own event type and drives the loop.

pub mod event_queue;
pub mod rng;
pub mod windows;

pub use event_queue::{EventQueue, Popped, Tie};
pub use rng::{Rng, RngStreams};
pub use windows::{Piece, WindowEnd, Windows};
