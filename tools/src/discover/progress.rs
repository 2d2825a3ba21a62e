//! A one-line progress display on standard error for long operations,
//! drawn only when standard error is a terminal and only once the
//! operation has run for a moment (short runs print nothing).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long an operation runs before the bar appears.
const SHOW_AFTER: Duration = Duration::from_millis(300);
/// Least time between two redraws.
const REDRAW: Duration = Duration::from_millis(80);
/// Width of the bar itself.
const BAR: usize = 30;

/// A progress line; see the module documentation. Dropping it erases
/// the line.
pub struct Progress {
    out: Option<Box<dyn Write + Send>>,
    label: String,
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
    show_after: Duration,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("enabled", &self.out.is_some())
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// A progress line on standard error if it is a terminal, otherwise
    /// one that draws nothing. `MADSTACK_PROGRESS_AFTER_MS` overrides how
    /// long an operation runs before the line appears (300 ms).
    #[must_use]
    pub fn stderr(label: &str) -> Self {
        let out: Option<Box<dyn Write + Send>> = if std::io::stderr().is_terminal() {
            Some(Box::new(std::io::stderr()))
        } else {
            None
        };
        let after = std::env::var("MADSTACK_PROGRESS_AFTER_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(SHOW_AFTER, Duration::from_millis);
        Self::with_output(label, out, after)
    }

    /// A progress line that draws nothing.
    #[must_use]
    pub fn disabled() -> Self {
        Self::with_output("", None, SHOW_AFTER)
    }

    /// A progress line drawn on `out` (tests), appearing after
    /// `show_after`.
    #[must_use]
    pub fn with_output(
        label: &str,
        out: Option<Box<dyn Write + Send>>,
        show_after: Duration,
    ) -> Self {
        Self {
            out,
            label: label.to_owned(),
            start: Instant::now(),
            last: None,
            drawn: false,
            show_after,
        }
    }

    /// True when it draws at all.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.out.is_some()
    }

    /// Updates the line: `done` of `total` (a bar when the total is
    /// known, a count otherwise) and a short free text.
    pub fn update(&mut self, done: u64, total: Option<u64>, detail: &str) {
        if self.out.is_none() {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.start) < self.show_after {
            return;
        }
        if self.last.is_some_and(|l| now.duration_since(l) < REDRAW) {
            return;
        }
        self.last = Some(now);
        let line = render(
            &self.label,
            done,
            total,
            detail,
            now.duration_since(self.start),
        );
        if let Some(o) = self.out.as_mut() {
            let _ = write!(o, "\r{line}\x1b[K");
            let _ = o.flush();
            self.drawn = true;
        }
    }

    /// Erases the line (if it was drawn).
    pub fn finish(&mut self) {
        if self.drawn {
            if let Some(o) = self.out.as_mut() {
                let _ = write!(o, "\r\x1b[K");
                let _ = o.flush();
            }
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The text of one progress line.
#[must_use]
pub fn render(
    label: &str,
    done: u64,
    total: Option<u64>,
    detail: &str,
    elapsed: Duration,
) -> String {
    let secs = elapsed.as_secs_f64();
    match total {
        Some(t) if t > 0 => {
            let frac = (done.min(t) as f64) / (t as f64);
            let fill = ((frac * BAR as f64).round() as usize).min(BAR);
            format!(
                "{label} [{}{}] {:>3}% {done}/{t} {detail} {secs:.1}s",
                "#".repeat(fill),
                "-".repeat(BAR - fill),
                (frac * 100.0).floor() as u64
            )
        }
        _ => format!("{label} {done} {detail} {secs:.1}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn render_bar_and_count() {
        let s = render("sweep", 5, Some(10), "ports", Duration::from_millis(1500));
        assert_eq!(
            s,
            format!(
                "sweep [{}{}]  50% 5/10 ports 1.5s",
                "#".repeat(15),
                "-".repeat(15)
            )
        );
        assert_eq!(
            render("discover", 7, None, "nodes", Duration::ZERO),
            "discover 7 nodes 0.0s"
        );
    }

    #[test]
    fn draws_after_delay_and_erases_on_finish() {
        let buf = Shared::default();
        let mut p = Progress::with_output("x", Some(Box::new(buf.clone())), Duration::ZERO);
        p.update(1, Some(2), "");
        p.finish();
        let text = String::from_utf8(buf.0.lock().map(|v| v.clone()).unwrap_or_default())
            .unwrap_or_default();
        assert!(text.starts_with("\rx ["), "{text:?}");
        assert!(text.ends_with("\r\x1b[K"), "{text:?}");
    }

    #[test]
    fn silent_before_delay_and_when_disabled() {
        let buf = Shared::default();
        let mut p =
            Progress::with_output("x", Some(Box::new(buf.clone())), Duration::from_secs(3600));
        p.update(1, Some(2), "");
        drop(p);
        assert!(buf.0.lock().map(|v| v.is_empty()).unwrap_or(false));
        let mut d = Progress::disabled();
        assert!(!d.enabled());
        d.update(1, None, "");
    }
}
