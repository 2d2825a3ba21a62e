//! The body of `/metrics`: the format and content coding a request asks
//! for, and each (format, coding) body encoded once per snapshot, off the
//! HTTP thread, then shared by every scrape of that snapshot.
//!
//! The text is written by `prometheus-client` straight into the gzip
//! encoder (or into the one `String` an identity body is), so the body is
//! never built twice; at fabric scale (380 MB of text for 69,984 ports)
//! Prometheus, which asks for gzip, gets a body a fraction of that size
//! and a second scrape of the same sweep costs no encoding.

use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use tokio::sync::OnceCell;

use super::encode::{write_exposition, Format, Shared};
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

/// The bodies of the snapshot being served, one per (format, coding),
/// encoded when first asked for.
#[derive(Debug, Default)]
struct Cache {
    snap: Option<Arc<Snapshot>>,
    cells: [Option<Cell>; 4],
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

    /// The body of the current snapshot in `format`, gzipped when
    /// `gzip`: encoded on the runtime's blocking pool by the first scrape
    /// that asks for it, shared by the scrapes after it.
    ///
    /// # Errors
    /// The encoding failed or its task could not run.
    pub async fn get(&self, format: Format, gzip: bool) -> Result<Bytes, String> {
        let snap = self
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let cell = {
            let mut c = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if !same(c.snap.as_ref(), snap.as_ref()) {
                *c = Cache {
                    snap: snap.clone(),
                    cells: Default::default(),
                };
            }
            let i = usize::from(format == Format::OpenMetrics) * 2 + usize::from(gzip);
            Arc::clone(c.cells[i].get_or_insert_with(Cell::default))
        };
        let lean = self.lean;
        cell.get_or_try_init(|| async move {
            tokio::task::spawn_blocking(move || encode_body(snap, format, gzip, lean))
                .await
                .map_err(|e| format!("the encoding task failed: {e}"))?
        })
        .await
        .cloned()
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
}
