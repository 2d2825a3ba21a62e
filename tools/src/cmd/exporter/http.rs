//! The HTTP side: `tiny_http` (a small synchronous server: the exporter
//! answers a scrape every few seconds, and an async runtime would add a
//! thread pool and a large dependency to a 2-core build for nothing)
//! serving `/metrics` and `/-/healthy` on a thread of its own.

use std::thread::JoinHandle;

use tiny_http::{Header, Method, Response, Server};

use super::encode::{exposition, registry, Format, Shared};

/// The running server.
pub struct HttpServer {
    server: std::sync::Arc<Server>,
    thread: Option<JoinHandle<()>>,
    addr: String,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn text(code: u16, body: String, content_type: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    let r = Response::from_string(body).with_status_code(code);
    match header("Content-Type", content_type) {
        Some(h) => r.with_header(h),
        None => r,
    }
}

/// What one request gets.
fn answer(
    method: &Method,
    url: &str,
    accept: Option<&str>,
    reg: &prometheus_client::registry::Registry,
) -> Response<std::io::Cursor<Vec<u8>>> {
    let path = url.split('?').next().unwrap_or("");
    if !matches!(method, Method::Get | Method::Head) {
        return text(405, "only GET and HEAD\n".into(), "text/plain");
    }
    match path {
        "/metrics" => {
            let format = Format::from_accept(accept);
            match exposition(reg, format) {
                Ok(body) => text(200, body, format.content_type()),
                Err(e) => text(500, format!("encoding the metrics failed: {e}\n"), "text/plain"),
            }
        }
        "/-/healthy" => text(200, "OK\n".into(), "text/plain"),
        "/" => text(
            200,
            "<html><body><h1>mad exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n"
                .into(),
            "text/html",
        ),
        _ => text(404, format!("no page {path:?}: try /metrics or /-/healthy\n"), "text/plain"),
    }
}

impl HttpServer {
    /// Listens on `addr` (`ADDR:PORT`) and serves `shared` from a thread.
    ///
    /// # Errors
    /// The address cannot be listened on.
    pub fn start(addr: &str, shared: Shared) -> Result<Self, String> {
        let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let server = std::sync::Arc::new(server);
        let s = std::sync::Arc::clone(&server);
        let reg = registry(shared);
        let thread = std::thread::Builder::new()
            .name("exporter-http".into())
            .spawn(move || {
                for req in s.incoming_requests() {
                    let accept = req
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv("Accept"))
                        .map(|h| h.value.as_str().to_owned());
                    let r = answer(req.method(), req.url(), accept.as_deref(), &reg);
                    // A client that went away is its own problem.
                    let _ = req.respond(r);
                }
            })
            .map_err(|e| format!("cannot start the HTTP thread: {e}"))?;
        let addr = server
            .server_addr()
            .to_ip()
            .map_or_else(|| addr.to_owned(), |a| a.to_string());
        Ok(Self {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// The address listened on (the port chosen when 0 was asked for).
    #[must_use]
    pub fn addr(&self) -> &str {
        &self.addr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_errors() {
        let reg = registry(Shared::default());
        let get = |url: &str| answer(&Method::Get, url, None, &reg).status_code().0;
        assert_eq!(get("/metrics"), 200);
        assert_eq!(get("/-/healthy"), 200);
        assert_eq!(get("/nope"), 404);
        let post = answer(&Method::Post, "/metrics", None, &reg);
        assert_eq!(post.status_code().0, 405);
        let om = exposition(&reg, Format::OpenMetrics).unwrap_or_default();
        assert!(om.contains("infiniband_scrape_ok 0"), "{om}");
        assert!(om.ends_with("# EOF\n"), "{om}");
        let text = exposition(&reg, Format::Text).unwrap_or_default();
        assert!(text.contains("infiniband_scrape_ok 0"), "{text}");
        assert!(!text.contains("# EOF"), "{text}");
        assert_eq!(
            Format::from_accept(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            )),
            Format::OpenMetrics
        );
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
    }
}
