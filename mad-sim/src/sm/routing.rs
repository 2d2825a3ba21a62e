//! LID assignment and min-hop unicast routing, as pure functions over a
//! swept [`Subnet`].
//!
//! - [`LidBook`] remembers which port GUID holds which LID, so LIDs stay
//!   the same across sweeps (and across SM restarts, when
//!   `honor_existing` is set: a port's current, unclaimed LID is kept).
//! - [`compute_lfts`] fills every switch's linear forwarding table: the
//!   switch's own LID goes to port 0, a CA port's LID on its own switch
//!   goes out the port the CA hangs on, and every other LID goes out a
//!   port on a shortest (fewest switch hops) path; among equally short
//!   ports the one carrying the fewest CA LIDs so far is chosen (lowest
//!   port number on a tie), which spreads routes over parallel links and
//!   redundant uplinks much as OpenSM's min-hop engine does.

use std::collections::{HashMap, VecDeque};

use super::subnet::{NodeIdx, PortRef, Subnet};

/// Highest unicast LID (0xC000 and up are multicast).
pub const MAX_UNICAST_LID: u16 = 0xBFFF;
/// "No route" in a linear forwarding table.
pub const NO_ROUTE: u8 = 0xFF;

/// Persistent port GUID → LID bookkeeping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LidBook {
    by_guid: HashMap<u64, u16>,
    owner: HashMap<u16, u64>,
}

impl LidBook {
    /// The LID recorded for `guid`.
    #[must_use]
    pub fn lid(&self, guid: u64) -> Option<u16> {
        self.by_guid.get(&guid).copied()
    }

    /// Number of GUIDs with a LID.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_guid.len()
    }

    /// True when no LID was given out yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_guid.is_empty()
    }

    fn claim(&mut self, guid: u64, lid: u16) {
        self.by_guid.insert(guid, lid);
        self.owner.insert(lid, guid);
    }
}

/// The LID-bearing ports of `subnet` in discovery order: switch port 0
/// and every CA port that was read with its physical link up (the SM's
/// own CA port too).
fn lid_ports(subnet: &Subnet) -> Vec<(PortRef, u64, u16)> {
    let mut v = Vec::new();
    for (i, n) in subnet.nodes().iter().enumerate() {
        for p in n.ports.iter().flatten() {
            let bearing = if n.is_switch() {
                p.num == 0
            } else {
                p.link_up()
            };
            if bearing {
                v.push(((i, p.num), p.guid, p.info.lid));
            }
        }
    }
    v
}

/// Gives every LID-bearing port of `subnet` a LID (LMC 0) and records it
/// in the ports' `lid` and the subnet's `max_lid`. A port keeps the LID
/// `book` has for its GUID; otherwise, with `honor_existing`, the LID it
/// already has when that is a valid unicast LID nobody else holds;
/// otherwise the lowest free LID from `first_lid` up.
///
/// # Errors
/// The number of ports left without a LID when the unicast LID space
/// (up to 0xBFFF) runs out; the others are assigned.
pub fn assign_lids(
    subnet: &mut Subnet,
    book: &mut LidBook,
    first_lid: u16,
    honor_existing: bool,
) -> Result<(), usize> {
    let ports = lid_ports(subnet);
    let mut chosen: Vec<Option<u16>> = Vec::with_capacity(ports.len());
    // Pass 1: what the book knows.
    for (_, guid, _) in &ports {
        chosen.push(book.lid(*guid));
    }
    // Pass 2: honour LIDs already configured in the ports.
    if honor_existing {
        for (k, (_, guid, cur)) in ports.iter().enumerate() {
            if chosen[k].is_some() {
                continue;
            }
            let valid = *cur >= 1 && *cur <= MAX_UNICAST_LID;
            if valid && !book.owner.contains_key(cur) {
                book.claim(*guid, *cur);
                chosen[k] = Some(*cur);
            }
        }
    }
    // Pass 3: the lowest free LIDs for the rest.
    let mut next = first_lid.max(1);
    let mut unassigned = 0usize;
    for (k, (_, guid, _)) in ports.iter().enumerate() {
        if chosen[k].is_some() {
            continue;
        }
        while next <= MAX_UNICAST_LID && book.owner.contains_key(&next) {
            next += 1;
        }
        if next > MAX_UNICAST_LID {
            unassigned += 1;
            continue;
        }
        book.claim(*guid, next);
        chosen[k] = Some(next);
    }
    let mut max_lid = 0;
    for (k, ((node, port), _, _)) in ports.iter().enumerate() {
        let lid = chosen[k].unwrap_or(0);
        max_lid = max_lid.max(lid);
        if let Some(p) = subnet
            .node_mut(*node)
            .and_then(|n| n.ports.get_mut(usize::from(*port)))
            .and_then(Option::as_mut)
        {
            p.lid = lid;
        }
    }
    subnet.set_max_lid(max_lid);
    if unassigned == 0 {
        Ok(())
    } else {
        Err(unassigned)
    }
}

/// Switch indices, each switch's (port, neighbour position) list, and
/// `dist[t][u]`.
type SwitchGraph = (Vec<NodeIdx>, Vec<Vec<(u8, usize)>>, Vec<Vec<u16>>);

/// Shortest switch-hop distances: `dist[t][u]` = switch hops from switch
/// `u` to switch `t` (positions in `switches`), `u16::MAX` when
/// unreachable. Also returns each switch's (port, neighbour position)
/// list over switch-to-switch links.
fn switch_graph(subnet: &Subnet) -> SwitchGraph {
    let switches: Vec<NodeIdx> = subnet
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
        .map(|(i, _)| i)
        .collect();
    let mut pos: HashMap<NodeIdx, usize> = HashMap::with_capacity(switches.len());
    for (k, i) in switches.iter().enumerate() {
        pos.insert(*i, k);
    }
    let mut adj: Vec<Vec<(u8, usize)>> = vec![Vec::new(); switches.len()];
    for (k, i) in switches.iter().enumerate() {
        let n = &subnet.nodes()[*i];
        for port in 1..=n.info.num_ports {
            if let Some((r, _)) = subnet.remote((*i, port)) {
                if let Some(rk) = pos.get(&r) {
                    adj[k].push((port, *rk));
                }
            }
        }
    }
    let mut dist = Vec::with_capacity(switches.len());
    let mut q = VecDeque::new();
    for t in 0..switches.len() {
        let mut d = vec![u16::MAX; switches.len()];
        d[t] = 0;
        q.clear();
        q.push_back(t);
        while let Some(u) = q.pop_front() {
            for &(_, v) in &adj[u] {
                if d[v] == u16::MAX {
                    d[v] = d[u] + 1;
                    q.push_back(v);
                }
            }
        }
        dist.push(d);
    }
    (switches, adj, dist)
}

/// Computes every switch's linear forwarding table by min-hop (see the
/// module docs) and stores it in the switch's `lft`: `max_lid + 1`
/// entries, [`NO_ROUTE`] where there is none. Call after
/// [`assign_lids`].
pub fn compute_lfts(subnet: &mut Subnet) {
    let (switches, adj, dist) = switch_graph(subnet);
    let pos: HashMap<NodeIdx, usize> = switches.iter().enumerate().map(|(k, i)| (*i, k)).collect();
    // Each LID's target switch and the egress port at that switch.
    struct Target {
        lid: u16,
        sw: usize,
        egress: u8,
        is_ca: bool,
    }
    let mut targets = Vec::new();
    for (lid, (node, port)) in subnet.lids() {
        if let Some(&k) = pos.get(&node) {
            targets.push(Target {
                lid,
                sw: k,
                egress: 0,
                is_ca: false,
            });
        } else if let Some((r, rp)) = subnet.remote((node, port)) {
            if let Some(&k) = pos.get(&r) {
                targets.push(Target {
                    lid,
                    sw: k,
                    egress: rp,
                    is_ca: true,
                });
            }
        }
    }
    let size = usize::from(subnet.max_lid()) + 1;
    let mut tables: Vec<Vec<u8>> = Vec::with_capacity(switches.len());
    for s in 0..switches.len() {
        let nports = usize::from(subnet.nodes()[switches[s]].info.num_ports);
        let mut lft = vec![NO_ROUTE; size];
        let mut load = vec![0u32; nports + 1];
        // Candidate egress ports toward each target switch, computed on
        // first use.
        let mut cands: Vec<Option<Vec<u8>>> = vec![None; switches.len()];
        for t in &targets {
            let lid = usize::from(t.lid);
            if t.sw == s {
                lft[lid] = t.egress;
                continue;
            }
            let here = dist[t.sw][s];
            if here == u16::MAX {
                continue;
            }
            let c = cands[t.sw].get_or_insert_with(|| {
                let mut v: Vec<u8> = adj[s]
                    .iter()
                    .filter(|(_, nb)| dist[t.sw][*nb].saturating_add(1) == here)
                    .map(|(p, _)| *p)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            });
            let best = c
                .iter()
                .copied()
                .min_by_key(|p| (load.get(usize::from(*p)).copied().unwrap_or(0), *p));
            if let Some(p) = best {
                lft[lid] = p;
                if t.is_ca {
                    if let Some(l) = load.get_mut(usize::from(p)) {
                        *l += 1;
                    }
                }
            }
        }
        tables.push(lft);
    }
    for (k, lft) in tables.into_iter().enumerate() {
        if let Some(n) = subnet.node_mut(switches[k]) {
            n.lft = lft;
        }
    }
}
