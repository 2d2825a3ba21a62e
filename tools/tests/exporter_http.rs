//! `mad exporter`'s HTTP side, each test a running `mad --sim exporter`
//! process (stopped by PID) and a client on loopback.
//!
//! Against hostile clients:
//!
//! - `a_pipelining_client_that_never_reads_stalls_no_one`: 2,000 `GET
//!   /metrics` written on one connection that is never read;
//! - `descriptor_exhaustion_leaves_the_listener_serving`: the exporter
//!   under `RLIMIT_NOFILE` 64 (`prlimit`), 200 idle connections held,
//!   then released;
//! - `five_hundred_slowloris_connections_take_no_thread_each`: 500
//!   connections sending a header line every 300 ms and never ending it;
//! - `a_ten_megabyte_header_is_refused_with_431`: one 10 MB header line.
//!
//! During each attack a normal scrape (a fresh connection) answers
//! `/metrics` within 2 s, the exporter's RSS (`VmRSS`) stays under 64 MB
//! and its thread count (`Threads`) stays within 4 of what it was
//! before the attack. Every attack loop is bounded in count and time.
//!
//! And for scrapes at fabric scale:
//! `a_gzip_scrape_decodes_to_the_identity_text` (`Accept-Encoding:
//! gzip`, and HEAD) and `lean_series_carry_the_port_key_and_one_info_series_per_port`
//! (`--lean`).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A normal scrape's bound (the liveness bound, not a speed test).
const SCRAPE_BOUND: Duration = Duration::from_secs(2);
/// The exporter's RSS bound during an attack, in kB.
const RSS_BOUND_KB: u64 = 64 * 1024;

/// A running `mad --sim exporter`, killed by PID on drop.
struct Exporter {
    child: Child,
    addr: String,
    threads_before: u64,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VmRSS` (kB) and `Threads` of `pid`.
fn rss_and_threads(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("Threads:"))
}

/// `request` (a whole request head) on a fresh connection, read to its
/// end; the response head and the body's bytes.
fn raw(addr: &str, request: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let at = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {all:?}"));
    (
        String::from_utf8_lossy(&all[..at]).to_ascii_lowercase(),
        all[at + 4..].to_vec(),
    )
}

/// One request on a fresh connection, read to its end; the status line
/// and the body.
fn get(addr: &str, path: &str, timeout: Duration) -> Result<(String, String), String> {
    let sa = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut s = TcpStream::connect_timeout(&sa, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.set_write_timeout(Some(timeout)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    ))
}

impl Exporter {
    /// Starts the exporter (under `prlimit --nofile=N` when `nofile` is
    /// given) and waits for its first sweep.
    fn start(nofile: Option<u32>) -> Self {
        Self::start_with(nofile, &[])
    }

    /// [`Exporter::start`] with more options.
    fn start_with(nofile: Option<u32>, more: &[&str]) -> Self {
        let mad = env!("CARGO_BIN_EXE_mad");
        let mut c = match nofile {
            Some(n) => {
                let mut c = Command::new("prlimit");
                c.arg(format!("--nofile={n}:{n}")).arg(mad);
                c
            }
            None => Command::new(mad),
        };
        let mut child = c
            .args([
                "--sim",
                "exporter",
                "--listen",
                "127.0.0.1:0",
                "--interval",
                "3600",
            ])
            .args(more)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "exporter ended before serving"
            );
            if let Some(rest) = line.split("serving http://").nth(1) {
                break rest.trim().trim_end_matches("/metrics").to_owned();
            }
        };
        // Keep its stderr drained so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        let mut e = Self {
            child,
            addr,
            threads_before: 0,
        };
        let start = Instant::now();
        while !get(&e.addr, "/metrics", SCRAPE_BOUND)
            .is_ok_and(|(_, b)| b.contains("\ninfiniband_scrape_ok 1\n"))
        {
            assert!(start.elapsed() < Duration::from_secs(60), "no first sweep");
            std::thread::sleep(Duration::from_millis(100));
        }
        e.threads_before = rss_and_threads(e.child.id()).1;
        e
    }

    /// A normal scrape answers within the bound, and the exporter's RSS
    /// and threads stay within theirs.
    fn still_serves(&self, during: &str) {
        let t = Instant::now();
        let r = get(&self.addr, "/metrics", SCRAPE_BOUND);
        let took = t.elapsed();
        let (status, body) = r.unwrap_or_else(|e| panic!("{during}: a scrape failed: {e}"));
        assert!(
            status.contains(" 200 ") && body.contains("\ninfiniband_scrape_ok 1\n"),
            "{during}: {status}"
        );
        assert!(took < SCRAPE_BOUND, "{during}: a scrape took {took:?}");
        let (rss, threads) = rss_and_threads(self.child.id());
        assert!(rss < RSS_BOUND_KB, "{during}: RSS {rss} kB");
        assert!(
            threads <= self.threads_before + 4,
            "{during}: {threads} threads (before: {})",
            self.threads_before
        );
    }

    fn port(&self) -> u16 {
        self.addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn connect(&self) -> std::io::Result<TcpStream> {
        TcpStream::connect_timeout(&self.addr.parse().unwrap(), SCRAPE_BOUND)
    }
}

/// The send queue (bytes) of the loopback TCP socket from port `local`
/// to port `remote`, from `/proc/net/tcp`.
fn tx_queue(local: u16, remote: u16) -> u64 {
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let (l, r) = (format!(":{local:04X}"), format!(":{remote:04X}"));
    tcp.lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| {
            f.get(1).is_some_and(|a| a.ends_with(&l)) && f.get(2).is_some_and(|a| a.ends_with(&r))
        })
        .and_then(|f| f.get(4).and_then(|q| q.split_once(':')))
        .and_then(|(tx, _)| u64::from_str_radix(tx, 16).ok())
        .unwrap_or(0)
}

#[test]
fn a_pipelining_client_that_never_reads_stalls_no_one() {
    let e = Exporter::start(None);
    let mut s = e.connect().unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let one = format!("GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", e.addr);
    let all = one.repeat(2000);
    // The server may stop reading once it is stuck writing: a short
    // write here is part of the attack, not a failure.
    let _ = s.write_all(all.as_bytes());
    // The server writes answers (some 250 kB each from a debug build)
    // until the socket buffers are full and its send queue stops
    // growing: from then on it is stalled on this connection.
    let (client, server) = (s.local_addr().unwrap().port(), e.port());
    let start = Instant::now();
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = tx_queue(server, client);
        if (now > 0 && now == last) || start.elapsed() > Duration::from_secs(10) {
            break;
        }
        last = now;
    }
    for i in 0..8 {
        e.still_serves(&format!("scrape {i} beside a pipelining client"));
        assert_eq!(
            get(&e.addr, "/-/healthy", SCRAPE_BOUND).map(|r| r.1),
            Ok("OK\n".into())
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(s);
}

#[test]
fn descriptor_exhaustion_leaves_the_listener_serving() {
    let e = Exporter::start(Some(64));
    // More connections than the exporter has descriptors, held idle.
    let mut idle = Vec::new();
    for _ in 0..200 {
        if let Ok(s) = e.connect() {
            idle.push(s);
        }
    }
    assert!(idle.len() > 64, "only {} connections made", idle.len());
    std::thread::sleep(Duration::from_millis(300));
    e.still_serves("with 200 idle connections and 64 descriptors");
    for s in &idle {
        let _ = s.shutdown(Shutdown::Both);
    }
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    e.still_serves("after the idle connections went away");
}

#[test]
fn five_hundred_slowloris_connections_take_no_thread_each() {
    let e = Exporter::start(None);
    let mut slow = Vec::new();
    for _ in 0..500 {
        let mut s = e.connect().unwrap();
        s.set_write_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: {}\r\n", e.addr);
        slow.push(s);
    }
    // Three seconds of one more header line every 300 ms on each.
    let start = Instant::now();
    let mut round = 0;
    while start.elapsed() < Duration::from_secs(3) {
        for s in &mut slow {
            let _ = write!(s, "X-Slow-{round}: a\r\n");
        }
        round += 1;
        e.still_serves(&format!("round {round} of 500 slowloris connections"));
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(slow);
}

#[test]
fn a_ten_megabyte_header_is_refused_with_431() {
    let e = Exporter::start(None);
    let mut s = e.connect().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        req.resize(req.len() + 10 * 1024 * 1024, b'a');
        req.extend_from_slice(b"\r\n\r\n");
        // Refused mid-way: the write fails, which is what is wanted.
        w.write_all(&req).is_ok()
    });
    e.still_serves("while a 10 MB header is sent");
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let wrote_all = writer.join().unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.lines().next().unwrap_or("");
    assert!(
        status.starts_with("HTTP/1.1 431"),
        "a 10 MB header got {status:?} (whole request sent: {wrote_all})"
    );
    e.still_serves("after a 10 MB header");
}

#[test]
fn a_gzip_scrape_decodes_to_the_identity_text() {
    let e = Exporter::start(None);
    let req = |extra: &str, method: &str| {
        format!(
            "{method} /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{extra}\r\n",
            e.addr
        )
    };
    let (head, plain) = raw(&e.addr, &req("", "GET"));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("content-encoding"), "{head}");
    let (head, gz) = raw(
        &e.addr,
        &req("Accept-Encoding: deflate, gzip;q=0.9\r\n", "GET"),
    );
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(head.contains("vary: accept, accept-encoding"), "{head}");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut text)
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&text),
        String::from_utf8_lossy(&plain)
    );
    assert!(
        gz.len() * 5 < plain.len(),
        "{} vs {}",
        gz.len(),
        plain.len()
    );
    // gzip refused with q=0: identity.
    let (head, body) = raw(&e.addr, &req("Accept-Encoding: gzip;q=0\r\n", "GET"));
    assert!(!head.contains("content-encoding"), "{head}");
    assert_eq!(body, plain);
    // HEAD: the GET's headers, no body.
    let (head, body) = raw(&e.addr, &req("", "HEAD"));
    assert!(
        head.contains(&format!("content-length: {}", plain.len())),
        "{head}"
    );
    assert!(body.is_empty(), "{} bytes after HEAD", body.len());
    // Other methods: 405 naming the allowed ones.
    let (head, _) = raw(&e.addr, &req("Content-Length: 0\r\n", "POST"));
    assert!(head.starts_with("http/1.1 405"), "{head}");
    assert!(head.contains("allow: get, head"), "{head}");
}

#[test]
fn lean_series_carry_the_port_key_and_one_info_series_per_port() {
    let e = Exporter::start_with(None, &["--lean"]);
    let (status, body) = get(&e.addr, "/metrics", SCRAPE_BOUND).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    let info: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("infiniband_port_info{"))
        .collect();
    // 4 switches of 8 ports and 8 CAs: 40 ports, each one info series
    // with the cable's labels.
    assert_eq!(info.len(), 40, "{body}");
    let cable = "local_guid=\"0x0000000000200001\",local_port=\"3\",remote_guid=\"0x0000000000100012\",remote_port=\"1\",remote_name=\"host-7 HCA-1\"";
    assert!(
        info.iter().any(
            |l| l.contains("local_name=\"leaf-2 madsim 8-port leaf switch\"")
                && l.contains(cable)
                && l.ends_with(" 1")
        ),
        "{info:?}"
    );
    // Every other port series has the key alone.
    let xmit: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("infiniband_portxmitdata_total{"))
        .collect();
    assert_eq!(xmit.len(), 40);
    assert!(
        xmit.iter().any(|l| l.starts_with(
            "infiniband_portxmitdata_total{local_guid=\"0x0000000000200001\",local_port=\"3\"} "
        )),
        "{xmit:?}"
    );
    assert!(
        !body
            .lines()
            .any(|l| !l.starts_with("infiniband_port_info") && l.contains("remote_guid")),
        "{body}"
    );
    // OpenMetrics names the family's type `info`.
    let om = raw(
        &e.addr,
        &format!(
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
            e.addr
        ),
    );
    let om = String::from_utf8_lossy(&om.1).into_owned();
    assert!(om.contains("# TYPE infiniband_port info\n"), "{om}");
    assert!(om.ends_with("# EOF\n"), "{om}");
}
