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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use mad_core::hash::FastMap;

use super::subnet::{NodeIdx, PortRef, Subnet};
use crate::lft::{BlockInterner, Lft};

/// Highest unicast LID (0xC000 and up are multicast).
pub const MAX_UNICAST_LID: u16 = 0xBFFF;
/// "No route" in a linear forwarding table.
pub const NO_ROUTE: u8 = 0xFF;

/// Persistent port GUID → LID bookkeeping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LidBook {
    by_guid: FastMap<u64, u16>,
    owner: FastMap<u16, u64>,
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

/// Switch indices, each switch's (port, neighbour position) list in
/// port order, and the hop distances.
type SwitchGraph = (Vec<NodeIdx>, Vec<Vec<(u8, usize)>>, Distances);

/// Shortest switch-hop distances between switches (positions in the
/// switch list), `u16::MAX` when unreachable. Links are both ways, so the
/// matrix is symmetric and a switch's row is its distance to every other.
struct Distances {
    n: usize,
    d: Vec<u16>,
}

impl Distances {
    /// Distances from switch `u` to every switch.
    fn row(&self, u: usize) -> &[u16] {
        &self.d[u * self.n..(u + 1) * self.n]
    }
}

/// The switch graph of `subnet` over switch-to-switch links, with one
/// breadth-first search per switch for the distances.
fn switch_graph(subnet: &Subnet) -> SwitchGraph {
    let switches: Vec<NodeIdx> = subnet
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
        .map(|(i, _)| i)
        .collect();
    let mut pos: FastMap<NodeIdx, usize> = FastMap::default();
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
    let n = switches.len();
    let mut d = vec![u16::MAX; n * n];
    let mut q = VecDeque::new();
    for (t, row) in d.chunks_exact_mut(n.max(1)).enumerate().take(n) {
        row[t] = 0;
        q.clear();
        q.push_back(t);
        while let Some(u) = q.pop_front() {
            let next = row[u].saturating_add(1);
            for &(_, v) in &adj[u] {
                if row[v] == u16::MAX {
                    row[v] = next;
                    q.push_back(v);
                }
            }
        }
    }
    (switches, adj, Distances { n, d })
}

/// For one switch, the egress ports on a shortest path toward every
/// switch: per target switch, a bit set over the switch's neighbour list
/// (which is in port order, so the lowest set bit is the lowest port).
struct Candidates {
    words: usize,
    bits: Vec<u64>,
}

impl Candidates {
    fn new(words: usize, targets: usize) -> Self {
        Self {
            words,
            bits: vec![0; words * targets],
        }
    }

    /// Fills the sets of switch `s` (neighbours `adj`, distances `dist`).
    fn fill(&mut self, s: usize, adj: &[(u8, usize)], dist: &Distances) {
        self.words = adj.len().div_ceil(64).max(1);
        self.bits.clear();
        self.bits.resize(self.words * dist.n, 0);
        let here = dist.row(s);
        for (k, &(_, nb)) in adj.iter().enumerate() {
            let (word, shift) = (k / 64, k % 64);
            let there = dist.row(nb);
            let words = self.bits.chunks_exact_mut(self.words).map(|w| &mut w[word]);
            for ((w, &h), &d) in words.zip(here).zip(there) {
                *w |= u64::from(h != u16::MAX && d.saturating_add(1) == h) << shift;
            }
        }
    }

    /// Number of target switches.
    fn targets(&self) -> usize {
        self.bits.len() / self.words
    }

    /// The bit set of switch `t`.
    fn bits_of(&self, t: usize) -> &[u64] {
        &self.bits[t * self.words..(t + 1) * self.words]
    }

    /// Neighbour indices on a shortest path toward switch `t`, ascending.
    fn of(&self, t: usize) -> impl Iterator<Item = usize> + '_ {
        self.bits_of(t).iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                if b == 0 {
                    return None;
                }
                let k = b.trailing_zeros() as usize;
                b &= b - 1;
                Some(w * 64 + k)
            })
        })
    }
}

/// Candidates of one set by (load, neighbour index), least first.
type LoadHeap = BinaryHeap<Reverse<(u32, usize)>>;

/// Chooses, for one switch, the least-loaded shortest-path port toward a
/// target switch (lowest port on a tie), loads counted in CA LIDs routed
/// through each port so far.
///
/// Target switches with the same candidate set share one min-heap of
/// (load, neighbour) entries, one entry per candidate. Loads only grow,
/// so an entry's load is at most the candidate's real load: the top
/// entry, once it is found current, is the real minimum; a stale top is
/// pushed back with its real load. A fat tree's leaf so picks among its
/// uplinks in logarithmic time instead of scanning them for every LID.
///
/// A set that counts loads (some of its targets have CA LIDs) and shares
/// no neighbour with another such set is *private*: only its own picks
/// change its candidates' loads, which all start at 0, so the least
/// loaded (lowest on a tie) is simply the next in port order, round
/// robin. Picks from a private set take no heap (a fat tree's uplink
/// sets are private).
#[derive(Default)]
struct Picker {
    /// Load by neighbour index.
    load: Vec<u32>,
    /// Candidate-set number of each target switch.
    group_of: Vec<usize>,
    /// Candidate-set number by the set's bits.
    groups: FastMap<Vec<u64>, usize>,
    /// One heap per candidate set, built on first use.
    heaps: Vec<Option<LoadHeap>>,
    /// Per set: private (round robin), with its candidates in order and
    /// the position of the next one, built on first use.
    rr: Vec<Option<(Vec<usize>, usize)>>,
    /// Per set: private.
    private: Vec<bool>,
}

impl Picker {
    /// Starts a switch with `neighbours` neighbours, nothing routed yet;
    /// `has_ca[t]`: target switch `t` has CA LIDs (picks toward it
    /// count).
    fn reset(&mut self, cands: &Candidates, neighbours: usize, has_ca: &[bool]) {
        self.load.clear();
        self.load.resize(neighbours, 0);
        self.groups.clear();
        self.heaps.clear();
        self.group_of.clear();
        self.rr.clear();
        self.private.clear();
        let mut counting: Vec<bool> = Vec::new();
        for t in 0..cands.targets() {
            let bits = cands.bits_of(t);
            let g = match self.groups.get(bits) {
                Some(&g) => g,
                None => {
                    let g = self.groups.len();
                    self.groups.insert(bits.to_vec(), g);
                    self.heaps.push(None);
                    self.rr.push(None);
                    counting.push(false);
                    g
                }
            };
            self.group_of.push(g);
            if has_ca.get(t).copied().unwrap_or(true) {
                counting[g] = true;
            }
        }
        // How many counting sets hold each neighbour.
        let mut holders = vec![0u32; neighbours];
        let mut private = vec![false; self.groups.len()];
        for (bits, &g) in &self.groups {
            if counting[g] {
                for_each_bit(bits, |k| holders[k] += 1);
            }
        }
        for (bits, &g) in &self.groups {
            if counting[g] {
                let mut alone = true;
                for_each_bit(bits, |k| alone &= holders[k] == 1);
                private[g] = alone;
            }
        }
        self.private = private;
    }

    /// The neighbour index to route toward switch `t` by, if any; a CA
    /// LID (`counts`) adds one to its load.
    fn least_loaded(&mut self, cands: &Candidates, t: usize, counts: bool) -> Option<usize> {
        let g = *self.group_of.get(t)?;
        if self.private[g] {
            let (order, next) = self.rr[g].get_or_insert_with(|| (cands.of(t).collect(), 0));
            let k = *order.get(*next)?;
            if counts {
                self.load[k] += 1;
                *next = (*next + 1) % order.len();
            }
            return Some(k);
        }
        let load = &mut self.load;
        let heap = self.heaps[g]
            .get_or_insert_with(|| cands.of(t).map(|k| Reverse((load[k], k))).collect());
        loop {
            let mut top = heap.peek_mut()?;
            let Reverse((l, k)) = *top;
            if l != load[k] {
                // Stale: put its real load in (sifted down on drop).
                *top = Reverse((load[k], k));
                continue;
            }
            if counts {
                load[k] += 1;
                *top = Reverse((load[k], k));
            }
            return Some(k);
        }
    }
}

/// Calls `f` with the index of every set bit of `bits`.
fn for_each_bit(bits: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut b = word;
        while b != 0 {
            f(w * 64 + b.trailing_zeros() as usize);
            b &= b - 1;
        }
    }
}

/// Computes every switch's linear forwarding table by min-hop (see the
/// module docs) and stores it in the switch's `lft`: `max_lid + 1`
/// entries, [`NO_ROUTE`] where there is none, equal blocks shared
/// between switches. Call after
/// [`assign_lids`].
///
/// Cost: one breadth-first search per switch (switches × links), the
/// shortest-path ports of each switch toward each switch (switches² ×
/// neighbours, as bit sets), then per switch and LID the least-loaded of
/// those ports (constant time from a set no other counting set shares,
/// such as a fat tree's uplinks; else logarithmic in their number).
pub fn compute_lfts(subnet: &mut Subnet) {
    let (switches, adj, dist) = switch_graph(subnet);
    let pos: FastMap<NodeIdx, usize> = switches.iter().enumerate().map(|(k, i)| (*i, k)).collect();
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
    let mut has_ca = vec![false; switches.len()];
    for t in targets.iter().filter(|t| t.is_ca) {
        has_ca[t.sw] = true;
    }
    let size = usize::from(subnet.max_lid()) + 1;
    let mut cands = Candidates::new(1, 0);
    let mut pick = Picker::default();
    let mut blocks = BlockInterner::default();
    let mut lft = Vec::with_capacity(size);
    for (s, &node) in switches.iter().enumerate() {
        cands.fill(s, &adj[s], &dist);
        pick.reset(&cands, adj[s].len(), &has_ca);
        lft.clear();
        lft.resize(size, NO_ROUTE);
        for t in &targets {
            let lid = usize::from(t.lid);
            if t.sw == s {
                lft[lid] = t.egress;
                continue;
            }
            if let Some(k) = pick.least_loaded(&cands, t.sw, t.is_ca) {
                lft[lid] = adj[s][k].0;
            }
        }
        if let Some(n) = subnet.node_mut(node) {
            n.lft = Lft::from_entries(&lft, &mut blocks);
        }
    }
}
