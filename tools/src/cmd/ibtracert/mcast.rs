//! ibtracert's multicast trace (`-m MLID`, ibtracert.c's "MC span
//! part"): a breadth-first walk by directed route from the source port,
//! following each switch's MulticastForwardingTable entry for the MLID,
//! until the destination port is reached; then the path printed from the
//! source down (`dump_mcpath`).

use std::collections::HashSet;

use mad_core::wire::AttributeId;

use crate::ibdiag::dest::RawSmpData;
use crate::ibdiag::trace::{type_str, Node, Port, PortId, Tracer, MAXHOPS};
use crate::json::{Json, JsonExt};

/// One node the walk reached.
struct McNode {
    node: Node,
    /// The port it was reached by (`node->ports`).
    port: Port,
    path: PortId,
    /// Distance from the source; -1 for the target.
    dist: i32,
    upnode: Option<usize>,
    upport: u8,
    /// The port of the node above that leads here
    /// (`ports->remoteport->portnum`).
    from_port: u8,
}

/// The walk's state.
struct Walk<'t, 'a> {
    t: &'t mut Tracer<'a>,
    nodes: Vec<McNode>,
    by_dist: Vec<Vec<usize>>,
    known: HashSet<u64>,
    target: u64,
}

/// `get_route`'s multicast half: from the source at `src` (a directed
/// route) to the port with LID `dest` along `mlid`'s tree. Warns and
/// returns false on failure.
pub(super) fn trace(t: &mut Tracer<'_>, src: &PortId, dest: u16, mlid: u32, dump: u8) -> bool {
    const F: &str = "get_route";
    if mlid < 0xc000 {
        t.warn(F, "invalid MLID; must be 0xc000 or larger");
    }
    // find_target_portguid: when it fails, ibtracert goes on with an
    // impossible GUID (its -1), so the walk finds no target.
    let target = match t.get_node(&PortId::lid(dest)) {
        Some((_, p)) => p.guid,
        None => {
            // (get_node warned as libibmad does for the failed query.)
            t.warn("find_target_portguid", "can't find to port\n");
            u64::MAX
        }
    };
    let mut w = Walk {
        t,
        nodes: Vec::new(),
        by_dist: vec![Vec::new(); MAXHOPS as usize + 2],
        known: HashSet::new(),
        target,
    };
    match w.find_mcpath(src, mlid) {
        Some(end) => {
            w.dump_mcpath(end, dump);
            true
        }
        None => {
            w.t.warn(F, "can't find a multicast route from src to dest");
            false
        }
    }
}

impl Walk<'_, '_> {
    /// `new_node`: 1 when `n` is the target, -1 when its switch is
    /// known, else 0 (queued at its distance).
    fn new_node(&mut self, mut n: McNode) -> (i32, usize) {
        if n.port.guid == self.target {
            n.dist = -1;
            self.nodes.push(n);
            return (1, self.nodes.len() - 1);
        }
        if !self.known.insert(n.node.guid) {
            self.nodes.push(n);
            return (-1, self.nodes.len() - 1);
        }
        let d = n.dist as usize;
        self.nodes.push(n);
        let i = self.nodes.len() - 1;
        if let Some(v) = self.by_dist.get_mut(d) {
            v.push(i);
        }
        (0, i)
    }

    /// `switch_mclookup`: the ports `mlid` is forwarded to (by port
    /// number), or None.
    fn switch_mclookup(&self, at: &PortId, numports: u8, mlid: u32) -> Option<[bool; 256]> {
        let t = at.target()?;
        let si = self.t.s.smp().switch_info(&t).ok()?;
        let m = mlid.checked_sub(0xc000)?;
        if m >= u32::from(si.multicast_fdb_cap) {
            return None;
        }
        let mut map = [false; 256];
        let maxsets = u32::from(numports).div_ceil(16);
        for set in 0..maxsets {
            let d = self
                .t
                .s
                .smp()
                .get::<RawSmpData>(&t, AttributeId::MCAST_FWD_TABLE, (m / 32) | (set << 28))
                .ok()?;
            let k = (m % 32) as usize * 2;
            let mask = u16::from_be_bytes([d.0[k], d.0[k + 1]]);
            for i in 0..16 {
                if mask & (1 << i) != 0 {
                    map[(set * 16 + i) as usize] = true;
                }
            }
        }
        Some(map)
    }

    /// `find_mcpath`.
    fn find_mcpath(&mut self, from: &PortId, mlid: u32) -> Option<usize> {
        const F: &str = "find_mcpath";
        let Some((node, port)) = self.t.get_node(from) else {
            let m = format!("can't reach node {}", from.text());
            self.t.warn(F, &m);
            return None;
        };
        let root_port = port.clone();
        let (r, root) = self.new_node(McNode {
            node,
            port,
            path: from.clone(),
            dist: 0,
            upnode: None,
            upport: 0,
            from_port: 0,
        });
        if r > 0 {
            let n = &self.nodes[root];
            if n.node.ntype != 2 {
                self.t.warn(F, "ibtracert from CA to CA is unsupported");
                return None;
            }
            let (path, np) = (n.path.clone(), n.node.numports);
            return self
                .switch_mclookup(&path, np, mlid)
                .filter(|bits| bits[0])
                .map(|_| root);
        }
        let mut leafport = 0u8;
        for dist in 0..MAXHOPS as usize {
            let list: Vec<usize> = self.by_dist[dist].iter().rev().copied().collect();
            for idx in list {
                let mut map = [false; 256];
                let mut path = self.nodes[idx].path.clone();
                let (ntype, numports) = (self.nodes[idx].node.ntype, self.nodes[idx].node.numports);
                if ntype != 2 {
                    if dist > 0 {
                        continue;
                    }
                    leafport = path.p[path.cnt];
                    map[usize::from(root_port.portnum)] = true;
                    self.nodes[idx].upport = 0;
                } else {
                    if dist == 1 && leafport != 0 {
                        self.nodes[idx].upport = leafport;
                    }
                    match self.switch_mclookup(&path, numports, mlid) {
                        Some(m) => map = m,
                        None => {
                            let m =
                                format!("skipping bad Switch 0x{:x}", self.nodes[idx].node.guid);
                            self.t.warn(F, &m);
                            continue;
                        }
                    }
                }
                let upport = self.nodes[idx].upport;
                for i in 1..=numports {
                    if !map[usize::from(i)] || i == upport {
                        continue;
                    }
                    let from_port = if dist == 0 && leafport != 0 {
                        if from.cnt > 0 {
                            path.cnt -= 1;
                        }
                        root_port.portnum
                    } else {
                        let Some(pi) = path
                            .target()
                            .and_then(|t| self.t.s.smp().port_info(&t, i).ok())
                        else {
                            let m = format!("can't reach node {} port {i}", path.text());
                            self.t.warn(F, &m);
                            return None;
                        };
                        if pi.port_phys_state.0 != 5 {
                            continue;
                        }
                        if !path.extend(i) {
                            return None;
                        }
                        i
                    };
                    let Some((rnode, rport)) = self.t.get_node(&path) else {
                        let m =
                            format!("NodeInfo on {} port {i} failed, skipping port", path.text());
                        self.t.warn(F, &m);
                        path.cnt = path.cnt.saturating_sub(1);
                        continue;
                    };
                    let upport = rport.portnum;
                    let (r, ri) = self.new_node(McNode {
                        node: rnode,
                        port: rport,
                        path: path.clone(),
                        dist: dist as i32 + 1,
                        upnode: Some(idx),
                        upport,
                        from_port,
                    });
                    if r > 0 {
                        return Some(ri);
                    }
                    if r < 0 && self.nodes[ri].node.ntype == 2 {
                        let (n, p) = (self.nodes[ri].node.clone(), self.nodes[ri].port.clone());
                        self.t.dump_endnode(2, "ERR: circle discovered at", &n, &p);
                    }
                    path.cnt = path.cnt.saturating_sub(1);
                }
            }
        }
        None
    }

    /// `dump_mcpath`: the path from the source down to `idx`.
    fn dump_mcpath(&mut self, idx: usize, dump: u8) {
        if let Some(up) = self.nodes[idx].upnode {
            self.dump_mcpath(up, dump);
        }
        let n = &self.nodes[idx];
        let name = self.t.name(&n.node);
        let ty = type_str(n.node.ntype);
        let lids = |p: &Port| (p.lid, p.lid_end());
        let end = |what: &str, n: &McNode| {
            let (lo, hi) = lids(&n.port);
            format!(
                "{what} {ty} 0x{:x} port {} lid {lo}-{hi} \"{name}\"\n",
                n.node.guid, n.port.portnum
            )
        };
        let json = Json::obj()
            .with("type", Json::String(ty.into()))
            .with("node_guid", crate::ibdiag::report::hex(n.node.guid, 16))
            .with("port", Json::from(u64::from(n.port.portnum)))
            .with("lid", Json::from(u64::from(n.port.lid)))
            .with("node_description", Json::String(name.clone()));
        if n.dist == 0 {
            self.t.text.push_str(&end("From", n));
            self.t.ends.push(("from", json));
            return;
        }
        let line = if dump == 1 {
            format!(
                "[{}] -> {ty} {{0x{:016x}}}[{}]\n",
                n.from_port, n.node.guid, n.upport
            )
        } else {
            format!(
                "[{}] -> {ty} 0x{:x}[{}] lid {} \"{name}\"\n",
                n.from_port, n.node.guid, n.upport, n.port.lid
            )
        };
        self.t.text.push_str(&line);
        let (lid, lid_end) = lids(&n.port);
        self.t.hops.push(
            Json::obj()
                .with("out_port", Json::from(u64::from(n.from_port)))
                .with("type", Json::String(ty.into()))
                .with("port_guid", crate::ibdiag::report::hex(n.port.guid, 16))
                .with("port", Json::from(u64::from(n.upport)))
                .with("lid", Json::from(u64::from(lid)))
                .with("lid_end", Json::from(u64::from(lid_end)))
                .with("node_description", Json::String(name.clone())),
        );
        if n.dist < 0 {
            let s = end("To", n);
            self.t.text.push_str(&s);
            self.t.ends.push(("to", json));
        }
    }
}
