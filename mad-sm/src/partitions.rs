//! Partitions: OpenSM's `partitions.conf` (`-P/--Pconfig`), parsed, and
//! the P_Key tables it gives every port of a subnet.
//!
//! # The file (OpenSM's syntax, as its man page describes it)
//! ```text
//! # comment to the end of the line
//! Default=0x7fff,ipoib : ALL=limited, SELF=full ;
//! tenantA=0x0001 : 0x0002c90000000101=full, 0x0002c90000000102 ;
//! tenantB=0x0002, defmember=full :
//!     0x0002c90000000201, 0x0002c90000000202 ;   # a statement may span lines
//! mcast=0x0003, ipoib, rate=3, mtu=4 :
//!     mgid=ff12:401b::0707,sl=1      # a multicast group of the partition
//!     ALL_CAS=full ;
//! ```
//! A statement is `Definition : Properties ;`. The definition is
//! `[Name][=PKey][,flag]*`; flags are `ipoib`, `indx0`,
//! `defmember=full|limited|both` and the multicast group flags `rate=`,
//! `mtu=`, `sl=`, `scope=`, `Q_Key=`, `TClass=`, `FlowLabel=`. The
//! properties are port specifiers separated by `,` — a port GUID (`0x`
//! hexadecimal or decimal), `ALL`, `ALL_CAS`, `ALL_SWITCHES`,
//! `ALL_ROUTERS` or `SELF` (the SM's port), each with an optional
//! `=full`, `=limited` or `=both` (without one: the partition's
//! `defmember`, limited unless told; an unrecognised membership word is
//! taken as limited, as OpenSM takes it, and reported in
//! [`PartitionConfig::warnings`]) — a `defmember=` item that changes
//! the default for the items after it, and `mgid=GID[,flag]*` lines
//! (one group per line). A partition named `Default` without a P_Key is
//! 0x7fff; another without one gets the lowest P_Key no other
//! partition of the file has. Two statements with the same P_Key are
//! one partition (the first name is kept).
//!
//! The default partition 0x7fff always exists: a file without it acts
//! as if it said `Default=0x7fff : ALL=limited, SELF=full ;`, and the
//! SM's own port is always a full member of it (as OpenSM).
//!
//! Anything else is refused with the line it is on and what is wrong
//! ([`ParseError`]).
//!
//! # The tables ([`pkey_tables`])
//! Each end port (a CA or router port, a switch's port 0) gets one entry
//! per partition it is a member of, with the membership bit (0x8000)
//! set when it is a full member of it anywhere (`both` is full: OpenSM's
//! `allow_both_pkeys` is off by default). Index 0 holds the default
//! P_Key (or the P_Key of an `indx0` partition); the others follow from
//! index 1 in the order OpenSM 3.3 takes its partitions (by P_Key as
//! stored in network byte order on a little-endian host). A switch port
//! linked to a CA or router port gets that port's P_Keys, packed from
//! index 0, and partition enforcement inbound and outbound (OpenSM's
//! `part_enforce both`, its default); links between switches get none.
//! A table longer than the port's capacity (NodeInfo PartitionCap;
//! SwitchInfo PartitionEnforcementCap for switch external ports) is cut
//! to it, and a switch port then gets no enforcement.

use std::fmt;
use std::net::Ipv6Addr;

use mad_core::hash::FastMap;
use mad_core::wire::attr::NodeType;

use crate::subnet::{PortRef, Subnet};

/// The default partition's P_Key (low 15 bits).
pub const DEFAULT_PKEY: u16 = 0x7FFF;
/// The full-membership bit of a P_Key.
pub const FULL_MEMBER: u16 = 0x8000;

/// Membership of a port in a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// Full member (P_Key bit 15 set): talks to every member.
    Full,
    /// Limited member: talks to full members only.
    Limited,
    /// Both full and limited (taken as full: one entry per P_Key).
    Both,
}

/// Which ports a port specifier names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// The end port with this port GUID.
    Guid(u64),
    /// Every end port (`ALL`).
    All,
    /// Every CA port (`ALL_CAS`).
    AllCas,
    /// Every switch's port 0 (`ALL_SWITCHES`).
    AllSwitches,
    /// Every router port (`ALL_ROUTERS`).
    AllRouters,
    /// The SM's own port (`SELF`).
    SelfPort,
}

/// One port specifier of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The ports named.
    pub ports: Ports,
    /// Their membership.
    pub membership: Membership,
    /// The file line it is on.
    pub line: usize,
}

/// Multicast group flags (`rate=`, `mtu=`, `sl=`, `scope=`, `Q_Key=`,
/// `TClass=`, `FlowLabel=`); `None` when not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupFlags {
    /// Rate code (IBTA; 3 = 10 Gb/s).
    pub rate: Option<u8>,
    /// MTU code (IBTA; 4 = 2048).
    pub mtu: Option<u8>,
    /// Service level.
    pub sl: Option<u8>,
    /// Scopes (each one a group of its own).
    pub scope: Vec<u8>,
    /// Q_Key.
    pub qkey: Option<u32>,
    /// Traffic class.
    pub tclass: Option<u8>,
    /// Flow label.
    pub flow_label: Option<u32>,
}

/// A multicast group of a partition (`mgid=` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// The MGID.
    pub mgid: [u8; 16],
    /// Its flags.
    pub flags: GroupFlags,
    /// The file line it is on.
    pub line: usize,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Its name (may be empty).
    pub name: String,
    /// Its P_Key, low 15 bits.
    pub pkey: u16,
    /// The line of its (first) definition; 0 for the implied default.
    pub line: usize,
    /// `ipoib`: an IPoIB broadcast group is made for it.
    pub ipoib: bool,
    /// `indx0`: its P_Key goes to index 0 of its members' tables.
    pub indx0: bool,
    /// The definition's multicast group flags.
    pub flags: GroupFlags,
    /// Its members, in file order.
    pub members: Vec<Member>,
    /// Its `mgid=` groups.
    pub groups: Vec<GroupSpec>,
}

/// A parsed `partitions.conf`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionConfig {
    /// The partitions, the default one included, in file order (the
    /// implied default first when the file has none).
    pub partitions: Vec<Partition>,
    /// What was taken as OpenSM takes it but deserves a look (an
    /// unrecognised membership word), each with its line.
    pub warnings: Vec<String>,
}

/// A line of the file that cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

fn err<T>(line: usize, reason: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        reason: reason.into(),
    })
}

/// A number as OpenSM's `strtoul(.., 0)` reads one: `0x` hexadecimal, a
/// leading `0` octal, else decimal; the whole text must be the number.
fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

impl PartitionConfig {
    /// Parses the text of a `partitions.conf` (see the module docs).
    ///
    /// # Errors
    /// The first line that cannot be taken, and why.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut cfg = Self::default();
        let mut stmt: Vec<(usize, String)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let ln = i + 1;
            let line = raw.split('#').next().unwrap_or("");
            let mut rest = line;
            while let Some(pos) = rest.find(';') {
                stmt.push((ln, rest[..pos].to_string()));
                cfg.statement(&stmt)?;
                stmt.clear();
                rest = &rest[pos + 1..];
            }
            if !rest.trim().is_empty() || !stmt.is_empty() {
                stmt.push((ln, rest.to_string()));
            }
        }
        if let Some((ln, _)) = stmt.iter().find(|(_, t)| !t.trim().is_empty()) {
            return err(*ln, "partition definition not ended with ';'");
        }
        cfg.finish();
        Ok(cfg)
    }

    /// The partition with this P_Key (low 15 bits).
    #[must_use]
    pub fn partition(&self, pkey: u16) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.pkey == pkey & 0x7FFF)
    }

    /// One `Definition : Properties` statement (its `;` removed), as
    /// (line, text) pieces.
    fn statement(&mut self, pieces: &[(usize, String)]) -> Result<(), ParseError> {
        let Some(first) = pieces.iter().position(|(_, t)| !t.trim().is_empty()) else {
            return Ok(()); // an empty statement
        };
        let def_line = pieces[first].0;
        // The definition runs to the first ':'.
        let mut def = String::new();
        let mut props: Vec<(usize, &str)> = Vec::new();
        let mut found = false;
        for (ln, t) in &pieces[first..] {
            if found {
                props.push((*ln, t));
            } else if let Some(pos) = t.find(':') {
                def.push_str(&t[..pos]);
                props.push((*ln, &t[pos + 1..]));
                found = true;
            } else {
                def.push_str(t);
                def.push(' ');
            }
        }
        if !found {
            return err(def_line, "no ':' after the partition definition");
        }
        let mut toks = def.split(',');
        let head = toks.next().unwrap_or("").trim();
        let (name, pkey) = match head.split_once('=') {
            Some((n, k)) => {
                let k = k.trim();
                let v = number(k).filter(|v| *v <= 0xFFFF && *v & 0x7FFF != 0);
                match v {
                    Some(v) => (n.trim(), Some(v as u16 & 0x7FFF)),
                    None => return err(def_line, format!("bad P_Key '{k}'")),
                }
            }
            None => (head, None),
        };
        if name.contains(char::is_whitespace) {
            return err(def_line, format!("bad partition name '{name}'"));
        }
        let mut part = Partition {
            name: name.to_string(),
            pkey: pkey.unwrap_or(if name == "Default" { DEFAULT_PKEY } else { 0 }),
            line: def_line,
            ipoib: false,
            indx0: false,
            flags: GroupFlags::default(),
            members: Vec::new(),
            groups: Vec::new(),
        };
        let mut defmember = Membership::Limited;
        for t in toks {
            let t = t.trim();
            if t.is_empty() {
                continue;
            }
            match t {
                "ipoib" => part.ipoib = true,
                "indx0" => part.indx0 = true,
                _ => {
                    if let Some(m) = t.strip_prefix("defmember=") {
                        defmember = defmember_word(m.trim(), def_line)?;
                    } else {
                        group_flag(&mut part.flags, t, def_line)?;
                    }
                }
            }
        }
        for (ln, text) in props {
            let trimmed = text.trim();
            if trimmed.is_empty() {
                continue;
            }
            if trimmed
                .get(..5)
                .is_some_and(|h| h.eq_ignore_ascii_case("mgid="))
            {
                part.groups.push(group_line(trimmed, ln)?);
                continue;
            }
            for item in trimmed.split([',', ':']) {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                if let Some(m) = item.strip_prefix("defmember=") {
                    defmember = defmember_word(m.trim(), ln)?;
                    continue;
                }
                let (who, m) = match item.split_once('=') {
                    Some((w, m)) => (w.trim(), Some(m.trim())),
                    None => (item, None),
                };
                let ports = match who {
                    "ALL" => Ports::All,
                    "ALL_CAS" => Ports::AllCas,
                    "ALL_SWITCHES" => Ports::AllSwitches,
                    "ALL_ROUTERS" => Ports::AllRouters,
                    "SELF" => Ports::SelfPort,
                    g => match number(g).filter(|v| *v != 0) {
                        Some(v) => Ports::Guid(v),
                        None => {
                            return err(
                                ln,
                                format!(
                                    "'{g}' is neither a port GUID nor ALL, ALL_CAS, \
                                     ALL_SWITCHES, ALL_ROUTERS or SELF"
                                ),
                            )
                        }
                    },
                };
                let membership = match m {
                    None => defmember,
                    Some("full") => Membership::Full,
                    Some("both") => Membership::Both,
                    Some("limited") => Membership::Limited,
                    Some(other) => {
                        self.warnings.push(format!(
                            "line {ln}: membership '{other}' of {who} taken as limited"
                        ));
                        Membership::Limited
                    }
                };
                part.members.push(Member {
                    ports,
                    membership,
                    line: ln,
                });
            }
        }
        let same = (part.pkey != 0)
            .then(|| self.partitions.iter_mut().find(|p| p.pkey == part.pkey))
            .flatten();
        match same {
            Some(p) => {
                p.members.append(&mut part.members);
                p.groups.append(&mut part.groups);
                p.ipoib |= part.ipoib;
                p.indx0 |= part.indx0;
            }
            None => self.partitions.push(part),
        }
        Ok(())
    }

    /// Gives P_Keys to the partitions that had none, and adds the
    /// default partition (and the SM's full membership of it).
    fn finish(&mut self) {
        let mut next = 1u16;
        for i in 0..self.partitions.len() {
            if self.partitions[i].pkey != 0 {
                continue;
            }
            while self.partitions.iter().any(|p| p.pkey == next) {
                next += 1;
            }
            self.partitions[i].pkey = next;
        }
        let self_full = Member {
            ports: Ports::SelfPort,
            membership: Membership::Full,
            line: 0,
        };
        match self.partitions.iter_mut().find(|p| p.pkey == DEFAULT_PKEY) {
            Some(p) => p.members.push(self_full),
            None => self.partitions.insert(
                0,
                Partition {
                    name: "Default".into(),
                    pkey: DEFAULT_PKEY,
                    line: 0,
                    ipoib: false,
                    indx0: false,
                    flags: GroupFlags::default(),
                    members: vec![
                        Member {
                            ports: Ports::All,
                            membership: Membership::Limited,
                            line: 0,
                        },
                        self_full,
                    ],
                    groups: Vec::new(),
                },
            ),
        }
    }
}

fn defmember_word(m: &str, line: usize) -> Result<Membership, ParseError> {
    match m {
        "full" => Ok(Membership::Full),
        "limited" => Ok(Membership::Limited),
        "both" => Ok(Membership::Both),
        _ => err(
            line,
            format!("defmember must be full, limited or both, not '{m}'"),
        ),
    }
}

/// One multicast group flag `key=value` into `f`.
fn group_flag(f: &mut GroupFlags, t: &str, line: usize) -> Result<(), ParseError> {
    let Some((k, v)) = t.split_once('=') else {
        return err(line, format!("unknown partition flag '{t}'"));
    };
    let (k, v) = (k.trim(), v.trim());
    let n = number(v).ok_or_else(|| ParseError {
        line,
        reason: format!("bad value '{v}' for {k}"),
    })?;
    let small = |max: u64| -> Result<u8, ParseError> {
        if n <= max {
            Ok(n as u8)
        } else {
            err(line, format!("{k}={v} is out of range (at most {max})"))
        }
    };
    match k {
        "rate" => f.rate = Some(small(63)?),
        "mtu" => f.mtu = Some(small(5)?),
        "sl" => f.sl = Some(small(15)?),
        "scope" => f.scope.push(small(15)?),
        "TClass" => f.tclass = Some(small(255)?),
        "Q_Key" => match u32::try_from(n) {
            Ok(q) => f.qkey = Some(q),
            Err(_) => return err(line, format!("Q_Key={v} is out of range")),
        },
        "FlowLabel" => {
            if n > 0xF_FFFF {
                return err(line, format!("FlowLabel={v} is out of range"));
            }
            f.flow_label = Some(n as u32);
        }
        _ => return err(line, format!("unknown partition flag '{k}'")),
    }
    Ok(())
}

/// An `mgid=GID[,flag]*` line.
fn group_line(t: &str, line: usize) -> Result<GroupSpec, ParseError> {
    let mut parts = t.split(',');
    let gid = parts.next().unwrap_or("")[5..].trim();
    let addr: Ipv6Addr = gid.parse().map_err(|_| ParseError {
        line,
        reason: format!("bad MGID '{gid}'"),
    })?;
    let mgid = addr.octets();
    if mgid[0] != 0xFF {
        return err(line, format!("MGID '{gid}' is not a multicast GID"));
    }
    let mut flags = GroupFlags::default();
    for f in parts {
        let f = f.trim();
        if !f.is_empty() {
            group_flag(&mut flags, f, line)?;
        }
    }
    Ok(GroupSpec { mgid, flags, line })
}

/// A multicast group a partition asks for: the IPoIB broadcast group of
/// an `ipoib` partition, or an `mgid=` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionGroup {
    /// The MGID (scope nibble set, an IP group's P_Key bits filled in).
    pub mgid: [u8; 16],
    /// The partition's P_Key, full-member bit set.
    pub pkey: u16,
    /// Q_Key (0x0b1b for IP groups unless given, else 0).
    pub qkey: u32,
    /// MTU code (default 4, 2048).
    pub mtu: u8,
    /// Rate code (default 3, 10 Gb/s).
    pub rate: u8,
    /// Service level (default 0).
    pub sl: u8,
    /// Traffic class (default 0).
    pub tclass: u8,
    /// Flow label (default 0).
    pub flow_label: u32,
    /// Scope (default 2, link-local).
    pub scope: u8,
}

/// The multicast groups `cfg`'s partitions ask for, as OpenSM makes
/// them at start: for an `ipoib` partition the IPoIB broadcast group
/// `ff1S:401b:PPPP::ffff:ffff` (P_Key with the full bit, scope S from
/// its `scope=` flags, default 2) with the definition's flags; for each
/// `mgid=` line its group, once per `scope=` given. An IP group
/// (signature 401b or 601b) whose P_Key bits are 0 gets the partition's.
#[must_use]
pub fn partition_groups(cfg: &PartitionConfig) -> Vec<PartitionGroup> {
    let mut out: Vec<PartitionGroup> = Vec::new();
    let mut add = |mgid: [u8; 16], pkey: u16, f: &GroupFlags| {
        let ip = matches!([mgid[2], mgid[3]], [0x40, 0x1B] | [0x60, 0x1B]);
        let scopes = if f.scope.is_empty() {
            vec![mgid[1] & 0x0F]
        } else {
            f.scope.clone()
        };
        for scope in scopes {
            let mut g = mgid;
            g[1] = (g[1] & 0xF0) | (scope & 0x0F);
            if ip && g[4] == 0 && g[5] == 0 {
                g[4..6].copy_from_slice(&pkey.to_be_bytes());
            }
            if out.iter().any(|x| x.mgid == g) {
                continue;
            }
            out.push(PartitionGroup {
                mgid: g,
                pkey,
                qkey: f.qkey.unwrap_or(if ip { 0x0B1B } else { 0 }),
                mtu: f.mtu.unwrap_or(4),
                rate: f.rate.unwrap_or(3),
                sl: f.sl.unwrap_or(0),
                tclass: f.tclass.unwrap_or(0),
                flow_label: f.flow_label.unwrap_or(0),
                scope: scope & 0x0F,
            });
        }
    };
    for p in &cfg.partitions {
        let pkey = p.pkey | FULL_MEMBER;
        if p.ipoib {
            let mut g = [0u8; 16];
            g[..4].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B]);
            g[4..6].copy_from_slice(&pkey.to_be_bytes());
            g[12..].copy_from_slice(&[0xFF; 4]);
            add(g, pkey, &p.flags);
        }
        for grp in &p.groups {
            add(grp.mgid, pkey, &grp.flags);
        }
    }
    out
}

pub use crate::subnet::PKeyPlan;

/// The P_Key tables `cfg` gives the ports of `sub` (see the module docs).
#[must_use]
pub fn pkey_tables(cfg: &PartitionConfig, sub: &Subnet) -> PKeyPlan {
    let mut plan = PKeyPlan::default();
    // End ports: (ref, port GUID, node type).
    let mut ends: Vec<(PortRef, u64, NodeType)> = Vec::new();
    for (i, n) in sub.nodes().iter().enumerate() {
        for p in n.ports.iter().flatten() {
            let end = if n.is_switch() {
                p.num == 0
            } else {
                p.num != 0
            };
            if end {
                ends.push(((i, p.num), p.guid, n.info.node_type));
            }
        }
    }
    let local = sub.local();
    // OpenSM's order: its partitions map is keyed by the P_Key in
    // network byte order, read as a little-endian number.
    let mut order: Vec<&Partition> = cfg.partitions.iter().collect();
    order.sort_by_key(|p| p.pkey.swap_bytes());
    // Per port: (base P_Key, full) in the order taken.
    let mut keys: FastMap<PortRef, Vec<(u16, bool)>> = FastMap::default();
    for part in &order {
        for m in &part.members {
            let full = matches!(m.membership, Membership::Full | Membership::Both);
            for &(r, guid, ty) in &ends {
                let hit = match m.ports {
                    Ports::Guid(g) => g == guid,
                    Ports::All => true,
                    Ports::AllCas => ty == NodeType::CA,
                    Ports::AllSwitches => ty == NodeType::SWITCH,
                    Ports::AllRouters => ty == NodeType::ROUTER,
                    Ports::SelfPort => Some(r) == local,
                };
                if !hit {
                    continue;
                }
                let v = keys.entry(r).or_default();
                match v.iter_mut().find(|(k, _)| *k == part.pkey) {
                    Some(e) => e.1 |= full,
                    None => v.push((part.pkey, full)),
                }
            }
        }
    }
    let indx0: Option<u16> = cfg.partitions.iter().find(|p| p.indx0).map(|p| p.pkey);
    for (r, _, _) in &ends {
        let Some(list) = keys.get(r) else {
            continue;
        };
        let first = indx0
            .filter(|k| list.iter().any(|e| e.0 == *k))
            .unwrap_or(DEFAULT_PKEY);
        let mut t = vec![0u16];
        for &(k, full) in list {
            let v = k | if full { FULL_MEMBER } else { 0 };
            if k == first {
                t[0] = v;
            } else {
                t.push(v);
            }
        }
        let n = &sub.nodes()[r.0];
        let cap = usize::from(n.info.partition_cap).max(1);
        if t.len() > cap {
            plan.overflow.push((*r, t.split_off(cap)));
        }
        while t.last() == Some(&0) && t.len() > 1 {
            t.pop();
        }
        // The switch port facing this end port, if any.
        if !n.is_switch() {
            if let Some(peer) = sub.remote(*r) {
                let pn = &sub.nodes()[peer.0];
                let cap = pn
                    .switch_info
                    .as_ref()
                    .map_or(0, |s| usize::from(s.partition_enforcement_cap));
                if pn.is_switch() && cap > 0 {
                    let mut st: Vec<u16> = t.iter().copied().filter(|k| k & 0x7FFF != 0).collect();
                    if st.len() > cap {
                        plan.overflow.push((peer, st.split_off(cap)));
                    } else {
                        plan.enforce.push(peer);
                    }
                    plan.tables.insert(peer, st);
                }
            }
        }
        plan.tables.insert(*r, t);
    }
    plan.enforce.sort_unstable();
    plan
}

/// The P_Key two ports with these tables share (the first of `a`'s that
/// `b` has too, not both limited), as the pair's PathRecords carry it;
/// `want` (a P_Key the query names) must be that one or another shared.
#[must_use]
pub fn shared_pkey(a: &[u16], b: &[u16], want: Option<u16>) -> Option<u16> {
    let admits = |x: u16| {
        let base = x & 0x7FFF;
        base != 0
            && b.iter()
                .any(|&y| y & 0x7FFF == base && (x | y) & FULL_MEMBER != 0)
    };
    match want {
        Some(w) => a
            .iter()
            .copied()
            .find(|&x| x & 0x7FFF == w & 0x7FFF && admits(x)),
        None => a.iter().copied().find(|&x| admits(x)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rule_and_two_tenants_parse() {
        let c = PartitionConfig::parse(
            "# two tenants\n\
             Default=0x7fff,ipoib : ALL=limited, SELF=full ;\n\
             tenantA=0x0001 : 0x10=full,\n   0x11 ;  # continued\n\
             tenantB=0x0002, defmember=full : 0x20, 0x21=limited;\n",
        )
        .expect("parses");
        assert_eq!(c.partitions.len(), 3);
        let d = c.partition(0x7FFF).expect("default");
        assert!(d.ipoib);
        let a = c.partition(1).expect("A");
        assert_eq!(a.name, "tenantA");
        assert_eq!(
            a.members,
            vec![
                Member {
                    ports: Ports::Guid(0x10),
                    membership: Membership::Full,
                    line: 3
                },
                Member {
                    ports: Ports::Guid(0x11),
                    membership: Membership::Limited,
                    line: 4
                }
            ]
        );
        let b = c.partition(2).expect("B");
        assert_eq!(b.members[0].membership, Membership::Full);
        assert_eq!(b.members[1].membership, Membership::Limited);
    }

    #[test]
    fn missing_default_is_all_limited_self_full() {
        let c = PartitionConfig::parse("a=0x10 : ALL_CAS=full;").expect("parses");
        let d = c.partition(DEFAULT_PKEY).expect("implied default");
        assert_eq!(d.members[0].ports, Ports::All);
        assert_eq!(d.members[0].membership, Membership::Limited);
        assert_eq!(d.members[1].ports, Ports::SelfPort);
        assert_eq!(d.members[1].membership, Membership::Full);
    }

    #[test]
    fn mgid_lines_and_flags_parse() {
        let c = PartitionConfig::parse(
            "Default=0x7fff,ipoib,rate=3,mtu=4:\n\
             \tmgid=ff12:401b::0707,sl=1 # random IPv4 group\n\
             \tmgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2\n\
             \tALL=full;\n",
        )
        .expect("parses");
        let d = c.partition(DEFAULT_PKEY).expect("default");
        assert_eq!(d.flags.rate, Some(3));
        assert_eq!(d.groups.len(), 2);
        assert_eq!(d.groups[0].mgid[..4], [0xFF, 0x12, 0x40, 0x1B]);
        assert_eq!(d.groups[0].flags.sl, Some(1));
        assert_eq!(d.groups[1].flags.qkey, Some(0xDEAD_BEEF));
        assert_eq!(d.groups[1].line, 3);
        assert_eq!(d.members[0].ports, Ports::All);
    }

    #[test]
    fn same_pkey_merges_and_names_get_pkeys() {
        let c = PartitionConfig::parse(
            "ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;\n\
             ShareIO = 0x80 : 0x123453, 0x123455=full;\n\
             ShareIO = 0x80 : defmember=limited : 0x123456, 0x123458=full;\n\
             Other : 0x5;\n\
             Default : ALL=full;\n",
        )
        .expect("parses");
        let s = c.partition(0x80).expect("ShareIO");
        let m: Vec<_> = s.members.iter().map(|m| m.membership).collect();
        use Membership::*;
        assert_eq!(m, vec![Full, Full, Limited, Full, Limited, Full]);
        assert_eq!(c.partitions.iter().filter(|p| p.name == "Other").count(), 1);
        assert_eq!(c.partition(1).map(|p| p.name.as_str()), Some("Other"));
        assert!(c.partition(DEFAULT_PKEY).is_some());
    }

    #[test]
    fn unknown_membership_is_limited_with_a_warning() {
        let c = PartitionConfig::parse("p=0x3 : 0x3456789034=limi;").expect("parses");
        assert_eq!(
            c.partition(3).expect("p").members[0].membership,
            Membership::Limited
        );
        assert!(c.warnings[0].contains("line 1"), "{:?}", c.warnings);
    }

    #[test]
    fn malformed_lines_are_refused_naming_them() {
        let cases = [
            ("Default=0x7fff : ALL;\nbad=0x1 0x10;\n", 2, "no ':'"),
            ("a=0xzz : ALL;", 1, "bad P_Key '0xzz'"),
            ("a=0x8000 : ALL;", 1, "bad P_Key"),
            (
                "a=0x1 : ALL;\n\nb=0x2 :\n  0x10,\n  ALLL=full;",
                5,
                "'ALLL'",
            ),
            ("a=0x1, ipob : ALL;", 1, "unknown partition flag 'ipob'"),
            ("a=0x1, mtu=9 : ALL;", 1, "mtu=9 is out of range"),
            ("a=0x1 :\n mgid=fe80::1\n ALL;", 2, "not a multicast GID"),
            ("a=0x1 :\n mgid=ff12:zz::1\n ALL;", 2, "bad MGID"),
            ("a=0x1 : ALL\n", 1, "not ended with ';'"),
            ("a=0x1, defmember=most : ALL;", 1, "defmember"),
        ];
        for (text, line, what) in cases {
            let e = PartitionConfig::parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")));
        }
    }

    #[test]
    fn odd_text_is_an_error_not_a_panic() {
        for text in [
            "a=0x1 : mgi\u{20ac}x;",
            "\u{20ac}=0x1 : ALL;",
            "a=0x1 : =full;",
            "a=0x1 : 0x1=;",
            "=0x1,,, : ,,;",
            ";;;",
            "a=0x1 : mgid=;",
            "a=0x1 : ALL=full : SELF;",
            "a=0x1, rate=99999999999999999999 : ALL;",
        ] {
            let _ = PartitionConfig::parse(text);
        }
        assert!(PartitionConfig::parse("a=0x1 : mgi\u{20ac}x;").is_err());
    }

    #[test]
    fn ipoib_partitions_and_mgid_lines_make_groups() {
        let c = PartitionConfig::parse(
            "Default=0x7fff,ipoib : ALL=full;\n\
             t=0x0001,ipoib,mtu=5,scope=2,scope=5 :\n\
             mgid=ff12:401b::0707,sl=1\n\
             mgid=ff15::1,Q_Key=0x11\n\
             ALL;",
        )
        .expect("parses");
        let g = partition_groups(&c);
        let mgids: Vec<String> = g
            .iter()
            .map(|x| Ipv6Addr::from(x.mgid).to_string())
            .collect();
        assert_eq!(
            mgids,
            [
                "ff12:401b:ffff::ffff:ffff",
                "ff12:401b:8001::ffff:ffff",
                "ff15:401b:8001::ffff:ffff",
                "ff12:401b:8001::707",
                "ff15::1",
            ]
        );
        assert_eq!((g[1].mtu, g[1].qkey, g[1].pkey), (5, 0x0B1B, 0x8001));
        assert_eq!((g[3].sl, g[3].qkey), (1, 0x0B1B));
        assert_eq!((g[4].qkey, g[4].scope), (0x11, 5));
    }

    #[test]
    fn shared_pkey_needs_one_full_member() {
        let a = [0x7FFF, 0x8001];
        let b = [0x7FFF, 0x0001];
        let c = [0x7FFF, 0x8002];
        assert_eq!(shared_pkey(&a, &b, None), Some(0x8001));
        assert_eq!(shared_pkey(&b, &a, None), Some(0x0001));
        assert_eq!(shared_pkey(&a, &c, None), None, "limited 0x7fff both ends");
        assert_eq!(shared_pkey(&[0xFFFF], &a, None), Some(0xFFFF));
        assert_eq!(shared_pkey(&a, &b, Some(0x7FFF)), None);
        assert_eq!(shared_pkey(&a, &b, Some(0x0001)), Some(0x8001));
    }
}
