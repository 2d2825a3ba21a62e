//! A virtual clock: a base [`Instant`] plus an offset the fuzz input moves.

use std::time::{Duration, Instant};

/// Virtual time for the sans-IO state machines, which take `now` in.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Instant,
    offset: Duration,
}

impl Clock {
    /// A clock at the present instant.
    #[must_use]
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            offset: Duration::ZERO,
        }
    }

    /// The current virtual time.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.base + self.offset
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.offset += d;
    }

    /// Moves the clock forward to `t` (never back).
    pub fn advance_to(&mut self, t: Instant) {
        if t > self.now() {
            self.offset = t - self.base;
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
