//! Pipelined timeslot allocation over several cores (Fastpass §3.3,
//! Fig. 3: "the allocator for timeslot t processes the demands not fully
//! satisfied by the allocator for t − 1").
//!
//! A batch of timeslots is cut into windows of up to 64 slots; window `w`
//! belongs to worker `w mod W`, so the workers form a ring. Worker 0 (the
//! calling thread) takes the pending demands in priority order, grants what
//! it can in its window and forwards the demands that still want slots,
//! chunk by chunk and in order, to the worker of the next window, which
//! starts on the first chunk while worker 0 is still on the second. The last
//! window's leftovers come back to the calling thread, which moves the pairs
//! granted in this batch behind the others (the fairness order is updated
//! per batch).
//!
//! Each worker owns its window's free-slot masks and output buffers; the
//! only thing shared is the channel between neighbours, so the per-slot path
//! takes no lock. A demand's grants in a window depend only on the demands
//! ahead of it and on what it still wants, so the result is identical to
//! [`Allocator::allocate_batch`] on one thread, for any worker count and
//! window size (the tests check this).

use crate::alloc::{
    check_batch, grant_window, split_granted, Allocator, Batch, Demand, Masks, Order,
};
use crate::error::ArbiterError;
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

/// Messages along the ring.
enum ToWorker {
    /// A new batch (to worker threads): its shape, and the output buffers
    /// of this worker's windows (in window order).
    Begin {
        n: usize,
        first_slot: u64,
        slots: usize,
        window: usize,
        buffers: Vec<Vec<(u32, u32)>>,
    },
    /// Demands left by the previous window, in priority order.
    Chunk(Vec<Demand>),
    /// The previous window has no more demands to hand over.
    End,
    /// Shut down.
    Stop,
}

/// Messages to the calling thread.
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

/// Receive, spinning before blocking: a neighbour's next chunk, or the next
/// batch, is usually closer than a sleep and wake-up. After a short pure
/// spin it yields between tries, so that on a machine with fewer free cores
/// than workers the neighbour gets to run.
fn recv_spin<T>(rx: &Receiver<T>, spins: u32) -> Result<T, ()> {
    for i in 0..spins {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Empty) if i < 256 => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
            Err(TryRecvError::Disconnected) => return Err(()),
        }
    }
    rx.recv().map_err(|_| ())
}

const SPIN_CHUNK: u32 = 5_000;
const SPIN_BATCH: u32 = 5_000;

/// A worker thread: windows `id`, `id + W`, ... of each batch.
fn worker(
    id: usize,
    workers: usize,
    rx: Receiver<ToWorker>,
    next: Sender<ToWorker>,
    main: Sender<ToMain>,
) {
    let mut masks = Masks::default();
    // Nothing to do but return when the pipeline is dropped (Stop) or a
    // neighbour died (a send fails).
    let _ = (|| -> Result<(), ()> {
        loop {
            let ToWorker::Begin {
                n,
                first_slot,
                slots,
                window,
                mut buffers,
            } = recv_spin(&rx, SPIN_BATCH)?
            else {
                return Err(());
            };
            let windows = slots.div_ceil(window);
            for w in (id..windows).step_by(workers) {
                let start = w * window;
                let width = window.min(slots - start);
                masks.reset_all(n, width);
                let mut out: Vec<Vec<(u32, u32)>> = buffers.drain(..width).collect();
                let base = first_slot + start as u64;
                let mut finished = Vec::new();
                let last = w + 1 == windows;
                loop {
                    match recv_spin(&rx, SPIN_CHUNK)? {
                        ToWorker::Chunk(mut v) => {
                            grant_window(&mut v, &mut masks, base, &mut out, &mut finished);
                            if v.is_empty() {
                                continue;
                            }
                            if last {
                                main.send(ToMain::Chunk(v)).map_err(|_| ())?;
                            } else {
                                next.send(ToWorker::Chunk(v)).map_err(|_| ())?;
                            }
                        }
                        ToWorker::End => {
                            if last {
                                main.send(ToMain::End).map_err(|_| ())?;
                            } else {
                                next.send(ToWorker::End).map_err(|_| ())?;
                            }
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

/// A ring of workers — the calling thread and `workers − 1` threads — that
/// allocates batches of timeslots for an [`Allocator`], with the same
/// result as [`Allocator::allocate_batch`].
pub struct Pipeline {
    /// Worker threads 1..W (worker 0 is the calling thread).
    threads: Vec<WorkerHandle>,
    /// Worker 0's input from worker W − 1.
    ring_rx: Receiver<ToWorker>,
    from_workers: Receiver<ToMain>,
    window: usize,
    chunk: Option<usize>,
    masks: Masks,
    /// Demand-chunk buffers, recycled.
    pool: Vec<Vec<Demand>>,
    failed: bool,
}

impl Pipeline {
    /// A ring of `workers` workers (the calling thread and `workers − 1`
    /// threads); each allocates windows of `window` slots (1 to 64).
    pub fn new(workers: usize, window: usize) -> Result<Self, ArbiterError> {
        if workers == 0 || window == 0 || window > crate::WINDOW_SLOTS {
            return Err(ArbiterError::BadPipeline { workers, window });
        }
        let (to_main, from_workers) = channel();
        let (ring_tx, ring_rx) = channel();
        let mut txs = Vec::with_capacity(workers);
        let mut rxs = Vec::with_capacity(workers);
        for _ in 1..workers {
            let (tx, rx) = channel();
            txs.push(tx);
            rxs.push(rx);
        }
        let mut threads = Vec::with_capacity(workers);
        for (i, rx) in rxs.into_iter().enumerate() {
            let id = i + 1;
            let next = if id + 1 < workers {
                txs[i + 1].clone()
            } else {
                ring_tx.clone()
            };
            let main = to_main.clone();
            let join = std::thread::Builder::new()
                .name(format!("fastpass-alloc-{id}"))
                .spawn(move || worker(id, workers, rx, next, main))
                .map_err(|_| ArbiterError::WorkerFailed)?;
            threads.push(WorkerHandle {
                tx: txs[i].clone(),
                join: Some(join),
            });
        }
        Ok(Pipeline {
            threads,
            ring_rx,
            from_workers,
            window,
            chunk: None,
            masks: Masks::default(),
            pool: Vec::new(),
            failed: false,
        })
    }

    /// Number of workers (the calling thread included).
    pub fn workers(&self) -> usize {
        self.threads.len() + 1
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
    /// [`crate::MAX_BATCH_SLOTS`]) on the workers. Same result and same
    /// allocator state afterwards as `alloc.allocate_batch(slots)`.
    pub fn allocate<'a>(
        &mut self,
        alloc: &'a mut Allocator,
        slots: usize,
    ) -> Result<&'a Batch, ArbiterError> {
        check_batch(slots)?;
        if self.failed {
            return Err(ArbiterError::WorkerFailed);
        }
        if self.threads.is_empty() {
            return alloc.allocate_batch(slots);
        }
        if self.run(alloc, slots).is_err() {
            self.failed = true;
            return Err(ArbiterError::WorkerFailed);
        }
        Ok(alloc.batch())
    }

    fn run(&mut self, alloc: &mut Allocator, slots: usize) -> Result<(), ()> {
        alloc.begin_batch(slots);
        let list = alloc.take_pending();
        let windows = slots.div_ceil(self.window);
        let chunk = self
            .chunk
            .unwrap_or_else(|| (list.len() / (8 * self.workers())).clamp(32, 1024));
        self.hand_out_windows(alloc, slots)?;
        let mut left = Leftovers {
            lra: alloc.order() == Order::LeastRecentlyAllocated,
            first_slot: alloc.batch().first_slot(),
            keep: alloc.take_spare(),
            granted: alloc.take_granted_buf(),
        };
        left.keep.reserve(list.len());
        let mut finished_by_window: Vec<Vec<Demand>> = vec![Vec::new(); windows];
        self.run_own_windows(
            alloc,
            slots,
            list,
            chunk,
            &mut left,
            &mut finished_by_window,
        )?;
        self.collect_windows(alloc, windows, &mut left, &mut finished_by_window)?;
        let workers = self.workers();
        for (w, f) in finished_by_window.iter().enumerate() {
            if w % workers == 0 {
                alloc.retire(f);
            }
            alloc.push_finished_pairs(f);
        }
        alloc.end_batch(left.keep, left.granted);
        Ok(())
    }

    /// Hand each worker thread the output buffers of its windows (every
    /// window `w` with `w % workers != 0`; the calling thread keeps the
    /// others).
    fn hand_out_windows(&mut self, alloc: &mut Allocator, slots: usize) -> Result<(), ()> {
        let (n, first_slot) = (alloc.endpoints(), alloc.batch().first_slot());
        let (workers, window) = (self.workers(), self.window);
        let windows = slots.div_ceil(window);
        let batch = alloc.batch_mut();
        let mut per_worker: Vec<Vec<Vec<(u32, u32)>>> = vec![Vec::new(); workers];
        for w in (0..windows).filter(|w| w % workers != 0) {
            let start = w * window;
            let end = (start + window).min(slots);
            for s in &mut batch.slots_mut()[start..end] {
                per_worker[w % workers].push(std::mem::take(s));
            }
        }
        for (id, buffers) in per_worker.into_iter().enumerate().take(windows).skip(1) {
            self.threads[id - 1]
                .tx
                .send(ToWorker::Begin {
                    n,
                    first_slot,
                    slots,
                    window,
                    buffers,
                })
                .map_err(|_| ())?;
        }
        Ok(())
    }

    /// Worker 0's windows, on this thread: the first takes the pending
    /// list in chunks, the later ones what the last worker passes on; each
    /// passes its leftovers to the next worker, the batch's last window to
    /// `left`.
    fn run_own_windows(
        &mut self,
        alloc: &mut Allocator,
        slots: usize,
        list: Vec<Demand>,
        chunk: usize,
        left: &mut Leftovers,
        finished_by_window: &mut [Vec<Demand>],
    ) -> Result<(), ()> {
        let (n, first_slot) = (alloc.endpoints(), alloc.batch().first_slot());
        let (workers, window) = (self.workers(), self.window);
        let windows = slots.div_ceil(window);
        let to_next = &self.threads[0].tx;
        let mut list = Some(list);
        for w in (0..windows).step_by(workers) {
            let start = w * window;
            let width = window.min(slots - start);
            self.masks.reset_all(n, width);
            let base = first_slot + start as u64;
            let out = &mut alloc.batch_mut().slots_mut()[start..start + width];
            let finished = &mut finished_by_window[w];
            let last = w + 1 == windows;
            let mut emit = |mut v: Vec<Demand>, pool: &mut Vec<Vec<Demand>>| -> Result<(), ()> {
                if last || v.is_empty() {
                    left.route(&v);
                    v.clear();
                    pool.push(v);
                    Ok(())
                } else {
                    to_next.send(ToWorker::Chunk(v)).map_err(|_| ())
                }
            };
            if let Some(list) = list.take() {
                for part in list.chunks(chunk) {
                    let mut v = self.pool.pop().unwrap_or_default();
                    v.extend_from_slice(part);
                    grant_window(&mut v, &mut self.masks, base, out, finished);
                    emit(v, &mut self.pool)?;
                }
                alloc.recycle(list);
            } else {
                loop {
                    match recv_spin(&self.ring_rx, SPIN_CHUNK)? {
                        ToWorker::Chunk(mut v) => {
                            grant_window(&mut v, &mut self.masks, base, out, finished);
                            emit(v, &mut self.pool)?;
                        }
                        ToWorker::End => break,
                        _ => return Err(()),
                    }
                }
            }
            if !last {
                to_next.send(ToWorker::End).map_err(|_| ())?;
            }
        }
        Ok(())
    }

    /// Collect the other workers' windows and the last window's
    /// leftovers; retire what the other workers' windows finished.
    fn collect_windows(
        &mut self,
        alloc: &mut Allocator,
        windows: usize,
        left: &mut Leftovers,
        finished_by_window: &mut [Vec<Demand>],
    ) -> Result<(), ()> {
        let (workers, window) = (self.workers(), self.window);
        let mut ended = (windows - 1) % workers == 0;
        let mut done = windows.div_ceil(workers);
        while !(ended && done == windows) {
            match recv_spin(&self.from_workers, SPIN_CHUNK)? {
                ToMain::Chunk(mut v) => {
                    left.route(&v);
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
        Ok(())
    }
}

/// What the batch's last window left ungranted, sorted for the next batch:
/// for LRA, pairs granted in this batch go behind the others.
struct Leftovers {
    lra: bool,
    first_slot: u64,
    keep: Vec<Demand>,
    granted: Vec<Demand>,
}

impl Leftovers {
    fn route(&mut self, v: &[Demand]) {
        if self.lra {
            split_granted(v, self.first_slot, &mut self.keep, &mut self.granted);
        } else {
            self.keep.extend_from_slice(v);
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        for t in &self.threads {
            let _ = t.tx.send(ToWorker::Stop);
        }
        for t in &mut self.threads {
            if let Some(j) = t.join.take() {
                let _ = j.join();
            }
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
                    // Drained pairs are reported window by window: the
                    // same set, in an order that depends on the window.
                    let mut f1 = serial.finished_pairs().to_vec();
                    let mut f2 = piped.finished_pairs().to_vec();
                    if window == 64 {
                        assert_eq!(f1, f2);
                    }
                    f1.sort_unstable();
                    f2.sort_unstable();
                    assert_eq!(f1, f2);
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
