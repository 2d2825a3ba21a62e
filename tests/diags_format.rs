//! The infiniband-diags output formatters of `tools/src/diags/` against
//! the real tools: each test starts its own ibsim (and OpenSM where LIDs
//! or the SA are needed), runs `smpquery` / `perfquery` / `sminfo` /
//! `saquery` under libumad2sim, fetches the same attributes through
//! madstack's ibsim transport, formats them with the diags functions and
//! asserts the text is byte-identical (stdout, and the exit status).
//!
//! Counters and SM activity can move between the tool's query and ours:
//! a comparison is retried (fetch, run, fetch) until our two fetches
//! agree, and only then is a difference a failure.
//!
//! Outside CI a missing ibsim / OpenSM / infiniband-diags / libumad2sim
//! makes these tests print "NOT RUN" and return; with `CI=true` they fail.

mod support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::opensm::OpenSm;

use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, NodeDescription, NodeInfo, NodeType, PKeyTable, PortCounters,
    PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo, VlArbTable,
};
use mad_core::wire::sa_records::{
    InformInfoRecord, LftRecord, McMemberRecord, NodeRecord, PathRecord, PortInfoRecord, SaRecord,
    ServiceRecord, VlArbRecord,
};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr};
use mad_testkit::{header, MadBuilder};
use mad_tools::diags::{format_iberror, perf, sa, smp, PortIdText};
use support::{IbSim, NEEDS_DIAGS};

const NEEDS_TOOLS: &[(&str, &str)] = &[
    ("smpquery", "infiniband-diags"),
    ("perfquery", "infiniband-diags"),
    ("saquery", "infiniband-diags"),
    ("sminfo", "infiniband-diags"),
    ("opensm", "opensm"),
];

fn ready() -> bool {
    support::require(NEEDS_DIAGS) && support::require(NEEDS_TOOLS)
}

/// ibsim on `topology` with OpenSM brought up; `None` (the test
/// returns) when the tools are missing.
fn opensm_up(topology: PathBuf) -> Option<(IbSim, OpenSm)> {
    if !ready() {
        return None;
    }
    let sim = IbSim::start(topology);
    let osm = OpenSm::start(&sim, "", Duration::from_secs(60));
    Some((sim, osm))
}

fn net() -> PathBuf {
    support::topologies_dir().join("net")
}

// ------------------------------------------------------- running the tools

/// What a tool printed on stdout and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    stdout: String,
    code: i32,
    /// Compare only the first `n` record dumps starting with line `header`
    /// (a documented difference: see [`UMAD2SIM_VALID_BYTES`]).
    keep: Option<(String, usize)>,
}

impl Out {
    fn ok(stdout: String) -> Out {
        Out {
            stdout,
            code: 0,
            keep: None,
        }
    }
    /// Text printed so far, then `IBEXIT`'s line and exit status 255.
    fn iberror(mut stdout: String, prog: &str, msg: &str) -> Out {
        stdout.push_str(&format_iberror(prog, msg));
        Out {
            stdout,
            code: 255,
            keep: None,
        }
    }
    /// The tool's output as far as it is compared with this one.
    fn cut(&self, theirs: &Out) -> Out {
        let mut t = theirs.clone();
        if let Some((header, n)) = &self.keep {
            let mut seen = 0;
            let mut at = 0;
            for line in theirs.stdout.split_inclusive('\n') {
                if line.trim_end_matches('\n') == header {
                    seen += 1;
                    if seen > *n {
                        break;
                    }
                }
                at += line.len();
            }
            t.stdout.truncate(at);
            t.keep.clone_from(&self.keep);
        }
        t
    }
}

fn run_tool(sim: &IbSim, prog: &str, args: &[&str]) -> Out {
    let out = sim.umad2sim_output(prog, args);
    Out {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        code: out.status.code().unwrap_or(-1),
        keep: None,
    }
}

/// Runs `prog args` with `LIBIBMAD_DEBUG_LEVEL=2`, which makes libibmad
/// hex-dump every MAD it receives (`rcv buf`) on stderr and leaves stdout
/// alone; returns stdout / exit status and those MADs.
fn run_tool_seen(sim: &IbSim, prog: &str, args: &[&str]) -> (Out, Vec<Vec<u8>>) {
    let out = support::output_attached(prog, || {
        let mut c = sim.umad2sim_command(prog);
        c.args(args)
            .env("LIBIBMAD_DEBUG_LEVEL", "2")
            .stdin(Stdio::null());
        c
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut mads = Vec::new();
    let mut lines = stderr.lines();
    while let Some(l) = lines.next() {
        if l != "rcv buf" {
            continue;
        }
        // xdump: 16 bytes a line as 2-byte hex groups.
        let mut mad = Vec::with_capacity(256);
        for l in lines.by_ref().take(16) {
            for g in l.split_whitespace() {
                let v = u16::from_str_radix(g, 16)
                    .unwrap_or_else(|e| panic!("{prog}: bad xdump group {g:?}: {e}"));
                mad.extend(v.to_be_bytes());
            }
        }
        assert_eq!(mad.len(), 256, "{prog}: short rcv buf dump");
        mads.push(mad);
    }
    let o = Out {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        code: out.status.code().unwrap_or(-1),
        keep: None,
    };
    (o, mads)
}

/// Runs `saquery` with `-d -d` in `args`: saquery then prints each SA
/// answer it receives (`SA Response:` and an xdump of the received
/// length) on stdout before its normal output. Returns those MADs and the
/// rest of stdout (the request dumps removed too).
fn run_saquery_seen(sim: &IbSim, args: &[&str]) -> (Vec<Vec<u8>>, String) {
    let out = run_tool(sim, "saquery", args);
    assert_eq!(out.code, 0, "saquery {args:?} failed:\n{}", out.stdout);
    let is_hex = |l: &str| {
        !l.is_empty()
            && l.split(' ')
                .all(|g| (g.len() == 2 || g.len() == 4) && g.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let mut mads = Vec::new();
    let mut text = String::new();
    let mut lines = out.stdout.split_inclusive('\n').peekable();
    while let Some(l) = lines.next() {
        let t = l.trim_end_matches('\n');
        if t == "SA Request:" || t == "SA Response:" {
            let mut mad = Vec::new();
            while let Some(h) = lines.peek() {
                // xdump ends a short last line with a space.
                let h = h.trim_end_matches('\n').trim_end_matches(' ');
                if !is_hex(h) {
                    break;
                }
                for g in h.split(' ') {
                    for k in (0..g.len()).step_by(2) {
                        mad.push(u8::from_str_radix(&g[k..k + 2], 16).unwrap_or(0));
                    }
                }
                lines.next();
            }
            if t == "SA Response:" {
                mads.push(mad);
            }
        } else {
            text.push_str(l);
        }
    }
    (mads, text)
}

/// The last response with attribute `attr` among `mads`.
fn last_with_attr(mads: &[Vec<u8>], attr: u16) -> &[u8] {
    mads.iter()
        .rev()
        .find(|m| {
            let h = header::of(m);
            h.attr_id == AttributeId(attr) && h.response
        })
        .unwrap_or_else(|| panic!("no response with attribute {attr:#06x} was dumped"))
}

fn assert_same(what: &str, theirs: &Out, ours: &Out) {
    assert!(
        theirs == ours,
        "`{what}` differs from the diags formatter\n--- tool (exit {}):\n{}\n--- ours (exit {}):\n{}",
        theirs.code,
        theirs.stdout,
        ours.code,
        ours.stdout
    );
}

/// Runs `prog args` and compares with `expected` (computed from our own
/// fetch), retrying while our fetches disagree with each other.
fn check(
    sim: &IbSim,
    f: &mut Fetch,
    prog: &str,
    args: &[&str],
    mut expected: impl FnMut(&mut Fetch) -> Out,
) {
    for _ in 0..5 {
        let before = expected(f);
        let theirs = before.cut(&run_tool(sim, prog, args));
        if theirs == before {
            return;
        }
        let after = expected(f);
        if after == before {
            panic!(
                "`{prog} {}` differs from the diags formatter\n--- {prog} (exit {}):\n{}\n--- ours (exit {}):\n{}",
                args.join(" "),
                theirs.code,
                theirs.stdout,
                before.code,
                before.stdout
            );
        }
    }
    panic!("`{prog} {}`: the fabric kept changing", args.join(" "));
}

// ------------------------------------------------------ fetching ourselves

/// How our SMPs are routed.
#[derive(Clone)]
enum Route {
    Lid(u16),
    Dr(DrPath),
}

impl Route {
    fn dr(path: &str) -> Route {
        Route::Dr(
            path.parse()
                .unwrap_or_else(|e| panic!("path {path}: {e:?}")),
        )
    }
}

/// madstack's ibsim transport, doing one request at a time.
struct Fetch {
    t: IbSimTransport,
    tid: u64,
}

/// An SA answer: status, AttributeOffset and the MAD as received.
struct SaAnswer {
    status: u16,
    method: Method,
    attr_offset: u16,
    mad: Vec<u8>,
}

/// libumad2sim delivers a one-MAD cut of an RMPP (multi-segment) SA
/// answer whose bytes from 232 on are garbage that changes from MAD to
/// MAD (seen in saquery's own `-d -d` dumps): records reaching past this
/// offset in a 256-byte answer are not compared.
const UMAD2SIM_VALID_BYTES: usize = 232;

impl SaAnswer {
    fn from_mad(r: Vec<u8>) -> SaAnswer {
        SaAnswer {
            status: header::of(&r).status.0,
            method: header::of(&r).method,
            attr_offset: u16::from_be_bytes([r[44], r[45]]),
            mad: r,
        }
    }

    /// How many of the first `n` records lie wholly in the bytes
    /// libumad2sim delivers intact.
    fn reliable(&self, n: usize) -> usize {
        if self.mad.len() < 256 {
            return n;
        }
        let stride = usize::from(self.attr_offset) * 8;
        (0..n)
            .take_while(|i| sa::SA_DATA_OFFSET + (i + 1) * stride <= UMAD2SIM_VALID_BYTES)
            .count()
    }

    /// The records saquery would take from this answer.
    fn records<R: SaRecord>(&self) -> Vec<R> {
        let n = sa::result_count(
            self.mad.len(),
            self.status,
            self.method == Method::GET_TABLE,
            self.attr_offset,
        );
        let stride = usize::from(self.attr_offset) * 8;
        (0..n)
            .map(|i| {
                let at = sa::SA_DATA_OFFSET + i * stride;
                R::parse(&self.mad[at..]).unwrap_or_else(|e| panic!("record {i}: {e:?}"))
            })
            .collect()
    }
}

impl Fetch {
    fn new(sim: &IbSim) -> Fetch {
        let t = IbSimTransport::attach(sim.config()).unwrap_or_else(|e| panic!("attach: {e}"));
        Fetch {
            t,
            tid: 0x0D1A_0000,
        }
    }

    /// Sends `mad` (its TID set here) and returns the matching response,
    /// or `None` after 2 s.
    fn rpc(&mut self, qp: Qp, dest: &Address, mut mad: [u8; 256]) -> Option<Vec<u8>> {
        self.tid += 1;
        let tid = self.tid;
        header::edit(&mut mad, |h| h.tid = tid);
        self.t
            .post_send(qp, &mad, dest)
            .unwrap_or_else(|e| panic!("post_send: {e}"));
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let _ = self.t.wait_readable(Duration::from_millis(5));
            while let Ok(Some(r)) = self.t.poll_recv() {
                if let Ok(h) = Mad::new_checked(r.mad.as_slice()) {
                    // ibsim owns TID bits 48-63.
                    if h.tid() & 0xFFFF_FFFF_FFFF == tid && h.response_bit() {
                        return Some(r.mad.into());
                    }
                }
            }
        }
        None
    }

    /// SMP Get: the 64 data bytes, or `None` on a timeout or an error
    /// status (when smpquery's `smp_query_via` fails).
    fn smp(&mut self, route: &Route, attr: AttributeId, attr_mod: u32) -> Option<Vec<u8>> {
        let (mad, dest) = match route {
            Route::Dr(p) => (
                p.build_request(Method::GET, attr, attr_mod, 0, 0),
                Address::smi(PERMISSIVE_LID),
            ),
            Route::Lid(lid) => (
                MadBuilder::smp_get(attr).attr_mod(attr_mod).build(),
                Address::smi(*lid),
            ),
        };
        let r = self.rpc(Qp::Qp0, &dest, mad)?;
        let status = header::of(&r).status.0;
        let status = if matches!(route, Route::Dr(_)) {
            status & 0x7FFF
        } else {
            status
        };
        (status == 0).then(|| r[64..128].to_vec())
    }

    fn smp_as<R: Repr>(&mut self, route: &Route, attr: AttributeId, attr_mod: u32) -> Option<R> {
        self.smp(route, attr, attr_mod)
            .map(|d| R::parse(&d).unwrap_or_else(|e| panic!("{}: {e:?}", R::NAME)))
    }

    /// PerfMgt Get with PortSelect `port`: the 192 data bytes.
    fn pma(&mut self, lid: u16, attr: u16, port: u8) -> Option<Vec<u8>> {
        let mut m = Mad::new_unchecked([0u8; 256]);
        m.set_base_version(1);
        m.set_mgmt_class(MgmtClass::PERF_MGT);
        m.set_class_version(1);
        m.set_method(Method::GET, false);
        m.set_attr_id(AttributeId(attr));
        let mut mad = m.into_inner();
        mad[65] = port;
        let r = self.rpc(Qp::Qp1, &Address::gsi(lid), mad)?;
        (header::of(&r).status.0 == 0).then(|| r[64..256].to_vec())
    }

    /// An SA request to the SM at `sm_lid`.
    fn sa(
        &mut self,
        sm_lid: u16,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
        comp_mask: u64,
        record: &[u8],
    ) -> SaAnswer {
        let mut m = Mad::new_unchecked([0u8; 256]);
        m.set_base_version(1);
        m.set_mgmt_class(MgmtClass::SUBN_ADM);
        m.set_class_version(2);
        m.set_method(method, false);
        m.set_attr_id(attr);
        m.set_attr_mod(attr_mod);
        let mut mad = m.into_inner();
        mad[48..56].copy_from_slice(&comp_mask.to_be_bytes());
        let n = record.len().min(200);
        mad[56..56 + n].copy_from_slice(&record[..n]);
        let r = self
            .rpc(Qp::Qp1, &Address::gsi(sm_lid), mad)
            .unwrap_or_else(|| panic!("no SA answer to {attr:?}"));
        SaAnswer::from_mad(r)
    }

    fn sa_all(&mut self, attr: AttributeId) -> SaAnswer {
        self.sa(SM_LID, Method::GET_TABLE, attr, 0, 0, &[])
    }
}

/// OpenSM on ibsim's first node (Switch1 of `net`) gives it LID 1.
const SM_LID: u16 = 1;

// ------------------------------------------------- smpquery, as smpquery does it

/// smpquery's logic for `op`, from our own fetches, as text.
fn smpquery(f: &mut Fetch, route: &Route, portid: &PortIdText, op: &str, port: i32) -> Out {
    let fail =
        |s: String, msg: &str| Out::iberror(s, "smpquery", &format!("operation {op}: {msg}"));
    let pu32 = u32::try_from(port).unwrap_or(0);
    match op {
        "nodeinfo" => match f.smp_as::<NodeInfo>(route, AttributeId::NODE_INFO, 0) {
            Some(ni) => Out::ok(smp::format_nodeinfo(portid, &ni)),
            None => fail(String::new(), "node info query failed"),
        },
        "nodedesc" => {
            if f.smp(route, AttributeId::NODE_INFO, 0).is_none() {
                return fail(String::new(), "node info query failed");
            }
            match f.smp_as::<NodeDescription>(route, AttributeId::NODE_DESC, 0) {
                Some(nd) => Out::ok(smp::format_nodedesc(&nd)),
                None => fail(String::new(), "node desc query failed"),
            }
        }
        "portinfo" => match f.smp_as::<PortInfo>(route, AttributeId::PORT_INFO, pu32) {
            Some(pi) => Out::ok(smp::format_portinfo(portid, port, &pi, false)),
            None => fail(String::new(), "port info query failed"),
        },
        "switchinfo" => match f.smp_as::<SwitchInfo>(route, AttributeId::SWITCH_INFO, 0) {
            Some(si) => Out::ok(smp::format_switchinfo(portid, &si)),
            None => fail(String::new(), "switch info query failed"),
        },
        "pkeys" => {
            let Some(ni) = f.smp_as::<NodeInfo>(route, AttributeId::NODE_INFO, 0) else {
                return fail(String::new(), "node info query failed");
            };
            if port > i32::from(ni.num_ports) {
                return fail(String::new(), "invalid port number");
            }
            let cap = if ni.node_type == NodeType::SWITCH && port != 0 {
                match f.smp_as::<SwitchInfo>(route, AttributeId::SWITCH_INFO, 0) {
                    Some(si) => si.partition_enforcement_cap,
                    None => return fail(String::new(), "switch info failed"),
                }
            } else {
                ni.partition_cap
            };
            let mut blocks = Vec::new();
            for i in 0..u32::from(cap).div_ceil(32) {
                match f.smp_as::<PKeyTable>(route, AttributeId::PKEY_TABLE, i | (pu32 << 16)) {
                    Some(b) => blocks.push(b),
                    None => {
                        return fail(smp::format_pkeys(cap, &blocks), "pkey table query failed")
                    }
                }
            }
            Out::ok(smp::format_pkeys(cap, &blocks))
        }
        "sl2vl" => {
            let Some(ni) = f.smp_as::<NodeInfo>(route, AttributeId::NODE_INFO, 0) else {
                return fail(String::new(), "node info query failed");
            };
            if port > i32::from(ni.num_ports) {
                return fail(String::new(), "invalid port number");
            }
            let mut s = smp::sl2vl_header(portid);
            let rows: Vec<(u8, u8)> = if ni.node_type == NodeType::SWITCH {
                (0..=ni.num_ports).map(|i| (i, port as u8)).collect()
            } else {
                vec![(0, 0)]
            };
            for (i, o) in rows {
                let m = (u32::from(i) << 8) | u32::from(o);
                match f.smp_as::<SlToVlTable>(route, AttributeId::SL_TO_VL_TABLE, m) {
                    Some(t) => s.push_str(&smp::sl2vl_row(i, o, &t)),
                    None => return fail(s, "slvl query failed"),
                }
            }
            Out::ok(s)
        }
        "vlarb" => {
            if port == 0 {
                let Some(ni) = f.smp_as::<NodeInfo>(route, AttributeId::NODE_INFO, 0) else {
                    return fail(String::new(), "node info query failed");
                };
                if ni.node_type == NodeType::SWITCH {
                    let Some(si) = f.smp_as::<SwitchInfo>(route, AttributeId::SWITCH_INFO, 0)
                    else {
                        return fail(String::new(), "switch info query failed");
                    };
                    if !si.enhanced_port0 {
                        return Out::ok(smp::format_vlarb_no_bsp0(portid));
                    }
                }
            }
            let Some(pi) = f.smp_as::<PortInfo>(route, AttributeId::PORT_INFO, pu32) else {
                return fail(String::new(), "port info query failed");
            };
            let (lc, hc) = (pi.vl_arb_low_cap, pi.vl_arb_high_cap);
            let get = |f: &mut Fetch, offset: u32, cap: u8| -> (Vec<VlArbTable>, bool) {
                let mut v = Vec::new();
                let n = if cap > 32 { 2 } else { 1 };
                for k in 0..n {
                    match f.smp_as::<VlArbTable>(
                        route,
                        AttributeId::VL_ARB_TABLE,
                        ((offset + k) << 16) | pu32,
                    ) {
                        Some(t) => v.push(t),
                        None => return (v, false),
                    }
                }
                (v, true)
            };
            let (low, low_ok) = if lc > 0 {
                get(f, 1, lc)
            } else {
                (vec![], true)
            };
            let (high, high_ok) = if low_ok && hc > 0 {
                get(f, 3, hc)
            } else {
                (vec![], true)
            };
            let s = smp::format_vlarb(portid, port, lc, hc, &low, &high);
            if low_ok && high_ok {
                Out::ok(s)
            } else {
                fail(s, "vl arb query failed")
            }
        }
        "guidinfo" => {
            let Some(pi) = f.smp_as::<PortInfo>(route, AttributeId::PORT_INFO, 0) else {
                return fail(String::new(), "port info failed");
            };
            let n = pi.guid_cap;
            let mut blocks = Vec::new();
            for i in 0..u32::from(n).div_ceil(8) {
                match f.smp_as::<GuidInfo>(route, AttributeId::GUID_INFO, i) {
                    Some(b) => blocks.push(b),
                    None => return fail(smp::format_guids(n, &blocks), "guid info query failed"),
                }
            }
            Out::ok(smp::format_guids(n, &blocks))
        }
        _ => panic!("no model for smpquery {op}"),
    }
}

/// Every smpquery op on `route`, with its addressing arguments `addr`
/// (`["-D", "0,1"]` or `["2"]`): without a port argument and with port 1,
/// and when `full` also ports 0, 3 and the last one of a switch.
fn smpquery_all(
    sim: &IbSim,
    f: &mut Fetch,
    route: &Route,
    portid: &PortIdText,
    addr: &[&str],
    full: bool,
) {
    let ni: NodeInfo = f
        .smp_as(route, AttributeId::NODE_INFO, 0)
        .expect("NodeInfo of a node that exists");
    let switch = ni.node_type == NodeType::SWITCH;
    let mut ports: Vec<i32> = vec![1];
    if full {
        ports.push(0);
        if switch {
            ports.extend([3, i32::from(ni.num_ports)]);
        }
    }
    let run = |op: &str, port: Option<i32>, f: &mut Fetch| {
        let mut args: Vec<String> = Vec::new();
        let (flags, dest) = addr.split_at(addr.len() - 1);
        args.extend(flags.iter().map(|s| (*s).to_owned()));
        args.push(op.to_owned());
        args.push(dest[0].to_owned());
        if let Some(p) = port {
            args.push(p.to_string());
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        check(sim, f, "smpquery", &a, |f| {
            smpquery(f, route, portid, op, port.unwrap_or(0))
        });
    };
    for op in ["nodeinfo", "nodedesc", "switchinfo", "guidinfo"] {
        run(op, None, f);
    }
    for op in ["portinfo", "pkeys", "sl2vl", "vlarb"] {
        run(op, None, f);
        for p in &ports {
            run(op, Some(*p), f);
        }
    }
}

/// Directed routes to every node of a small fabric, breadth first from
/// the local node, each node once (by node GUID): `["0", "0,1", ...]`.
fn dr_paths(f: &mut Fetch) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([String::from("0")]);
    while let Some(path) = queue.pop_front() {
        let route = Route::dr(&path);
        let ni: NodeInfo = f
            .smp_as(&route, AttributeId::NODE_INFO, 0)
            .unwrap_or_else(|| panic!("NodeInfo over {path}"));
        if !seen.insert(ni.node_guid) {
            continue;
        }
        out.push(path.clone());
        if ni.node_type != NodeType::SWITCH && path != "0" {
            continue;
        }
        for port in 1..=ni.num_ports {
            if let Some(pi) = f.smp_as::<PortInfo>(&route, AttributeId::PORT_INFO, port.into()) {
                if pi.port_phys_state.0 == 5 {
                    queue.push_back(format!("{path},{port}"));
                }
            }
        }
    }
    out
}

#[test]
fn smpquery_directed_route_outputs_are_byte_identical() {
    if !ready() {
        return;
    }
    // ibsim's example fabrics, before any SM has configured them (LIDs
    // 0): every node by directed route, the local one included.
    let topos = [
        "net",
        "net.1",
        "net.2sw2path",
        "net.2sw2path4hca",
        "net.2sw2path4hca2port",
    ];
    std::thread::scope(|scope| {
        for topo in topos {
            scope.spawn(move || {
                let sim = IbSim::start(support::topologies_dir().join(topo));
                let mut f = Fetch::new(&sim);
                let paths = dr_paths(&mut f);
                assert!(paths.len() >= 3, "{topo}: only {paths:?} found");
                for path in &paths {
                    let route = Route::dr(path);
                    let hops: Vec<u8> = path.split(',').map(|p| p.parse().unwrap_or(0)).collect();
                    let full = topo == "net";
                    let id = PortIdText::dr(&hops);
                    smpquery_all(&sim, &mut f, &route, &id, &["-D", path], full);
                }
            });
        }
    });
}

#[test]
fn smpquery_lid_outputs_are_byte_identical() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    let mut f = Fetch::new(&sim);
    for lid in 1..=4u16 {
        let l = lid.to_string();
        smpquery_all(
            &sim,
            &mut f,
            &Route::Lid(lid),
            &PortIdText::lid(lid),
            &[&l],
            true,
        );
    }
}

// -------------------------------------------------------------- perfquery

#[path = "diags_format/perf.rs"]
mod perf_records;
#[path = "diags_format/sa.rs"]
mod sa_records;
