//! Routing engines as OpenSM names them (`-R minhop,updn,ftree`): the
//! list is tried in order, an engine that cannot route the fabric says
//! why and the next is tried, and min-hop routes when none could.
//!
//! - `minhop`: [`super::compute_lfts`].
//! - `updn`: up/down routing. Switches are ranked by their distance from
//!   the root switches (from `root_guid_file`, else found as OpenSM's
//!   `updn` finds them: a switch is a root when one hop count alone
//!   reaches more than 90 % of the CAs and no other reaches more than 5 %,
//!   of those the ones whose hop count is the smallest;
//!   when that finds none, as on a torus, the most central switch is the
//!   root, and the log says which). A link goes *up* toward the lower
//!   (rank, node GUID); every route goes up zero or more links and then
//!   down zero or more, never up after down, so the channel dependency
//!   graph has no cycle (no credit loop can form).
//! - `ftree`: fat-tree routing. The fabric must be a fat tree by OpenSM's
//!   rules: the leaves are the switches with CAs, every switch's rank is
//!   its distance from the leaves, every link joins adjacent ranks, the
//!   leaves are all at the same distance from the top rank, and the
//!   switches of one rank have the same number of up links and of down
//!   links. Its routes are up/down routes with the top rank as roots,
//!   destinations taken leaf by leaf (CA ports in port order).
//!
//! Among its candidate ports a switch sends a CA LID out of the one
//! whose routes carry the fewest (source CA, destination) pairs so far,
//! then the fewest CA LIDs, then the lowest (a LID no source sends
//! through the switch: the fewest CA LIDs, then the *most* pairs, then
//! the lowest; the port with the fewest pairs takes the next LID that
//! carries traffic, so a free LID there could leave it a LID over its
//! share at the end, as one up port of 3-level trees was): per
//! destination the switches choose in the order traffic reaches them
//! (up-going switches deepest first, then down-going ones from the
//! top), each knowing how many sources its choice carries. Counting LFT
//! entries alone would let every level of a 3-level fat tree pick in
//! the same rhythm, and an aggregation switch would send all it gets up
//! one core link.
//!
//! Both up/down engines are min-hop within the up/down rule: a switch
//! that can reach the destination going down only goes down (the fewest
//! hops that way); any other goes up toward the fewest hops in all. A
//! switch's own LID that the rule cannot reach (one root from another)
//! is routed by the shortest path: only management traffic goes there,
//! and no CA's route depends on it.

use std::collections::VecDeque;

use super::{SwitchGraph, NO_ROUTE};
use crate::lft::{BlockInterner, Lft};
use crate::subnet::{NodeIdx, Subnet};

/// A routing engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Min-hop (OpenSM's default).
    MinHop,
    /// Up/down.
    UpDown,
    /// Fat tree.
    FatTree,
}

impl Engine {
    /// OpenSM's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::MinHop => "minhop",
            Self::UpDown => "updn",
            Self::FatTree => "ftree",
        }
    }

    /// The engines of a comma-separated list (`-R`, opensm.conf's
    /// `routing_engine`), in order.
    ///
    /// # Errors
    /// A name that is empty or no engine's (naming it, and the engines
    /// there are).
    pub fn parse_list(s: &str) -> Result<Vec<Self>, String> {
        let mut v = Vec::new();
        for name in s.split(',') {
            let name = name.trim();
            let e = match name {
                "minhop" => Self::MinHop,
                "updn" => Self::UpDown,
                "ftree" => Self::FatTree,
                _ => {
                    return Err(format!(
                        "unknown routing engine '{name}' (mad sm has minhop, updn, ftree)"
                    ))
                }
            };
            if !v.contains(&e) {
                v.push(e);
            }
        }
        Ok(v)
    }
}

/// How SM-lite routes: [`crate::SmConfig::routing`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoutingConfig {
    /// The engines to try in order (empty: min-hop alone).
    pub engines: Vec<Engine>,
    /// Root switches' node GUIDs for `updn` (OpenSM's `root_guid_file`;
    /// empty: found automatically).
    pub root_guids: Vec<u64>,
}

impl RoutingConfig {
    /// True when routing is min-hop alone (the fast path of
    /// [`super::compute_lfts`] and the background routing thread).
    #[must_use]
    pub fn is_min_hop(&self) -> bool {
        self.engines.first().is_none_or(|e| *e == Engine::MinHop)
    }
}

/// Reads a `root_guid_file` / `cn_guid_file`: one GUID a line (hex with
/// or without `0x`), blank lines and `#` comments skipped.
///
/// # Errors
/// The first line that is no GUID, with its number (from 1).
pub fn parse_guid_file(text: &str) -> Result<Vec<u64>, String> {
    let mut v = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let l = line.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let word = l.split_whitespace().next().unwrap_or(l);
        let hex = word
            .strip_prefix("0x")
            .or_else(|| word.strip_prefix("0X"))
            .unwrap_or(word);
        match u64::from_str_radix(hex, 16) {
            Ok(g) if !hex.is_empty() => v.push(g),
            _ => return Err(format!("line {}: '{word}' is no GUID", k + 1)),
        }
    }
    Ok(v)
}

/// What routing did: which engine routed and what the engines said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The engine whose tables were programmed.
    pub engine: Engine,
    /// Why engines before it gave up, and what they chose (a root).
    pub notes: Vec<String>,
}

/// Routes `subnet` (LIDs assigned) with the first engine of `cfg` that
/// can, min-hop when none can, and stores the tables in its switches.
pub fn route(subnet: &mut Subnet, cfg: &RoutingConfig) -> Routed {
    let mut notes = Vec::new();
    for &e in &cfg.engines {
        let r = match e {
            Engine::MinHop => {
                super::compute_lfts(subnet);
                return Routed { engine: e, notes };
            }
            Engine::UpDown => updn_tables(subnet, &cfg.root_guids, &mut notes),
            Engine::FatTree => ftree_tables(subnet),
        };
        match r {
            Ok(tables) => {
                store(subnet, tables);
                return Routed { engine: e, notes };
            }
            Err(why) => notes.push(format!(
                "{}: {why}; falling back to the next routing engine",
                e.name()
            )),
        }
    }
    super::compute_lfts(subnet);
    Routed {
        engine: Engine::MinHop,
        notes,
    }
}

/// Stores per-switch tables (by position in the switch list).
fn store(subnet: &mut Subnet, tables: Vec<(NodeIdx, Vec<u8>)>) {
    let mut blocks = BlockInterner::default();
    for (node, lft) in tables {
        let lft = Lft::from_entries(&lft, &mut blocks);
        if let Some(n) = subnet.node_mut(node) {
            n.lft = lft;
        }
    }
}

/// Distances (switch hops) from `from` to every switch; `u32::MAX` where
/// unreachable.
fn bfs(adj: &[Vec<(u8, usize)>], from: &[usize]) -> Vec<u32> {
    let mut d = vec![u32::MAX; adj.len()];
    let mut q = VecDeque::new();
    for &f in from {
        if d[f] != 0 {
            d[f] = 0;
            q.push_back(f);
        }
    }
    while let Some(u) = q.pop_front() {
        for &(_, v) in &adj[u] {
            if d[v] == u32::MAX {
                d[v] = d[u] + 1;
                q.push_back(v);
            }
        }
    }
    d
}

/// One LID to route: (LID, target switch position, egress port at the
/// target: 0 for a switch's own LID, is a CA LID, place of the LID in
/// its port's range: 0 for the base LID).
type Dest = (u16, usize, u8, bool, u8);

/// The destinations, every LID of every port's range.
fn destinations(subnet: &Subnet, g: &SwitchGraph) -> Vec<Dest> {
    let mut pos = vec![usize::MAX; subnet.nodes().len()];
    for (k, &i) in g.switches.iter().enumerate() {
        pos[i] = k;
    }
    subnet
        .all_lids()
        .into_iter()
        .filter_map(|(lid, (node, port))| {
            let base = subnet.nodes()[node].port(port).map_or(lid, |p| p.lid);
            let offset = u8::try_from(lid.saturating_sub(base)).unwrap_or(0);
            if pos[node] != usize::MAX {
                return Some((lid, pos[node], 0, false, offset));
            }
            let (r, rp) = subnet.remote((node, port))?;
            (pos[r] != usize::MAX).then(|| (lid, pos[r], rp, true, offset))
        })
        .collect()
}

/// The up/down tables for the order `key` (a link goes up toward the
/// smaller key; keys are distinct), destinations in `order`.
fn updown(
    subnet: &Subnet,
    g: &SwitchGraph,
    key: &[(u32, u64)],
    dests: &[Dest],
) -> Result<Vec<(NodeIdx, Vec<u8>)>, String> {
    let n = g.switches.len();
    let size = usize::from(subnet.max_lid()) + 1;
    let mut lfts = vec![vec![NO_ROUTE; size]; n];
    // Switches by increasing key: a switch's up neighbours come first.
    let mut by_key: Vec<usize> = (0..n).collect();
    by_key.sort_by_key(|&s| key[s]);
    let up = |s: usize, t: usize| key[t] < key[s];
    // Per port: CA LIDs routed out of it, and (source CA, CA LID) pairs
    // whose route leaves by it.
    let mut load: Vec<Vec<u32>> = g.adj.iter().map(|a| vec![0; a.len()]).collect();
    let mut pairs: Vec<Vec<u64>> = g.adj.iter().map(|a| vec![0; a.len()]).collect();
    // Source CAs on each switch.
    let mut cas = vec![0u64; n];
    for &(_, t, _, is_ca, offset) in dests {
        cas[t] += u64::from(is_ca && offset == 0);
    }
    // Per target switch: down-only distance, up/down distance, and the
    // order the switches choose in: those going up deepest first, then
    // those going down from the top, so that a switch chooses once every
    // switch that may send it traffic for the target has.
    let mut cache_for = usize::MAX;
    let mut down = vec![u32::MAX; n];
    let mut any = vec![u32::MAX; n];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut cand: Vec<usize> = Vec::new();
    let mut cand_at: Vec<usize> = Vec::with_capacity(n + 1);
    // Sources whose route toward the current LID reaches each switch.
    let mut inflow = vec![0u64; n];
    // Per switch, the neighbours (positions) the earlier LIDs of the
    // current LID range went to: a range's other LIDs go elsewhere where
    // a candidate allows (as OpenSM's engines avoid the remote switch an
    // earlier LID of the port took), so that they take distinct paths.
    let spread = dests.iter().any(|d| d.4 != 0);
    let mut used: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut dirty: Vec<usize> = Vec::new();
    for &(lid, t, egress, is_ca, offset) in dests {
        if offset == 0 {
            for s in dirty.drain(..) {
                used[s].clear();
            }
        }
        let li = usize::from(lid);
        lfts[t][li] = egress;
        if cache_for != t {
            cache_for = t;
            down.fill(u32::MAX);
            down[t] = 0;
            let mut q = VecDeque::from([t]);
            while let Some(v) = q.pop_front() {
                for &(_, u) in &g.adj[v] {
                    // u reaches v going down: v is below u.
                    if down[u] == u32::MAX && up(v, u) {
                        down[u] = down[v] + 1;
                        q.push_back(u);
                    }
                }
            }
            for &s in &by_key {
                any[s] = if down[s] != u32::MAX {
                    down[s]
                } else {
                    g.adj[s]
                        .iter()
                        .filter(|&&(_, u)| up(s, u))
                        .map(|&(_, u)| any[u].saturating_add(1))
                        .min()
                        .unwrap_or(u32::MAX)
                };
            }
            order.clear();
            order.extend(by_key.iter().rev().filter(|&&s| down[s] == u32::MAX));
            order.extend(by_key.iter().filter(|&&s| down[s] != u32::MAX));
            // The candidate ports (neighbour indices) of every switch
            // toward this target: the same for each of its LIDs.
            cand.clear();
            cand_at.clear();
            for s in 0..n {
                cand_at.push(cand.len());
                let goes_down = down[s] != u32::MAX;
                let want = if goes_down { down[s] } else { any[s] };
                if s == t || want == u32::MAX {
                    continue;
                }
                for (k, &(_, u)) in g.adj[s].iter().enumerate() {
                    let ok = if goes_down {
                        !up(s, u) && down[u].saturating_add(1) == want
                    } else {
                        up(s, u) && any[u].saturating_add(1) == want
                    };
                    if ok {
                        cand.push(k);
                    }
                }
            }
            cand_at.push(cand.len());
        }
        inflow.copy_from_slice(&cas);
        let mut plain: Option<Vec<u32>> = None;
        for &s in &order {
            if s == t {
                continue;
            }
            let mine = &cand[cand_at[s]..cand_at[s + 1]];
            if mine.is_empty() && !is_ca {
                // A switch's own LID (management traffic, on VL15 or to
                // the switch's port 0: no CA route depends on it) that
                // up/down cannot reach, as one root from another: the
                // shortest path.
                let d = plain.get_or_insert_with(|| bfs(&g.adj, &[t]));
                if let Some(&(port, _)) = g.adj[s]
                    .iter()
                    .find(|&&(_, u)| d[u].saturating_add(1) == d[s])
                {
                    lfts[s][li] = port;
                }
                continue;
            }
            let best = mine.iter().copied().min_by_key(|&k| {
                let (port, next) = g.adj[s][k];
                let taken = used[s].contains(&next);
                // A LID no source sends through here: the fewest LIDs,
                // then the most pairs (the port with the fewest takes the
                // next LID that carries traffic, whatever its LIDs: a
                // free LID there would leave it one over at the end).
                if inflow[s] == 0 {
                    (taken, u64::from(load[s][k]), u64::MAX - pairs[s][k], port)
                } else {
                    (taken, pairs[s][k], u64::from(load[s][k]), port)
                }
            });
            let Some(k) = best else {
                return Err(format!(
                    "switch {:#018x} has no up/down route to LID {lid}",
                    subnet.nodes()[g.switches[s]].guid()
                ));
            };
            let (port, next) = g.adj[s][k];
            lfts[s][li] = port;
            if spread {
                if used[s].is_empty() {
                    dirty.push(s);
                }
                used[s].push(next);
            }
            if is_ca {
                load[s][k] += 1;
                pairs[s][k] += inflow[s];
                inflow[next] += inflow[s];
            }
        }
    }
    Ok(g.switches.iter().copied().zip(lfts).collect())
}

/// OpenSM's automatic root detection for `updn` (see the module docs),
/// keeping of the switches it finds those whose dominant hop count is
/// the smallest: on a 3-level fat tree of many pods OpenSM's rule also
/// takes the aggregation switches (their own pod's CAs are under 5 %),
/// and roots on two levels leave some pairs without an up/down route.
fn roots_by_min_hop(g: &SwitchGraph, cas_per_switch: &[u32]) -> Vec<usize> {
    let total: u32 = cas_per_switch.iter().sum();
    let (thd1, thd2) = (f64::from(total) * 0.9, f64::from(total) * 0.05);
    let found: Vec<(usize, usize)> = (0..g.switches.len())
        .filter_map(|s| {
            let d = bfs(&g.adj, &[s]);
            let mut hist: Vec<u32> = Vec::new();
            for (t, &c) in cas_per_switch.iter().enumerate() {
                if c > 0 && d[t] != u32::MAX {
                    let h = d[t] as usize;
                    if hist.len() <= h {
                        hist.resize(h + 1, 0);
                    }
                    hist[h] += c;
                }
            }
            let over1: Vec<usize> = (0..hist.len())
                .filter(|&h| f64::from(hist[h]) > thd1)
                .collect();
            let over2 = hist.iter().filter(|&&h| f64::from(h) > thd2).count();
            (over1.len() == 1 && over2 == 1).then(|| (s, over1[0]))
        })
        .collect();
    let nearest = found.iter().map(|&(_, h)| h).min().unwrap_or(0);
    found
        .into_iter()
        .filter(|&(_, h)| h == nearest)
        .map(|(s, _)| s)
        .collect()
}

/// CAs (LID-bearing CA ports) on each switch.
fn cas_per_switch(subnet: &Subnet, g: &SwitchGraph) -> Vec<u32> {
    let mut c = vec![0u32; g.switches.len()];
    for &(_, t, _, is_ca, offset) in &destinations(subnet, g) {
        if is_ca && offset == 0 {
            c[t] += 1;
        }
    }
    c
}

/// The `updn` engine's tables.
fn updn_tables(
    subnet: &Subnet,
    root_guids: &[u64],
    notes: &mut Vec<String>,
) -> Result<Vec<(NodeIdx, Vec<u8>)>, String> {
    let g = SwitchGraph::of(subnet);
    if g.switches.is_empty() {
        return Err("no switch".into());
    }
    let guid = |s: usize| subnet.nodes()[g.switches[s]].guid();
    let mut roots: Vec<usize> = Vec::new();
    if !root_guids.is_empty() {
        for &r in root_guids {
            match (0..g.switches.len()).find(|&s| guid(s) == r) {
                Some(s) => roots.push(s),
                None => notes.push(format!(
                    "updn: root GUID {r:#018x} is no switch of the fabric"
                )),
            }
        }
    }
    if roots.is_empty() {
        roots = roots_by_min_hop(&g, &cas_per_switch(subnet, &g));
    }
    if roots.is_empty() {
        // The most central switch: smallest eccentricity, then smallest
        // sum of distances, then lowest GUID.
        let best = (0..g.switches.len())
            .min_by_key(|&s| {
                let d = bfs(&g.adj, &[s]);
                let ecc = d.iter().copied().max().unwrap_or(0);
                let sum: u64 = d.iter().map(|&x| u64::from(x)).sum();
                (ecc, sum, guid(s))
            })
            .unwrap_or(0);
        notes.push(format!(
            "updn: no root switch found by OpenSM's rule; using the most central switch {:#018x} ({}) as the root",
            guid(best),
            subnet.nodes()[g.switches[best]].desc
        ));
        roots.push(best);
    } else {
        let list: Vec<String> = roots
            .iter()
            .map(|&s| format!("{:#018x}", guid(s)))
            .collect();
        notes.push(format!("updn: roots {}", list.join(", ")));
    }
    let rank = bfs(&g.adj, &roots);
    let key: Vec<(u32, u64)> = (0..g.switches.len()).map(|s| (rank[s], guid(s))).collect();
    updown(subnet, &g, &key, &destinations(subnet, &g))
}

/// The `ftree` engine's tables, or why the fabric is no fat tree.
fn ftree_tables(subnet: &Subnet) -> Result<Vec<(NodeIdx, Vec<u8>)>, String> {
    let g = SwitchGraph::of(subnet);
    let n = g.switches.len();
    let guid = |s: usize| subnet.nodes()[g.switches[s]].guid();
    let cas = cas_per_switch(subnet, &g);
    let leaves: Vec<usize> = (0..n).filter(|&s| cas[s] > 0).collect();
    if leaves.is_empty() {
        return Err("not a fat tree: no switch has CAs".into());
    }
    let height = bfs(&g.adj, &leaves);
    if let Some(s) = (0..n).find(|&s| height[s] == u32::MAX) {
        return Err(format!(
            "not a fat tree: switch {:#018x} is not connected to the leaves",
            guid(s)
        ));
    }
    let top = height.iter().copied().max().unwrap_or(0);
    if top == 0 {
        return Err("not a fat tree: every switch is a leaf (has CAs)".into());
    }
    for s in 0..n {
        for &(port, u) in &g.adj[s] {
            if height[s].abs_diff(height[u]) != 1 {
                return Err(format!(
                    "not a fat tree: switch {:#018x} port {port} links two switches of the same rank{}",
                    guid(s),
                    if height[s] == 0 { " (leaves)" } else { "" }
                ));
            }
        }
    }
    let tops: Vec<usize> = (0..n).filter(|&s| height[s] == top).collect();
    let from_top = bfs(&g.adj, &tops);
    if let Some(&l) = leaves.iter().find(|&&l| from_top[l] != top) {
        return Err(format!(
            "not a fat tree: leaf {:#018x} is {} hops from the top rank, not {top}",
            guid(l),
            from_top[l]
        ));
    }
    // Up and down link counts per rank.
    let mut shape: Vec<Option<(usize, usize)>> = vec![None; top as usize + 1];
    for s in 0..n {
        let ups = g.adj[s]
            .iter()
            .filter(|&&(_, u)| height[u] > height[s])
            .count();
        let downs = g.adj[s].len() - ups;
        let h = height[s] as usize;
        match shape[h] {
            None => shape[h] = Some((ups, downs)),
            Some(want) if want != (ups, downs) => {
                return Err(format!(
                    "not a fat tree: switch {:#018x} of rank {} has {ups} up and {downs} down links, another of its rank {} and {}",
                    guid(s),
                    top - height[s],
                    want.0,
                    want.1
                ));
            }
            Some(_) => {}
        }
    }
    let key: Vec<(u32, u64)> = (0..n).map(|s| (top - height[s], guid(s))).collect();
    // Destinations leaf by leaf (leaves in GUID order), each leaf's CA
    // ports in port order, then the switches' own LIDs.
    let mut dests = destinations(subnet, &g);
    dests.sort_by_key(|&(lid, t, egress, is_ca, _)| (!is_ca, guid(t), egress, lid));
    updown(subnet, &g, &key, &dests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists_parse_as_opensm_names_them() {
        assert_eq!(
            Engine::parse_list("ftree,updn").unwrap_or_default(),
            vec![Engine::FatTree, Engine::UpDown]
        );
        assert_eq!(
            Engine::parse_list(" minhop ").unwrap_or_default(),
            vec![Engine::MinHop]
        );
        let e = Engine::parse_list("ftree,lash").unwrap_err();
        assert!(e.contains("'lash'"), "{e}");
        assert!(Engine::parse_list("").is_err());
    }

    #[test]
    fn guid_files_parse_and_name_a_bad_line() {
        assert_eq!(
            parse_guid_file("# roots\n0x0002c90000000001\n\n2c90000000002  # spine\n"),
            Ok(vec![0x0002_c900_0000_0001, 0x0002_c900_0000_0002])
        );
        let e = parse_guid_file("0x1\nspine-1\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("spine-1"), "{e}");
        assert!(parse_guid_file("0x\n").is_err());
    }
}
