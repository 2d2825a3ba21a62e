//! The HTTP side: hyper 1.x (HTTP/1.1 only) on a tokio current-thread
//! runtime, on one thread of its own, serving `/metrics`, `/-/healthy`
//! and `/`. hyper is the server the Rust ecosystem keeps up and the one
//! that already has the limits a hostile client needs: a bound on the
//! request head's size and header count (431 past them), a timeout on
//! reading it (which also closes idle keep-alive connections), and
//! back-pressure on pipelined requests; one runtime thread serves every
//! connection as a task, so no client gets a thread. Around it this file
//! adds what hyper leaves to the caller:
//!
//! - a write timeout per connection (`conn::WRITE_TIMEOUT` without
//!   progress closes it: a client that stops reading cannot hold an
//!   answer for ever);
//! - a cap on open connections ([`MAX_CONNECTIONS`], lowered to half the
//!   descriptors left under `RLIMIT_NOFILE`): past it the oldest
//!   connection not in the middle of an answer is closed to make room,
//!   so idle or slow clients can never lock a scraper out;
//! - accept errors survived: out of descriptors (EMFILE, ENFILE) or
//!   memory, it closes a connection, waits 50 ms and accepts again; the
//!   listener is never given up;
//! - the body encoded off the runtime thread, at most two encodings at
//!   a time, a gzip one once per snapshot and format and ahead of the
//!   scrape ([`super::body`]), so a large scrape does not hold up
//!   `/-/healthy` or another client.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{
    HeaderValue, ACCEPT, ACCEPT_ENCODING, ALLOW, CONTENT_ENCODING, CONTENT_TYPE, VARY,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Notify;

use super::body::{accepts_gzip, Bodies};
use super::conn::{victim, Busy, Conn, WriteTimeout, WRITE_TIMEOUT};
use super::encode::{Format, Shared};

/// Connections open at once, at most.
pub const MAX_CONNECTIONS: usize = 64;
/// Time a client has to send a request head (also the idle time after
/// which a keep-alive connection is closed).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head accepted, in bytes (431 past it).
pub const MAX_HEADER_SIZE: usize = 16 * 1024;
/// Most header lines in a request (431 past it).
pub const MAX_HEADERS: usize = 64;
/// Read buffer of a connection (pipelined requests wait in the socket
/// past it).
const MAX_BUF: usize = 32 * 1024;

/// The running server.
pub struct HttpServer {
    stop: Arc<Notify>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// A response body that marks its connection busy until it is dropped
/// (written out or abandoned).
struct Tracked {
    body: Full<Bytes>,
    _busy: Busy,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// An answer before it becomes a response.
struct Answer {
    status: StatusCode,
    content_type: &'static str,
    gzip: bool,
    allow: bool,
    body: Bytes,
}

fn page(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    Answer {
        status,
        content_type,
        gzip: false,
        allow: false,
        body: body.into(),
    }
}

/// What a request gets.
async fn answer(
    method: &Method,
    path: &str,
    accept: Option<&str>,
    accept_encoding: Option<&str>,
    bodies: &Bodies,
) -> Answer {
    if method != Method::GET && method != Method::HEAD {
        return Answer {
            allow: true,
            ..page(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                "only GET and HEAD\n",
            )
        };
    }
    match path {
        "/metrics" => {
            let format = Format::from_accept(accept);
            let gzip = accepts_gzip(accept_encoding);
            match bodies.get(format, gzip).await {
                Ok(body) => Answer {
                    gzip,
                    ..page(StatusCode::OK, format.content_type(), body)
                },
                Err(e) => page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain",
                    format!("{e}\n"),
                ),
            }
        }
        "/-/healthy" => page(StatusCode::OK, "text/plain", "OK\n"),
        "/" => page(
            StatusCode::OK,
            "text/html",
            "<html><body><h1>mad exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
        ),
        _ => page(
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("no page {path:?}: try /metrics or /-/healthy\n"),
        ),
    }
}

async fn respond(
    req: Request<Incoming>,
    bodies: Arc<Bodies>,
    conn: Arc<Conn>,
) -> Response<Tracked> {
    let busy = conn.answering();
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let a = answer(
        req.method(),
        req.uri().path(),
        header(ACCEPT),
        header(ACCEPT_ENCODING),
        &bodies,
    )
    .await;
    let mut r = Response::new(Tracked {
        body: Full::new(a.body),
        _busy: busy,
    });
    *r.status_mut() = a.status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(a.content_type));
    if a.gzip {
        h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if req.uri().path() == "/metrics" {
        h.insert(VARY, HeaderValue::from_static("Accept, Accept-Encoding"));
    }
    if a.allow {
        h.insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    r
}

/// Serves one connection until it ends or the accept loop closes it.
async fn connection(stream: tokio::net::TcpStream, bodies: Arc<Bodies>, conn: Arc<Conn>) {
    let _ = stream.set_nodelay(true);
    let io = WriteTimeout::new(TokioIo::new(stream), WRITE_TIMEOUT);
    let c = Arc::clone(&conn);
    let service = hyper::service::service_fn(move |req| {
        let (b, c) = (Arc::clone(&bodies), Arc::clone(&c));
        async move { Ok::<_, Infallible>(respond(req, b, c).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_header_size(MAX_HEADER_SIZE)
        .max_headers(MAX_HEADERS)
        .max_buf_size(MAX_BUF)
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::select! {
        _ = served => {}
        () = conn.closed() => {}
    }
    conn.set_done();
}

/// The connection cap under this process's descriptor limit: half of
/// what is left of `RLIMIT_NOFILE` (its soft value, from
/// `/proc/self/limits`) once the descriptors open now are counted, at
/// most [`MAX_CONNECTIONS`], at least 4.
fn connection_cap() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse::<usize>().ok())
        })
        .unwrap_or(1024);
    let open = std::fs::read_dir("/proc/self/fd").map_or(16, Iterator::count);
    (soft.saturating_sub(open + 8) / 2).clamp(4, MAX_CONNECTIONS)
}

/// Accept errors that mean "out of descriptors or memory": wait for
/// some to come back.
fn out_of_resources(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Accepts connections until `stop`, each served by a task.
async fn accept_loop(listener: tokio::net::TcpListener, bodies: Arc<Bodies>, stop: Arc<Notify>) {
    let cap = connection_cap();
    tokio::spawn(Arc::clone(&bodies).warm());
    let mut conns: Vec<Arc<Conn>> = Vec::new();
    let mut said: Option<Instant> = None;
    let close_one = |conns: &mut Vec<Arc<Conn>>| {
        if let Some(i) = victim(conns) {
            conns.swap_remove(i).close();
        }
    };
    loop {
        let accepted = tokio::select! {
            () = stop.notified() => break,
            r = listener.accept() => r,
        };
        conns.retain(|c| !c.done());
        match accepted {
            Ok((stream, _)) => {
                while conns.len() >= cap {
                    close_one(&mut conns);
                }
                let conn = Conn::new();
                conns.push(Arc::clone(&conn));
                tokio::spawn(connection(stream, Arc::clone(&bodies), conn));
            }
            Err(e) if out_of_resources(&e) => {
                if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    eprintln!(
                        "exporter: accepting a connection failed: {e} ({} open); closing the oldest idle one and retrying",
                        conns.len()
                    );
                    said = Some(Instant::now());
                }
                close_one(&mut conns);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // A connection reset before it was accepted and the like:
            // that client's problem.
            Err(_) => {}
        }
    }
    for c in &conns {
        c.close();
    }
}

impl HttpServer {
    /// Listens on `addr` (`ADDR:PORT`) and serves `shared` (lean series
    /// when `lean`) from a thread.
    ///
    /// # Errors
    /// The address cannot be listened on, or the thread or its runtime
    /// cannot be started.
    pub fn start(addr: &str, shared: Shared, lean: bool) -> Result<Self, String> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(2)
            .thread_name("exporter-encode")
            .build()
            .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
        let stop = Arc::new(Notify::new());
        let s = Arc::clone(&stop);
        let bodies = Arc::new(Bodies::new(shared, lean));
        let thread = std::thread::Builder::new()
            .name("exporter-http".into())
            .spawn(move || {
                rt.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => accept_loop(l, bodies, s).await,
                        Err(e) => eprintln!("exporter: cannot serve on {local}: {e}"),
                    }
                });
            })
            .map_err(|e| format!("cannot start the HTTP thread: {e}"))?;
        Ok(Self {
            stop,
            thread: Some(thread),
            addr: local,
        })
    }

    /// The address listened on (the port chosen when 0 was asked for).
    #[must_use]
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn status(method: Method, path: &str, bodies: &Bodies) -> StatusCode {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(answer(&method, path, None, None, bodies))
            .status
    }

    #[test]
    fn pages_and_errors() {
        let bodies = Bodies::new(Arc::new(Mutex::new(None)), false);
        assert_eq!(status(Method::GET, "/metrics", &bodies), StatusCode::OK);
        assert_eq!(status(Method::HEAD, "/-/healthy", &bodies), StatusCode::OK);
        assert_eq!(status(Method::GET, "/", &bodies), StatusCode::OK);
        assert_eq!(status(Method::GET, "/nope", &bodies), StatusCode::NOT_FOUND);
        assert_eq!(
            status(Method::POST, "/metrics", &bodies),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(
            Format::from_accept(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            )),
            Format::OpenMetrics
        );
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
    }

    #[test]
    fn the_cap_is_below_the_descriptor_limit() {
        let cap = connection_cap();
        assert!((4..=MAX_CONNECTIONS).contains(&cap), "{cap}");
    }
}
