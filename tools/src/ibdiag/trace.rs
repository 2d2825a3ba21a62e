//! ibtracert's route walk (`find_route`): from the local port by
//! directed route, switch by switch through the linear forwarding
//! tables, to a LID; printed hop by hop for ibtracert, or just the route
//! found ([`dr_route_to`], which ibportstate uses to reach a peer).

use mad_agents::smp::SmpTarget;
use mad_core::wire::attr::NodeDescription;
use mad_core::wire::smp::DrPath;
use mad_core::wire::AttributeId;

use super::dest::RawSmpData;
use crate::diags::dump;
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;
use crate::session::Session;

/// ibtracert's `MAXHOPS`: the longest route it walks.
pub(crate) const MAXHOPS: i32 = 63;

/// `ib_portid_t` as ibtracert walks it: a LID or a directed route with
/// libibmad's `p[]` array and count (entries past the count are kept,
/// ibtracert reads one of them after stepping back).
#[derive(Debug, Clone)]
pub(crate) struct PortId {
    pub(crate) lid: u16,
    pub(crate) p: [u8; 64],
    pub(crate) cnt: usize,
}

impl PortId {
    pub(crate) fn local() -> Self {
        Self {
            lid: 0,
            p: [0; 64],
            cnt: 0,
        }
    }

    pub(crate) fn lid(lid: u16) -> Self {
        Self {
            lid,
            p: [0; 64],
            cnt: 0,
        }
    }

    pub(crate) fn target(&self) -> Option<SmpTarget> {
        if self.lid > 0 {
            return Some(SmpTarget::Lid(self.lid));
        }
        DrPath::from_hops(&self.p[1..=self.cnt])
            .ok()
            .map(SmpTarget::Dr)
    }

    pub(crate) fn text(&self) -> crate::diags::PortIdText {
        if self.lid > 0 {
            crate::diags::PortIdText::lid(self.lid)
        } else {
            crate::diags::PortIdText::dr(&self.p[..=self.cnt])
        }
    }

    /// `extend_dpath`.
    pub(crate) fn extend(&mut self, port: u8) -> bool {
        if self.cnt + 2 >= self.p.len() {
            return false;
        }
        self.cnt += 1;
        self.p[self.cnt] = port;
        true
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub(crate) guid: u64,
    pub(crate) ntype: u8,
    pub(crate) numports: u8,
    pub(crate) desc: Option<NodeDescription>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Port {
    pub(crate) guid: u64,
    pub(crate) portnum: u8,
    pub(crate) lid: u16,
    pub(crate) lmc: u8,
    pub(crate) state: u8,
}

impl Port {
    /// The last LID of the port's range (base LID + 2^LMC - 1), as
    /// ibtracert prints it.
    pub(crate) fn lid_end(&self) -> u32 {
        u32::from(self.lid) + (1u32 << self.lmc) - 1
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Switch {
    pub(crate) linear_fdb_top: u16,
    enhsp0: bool,
}

pub(crate) struct Tracer<'a> {
    pub(crate) s: &'a Session,
    pub(crate) names: &'a NameMap,
    pub(crate) force: bool,
    pub(crate) text: String,
    pub(crate) warn: String,
    /// What `-e` / `-d` show of a failed query ([`super::ibdebug`]).
    pub(crate) diag: super::ibdebug::MadDiag,
    pub(crate) hops: Vec<Json>,
    pub(crate) ends: Vec<(&'static str, Json)>,
}

pub(crate) fn type_str(t: u8) -> &'static str {
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
    pub(crate) fn warn(&mut self, func: &str, m: &str) {
        self.warn
            .push_str(&format!("ibwarn: [{}] {func}: {m}\n", std::process::id()));
    }

    pub(crate) fn name(&self, n: &Node) -> String {
        match &n.desc {
            Some(d) => self.names.remap(n.guid, d),
            None => String::new(),
        }
    }

    /// [`Self::get_node`], warning `can't reach port at …` (as `func`)
    /// when it fails.
    fn reach(&mut self, func: &str, at: &PortId) -> Option<(Node, Port)> {
        let r = self.get_node(at);
        if r.is_none() {
            let m = format!("can't reach port at {}", at.text());
            self.warn(func, &m);
        }
        r
    }

    /// `get_node`: NodeInfo, NodeDescription, PortInfo (port 0) at `at`;
    /// a failed query warned as libibmad's `mad_rpc` warns.
    pub(crate) fn get_node(&mut self, at: &PortId) -> Option<(Node, Port)> {
        let t = at.target()?;
        let r = self.s.smp().node_info(&t).and_then(|ni| {
            let nd = self.s.smp().node_description(&t)?;
            let pi = self.s.smp().port_info(&t, 0)?;
            Ok((ni, nd, pi))
        });
        let (ni, nd, pi) = match r {
            Ok(x) => x,
            Err(e) => {
                self.warn.push_str(&super::ibdebug::rpc_failure_lines(
                    &self.diag,
                    "mad_rpc",
                    &at.text(),
                    &e,
                ));
                return None;
            }
        };
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
    pub(crate) fn switch_lookup(&self, sw: &mut Switch, at: &PortId, lid: u16) -> i32 {
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

    pub(crate) fn sameport(&self, a: &Port, b: &Port) -> bool {
        a.guid == b.guid || (self.force && a.lid == b.lid)
    }

    pub(crate) fn dump_endnode(&mut self, dump: u8, prompt: &'static str, n: &Node, p: &Port) {
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
                p.lid_end()
            ));
        }
        self.ends.push((
            if prompt == "From" { "from" } else { "to" },
            Json::obj()
                .with("type", Json::String(type_str(n.ntype).into()))
                .with("node_guid", super::report::hex(n.guid, 16))
                .with("port", Json::from(u64::from(portnum)))
                .with("lid", Json::from(u64::from(p.lid)))
                .with("node_description", Json::String(self.name(n))),
        ));
    }

    pub(crate) fn dump_route(&mut self, dump: u8, n: &Node, outport: i32, p: &Port) {
        if dump == 0 {
            return;
        }
        let lid_end = p.lid_end();
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
                .with("port_guid", super::report::hex(p.guid, 16))
                .with("port", Json::from(u64::from(p.portnum)))
                .with("lid", Json::from(u64::from(p.lid)))
                .with("lid_end", Json::from(u64::from(lid_end)))
                .with("node_description", Json::String(self.name(n))),
        );
    }

    pub(crate) fn clean(&self, n: &Node) -> String {
        n.desc
            .as_ref()
            .map(dump::clean_nodedesc)
            .unwrap_or_default()
    }

    /// `find_route`: walks `from` (a directed route, extended in place)
    /// to `to`. Returns false on failure (after its warning).
    #[allow(clippy::too_many_lines)]
    pub(crate) fn find_route(&mut self, from: &mut PortId, to: &PortId, dump: u8) -> bool {
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
                let Some((n, p)) = self.reach(F, from) else {
                    break End::Failed;
                };
                nextnode = n;
                nextport = p;
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
                let Some((n, p)) = self.reach(F, from) else {
                    break End::Failed;
                };
                nextnode = n;
                nextport = p;
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
            End::BadPort | End::BadOutPort => {
                let (what, label, num) = if matches!(end, End::BadPort) {
                    ("port", "port", i32::from(portnum))
                } else {
                    ("out port", "outport", outport)
                };
                let m = format!(
                    "Bad {what} state found: node \"{}\" {label} {num} state {}",
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

/// A directed route (libibmad's `p[0..=cnt]`) from the local port to
/// the port with `lid`, found as ibtracert walks: by the switches'
/// forwarding tables.
pub fn dr_route_to(s: &Session, lid: u16) -> Option<Vec<u8>> {
    let names = NameMap::default();
    let mut t = Tracer {
        s,
        names: &names,
        force: false,
        text: String::new(),
        warn: String::new(),
        diag: super::ibdebug::MadDiag::default(),
        hops: Vec::new(),
        ends: Vec::new(),
    };
    let mut from = PortId::local();
    t.find_route(&mut from, &PortId::lid(lid), 0)
        .then(|| from.p[..=from.cnt].to_vec())
}
