//! Are a fabric's unicast routes deadlock-free? A pure check of the
//! switches' linear forwarding tables, whoever programmed them.
//!
//! [`Tables`] is what the check needs to know of a fabric: every
//! switch's LFT and what each of its ports is linked to, and every CA
//! port's LID(s) and the switch port it hangs on. [`check`] follows, for
//! every CA destination LID, the route from every CA's switch through
//! the tables and finds
//!
//! - the **channel dependency graph**: a channel is one direction of a
//!   switch-to-switch link (the switch and its egress port); a route that
//!   leaves switch *s* by channel *a* and the next switch *t* by channel
//!   *b* makes *a* depend on *b*. A cycle in that graph is a possible
//!   credit loop (Dally and Seitz), the routes can deadlock; one example
//!   cycle is reported;
//! - **unreachable pairs**: (source CA port, destination LID) whose route
//!   ends nowhere (no entry, a port that leads to no node, a routing
//!   loop, or a wrong CA);
//! - the **route balance**: per switch port the CA LIDs its table sends
//!   out of it, with each switch's minimum and maximum over its linked
//!   ports (what `check_lft_balance` looks at).
//!
//! Cost: per destination LID one visit of every switch at most
//! (switches × CA LIDs), the dependencies deduplicated, and one depth-first
//! search over the channels.

use std::collections::BTreeSet;

use mad_core::hash::FastMap;

use super::NO_ROUTE;
use crate::subnet::{PortRef, Subnet};

/// What a switch port is linked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Port `port` of switch `sw` (a position in [`Tables::switches`]).
    Switch {
        /// The switch.
        sw: usize,
        /// Its port.
        port: u8,
    },
    /// The CA port at this position in [`Tables::cas`].
    Ca(usize),
}

/// One switch: its identity, its LFT and its links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchTables {
    /// Node GUID.
    pub guid: u64,
    /// Node description (for the report).
    pub name: String,
    /// LFT entries by LID (shorter than a LID: no route).
    pub lft: Vec<u8>,
    /// By port number (index 0 unused): what the port is linked to, for
    /// ports whose link is up.
    pub links: Vec<Option<Peer>>,
}

/// One CA (or router) port that holds LIDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaPort {
    /// Port GUID.
    pub guid: u64,
    /// Node description (for the report).
    pub name: String,
    /// Base LID.
    pub lid: u16,
    /// LMC: the port holds `lid .. lid + 2^lmc`.
    pub lmc: u8,
    /// The switch (position) and port the CA port hangs on; `None` for
    /// a CA linked to another CA or to nothing.
    pub attach: Option<(usize, u8)>,
}

/// A fabric as the check sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tables {
    /// The switches.
    pub switches: Vec<SwitchTables>,
    /// The CA ports with LIDs.
    pub cas: Vec<CaPort>,
}

impl Tables {
    /// The tables SM-lite computed for `subnet` (its switches' `lft`),
    /// with the LIDs it assigned.
    #[must_use]
    pub fn from_subnet(subnet: &Subnet) -> Self {
        let nodes = subnet.nodes();
        let mut sw_pos = vec![usize::MAX; nodes.len()];
        let mut t = Self::default();
        for (i, n) in nodes.iter().enumerate().filter(|(_, n)| n.is_switch()) {
            sw_pos[i] = t.switches.len();
            t.switches.push(SwitchTables {
                guid: n.guid(),
                name: n.desc.clone(),
                lft: n.lft.iter().copied().collect(),
                links: vec![None; usize::from(n.info.num_ports) + 1],
            });
        }
        let mut ca_pos: FastMap<PortRef, usize> = FastMap::default();
        for (i, n) in nodes.iter().enumerate().filter(|(_, n)| !n.is_switch()) {
            for p in n.ports.iter().flatten().filter(|p| p.lid != 0) {
                let attach = subnet
                    .remote((i, p.num))
                    .filter(|(r, _)| sw_pos[*r] != usize::MAX)
                    .map(|(r, rp)| (sw_pos[r], rp));
                ca_pos.insert((i, p.num), t.cas.len());
                t.cas.push(CaPort {
                    guid: p.guid,
                    name: n.desc.clone(),
                    lid: p.lid,
                    lmc: p.lmc,
                    attach,
                });
            }
        }
        for (i, n) in nodes.iter().enumerate().filter(|(_, n)| n.is_switch()) {
            let s = sw_pos[i];
            for port in 1..=n.info.num_ports {
                let peer = subnet.remote((i, port)).and_then(|(r, rp)| {
                    if sw_pos[r] != usize::MAX {
                        Some(Peer::Switch {
                            sw: sw_pos[r],
                            port: rp,
                        })
                    } else {
                        ca_pos.get(&(r, rp)).map(|&c| Peer::Ca(c))
                    }
                });
                t.switches[s].links[usize::from(port)] = peer;
            }
        }
        t
    }
}

/// One direction of a switch-to-switch link: leaving `sw` by `port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Channel {
    /// The switch (position).
    pub sw: usize,
    /// Its egress port.
    pub port: u8,
}

/// A (source CA port, destination LID) pair the tables do not connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreachable {
    /// The source CA port (position in [`Tables::cas`]).
    pub src: usize,
    /// The destination LID.
    pub dlid: u16,
}

/// The routes out of one switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRoutes {
    /// Port number.
    pub port: u8,
    /// CA LIDs the switch's table sends out of it.
    pub routes: u32,
    /// (source CA port, destination LID) pairs whose route leaves by it:
    /// its share of uniform all-to-all traffic.
    pub pairs: u64,
    /// The port leads to another switch (not to a CA).
    pub to_switch: bool,
}

/// The route balance of one switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchBalance {
    /// The switch (position).
    pub sw: usize,
    /// Its linked ports, in port order.
    pub ports: Vec<PortRoutes>,
}

impl SwitchBalance {
    /// Fewest and most routes over the ports leading to switches
    /// (`None` when it has none).
    #[must_use]
    pub fn switch_port_range(&self) -> Option<(u32, u32)> {
        let mut it = self.ports.iter().filter(|p| p.to_switch).map(|p| p.routes);
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), r| (lo.min(r), hi.max(r))))
    }

    /// Fewest and most routes over every linked port (`None` when it has
    /// none).
    #[must_use]
    pub fn port_range(&self) -> Option<(u32, u32)> {
        let mut it = self.ports.iter().map(|p| p.routes);
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), r| (lo.min(r), hi.max(r))))
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Channels (switch-to-switch link directions) some route uses.
    pub channels: usize,
    /// Dependencies between them.
    pub dependencies: usize,
    /// One cycle of the channel dependency graph, each channel depending
    /// on the next and the last on the first; empty when there is none.
    pub cycle: Vec<Channel>,
    /// Number of unreachable (source, destination LID) pairs.
    pub unreachable: usize,
    /// The first few of them (at most [`EXAMPLES`]).
    pub unreachable_examples: Vec<Unreachable>,
    /// (source, destination LID) pairs checked.
    pub pairs: usize,
    /// Every switch's route balance.
    pub balance: Vec<SwitchBalance>,
}

impl Report {
    /// True when the routes can deadlock or leave pairs unconnected.
    #[must_use]
    pub fn failed(&self) -> bool {
        !self.cycle.is_empty() || self.unreachable > 0
    }
}

/// Unreachable pairs kept as examples.
pub const EXAMPLES: usize = 10;

/// Where a route from a switch toward the current destination ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Unknown,
    /// On the walk being followed now.
    Walking,
    Reaches,
    Fails,
}

/// Checks the routes of `t` (see the module docs).
#[must_use]
pub fn check(t: &Tables) -> Report {
    let n = t.switches.len();
    // Channel numbers: per switch, its ports in order.
    let mut first_channel = Vec::with_capacity(n + 1);
    let mut total = 0usize;
    for s in &t.switches {
        first_channel.push(total);
        total += s.links.len();
    }
    first_channel.push(total);
    let chan = |sw: usize, port: u8| first_channel[sw] + usize::from(port);
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut used = vec![false; total];
    // Source switches (with the CA ports on each).
    let mut sources: Vec<(usize, Vec<usize>)> = Vec::new();
    {
        let mut by_sw: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (k, c) in t.cas.iter().enumerate() {
            if let Some((sw, _)) = c.attach.filter(|(sw, _)| *sw < n) {
                by_sw[sw].push(k);
            }
        }
        sources.extend(by_sw.into_iter().enumerate().filter(|(_, v)| !v.is_empty()));
    }
    let mut fate = vec![Fate::Unknown; n];
    let mut walk: Vec<usize> = Vec::new();
    let mut unreachable = 0usize;
    let mut examples = Vec::new();
    let mut pairs = 0usize;
    let mut counts: Vec<Vec<u32>> = t.switches.iter().map(|s| vec![0; s.links.len()]).collect();
    let mut through: Vec<Vec<u64>> = t.switches.iter().map(|s| vec![0; s.links.len()]).collect();
    for (dst, d) in t.cas.iter().enumerate() {
        for dlid in lid_range(d) {
            let li = usize::from(dlid);
            for (s, sw) in t.switches.iter().enumerate() {
                let e = sw.lft.get(li).copied().unwrap_or(NO_ROUTE);
                if let Some(c) = counts[s].get_mut(usize::from(e)) {
                    if sw.links.get(usize::from(e)).copied().flatten().is_some() {
                        *c += 1;
                    }
                }
            }
            fate.fill(Fate::Unknown);
            for (start, cas) in &sources {
                let result = follow(t, *start, li, dst, &mut fate, &mut walk, |a, b| {
                    let ca = chan(a.sw, a.port);
                    used[ca] = true;
                    if let Some(b) = b {
                        let cb = chan(b.sw, b.port);
                        used[cb] = true;
                        edges.insert((ca, cb));
                    }
                });
                let sources = cas.iter().filter(|&&c| c != dst).count() as u64;
                count_pairs(t, *start, li, sources, &mut through);
                for &src in cas {
                    if src == dst {
                        continue;
                    }
                    pairs += 1;
                    if !result {
                        unreachable += 1;
                        if examples.len() < EXAMPLES {
                            examples.push(Unreachable { src, dlid });
                        }
                    }
                }
            }
        }
    }
    let channel_of = |id: usize| {
        let sw = first_channel.partition_point(|&f| f <= id) - 1;
        Channel {
            sw,
            port: (id - first_channel[sw]) as u8,
        }
    };
    let edge_list: Vec<(usize, usize)> = edges.into_iter().collect();
    let cycle = find_cycle(total, &edge_list)
        .into_iter()
        .map(channel_of)
        .collect();
    let balance = t
        .switches
        .iter()
        .enumerate()
        .map(|(s, sw)| SwitchBalance {
            sw: s,
            ports: sw
                .links
                .iter()
                .enumerate()
                .skip(1)
                .filter_map(|(p, l)| {
                    let peer = (*l)?;
                    Some(PortRoutes {
                        port: p as u8,
                        routes: counts[s][p],
                        pairs: through[s][p],
                        to_switch: matches!(peer, Peer::Switch { .. }),
                    })
                })
                .collect(),
        })
        .collect();
    Report {
        channels: used.iter().filter(|u| **u).count(),
        dependencies: edge_list.len(),
        cycle,
        unreachable,
        unreachable_examples: examples,
        pairs,
        balance,
    }
}

/// The LIDs of a CA port (none for LID 0).
fn lid_range(c: &CaPort) -> impl Iterator<Item = u16> {
    let count = if c.lid == 0 {
        0
    } else {
        1u32 << c.lmc.min(crate::MAX_LMC)
    };
    let base = u32::from(c.lid);
    (0..count).filter_map(move |k| u16::try_from(base + k).ok())
}

/// Follows the route toward LID `li` (held by CA port `dst`) from switch
/// `start`, recording each channel taken and the dependency on the next
/// (`dep(a, Some(b))`, or `dep(a, None)` for the last channel). Switches
/// whose fate is known stop the walk (their part was recorded when they
/// were first walked). True when the route reaches the CA port.
fn follow(
    t: &Tables,
    start: usize,
    li: usize,
    dst: usize,
    fate: &mut [Fate],
    walk: &mut Vec<usize>,
    mut dep: impl FnMut(Channel, Option<Channel>),
) -> bool {
    walk.clear();
    let mut s = start;
    let mut prev: Option<Channel> = None;
    // The channel onward from a switch walked before, where the walk
    // stopped (its dependency on `prev` is new).
    let mut tail: Option<Channel> = None;
    let end = loop {
        let known = match fate[s] {
            Fate::Reaches => Some(true),
            // Fails, or on this walk: a routing loop.
            Fate::Fails | Fate::Walking => Some(false),
            Fate::Unknown => None,
        };
        if let Some(k) = known {
            tail = next_channel(t, s, li);
            break k;
        }
        fate[s] = Fate::Walking;
        walk.push(s);
        let sw = &t.switches[s];
        let e = sw.lft.get(li).copied().unwrap_or(NO_ROUTE);
        match sw.links.get(usize::from(e)).copied().flatten() {
            Some(Peer::Ca(c)) => break c == dst,
            Some(Peer::Switch { sw: next, .. }) if next < t.switches.len() => {
                let here = Channel { sw: s, port: e };
                if let Some(p) = prev {
                    dep(p, Some(here));
                }
                prev = Some(here);
                s = next;
            }
            _ => break false,
        }
    };
    if let Some(p) = prev {
        dep(p, tail);
    }
    let f = if end { Fate::Reaches } else { Fate::Fails };
    for &w in walk.iter() {
        fate[w] = f;
    }
    end
}

/// Adds `sources` pairs to every port on the route toward LID `li`
/// from switch `start` (at most one visit per switch: a routing loop
/// ends it).
fn count_pairs(t: &Tables, start: usize, li: usize, sources: u64, through: &mut [Vec<u64>]) {
    if sources == 0 {
        return;
    }
    let mut s = start;
    for _ in 0..t.switches.len() {
        let e = t.switches[s].lft.get(li).copied().unwrap_or(NO_ROUTE);
        let Some(peer) = t.switches[s].links.get(usize::from(e)).copied().flatten() else {
            return;
        };
        through[s][usize::from(e)] += sources;
        match peer {
            Peer::Switch { sw, .. } if sw < t.switches.len() => s = sw,
            _ => return,
        }
    }
}

/// The channel switch `s` sends LID `li` out of, when it leads to a
/// switch.
fn next_channel(t: &Tables, s: usize, li: usize) -> Option<Channel> {
    let e = t.switches[s].lft.get(li).copied()?;
    match t.switches[s].links.get(usize::from(e)).copied().flatten() {
        Some(Peer::Switch { .. }) => Some(Channel { sw: s, port: e }),
        _ => None,
    }
}

/// One cycle of the directed graph on `0..nodes` with `edges` (sorted),
/// each vertex followed by the one it points to; empty when the graph
/// has none. An iterative depth-first search (white / grey / black).
#[must_use]
pub fn find_cycle(nodes: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut start = vec![0usize; nodes + 1];
    for &(a, _) in edges {
        start[a + 1] += 1;
    }
    for i in 0..nodes {
        start[i + 1] += start[i];
    }
    let mut adj = vec![0usize; edges.len()];
    let mut fill = start.clone();
    for &(a, b) in edges {
        adj[fill[a]] = b;
        fill[a] += 1;
    }
    // 0 white, 1 grey (on the stack), 2 black.
    let mut color = vec![0u8; nodes];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..nodes {
        if color[root] != 0 {
            continue;
        }
        color[root] = 1;
        stack.push((root, start[root]));
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            if next == start[v + 1] {
                color[v] = 2;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let w = adj[next];
            match color[w] {
                0 => {
                    color[w] = 1;
                    stack.push((w, start[w]));
                }
                1 => {
                    let from = stack.iter().position(|&(u, _)| u == w).unwrap_or(0);
                    return stack[from..].iter().map(|&(u, _)| u).collect();
                }
                _ => {}
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `n` switches (port 1 clockwise, port 2 counter-clockwise,
    /// port 3 a CA with LID `k + 1`), routed by `pick(from, to)` (1 or 2).
    fn ring(n: usize, pick: impl Fn(usize, usize) -> u8) -> Tables {
        let mut t = Tables::default();
        for k in 0..n {
            let mut lft = vec![NO_ROUTE; n + 1];
            for d in 0..n {
                lft[d + 1] = if d == k { 3 } else { pick(k, d) };
            }
            t.switches.push(SwitchTables {
                guid: 0x100 + k as u64,
                name: format!("sw{k}"),
                lft,
                links: vec![
                    None,
                    Some(Peer::Switch {
                        sw: (k + 1) % n,
                        port: 2,
                    }),
                    Some(Peer::Switch {
                        sw: (k + n - 1) % n,
                        port: 1,
                    }),
                    Some(Peer::Ca(k)),
                ],
            });
            t.cas.push(CaPort {
                guid: 0x200 + k as u64,
                name: format!("ca{k}"),
                lid: k as u16 + 1,
                lmc: 0,
                attach: Some((k, 3)),
            });
        }
        t
    }

    #[test]
    fn clockwise_routes_on_a_ring_make_a_cycle() {
        let t = ring(4, |_, _| 1);
        let r = check(&t);
        assert_eq!(r.unreachable, 0);
        assert_eq!(r.pairs, 12);
        assert_eq!(r.cycle.len(), 4, "{:?}", r.cycle);
        // Each channel of the cycle leaves by port 1 and leads to the
        // next one's switch.
        for (k, c) in r.cycle.iter().enumerate() {
            let next = r.cycle[(k + 1) % r.cycle.len()];
            assert_eq!(c.port, 1);
            assert_eq!((c.sw + 1) % 4, next.sw);
        }
        assert!(r.failed());
    }

    #[test]
    fn routes_that_never_cross_one_link_have_no_cycle() {
        // A ring cut between switch 3 and 0: go clockwise toward higher
        // numbers, counter-clockwise toward lower ones (a line).
        let t = ring(4, |from, to| if to > from { 1 } else { 2 });
        let r = check(&t);
        assert!(r.cycle.is_empty(), "{:?}", r.cycle);
        assert_eq!(r.unreachable, 0);
        assert!(!r.failed());
        // Channels 0->1, 1->2, 2->3 and back: six in use.
        assert_eq!(r.channels, 6);
        // sw1 port 1 carries LIDs 3 and 4; port 2 carries LID 1.
        let b = &r.balance[1];
        assert_eq!(b.switch_port_range(), Some((1, 2)));
        // Port 1 of sw1 carries ca0 and ca1 to LIDs 3 and 4 (4 pairs);
        // port 2 carries ca1, ca2 and ca3 to LID 1 (3 pairs).
        let pairs: Vec<(u8, u64)> = b.ports.iter().map(|p| (p.port, p.pairs)).collect();
        assert_eq!(pairs, vec![(1, 4), (2, 3), (3, 3)]);
        assert_eq!(b.port_range(), Some((1, 2)));
    }

    #[test]
    fn a_missing_entry_and_a_routing_loop_are_unreachable_pairs() {
        let mut t = ring(3, |from, to| if to > from { 1 } else { 2 });
        // sw0 has no route to LID 3; sw1 and sw2 bounce LID 1 between them.
        t.switches[0].lft[3] = NO_ROUTE;
        t.switches[1].lft[1] = 1;
        t.switches[2].lft[1] = 2;
        let r = check(&t);
        // ca0 -> 3 (no entry), ca1 -> 1 and ca2 -> 1 (loop); ca1 -> 3
        // still goes sw1 -> sw2.
        assert_eq!(r.unreachable, 3, "{:?}", r.unreachable_examples);
        assert!(r
            .unreachable_examples
            .contains(&Unreachable { src: 0, dlid: 3 }));
        assert!(r.failed());
    }

    #[test]
    fn a_route_into_the_wrong_ca_is_unreachable() {
        let mut t = ring(3, |from, to| if to > from { 1 } else { 2 });
        // sw2 hands LID 1 to its own CA: ca2 -> 1 fails, ca1 -> 1 goes
        // sw1 -> sw0 and arrives.
        t.switches[2].lft[1] = 3;
        let r = check(&t);
        assert_eq!(r.unreachable, 1);
        assert_eq!(
            r.unreachable_examples,
            vec![Unreachable { src: 2, dlid: 1 }]
        );
    }

    #[test]
    fn find_cycle_on_hand_made_graphs() {
        assert!(find_cycle(3, &[(0, 1), (1, 2), (0, 2)]).is_empty());
        assert_eq!(find_cycle(2, &[(0, 1), (1, 0)]), vec![0, 1]);
        let c = find_cycle(5, &[(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)]);
        assert_eq!(c, vec![1, 2, 3]);
        assert_eq!(find_cycle(1, &[(0, 0)]), vec![0]);
        assert!(find_cycle(0, &[]).is_empty());
    }

    #[test]
    fn lmc_ranges_are_every_destination() {
        let mut t = ring(3, |from, to| if to > from { 1 } else { 2 });
        t.cas[2].lmc = 1;
        for s in &mut t.switches {
            s.lft.push(NO_ROUTE);
        }
        let r = check(&t);
        // LID 4 (ca2's second) is routed nowhere: from ca0 and ca1.
        assert_eq!(r.unreachable, 2);
        assert!(r
            .unreachable_examples
            .contains(&Unreachable { src: 0, dlid: 4 }));
    }
}
