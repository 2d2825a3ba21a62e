//! `ibtracert` (infiniband-diags `ibtracert.c`): the unicast route from
//! one LID (or GUID) to another, hop by hop, found the way ibtracert
//! finds it: a directed-route walk from the local port to the source by
//! the switches' forwarding tables, then from the source to the
//! destination, printing each hop. `--ports-file` reads many pairs.
//!
//! Not done: the multicast trace (`-m MLID`), which fails with a message.
//!
//! `--json` prints `{"command":"ibtracert","routes":[{"from":{...},
//! "hops":[{"out_port":N,"type":"switch","port_guid":"0x...","port":N,
//! "lid":N,"lid_end":N,"node_description":"..."}],"to":{...}}]}`.

use mad_agents::smp::SmpTarget;
use mad_core::wire::attr::NodeDescription;
use mad_core::wire::smp::DrPath;
use mad_core::wire::AttributeId;

use super::common::{self, Dest, DestType, Opt, ToolSpec};
use super::smpquery::{NodeNameMap, RawSmpData};
use crate::cli::{CliError, Invocation};
use crate::diags::dump;
use crate::json::{Json, JsonExt};
use crate::session::Session;

const MAXHOPS: i32 = 63;
const KEY_NODE_NAME_MAP: i32 = 1;
const KEY_PORTS_FILE: i32 = 2;

const OPTS: &[Opt] = &[
    Opt::new("force", 'f', false, None, "force"),
    Opt::new("no_info", 'n', false, None, "simple format"),
    Opt::new(
        "mlid",
        'm',
        true,
        Some("<mlid>"),
        "multicast trace of the mlid",
    ),
    Opt::long(
        "node-name-map",
        KEY_NODE_NAME_MAP,
        true,
        Some("<file>"),
        "node name map file",
    ),
    Opt::long(
        "ports-file",
        KEY_PORTS_FILE,
        true,
        Some("<file>"),
        "port pairs file",
    ),
];

const EXAMPLES: &[&str] = &[
    "- Unicast examples:",
    "4 16\t\t\t# show path between lids 4 and 16",
    "-n 4 16\t\t# same, but using simple output format",
    "-G 0x8f1040396522d 0x002c9000100d051\t# use guid addresses",
    " - Multicast examples:",
    "-m 0xc000 4 16\t# show multicast path of mlid 0xc000 between lids 4 and 16",
];

/// `ib_portid_t` as ibtracert walks it: a LID or a directed route with
/// libibmad's `p[]` array and count (entries past the count are kept,
/// ibtracert reads one of them after stepping back).
#[derive(Debug, Clone)]
struct PortId {
    lid: u16,
    p: [u8; 64],
    cnt: usize,
}

impl PortId {
    fn local() -> Self {
        Self {
            lid: 0,
            p: [0; 64],
            cnt: 0,
        }
    }

    fn lid(lid: u16) -> Self {
        Self {
            lid,
            p: [0; 64],
            cnt: 0,
        }
    }

    fn target(&self) -> Option<SmpTarget> {
        if self.lid > 0 {
            return Some(SmpTarget::Lid(self.lid));
        }
        DrPath::from_hops(&self.p[1..=self.cnt])
            .ok()
            .map(SmpTarget::Dr)
    }

    fn text(&self) -> crate::diags::PortIdText {
        if self.lid > 0 {
            crate::diags::PortIdText::lid(self.lid)
        } else {
            crate::diags::PortIdText::dr(&self.p[..=self.cnt])
        }
    }

    /// `extend_dpath`.
    fn extend(&mut self, port: u8) -> bool {
        if self.cnt + 2 >= self.p.len() {
            return false;
        }
        self.cnt += 1;
        self.p[self.cnt] = port;
        true
    }
}

#[derive(Debug, Clone, Default)]
struct Node {
    guid: u64,
    ntype: u8,
    numports: u8,
    desc: Option<NodeDescription>,
}

#[derive(Debug, Clone, Default)]
struct Port {
    guid: u64,
    portnum: u8,
    lid: u16,
    lmc: u8,
    state: u8,
}

#[derive(Debug, Clone, Copy, Default)]
struct Switch {
    linear_fdb_top: u16,
    enhsp0: bool,
}

struct Tracer<'a> {
    s: &'a Session,
    names: &'a NodeNameMap,
    force: bool,
    text: String,
    warn: String,
    hops: Vec<Json>,
    ends: Vec<(&'static str, Json)>,
}

fn type_str(t: u8) -> &'static str {
    match t {
        1 => "ca",
        2 => "switch",
        3 => "router",
        4 => "iwarp rnic",
        0 => "???",
        _ => "???",
    }
}

impl Tracer<'_> {
    fn warn(&mut self, func: &str, m: &str) {
        self.warn
            .push_str(&format!("ibwarn: [{}] {func}: {m}\n", std::process::id()));
    }

    fn name(&self, n: &Node) -> String {
        match &n.desc {
            Some(d) => self.names.remap(n.guid, d),
            None => String::new(),
        }
    }

    /// `get_node`: NodeInfo, NodeDescription, PortInfo (port 0) at `at`.
    fn get_node(&self, at: &PortId) -> Option<(Node, Port)> {
        let t = at.target()?;
        let ni = self.s.smp().node_info(&t).ok()?;
        let nd = self.s.smp().node_description(&t).ok()?;
        let pi = self.s.smp().port_info(&t, 0).ok()?;
        Some((
            Node {
                guid: ni.node_guid,
                ntype: ni.node_type.0,
                numports: ni.num_ports,
                desc: Some(nd),
            },
            Port {
                guid: ni.port_guid,
                portnum: ni.local_port_num,
                lid: pi.lid,
                lmc: pi.lmc,
                state: pi.port_state.0,
            },
        ))
    }

    /// `switch_lookup`: the LFT entry for `lid` (or -1).
    fn switch_lookup(&self, sw: &mut Switch, at: &PortId, lid: u16) -> i32 {
        let Some(t) = at.target() else { return -1 };
        let Ok(si) = self.s.smp().switch_info(&t) else {
            return -1;
        };
        sw.linear_fdb_top = si.linear_fdb_top;
        sw.enhsp0 = si.enhanced_port0;
        if lid >= si.linear_fdb_cap && lid > si.linear_fdb_top {
            return -1;
        }
        match self
            .s
            .smp()
            .get::<RawSmpData>(&t, AttributeId::LINEAR_FWD_TABLE, u32::from(lid / 64))
        {
            Ok(d) => i32::from(d.0[usize::from(lid % 64)]),
            Err(_) => -1,
        }
    }

    fn sameport(&self, a: &Port, b: &Port) -> bool {
        a.guid == b.guid || (self.force && a.lid == b.lid)
    }

    fn dump_endnode(&mut self, dump: u8, prompt: &'static str, n: &Node, p: &Port) {
        if dump == 0 {
            return;
        }
        let portnum = if n.ntype == 2 { 0 } else { p.portnum };
        if dump == 1 {
            self.text
                .push_str(&format!("{prompt} {{0x{:016x}}}[{portnum}]\n", n.guid));
        } else {
            let name = self.name(n);
            self.text.push_str(&format!(
                "{prompt} {} {{0x{:016x}}} portnum {portnum} lid {}-{} \"{name}\"\n",
                type_str(n.ntype),
                n.guid,
                p.lid,
                u32::from(p.lid) + (1u32 << p.lmc) - 1
            ));
        }
        self.ends.push((
            if prompt == "From" { "from" } else { "to" },
            Json::obj()
                .with("type", Json::String(type_str(n.ntype).into()))
                .with("node_guid", common::hex(n.guid, 16))
                .with("port", Json::from(u64::from(portnum)))
                .with("lid", Json::from(u64::from(p.lid)))
                .with("node_description", Json::String(self.name(n))),
        ));
    }

    fn dump_route(&mut self, dump: u8, n: &Node, outport: i32, p: &Port) {
        if dump == 0 {
            return;
        }
        let lid_end = u32::from(p.lid) + (1u32 << p.lmc) - 1;
        if dump == 1 {
            self.text.push_str(&format!(
                "[{outport}] -> {{0x{:016x}}}[{}]\n",
                p.guid, p.portnum
            ));
        } else {
            let name = self.name(n);
            self.text.push_str(&format!(
                "[{outport}] -> {} port {{0x{:016x}}}[{}] lid {}-{lid_end} \"{name}\"\n",
                type_str(n.ntype),
                p.guid,
                p.portnum,
                p.lid
            ));
        }
        self.hops.push(
            Json::obj()
                .with("out_port", Json::from(u64::from(outport.max(0) as u32)))
                .with("type", Json::String(type_str(n.ntype).into()))
                .with("port_guid", common::hex(p.guid, 16))
                .with("port", Json::from(u64::from(p.portnum)))
                .with("lid", Json::from(u64::from(p.lid)))
                .with("lid_end", Json::from(u64::from(lid_end)))
                .with("node_description", Json::String(self.name(n))),
        );
    }

    fn clean(&self, n: &Node) -> String {
        n.desc
            .as_ref()
            .map(dump::clean_nodedesc)
            .unwrap_or_default()
    }

    /// `find_route`: walks `from` (a directed route, extended in place)
    /// to `to`. Returns false on failure (after its warning).
    #[allow(clippy::too_many_lines)]
    fn find_route(&mut self, from: &mut PortId, to: &PortId, dump: u8) -> bool {
        const F: &str = "find_route";
        let mut fromnode = Node::default();
        let mut fromport = Port::default();
        let mut toport = Port::default();
        let mut nextnode = Node::default();
        let mut nextport = Port::default();
        let mut sw = Switch::default();
        let got = self
            .get_node(from)
            .and_then(|f| self.get_node(to).map(|t| (f, t)));
        match got {
            Some(((fnode, fport), (_tnode, tport))) => {
                fromnode = fnode;
                fromport = fport;
                toport = tport;
            }
            None => {
                self.warn(F, "can't reach to/from ports");
                if !self.force {
                    return false;
                }
                if to.lid > 0 {
                    toport.lid = to.lid;
                }
                self.warn(F, &format!("Force: look for lid {}", to.lid));
            }
        }
        // `node` / `port` point at fromnode / fromport, then at nextnode
        // / nextport (which get_node overwrites in place).
        let mut at_next = false;
        let mut outport: i32 = 255;
        let mut next_sw_outport: i32 = 255;
        let mut portnum = fromport.portnum;
        self.dump_endnode(dump, "From", &fromnode.clone(), &fromport.clone());
        macro_rules! node {
            () => {
                if at_next {
                    &nextnode
                } else {
                    &fromnode
                }
            };
        }
        macro_rules! port {
            () => {
                if at_next {
                    &nextport
                } else {
                    &fromport
                }
            };
        }
        enum End {
            Found,
            BadPort,
            BadOutPort,
            BadTbl,
            BadPath,
            Failed,
        }
        let badtbl = |t: &mut Self, n: &Node, outport: i32, sw: &Switch| {
            let m = format!(
                "Bad forwarding table entry found at: node \"{}\" lid entry {} is {outport} (top {})",
                t.clean(n),
                to.lid,
                sw.linear_fdb_top
            );
            t.warn(F, &m);
        };
        if fromnode.ntype == 2 {
            next_sw_outport = self.switch_lookup(&mut sw, from, to.lid);
            if next_sw_outport < 0 || next_sw_outport > i32::from(fromnode.numports) {
                badtbl(self, &fromnode.clone(), next_sw_outport, &sw);
                return false;
            }
        }
        let mut maxhops = MAXHOPS;
        let end = loop {
            if maxhops == 0 {
                maxhops = -1;
                break End::Found;
            }
            maxhops -= 1;
            let inactive =
                |n: &Node, p: &Port, sw: &Switch| p.state != 4 && (n.ntype != 2 || sw.enhsp0);
            if inactive(node!(), port!(), &sw) {
                break End::BadPort;
            }
            if self.sameport(port!(), &toport) {
                break End::Found;
            }
            if node!().ntype == 2 {
                outport = next_sw_outport;
                if !from.extend(outport as u8) {
                    break End::BadPath;
                }
                match self.get_node(from) {
                    Some((n, p)) => {
                        nextnode = n;
                        nextport = p;
                    }
                    None => {
                        let m = format!("can't reach port at {}", from.text());
                        self.warn(F, &m);
                        break End::Failed;
                    }
                }
                if outport == 0 {
                    if self.sameport(&nextport, &toport) {
                        break End::Found;
                    }
                    break End::BadTbl;
                }
            } else if node!().ntype == 1 || node!().ntype == 3 {
                let mut ca_src = false;
                outport = i32::from(portnum);
                if !self.sameport(port!(), &fromport) {
                    let m = format!(
                        "can't continue: reached CA or router port {:x}, lid {}",
                        port!().guid,
                        port!().lid
                    );
                    self.warn(F, &m);
                    break End::Failed;
                }
                if from.cnt > 0 {
                    from.cnt -= 1;
                } else {
                    ca_src = true;
                    if portnum != 0 && !from.extend(portnum) {
                        break End::BadPath;
                    }
                }
                match self.get_node(from) {
                    Some((n, p)) => {
                        nextnode = n;
                        nextport = p;
                    }
                    None => {
                        let m = format!("can't reach port at {}", from.text());
                        self.warn(F, &m);
                        break End::Failed;
                    }
                }
                if !ca_src {
                    nextport.portnum = from.p[from.cnt + 1];
                }
            }
            if nextnode.ntype == 2 {
                next_sw_outport = self.switch_lookup(&mut sw, from, to.lid);
                if next_sw_outport < 0 || next_sw_outport > i32::from(nextnode.numports) {
                    outport = next_sw_outport;
                    break End::BadTbl;
                }
            }
            let was_next = at_next;
            at_next = true;
            let _ = was_next;
            if inactive(&nextnode, &nextport, &sw) {
                break End::BadOutPort;
            }
            portnum = nextport.portnum;
            self.dump_route(dump, &nextnode.clone(), outport, &nextport.clone());
        };
        match end {
            End::Found if maxhops < 0 => {
                self.warn(F, &format!("no route found after {MAXHOPS} hops"));
                false
            }
            End::Found => {
                let (n, p) = (node!().clone(), port!().clone());
                self.dump_endnode(dump, "To", &n, &p);
                true
            }
            End::BadPort => {
                let m = format!(
                    "Bad port state found: node \"{}\" port {portnum} state {}",
                    self.clean(node!()),
                    port!().state
                );
                self.warn(F, &m);
                false
            }
            End::BadOutPort => {
                let m = format!(
                    "Bad out port state found: node \"{}\" outport {outport} state {}",
                    self.clean(node!()),
                    port!().state
                );
                self.warn(F, &m);
                false
            }
            End::BadTbl => {
                let n = node!().clone();
                badtbl(self, &n, outport, &sw);
                false
            }
            End::BadPath => {
                self.warn(F, "Direct path too long!");
                false
            }
            End::Failed => false,
        }
    }
}

fn resolve(s: &mut Session, c: &common::Common, addr: &str) -> Option<PortId> {
    match common::resolve_dest(s, c, addr, c.dest_type)? {
        Dest { lid, .. } if lid > 0 => Some(PortId::lid(lid)),
        _ => None,
    }
}

/// Runs `ibtracert`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DK",
        usage_args: "<src-addr> <dest-addr>",
        examples: EXAMPLES,
    };
    let p = common::parse(inv, &spec)?;
    let val = |k: i32| {
        p.custom
            .iter()
            .rev()
            .find(|(key, _)| *key == k)
            .and_then(|(_, v)| v.clone())
    };
    let ports_file = val(KEY_PORTS_FILE);
    if p.args.len() < 2 && ports_file.is_none() {
        return Err(CliError::ToolUsage(common::usage_text(&inv.prog, &spec)));
    }
    let (names, warn) = NodeNameMap::load(val(KEY_NODE_NAME_MAP).as_deref());
    if let Some(w) = warn {
        inv.io.err(&w);
    }
    let dumplevel = if p.has('n' as i32) { 1 } else { 2 };
    let multicast = p.has('m' as i32);
    let mut c = p.common.clone();
    if c.dest_type == DestType::DrPath {
        c.dest_type = DestType::Lid;
    }
    let mut session = common::open_session(inv, &c)?;
    let pairs: Vec<(String, String, usize)> = match &ports_file {
        None => vec![(p.args[0].clone(), p.args[1].clone(), 0)],
        Some(f) => match read_pairs(f) {
            Ok(v) => v,
            Err(e) => {
                let _ = session.close();
                return Err(e);
            }
        },
    };
    // GUIDs resolve through the SA (which needs the session mutably):
    // resolve every pair before tracing.
    let resolved: Vec<(Option<u16>, Option<u16>)> = pairs
        .iter()
        .map(|(a, b, _)| {
            (
                resolve(&mut session, &c, a).map(|x| x.lid),
                resolve(&mut session, &c, b).map(|x| x.lid),
            )
        })
        .collect();
    let mut routes = Vec::new();
    let mut result: Result<(), CliError> = Ok(());
    let mut text = String::new();
    let mut warn_text = String::new();
    for ((src, dst, line), ids) in pairs.iter().zip(resolved) {
        let mut t = Tracer {
            s: &session,
            names: &names,
            force: p.has('f' as i32),
            text: String::new(),
            warn: String::new(),
            hops: Vec::new(),
            ends: Vec::new(),
        };
        let ok = match ids {
            (Some(a), Some(b)) => trace_lids(&mut t, a, b, dumplevel, multicast),
            (None, _) => {
                t.warn("get_route", &format!("can't resolve source port {src}"));
                false
            }
            (_, None) => {
                t.warn(
                    "get_route",
                    &format!("can't resolve destination port {dst}"),
                );
                false
            }
        };
        text.push_str(&t.text);
        warn_text.push_str(&t.warn);
        let mut r = Json::obj();
        for (k, v) in t.ends.iter().filter(|(k, _)| *k == "from").take(1) {
            r.push(k, v.clone());
        }
        r.push("hops", Json::Array(t.hops.clone()));
        for (k, v) in t.ends.iter().filter(|(k, _)| *k == "to").take(1) {
            r.push(k, v.clone());
        }
        routes.push(r);
        if !ok {
            result = Err(CliError::IbExit(if ports_file.is_some() {
                format!("Failed to get route information at line {line}")
            } else {
                "Failed to get route information".into()
            }));
            break;
        }
    }
    if result.is_ok() {
        if let Some(f) = &ports_file {
            text.push_str(&format!(
                "{} lid/guid pairs processed from {f}\n",
                pairs.len()
            ));
        }
    }
    let close = session.close();
    inv.io.err(&warn_text);
    if c.json {
        let mut j = Json::obj()
            .with("command", Json::String("ibtracert".into()))
            .with("routes", Json::Array(routes));
        if let Err(CliError::IbExit(m)) = &result {
            j.push("error", Json::String(m.clone()));
            common::print_json(inv, &j);
            return Err(CliError::Exit(255));
        }
        common::print_json(inv, &j);
    } else {
        inv.io.out(&text);
        result?;
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

/// A directed route (libibmad's `p[0..=cnt]`) from the local port to
/// the port with `lid`, found as ibtracert walks: by the switches'
/// forwarding tables.
pub(crate) fn dr_route_to(s: &Session, lid: u16) -> Option<Vec<u8>> {
    let names = NodeNameMap::default();
    let mut t = Tracer {
        s,
        names: &names,
        force: false,
        text: String::new(),
        warn: String::new(),
        hops: Vec::new(),
        ends: Vec::new(),
    };
    let mut from = PortId::local();
    t.find_route(&mut from, &PortId::lid(lid), 0)
        .then(|| from.p[..=from.cnt].to_vec())
}

/// `get_route` for two resolved LIDs.
fn trace_lids(t: &mut Tracer<'_>, s: u16, d: u16, dumplevel: u8, multicast: bool) -> bool {
    const F: &str = "get_route";
    let mut my = PortId::local();
    if !t.find_route(&mut my, &PortId::lid(s), 0) {
        t.warn(F, "can't find a route to the src port");
        return false;
    }
    if multicast {
        t.warn(F, "multicast trace is not supported by this ibtracert");
        return false;
    }
    if !t.find_route(&mut my, &PortId::lid(d), dumplevel) {
        t.warn(F, "can't find a route from src to dest");
        return false;
    }
    true
}

/// The pairs of a `--ports-file`: (src, dst, line number).
fn read_pairs(path: &str) -> Result<Vec<(String, String, usize)>, CliError> {
    let text = crate::limits::read_text(path, crate::limits::MAX_PORTS_FILE_LEN, "a ports file")
        .map_err(|_| CliError::IbExit(format!("cannot open ports-file {path}")))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some(a), Some(b)) => v.push((
                a.chars().take(20).collect(),
                b.chars().take(20).collect(),
                i + 1,
            )),
            _ => {
                return Err(CliError::IbExit(format!(
                    "ports-file, {path}, at line {} contains bad data",
                    i + 1
                )))
            }
        }
    }
    Ok(v)
}
