//! Pipelined timeslot allocation over several cores (Fastpass §3.3,
//! Fig. 3: "the allocator for timeslot t processes the demands not fully
//! satisfied by the allocator for t − 1").
//!
//! A batch of timeslots is cut into windows of up to 64 slots; window `w`
//! belongs to worker `w mod W`, so the workers form a ring. Worker 0 takes
//! the pending demands in priority order, grants what it can in its window
//! and forwards the demands that still want slots, chunk by chunk and in
//! order, to the worker of the next window, which starts on the first chunk
//! while worker 0 is still on the second; the last window's leftovers come
//! back to the caller's thread, which moves the pairs granted in this batch
//! behind the others (the fairness order is updated per batch) while the
//! workers are still running.
//!
//! Each worker owns its window's free-slot masks and output buffers; the
//! only thing shared is the channel between neighbours, so the per-slot path
//! takes no lock. A demand's grants in a window depend only on the demands
//! ahead of it and on what it still wants, so the result is identical to
//! [`Allocator::allocate_batch`] on one thread, for any worker count and
//! window size (the tests check this).

use crate::alloc::{check_batch, grant_window, Allocator, Batch, Demand, Masks, Order};
use crate::error::ArbiterError;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

/// Messages to a worker.
enum ToWorker {
    /// A new batch: its windows, and the output buffers of this worker's
    /// windows (in window order).
    Begin {
        n: usize,
        first_slot: u64,
        slots: usize,
        window: usize,
        chunk: usize,
        buffers: Vec<Vec<(u32, u32)>>,
        pool: Vec<Vec<Demand>>,
    },
    /// Worker 0 only: the whole pending list, the input of window 0.
    List(Vec<Demand>),
    /// Demands left by the previous window, in priority order.
    Chunk(Vec<Demand>),
    /// The previous window has no more demands to hand over.
    End,
    /// Shut down.
    Stop,
}

/// Messages to the caller's thread.
enum ToMain {
    /// Demands left after the last window.
    Chunk(Vec<Demand>),
    /// The last window has handed over everything.
    End,
    /// A finished window: its slots' grants and the demands it drained.
    Window {
        index: usize,
        buffers: Vec<Vec<(u32, u32)>>,
        finished: Vec<Demand>,
    },
}

/// Where a worker sends what its window leaves.
enum Next<'a> {
    Worker(&'a Sender<ToWorker>),
    Main(&'a Sender<ToMain>),
}

impl Next<'_> {
    fn chunk(&self, v: Vec<Demand>) -> Result<(), ()> {
        match self {
            Next::Worker(s) => s.send(ToWorker::Chunk(v)).map_err(|_| ()),
            Next::Main(s) => s.send(ToMain::Chunk(v)).map_err(|_| ()),
        }
    }
    fn end(&self) -> Result<(), ()> {
        match self {
            Next::Worker(s) => s.send(ToWorker::End).map_err(|_| ()),
            Next::Main(s) => s.send(ToMain::End).map_err(|_| ()),
        }
    }
}

/// Receive, spinning briefly before blocking: a neighbour's next chunk is
/// usually a fraction of a microsecond away, less than a sleep and wake-up.
fn recv_spin<T>(rx: &Receiver<T>) -> Result<T, ()> {
    for _ in 0..2000 {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Empty) => std::hint::spin_loop(),
            Err(TryRecvError::Disconnected) => return Err(()),
        }
    }
    rx.recv().map_err(|_| ())
}

fn worker(
    id: usize,
    workers: usize,
    rx: Receiver<ToWorker>,
    next: Sender<ToWorker>,
    main: Sender<ToMain>,
) {
    let mut masks = Masks::default();
    // Nothing to do but return when the pipeline is dropped (channel
    // closed) or a neighbour died (a send fails).
    let _ = (|| -> Result<(), ()> {
        loop {
            let ToWorker::Begin {
                n,
                first_slot,
                slots,
                window,
                chunk,
                mut buffers,
                mut pool,
            } = rx.recv().map_err(|_| ())?
            else {
                return Err(());
            };
            let windows = slots.div_ceil(window);
            let mut mine = (id..windows).step_by(workers);
            while let Some(w) = mine.next() {
                let start = w * window;
                let width = window.min(slots - start);
                masks.reset_all(n, width);
                let mut out: Vec<Vec<(u32, u32)>> = buffers.drain(..width).collect();
                let base = first_slot + start as u64;
                let mut finished = Vec::new();
                let to = if w + 1 < windows {
                    Next::Worker(&next)
                } else {
                    Next::Main(&main)
                };
                loop {
                    match recv_spin(&rx)? {
                        ToWorker::List(list) => {
                            for part in list.chunks(chunk) {
                                let mut v = pool.pop().unwrap_or_default();
                                v.clear();
                                v.extend_from_slice(part);
                                grant_window(&mut v, &mut masks, base, &mut out, &mut finished);
                                if v.is_empty() {
                                    pool.push(v);
                                } else {
                                    to.chunk(v)?;
                                }
                            }
                            to.end()?;
                            break;
                        }
                        ToWorker::Chunk(mut v) => {
                            grant_window(&mut v, &mut masks, base, &mut out, &mut finished);
                            if !v.is_empty() {
                                to.chunk(v)?;
                            }
                        }
                        ToWorker::End => {
                            to.end()?;
                            break;
                        }
                        ToWorker::Begin { .. } | ToWorker::Stop => return Err(()),
                    }
                }
                main.send(ToMain::Window {
                    index: w,
                    buffers: out,
                    finished,
                })
                .map_err(|_| ())?;
            }
        }
    })();
}

struct WorkerHandle {
    tx: Sender<ToWorker>,
    join: Option<JoinHandle<()>>,
}

/// A ring of worker threads that allocates batches of timeslots for an
/// [`Allocator`], with the same result as [`Allocator::allocate_batch`].
pub struct Pipeline {
    workers: Vec<WorkerHandle>,
    from_workers: Receiver<ToMain>,
    window: usize,
    chunk: Option<usize>,
    /// Demand-chunk buffers returned by the last window, for worker 0.
    pool: Vec<Vec<Demand>>,
    failed: bool,
}

impl Pipeline {
    /// Start `workers` threads; each allocates windows of `window` slots
    /// (1 to 64).
    pub fn new(workers: usize, window: usize) -> Result<Self, ArbiterError> {
        if workers == 0 || window == 0 || window > crate::WINDOW_SLOTS {
            return Err(ArbiterError::BadPipeline { workers, window });
        }
        let (to_main, from_workers) = channel();
        let mut txs = Vec::with_capacity(workers);
        let mut rxs = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (tx, rx) = channel();
            txs.push(tx);
            rxs.push(rx);
        }
        let mut handles = Vec::with_capacity(workers);
        for (id, rx) in rxs.into_iter().enumerate() {
            let next = txs[(id + 1) % workers].clone();
            let main = to_main.clone();
            let join = std::thread::Builder::new()
                .name(format!("fastpass-alloc-{id}"))
                .spawn(move || worker(id, workers, rx, next, main))
                .map_err(|_| ArbiterError::WorkerFailed)?;
            handles.push(WorkerHandle {
                tx: txs[id].clone(),
                join: Some(join),
            });
        }
        Ok(Pipeline {
            workers: handles,
            from_workers,
            window,
            chunk: None,
            pool: Vec::new(),
            failed: false,
        })
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Slots per worker window.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Demands per hand-over chunk; `None` (the default) picks about
    /// 1/(8 × workers) of the pending list, between 32 and 1024.
    pub fn set_chunk(&mut self, chunk: Option<usize>) {
        self.chunk = chunk.map(|c| c.max(1));
    }

    /// Allocate the next `slots` timeslots of `alloc` (1 to
    /// [`crate::MAX_BATCH_SLOTS`]) on the worker threads. Same result and
    /// same allocator state afterwards as `alloc.allocate_batch(slots)`.
    pub fn allocate<'a>(
        &mut self,
        alloc: &'a mut Allocator,
        slots: usize,
    ) -> Result<&'a Batch, ArbiterError> {
        check_batch(slots)?;
        if self.failed {
            return Err(ArbiterError::WorkerFailed);
        }
        let r = self.run(alloc, slots);
        if r.is_err() {
            self.failed = true;
        }
        r?;
        Ok(alloc.batch())
    }

    fn run(&mut self, alloc: &mut Allocator, slots: usize) -> Result<(), ArbiterError> {
        alloc.begin_batch(slots);
        let list = alloc.take_pending();
        let n = alloc.endpoints();
        let first_slot = alloc.batch().first_slot();
        let workers = self.workers.len();
        let window = self.window;
        let windows = slots.div_ceil(window);
        let chunk = self
            .chunk
            .unwrap_or_else(|| (list.len() / (8 * workers)).clamp(32, 1024));
        // Hand each worker the output buffers of its windows.
        let batch = alloc.batch_mut();
        let mut per_worker: Vec<Vec<Vec<(u32, u32)>>> = vec![Vec::new(); workers];
        for w in 0..windows {
            let start = w * window;
            let end = (start + window).min(slots);
            for s in &mut batch.slots_mut()[start..end] {
                per_worker[w % workers].push(std::mem::take(s));
            }
        }
        let lost = |_| ArbiterError::WorkerFailed;
        for (id, buffers) in per_worker.into_iter().enumerate().take(windows) {
            let pool = if id == 0 {
                std::mem::take(&mut self.pool)
            } else {
                Vec::new()
            };
            self.workers[id]
                .tx
                .send(ToWorker::Begin {
                    n,
                    first_slot,
                    slots,
                    window,
                    chunk,
                    buffers,
                    pool,
                })
                .map_err(lost)?;
        }
        self.workers[0]
            .tx
            .send(ToWorker::List(list))
            .map_err(lost)?;
        // Collect: leftovers in order (LRA: granted ones set aside), and the
        // windows' grants as they finish.
        let mut keep = Vec::new();
        let mut granted = alloc.take_granted_buf();
        let mut finished_by_window: Vec<Vec<Demand>> = vec![Vec::new(); windows];
        let (mut ended, mut done) = (false, 0);
        let lra = alloc.order() == Order::LeastRecentlyAllocated;
        while !(ended && done == windows) {
            // Block: spinning here would take a core from the workers.
            match self
                .from_workers
                .recv()
                .map_err(|_| ArbiterError::WorkerFailed)?
            {
                ToMain::Chunk(mut v) => {
                    if lra {
                        for d in &v {
                            if d.last > first_slot {
                                granted.push(*d);
                            } else {
                                keep.push(*d);
                            }
                        }
                    } else {
                        keep.extend_from_slice(&v);
                    }
                    v.clear();
                    self.pool.push(v);
                }
                ToMain::End => ended = true,
                ToMain::Window {
                    index,
                    buffers,
                    finished,
                } => {
                    let start = index * window;
                    for (slot, buf) in alloc.batch_mut().slots_mut()[start..]
                        .iter_mut()
                        .zip(buffers)
                    {
                        *slot = buf;
                    }
                    alloc.retire(&finished);
                    finished_by_window[index] = finished;
                    done += 1;
                }
            }
        }
        for f in &mut finished_by_window {
            alloc.push_finished_pairs(f);
        }
        alloc.end_batch(keep, granted);
        Ok(())
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        for w in &self.workers {
            let _ = w.tx.send(ToWorker::Stop);
        }
        let joins: Vec<_> = self
            .workers
            .iter_mut()
            .filter_map(|w| w.join.take())
            .collect();
        self.workers.clear();
        for j in joins {
            let _ = j.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn random_demand(a: &mut Allocator, rng: &mut Xoshiro256PlusPlus, k: usize, max: u64) {
        let n = a.endpoints() as u64;
        for _ in 0..k {
            let s = rng.next_u64() % n;
            let d = (s + 1 + rng.next_u64() % (n - 1)) % n;
            a.add_demand(s as u32, d as u32, (1 + rng.next_u64() % max) as u32);
        }
    }

    fn snapshot(b: &Batch) -> Vec<Vec<(u32, u32)>> {
        b.iter().map(|s| s.to_vec()).collect()
    }

    #[test]
    fn pipeline_output_equals_serial_output() {
        for order in [
            Order::LeastRecentlyAllocated,
            Order::Fifo,
            Order::ShortestFirst,
        ] {
            for (workers, window, slots) in [
                (1, 64, 64),
                (2, 64, 128),
                (3, 16, 100),
                (4, 7, 64),
                (2, 64, 1),
            ] {
                let mut serial = Allocator::new(64, order);
                let mut piped = Allocator::new(64, order);
                let mut p = Pipeline::new(workers, window).unwrap();
                p.set_chunk(Some(5));
                let mut r1 = Xoshiro256PlusPlus::seed_from_u64(9);
                let mut r2 = Xoshiro256PlusPlus::seed_from_u64(9);
                for round in 0..6 {
                    random_demand(&mut serial, &mut r1, 150, 40);
                    random_demand(&mut piped, &mut r2, 150, 40);
                    let a = snapshot(serial.allocate_batch(slots).unwrap());
                    let b = snapshot(p.allocate(&mut piped, slots).unwrap());
                    assert_eq!(
                        a, b,
                        "{order:?} {workers} workers, window {window}, round {round}"
                    );
                    assert_eq!(serial.finished_pairs(), piped.finished_pairs());
                    assert_eq!(serial.pending_slots(), piped.pending_slots());
                    assert!(serial.pending_demands().eq(piped.pending_demands()));
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(Pipeline::new(0, 64).is_err());
        assert!(Pipeline::new(2, 0).is_err());
        assert!(Pipeline::new(2, 65).is_err());
        let mut p = Pipeline::new(2, 64).unwrap();
        let mut a = Allocator::new(8, Order::Fifo);
        assert!(p.allocate(&mut a, 0).is_err());
        // Still usable after a refused call.
        a.add_demand(0, 1, 3);
        assert_eq!(p.allocate(&mut a, 4).unwrap().allocated(), 3);
    }
}
