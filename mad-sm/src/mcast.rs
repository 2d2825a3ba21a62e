//! Multicast: a spanning tree per MLID over the switches, and the
//! MulticastForwardingTable blocks SM-lite writes from it.
//!
//! The SA tells SM-lite the groups and their members
//! ([`SubnetManager::set_mcast_groups`]). For each group SM-lite takes
//! the switches its members hang off (or are: a switch's port 0), grows a
//! breadth-first tree over the switch-to-switch links from the first of
//! them (lowest port first), and keeps only the branches that lead to a
//! member. A switch's mask for the MLID then holds its tree ports, the
//! ports of its member CAs, and port 0 when the switch itself is a member
//! ([`mcast_tables`]). A packet to the MLID leaves on every masked port
//! but the one it came in on, so it reaches each member once.
//!
//! Each switch gets the blocks (32 MLIDs × 16 ports, AttributeModifier
//! `position << 28 | block`) that differ from what SM-lite last wrote
//! into it; SwitchInfo MulticastFDBTop is the last MLID of the highest
//! block in use (0xBFFF when none), as OpenSM sets it. A sweep writes
//! them in its Configure phase; a change of membership while the SM is
//! idle writes them at once (no sweep), otherwise after the running sweep.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use mad_core::wire::attr::MulticastFwdTable;

use super::*;

/// The first multicast LID.
pub const MCAST_LID_BASE: u16 = 0xC000;
/// The last multicast LID (0xFFFF is the permissive LID).
pub const MCAST_LID_MAX: u16 = 0xFFFE;
/// MulticastFDBTop when no multicast LID is in use.
pub const MCAST_TOP_NONE: u16 = MCAST_LID_BASE - 1;

/// One multicast group as the SA knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McGroup {
    /// Its MLID (0xC000–0xFFFE).
    pub mlid: u16,
    /// Port GUIDs of its members (a switch member by its port-0 GUID).
    pub members: Vec<u64>,
}

/// Per switch (node index), per MLID: the ports of the mask.
pub type McTables = BTreeMap<NodeIdx, BTreeMap<u16, BTreeSet<u8>>>;

/// One switch's MFT as blocks: (block, position) → 32 masks.
pub type MftBlocks = BTreeMap<(u16, u8), [u16; MulticastFwdTable::ENTRIES]>;

/// What SM-lite keeps about multicast.
#[derive(Debug, Default)]
pub(super) struct McState {
    groups: Vec<McGroup>,
    /// Groups changed since the tables were last computed.
    dirty: bool,
    /// What SM-lite last wrote, by switch GUID.
    programmed: HashMap<u64, MftBlocks>,
    /// MulticastFDBTop last written, by switch GUID.
    tops: HashMap<u64, u16>,
    /// Switches that keep MulticastFDBTop at 0 whatever is set (ibsim):
    /// not asked again.
    no_top: std::collections::HashSet<u64>,
}

impl McState {
    /// Forgets what was written into a switch (it was reset or is new).
    pub(super) fn forget(&mut self, guid: u64) {
        self.programmed.remove(&guid);
        self.tops.remove(&guid);
    }

    /// True when switch `guid`, reporting `have`, needs MulticastFDBTop
    /// set to `want`. A switch at 0 holds "no MLID" as well as 0xBFFF.
    pub(super) fn top_differs(&self, guid: u64, have: u16, want: u16) -> bool {
        let have = self.tops.get(&guid).copied().unwrap_or(have);
        have != want && !(have == 0 && want == MCAST_TOP_NONE) && !self.no_top.contains(&guid)
    }

    /// A SwitchInfo Set asked for MulticastFDBTop `want` and the switch
    /// answered `got`: false when it took another value than 0 (a switch
    /// that keeps 0 does not implement it and is not asked again).
    pub(super) fn top_answered(&mut self, guid: u64, want: u16, got: u16) -> bool {
        if got == want {
            self.tops.insert(guid, want);
            true
        } else if got == 0 {
            self.no_top.insert(guid);
            true
        } else {
            false
        }
    }
}

/// The spanning tree of every group in `groups` over `sub` (see the
/// module docs). Members not found in `sub`, or reachable from no switch,
/// are left out; a group without such members gets no entry.
#[must_use]
pub fn mcast_tables(sub: &Subnet, groups: &[McGroup]) -> McTables {
    let mut out = McTables::new();
    for g in groups {
        if !(MCAST_LID_BASE..=MCAST_LID_MAX).contains(&g.mlid) {
            continue;
        }
        for (sw, ports) in group_tree(sub, &g.members) {
            out.entry(sw).or_default().insert(g.mlid, ports);
        }
    }
    out
}

/// The switches a group's members hang off, with the member ports (one
/// pass over the ports, however many members).
fn member_switches(sub: &Subnet, members: &[u64]) -> BTreeMap<NodeIdx, BTreeSet<u8>> {
    let members: FastSet<u64> = members.iter().copied().collect();
    let mut at: BTreeMap<NodeIdx, BTreeSet<u8>> = BTreeMap::new();
    for (i, n) in sub.nodes().iter().enumerate() {
        for p in n
            .ports
            .iter()
            .flatten()
            .filter(|p| members.contains(&p.guid))
        {
            if n.is_switch() {
                if p.num == 0 {
                    at.entry(i).or_default().insert(0);
                }
                continue;
            }
            let Some((r, rp)) = sub.remote((i, p.num)) else {
                continue;
            };
            if p.link_up() && sub.nodes().get(r).is_some_and(SmNode::is_switch) {
                at.entry(r).or_default().insert(rp);
            }
        }
    }
    at
}

/// The tree of one group: per switch, the ports of its mask.
fn group_tree(sub: &Subnet, members: &[u64]) -> BTreeMap<NodeIdx, BTreeSet<u8>> {
    let mut masks = member_switches(sub, members);
    let Some(&root) = masks.keys().next() else {
        return masks;
    };
    // Breadth-first over switch-to-switch links: parent[sw] = (parent,
    // port on parent, port on sw).
    let mut parent: HashMap<NodeIdx, Option<(NodeIdx, u8, u8)>> = HashMap::new();
    parent.insert(root, None);
    let mut queue = VecDeque::from([root]);
    while let Some(s) = queue.pop_front() {
        let n = &sub.nodes()[s];
        for p in n
            .ports
            .iter()
            .flatten()
            .filter(|p| p.num != 0 && p.link_up())
        {
            let Some((r, rp)) = sub.remote((s, p.num)) else {
                continue;
            };
            let far_up = sub
                .nodes()
                .get(r)
                .filter(|x| x.is_switch())
                .and_then(|x| x.port(rp))
                .is_some_and(SmPort::link_up);
            if far_up && !parent.contains_key(&r) {
                parent.insert(r, Some((s, p.num, rp)));
                queue.push_back(r);
            }
        }
    }
    // Keep the branches that lead to a member switch.
    let wanted: Vec<NodeIdx> = masks.keys().copied().collect();
    for sw in wanted {
        if !parent.contains_key(&sw) {
            // Not reachable from the root over switches: left alone.
            continue;
        }
        let mut at = sw;
        while let Some(Some((up, up_port, my_port))) = parent.get(&at).copied() {
            let mine = masks.entry(at).or_default();
            if !mine.insert(my_port) {
                break;
            }
            masks.entry(up).or_default().insert(up_port);
            at = up;
        }
    }
    masks
}

/// One switch's masks (MLID → ports) as MFT blocks for `nports` ports.
#[must_use]
pub fn mft_blocks(masks: &BTreeMap<u16, BTreeSet<u8>>, nports: u8) -> MftBlocks {
    let mut out = MftBlocks::new();
    let positions = nports / 16 + 1;
    for (&mlid, ports) in masks {
        let idx = usize::from(mlid - MCAST_LID_BASE);
        let block = (idx / MulticastFwdTable::ENTRIES) as u16;
        let entry = idx % MulticastFwdTable::ENTRIES;
        for pos in 0..positions {
            let mut mask = 0u16;
            for &p in ports {
                if p / 16 == pos {
                    mask |= 1 << (p % 16);
                }
            }
            let b = out
                .entry((block, pos))
                .or_insert([0; MulticastFwdTable::ENTRIES]);
            b[entry] = mask;
        }
    }
    out.retain(|_, b| b.iter().any(|m| *m != 0));
    out
}

/// MulticastFDBTop for these blocks: the last MLID of the highest block
/// in use, [`MCAST_TOP_NONE`] when none.
#[must_use]
pub fn mcast_top(blocks: &MftBlocks) -> u16 {
    blocks
        .keys()
        .map(|(b, _)| *b)
        .max()
        .map_or(MCAST_TOP_NONE, |b| {
            let last = (u32::from(b) + 1) * MulticastFwdTable::ENTRIES as u32 - 1;
            (u32::from(MCAST_LID_BASE) + last).min(u32::from(MCAST_LID_MAX)) as u16
        })
}

impl SubnetManager {
    /// The multicast groups are now `groups` (the SA calls this when a
    /// join or leave changed them): SM-lite rewrites the switches' MFTs,
    /// at once when idle, else once the running sweep ends.
    pub fn set_mcast_groups(&mut self, groups: Vec<McGroup>) {
        if self.mcast.groups == groups {
            return;
        }
        self.mcast.groups = groups;
        self.mcast.dirty = true;
        if self.phase == Phase::Idle && self.subnet.local().is_some() {
            self.program_mcast();
        }
    }

    /// The multicast groups SM-lite programs.
    #[must_use]
    pub fn mcast_groups(&self) -> &[McGroup] {
        &self.mcast.groups
    }

    /// The tables for `sub` and the current groups; clears the change mark.
    pub(super) fn mcast_tables_for(&mut self, sub: &Subnet) -> McTables {
        self.mcast.dirty = false;
        mcast_tables(sub, &self.mcast.groups)
    }

    /// Writes the MFTs of the last sweep's subnet where the groups changed
    /// (the Multicast phase). Does nothing when nothing differs.
    pub(super) fn program_mcast(&mut self) {
        let sub = std::mem::take(&mut self.subnet);
        let tables = self.mcast_tables_for(&sub);
        for (i, n) in sub.nodes().iter().enumerate() {
            let Some(si) = n.switch_info.as_ref().filter(|_| n.is_switch()) else {
                continue;
            };
            let blocks = self.queue_mft(n, tables.get(&i));
            let top = mcast_top(&blocks);
            let guid = n.guid();
            if self.mcast.top_differs(guid, si.multicast_fdb_top, top) {
                let mut want = si.clone();
                want.linear_fdb_top = self
                    .programmed
                    .get(&guid)
                    .map_or(si.linear_fdb_top, |p| p.top);
                want.multicast_fdb_top = top;
                want.port_state_change = false;
                if let Ok(b) = want.to_vec() {
                    self.set(
                        AttributeId::SWITCH_INFO,
                        0,
                        n.path.clone(),
                        &b,
                        Kind::SetMcastTop { guid, top },
                    );
                }
            }
        }
        self.subnet = sub;
        if !self.ready.is_empty() {
            self.phase = Phase::Multicast;
        }
    }

    /// Queues the MFT blocks of switch `n` that differ from what was
    /// written into it; returns its blocks.
    pub(super) fn queue_mft(
        &mut self,
        n: &SmNode,
        masks: Option<&BTreeMap<u16, BTreeSet<u8>>>,
    ) -> MftBlocks {
        let empty = BTreeMap::new();
        let blocks = mft_blocks(masks.unwrap_or(&empty), n.info.num_ports);
        let guid = n.guid();
        let old = self.mcast.programmed.get(&guid);
        let mut keys: BTreeSet<(u16, u8)> = blocks.keys().copied().collect();
        if let Some(o) = old {
            keys.extend(o.keys().copied());
        }
        let mut sets = Vec::new();
        for k in keys {
            let want = blocks
                .get(&k)
                .copied()
                .unwrap_or([0; MulticastFwdTable::ENTRIES]);
            let have = old.and_then(|o| o.get(&k));
            let zero = want.iter().all(|m| *m == 0);
            if have == Some(&want) || (have.is_none() && zero) {
                continue;
            }
            sets.push((k, want));
        }
        for ((block, pos), want) in sets {
            let attr_mod = (u32::from(pos) << 28) | u32::from(block);
            let t = MulticastFwdTable { masks: want };
            if let Ok(b) = t.to_vec() {
                self.set(
                    AttributeId::MCAST_FWD_TABLE,
                    attr_mod,
                    n.path.clone(),
                    &b,
                    Kind::SetMft {
                        guid,
                        block,
                        pos,
                        want: Box::new(want),
                    },
                );
            }
        }
        blocks
    }

    /// An MFT block Set was answered with `data`.
    pub(super) fn mft_set_done(
        &mut self,
        req: &Request,
        guid: u64,
        key: (u16, u8),
        want: [u16; MulticastFwdTable::ENTRIES],
        data: &[u8],
    ) {
        if MulticastFwdTable::parse(data).is_ok_and(|g| g.masks == want) {
            let p = self.mcast.programmed.entry(guid).or_default();
            if want.iter().all(|m| *m == 0) {
                p.remove(&key);
            } else {
                p.insert(key, want);
            }
        } else {
            self.error(SmError::SwitchNotSet {
                switch_guid: guid,
                attr: req.attr,
                attr_mod: req.attr_mod,
            });
        }
    }

    /// A SwitchInfo Set of MulticastFDBTop was answered with `data`.
    pub(super) fn mcast_top_done(&mut self, req: &Request, guid: u64, top: u16, data: &[u8]) {
        let ok = SwitchInfo::parse(data)
            .is_ok_and(|g| self.mcast.top_answered(guid, top, g.multicast_fdb_top));
        if !ok {
            self.error(SmError::SwitchNotSet {
                switch_guid: guid,
                attr: req.attr,
                attr_mod: req.attr_mod,
            });
        }
    }

    /// The links changed without a heavy sweep (a reroute): the trees
    /// are made again over the new subnet once it is in place.
    pub(super) fn mcast_links_changed(&mut self) {
        if !self.mcast.groups.is_empty() {
            self.mcast.dirty = true;
        }
    }

    /// After a sweep or a Multicast phase: write what changed meanwhile.
    pub(super) fn mcast_after_phase(&mut self) {
        if self.phase == Phase::Idle && self.mcast.dirty && self.subnet.local().is_some() {
            self.program_mcast();
        }
    }
}
