//! `mad exporter` scraped by a real Prometheus, and under faults.
//!
//! The fabric is the built-in one served in ibsim's protocol (`mad sim
//! --serve`): the exporter, `mad perfquery` and the fault console all
//! work on the same fabric, so what Prometheus stored can be compared
//! with what perfquery reads, and a cable pulled at the console shows up
//! in the exporter's metrics. (Two `mad --sim` processes would each
//! build a fabric of their own, whose traffic counters differ.)
//!
//! - `prometheus_scrapes_the_exporter_and_stores_every_cable`: a
//!   Prometheus on loopback (its own config and data directory, 1 s
//!   scrape interval) scrapes the exporter twice; its HTTP API has the
//!   series with guilbaults/infiniband-exporter's labels, the values of
//!   the link gauges, and `infiniband_portxmitdata_total` of a known
//!   cable within what `mad perfquery -x` reads before and after (the
//!   counter counts the exporter's own MADs, so it moves: the value must
//!   lie in that window, and above the reading taken before the
//!   exporter started). `promtool check metrics` finds nothing in
//!   `/metrics`. A second exporter with `--lean`, scraped as job `lean`:
//!   its series carry the port key alone, and PromQL's join with
//!   `infiniband_port_info` gives each its cable's names back.
//! - `the_exporter_keeps_serving_through_packet_loss_and_a_pulled_cable`:
//!   every packet dropped on one link, then a cable pulled and plugged
//!   back: `/metrics` keeps answering, the timeouts show in the
//!   exporter's own metrics, and the link state of the pulled port goes
//!   Down and back to Active.
//!
//! Outside CI a missing `prometheus` / `promtool` makes the first test
//! print "NOT RUN"; with `CI=true` it fails.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::served::Served;

const NEEDS_PROMETHEUS: &[(&str, &str)] =
    &[("prometheus", "prometheus"), ("promtool", "prometheus")];

/// The cable compared with perfquery: leaf-2 (LID 8) port 3 to host-7.
/// The command ports attach at host-2, under leaf-1: perfquery's MADs to
/// LID 8 do not cross that cable, the exporter's discovery does.
const LEAF2: &str = "0x0000000000200001";
const LEAF2_LID: &str = "8";
const LEAF2_PORT: &str = "3";
const HOST7: &str = "0x0000000000100012";

/// A child process killed and reaped on drop (by PID, even when the
/// test fails).
struct Proc {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

/// Copies a stream into `log` on a thread (so a full pipe never stalls
/// the child).
fn drain(r: impl Read + Send + 'static, log: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            let mut l = log.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
}

/// The served fabric (`support::served`), with what these tests do on it.
struct Fabric(Served);

impl Fabric {
    fn start(tag: &str) -> Self {
        Self(Served::start(Path::new(env!("CARGO_BIN_EXE_mad")), tag))
    }

    /// A console command that must succeed; its answer.
    fn console(&mut self, cmd: &str) -> String {
        let answer = self.0.console(cmd);
        assert!(answer.starts_with("ok"), "{cmd}: {answer}");
        answer
    }

    fn mad(&self, args: &[&str]) -> Command {
        self.0.command(args)
    }

    /// `mad perfquery -x LID PORT`'s PortXmitData.
    fn perfquery_xmit_data(&self, lid: &str, port: &str) -> u64 {
        let o = self.0.mad(&["perfquery", "-x", lid, port]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "perfquery: {out}");
        out.lines()
            .find_map(|l| l.strip_prefix("PortXmitData:"))
            .map(|v| v.trim_start_matches('.').trim().parse().unwrap())
            .unwrap_or_else(|| panic!("no PortXmitData in {out}"))
    }

    /// `mad exporter` on this fabric, listening on a port it picks; its
    /// address.
    fn exporter(&self, args: &[&str]) -> (Proc, String) {
        let mut c = self.mad(&["exporter", "--listen", "127.0.0.1:0"]);
        let mut child = c
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(String::new()));
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "exporter ended: {line}"
            );
            if let Some(rest) = line.split("serving http://").nth(1) {
                break rest.trim().trim_end_matches("/metrics").to_owned();
            }
        };
        drain(err, Arc::clone(&log));
        (Proc { child, log }, addr)
    }
}

fn http_get(url: &str, accept: Option<&str>) -> Result<String, String> {
    let mut r = ureq::get(url);
    if let Some(a) = accept {
        r = r.header("Accept", a);
    }
    r.call()
        .map_err(|e| format!("GET {url}: {e}"))?
        .into_body()
        .read_to_string()
        .map_err(|e| format!("GET {url}: {e}"))
}

/// The value of the one sample of `name` whose labels include `labels`,
/// in the classic text format.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < timeout,
            "gave up after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mad-exporter-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An instant query through Prometheus' HTTP API: its result vector.
fn query(prom: &str, q: &str) -> Vec<Value> {
    let body = ureq::get(&format!("http://{prom}/api/v1/query"))
        .query("query", q)
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{q}: {body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn value_of(series: &Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[test]
fn prometheus_scrapes_the_exporter_and_stores_every_cable() {
    if !support::require(NEEDS_PROMETHEUS) {
        return;
    }
    let fabric = Fabric::start("p");
    let before = fabric.perfquery_xmit_data(LEAF2_LID, LEAF2_PORT);
    // One sweep (the interval outlasts the test): the counters stand
    // still after it but for perfquery's own MADs.
    let (exporter, addr) = fabric.exporter(&["--interval", "3600"]);
    // A second one with lean series, scraped as job "lean".
    let (lean_exporter, lean) = fabric.exporter(&["--interval", "3600", "--lean"]);
    for a in [&addr, &lean] {
        wait_for("the first sweep", Duration::from_secs(60), || {
            http_get(&format!("http://{a}/metrics"), None)
                .is_ok_and(|m| sample(&m, "infiniband_scrape_ok", &[]) == Some(1.0))
        });
    }

    let dir = tmp_dir("prom");
    let prom = format!("127.0.0.1:{}", free_port());
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: infiniband\n    static_configs:\n      - targets: ['{addr}']\n  \
             - job_name: lean\n    static_configs:\n      - targets: ['{lean}']\n"
        ),
    )
    .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drain(child.stderr.take().unwrap(), Arc::clone(&log));
    let prometheus = Proc { child, log };

    wait_for("two scrapes by Prometheus", Duration::from_secs(90), || {
        http_get(&format!("http://{prom}/-/ready"), None).is_ok()
            && query(&prom, "count_over_time(infiniband_scrape_ok[5m])")
                .iter()
                .filter(|s| value_of(s) >= 2.0)
                .count()
                == 2
    });
    let up = query(&prom, "up{job=\"infiniband\"}");
    assert_eq!(up.len(), 1, "{up:?}\n{}", prometheus.log());
    assert!((value_of(&up[0]) - 1.0).abs() < f64::EPSILON, "{up:?}");
    let ok = query(&prom, "infiniband_scrape_ok");
    assert!((value_of(&ok[0]) - 1.0).abs() < f64::EPSILON, "{ok:?}");

    // Every port of the fabric is a series: 4 switches of 8 ports, 8 CAs.
    let all = query(&prom, "infiniband_portxmitdata_total{job=\"infiniband\"}");
    assert_eq!(all.len(), 40, "{all:?}");
    let sel = format!("{{job=\"infiniband\",local_guid=\"{LEAF2}\",local_port=\"{LEAF2_PORT}\"}}");
    let cable = query(&prom, &format!("infiniband_portxmitdata_total{sel}"));
    assert_eq!(cable.len(), 1, "{cable:?}");
    let m = &cable[0]["metric"];
    for (k, v) in [
        ("job", "infiniband"),
        ("component", "switch"),
        ("local_name", "leaf-2 madsim 8-port leaf switch"),
        ("local_guid", LEAF2),
        ("local_port", LEAF2_PORT),
        ("remote_guid", HOST7),
        ("remote_port", "1"),
        ("remote_name", "host-7 HCA-1"),
    ] {
        assert_eq!(m[k], v, "label {k}: {m}");
    }
    let stored = value_of(&cable[0]) as u64;
    let after = fabric.perfquery_xmit_data(LEAF2_LID, LEAF2_PORT);
    let again = fabric.perfquery_xmit_data(LEAF2_LID, LEAF2_PORT);
    assert_eq!(after, again, "perfquery's own MADs cross the cable");
    assert!(
        before < stored && stored <= after,
        "perfquery read {before} before the exporter started and {after} after its sweep; \
         Prometheus has {stored}"
    );
    // The gauges of the same port: an active 4x SDR link at LID 8.
    for (metric, want) in [
        ("infiniband_link_state", 4.0),
        ("infiniband_physical_state", 5.0),
        ("infiniband_width", 4.0),
        ("infiniband_speed", 2.5),
        ("infiniband_lid", 8.0),
        ("infiniband_symbolerrorcounter_total", 0.0),
    ] {
        let s = query(&prom, &format!("{metric}{sel}"));
        assert_eq!(s.len(), 1, "{metric}: {s:?}");
        assert!((value_of(&s[0]) - want).abs() < 1e-9, "{metric}: {s:?}");
    }
    let mads = query(
        &prom,
        "infiniband_exporter_mads_sent_total{job=\"infiniband\"}",
    );
    assert_eq!(mads.len(), 2, "{mads:?}");
    assert!(mads.iter().all(|s| value_of(s) > 0.0), "{mads:?}");

    // promtool reads the classic text format a plain GET gets.
    let text = http_get(&format!("http://{addr}/metrics"), None).unwrap();
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );
    // A client asking for OpenMetrics (as Prometheus does) gets it.
    let om = http_get(
        &format!("http://{addr}/metrics"),
        Some("application/openmetrics-text; version=1.0.0"),
    )
    .unwrap();
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(
        om.contains("# TYPE infiniband_portxmitdata counter"),
        "{om}"
    );
    // The lean exporter's series carry the port key alone; PromQL joins
    // them with infiniband_port_info for the cable's names.
    let key = format!("local_guid=\"{LEAF2}\",local_port=\"{LEAF2_PORT}\"");
    let bare = query(
        &prom,
        &format!("infiniband_portxmitdata_total{{job=\"lean\",{key}}}"),
    );
    assert_eq!(bare.len(), 1, "{bare:?}");
    assert!(bare[0]["metric"].get("remote_name").is_none(), "{bare:?}");
    let joined = query(
        &prom,
        "infiniband_portxmitdata_total{job=\"lean\"} * on (local_guid, local_port) \
         group_left (local_name, remote_name) infiniband_port_info{job=\"lean\"}",
    );
    assert_eq!(joined.len(), 40, "{joined:?}");
    let cable = joined
        .iter()
        .find(|s| s["metric"]["local_guid"] == LEAF2 && s["metric"]["local_port"] == LEAF2_PORT)
        .unwrap();
    assert_eq!(cable["metric"]["remote_name"], "host-7 HCA-1", "{cable}");
    assert_eq!(
        cable["metric"]["local_name"], "leaf-2 madsim 8-port leaf switch",
        "{cable}"
    );
    drop(prometheus);
    drop(lean_exporter);
    drop(exporter);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_exporter_keeps_serving_through_packet_loss_and_a_pulled_cable() {
    let mut fabric = Fabric::start("f");
    let (exporter, addr) =
        fabric.exporter(&["--interval", "0.3", "--rediscover", "1", "-t", "100"]);
    let metrics = || {
        let m = http_get(&format!("http://{addr}/metrics"), None);
        assert!(
            m.is_ok(),
            "the exporter stopped serving: {m:?}\n{}",
            exporter.log()
        );
        assert_eq!(
            http_get(&format!("http://{addr}/-/healthy"), None).as_deref(),
            Ok("OK\n")
        );
        m.unwrap()
    };
    let spine1 = [("local_guid", "0x0000000000200002")];
    let spine2_port2 = [("local_guid", "0x0000000000200003"), ("local_port", "2")];
    wait_for("a clean sweep", Duration::from_secs(60), || {
        let m = metrics();
        sample(&m, "infiniband_scrape_ok", &[]) == Some(1.0)
            && sample(&m, "infiniband_link_state", &spine2_port2) == Some(4.0)
    });
    let m = metrics();
    assert_eq!(
        sample(&m, "infiniband_exporter_node_query_timeouts_total", &spine1),
        Some(0.0)
    );
    assert_eq!(
        sample(&m, "infiniband_exporter_fabric_changes_total", &[]),
        Some(0.0)
    );

    // Every packet out of spine-1's port 1 (to leaf-1, behind which the
    // exporter sits) dropped: spine-1's PMA answers nothing.
    fabric.console("drop spine-1 1 1");
    wait_for(
        "timeouts in the exporter's metrics",
        Duration::from_secs(60),
        || {
            let m = metrics();
            sample(&m, "infiniband_exporter_node_query_timeouts_total", &spine1)
                .is_some_and(|v| v > 0.0)
                && sample(&m, "infiniband_scrape_ok", &[]) == Some(0.0)
                && sample(&m, "infiniband_exporter_port_query_ok", &spine1) == Some(0.0)
        },
    );
    let m = metrics();
    assert!(
        sample(
            &m,
            "infiniband_exporter_mad_retries_total",
            &[("class", "perfmgt")]
        )
        .is_some_and(|v| v > 0.0),
        "{m}"
    );
    fabric.console("drop spine-1 1 0");

    // A cable pulled (spine-2 port 2 to leaf-2 port 8): the next
    // discovery sees the port Down, and counts the change.
    fabric.console("link down spine-2 2");
    wait_for(
        "the pulled cable's port Down",
        Duration::from_secs(60),
        || {
            let m = metrics();
            sample(&m, "infiniband_link_state", &spine2_port2) == Some(1.0)
                && sample(&m, "infiniband_exporter_fabric_changes_total", &[])
                    .is_some_and(|v| v > 0.0)
        },
    );
    // Its series has no remote end while the cable is out.
    let m = metrics();
    assert!(
        m.lines().any(|l| l.starts_with("infiniband_link_state{")
            && l.contains("local_guid=\"0x0000000000200003\",local_port=\"2\",remote_guid=\"\"")),
        "{m}"
    );
    fabric.console("link up spine-2 2");
    wait_for(
        "the cable back, Active, and a clean sweep",
        Duration::from_secs(60),
        || {
            let m = metrics();
            sample(&m, "infiniband_link_state", &spine2_port2) == Some(4.0)
                && sample(&m, "infiniband_scrape_ok", &[]) == Some(1.0)
        },
    );
    drop(exporter);
}

/// `--once`: the exposition on stdout, exit 0 on a clean fabric; with a
/// link dropping every packet, still the exposition (the ports read, the
/// failures counted) and exit status 3, incomplete, with stderr saying
/// what is missing.
#[test]
fn once_prints_the_metrics_and_exits_3_when_ports_went_unanswered() {
    let mut fabric = Fabric::start("o");
    let o = fabric
        .mad(&["exporter", "--once", "-t", "100"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(sample(&out, "infiniband_scrape_ok", &[]), Some(1.0));
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("infiniband_portxmitdata_total{"))
            .count(),
        40
    );
    fabric.console("drop spine-1 1 1");
    let o = fabric
        .mad(&["exporter", "--once", "-t", "100"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("incomplete sweep"), "{err}");
    assert_eq!(sample(&out, "infiniband_scrape_ok", &[]), Some(0.0));
    let spine1 = [("local_guid", "0x0000000000200002")];
    assert!(
        sample(
            &out,
            "infiniband_exporter_node_query_timeouts_total",
            &spine1
        )
        .is_some_and(|v| v > 0.0),
        "{out}"
    );
    assert!(
        sample(&out, "infiniband_exporter_ports_failed", &[]).is_some_and(|v| v > 0.0),
        "{out}"
    );
    // With --json: the same sweep as one object, incomplete, the unread
    // ports under `missing`, exit status 3.
    let o = fabric
        .mad(&["exporter", "--once", "--json", "-t", "100"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(3), "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["complete"], false, "{out}");
    assert_eq!(v["scrape_ok"], false, "{out}");
    assert_eq!(v["missing"][0]["what"], "ports", "{out}");
    let unread = v["missing"][0]["count"].as_u64().unwrap();
    assert!(unread > 0, "{out}");
    let with_error = v["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["error"].is_string() && p["counters"].is_null())
        .count();
    assert_eq!(with_error as u64, unread, "{out}");
}
