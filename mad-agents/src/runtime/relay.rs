//! How the loop thread and the callers' threads that drive the port take
//! turns: the loop thread parks while callers drive, and a caller about
//! to block makes sure it watches the transport (see [`super::caller`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Duration;

/// The longest the loop thread parks while callers drive the port: the
/// bound on how late a timer or an unsolicited MAD is noticed when no
/// caller drives any more.
pub(super) const LINGER: Duration = Duration::from_micros(500);

/// How the loop thread and the callers' threads that drive the port take
/// turns (see [`super::caller`]).
#[derive(Debug, Default)]
pub(super) struct Relay {
    /// Times a caller drove the port.
    driven: AtomicU64,
    /// Times a receiving thread took an event the loop thread had put in
    /// its channel.
    took: AtomicU64,
    /// The loop thread is parked in [`Relay::park`], not watching the
    /// transport.
    parked: AtomicBool,
    /// Set by every wake-up: a park does not sleep past it.
    woken: AtomicBool,
    /// Callers blocked until the loop thread delivers to them: the loop
    /// does not park meanwhile.
    blocked: AtomicUsize,
    /// The loop thread, to unpark.
    thread: OnceLock<Thread>,
    /// `RuntimeStats::caller_blocks`.
    blocks: AtomicU64,
    /// `RuntimeStats::loop_parks`.
    parks: AtomicU64,
}

/// A caller blocked on the loop thread; see [`Relay::watch`].
pub(super) struct Watch<'a>(&'a Relay);

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.0.blocked.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Relay {
    /// A caller drove the port.
    pub(super) fn driven(&self) {
        self.driven.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters kept here: (times callers drove the port, times a
    /// caller blocked on the loop thread, times the loop thread parked).
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        (
            self.driven.load(Ordering::Relaxed),
            self.blocks.load(Ordering::Relaxed),
            self.parks.load(Ordering::Relaxed),
        )
    }

    /// Called by the loop thread first: who to unpark.
    pub(super) fn set_loop_thread(&self) {
        let _ = self.thread.set(std::thread::current());
    }

    /// True while the loop thread is parked.
    pub(super) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::SeqCst)
    }

    /// Wakes the loop thread if it is parked; true if it was (no other
    /// wake-up needed).
    pub(super) fn wake(&self) -> bool {
        self.woken.store(true, Ordering::SeqCst);
        self.unpark()
    }

    fn unpark(&self) -> bool {
        match self.thread.get() {
            Some(t) if self.is_parked() => {
                t.unpark();
                true
            }
            _ => false,
        }
    }

    /// A caller is about to block until the loop thread delivers to it:
    /// the loop watches the transport (is unparked, and does not park)
    /// until the returned guard is dropped.
    pub(super) fn watch(&self) -> Watch<'_> {
        self.blocks.fetch_add(1, Ordering::Relaxed);
        self.blocked.fetch_add(1, Ordering::SeqCst);
        self.unpark();
        Watch(self)
    }

    /// The loop thread, with nothing to do for `timeout`: if callers were
    /// active since the last call (`last`) and none is blocked on the
    /// loop, parks for at most `timeout` or [`LINGER`], and parks again
    /// (for [`LINGER`] each time) while callers stay active meanwhile:
    /// their drives poll the engine, its timers too, and wake the loop for
    /// whatever is not theirs, so the loop has nothing to add and going
    /// round would only contend for the core lock. True when the loop
    /// should go round again at once (it parked, or was woken); false
    /// when it should wait in `mio::Poll::poll` as usual. `unwatch` runs
    /// once, before the first sleep: the loop stops watching the
    /// transport's descriptor while parked.
    pub(super) fn park(&self, last: &mut u64, timeout: Duration, unwatch: impl FnOnce()) -> bool {
        let epoch = self.activity();
        if epoch == *last {
            return false;
        }
        *last = epoch;
        self.parked.store(true, Ordering::SeqCst);
        let mut slept = false;
        let mut woken = false;
        let mut limit = timeout.min(LINGER);
        let mut unwatch = Some(unwatch);
        loop {
            woken |= self.woken.swap(false, Ordering::SeqCst);
            if woken || self.blocked.load(Ordering::SeqCst) != 0 {
                break;
            }
            if let Some(f) = unwatch.take() {
                f();
            }
            slept = true;
            self.parks.fetch_add(1, Ordering::Relaxed);
            std::thread::park_timeout(limit);
            let epoch = self.activity();
            if epoch == *last {
                break;
            }
            // Callers were active throughout: they polled the engine.
            *last = epoch;
            limit = LINGER;
        }
        self.parked.store(false, Ordering::SeqCst);
        // A wake-up that saw the loop parked only unparked it.
        let late = self.woken.swap(false, Ordering::SeqCst);
        slept || woken || late
    }

    /// Callers' drives and takes so far: while it moves, callers are
    /// active.
    fn activity(&self) -> u64 {
        self.driven.load(Ordering::Relaxed) + self.took.load(Ordering::Relaxed)
    }

    /// A receiving thread took an event out of its channel (put there by
    /// the loop thread): its caller is active and will drive the port
    /// when the channel is empty, so the loop may get out of its way.
    pub(super) fn took(&self) {
        self.took.fetch_add(1, Ordering::Relaxed);
    }
}
