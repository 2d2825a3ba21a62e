//! `mad bench`: SMP Get round trips per second with W outstanding, SA
//! GetTable (RMPP) time and throughput per table, latency percentiles, and
//! — with `--vs-libibmad` — the libibmad anchor (bench-anchor/anchor.c)
//! measured over the same ibsim in the same run.
//!
//! ```text
//! mad [--sim[=TOPO] | --ibsim | -C CA -P PORT] bench [--w 1,16,256]
//!     [--seconds S | --queries N] [--targets "0;0,1"] [--rmpp]
//!     [--json FILE] [--plot FILE.svg] [--vs-libibmad]
//! ```
//!
//! # What is measured
//! - `runtime`: directed-route SMP Get NodeInfo through the session's
//!   [`mad_agents::Runtime`] (its event loop thread, an agent registered
//!   with a channel): W requests go out, each completion sends the next
//!   request of its slot (closed loop), round-robin over the targets.
//! - `engine` (`--sim` only): the same queries from an
//!   [`mad_agents::Engine`] driven in poll mode on this thread over a
//!   second copy of the built-in fabric — the in-process rate of the agent
//!   layer, as benches/agent_round_trip.rs measures it.
//! - `libibmad` (`--vs-libibmad`): bench-anchor/anchor.c (`smp_query_via`,
//!   one query at a time, as infiniband-diags issues them) built with
//!   bench-anchor/build.sh into a temporary directory and run under
//!   libumad2sim against the same ibsim (`IBSIM_SOCKNAME`).
//! - `--rmpp`: SubnAdmGetTable of NodeRecord, PortInfoRecord and
//!   PathRecord (every record) through the session's SA client, repeated;
//!   time per table and bytes of the answer per second.
//!
//! Each W runs `--seconds S` (default 1) after a short warm-up, or
//! `--queries N` timed queries.
//!
//! # `--json`
//! The global `--json` (`mad --json bench ...`) prints this object on
//! stdout instead of the table; `--json FILE` writes it to FILE (the
//! table still printed). Both in the envelope of [`crate::json`]
//! (`command`, `version`, `complete` first):
//! ```text
//! { "transport": "sim" | "ibsim" | "umad", "where": "<session description>",
//!   "targets": ["0", "0,1"], "attribute": "NodeInfo",
//!   "smp": [ { "impl": "runtime" | "engine" | "libibmad", "outstanding": W,
//!              "queries": answered, "errors": n, "seconds": s, "qps": rate,
//!              "lat_us": { "p50": x, "p99": x, "p99.9": x, "max": x },
//!              "ratio_vs_libibmad": qps / libibmad qps, or null } ],
//!   "rmpp": [ { "table": "NodeRecord", "records": n, "bytes": b,
//!               "repeats": k, "seconds_per_table": t,
//!               "bytes_per_sec": x } ] }
//! ```
//! `--plot FILE.svg` draws SMP rate against W (log scales, one line per
//! implementation, the libibmad rate as a dashed level) and, with
//! `--rmpp`, GetTable throughput against table size.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mad_agents::{AgentEvent, AgentSpec, Engine, EngineConfig, SendRequest, SendStatus};
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Method};

use crate::command::{CliError, Invocation};
use crate::json::Json;
use crate::session::{Backend, Session, TransportChoice};

/// Where libumad2sim (Debian `libumad2sim0`) is installed.
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

const USAGE: &str = "\
Usage: mad [--sim[=TOPO] | --ibsim | -C CA -P PORT] bench [OPTIONS]
  --w LIST          outstanding SMPs to measure, comma-separated (default 1,16,256)
  --seconds S       timed part of each measurement (default 1)
  --queries N       timed queries per measurement instead of --seconds
  --targets R;R     directed routes queried round-robin (default \"0;0,1\")
  --rmpp            also SA GetTable time and throughput per table
  --json [FILE]     the numbers as JSON: on stdout instead of the table, or
                    written to FILE
  --plot FILE.svg   draw rate against W (and against table size)
  --vs-libibmad     also run the libibmad anchor over the same ibsim
                    (with --ibsim, or the umad transport under libumad2sim)
";

/// How long each measurement runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// The timed part lasts this long.
    Seconds(f64),
    /// This many timed queries.
    Queries(u64),
}

/// The command line of `mad bench`.
#[derive(Debug, Clone, PartialEq)]
pub struct Opts {
    /// Outstanding SMPs, one measurement each.
    pub windows: Vec<usize>,
    /// How long each measurement runs.
    pub budget: Budget,
    /// Directed routes, as given.
    pub targets: Vec<String>,
    /// Measure SA GetTable.
    pub rmpp: bool,
    /// JSON output file.
    pub json: Option<PathBuf>,
    /// `--json` without a file: the JSON on stdout instead of the table.
    pub json_stdout: bool,
    /// SVG plot file.
    pub plot: Option<PathBuf>,
    /// Run the libibmad anchor too.
    pub vs_libibmad: bool,
}

fn usage_err(m: impl Into<String>) -> CliError {
    CliError::Stderr(format!("mad bench: {}\n{USAGE}", m.into()), 2)
}

/// Parses `mad bench`'s arguments.
///
/// # Errors
/// An unknown option, a missing or bad value (a usage error, status 2).
pub fn parse_opts(args: &[String]) -> Result<Option<Opts>, CliError> {
    let mut o = Opts {
        windows: vec![1, 16, 256],
        budget: Budget::Seconds(1.0),
        targets: vec!["0".into(), "0,1".into()],
        rmpp: false,
        json: None,
        json_stdout: false,
        plot: None,
        vs_libibmad: false,
    };
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let bare_flag = inline.is_none() && it.peek().is_none_or(|n| n.starts_with('-'));
        let mut value = || -> Result<String, CliError> {
            match inline.clone() {
                Some(v) if v.is_empty() => Err(usage_err(format!("option {name} needs a value"))),
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| usage_err(format!("option {name} needs a value"))),
            }
        };
        match name {
            "-h" | "--help" => return Ok(None),
            "--w" | "-w" => {
                let v = value()?;
                o.windows = v
                    .split(',')
                    .map(|s| match s.trim().parse::<usize>() {
                        Ok(n) if (1..=65_535).contains(&n) => Ok(n),
                        _ => Err(usage_err(format!(
                            "--w: bad outstanding count {s:?} (1 to 65535)"
                        ))),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--seconds" => {
                let v = value()?;
                match v.parse::<f64>() {
                    Ok(s) if s > 0.0 && s.is_finite() => o.budget = Budget::Seconds(s),
                    _ => return Err(usage_err(format!("--seconds: bad duration {v:?}"))),
                }
            }
            "--queries" => {
                let v = value()?;
                match v.parse::<u64>() {
                    Ok(n) if n > 0 => o.budget = Budget::Queries(n),
                    _ => return Err(usage_err(format!("--queries: bad count {v:?}"))),
                }
            }
            "--targets" => {
                let v = value()?;
                o.targets = v.split(';').map(|s| s.trim().to_owned()).collect();
                for t in &o.targets {
                    t.parse::<DrPath>()
                        .map_err(|e| usage_err(format!("--targets: bad route {t:?}: {e}")))?;
                }
            }
            "--rmpp" => o.rmpp = true,
            "--vs-libibmad" => o.vs_libibmad = true,
            "--json" if bare_flag => {
                o.json_stdout = true;
            }
            "--json" => o.json = Some(PathBuf::from(value()?)),
            "--plot" => o.plot = Some(PathBuf::from(value()?)),
            other => return Err(usage_err(format!("unknown option {other:?}"))),
        }
    }
    Ok(Some(o))
}

/// One SMP measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct SmpResult {
    /// `runtime`, `engine` or `libibmad`.
    pub imp: String,
    /// Outstanding requests.
    pub w: usize,
    /// Answered timed queries.
    pub answered: u64,
    /// Failed timed queries (timeouts, errors).
    pub errors: u64,
    /// The timed part.
    pub seconds: f64,
    /// Answered queries per second.
    pub qps: f64,
    /// p50, p99, p99.9, max latency in microseconds.
    pub lat_us: [f64; 4],
}

/// One SA GetTable measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct RmppResult {
    /// Record type.
    pub table: &'static str,
    /// Records in the answer.
    pub records: usize,
    /// Bytes of the reassembled answer.
    pub bytes: usize,
    /// GetTables timed.
    pub repeats: u32,
    /// Mean time per GetTable.
    pub seconds_per_table: f64,
}

fn percentiles(mut ns: Vec<u64>) -> [f64; 4] {
    if ns.is_empty() {
        return [f64::NAN; 4];
    }
    ns.sort_unstable();
    let n = ns.len();
    let at = |q: f64| {
        // Nearest rank; the epsilon keeps 99.9% of 1000 at rank 999.
        let rank = ((q * n as f64 / 100.0 - 1e-9).ceil() as usize).clamp(1, n);
        ns[rank - 1] as f64 / 1000.0
    };
    [at(50.0), at(99.0), at(99.9), at(100.0)]
}

/// The closed loop shared by both drivers: slot bookkeeping, warm-up,
/// stop condition, latencies.
struct Loop {
    w: usize,
    warmup: u64,
    budget: Budget,
    sent_at: Vec<Instant>,
    issued: u64,
    done: u64,
    answered: u64,
    errors: u64,
    lat_ns: Vec<u64>,
    t0: Instant,
    t_end: Instant,
    deadline: Option<Instant>,
    stopped: bool,
}

impl Loop {
    fn new(w: usize, budget: Budget) -> Self {
        let now = Instant::now();
        // A short untimed warm-up: enough to fill the window a few times.
        let warmup = (4 * w as u64).clamp(64, 2_000);
        Self {
            w,
            warmup,
            budget,
            sent_at: vec![now; w],
            issued: 0,
            done: 0,
            answered: 0,
            errors: 0,
            lat_ns: Vec::new(),
            t0: now,
            t_end: now,
            deadline: None,
            stopped: false,
        }
    }

    /// True while more requests should go out.
    fn want_more(&self) -> bool {
        if self.stopped {
            return false;
        }
        match self.budget {
            Budget::Queries(n) => self.issued < self.warmup + n,
            Budget::Seconds(_) => true,
        }
    }

    fn sent(&mut self, slot: usize, now: Instant) {
        self.sent_at[slot] = now;
        self.issued += 1;
    }

    /// Records a completion of `slot`; true when the slot should send again.
    fn completed(&mut self, slot: usize, ok: bool, now: Instant) -> bool {
        let slot = slot.min(self.w - 1);
        if self.done >= self.warmup {
            self.lat_ns
                .push(u64::try_from((now - self.sent_at[slot]).as_nanos()).unwrap_or(u64::MAX));
            if ok {
                self.answered += 1;
            } else {
                self.errors += 1;
            }
            self.t_end = now;
        }
        self.done += 1;
        if self.done == self.warmup {
            self.t0 = now;
            self.t_end = now;
            if let Budget::Seconds(s) = self.budget {
                self.deadline = Some(now + Duration::from_secs_f64(s));
            }
        }
        if self.deadline.is_some_and(|d| now >= d) {
            self.stopped = true;
        }
        self.want_more()
    }

    fn outstanding(&self) -> u64 {
        self.issued - self.done
    }

    fn result(self, imp: &str) -> Result<SmpResult, String> {
        if self.answered == 0 {
            return Err(format!(
                "{imp} W={}: no query answered ({} errors)",
                self.w, self.errors
            ));
        }
        let seconds = (self.t_end - self.t0).as_secs_f64().max(1e-9);
        Ok(SmpResult {
            imp: imp.to_owned(),
            w: self.w,
            answered: self.answered,
            errors: self.errors,
            seconds,
            qps: self.answered as f64 / seconds,
            lat_us: percentiles(self.lat_ns),
        })
    }
}

fn requests(targets: &[String]) -> Result<Vec<SendRequest>, String> {
    targets
        .iter()
        .map(|t| {
            let r: DrPath = t.parse().map_err(|e| format!("bad route {t:?}: {e}"))?;
            let mad = r.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0, 0);
            Ok(SendRequest::new(mad, Address::smi(PERMISSIVE_LID))
                .expect_response(Duration::from_secs(1), 0))
        })
        .collect()
}

fn ok(c: &mad_agents::Completion) -> bool {
    c.status == SendStatus::Success
        && c.response
            .as_ref()
            .is_some_and(|r| r.mad().status().0 & 0x7FFF == 0)
}

/// SMP Get NodeInfo through the session's runtime with `w` outstanding.
fn smp_runtime(
    s: &Session,
    reqs: &[SendRequest],
    w: usize,
    b: Budget,
) -> Result<SmpResult, String> {
    let (agent, rx) = s
        .runtime()
        .register_channel(AgentSpec::send_only("mad-bench", Qp::Qp0))
        .map_err(|e| format!("register the bench agent: {e}"))?;
    let mut l = Loop::new(w, b);
    for slot in 0..w {
        if !l.want_more() {
            break;
        }
        l.sent(slot, Instant::now());
        agent
            .send(
                reqs[l.issued as usize % reqs.len()]
                    .clone()
                    .cookie(slot as u64),
            )
            .map_err(|e| format!("send: {e}"))?;
    }
    while l.outstanding() > 0 {
        let Some(ev) = rx.recv_timeout(Duration::from_secs(5)) else {
            return Err(format!(
                "runtime W={w}: no completion in 5 s ({} outstanding)",
                l.outstanding()
            ));
        };
        let AgentEvent::SendDone(c) = ev else {
            continue;
        };
        let now = Instant::now();
        let slot = usize::try_from(c.cookie).unwrap_or(0);
        if l.completed(slot, ok(&c), now) {
            let req = reqs[l.issued as usize % reqs.len()]
                .clone()
                .cookie(c.cookie);
            l.sent(slot.min(w - 1), Instant::now());
            agent.send(req).map_err(|e| format!("send: {e}"))?;
        }
    }
    drop(agent);
    l.result("runtime")
}

/// The same queries from an `Engine` polled on this thread.
fn smp_engine<T: Transport>(
    e: &mut Engine<T>,
    reqs: &[SendRequest],
    w: usize,
    b: Budget,
) -> Result<SmpResult, String> {
    let agent = e
        .register(AgentSpec::send_only("mad-bench-engine", Qp::Qp0))
        .map_err(|e| format!("register: {e}"))?;
    let mut l = Loop::new(w, b);
    let now = Instant::now();
    for slot in 0..w {
        if !l.want_more() {
            break;
        }
        l.sent(slot, now);
        e.send(
            agent,
            reqs[l.issued as usize % reqs.len()]
                .clone()
                .cookie(slot as u64),
            now,
        )
        .map_err(|e| format!("send: {e}"))?;
    }
    let mut idle_since = Instant::now();
    while l.outstanding() > 0 {
        let now = Instant::now();
        let progressed = e.poll(now);
        let mut any = false;
        while let Some((_, ev)) = e.poll_event() {
            let AgentEvent::SendDone(c) = ev else {
                continue;
            };
            any = true;
            let slot = usize::try_from(c.cookie).unwrap_or(0);
            if l.completed(slot, ok(&c), now) {
                let req = reqs[l.issued as usize % reqs.len()]
                    .clone()
                    .cookie(c.cookie);
                l.sent(slot.min(w - 1), now);
                e.send(agent, req, now).map_err(|e| format!("send: {e}"))?;
            }
        }
        if progressed || any {
            idle_since = now;
        } else if now - idle_since > Duration::from_secs(5) {
            return Err(format!("engine W={w}: no progress in 5 s"));
        }
    }
    let _ = e.deregister(agent);
    l.result("engine")
}

const TABLES: &[(&str, AttributeId)] = &[
    ("NodeRecord", AttributeId::SA_NODE_RECORD),
    ("PortInfoRecord", AttributeId::SA_PORTINFO_RECORD),
    ("PathRecord", AttributeId::SA_PATH_RECORD),
];

/// SA data starts after the common (24), RMPP (12) and SA (20) headers.
const SA_DATA: usize = 56;

fn rmpp(s: &mut Session, b: Budget) -> Result<Vec<RmppResult>, String> {
    let sa = s.sa()?;
    let mut out = Vec::new();
    for &(table, attr) in TABLES {
        let get = || {
            sa.request(Method::GET_TABLE, attr, 0, 0, &[])
                .map_err(|e| format!("GetTable {table}: {e}"))
        };
        let first = get()?;
        let bytes = first.bytes().len();
        let stride = first
            .bytes()
            .get(44..46)
            .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])) * 8);
        let records = bytes
            .saturating_sub(SA_DATA)
            .checked_div(stride)
            .unwrap_or(0);
        let (max_reps, limit) = match b {
            Budget::Queries(n) => (u32::try_from(n.clamp(3, 1_000)).unwrap_or(1_000), 60.0),
            Budget::Seconds(sec) => (100_000, sec),
        };
        let t0 = Instant::now();
        let mut reps = 0u32;
        while reps < max_reps && (reps < 3 || t0.elapsed().as_secs_f64() < limit) {
            get()?;
            reps += 1;
        }
        out.push(RmppResult {
            table,
            records,
            bytes,
            repeats: reps,
            seconds_per_table: t0.elapsed().as_secs_f64() / f64::from(reps.max(1)),
        });
    }
    Ok(out)
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// bench-anchor/ of the source tree (`MADSTACK_BENCH_ANCHOR_DIR` overrides).
fn anchor_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MADSTACK_BENCH_ANCHOR_DIR") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-anchor")
}

/// Builds the anchor into a fresh temporary directory.
fn build_anchor(tmp: &Path) -> Result<PathBuf, String> {
    let mut missing = Vec::new();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if which(&cc).is_none() {
        missing.push(format!("a C compiler `{cc}` (Debian package gcc)"));
    }
    if !Path::new("/usr/include/infiniband/mad.h").exists() {
        missing.push("infiniband/mad.h (Debian package libibmad-dev)".to_owned());
    }
    if !Path::new(UMAD2SIM).exists() {
        missing.push(format!("{UMAD2SIM} (Debian package libumad2sim0)"));
    }
    if !missing.is_empty() {
        return Err(format!(
            "--vs-libibmad cannot build or run the libibmad anchor: missing {}",
            missing.join(", ")
        ));
    }
    let script = anchor_dir().join("build.sh");
    if !script.is_file() {
        return Err(format!(
            "--vs-libibmad: {} not found (set MADSTACK_BENCH_ANCHOR_DIR to bench-anchor/)",
            script.display()
        ));
    }
    let out = tmp.join("anchor");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{} failed ({}); it needs libibmad-dev and libibumad-dev:\n{}",
            script.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(out)
}

/// The number under `key` in the JSON object `line` (at any depth).
fn json_num(line: &str, key: &str) -> Option<f64> {
    fn find(v: &Json, key: &str) -> Option<f64> {
        match v {
            Json::Object(m) => m
                .get(key)
                .and_then(Json::as_f64)
                .or_else(|| m.values().find_map(|x| find(x, key))),
            Json::Array(a) => a.iter().find_map(|x| find(x, key)),
            _ => None,
        }
    }
    find(&serde_json::from_str(line).ok()?, key)
}

/// Runs the anchor under libumad2sim against the ibsim of our environment.
fn run_anchor(anchor: &Path, tmp: &Path, o: &Opts) -> Result<SmpResult, String> {
    let (queries, seconds) = match o.budget {
        Budget::Queries(n) => (n, 600.0),
        // The anchor allocates a latency slot per query: bound it.
        Budget::Seconds(s) => (2_000_000, s),
    };
    let mut c = Command::new(anchor);
    for t in &o.targets {
        c.arg("-D").arg(t);
    }
    c.args(["-a", "nodeinfo", "-n", &queries.to_string()])
        .args(["-t", &seconds.to_string(), "-w", "200"])
        .current_dir(tmp)
        .env("LD_PRELOAD", UMAD2SIM)
        .stdin(Stdio::null());
    let limit = match o.budget {
        Budget::Queries(n) => Duration::from_secs(60 + n / 100),
        Budget::Seconds(s) => Duration::from_secs_f64(s * 3.0 + 30.0),
    };
    let run = crate::child::run_with_deadline(&mut c, limit)
        .map_err(|e| format!("{}: {e}", anchor.display()))?;
    let (Some(line), Some(_)) = (run.last_json_line(), run.status) else {
        return Err(format!(
            "the libibmad anchor {} ({}):\n{}{}",
            if run.status.is_none() {
                "hung"
            } else {
                "printed no result"
            },
            run.status
                .map_or_else(|| "no exit status".to_owned(), |s| s.to_string()),
            run.stdout,
            run.stderr
        ));
    };
    let get = |k: &str| json_num(line, k).unwrap_or(f64::NAN);
    let answered = get("queries");
    Ok(SmpResult {
        imp: "libibmad".into(),
        w: 1,
        answered: if answered.is_finite() {
            answered as u64
        } else {
            0
        },
        errors: json_num(line, "errors").map_or(0, |e| e as u64),
        seconds: get("seconds"),
        qps: get("qps"),
        lat_us: [get("p50"), get("p99"), get("p99.9"), get("max")],
    })
}

/// `x` rounded to 3 decimals (JSON `null` when not finite).
fn fnum(x: f64) -> Json {
    if x.is_finite() {
        Json::from((x * 1000.0).round() / 1000.0)
    } else {
        Json::Null
    }
}

/// The numbers as JSON (the shape in the module documentation), without
/// the envelope.
fn to_json(transport: &str, place: &str, o: &Opts, smp: &[SmpResult], rm: &[RmppResult]) -> Json {
    let base = smp.iter().find(|r| r.imp == "libibmad").map(|r| r.qps);
    let smp: Vec<Json> = smp
        .iter()
        .map(|r| {
            serde_json::json!({
                "impl": r.imp,
                "outstanding": r.w,
                "queries": r.answered,
                "errors": r.errors,
                "seconds": fnum(r.seconds),
                "qps": fnum(r.qps),
                "lat_us": {
                    "p50": fnum(r.lat_us[0]),
                    "p99": fnum(r.lat_us[1]),
                    "p99.9": fnum(r.lat_us[2]),
                    "max": fnum(r.lat_us[3]),
                },
                "ratio_vs_libibmad": base.map_or(Json::Null, |b| fnum(r.qps / b)),
            })
        })
        .collect();
    let rmpp: Vec<Json> = rm
        .iter()
        .map(|r| {
            serde_json::json!({
                "table": r.table,
                "records": r.records,
                "bytes": r.bytes,
                "repeats": r.repeats,
                "seconds_per_table": r.seconds_per_table,
                "bytes_per_sec": fnum(r.bytes as f64 / r.seconds_per_table),
            })
        })
        .collect();
    serde_json::json!({
        "transport": transport,
        "where": place,
        "targets": o.targets,
        "attribute": "NodeInfo",
        "smp": smp,
        "rmpp": rmpp,
    })
}

fn format_table(smp: &[SmpResult], rm: &[RmppResult]) -> String {
    let base = smp.iter().find(|r| r.imp == "libibmad").map(|r| r.qps);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<9} {:>5} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10}",
        "impl", "W", "queries/s", "p50 us", "p99 us", "p99.9 us", "answered", "errors", "vs ibmad"
    );
    for r in smp {
        let ratio = base.map_or_else(|| "-".to_owned(), |b| format!("{:.2}x", r.qps / b));
        let _ = writeln!(
            s,
            "{:<9} {:>5} {:>12.0} {:>9.1} {:>9.1} {:>9.1} {:>9} {:>7} {:>10}",
            r.imp, r.w, r.qps, r.lat_us[0], r.lat_us[1], r.lat_us[2], r.answered, r.errors, ratio
        );
    }
    if !rm.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<15} {:>8} {:>10} {:>8} {:>12} {:>12}",
            "SA GetTable", "records", "bytes", "repeats", "ms/table", "MB/s"
        );
        for r in rm {
            let _ = writeln!(
                s,
                "{:<15} {:>8} {:>10} {:>8} {:>12.3} {:>12.2}",
                r.table,
                r.records,
                r.bytes,
                r.repeats,
                r.seconds_per_table * 1e3,
                r.bytes as f64 / r.seconds_per_table / 1e6
            );
        }
    }
    s
}

/// A hand-written SVG: rate against W (log-log), and GetTable bytes/s
/// against table size.
#[must_use]
pub fn plot_svg(smp: &[SmpResult], rm: &[RmppResult]) -> String {
    let panels = if rm.is_empty() { 1 } else { 2 };
    let (pw, ph) = (480.0_f64, 320.0_f64);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        pw * f64::from(panels),
        ph
    );
    let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
    // Panel geometry: margins, log scales.
    let (l, r, t, b) = (70.0, 20.0, 30.0, 45.0);
    let axis = |s: &mut String, x0: f64, title: &str, xl: &str, yl: &str| {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{title}</text>\n\
             <line x1=\"{a}\" y1=\"{c}\" x2=\"{bx}\" y2=\"{c}\" stroke=\"black\"/>\n\
             <line x1=\"{a}\" y1=\"{t}\" x2=\"{a}\" y2=\"{c}\" stroke=\"black\"/>\n\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{xl}</text>\n\
             <text x=\"14\" y=\"{}\" transform=\"rotate(-90 {} {})\" text-anchor=\"middle\">{yl}</text>\n",
            x0 + pw / 2.0,
            x0 + (l + pw - r) / 2.0,
            ph - 8.0,
            ph / 2.0,
            x0 + 14.0,
            ph / 2.0,
            a = x0 + l,
            bx = x0 + pw - r,
            c = ph - b,
        );
    };
    let scale = |v: &[f64]| -> (f64, f64) {
        let lo = v
            .iter()
            .copied()
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        if !lo.is_finite() || hi <= 0.0 {
            return (0.0, 1.0);
        }
        let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
        (lo, if hi > lo { hi } else { lo + 1.0 })
    };
    let map = |v: f64, (lo, hi): (f64, f64), a: f64, b: f64| -> f64 {
        let x = if v > 0.0 { v.log10() } else { lo };
        a + (x - lo) / (hi - lo) * (b - a)
    };
    let yticks = |s: &mut String, x0: f64, ys: (f64, f64)| {
        let mut e = ys.0;
        while e <= ys.1 + 1e-9 {
            let y = map(10f64.powf(e), ys, ph - b, t);
            let _ = writeln!(
                s,
                "<line x1=\"{}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">1e{e}</text>",
                x0 + l,
                x0 + pw - r,
                x0 + l - 4.0,
                y + 4.0
            );
            e += 1.0;
        }
    };
    // Panel 1: queries/s against W.
    axis(
        &mut s,
        0.0,
        "SMP Get NodeInfo",
        "outstanding (W)",
        "queries / s",
    );
    let ws: Vec<f64> = smp.iter().map(|r| r.w as f64).collect();
    let xs = scale(&ws);
    let ys = scale(&smp.iter().map(|r| r.qps).collect::<Vec<_>>());
    yticks(&mut s, 0.0, ys);
    let mut w_ticks: Vec<usize> = smp.iter().map(|r| r.w).collect();
    w_ticks.sort_unstable();
    w_ticks.dedup();
    for w in &w_ticks {
        let x = map(*w as f64, xs, l, pw - r);
        let _ = writeln!(
            s,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{w}</text>",
            ph - b + 14.0
        );
    }
    let mut imps: Vec<&str> = Vec::new();
    for r in smp {
        if !imps.contains(&r.imp.as_str()) {
            imps.push(&r.imp);
        }
    }
    for (i, imp) in imps.iter().enumerate() {
        let color = colors[i % colors.len()];
        let pts: Vec<(f64, f64)> = smp
            .iter()
            .filter(|r| r.imp == *imp)
            .map(|x| (map(x.w as f64, xs, l, pw - r), map(x.qps, ys, ph - b, t)))
            .collect();
        if *imp == "libibmad" {
            // One query at a time: a level across the plot.
            if let Some(&(_, y)) = pts.first() {
                let _ = writeln!(
                    s,
                    "<line x1=\"{l}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-dasharray=\"5,4\"/>",
                    pw - r
                );
            }
        } else {
            let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                path.join(" ")
            );
        }
        for (x, y) in &pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{imp}</text>",
            l + 10.0,
            t + 14.0 * (i as f64 + 1.0)
        );
    }
    if !rm.is_empty() {
        let x0 = pw;
        axis(
            &mut s,
            x0,
            "SA GetTable (RMPP)",
            "table size (bytes)",
            "bytes / s",
        );
        let sizes: Vec<f64> = rm.iter().map(|r| r.bytes as f64).collect();
        let rates: Vec<f64> = rm
            .iter()
            .map(|r| r.bytes as f64 / r.seconds_per_table)
            .collect();
        let xs = scale(&sizes);
        let ys = scale(&rates);
        yticks(&mut s, x0, ys);
        let mut pts: Vec<(f64, f64, &str)> = rm
            .iter()
            .zip(&rates)
            .map(|(x, q)| {
                (
                    map(x.bytes as f64, xs, x0 + l, x0 + pw - r),
                    map(*q, ys, ph - b, t),
                    x.table,
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut e = xs.0;
        while e <= xs.1 + 1e-9 {
            let x = map(10f64.powf(e), xs, x0 + l, x0 + pw - r);
            let _ = writeln!(
                s,
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">1e{e}</text>",
                ph - b + 14.0
            );
            e += 1.0;
        }
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            colors[0],
            path.join(" ")
        );
        for (x, y, name) in &pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
                colors[0],
                x + 5.0,
                y - 5.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Runs `mad bench`.
///
/// # Errors
/// Bad options, no port, a measurement that gets no answer, the anchor
/// that cannot be built or run, an output file that cannot be written.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let Some(o) = parse_opts(&inv.args)? else {
        if inv.session.json {
            inv.session.json = false;
        }
        inv.io.out(USAGE);
        return Ok(());
    };
    if o.json_stdout {
        inv.session.json = true;
    }
    let reqs = requests(&o.targets).map_err(CliError::Failed)?;
    let under_umad2sim = std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("umad2sim"));
    let transport = match &inv.session.transport {
        TransportChoice::Sim(_) => "sim",
        TransportChoice::IbSim => "ibsim",
        _ => "umad",
    };
    if o.vs_libibmad && !(transport == "ibsim" || (transport == "umad" && under_umad2sim)) {
        return Err(usage_err(
            "--vs-libibmad needs --ibsim (or the umad transport under libumad2sim): \
             the anchor runs over the same ibsim",
        ));
    }
    // Build the anchor first: a missing package fails before measuring.
    let tmp = std::env::temp_dir().join(format!("mad-bench-{}", std::process::id()));
    let anchor = if o.vs_libibmad {
        std::fs::create_dir_all(&tmp)
            .map_err(|e| CliError::Failed(format!("{}: {e}", tmp.display())))?;
        match build_anchor(&tmp) {
            Ok(a) => Some(a),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(CliError::Failed(e));
            }
        }
    } else {
        None
    };
    let spinner = crate::discover::progress::Spinner::start("bench: measuring");
    let r = measure(inv, &o, &reqs, anchor.as_deref(), &tmp);
    drop(spinner);
    if anchor.is_some() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let (place, smp, rm) = r?;
    let json = to_json(transport, &place, &o, &smp, &rm);
    if inv.session.json {
        crate::ibdiag::print_json(inv, &json);
    } else {
        inv.io.out(&format!(
            "# SMP Get NodeInfo, routes {}; {place}\n",
            o.targets.join(" ")
        ));
        inv.io.out(&format_table(&smp, &rm));
    }
    if let Some(path) = &o.json {
        let mut text = crate::json::Envelope::new(inv.command, json).to_text();
        text.push('\n');
        std::fs::write(path, text)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    }
    if let Some(path) = &o.plot {
        std::fs::write(path, plot_svg(&smp, &rm))
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

type Measured = (String, Vec<SmpResult>, Vec<RmppResult>);

fn measure(
    inv: &mut Invocation<'_, '_>,
    o: &Opts,
    reqs: &[SendRequest],
    anchor: Option<&Path>,
    tmp: &Path,
) -> Result<Measured, CliError> {
    let mut session = Session::open(&inv.session).map_err(|e| CliError::Failed(e.to_string()))?;
    let place = session.describe();
    let mut smp = Vec::new();
    for &w in &o.windows {
        smp.push(smp_runtime(&session, reqs, w, o.budget).map_err(CliError::Failed)?);
    }
    if let Backend::Sim(_) = session.backend() {
        let topo = match &inv.session.transport {
            TransportChoice::Sim(t) => t.clone(),
            _ => None,
        };
        let f = crate::session::sim::bring_up(topo.as_deref()).map_err(CliError::Failed)?;
        let at = f
            .endpoint_at(inv.session.sim_node.as_deref())
            .map_err(CliError::Failed)?;
        let port = f.attach(at).map_err(CliError::Failed)?;
        let mut e = Engine::new(port, EngineConfig::default());
        for &w in &o.windows {
            smp.push(smp_engine(&mut e, reqs, w, o.budget).map_err(CliError::Failed)?);
        }
    }
    // No SA (ibsim without an SM, say): the SMP numbers still count.
    let rm = if o.rmpp {
        rmpp(&mut session, o.budget).unwrap_or_else(|e| {
            inv.io.err(&format!("mad bench: --rmpp skipped: {e}\n"));
            Vec::new()
        })
    } else {
        Vec::new()
    };
    if let Some(a) = anchor {
        smp.push(run_anchor(a, tmp, o).map_err(CliError::Failed)?);
    }
    let _ = session.close();
    Ok((place, smp, rm))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse_windows_budget_and_files() {
        let o = parse_opts(&args(&[
            "--w",
            "1,4",
            "--queries=50",
            "--rmpp",
            "--json",
            "x.json",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.windows, [1, 4]);
        assert_eq!(o.budget, Budget::Queries(50));
        assert!(o.rmpp);
        assert_eq!(o.json, Some(PathBuf::from("x.json")));
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for bad in [
            &["--w", "0"][..],
            &["--seconds", "-1"],
            &["--frob"],
            &["--json="],
        ] {
            let e = parse_opts(&args(bad)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn json_without_a_file_means_stdout() {
        let o = parse_opts(&args(&["--json"])).unwrap().unwrap();
        assert!(o.json_stdout && o.json.is_none());
        let o = parse_opts(&args(&["--json", "--rmpp"])).unwrap().unwrap();
        assert!(o.json_stdout && o.rmpp);
        let o = parse_opts(&args(&["--json", "f.json"])).unwrap().unwrap();
        assert!(!o.json_stdout && o.json == Some(PathBuf::from("f.json")));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = percentiles((1..=1000).map(|i| i * 1000).collect());
        assert_eq!(p, [500.0, 990.0, 999.0, 1000.0]);
    }

    #[test]
    fn json_num_reads_the_anchor_line() {
        let l = r#"{"impl":"libibmad","queries":2000,"qps":12345.6,"lat_us":{"p50":80.25,"p99.9":120}}"#;
        assert_eq!(json_num(l, "qps"), Some(12345.6));
        assert_eq!(json_num(l, "p50"), Some(80.25));
        assert_eq!(json_num(l, "p99.9"), Some(120.0));
        assert_eq!(json_num(l, "nope"), None);
    }

    #[test]
    fn plot_has_a_point_per_measurement() {
        let r = |imp: &str, w, qps| SmpResult {
            imp: imp.into(),
            w,
            answered: 10,
            errors: 0,
            seconds: 1.0,
            qps,
            lat_us: [1.0; 4],
        };
        let svg = plot_svg(&[r("runtime", 1, 1e4), r("runtime", 16, 1e5)], &[]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
