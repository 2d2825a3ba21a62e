//! The progress display of long operations (discovery, sweeps, SM-lite
//! bring-up, large SA tables, benchmarks), drawn with `indicatif` on
//! standard error — only when standard error is a terminal, never under
//! `--json` ([`set_enabled`]), and only once the operation has run for
//! a moment (short runs print nothing). The line is erased when the
//! operation ends, so the output that follows is the same as without
//! it.
//!
//! Two forms: [`Progress`], updated by the operation (a bar when the
//! total is known, a count otherwise), and [`Spinner`], for a call that
//! blocks (a spinner and the elapsed time, ticking on its own thread).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long an operation runs before the display appears.
const SHOW_AFTER: Duration = Duration::from_millis(300);
/// How often a spinner redraws.
const TICK: Duration = Duration::from_millis(100);

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the display off for the rest of the process (under `--json`),
/// or on again.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// True when a display would be drawn: enabled, and standard error is
/// a terminal.
#[must_use]
pub fn drawable() -> bool {
    ENABLED.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// How long an operation runs before its display appears:
/// `MADSTACK_PROGRESS_AFTER_MS` if set (tests), else 300 ms.
fn show_after() -> Duration {
    std::env::var("MADSTACK_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(SHOW_AFTER, Duration::from_millis)
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix} [{bar:30}] {percent:>3}% {pos}/{len} {msg} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("#>-")
}

fn count_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix} {pos} {msg} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix} {msg} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// A progress display updated by the operation; see the module
/// documentation. Dropping it erases the line.
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    start: Instant,
    show_after: Duration,
    shown: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("enabled", &self.bar.is_some())
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// A display on standard error if it is a terminal (and the display
    /// is enabled), otherwise one that draws nothing.
    #[must_use]
    pub fn stderr(label: &str) -> Self {
        let bar =
            drawable().then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()));
        Self {
            bar,
            label: label.to_owned(),
            start: Instant::now(),
            show_after: show_after(),
            shown: false,
        }
    }

    /// A display that draws nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self {
            bar: None,
            label: String::new(),
            start: Instant::now(),
            show_after: SHOW_AFTER,
            shown: false,
        }
    }

    /// True when it draws at all.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.bar.is_some()
    }

    /// Updates the display: `done` of `total` (a bar when the total is
    /// known, a count otherwise) and a short free text.
    pub fn update(&mut self, done: u64, total: Option<u64>, detail: &str) {
        self.update_with(done, total, || detail.to_owned());
    }

    /// [`Progress::update`] with the text made only when it is drawn (an
    /// operation may update for every answer it gets).
    pub fn update_with(&mut self, done: u64, total: Option<u64>, detail: impl FnOnce() -> String) {
        let Some(bar) = &self.bar else {
            return;
        };
        if !self.shown {
            if self.start.elapsed() < self.show_after {
                return;
            }
            bar.set_prefix(self.label.clone());
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        match total {
            Some(t) if t > 0 => {
                if bar.length() != Some(t) {
                    bar.set_style(bar_style());
                    bar.set_length(t);
                }
            }
            _ => {
                if bar.length().is_some() {
                    bar.unset_length();
                }
                bar.set_style(count_style());
            }
        }
        bar.set_message(detail());
        bar.set_position(done);
    }

    /// Erases the line (if it was drawn).
    pub fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            if self.shown {
                bar.finish_and_clear();
                self.shown = false;
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A spinner for a call that blocks (SM-lite bringing a fabric up, a
/// large SA table, a benchmark run): it appears after a moment, ticks
/// on its own thread, and is erased when dropped.
pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Spinner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spinner")
            .field("enabled", &self.thread.is_some())
            .finish()
    }
}

impl Spinner {
    /// Starts a spinner labelled `label` (drawn only as [`Progress`] is).
    #[must_use]
    pub fn start(label: &str) -> Self {
        if !drawable() {
            return Self {
                stop: None,
                thread: None,
            };
        }
        let (tx, rx) = mpsc::channel::<()>();
        let label = label.to_owned();
        let after = show_after();
        let thread = std::thread::Builder::new()
            .name("mad-progress".into())
            .spawn(move || {
                if rx.recv_timeout(after) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return;
                }
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(spinner_style());
                bar.set_prefix(label);
                bar.tick();
                while rx.recv_timeout(TICK) == Err(mpsc::RecvTimeoutError::Timeout) {
                    bar.tick();
                }
                bar.finish_and_clear();
            })
            .ok();
        Self {
            stop: Some(tx),
            thread,
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_drawn_when_disabled_or_not_on_a_terminal() {
        // cargo test's stderr is captured (not a terminal) here; the
        // terminal case is tests/progress_pty.rs.
        let mut d = Progress::disabled();
        assert!(!d.enabled());
        d.update(1, None, "");
        let s = Spinner::start("x");
        if !std::io::stderr().is_terminal() {
            assert!(s.thread.is_none());
            assert!(!Progress::stderr("x").enabled());
        }
    }
}
