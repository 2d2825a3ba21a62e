//! The body of `/metrics`: the format and content coding a request asks
//! for, each body encoded off the HTTP thread, and each gzip body once
//! per snapshot, ahead of the scrape when that format was scraped
//! before, then shared by every scrape of that snapshot. While a new
//! snapshot's gzip body is still being encoded (seconds at fabric scale),
//! a scrape gets the last body that was finished, one sweep older, at
//! once: a scrape never waits for an encoding but the very first.
//!
//! The text is written by `prometheus-client` straight into the gzip
//! encoder (or into the one `String` an identity body is), so the body is
//! never built twice; at fabric scale (380 MB of text for 69,984 ports)
//! Prometheus, which asks for gzip, gets a body a fraction of that size,
//! encoded while it waits for its next scrape.

use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use tokio::sync::OnceCell;

use super::encode::{current, write_exposition, Format, Shared};
use super::state::Snapshot;

/// True when an `Accept-Encoding` value allows gzip (`gzip` or `*` with
/// a q-value above 0).
#[must_use]
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(v) = accept_encoding else {
        return false;
    };
    v.split(',').any(|item| {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .filter_map(|q| q.trim().parse::<f32>().ok())
            .next_back()
            .unwrap_or(1.0);
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && q > 0.0
    })
}

/// A `fmt::Write` into a gzip stream (the first I/O error kept).
struct GzText {
    gz: GzEncoder<Vec<u8>>,
    error: Option<std::io::Error>,
}

impl std::fmt::Write for GzText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.gz.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            std::fmt::Error
        })
    }
}

/// The body of one snapshot in `format`, gzipped when `gzip`.
///
/// # Errors
/// The encoding failed (only a bug or a failed allocation would).
pub fn encode_body(
    snap: Option<Arc<Snapshot>>,
    format: Format,
    gzip: bool,
    lean: bool,
) -> Result<Bytes, String> {
    if gzip {
        // Level 1: the text is labels repeated port after port, which
        // the fastest level already shrinks more than tenfold.
        let mut w = GzText {
            gz: GzEncoder::new(Vec::new(), Compression::fast()),
            error: None,
        };
        write_exposition(snap, lean, format, &mut w).map_err(|_| match w.error.take() {
            Some(e) => format!("compressing the metrics failed: {e}"),
            None => "encoding the metrics failed".to_owned(),
        })?;
        let body =
            w.gz.finish()
                .map_err(|e| format!("compressing the metrics failed: {e}"))?;
        Ok(Bytes::from(body))
    } else {
        let mut s = String::new();
        write_exposition(snap, lean, format, &mut s)
            .map_err(|_| "encoding the metrics failed".to_owned())?;
        Ok(Bytes::from(s.into_bytes()))
    }
}

type Cell = Arc<OnceCell<Bytes>>;

/// The gzip bodies of the snapshot being served, one per format,
/// encoded when first asked for (or ahead, see [`Bodies::warm`]).
#[derive(Debug, Default)]
struct Cache {
    snap: Option<Arc<Snapshot>>,
    cells: [Option<Cell>; 2],
    /// The formats asked for gzipped so far: encoded ahead for each new
    /// snapshot.
    wanted: [bool; 2],
    /// The newest gzip body finished in each format, and its snapshot:
    /// what a scrape gets while the current snapshot's is encoded.
    last: [Option<(Option<Arc<Snapshot>>, Bytes)>; 2],
}

/// `/metrics` bodies of the served snapshot.
#[derive(Debug)]
pub struct Bodies {
    shared: Shared,
    lean: bool,
    cache: Mutex<Cache>,
}

fn same(a: Option<&Arc<Snapshot>>, b: Option<&Arc<Snapshot>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// How often [`Bodies::warm`] looks for a new snapshot.
const WARM_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl Bodies {
    /// The bodies of what `shared` holds, with lean series when `lean`.
    #[must_use]
    pub fn new(shared: Shared, lean: bool) -> Self {
        Self {
            shared,
            lean,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The cell of `snap`'s gzip body in format `i` (the cache moved on
    /// to `snap` first if it held another); `want` records the format
    /// as one to encode ahead.
    fn cell(&self, snap: Option<&Arc<Snapshot>>, i: usize, want: bool) -> Cell {
        let mut c = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if !same(c.snap.as_ref(), snap) {
            c.snap = snap.cloned();
            c.cells = Default::default();
        }
        c.wanted[i] |= want;
        Arc::clone(c.cells[i].get_or_insert_with(Cell::default))
    }

    /// Fills `cell` with the gzip body of `snap` in `format` (index `i`),
    /// encoded on the runtime's blocking pool, unless another caller did;
    /// a body of the snapshot still current becomes the format's last
    /// finished one.
    async fn fill(
        &self,
        cell: &Cell,
        snap: Option<Arc<Snapshot>>,
        i: usize,
        format: Format,
    ) -> Result<Bytes, String> {
        let lean = self.lean;
        let s = snap.clone();
        let body = cell
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || encode_body(s, format, true, lean))
                    .await
                    .map_err(|e| format!("the encoding task failed: {e}"))?
            })
            .await
            .cloned()?;
        let mut c = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if same(c.snap.as_ref(), snap.as_ref()) {
            c.last[i] = Some((snap, body.clone()));
        }
        Ok(body)
    }

    /// The last finished gzip body in format `i`, if it is of another
    /// snapshot than `snap` (an older one, `snap`'s being encoded).
    fn older(&self, snap: Option<&Arc<Snapshot>>, i: usize) -> Option<Bytes> {
        let c = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        c.last[i]
            .as_ref()
            .filter(|(s, _)| !same(s.as_ref(), snap))
            .map(|(_, b)| b.clone())
    }

    /// The body of the current snapshot in `format`, gzipped when
    /// `gzip`, encoded on the runtime's blocking pool. A gzip body is
    /// encoded once per snapshot (by the first scrape that asks, or ahead
    /// by [`Bodies::warm`]) and shared by the scrapes after it; until it
    /// is ready, a scrape gets the last finished one (of the snapshot
    /// before) rather than wait. An identity body (curl, a human) is
    /// encoded for its request alone, so that the hundreds of MB of text
    /// of a large fabric are not kept.
    ///
    /// # Errors
    /// The encoding failed or its task could not run.
    pub async fn get(&self, format: Format, gzip: bool) -> Result<Bytes, String> {
        let snap = current(&self.shared);
        if !gzip {
            let lean = self.lean;
            return tokio::task::spawn_blocking(move || encode_body(snap, format, false, lean))
                .await
                .map_err(|e| format!("the encoding task failed: {e}"))?;
        }
        let i = usize::from(format == Format::OpenMetrics);
        let cell = self.cell(snap.as_ref(), i, true);
        if let Some(body) = cell.get() {
            return Ok(body.clone());
        }
        if let Some(body) = self.older(snap.as_ref(), i) {
            // [`Bodies::warm`] is encoding this snapshot's (the format
            // was scraped before); the next scrape gets it.
            return Ok(body);
        }
        self.fill(&cell, snap, i, format).await
    }

    /// Runs for ever: when the sweep loop publishes a new snapshot,
    /// encodes the gzip bodies scraped before (Prometheus' format) right
    /// away, so the next scrape finds its body ready instead of waiting
    /// for the encoding (seconds at fabric scale).
    pub async fn warm(self: Arc<Self>) {
        let mut seen: Option<Arc<Snapshot>> = None;
        loop {
            tokio::time::sleep(WARM_EVERY).await;
            let snap = current(&self.shared);
            if same(seen.as_ref(), snap.as_ref()) {
                continue;
            }
            seen.clone_from(&snap);
            let wanted = self
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .wanted;
            for (i, format) in [Format::Text, Format::OpenMetrics].into_iter().enumerate() {
                if wanted[i] {
                    let cell = self.cell(snap.as_ref(), i, false);
                    // A failure here is the next scrape's to report.
                    let _ = self.fill(&cell, snap.clone(), i, format).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn gzip_is_taken_when_accepted_with_a_positive_q() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, GZIP;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn a_gzip_body_decodes_to_the_identity_body() {
        let plain = encode_body(None, Format::Text, false, false).unwrap_or_default();
        let gz = encode_body(None, Format::Text, true, false).unwrap_or_default();
        let mut back = Vec::new();
        let r = flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut back);
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(back, plain.to_vec());
        assert!(String::from_utf8_lossy(&plain).contains("infiniband_scrape_ok 0"));
    }

    /// An empty snapshot slot, its bodies, and a current-thread runtime.
    fn setup() -> (Shared, Arc<Bodies>, tokio::runtime::Runtime) {
        let shared: Shared = Arc::default();
        let bodies = Arc::new(Bodies::new(Arc::clone(&shared), false));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        (shared, bodies, rt)
    }

    #[test]
    fn a_format_scraped_gzipped_is_encoded_ahead_for_the_next_snapshot() {
        let (shared, bodies, rt) = setup();
        let ready = |b: &Bodies, i: usize| {
            let c = b.cache.lock().unwrap_or_else(PoisonError::into_inner);
            c.snap.is_some() && c.cells[i].as_ref().is_some_and(|c| c.initialized())
        };
        rt.block_on(async {
            tokio::spawn(Arc::clone(&bodies).warm());
            assert!(bodies.get(Format::OpenMetrics, true).await.is_ok());
            *shared.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(Arc::new(Snapshot::default()));
            tokio::time::sleep(WARM_EVERY * 5).await;
        });
        // OpenMetrics was scraped gzipped: ready before anyone asks;
        // the classic text format was not: left to its first scrape.
        assert!(ready(&bodies, 1));
        assert!(!ready(&bodies, 0));
    }

    #[test]
    fn a_scrape_during_the_encoding_gets_the_last_finished_body_at_once() {
        let (shared, bodies, rt) = setup();
        let gz = |s: Option<Arc<Snapshot>>| {
            encode_body(s, Format::OpenMetrics, true, false).unwrap_or_default()
        };
        let first = gz(None);
        let snap = Arc::new(Snapshot::default());
        let second = gz(Some(Arc::clone(&snap)));
        assert_ne!(first, second, "the two snapshots read differently");
        rt.block_on(async {
            let got = bodies.get(Format::OpenMetrics, true).await;
            assert_eq!(got.ok(), Some(first.clone()), "the very first scrape waits");
            // A new snapshot, not encoded yet (nothing warms it here):
            // the scrape gets the one before, without waiting.
            *shared.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&snap));
            let got = bodies.get(Format::OpenMetrics, true).await;
            assert_eq!(got.ok(), Some(first.clone()));
            // Once it is encoded, scrapes get it.
            tokio::spawn(Arc::clone(&bodies).warm());
            tokio::time::sleep(WARM_EVERY * 5).await;
            let got = bodies.get(Format::OpenMetrics, true).await;
            assert_eq!(got.ok(), Some(second.clone()));
        });
    }
}
