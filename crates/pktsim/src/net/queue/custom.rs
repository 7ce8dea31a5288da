//! Disciplines defined outside the library (in a test, an example or a
//! program that links pktsim), named from configs as
//! `{ kind = "custom", name = "..." }`.
//!
//! The program registers a factory under a name once, with one line:
//! `pktsim::net::queue::register("lifo", || Box::new(Lifo::default()))`;
//! every port the config gives that queue then holds a fresh one. The
//! config names what ran (the resolved config and `summary.json` say
//! `custom` and the name), validation refuses a name nobody registered,
//! and the per-packet dispatch of the library's own disciplines is
//! untouched: a custom queue is a boxed variant of [`super::Queue`], a
//! virtual call on the cold path.
//!
//! The registry is process-wide, so a name means one discipline for the
//! whole process: registering a name again replaces its factory (a test
//! registering its own toy on every run stays idempotent). Factories must
//! be deterministic (no clock, no unseeded randomness), as everything in a
//! run is.

use super::{Dequeue, Discipline, Drops};
use crate::packet::Packet;
use crate::time::Time;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Builds an empty queue of a custom discipline, one per port.
pub type Factory = fn() -> Box<dyn Discipline + Send>;

/// Registered factories by name (a `BTreeMap`, so the names listed in an
/// error come in one order).
static REGISTRY: Mutex<BTreeMap<String, Factory>> = Mutex::new(BTreeMap::new());

/// The registry, even if a thread panicked while holding it (it holds
/// only plain data, which a panic cannot leave half-written).
fn registry() -> std::sync::MutexGuard<'static, BTreeMap<String, Factory>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Make `name` a queue kind that configs can select with
/// `{ kind = "custom", name = "<name>" }`; replaces an earlier factory of
/// the same name.
pub fn register(name: &str, factory: Factory) {
    registry().insert(name.to_string(), factory);
}

/// The factory registered under `name`.
pub fn factory(name: &str) -> Option<Factory> {
    registry().get(name).copied()
}

/// The registered names, sorted (for error messages).
pub fn registered() -> Vec<String> {
    registry().keys().cloned().collect()
}

/// A port's queue of a custom discipline: the discipline behind a virtual
/// call, and the name it was registered under (for `Debug`).
pub struct CustomQueue {
    name: String,
    q: Box<dyn Discipline + Send>,
}

impl CustomQueue {
    /// An empty queue of the discipline registered as `name`, or `None`
    /// if nothing is registered under it.
    pub fn new(name: &str) -> Option<Self> {
        let make = factory(name)?;
        Some(CustomQueue {
            name: name.to_string(),
            q: make(),
        })
    }

    /// The name the discipline was registered under.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Debug for CustomQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomQueue")
            .field("name", &self.name)
            .field("len", &self.q.len())
            .field("bytes", &self.q.bytes())
            .finish()
    }
}

/// Every call goes to the registered discipline, defaults included, so
/// that it behaves exactly as it would as a library variant.
impl Discipline for CustomQueue {
    fn enqueue(&mut self, pkt: Packet, now: Time, limit: u64, drops: &mut Drops) -> u32 {
        self.q.enqueue(pkt, now, limit, drops)
    }
    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<Packet> {
        self.q.dequeue(now, drops)
    }
    fn poll(&mut self, now: Time, drops: &mut Drops) -> Dequeue {
        self.q.poll(now, drops)
    }
    fn admits(&self, pkt: &Packet, limit: u64) -> bool {
        self.q.admits(pkt, limit)
    }
    fn schedules_by_priority(&self) -> bool {
        self.q.schedules_by_priority()
    }
    fn bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    fn drain(&mut self) -> Vec<Packet> {
        self.q.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::FifoQueue;

    #[test]
    fn a_registered_name_builds_its_discipline_and_an_unknown_one_nothing() {
        register("custom_rs_fifo", || Box::new(FifoQueue::new(1, None)));
        let mut q = CustomQueue::new("custom_rs_fifo").expect("registered");
        assert_eq!(q.name(), "custom_rs_fifo");
        let mut d = Drops::new();
        q.enqueue(Packet::test_data(0, 1000, 0), Time::ZERO, 1500, &mut d);
        q.enqueue(Packet::test_data(1, 1000, 0), Time::ZERO, 1500, &mut d);
        assert_eq!((q.len(), q.bytes(), d.len()), (1, 1000, 1));
        assert!(registered().contains(&"custom_rs_fifo".to_string()));
        assert!(CustomQueue::new("custom_rs_nobody").is_none());
    }
}
