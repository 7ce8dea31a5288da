//! Conservative windows over pieces (issue 33, step 2): the executor of a
//! partitioned run, independent of what the pieces simulate.
//!
//! Each piece has its own events. A window starts at the earliest pending
//! event of any piece and lasts the *lookahead*: no message one piece sends
//! another takes effect earlier than that after it is sent (for a network,
//! the smallest delay of a cut link). So within a window the pieces cannot
//! affect each other, and each runs its events up to the window's end on
//! its own, on whichever thread takes it. The messages they sent each other
//! are handed over when the next window starts, in a fixed order: by
//! sending piece, then in the order each piece sent them; each receiving
//! piece collects its own before it runs, on whichever thread runs it, so
//! the hand-over needs no barrier of its own (a window starts and ends at
//! one). The next window starts at the earliest of the pieces' pending
//! events and the messages' arrivals, which senders post as they send.
//!
//! Nothing here depends on the number of threads or on which thread ran a
//! piece: windows are set by event times and the lookahead, each piece's
//! run depends on its own state and the messages it received, and messages
//! arrive in piece order. Threads only change how long a window takes.
//!
//! Each piece has a home thread, which takes it first in every window, so
//! that its state stays in one core's caches; a thread done with its own
//! pieces takes any left. Within each, pieces go heaviest first (by the
//! events each ran in its last window, ties by piece number), so that a
//! window is not held up by a heavy piece started last
//! (longest-processing-time scheduling, as in Unison's kernel).

use crate::time::{Duration, Time};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};

/// One piece of a partitioned simulation.
pub trait Piece: Send {
    /// What pieces send each other (for a network: packets crossing a cut).
    type Message: Send;
    /// The time of this piece's earliest pending event.
    fn next_time(&mut self) -> Option<Time>;
    /// Run every pending event before `end` (events that these create
    /// before `end` too). A message for piece `p` goes to `out` as
    /// `(p, message)`; it must not take effect before `end`. Returns the
    /// number of events run.
    fn run_until(&mut self, end: Time, out: &mut Vec<(u32, Self::Message)>) -> u64;
    /// Take a message another piece sent in an earlier window.
    fn receive(&mut self, msg: Self::Message);
    /// When `msg` takes effect: once it is received, its receiver's
    /// earliest pending event is no later than this, and the window that
    /// follows the one it was sent in starts no later either.
    fn arrival(msg: &Self::Message) -> Time;
}

/// What the caller sees between windows, to decide whether to go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowEnd {
    /// Windows run so far.
    pub windows: u64,
    /// Events run so far, over all pieces.
    pub events: u64,
    /// The sum over the windows so far of the events of each window's
    /// busiest piece: the events that ran one after the other even with a
    /// thread per piece. `events / critical` bounds what any number of
    /// threads can gain over one from the balance of the pieces alone.
    pub critical: u64,
    /// The start of the next window: the earliest pending event of any
    /// piece (`None`: nothing is pending).
    pub next: Option<Time>,
}

/// A piece with what the executor keeps beside it.
struct Slot<P: Piece> {
    piece: P,
    /// What the piece sent in this window, as (to, message).
    out: Vec<(u32, P::Message)>,
    /// Events run in the piece's last window: its weight in the next.
    weight: u64,
    /// Events run in this window, not yet counted.
    ran: u64,
    /// Events run in every window so far.
    total: u64,
}

impl<P: Piece> Slot<P> {
    /// Hand the piece the messages in `inbox`, in order; returns its
    /// earliest pending event then (`Time::MAX`: none).
    fn receive_all(&mut self, inbox: &mut Vec<P::Message>) -> Time {
        for msg in inbox.drain(..) {
            self.piece.receive(msg);
        }
        self.piece.next_time().unwrap_or(Time::MAX)
    }
}

/// What one piece sent in one window, by receiving piece.
type Mailbox<M> = Mutex<Vec<Vec<M>>>;

/// Pieces and the windows that run them.
pub struct Windows<P: Piece> {
    slots: Vec<Mutex<Slot<P>>>,
    /// The messages of the last two windows, by the window's parity, then
    /// by sending piece: a window's messages are written by their senders
    /// while it runs and taken by their receivers at the start of the next
    /// one, so that the hand-over needs no barrier of its own.
    mail: [Vec<Mailbox<P::Message>>; 2],
    /// Each piece's earliest pending event in picoseconds (`u64::MAX`:
    /// none), as of the end of its last run.
    own_next: Vec<AtomicU64>,
    /// The earliest arrival among the messages sent to each piece in the
    /// last window (`u64::MAX`: none), which it has not received yet.
    mail_next: Vec<AtomicU64>,
    lookahead: Duration,
    threads: usize,
    windows: u64,
    events: u64,
    /// See [`WindowEnd::critical`].
    critical: u64,
}

impl<P: Piece> Windows<P> {
    /// Run `pieces` in windows of `lookahead` (at least 1 ps) on `threads`
    /// threads (at least 1).
    pub fn new(pieces: Vec<P>, lookahead: Duration, threads: usize) -> Self {
        let n = pieces.len();
        let mut own_next = Vec::with_capacity(n);
        let slots = pieces
            .into_iter()
            .map(|mut piece| {
                own_next.push(AtomicU64::new(piece.next_time().unwrap_or(Time::MAX).0));
                Mutex::new(Slot {
                    piece,
                    out: Vec::new(),
                    weight: 0,
                    ran: 0,
                    total: 0,
                })
            })
            .collect();
        let mailboxes = || (0..n).map(|_| Mutex::new(Vec::new())).collect();
        Windows {
            slots,
            mail: [mailboxes(), mailboxes()],
            own_next,
            mail_next: (0..n).map(|_| AtomicU64::new(u64::MAX)).collect(),
            lookahead: Duration::from_ps(lookahead.ps().max(1)),
            threads: threads.max(1),
            windows: 0,
            events: 0,
            critical: 0,
        }
    }

    /// Run windows until `go_on` says stop (it sees where the run is before
    /// each window) or nothing is pending before `limit`. No window runs an
    /// event at or after `limit`. Every message sent is received before
    /// this returns.
    pub fn run(&mut self, limit: Time, mut go_on: impl FnMut(&WindowEnd) -> bool) -> WindowEnd {
        let threads = self.threads.min(self.slots.len()).max(1);
        let shared = Shared::new(threads, self.slots.len());
        let (mut windows, mut events, mut critical) = (self.windows, self.events, self.critical);
        let this = &*self;
        let report = std::thread::scope(|scope| {
            for thread in 1..threads {
                let shared = &shared;
                scope.spawn(move || {
                    while shared.start.wait() {
                        this.work(shared, thread);
                        shared.end.wait();
                    }
                });
            }
            let report = loop {
                let report = this.report(windows, events, critical);
                let start = match report.next {
                    Some(t) if t < limit && go_on(&report) => t,
                    _ => break report,
                };
                let end = Time(start.0.saturating_add(this.lookahead.ps())).min(limit);
                this.plan(&shared, end, windows);
                if threads > 1 {
                    shared.start.release(true);
                }
                this.work(&shared, 0);
                if threads > 1 {
                    shared.end.wait();
                }
                if let Some(panic) = shared.take_panic() {
                    // A piece panicked: let the other threads go, then
                    // carry the panic on as if the piece ran here.
                    if threads > 1 {
                        shared.start.release(false);
                    }
                    std::panic::resume_unwind(panic);
                }
                let (all, busiest) = this.count();
                events += all;
                critical += busiest;
                windows += 1;
            };
            if threads > 1 {
                shared.start.release(false);
            }
            report
        });
        (self.windows, self.events, self.critical) = (windows, events, critical);
        self.deliver_last_mail();
        report
    }

    /// Where the run is now: the next window starts at the earliest event
    /// any piece holds or any message it has yet to receive brings.
    fn report(&self, windows: u64, events: u64, critical: u64) -> WindowEnd {
        let earliest = (0..self.slots.len())
            .map(|i| self.next_of(i))
            .min()
            .unwrap_or(u64::MAX);
        WindowEnd {
            windows,
            events,
            critical,
            next: (earliest != u64::MAX).then_some(Time(earliest)),
        }
    }

    /// Piece `i`'s earliest pending event once it has its messages.
    fn next_of(&self, i: usize) -> u64 {
        let own = self.own_next[i].load(Ordering::Relaxed);
        own.min(self.mail_next[i].load(Ordering::Relaxed))
    }

    /// The pieces, in piece order (after a run, to collect their results).
    pub fn into_pieces(self) -> Vec<P> {
        self.slots
            .into_iter()
            .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()).piece)
            .collect()
    }

    /// A piece, between runs.
    pub fn piece_mut(&mut self, p: u32) -> &mut P {
        &mut self.slots[p as usize]
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .piece
    }

    /// Choose the pieces of window number `window` (ending at `end`):
    /// those with events before `end` and those with messages to take,
    /// heaviest first.
    fn plan(&self, shared: &Shared, end: Time, window: u64) {
        let mut order = shared.order.write().unwrap_or_else(|e| e.into_inner());
        order.clear();
        for i in 0..self.slots.len() {
            let has_mail = self.mail_next[i].load(Ordering::Relaxed) != u64::MAX;
            if has_mail || self.own_next[i].load(Ordering::Relaxed) < end.0 {
                order.push((lock(&self.slots[i]).weight, i as u32));
            }
            // This window's senders write the next window's arrivals.
            self.mail_next[i].store(u64::MAX, Ordering::Relaxed);
        }
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        shared.end_time.store(end.0, Ordering::Relaxed);
        shared.window.store(window, Ordering::Relaxed);
        for flag in &shared.ran {
            flag.store(false, Ordering::Relaxed);
        }
    }

    /// Take pieces of this window until none is left (every thread;
    /// `thread` numbers it): first this thread's own, then any other left
    /// ([`Shared::home`]). Each piece first takes the messages sent to it
    /// in the last window, by sending piece then in the order sent, then
    /// runs, then posts what it sent for the next window.
    fn work(&self, shared: &Shared, thread: usize) {
        let end = Time(shared.end_time.load(Ordering::Relaxed));
        let window = shared.window.load(Ordering::Relaxed);
        let (sent, last) = (window as usize % 2, (window as usize + 1) % 2);
        let order = shared.order.read().unwrap_or_else(|e| e.into_inner());
        let pieces = order.iter().map(|&(_, i)| i as usize);
        let mut inbox = Vec::new();
        for i in shared.take(&shared.ran, pieces, thread) {
            self.collect_mail(last, i, &mut inbox);
            let mut slot = lock(&self.slots[i]);
            let slot = &mut *slot;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                slot.receive_all(&mut inbox);
                let n = slot.piece.run_until(end, &mut slot.out);
                (n, slot.piece.next_time().unwrap_or(Time::MAX))
            }));
            if !slot.out.is_empty() {
                let mut boxes = self.mail[sent][i].lock().unwrap_or_else(|e| e.into_inner());
                if boxes.len() < self.slots.len() {
                    boxes.resize_with(self.slots.len(), Vec::new);
                }
                for (to, msg) in slot.out.drain(..) {
                    let at = P::arrival(&msg).0;
                    self.mail_next[to as usize].fetch_min(at, Ordering::Relaxed);
                    boxes[to as usize].push(msg);
                }
            }
            match run {
                Ok((n, next)) => {
                    (slot.weight, slot.ran) = (n, n);
                    self.own_next[i].store(next.0, Ordering::Relaxed);
                }
                Err(panic) => {
                    // Keep the threads in step; the coordinator re-raises it.
                    inbox.clear();
                    let mut first = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
                    first.get_or_insert(panic);
                }
            }
        }
    }

    /// Into `inbox`, the messages sent to piece `to` in the window of
    /// parity `parity`, by sending piece then in the order sent.
    fn collect_mail(&self, parity: usize, to: usize, inbox: &mut Vec<P::Message>) {
        for from in &self.mail[parity] {
            let mut boxes = from.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(msgs) = boxes.get_mut(to) {
                inbox.append(msgs);
            }
        }
    }

    /// Hand every piece the messages of the last window run, so that the
    /// pieces are whole between runs ([`Windows::into_pieces`],
    /// [`Windows::piece_mut`]) and the next run starts with no mail.
    fn deliver_last_mail(&mut self) {
        let Some(last) = self.windows.checked_sub(1) else {
            return;
        };
        let parity = last as usize % 2;
        let mut inbox = Vec::new();
        for to in 0..self.slots.len() {
            if self.mail_next[to].load(Ordering::Relaxed) == u64::MAX {
                continue;
            }
            self.collect_mail(parity, to, &mut inbox);
            let next = lock(&self.slots[to]).receive_all(&mut inbox);
            self.own_next[to].store(next.0, Ordering::Relaxed);
            self.mail_next[to].store(u64::MAX, Ordering::Relaxed);
        }
    }

    /// The events of the window that just ended: over all pieces, and
    /// those of its busiest piece.
    fn count(&self) -> (u64, u64) {
        self.slots
            .iter()
            .map(|s| {
                let mut slot = lock(s);
                slot.total += slot.ran;
                std::mem::take(&mut slot.ran)
            })
            .fold((0, 0), |(all, busiest), n| (all + n, busiest.max(n)))
    }

    /// The events each piece ran in all windows so far, in piece order.
    pub fn events_by_piece(&self) -> Vec<u64> {
        self.slots.iter().map(|s| lock(s).total).collect()
    }
}

/// Lock a slot. Only one thread ever wants a slot at a time (a piece is
/// taken once per window, and the coordinator touches slots only between
/// windows), so this never waits; a panic in a piece poisons nothing here.
fn lock<P: Piece>(m: &Mutex<Slot<P>>) -> std::sync::MutexGuard<'_, Slot<P>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the threads share during a run.
struct Shared {
    /// This window's pieces, heaviest first, as (weight, piece).
    order: RwLock<Vec<(u64, u32)>>,
    /// Pieces taken to run in this window, by piece.
    ran: Vec<AtomicBool>,
    /// Threads that run the window.
    threads: usize,
    end_time: AtomicU64,
    /// The number of the window (its parity picks the mailboxes).
    window: AtomicU64,
    start: Gate,
    end: Gate,
    /// The first panic of a piece in this window.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl Shared {
    fn new(threads: usize, pieces: usize) -> Self {
        Shared {
            order: RwLock::new(Vec::new()),
            ran: (0..pieces).map(|_| AtomicBool::new(false)).collect(),
            threads,
            end_time: AtomicU64::new(0),
            window: AtomicU64::new(0),
            start: Gate::new(threads),
            end: Gate::new(threads),
            panic: Mutex::new(None),
        }
    }

    /// The thread that takes piece `i` first, in every window: a piece
    /// then stays on one core, whose caches hold its state from one window
    /// to the next. Handed out from one shared counter, heaviest first, a
    /// piece moved between the two threads of a two-group run from window
    /// to window, and the state it found in the other core's caches made
    /// its events a third slower (BENCHMARKS.md, "Pieces that stay on
    /// their core"). A thread done with its own pieces takes any left, so
    /// the window still ends when the last piece does. Which thread runs
    /// a piece changes nothing in the results.
    fn home(&self, i: usize) -> usize {
        i % self.threads
    }

    /// The pieces of `pieces` that `thread` takes, in turn: its own first,
    /// then any no other thread has taken. `taken` marks each piece taken,
    /// so that exactly one thread takes it.
    fn take<'a>(
        &'a self,
        taken: &'a [AtomicBool],
        pieces: impl Iterator<Item = usize> + Clone + 'a,
        thread: usize,
    ) -> impl Iterator<Item = usize> + 'a {
        let own = pieces.clone().filter(move |&i| self.home(i) == thread);
        own.chain(pieces)
            .filter(move |&i| !taken[i].swap(true, Ordering::Relaxed))
    }

    fn take_panic(&self) -> Option<Box<dyn std::any::Any + Send>> {
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// A reusable barrier that spins briefly, then yields: windows are short,
/// and a sleeping thread takes longer to wake than most windows take.
struct Gate {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicU64,
    go_on: AtomicBool,
}

impl Gate {
    fn new(parties: usize) -> Self {
        Gate {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            go_on: AtomicBool::new(true),
        }
    }

    /// Wait until every party has arrived; returns the value the last
    /// `release` gave (whether to go on).
    fn wait(&self) -> bool {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.generation.load(Ordering::Acquire) == gen {
                if spins < 200 {
                    std::hint::spin_loop();
                    spins += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        }
        self.go_on.load(Ordering::Acquire)
    }

    /// Arrive as the coordinating party, telling the others whether to go on.
    fn release(&self, go_on: bool) {
        self.go_on.store(go_on, Ordering::Release);
        self.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EventQueue, Tie};

    /// A toy model: tokens walk a ring of pieces. Handling a token mixes it
    /// into its piece's state, and the state decides where the token goes
    /// next: back to its piece, at any delay (zero included), or to the next
    /// piece, no sooner than the lookahead. Any change in the order a piece
    /// handles its tokens changes every later decision, so equal logs mean
    /// equal orders.
    const LOOKAHEAD: u64 = 1_000;

    fn mix(mut x: u64) -> u64 {
        x ^= x >> 31;
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 29)
    }

    /// What handling one token does; the same function for the serial and
    /// the partitioned runs. Returns (piece, time) of the token's next stop.
    fn step(state: &mut u64, n: u32, piece: u32, now: Time, token: u32) -> Option<(u32, Time)> {
        *state = mix(*state ^ (token as u64) << 20 ^ now.0);
        if now.0 > 60_000 {
            return None;
        }
        let h = *state;
        if h % 3 == 0 {
            Some(((piece + 1) % n, Time(now.0 + LOOKAHEAD + h % 700)))
        } else {
            Some((piece, Time(now.0 + (h >> 8) % 3 * (h >> 16) % 900)))
        }
    }

    fn tie(piece: u32, token: u32) -> Tie {
        Tie::new(0, piece, token as u64)
    }

    struct Ring {
        id: u32,
        n: u32,
        state: u64,
        queue: EventQueue<u32>,
        log: Vec<(Time, u32)>,
    }

    impl Piece for Ring {
        type Message = (Time, u32);
        fn next_time(&mut self) -> Option<Time> {
            self.queue.peek_time()
        }
        fn run_until(&mut self, end: Time, out: &mut Vec<(u32, (Time, u32))>) -> u64 {
            let mut n = 0;
            while self.queue.peek_time().is_some_and(|t| t < end) {
                let Some((now, _, token)) = self.queue.pop() else {
                    break;
                };
                n += 1;
                self.log.push((now, token));
                match step(&mut self.state, self.n, self.id, now, token) {
                    Some((p, at)) if p == self.id => self.queue.schedule(at, tie(p, token), token),
                    Some((p, at)) => {
                        assert!(at >= end, "a message inside its window");
                        out.push((p, (at, token)));
                    }
                    None => {}
                }
            }
            n
        }
        fn receive(&mut self, (at, token): (Time, u32)) {
            self.queue.schedule(at, tie(self.id, token), token);
        }
        fn arrival(&(at, _): &(Time, u32)) -> Time {
            at
        }
    }

    const SALT: u64 = 0x5eed;

    fn tokens(n: u32) -> impl Iterator<Item = (u32, u32, Time)> {
        (0..n).flat_map(|p| (0..4).map(move |k| (p, p * 16 + k, Time(k as u64 * 10))))
    }

    /// The same model in one queue: every piece's log, and the event count.
    fn serial(n: u32) -> (Vec<Vec<(Time, u32)>>, u64) {
        let mut q = EventQueue::with_salt(SALT);
        for (p, token, at) in tokens(n) {
            q.schedule(at, tie(p, token), token);
        }
        let mut state = vec![0u64; n as usize];
        let mut logs = vec![Vec::new(); n as usize];
        let mut events = 0;
        while let Some((now, t, token)) = q.pop() {
            events += 1;
            let p = t.tie().owner();
            logs[p as usize].push((now, token));
            if let Some((to, at)) = step(&mut state[p as usize], n, p, now, token) {
                q.schedule(at, tie(to, token), token);
            }
        }
        (logs, events)
    }

    fn windowed(n: u32, threads: usize) -> (Vec<Vec<(Time, u32)>>, WindowEnd) {
        let mut pieces: Vec<Ring> = (0..n)
            .map(|id| Ring {
                id,
                n,
                state: 0,
                queue: EventQueue::with_salt(SALT),
                log: Vec::new(),
            })
            .collect();
        for (p, token, at) in tokens(n) {
            pieces[p as usize].receive((at, token));
        }
        let mut w = Windows::new(pieces, Duration::from_ps(LOOKAHEAD), threads);
        let end = w.run(Time::MAX, |_| true);
        assert_eq!(end.next, None);
        assert!(end.windows > 10, "{end:?}");
        let logs = w.into_pieces().into_iter().map(|p| p.log).collect();
        (logs, end)
    }

    /// The windows' critical events found from the serial logs alone: a
    /// window starts at the earliest event not yet run and holds every
    /// event before its start plus the lookahead; its busiest piece adds
    /// its events.
    fn critical_from_logs(logs: &[Vec<(Time, u32)>]) -> (u64, u64) {
        let mut all: Vec<(u64, usize)> = logs
            .iter()
            .enumerate()
            .flat_map(|(p, log)| log.iter().map(move |&(t, _)| (t.0, p)))
            .collect();
        all.sort_unstable();
        let (mut windows, mut critical, mut i) = (0, 0, 0);
        while i < all.len() {
            let end = all[i].0 + LOOKAHEAD;
            let mut per_piece = vec![0u64; logs.len()];
            while i < all.len() && all[i].0 < end {
                per_piece[all[i].1] += 1;
                i += 1;
            }
            windows += 1;
            critical += per_piece.into_iter().max().unwrap_or(0);
        }
        (windows, critical)
    }

    /// Any thread count gives the serial run's every event, in its order.
    #[test]
    fn windows_run_the_serial_order_on_any_number_of_threads() {
        for n in [1, 2, 5, 13] {
            let (logs, events) = serial(n);
            assert!(events > 100 * n as u64, "{events}");
            let (windows, critical) = critical_from_logs(&logs);
            for threads in [1, 2, 3, 8] {
                let (w_logs, end) = windowed(n, threads);
                assert_eq!(end.events, events, "{n} pieces, {threads} threads");
                assert!(w_logs == logs, "{n} pieces, {threads} threads");
                assert_eq!((end.windows, end.critical), (windows, critical));
            }
            // One piece runs every event in sequence; more share them.
            if n == 1 {
                assert_eq!(critical, events);
            } else {
                assert!(
                    critical < events && critical * n as u64 >= events,
                    "{critical}"
                );
            }
        }
    }

    struct Bomb(u32);

    impl Piece for Bomb {
        type Message = ();
        fn next_time(&mut self) -> Option<Time> {
            Some(Time(0))
        }
        fn run_until(&mut self, _: Time, _: &mut Vec<(u32, ())>) -> u64 {
            assert!(self.0 != 3, "piece 3 fails");
            1
        }
        fn receive(&mut self, _: ()) {}
        fn arrival(_: &()) -> Time {
            Time(0)
        }
    }

    /// A piece that panics on a worker thread fails the run, not hangs it.
    #[test]
    fn a_panicking_piece_fails_the_run() {
        for threads in [1, 4] {
            let run = std::panic::catch_unwind(|| {
                let mut w = Windows::new((0..8).map(Bomb).collect(), Duration::from_ps(5), threads);
                w.run(Time::MAX, |_| true)
            });
            assert!(run.is_err(), "{threads} threads");
        }
    }

    /// A caller can stop between windows, and go on later.
    #[test]
    fn a_run_stops_where_asked_and_resumes() {
        let (logs, events) = serial(4);
        let mut pieces: Vec<Ring> = (0..4)
            .map(|id| Ring {
                id,
                n: 4,
                state: 0,
                queue: EventQueue::with_salt(SALT),
                log: Vec::new(),
            })
            .collect();
        for (p, token, at) in tokens(4) {
            pieces[p as usize].receive((at, token));
        }
        let mut w = Windows::new(pieces, Duration::from_ps(LOOKAHEAD), 2);
        let first = w.run(Time(20_000), |_| true);
        assert!(first.next.is_some_and(|t| t >= Time(20_000)));
        let stopped = w.run(Time::MAX, |e| e.windows < first.windows + 3);
        assert_eq!(stopped.windows, first.windows + 3);
        let end = w.run(Time::MAX, |_| true);
        assert_eq!(end.events, events);
        let w_logs: Vec<_> = w.into_pieces().into_iter().map(|p| p.log).collect();
        assert!(w_logs == logs);
    }
}
