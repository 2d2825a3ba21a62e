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
//! - With LMC > 0 every LID of a CA port's range is a destination of its
//!   own, and a switch sends the LIDs of one range after the first
//!   toward a neighbour switch none of the range's earlier LIDs took,
//!   where its candidates have one (OpenSM's engines likewise avoid the
//!   remote node an earlier LID of the port went to): the LIDs of one
//!   port take distinct paths through a fat tree.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mad_core::hash::FastMap;

use super::subnet::{NodeIdx, PortRef, Subnet};
use crate::lft::{BlockInterner, Lft};

pub mod check;
pub mod engines;
mod stream;
pub use stream::BACKGROUND_ENTRIES;
pub(crate) use stream::{table_entries, RouteStream};

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

    /// Records `lid` for `guid` ahead of any sweep (a guid2lid entry),
    /// so that [`assign_lids`] gives it that LID and nobody else. False,
    /// and nothing recorded, when `lid` is not unicast or is taken, or
    /// `guid` is 0 or has a LID already.
    pub fn reserve(&mut self, guid: u64, lid: u16) -> bool {
        if guid == 0
            || lid == 0
            || lid > MAX_UNICAST_LID
            || self.owner.contains_key(&lid)
            || self.by_guid.contains_key(&guid)
        {
            return false;
        }
        self.claim(guid, lid);
        true
    }

    fn claim(&mut self, guid: u64, lid: u16) {
        self.claim_range(guid, lid, 1);
    }

    /// Records `base .. base + count` for `guid` (the book's LID of
    /// `guid` is `base`).
    fn claim_range(&mut self, guid: u64, base: u16, count: u32) {
        self.by_guid.insert(guid, base);
        for l in u32::from(base)..u32::from(base) + count {
            if let Ok(l) = u16::try_from(l) {
                self.owner.insert(l, guid);
            }
        }
    }

    /// Forgets every LID of `guid`.
    fn release(&mut self, guid: u64) {
        if self.by_guid.remove(&guid).is_some() {
            self.owner.retain(|_, g| *g != guid);
        }
    }

    /// True when `base .. base + count` is a unicast range aligned to
    /// `count` whose LIDs are free or `guid`'s already.
    fn fits(&self, guid: u64, base: u16, count: u32) -> bool {
        let b = u32::from(base);
        b >= 1
            && b % count == 0
            && b + count - 1 <= u32::from(MAX_UNICAST_LID)
            && (b..b + count).all(|l| {
                u16::try_from(l)
                    .ok()
                    .and_then(|l| self.owner.get(&l))
                    .is_none_or(|g| *g == guid)
            })
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

/// Gives every LID-bearing port of `subnet` its LIDs and records them in
/// the ports' `lid` / `lmc` and the subnet's `max_lid`: a CA port gets
/// the aligned range of 2^`lmc` LIDs (`lmc` up to 7), a switch's port 0
/// one LID (LMC 0, as OpenSM without `lmc_esp0`). A port keeps the LID
/// `book` has for its GUID when its range is still free and aligned;
/// otherwise, with `honor_existing`, the LID it already has when that
/// range is valid and nobody else holds it; otherwise the lowest free
/// range from `first_lid` up.
///
/// # Errors
/// The number of ports left without LIDs when the unicast LID space
/// (up to 0xBFFF) runs out; the others are assigned.
pub fn assign_lids(
    subnet: &mut Subnet,
    book: &mut LidBook,
    first_lid: u16,
    honor_existing: bool,
    lmc: u8,
) -> Result<(), usize> {
    let lmc = lmc.min(crate::MAX_LMC);
    let ports = lid_ports(subnet);
    let count_of = |(node, _): PortRef| -> u32 {
        if subnet.nodes()[node].is_switch() {
            1
        } else {
            1 << lmc
        }
    };
    let counts: Vec<u32> = ports.iter().map(|(r, _, _)| count_of(*r)).collect();
    let mut chosen: Vec<Option<u16>> = Vec::with_capacity(ports.len());
    // Pass 1: what the book knows, when its range still fits (an LMC
    // changed, a guid2lid LID not aligned: the port is given a new one).
    for (k, (_, guid, _)) in ports.iter().enumerate() {
        let c = match book.lid(*guid) {
            Some(l) if book.fits(*guid, l, counts[k]) => {
                book.claim_range(*guid, l, counts[k]);
                Some(l)
            }
            Some(_) => {
                book.release(*guid);
                None
            }
            None => None,
        };
        chosen.push(c);
    }
    // Pass 2: honour LIDs already configured in the ports.
    if honor_existing {
        for (k, (_, guid, cur)) in ports.iter().enumerate() {
            if chosen[k].is_some() {
                continue;
            }
            let mine = book.lid(*guid).is_none();
            if mine && *cur <= MAX_UNICAST_LID && book.fits(*guid, *cur, counts[k]) {
                book.claim_range(*guid, *cur, counts[k]);
                chosen[k] = Some(*cur);
            }
        }
    }
    // Pass 3: the lowest free ranges for the rest (switches' single
    // LIDs and the CAs' aligned ranges each from their own cursor).
    let first = u32::from(first_lid.max(1));
    let mut next = [first, first];
    let mut unassigned = 0usize;
    for (k, (_, guid, _)) in ports.iter().enumerate() {
        if chosen[k].is_some() {
            continue;
        }
        let count = counts[k];
        let cur = &mut next[usize::from(count > 1)];
        *cur = cur.div_ceil(count) * count;
        let found = loop {
            let Ok(base) = u16::try_from(*cur) else {
                break None;
            };
            if *cur + count - 1 > u32::from(MAX_UNICAST_LID) {
                break None;
            }
            if book.fits(*guid, base, count) {
                break Some(base);
            }
            *cur += count;
        };
        match found {
            Some(base) => {
                book.claim_range(*guid, base, count);
                chosen[k] = Some(base);
            }
            None => unassigned += 1,
        }
    }
    let mut max_lid = 0;
    for (k, ((node, port), _, _)) in ports.iter().enumerate() {
        let lid = chosen[k].unwrap_or(0);
        let port_lmc = if counts[k] > 1 { lmc } else { 0 };
        if lid != 0 {
            let last = u32::from(lid) + counts[k] - 1;
            max_lid = max_lid.max(u16::try_from(last).unwrap_or(MAX_UNICAST_LID));
        }
        if let Some(p) = subnet
            .node_mut(*node)
            .and_then(|n| n.ports.get_mut(usize::from(*port)))
            .and_then(Option::as_mut)
        {
            p.lid = lid;
            p.lmc = if lid == 0 { 0 } else { port_lmc };
        }
    }
    subnet.set_max_lid(max_lid);
    if unassigned == 0 {
        Ok(())
    } else {
        Err(unassigned)
    }
}

/// A switch-hop distance; [`FAR`] when unreachable. A byte is enough:
/// SM-lite reaches every switch by a directed route of at most 63 hops,
/// so two switches of one swept fabric are at most 126 hops apart.
type Hops = u8;

/// "Unreachable" in [`Distances`].
const FAR: Hops = Hops::MAX;

/// Shortest switch-hop distances between switches (positions in the
/// switch list). Links are both ways, so the matrix is symmetric and a
/// switch's row is its distance to every other.
struct Distances {
    n: usize,
    d: Vec<Hops>,
}

impl Distances {
    /// Distances from switch `u` to every switch.
    fn row(&self, u: usize) -> &[Hops] {
        &self.d[u * self.n..(u + 1) * self.n]
    }
}

/// The switches and the links between them: per switch its
/// (port, neighbour position) list in port order.
struct SwitchGraph {
    switches: Vec<NodeIdx>,
    adj: Vec<Vec<(u8, usize)>>,
}

impl SwitchGraph {
    fn of(subnet: &Subnet) -> Self {
        let switches: Vec<NodeIdx> = subnet
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_switch())
            .map(|(i, _)| i)
            .collect();
        let pos: FastMap<NodeIdx, usize> =
            switches.iter().enumerate().map(|(k, i)| (*i, k)).collect();
        let adj = switches
            .iter()
            .map(|&i| {
                (1..=subnet.nodes()[i].info.num_ports)
                    .filter_map(|port| {
                        let (r, _) = subnet.remote((i, port))?;
                        Some((port, *pos.get(&r)?))
                    })
                    .collect()
            })
            .collect();
        Self { switches, adj }
    }

    /// Breadth-first searches from every switch, 64 at a time (one bit
    /// per search in a word per switch: a level of 64 searches is one
    /// pass over the links), the blocks of 64 shared among `workers`
    /// threads.
    fn distances(&self, workers: usize) -> Distances {
        let n = self.switches.len();
        // Neighbours as one flat list (offsets per switch).
        let mut start = Vec::with_capacity(n + 1);
        let mut flat: Vec<u32> = Vec::new();
        for a in &self.adj {
            start.push(flat.len());
            flat.extend(a.iter().map(|&(_, v)| v as u32));
        }
        start.push(flat.len());
        // Rows `first..first + 64` (a part of the matrix): the searches
        // from those switches.
        let search = |first: usize, part: &mut [Hops]| {
            let mut seen = vec![0u64; n];
            let mut front = vec![0u64; n];
            let mut next = vec![0u64; n];
            for (j, row) in part.chunks_exact_mut(n).enumerate() {
                seen[first + j] |= 1 << j;
                front[first + j] |= 1 << j;
                row[first + j] = 0;
            }
            let mut level: Hops = 0;
            while level < FAR - 1 && front.iter().any(|&f| f != 0) {
                level += 1;
                for (v, out) in next.iter_mut().enumerate() {
                    let reach = flat[start[v]..start[v + 1]]
                        .iter()
                        .fold(0u64, |acc, &u| acc | front[u as usize]);
                    let new = reach & !seen[v];
                    seen[v] |= new;
                    *out = new;
                    let mut b = new;
                    while b != 0 {
                        let j = b.trailing_zeros() as usize;
                        part[j * n + v] = level;
                        b &= b - 1;
                    }
                }
                std::mem::swap(&mut front, &mut next);
            }
        };
        let mut d = vec![FAR; n * n];
        if n > 0 {
            // Each part is searched by whoever takes it first: a routing
            // thread, or this one (which also covers a thread that could
            // not be started).
            let parts: Vec<Mutex<Option<&mut [Hops]>>> =
                d.chunks_mut(64 * n).map(|p| Mutex::new(Some(p))).collect();
            let take = |w: usize| parts.get(w)?.lock().ok()?.take();
            let claimed = AtomicUsize::new(0);
            let work = || loop {
                let w = claimed.fetch_add(1, Ordering::Relaxed);
                if w >= parts.len() {
                    return;
                }
                if let Some(part) = take(w) {
                    search(w * 64, part);
                }
            };
            std::thread::scope(|sc| {
                for _ in 1..workers.min(parts.len()) {
                    let _ = std::thread::Builder::new().spawn_scoped(sc, work);
                }
                work();
            });
        }
        Distances { n, d }
    }
}

/// For one switch, the egress ports on a shortest path toward every
/// switch: per target switch, a bit set over the switch's neighbour list
/// (which is in port order, so the lowest set bit is the lowest port).
struct Candidates {
    words: usize,
    bits: Vec<u64>,
    /// Scratch: one byte per target switch.
    lane: Vec<u8>,
}

impl Candidates {
    fn new() -> Self {
        Self {
            words: 1,
            bits: Vec::new(),
            lane: Vec::new(),
        }
    }

    /// Fills the sets of switch `s` (neighbours `adj`, distances `dist`).
    fn fill(&mut self, s: usize, adj: &[(u8, usize)], dist: &Distances) {
        self.words = adj.len().div_ceil(64).max(1);
        self.bits.clear();
        self.bits.resize(self.words * dist.n, 0);
        self.lane.resize(dist.n, 0);
        let here = dist.row(s);
        // Eight neighbours at a time into one byte per target (a loop
        // over bytes the compiler turns into vector code), then that
        // byte into the target's bit set.
        for (g, group) in adj.chunks(8).enumerate() {
            self.lane.fill(0);
            for (j, &(_, nb)) in group.iter().enumerate() {
                let there = dist.row(nb);
                for ((b, &h), &d) in self.lane.iter_mut().zip(here).zip(there) {
                    *b |= u8::from((h != FAR) & (d.wrapping_add(1) == h)) << j;
                }
            }
            let (word, shift) = (g * 8 / 64, g * 8 % 64);
            let words = self.bits.chunks_exact_mut(self.words);
            for (w, &b) in words.zip(&self.lane) {
                w[word] |= u64::from(b) << shift;
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
}

/// Candidates of one set by (load, neighbour index), least first.
type LoadHeap = BinaryHeap<Reverse<(u32, usize)>>;

/// How the port toward the switches of one candidate set is picked.
enum Pick {
    /// No shortest path (unreachable).
    None,
    /// A private set, served round robin: its candidates in order and
    /// the position of the next.
    RoundRobin(Vec<usize>, usize),
    /// A shared set: its candidates, and their heap once used.
    Heap(Vec<usize>, Option<LoadHeap>),
}

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
    group_of: Vec<u32>,
    /// Per candidate set.
    picks: Vec<Pick>,
}

impl Picker {
    /// Starts a switch with `neighbours` neighbours, nothing routed yet;
    /// `has_ca[t]`: target switch `t` has CA LIDs (picks toward it
    /// count).
    fn reset(&mut self, cands: &Candidates, neighbours: usize, has_ca: &[bool]) {
        self.load.clear();
        self.load.resize(neighbours, 0);
        self.group_of.clear();
        let mut groups: FastMap<&[u64], u32> = FastMap::default();
        let mut sets: Vec<&[u64]> = Vec::new();
        let mut counting: Vec<bool> = Vec::new();
        // Neighbouring targets mostly share their set: try the last one
        // before hashing.
        let mut last: Option<(&[u64], u32)> = None;
        for t in 0..cands.targets() {
            let bits = cands.bits_of(t);
            let g = match last {
                Some((b, g)) if b == bits => g,
                _ => *groups.entry(bits).or_insert_with(|| {
                    sets.push(bits);
                    counting.push(false);
                    (sets.len() - 1) as u32
                }),
            };
            last = Some((bits, g));
            self.group_of.push(g);
            if has_ca.get(t).copied().unwrap_or(true) {
                counting[g as usize] = true;
            }
        }
        // How many counting sets hold each neighbour.
        let mut holders = vec![0u32; neighbours];
        for (bits, _) in sets.iter().zip(&counting).filter(|(_, c)| **c) {
            for_each_bit(bits, |k| holders[k] += 1);
        }
        self.picks.clear();
        for (bits, &counts) in sets.iter().zip(&counting) {
            let mut members = Vec::new();
            let mut alone = true;
            for_each_bit(bits, |k| {
                members.push(k);
                alone &= holders[k] == 1;
            });
            self.picks.push(if members.is_empty() {
                Pick::None
            } else if counts && alone {
                Pick::RoundRobin(members, 0)
            } else {
                Pick::Heap(members, None)
            });
        }
    }

    /// Routes `lids` (consecutive in LID order) toward switch `t`: as
    /// many [`Picker::least_loaded`] picks in a row, the round robin of
    /// a private set done in one pass. `offsets[i]` is the place of
    /// `lids[i]` in its port's LID range (LMC > 0): the LIDs of one range
    /// after the first go out toward a neighbour switch none of the
    /// range's earlier LIDs took, where the candidates have one, so that
    /// they take distinct paths.
    fn route_run(
        &mut self,
        t: usize,
        counts: bool,
        lids: &[u16],
        offsets: &[u8],
        adj: &[(u8, usize)],
        lft: &mut [u8],
    ) {
        let Some(&g) = self.group_of.get(t) else {
            return;
        };
        let spread = offsets.iter().any(|&o| o != 0);
        if let (true, Some(Pick::RoundRobin(order, next))) =
            (counts, self.picks.get_mut(g as usize))
        {
            let (order, load): (&mut [usize], &mut [u32]) = (order, &mut self.load);
            let len = order.len();
            let mut i = *next;
            let mut used: Vec<usize> = Vec::new();
            for (n, &lid) in lids.iter().enumerate() {
                if spread {
                    if offsets[n] == 0 {
                        used.clear();
                    }
                    // The first candidate left in this round toward an
                    // unused neighbour takes this turn (the round still
                    // visits every candidate once).
                    if let Some(j) = (i..len).find(|&j| !used.contains(&adj[order[j]].1)) {
                        order.swap(i, j);
                    }
                    used.push(adj[order[i]].1);
                }
                let k = order[i];
                lft[usize::from(lid)] = adj[k].0;
                load[k] += 1;
                i += 1;
                if i == len {
                    i = 0;
                }
            }
            *next = i;
            return;
        }
        if !spread {
            for &lid in lids {
                if let Some(k) = self.least_loaded(t, counts) {
                    lft[usize::from(lid)] = adj[k].0;
                }
            }
            return;
        }
        let mut used: Vec<usize> = Vec::new();
        for (&lid, &off) in lids.iter().zip(offsets) {
            if off == 0 {
                used.clear();
            }
            if let Some(k) = self.least_loaded_avoiding(g as usize, counts, adj, &used) {
                lft[usize::from(lid)] = adj[k].0;
                used.push(adj[k].1);
            }
        }
    }

    /// Like [`Picker::least_loaded`] for candidate set `g`, toward a
    /// neighbour switch not in `used` first (one LID range's earlier
    /// picks), by a scan of the set's candidates.
    fn least_loaded_avoiding(
        &mut self,
        g: usize,
        counts: bool,
        adj: &[(u8, usize)],
        used: &[usize],
    ) -> Option<usize> {
        let members: &[usize] = match self.picks.get(g)? {
            Pick::None => return None,
            Pick::RoundRobin(m, _) | Pick::Heap(m, _) => m,
        };
        let k = members
            .iter()
            .copied()
            .min_by_key(|&k| (used.contains(&adj[k].1), self.load[k], k))?;
        if counts {
            // Heap entries are lower bounds of the loads: a stale one is
            // mended when it comes to the top.
            self.load[k] += 1;
        }
        Some(k)
    }

    /// The neighbour index to route toward switch `t` by, if any; a CA
    /// LID (`counts`) adds one to its load.
    fn least_loaded(&mut self, t: usize, counts: bool) -> Option<usize> {
        let g = *self.group_of.get(t)? as usize;
        let load = &mut self.load;
        match self.picks.get_mut(g)? {
            Pick::None => None,
            Pick::RoundRobin(order, next) => {
                let k = *order.get(*next)?;
                if counts {
                    load[k] += 1;
                    *next += 1;
                    if *next == order.len() {
                        *next = 0;
                    }
                }
                Some(k)
            }
            Pick::Heap(members, heap) => {
                let heap = heap.get_or_insert_with(|| {
                    members.iter().map(|&k| Reverse((load[k], k))).collect()
                });
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

/// Consecutive LIDs (in LID order) toward one target switch, all CA
/// LIDs or all switch LIDs: `lids[start..start + len]` of the [`Plan`].
struct Run {
    /// The target switch (position).
    sw: usize,
    is_ca: bool,
    start: usize,
    len: usize,
}

/// What every switch's table is made from.
struct Plan {
    graph: SwitchGraph,
    dist: Distances,
    /// Every routed LID in LID order, with its egress port at its own
    /// switch (0 for a switch's LID), cut into runs.
    lids: Vec<u16>,
    egress: Vec<u8>,
    /// Each LID's place in its port's range (0 for a base LID).
    offsets: Vec<u8>,
    runs: Vec<Run>,
    has_ca: Vec<bool>,
    /// Entries per table (highest LID + 1).
    size: usize,
}

impl Plan {
    fn new(subnet: &Subnet, workers: usize) -> Self {
        let mut plan = Self::without_distances(subnet);
        plan.dist = plan.graph.distances(workers);
        plan
    }

    /// The plan but its distances (an empty matrix): what is read from
    /// the subnet, cheap next to the searches.
    fn without_distances(subnet: &Subnet) -> Self {
        let graph = SwitchGraph::of(subnet);
        let dist = Distances {
            n: 0,
            d: Vec::new(),
        };
        let pos: FastMap<NodeIdx, usize> = graph
            .switches
            .iter()
            .enumerate()
            .map(|(k, i)| (*i, k))
            .collect();
        let mut plan = Self {
            has_ca: vec![false; graph.switches.len()],
            graph,
            dist,
            lids: Vec::new(),
            egress: Vec::new(),
            offsets: Vec::new(),
            runs: Vec::new(),
            size: usize::from(subnet.max_lid()) + 1,
        };
        for (lid, (node, port)) in subnet.all_lids() {
            let base = subnet.nodes()[node].port(port).map_or(lid, |p| p.lid);
            let offset = u8::try_from(lid.saturating_sub(base)).unwrap_or(0);
            let (sw, egress, is_ca) = if let Some(&k) = pos.get(&node) {
                (k, 0, false)
            } else if let Some(&(k, rp)) = subnet
                .remote((node, port))
                .and_then(|(r, rp)| Some((pos.get(&r)?, rp)))
                .as_ref()
            {
                (*k, rp, true)
            } else {
                continue;
            };
            plan.has_ca[sw] |= is_ca;
            match plan.runs.last_mut() {
                Some(r) if r.sw == sw && r.is_ca == is_ca => r.len += 1,
                _ => plan.runs.push(Run {
                    sw,
                    is_ca,
                    start: plan.lids.len(),
                    len: 1,
                }),
            }
            plan.lids.push(lid);
            plan.egress.push(egress);
            plan.offsets.push(offset);
        }
        plan
    }

    /// Fills `lft` (`size` entries) with switch `s`'s table.
    fn route(&self, s: usize, cands: &mut Candidates, pick: &mut Picker, lft: &mut [u8]) {
        let adj = &self.graph.adj[s];
        cands.fill(s, adj, &self.dist);
        pick.reset(cands, adj.len(), &self.has_ca);
        lft.fill(NO_ROUTE);
        for r in &self.runs {
            let lids = &self.lids[r.start..r.start + r.len];
            if r.sw == s {
                for (&lid, &e) in lids.iter().zip(&self.egress[r.start..r.start + r.len]) {
                    lft[usize::from(lid)] = e;
                }
            } else {
                let offsets = &self.offsets[r.start..r.start + r.len];
                pick.route_run(r.sw, r.is_ca, lids, offsets, adj, lft);
            }
        }
    }
}

/// Switches routed per batch handed from a routing thread to the one
/// that stores the tables.
const BATCH: usize = 8;

/// Below this many entries (switches × LIDs) the tables are computed on
/// the caller's thread alone.
const PARALLEL_ENTRIES: usize = 1 << 22;

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
/// Switches are routed independently of each other, so a big fabric
/// (over 4 M entries) is routed on as many threads as the machine has
/// cores (at most 4); the tables are the same either way.
pub fn compute_lfts(subnet: &mut Subnet) {
    let switches = subnet.nodes().iter().filter(|n| n.is_switch()).count();
    let entries = switches.saturating_mul(usize::from(subnet.max_lid()) + 1);
    let workers = if entries < PARALLEL_ENTRIES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    };
    compute_lfts_on(subnet, workers);
}

/// [`compute_lfts`] on `workers` threads (1: the caller's alone).
pub(super) fn compute_lfts_on(subnet: &mut Subnet, workers: usize) {
    let plan = Plan::new(subnet, workers);
    let n = plan.graph.switches.len();
    let mut blocks = BlockInterner::default();
    let mut tables: Vec<Lft> = Vec::with_capacity(n);
    if workers <= 1 {
        let (mut cands, mut pick) = (Candidates::new(), Picker::default());
        let mut lft = vec![NO_ROUTE; plan.size];
        for s in 0..n {
            plan.route(s, &mut cands, &mut pick, &mut lft);
            tables.push(Lft::from_entries(&lft, &mut blocks));
        }
    } else {
        // Routing threads take batches of switches in turn and hand the
        // raw tables over; this thread shares their blocks and puts the
        // tables in switch order (a bounded channel bounds the tables in
        // flight).
        let next = AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(2 * workers);
        let mut done: Vec<Option<Lft>> = vec![None; n];
        std::thread::scope(|sc| {
            for _ in 0..workers {
                let (tx, plan, next) = (tx.clone(), &plan, &next);
                // A thread that cannot start leaves its switches to the
                // others (or to the pass below).
                let _ = std::thread::Builder::new().spawn_scoped(sc, move || {
                    let (mut cands, mut pick) = (Candidates::new(), Picker::default());
                    loop {
                        let first = next.fetch_add(BATCH, Ordering::Relaxed);
                        if first >= n {
                            return;
                        }
                        let count = BATCH.min(n - first);
                        let mut raw = vec![NO_ROUTE; count * plan.size];
                        for (k, lft) in raw.chunks_exact_mut(plan.size).enumerate() {
                            plan.route(first + k, &mut cands, &mut pick, lft);
                        }
                        if tx.send((first, raw)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for (first, raw) in rx {
                for (k, lft) in raw.chunks_exact(plan.size).enumerate() {
                    done[first + k] = Some(Lft::from_entries(lft, &mut blocks));
                }
            }
        });
        let (mut cands, mut pick) = (Candidates::new(), Picker::default());
        let mut lft = vec![NO_ROUTE; plan.size];
        for (s, t) in done.into_iter().enumerate() {
            tables.push(t.unwrap_or_else(|| {
                plan.route(s, &mut cands, &mut pick, &mut lft);
                Lft::from_entries(&lft, &mut blocks)
            }));
        }
    }
    for (&node, lft) in plan.graph.switches.iter().zip(tables) {
        if let Some(n) = subnet.node_mut(node) {
            n.lft = lft;
        }
    }
}
