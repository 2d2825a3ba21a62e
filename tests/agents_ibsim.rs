//! mad-agents' SMP and PerfMgt clients against a real ibsim, through both
//! the ibsim transport and the umad transport under libumad2sim, compared
//! field by field with what infiniband-diags' `smpquery` and `perfquery`
//! print for the same node, on every topology in tests/fixtures/topologies.
//!
//! Per topology: ibsim starts, OpenSM (under libumad2sim) assigns LIDs, a
//! directed-route sweep finds every node and its route. Then for every
//! node — NodeInfo and PortInfo (port 0 of a switch, the first port of a
//! CA) by directed route, SwitchInfo of every switch, PerfMgt PortCounters
//! (port 1) by LID:
//! - madstack fetches them through a [`Runtime`] over the ibsim transport;
//! - a child process (this test binary re-run with
//!   `LD_PRELOAD=libumad2sim.so` and [`CHILD_ENV`] set) fetches them
//!   through a runtime over the umad transport;
//! - `smpquery -D ...` / `perfquery LID PORT` run under libumad2sim.
//!
//! Each fetched attribute is printed with the diags formatters of
//! `tools/src/diags` (the smpquery/perfquery layout), both texts are split
//! into `Label: value` fields, and every field must be present on both
//! sides with the same value.
//!
//! Outside CI a missing ibsim / OpenSM / infiniband-diags / libumad2sim
//! makes the test print "NOT RUN" and return; with `CI=true` it fails.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::opensm::OpenSm;

use mad_agents::perf::PerfClient;
use mad_agents::smp::{SmpClient, SmpTarget};
use mad_agents::{EngineConfig, QueryError, Runtime};
use mad_core::transport::ibsim::{IbSimTransport, IBSIM_MAX_IN_FLIGHT};
use mad_core::transport::umad::UmadTransport;
use mad_core::wire::attr::NodeType;
use mad_core::wire::smp::DrPath;
use mad_tools::diags::{perf as dperf, smp as dsmp, PortIdText};
use support::IbSim;

/// Set in the child: the query file to read (results go to `<file>.out`).
const CHILD_ENV: &str = "MADSTACK_AGENTS_UMAD_CHILD";
/// Parallel infiniband-diags processes (ibsim serves 10 clients: OpenSM,
/// our ibsim transport and these).
const DIAG_WORKERS: usize = 7;

const NEEDS: &[(&str, &str)] = &[
    ("ibsim", "ibsim-utils"),
    ("opensm", "opensm"),
    ("smpquery", "infiniband-diags"),
    ("perfquery", "infiniband-diags"),
    (support::UMAD2SIM, "libumad2sim0"),
];

/// What is asked of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Query {
    /// Directed route: egress ports of each hop.
    hops: Vec<u8>,
    /// PortInfo port (0 for a switch).
    port: u8,
    switch: bool,
    /// LID of the node (switch port 0 / CA port) for PerfMgt.
    lid: u16,
    /// PortCounters port.
    perf_port: u8,
}

impl Query {
    fn path_text(&self) -> String {
        DrPath::from_hops(&self.hops)
            .map(|p| p.to_string())
            .unwrap_or_default()
    }
    fn portid(&self) -> PortIdText {
        let mut p = vec![0u8];
        p.extend(&self.hops);
        PortIdText::dr(&p)
    }
    fn to_line(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}",
            self.path_text(),
            self.port,
            u8::from(self.switch),
            self.lid,
            self.perf_port
        )
    }
    fn from_line(l: &str) -> Query {
        let f: Vec<&str> = l.split('|').collect();
        assert_eq!(f.len(), 5, "bad query line {l:?}");
        let path: DrPath = f[0].parse().expect("path");
        Query {
            hops: path.hops().to_vec(),
            port: f[1].parse().expect("port"),
            switch: f[2] == "1",
            lid: f[3].parse().expect("lid"),
            perf_port: f[4].parse().expect("perf port"),
        }
    }
}

/// The kinds of answer compared.
const KINDS: [&str; 4] = ["nodeinfo", "portinfo", "switchinfo", "perfquery"];

/// Text per (node index, kind); a failed query is `ERROR: ...`.
type Answers = BTreeMap<(usize, &'static str), String>;

fn err(e: &QueryError) -> String {
    format!("ERROR: {e}\n")
}

/// Fetches every answer through madstack's clients and prints it as the
/// tool would.
fn fetch_all(smp: &SmpClient, perf: &PerfClient, queries: &[Query]) -> Answers {
    let mut out = Answers::new();
    let mut caps: BTreeMap<u16, u16> = BTreeMap::new();
    for (i, q) in queries.iter().enumerate() {
        let target = SmpTarget::dr(&q.hops).expect("route");
        let portid = q.portid();
        let t = match smp.node_info(&target) {
            Ok(ni) => dsmp::format_nodeinfo(&portid, &ni),
            Err(e) => err(&e),
        };
        out.insert((i, "nodeinfo"), t);
        let t = match smp.port_info(&target, q.port) {
            Ok(pi) => dsmp::format_portinfo(&portid, i32::from(q.port), &pi, false),
            Err(e) => err(&e),
        };
        out.insert((i, "portinfo"), t);
        if q.switch {
            let t = match smp.switch_info(&target) {
                Ok(si) => dsmp::format_switchinfo(&portid, &si),
                Err(e) => err(&e),
            };
            out.insert((i, "switchinfo"), t);
        }
        out.insert((i, "perfquery"), fetch_perf(perf, q, &mut caps));
    }
    out
}

fn fetch_perf(perf: &PerfClient, q: &Query, caps: &mut BTreeMap<u16, u16>) -> String {
    let cap = match caps.get(&q.lid) {
        Some(c) => *c,
        None => match perf.class_port_info(q.lid) {
            Ok(cpi) => {
                caps.insert(q.lid, cpi.capability_mask);
                cpi.capability_mask
            }
            Err(e) => return err(&e),
        },
    };
    match perf.port_counters(q.lid, q.perf_port) {
        Ok(pc) => {
            dperf::format_perfcounters(&PortIdText::lid(q.lid), i32::from(q.perf_port), cap, &pc)
        }
        Err(e) => err(&e),
    }
}

fn write_answers(path: &Path, a: &Answers) {
    let mut s = String::new();
    for ((i, k), t) in a {
        s.push_str(&format!("=== {i} {k}\n{t}"));
    }
    fs::write(path, s).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn read_answers(path: &Path) -> Answers {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Answers::new();
    let mut cur: Option<(usize, &'static str)> = None;
    let mut buf = String::new();
    for l in text.split_inclusive('\n') {
        if let Some(h) = l.strip_prefix("=== ") {
            if let Some(k) = cur.take() {
                out.insert(k, std::mem::take(&mut buf));
            }
            let mut it = h.split_whitespace();
            let i: usize = it.next().and_then(|x| x.parse().ok()).expect("index");
            let kind = it.next().expect("kind");
            let kind = KINDS
                .iter()
                .find(|k| **k == kind)
                .copied()
                .expect("known kind");
            cur = Some((i, kind));
        } else {
            buf.push_str(l);
        }
    }
    if let Some(k) = cur {
        out.insert(k, buf);
    }
    out
}

/// `Label:....value` lines as (label, value), continuation lines (tab
/// indented) appended to the value; `#` header lines kept under "#".
fn fields(text: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for l in text.lines() {
        if l.starts_with('\t') {
            if let Some(last) = v.last_mut() {
                last.1.push('|');
                last.1.push_str(l.trim());
            }
            continue;
        }
        if l.starts_with('#') {
            v.push(("#".into(), l.to_owned()));
            continue;
        }
        match l.split_once(':') {
            Some((label, rest)) => {
                v.push((label.to_owned(), rest.trim_start_matches('.').to_owned()));
            }
            None => v.push(("?".into(), l.to_owned())),
        }
    }
    v
}

/// PortCounters that count the traffic (queries included) and so move
/// between any two reads of a port on a queried path.
const TRAFFIC: [&str; 4] = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"];

/// Checks that the traffic counters of the texts `seq` never decrease, in
/// the order they were read.
fn traffic_in_order(seq: &[(&str, &str)]) -> Vec<String> {
    let parsed: Vec<(&str, Vec<(String, String)>)> =
        seq.iter().map(|(who, t)| (*who, fields(t))).collect();
    let mut out = Vec::new();
    for label in TRAFFIC {
        let vals: Vec<(&str, Option<u64>)> = parsed
            .iter()
            .map(|(who, f)| {
                (
                    *who,
                    f.iter()
                        .find(|(l, _)| l == label)
                        .and_then(|(_, v)| v.parse().ok()),
                )
            })
            .collect();
        if vals.iter().any(|(_, v)| v.is_none()) || vals.windows(2).any(|w| w[0].1 > w[1].1) {
            out.push(format!("{label} read in this order: {vals:?}"));
        }
    }
    out
}

/// Field-by-field differences of `ours` from the tool's text, leaving
/// out the values of the fields in `skip` (their presence still counts).
fn diff_except(tool: &str, ours: &str, skip: &[&str]) -> Vec<String> {
    let (a, b) = (fields(tool), fields(ours));
    let mut out = Vec::new();
    if a.is_empty() {
        out.push("the tool printed nothing".to_owned());
    }
    for (i, (label, value)) in a.iter().enumerate() {
        match b.get(i) {
            Some((l2, v2)) if l2 == label && (v2 == value || skip.contains(&label.as_str())) => {}
            Some((l2, v2)) => out.push(format!("{label}: tool {value:?}, madstack {l2}: {v2:?}")),
            None => out.push(format!(
                "{label}: tool {value:?}, madstack has no such field"
            )),
        }
    }
    for (label, value) in b.iter().skip(a.len()) {
        out.push(format!(
            "{label}: madstack {value:?}, the tool prints no such field"
        ));
    }
    out
}

// ------------------------------------------------------------ OpenSM

// ------------------------------------------------------------ the parts

fn sweep(sim: &IbSim) -> Vec<Query> {
    let mut t = IbSimTransport::attach(sim.config()).unwrap_or_else(|e| panic!("attach: {e}"));
    let (fabric, _) = support::sweep::dr_sweep(
        &mut t,
        64.min(IBSIM_MAX_IN_FLIGHT),
        |t: &mut IbSimTransport| {
            t.wait_readable(Duration::from_millis(5))
                .map_err(|e| e.to_string())?;
            Ok(())
        },
    )
    .unwrap_or_else(|e| panic!("sweep: {e}"));
    let mut qs: Vec<Query> = fabric
        .nodes
        .values()
        .map(|n| {
            let switch = n.info.node_type == NodeType::SWITCH;
            // A CA is asked about the port the sweep entered it by (the
            // one with a LID); a switch about its management port 0.
            let port = if switch { 0 } else { n.info.local_port_num };
            let lid = n.ports.get(&port).map_or(0, |p| p.lid);
            Query {
                hops: n.path.clone(),
                port,
                switch,
                lid,
                perf_port: if switch { 1 } else { port },
            }
        })
        .collect();
    qs.sort_by(|a, b| a.hops.cmp(&b.hops));
    qs
}

/// madstack over the ibsim transport.
struct Ours {
    rt: Runtime,
    smp: SmpClient,
    perf: PerfClient,
}

impl Ours {
    fn start(sim: &IbSim) -> Ours {
        let t = IbSimTransport::attach(sim.config()).unwrap_or_else(|e| panic!("attach: {e}"));
        let rt = Runtime::start(t, EngineConfig::default()).expect("runtime");
        let smp = SmpClient::new(&rt).expect("smp agent");
        let perf = PerfClient::new(&rt).expect("perf agent");
        Ours { rt, smp, perf }
    }

    fn fetch(&self, queries: &[Query]) -> Answers {
        fetch_all(&self.smp, &self.perf, queries)
    }

    /// PortCounters of every node again.
    fn fetch_perf(&self, queries: &[Query]) -> Answers {
        let mut caps = BTreeMap::new();
        queries
            .iter()
            .enumerate()
            .map(|(i, q)| ((i, "perfquery"), fetch_perf(&self.perf, q, &mut caps)))
            .collect()
    }
}

fn through_umad_child(sim: &IbSim, queries: &[Query], tag: &str) -> Answers {
    let qfile = std::env::temp_dir().join(format!(
        "madstack-agents-umad-{}-{tag}.queries",
        std::process::id()
    ));
    let lines: Vec<String> = queries.iter().map(Query::to_line).collect();
    fs::write(&qfile, lines.join("\n")).expect("query file");
    let out = qfile.with_extension("out");
    let _ = fs::remove_file(&out);
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd: Command = sim.umad2sim_command(exe.to_str().expect("utf-8 path"));
    let res = cmd
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, &qfile)
        .stdin(Stdio::null())
        .output()
        .expect("run the umad child");
    assert!(
        res.status.success() && out.exists(),
        "umad child failed ({}):\n{}\n{}",
        res.status,
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    let a = read_answers(&out);
    let _ = fs::remove_file(&qfile);
    let _ = fs::remove_file(&out);
    a
}

/// The child: the same fetches through the umad transport.
fn umad_child(qfile: &Path) {
    let text = fs::read_to_string(qfile).expect("query file");
    let queries: Vec<Query> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(Query::from_line)
        .collect();
    let t = UmadTransport::open(None, 0).unwrap_or_else(|e| panic!("umad open: {e}"));
    let rt = Runtime::start(t, EngineConfig::default()).expect("runtime");
    let smp = SmpClient::new(&rt).expect("smp agent");
    let perf = PerfClient::new(&rt).expect("perf agent");
    let a = fetch_all(&smp, &perf, &queries);
    write_answers(&qfile.with_extension("out"), &a);
}

/// Runs a tool under libumad2sim. libumad2sim sometimes fails to open its
/// port when several processes attach at once ("can't open UMAD port"):
/// a failed or empty run is retried a few times before it counts.
fn run_tool(sim: &IbSim, prog: &str, args: &[String]) -> String {
    let mut last = String::new();
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(20 * attempt));
        }
        let out = sim.umad2sim_output(prog, args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && stdout.lines().count() > 2 {
            return stdout;
        }
        last = format!(
            "ERROR: {prog} {args:?} exited {} after {} tries: {}\n{stdout}",
            out.status,
            attempt + 1,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    last
}

fn tool_args(q: &Query, kind: &str) -> (&'static str, Vec<String>) {
    match kind {
        "nodeinfo" | "switchinfo" => ("smpquery", vec!["-D".into(), kind.into(), q.path_text()]),
        "portinfo" => (
            "smpquery",
            vec!["-D".into(), kind.into(), q.path_text(), q.port.to_string()],
        ),
        _ => (
            "perfquery",
            vec![q.lid.to_string(), q.perf_port.to_string()],
        ),
    }
}

fn through_diags(sim: &IbSim, queries: &[Query]) -> Answers {
    let jobs: Vec<(usize, &'static str)> = queries
        .iter()
        .enumerate()
        .flat_map(|(i, q)| {
            KINDS
                .iter()
                .filter(move |k| **k != "switchinfo" || q.switch)
                .map(move |k| (i, *k))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let out = Mutex::new(Answers::new());
    std::thread::scope(|s| {
        for _ in 0..DIAG_WORKERS {
            s.spawn(|| loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(i, kind)) = jobs.get(j) else { break };
                let (prog, args) = tool_args(&queries[i], kind);
                let t = run_tool(sim, prog, &args);
                out.lock().expect("answers").insert((i, kind), t);
            });
        }
    });
    out.into_inner().expect("answers")
}

const TEST_NAME: &str = "smp_and_perfmgt_answers_equal_smpquery_and_perfquery_on_every_topology";

#[test]
fn smp_and_perfmgt_answers_equal_smpquery_and_perfquery_on_every_topology() {
    if let Some(q) = std::env::var_os(CHILD_ENV) {
        umad_child(Path::new(&q));
        return;
    }
    if !support::require(NEEDS) {
        return;
    }
    let mut failures = Vec::new();
    // MADSTACK_AGENTS_TOPOLOGY=NAME limits a local run to one file.
    let only = std::env::var("MADSTACK_AGENTS_TOPOLOGY").ok();
    for netfile in support::topology_files() {
        let name = netfile
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let t0 = Instant::now();
        let sim = IbSim::start(&netfile);
        let _osm = OpenSm::start(&sim, "", Duration::from_secs(120));
        let queries = sweep(&sim);
        assert!(!queries.is_empty(), "{name}: no node found");
        let mut phases = vec![("opensm + sweep", t0.elapsed())];
        let mut mark = |what: &'static str, since: Instant| phases.push((what, since.elapsed()));
        let t = Instant::now();
        let ours = Ours::start(&sim);
        let first = ours.fetch(&queries);
        mark("ibsim transport", t);
        let t = Instant::now();
        let umad = through_umad_child(&sim, &queries, &name);
        mark("umad transport", t);
        let t = Instant::now();
        let tools = through_diags(&sim, &queries);
        mark("smpquery/perfquery", t);
        let last = ours.fetch_perf(&queries);
        let st = ours.rt.engine_stats();
        assert_eq!(st.sends, st.completions, "{name}: {st:?}");
        let mut compared = 0usize;
        for (key, tool) in &tools {
            let q = &queries[key.0];
            let perf = key.1 == "perfquery";
            let skip: &[&str] = if perf { &TRAFFIC } else { &[] };
            for (via, answers) in [("ibsim transport", &first), ("umad transport", &umad)] {
                let mine = answers.get(key).map_or("", String::as_str);
                let d = diff_except(tool, mine, skip);
                if d.is_empty() {
                    compared += 1;
                } else {
                    failures.push(format!(
                        "{name}: {} {:?} via the {via}:\n  {}\n--- tool:\n{tool}--- madstack:\n{mine}",
                        key.1,
                        tool_args(q, key.1),
                        d.join("\n  ")
                    ));
                }
            }
            if perf {
                // Read in this order: ibsim transport, umad transport, the
                // tool, ibsim transport again.
                let get = |a: &Answers| a.get(key).cloned().unwrap_or_default();
                let seq = [
                    ("madstack/ibsim", get(&first)),
                    ("madstack/umad", get(&umad)),
                    ("perfquery", tool.clone()),
                    ("madstack/ibsim again", get(&last)),
                ];
                let seq: Vec<(&str, &str)> = seq.iter().map(|(w, t)| (*w, t.as_str())).collect();
                let d = traffic_in_order(&seq);
                if !d.is_empty() {
                    failures.push(format!(
                        "{name}: {:?}: {}",
                        tool_args(q, key.1),
                        d.join("; ")
                    ));
                }
            }
        }
        eprintln!(
            "{name}: {} nodes, {compared} answers equal the tools' in {:?} ({phases:?})",
            queries.len(),
            t0.elapsed()
        );
        if failures.len() > 20 {
            break;
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn lid_routed_smps_and_a_counter_reset_work_against_ibsim() {
    if std::env::var_os(CHILD_ENV).is_some() || !support::require(NEEDS) {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join("net.2sw2path4hca"));
    let _osm = OpenSm::start(&sim, "", Duration::from_secs(120));
    let queries = sweep(&sim);
    let ours = Ours::start(&sim);
    for q in &queries {
        assert_ne!(q.lid, 0, "OpenSM gave every node a LID: {q:?}");
        let dr = ours
            .smp
            .node_info(&SmpTarget::dr(&q.hops).expect("route"))
            .expect("DR NodeInfo");
        let mut by_lid = ours
            .smp
            .node_info(&SmpTarget::Lid(q.lid))
            .expect("LID-routed NodeInfo");
        assert_eq!(by_lid.node_guid, dr.node_guid, "{q:?}");
        // LocalPortNum: a LID-routed SMP to a switch arrives at port 0.
        if q.switch {
            assert_eq!(by_lid.local_port_num, 0);
            by_lid.local_port_num = dr.local_port_num;
        }
        assert_eq!(
            by_lid, dr,
            "the same answer by LID and by directed route: {q:?}"
        );
        let pi = ours
            .smp
            .port_info(&SmpTarget::Lid(q.lid), q.port)
            .expect("PortInfo by LID");
        assert_eq!(pi.lid, q.lid);
        // Traffic has gone through the port; a reset clears what it selects.
        let before = ours
            .perf
            .port_counters(q.lid, q.perf_port)
            .expect("PortCounters");
        assert!(before.port_xmit_pkts > 0, "{q:?}: {before:?}");
        ours.perf
            .reset_counters(q.lid, q.perf_port, mad_agents::perf::SELECT_ALL)
            .expect("reset");
        let after = ours
            .perf
            .port_counters(q.lid, q.perf_port)
            .expect("PortCounters");
        assert!(
            after.port_xmit_pkts < before.port_xmit_pkts && after.port_xmit_pkts <= 2,
            "{q:?}: {before:?} -> {after:?}"
        );
    }
    // A SwitchInfo of a CA is refused with a status, not a timeout.
    let ca = queries.iter().find(|q| !q.switch).expect("a CA");
    match ours.smp.switch_info(&SmpTarget::Lid(ca.lid)) {
        Err(QueryError::Status { status, .. }) => assert_ne!(status.0, 0),
        other => panic!("SwitchInfo of a CA: {other:?}"),
    }
    // A LID nobody has times out.
    let mut smp = SmpClient::new(&ours.rt).expect("agent");
    smp.timeout = Duration::from_millis(50);
    smp.retries = 1;
    assert!(matches!(
        smp.node_info(&SmpTarget::Lid(0xBFFF)),
        Err(QueryError::Timeout { retries: 1 })
    ));
}
