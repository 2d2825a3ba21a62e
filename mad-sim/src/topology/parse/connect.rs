//! The connect pass: every port line matched by the other end's, and the
//! link widths and speeds both ends support.

use super::scan::*;
use super::*;

impl Parser {
    /// The connect pass (ibsim's `connect_ports`): every port line must be
    /// matched by the other end's, widths and speeds must meet.
    pub(in crate::topology) fn finish(mut self) -> PResult<Topology> {
        let mut links = Vec::new();
        for ni in 0..self.nodes.len() {
            let first = usize::from(self.nodes[ni].first_port());
            for pi in first..self.nodes[ni].ports.len() {
                if self.nodes[ni].ports[pi].remote.is_some() {
                    continue;
                }
                let Some(link) = self.pending[ni][pi].clone() else {
                    continue;
                };
                let here = &self.nodes[ni];
                let port = pi as u8;
                let err = |kind| TopologyError {
                    location: Box::new(here.ports[pi].location.clone()),
                    kind,
                };
                let Some(&ri) = self.by_id.get(&link.remote) else {
                    return Err(err(ErrorKind::UnknownRemoteNode {
                        node: here.id.clone(),
                        port,
                        remote: link.remote.clone(),
                    }));
                };
                let remote = &self.nodes[ri];
                if link.remote_port > i64::from(remote.num_ports) {
                    return Err(err(ErrorKind::RemotePortOutOfRange {
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: link.remote_port,
                        remote_ports: remote.num_ports,
                    }));
                }
                let rp = link.remote_port as u8;
                if ri == ni && usize::from(rp) == pi {
                    return Err(err(ErrorKind::SelfLink {
                        node: here.id.clone(),
                        port,
                    }));
                }
                let back = self.pending[ri][usize::from(rp)].as_ref();
                let agrees =
                    back.is_some_and(|b| b.remote == here.id && b.remote_port == i64::from(port));
                if !agrees {
                    let remote_says = match back {
                        None => "lists no link".to_owned(),
                        Some(b) => format!("says {:?} port {}", b.remote, b.remote_port),
                    };
                    return Err(err(ErrorKind::OneSidedLink {
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: rp,
                        remote_says,
                    }));
                }
                let mine = &here.ports[pi];
                let theirs = &remote.ports[usize::from(rp)];
                let mismatch = |what, m: u8, t: u8| {
                    err(ErrorKind::LinkMismatch {
                        what,
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: rp,
                        mine: m,
                        theirs: t,
                    })
                };
                let w = active_width(mine.width_enabled & theirs.width_enabled)
                    .ok_or_else(|| mismatch("width", mine.width_enabled, theirs.width_enabled))?;
                let s = active_speed(mine.speed_enabled & theirs.speed_enabled)
                    .ok_or_else(|| mismatch("speed", mine.speed_enabled, theirs.speed_enabled))?;
                let e = active_speed_ext(mine.speed_ext_enabled & theirs.speed_ext_enabled);
                let f = mine.fdr10_enabled && theirs.fdr10_enabled;
                let a = PortRef { node: ni, port };
                let b = PortRef { node: ri, port: rp };
                for (r, other) in [(a, b), (b, a)] {
                    let p = &mut self.nodes[r.node].ports[usize::from(r.port)];
                    p.remote = Some(other);
                    p.width_active = w;
                    p.speed_active = s;
                    p.speed_ext_active = e;
                    p.fdr10_active = f;
                }
                links.push(TopoLink {
                    a,
                    b,
                    width: w,
                    speed: s,
                    speed_ext: e,
                });
            }
        }
        // Port GUIDs must be unique too (ibsim checks node GUIDs only).
        let mut port_guids: HashMap<u64, (usize, u8)> = HashMap::new();
        for (ni, node) in self.nodes.iter().enumerate() {
            for p in node.existing_ports() {
                if node.is_switch() && p.num > 0 {
                    continue;
                }
                if let Some(&(oi, op)) = port_guids.get(&p.guid) {
                    let other = &self.nodes[oi];
                    return Err(TopologyError {
                        location: Box::new(node.location.clone()),
                        kind: ErrorKind::DuplicateGuid {
                            guid: p.guid,
                            what: format!("node {:?} port {}", node.id, p.num),
                            other: format!("node {:?} port {op}", other.id),
                            first: other.location.clone(),
                        },
                    });
                }
                port_guids.insert(p.guid, (ni, p.num));
            }
        }
        let by_guid = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node_guid, i))
            .collect();
        Ok(Topology {
            nodes: self.nodes,
            links,
            by_id: self.by_id,
            by_guid,
        })
    }
}
