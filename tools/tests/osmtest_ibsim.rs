//! OpenSM's own SA test program, `osmtest` (opensm 3.3.23), against
//! OpenSM on ibsim and against the SA of the built-in fabric served in
//! ibsim's protocol (`mad sim --serve`), both on the `net` topology and
//! both through libumad2sim, attached at Hca1:
//!
//! - `-f c` (create the inventory) passes against both, and the two
//!   inventories list as many nodes, ports, paths and links: osmtest
//!   counts an answer's records by the length libumad2sim gives it, so the
//!   served fabric's table answers arrive at their real length (padded to
//!   256 bytes, its links came out 25 instead of OpenSM's 8);
//! - `-f q` (QoS: the VLArbitration and SLtoVL tables of every switch
//!   port and of every CA, queried at port 0) passes against both;
//! - `-f f -s2` (the flood of 4,000 multi-MAD RMPP answers: NodeRecord,
//!   PathRecord and PortInfoRecord tables) passes against both;
//! - `-f v` (validate the inventory): its six MultiPathRecord (GetMulti,
//!   a double-sided RMPP request) queries get the same answers from both:
//!   records for one source and one destination GID and for the 2 × 2
//!   APM query, status 0x0600 without SGIDCount / DGIDCount, 0x0500 for a
//!   multicast GID. The flow goes no further against either (OpenSM under
//!   libumad2sim stops answering at its next P_KeyTableRecord query,
//!   ours refuses no SM_Key there), so only that part is compared.
//!
//! And madstack's SA client does the same MultiPathRecord queries
//! ([`SaClient::multipath`]) against both, and GetTraceTable
//! ([`SaClient::trace_table`]): OpenSM 3.3.23 leaves it unanswered (it
//! registers no such method), ours answers the TraceRecords of the path,
//! on the served fabric and from `mad sm`.
//!
//! Every osmtest run is bounded (killed by its PID after its time); the
//! flows `-f a` and the other floods are left out: `a` runs `v`, and the
//! 20,000- and 100,000-query floods take 30 s and more on the served
//! fabric, whose per-query latency is several times OpenSM's.
//!
//! Outside CI a missing ibsim / OpenSM / osmtest / libumad2sim makes the
//! test print "NOT RUN" and return; with `CI=true` it fails.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mad_agents::sa::{SaClient, SaClientConfig, SaError, TableMode};
use mad_agents::{EngineConfig, Runtime};
use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport};
use mad_core::transport::PortAttrs;
use mad_core::transport::Transport;
use mad_core::wire::attr::NodeType;
use mad_core::wire::sa_records::{MultiPathRecord, NodeRecord, PathRecord};
use support::opensm::{require_sbin, sbin, OpenSm, NEEDS_OPENSM};
use support::served::Served;
use support::{IbSim, UMAD2SIM};

/// Where osmtest attaches on both fabrics.
const NODE: &str = "Hca1";

/// What one bounded osmtest run left.
struct Run {
    /// Exit code; `None` when it was killed at its time limit.
    code: Option<i32>,
    /// Its log (stdout and stderr; `-d2` flushes every line).
    log: String,
}

impl Run {
    fn passed(&self) -> bool {
        self.code == Some(0) && self.log.contains("PASS")
    }
}

/// One fabric osmtest runs against: how to start a program under
/// libumad2sim there, and a directory for its inventory.
struct Target {
    what: &'static str,
    sock: String,
    dir: PathBuf,
}

impl Target {
    fn new(what: &'static str, sock: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("madstack-osmtest-{}-{what}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Self {
            what,
            sock: sock.to_owned(),
            dir,
        }
    }

    /// osmtest with `args` (after `-d2 -t 2000 -i INVENTORY`), killed by
    /// its PID after `limit`, or as soon as its log holds `enough`.
    fn osmtest(
        &self,
        args: &[&str],
        limit: Duration,
        enough: Option<&dyn Fn(&str) -> bool>,
    ) -> Run {
        let log = self.dir.join(format!("osmtest-{}.log", args.join("")));
        let out = fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let mut child = Command::new(sbin("osmtest"))
            .current_dir(&self.dir)
            .env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sock)
            .env("SIM_HOST", NODE)
            .env_remove("SIM_SET_ISSM")
            .env_remove("IBSIM_SERVER_NAME")
            .args(["-d2", "-t", "2000", "-i"])
            .arg(self.dir.join("inventory.dat"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let end = Instant::now() + limit;
        let code = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st.code();
            }
            let done = enough.is_some_and(|f| f(&fs::read_to_string(&log).unwrap_or_default()));
            if done || Instant::now() >= end {
                // Child::kill signals this child's PID only.
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Run {
            code,
            log: fs::read_to_string(&log).unwrap_or_default(),
        }
    }

    fn inventory(&self) -> String {
        fs::read_to_string(self.dir.join("inventory.dat")).unwrap_or_default()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// How many records of each kind an inventory lists.
fn inventory_counts(inv: &str) -> Vec<(&'static str, usize)> {
    ["DEFINE_NODE", "DEFINE_PORT", "DEFINE_PATH", "DEFINE_LINK"]
        .into_iter()
        .map(|k| (k, inv.lines().filter(|l| l.trim() == k).count()))
        .collect()
}

/// The statuses osmtest logged for its MultiPathRecord queries, in order.
fn multipath_errors(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split_once("osmtest_get_multipath_rec: Remote error = "))
        .map(|(_, s)| s.trim().to_owned())
        .collect()
}

/// The v flow got past its last MultiPathRecord query (the one after the
/// four expected errors): the next "expecting errors" block started.
fn past_multipath(log: &str) -> bool {
    log.matches("Expecting Errors - START").count() >= 5
}

/// The flows compared, each with its time limit on either fabric.
const FLOWS: &[(&[&str], u64)] = &[
    (&["-f", "c"], 30),
    (&["-f", "q"], 30),
    (&["-f", "f", "-s2"], 60),
];

fn run_flows(t: &Target) -> Vec<(String, Run)> {
    let mut runs = Vec::new();
    for (args, secs) in FLOWS {
        let started = Instant::now();
        let r = t.osmtest(args, Duration::from_secs(*secs), None);
        eprintln!(
            "{}: osmtest {} -> {:?} in {:.1} s",
            t.what,
            args.join(" "),
            r.code,
            started.elapsed().as_secs_f64()
        );
        runs.push((args.join(" "), r));
    }
    let started = Instant::now();
    let v = t.osmtest(
        &["-f", "v"],
        Duration::from_secs(20),
        Some(&|log: &str| past_multipath(log)),
    );
    eprintln!(
        "{}: osmtest -f v (to past its MultiPathRecord queries) in {:.1} s",
        t.what,
        started.elapsed().as_secs_f64()
    );
    runs.push(("-f v".to_owned(), v));
    runs
}

/// madstack's SA client: the MultiPathRecord queries osmtest makes.
fn client_multipath(cfg: IbSimConfig, mode: TableMode, what: &str, trace_answered: bool) {
    let t = IbSimTransport::attach(cfg.node(NODE)).unwrap();
    let a = t.port_attrs().clone();
    assert_ne!(a.lid, 0, "{what}: {NODE} has a LID");
    let rt = Runtime::start(t, EngineConfig::default()).unwrap();
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            table_mode: mode,
            timeout: Duration::from_secs(2),
            retries: 2,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    let me = a.gid();
    let paths = sa
        .multipath(&MultiPathRecord::default(), &[me], &[me], 0)
        .unwrap_or_else(|e| panic!("{what}: MultiPathRecord of {NODE} to itself: {e}"));
    assert!(
        paths
            .records
            .iter()
            .any(|p| p.slid == a.lid && p.dlid == a.lid),
        "{what}: the path of {NODE} to itself is among {:?}",
        paths.records
    );
    let head = MultiPathRecord::default().with_gids(&[me], &[me]).unwrap();
    let e = sa.multipath_request(0, &head).unwrap_err();
    assert!(
        matches!(e, SaError::InsufficientComponents),
        "{what}: no GID counts: {e}"
    );
    let mut mgid = [0u8; 16];
    mgid[..8].copy_from_slice(&0xff12_401b_ffff_0000u64.to_be_bytes());
    mgid[8..].copy_from_slice(&0x0000_0000_ffff_ffffu64.to_be_bytes());
    let e = sa
        .multipath(&MultiPathRecord::default(), &[me], &[mgid], 0)
        .unwrap_err();
    assert!(
        matches!(e, SaError::Status { status: 0x0500, .. }),
        "{what}: a multicast DGID: {e}"
    );
    let path = PathRecord {
        slid: a.lid,
        dlid: sa.sm_address().lid,
        ..PathRecord::default()
    };
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    if !trace_answered {
        // OpenSM 3.3.23 registers no GetTraceTable method for its SA
        // (libvendor/osm_vendor_ibumad.c) and drops one that reaches it
        // (osm_sa_mad_ctrl.c, ERR 1A05): no answer at all, and it goes on
        // answering PathRecords.
        let e = sa.trace_table(&path, mask).unwrap_err();
        assert!(
            matches!(e, SaError::Timeout { .. }),
            "{what}: GetTraceTable is left unanswered: {e}"
        );
        assert!(
            !sa.path_records(a.lid, path.dlid)
                .unwrap()
                .records
                .is_empty(),
            "{what}: a PathRecord after the GetTraceTable"
        );
        eprintln!("{what}: GetTraceTable left unanswered ({e})");
        return;
    }
    trace_of(&sa, &a, what);
}

/// GetTraceTable from `sa` (an SA of ours) at the port of `a`: the trace
/// of the path to the SM's port starts at this node's port and ends at
/// the SM's LID; the trace to every other CA port ends at that port,
/// switches between; the trace of the path to itself is this node alone;
/// a request naming no destination is answered 0x0600.
fn trace_of(sa: &SaClient, a: &PortAttrs, what: &str) {
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    let to_sm = PathRecord {
        slid: a.lid,
        dlid: sa.sm_address().lid,
        ..PathRecord::default()
    };
    let t = sa
        .trace_table(&to_sm, mask)
        .unwrap_or_else(|e| panic!("{what}: GetTraceTable to the SM: {e}"))
        .records;
    let first = &t[0];
    assert_eq!(
        (
            first.node_id,
            first.entry_port,
            first.exit_port,
            first.exit_port_id
        ),
        (a.node_guid, 0, a.port_num, a.port_guid),
        "{what}: the trace starts at {NODE}: {t:?}"
    );
    assert_eq!(t[t.len() - 1].exit_port, 0, "{what}: {t:?}");
    assert!(t.len() >= 2, "{what}: {NODE} is not the SM's node: {t:?}");
    eprintln!("{what}: GetTraceTable {NODE} -> the SM: {} nodes", t.len());
    // To every other CA port: the trace ends at that port.
    let cas: Vec<NodeRecord> = sa
        .all::<NodeRecord>()
        .unwrap()
        .records
        .into_iter()
        .filter(|n| n.node_info.node_type == NodeType::CA && n.node_info.node_guid != a.node_guid)
        .collect();
    assert!(!cas.is_empty(), "{what}: other CAs");
    let mut longest = 0;
    for n in &cas {
        let p = PathRecord {
            dlid: n.lid,
            ..to_sm.clone()
        };
        let t = sa
            .trace_table(&p, mask)
            .unwrap_or_else(|e| panic!("{what}: GetTraceTable to LID {}: {e}", n.lid))
            .records;
        let last = &t[t.len() - 1];
        assert_eq!(
            (
                last.node_id,
                last.entry_port,
                last.entry_port_id,
                last.exit_port
            ),
            (
                n.node_info.node_guid,
                n.node_info.local_port_num,
                n.node_info.port_guid,
                0
            ),
            "{what}: the trace to LID {} ends at its port: {t:?}",
            n.lid
        );
        assert!(t[1..t.len() - 1]
            .iter()
            .all(|h| h.node_type == NodeType::SWITCH.0));
        longest = longest.max(t.len());
    }
    eprintln!(
        "{what}: GetTraceTable to {} CA ports, the longest {longest} nodes",
        cas.len()
    );
    let own = PathRecord {
        dlid: a.lid,
        ..to_sm.clone()
    };
    let t = sa.trace_table(&own, mask).unwrap().records;
    assert_eq!(t.len(), 1, "{what}: the path of {NODE} to itself: {t:?}");
    assert!(
        matches!(
            sa.trace_table(&to_sm, PathRecord::COMP_SLID),
            Err(SaError::InsufficientComponents)
        ),
        "{what}: no destination named"
    );
}

#[test]
fn osmtest_flows_that_pass_against_opensm_pass_against_the_served_fabric() {
    let mut needs = NEEDS_OPENSM.to_vec();
    needs.push(("osmtest", "opensm"));
    if !require_sbin(&needs) {
        return;
    }
    let net = support::topologies_dir().join("net");
    let theirs = {
        let sim = IbSim::start(&net);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(60));
        let t = Target::new("opensm", sim.sockname());
        let runs = run_flows(&t);
        client_multipath(sim.config(), TableMode::SingleMad, "OpenSM", false);
        (runs, inventory_counts(&t.inventory()))
    };
    let mad = Path::new(env!("CARGO_BIN_EXE_mad"));
    let ours = {
        let served = Served::start_on(mad, "osmt", Some(&net));
        let t = Target::new("served", served.name());
        let runs = run_flows(&t);
        client_multipath(
            IbSimConfig::local(served.name().to_owned()),
            TableMode::Rmpp,
            "the served fabric",
            true,
        );
        (runs, inventory_counts(&t.inventory()))
    };
    for ((flow, osm), (_, us)) in theirs.0.iter().zip(&ours.0) {
        if flow == "-f v" {
            assert!(
                past_multipath(&osm.log),
                "OpenSM: osmtest -f v did not get past its MultiPathRecord queries:\n{}",
                osm.log
            );
            assert!(
                past_multipath(&us.log),
                "served fabric: osmtest -f v did not get past its MultiPathRecord queries:\n{}",
                us.log
            );
            let (a, b) = (multipath_errors(&osm.log), multipath_errors(&us.log));
            assert_eq!(
                a.len(),
                4,
                "OpenSM's expected MultiPathRecord errors: {a:?}"
            );
            assert_eq!(a, b, "MultiPathRecord statuses, OpenSM then ours");
            continue;
        }
        assert!(osm.passed(), "OpenSM: osmtest {flow} failed:\n{}", osm.log);
        assert!(
            us.passed(),
            "served fabric: osmtest {flow} (which passes against OpenSM) failed:\n{}",
            us.log
        );
    }
    assert!(
        theirs.1.iter().all(|(_, n)| *n > 0),
        "OpenSM inventory: {:?}",
        theirs.1
    );
    assert_eq!(
        theirs.1, ours.1,
        "records in the inventory osmtest -f c wrote, OpenSM then ours"
    );
}

/// osmtest against `mad sm`'s SA (`mad --ibsim sm` as the subnet
/// manager of an ibsim `net`): `-f c` (the inventory), `-f q` (QoS
/// records) and `-f f -s2` (the flood of 4,002 multi-MAD answers) pass,
/// as they do against OpenSM, and `-f v` gets past its MultiPathRecord
/// queries with OpenSM's statuses. Before: the flood hung when the run
/// before it had the same TID high bits (the SA's unacknowledged
/// multi-segment answers to that run were resent to it and its answers
/// refused as duplicate TIDs; the agent layer now ends an answer nothing
/// acknowledged at its first ACK timeout and lets a new answer with its
/// TID replace it, tested in mad-agents/tests/rmpp), and took 52 s while
/// mad sm's SM loop waited with the shared transport locked; `-f v` got
/// ABORT(UNV) for its GetMulti, which osmtest under libumad2sim sends as
/// one Active MAD with RMPP version 0 (the ibsim transport now delivers
/// such a request as the single MAD it is). Then madstack's client gets
/// a GetTraceTable answered from mad sm's model.
#[test]
fn osmtest_flows_that_pass_against_opensm_pass_against_mad_sm() {
    let mut needs = NEEDS_OPENSM.to_vec();
    needs.push(("osmtest", "opensm"));
    if !require_sbin(&needs) {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join("net"));
    let mut sm = sm_child::MadSm::start(&sim, &[]);
    sm.wait("subnet_up", Duration::from_secs(60));
    let t = Target::new("mad-sm", sim.sockname());
    for flow in [&["-f", "c"][..], &["-f", "q"], &["-f", "f", "-s2"]] {
        let r = t.osmtest(flow, Duration::from_secs(30), None);
        assert!(
            r.passed(),
            "mad sm: osmtest {} (which passes against OpenSM) failed:\n{}",
            flow.join(" "),
            r.log
        );
    }
    let v = t.osmtest(
        &["-f", "v"],
        Duration::from_secs(20),
        Some(&|log: &str| past_multipath(log)),
    );
    assert!(
        past_multipath(&v.log),
        "mad sm: osmtest -f v did not get past its MultiPathRecord queries:\n{}",
        v.log
    );
    // OpenSM's (see the test above): 0x0600 without SGIDCount /
    // DGIDCount, 0x0500 for a multicast GID.
    assert_eq!(
        multipath_errors(&v.log),
        [
            "IB_SA_MAD_STATUS_INSUF_COMPS",
            "IB_SA_MAD_STATUS_INSUF_COMPS",
            "IB_SA_MAD_STATUS_INVALID_GID",
            "IB_SA_MAD_STATUS_INVALID_GID"
        ],
        "mad sm: MultiPathRecord statuses"
    );
    let counts = inventory_counts(&t.inventory());
    assert!(counts.iter().all(|(_, n)| *n > 0), "{counts:?}");
    // GetTraceTable, answered from mad sm's own model.
    let port = IbSimTransport::attach(sim.config().node(NODE)).unwrap();
    let a = port.port_attrs().clone();
    let rt = Runtime::start(port, EngineConfig::default()).unwrap();
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            timeout: Duration::from_secs(2),
            retries: 2,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    trace_of(&sa, &a, "mad sm");
    sm.stop();
}
