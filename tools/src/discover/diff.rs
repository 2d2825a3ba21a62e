//! `ibnetdiscover --diff`: what differs between a cached fabric and the
//! current one, in the topology output's lines with `< ` (the cache) and
//! `> ` (now) prefixes, byte for byte as ibnetdiscover.c's `diff()`.
//!
//! Per node type asked for (switches, CAs, routers; each newest first):
//! every node of the cache missing now (or present but different, as the
//! checks say), then every node present now but not in the cache.

use std::fmt::Write as _;

use super::format::{node_head, port_line, TopologyOptions};
use super::model::{Fabric, Node, Port};
use mad_core::wire::attr::NodeType;

/// Which checks `--diffcheck` asked for (ibnetdiscover's `DIFF_FLAG_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffCheck(u32);

impl DiffCheck {
    /// Switches.
    pub const SWITCH: Self = Self(0x01);
    /// CAs.
    pub const CA: Self = Self(0x02);
    /// Routers.
    pub const ROUTER: Self = Self(0x04);
    /// Port connections.
    pub const PORT: Self = Self(0x08);
    /// LIDs.
    pub const LID: Self = Self(0x10);
    /// Node descriptions.
    pub const NODE_DESC: Self = Self(0x20);
    /// What ibnetdiscover checks without `--diffcheck`.
    pub const DEFAULT: Self = Self(0x0f);

    fn has(self, f: Self) -> bool {
        self.0 & f.0 != 0
    }

    /// Parses ibnetdiscover's `--diffcheck` keys (`sw`, `ca`, `router`,
    /// `port`, `lid`, `nodedesc`): see [`parse_keys`].
    ///
    /// # Errors
    /// The first key that is none of these (ibnetdiscover's message:
    /// `invalid diff check key: KEY`).
    pub fn parse(keys: &str) -> Result<Self, String> {
        parse_keys(
            keys,
            &[
                ("sw", Self::SWITCH.0),
                ("ca", Self::CA.0),
                ("router", Self::ROUTER.0),
                ("port", Self::PORT.0),
                ("lid", Self::LID.0),
                ("nodedesc", Self::NODE_DESC.0),
            ],
        )
        .map(Self)
    }

    fn without(self, f: Self) -> Self {
        Self(self.0 & !f.0)
    }
}

/// A `--diffcheck` argument as the diags tools parse it: comma-separated
/// keys of `table` (any case; empty items skipped as `strtok` does), their
/// bits or'ed.
///
/// # Errors
/// The first unknown key: `invalid diff check key: KEY`.
pub fn parse_keys(keys: &str, table: &[(&str, u32)]) -> Result<u32, String> {
    let mut v = 0;
    for k in keys.split(',').filter(|k| !k.is_empty()) {
        match table.iter().find(|(name, _)| name.eq_ignore_ascii_case(k)) {
            Some((_, bit)) => v |= bit,
            None => return Err(format!("invalid diff check key: {k}")),
        }
    }
    Ok(v)
}

/// `text` with `prefix` before every line but a leading blank one.
fn prefixed(text: &str, prefix: &str) -> String {
    let mut o = String::new();
    for line in text.split_inclusive('\n') {
        if line != "\n" {
            o.push_str(prefix);
        }
        o.push_str(line);
    }
    o
}

/// `out_switch` / `out_ca` with an ID prefix and a detail prefix.
fn header(f: &Fabric, i: usize, opts: &TopologyOptions<'_>, id: &str, detail: &str) -> String {
    let head = node_head(f, i, opts);
    let body = head.strip_suffix('\n').unwrap_or(&head);
    let (ids, last) = body.rsplit_once('\n').unwrap_or(("", body));
    format!("{}\n{detail}{last}\n", prefixed(ids, id))
}

/// `out_switch_detail` / `out_ca_detail`: the detail line, no newline.
fn detail(f: &Fabric, i: usize, opts: &TopologyOptions<'_>, prefix: &str) -> String {
    let head = node_head(f, i, opts);
    let body = head.strip_suffix('\n').unwrap_or(&head);
    let last = body.rsplit_once('\n').map_or(body, |(_, l)| l);
    format!("{prefix}{last}")
}

/// One side of a comparison: a fabric and its line prefix.
struct Side<'a> {
    f: &'a Fabric,
    prefix: &'static str,
}

/// libibnetdisc compares the 64-byte descriptions.
fn same_desc(a: &Node, b: &Node) -> bool {
    a.desc == b.desc
}

fn remote<'a>(f: &'a Fabric, p: &Port) -> Option<(&'a Node, &'a Port)> {
    let r = p.remote?;
    Some((f.nodes.get(r.node)?, f.port(r)?))
}

struct NodeDiff<'a, 'o> {
    one: Side<'a>,
    two: Side<'a>,
    i1: usize,
    opts: &'a TopologyOptions<'o>,
    header_out: bool,
}

impl NodeDiff<'_, '_> {
    /// `diff_iter_out_header`: the plain header, once.
    fn header_once(&mut self, o: &mut String) {
        if !self.header_out {
            o.push_str(&header(self.one.f, self.i1, self.opts, "", ""));
            self.header_out = true;
        }
    }

    fn port_out(&self, o: &mut String, side: &Side<'_>, node: usize, port: u8) {
        let line = port_line(side.f, node, port, self.opts);
        if !line.is_empty() {
            o.push_str(side.prefix);
            o.push_str(&line);
        }
    }

    /// `diff_ports`.
    fn ports(&mut self, o: &mut String, i2: usize, flags: DiffCheck) {
        let (f1, f2) = (self.one.f, self.two.f);
        let n1 = &f1.nodes[self.i1];
        let n2 = &f2.nodes[i2];
        for p in 1..=n1.num_ports() {
            let (p1, p2) = (n1.port(p), n2.port(p));
            let (r1, r2) = (
                p1.and_then(|x| remote(f1, x)),
                p2.and_then(|x| remote(f2, x)),
            );
            let (mut out1, mut out2) = (false, false);
            if flags.has(DiffCheck::PORT) {
                match (p1, p2) {
                    (Some(_), None) => out1 = true,
                    (None, Some(_)) => out2 = true,
                    (Some(a), Some(b)) => {
                        if r1.is_some() && r2.is_none() {
                            out1 = true;
                        } else if r1.is_none() && r2.is_some() {
                            out2 = true;
                        } else if a.guid != b.guid
                            || matches!((r1, r2), (Some((_, x)), Some((_, y))) if x.guid != y.guid)
                        {
                            out1 = true;
                            out2 = true;
                        }
                    }
                    (None, None) => {}
                }
            }
            let both = matches!((p1, p2), (Some(_), Some(_)));
            if flags.has(DiffCheck::LID) && both && p1.map(|x| x.base_lid) != p2.map(|x| x.base_lid)
            {
                out1 = true;
                out2 = true;
            }
            if let (true, Some((rn1, rp1)), Some((rn2, rp2))) = (both, r1, r2) {
                // ibnetdiscover makes this check twice.
                if flags.has(DiffCheck::PORT)
                    && flags.has(DiffCheck::NODE_DESC)
                    && !same_desc(rn1, rn2)
                {
                    out1 = true;
                    out2 = true;
                }
                if flags.has(DiffCheck::PORT)
                    && flags.has(DiffCheck::LID)
                    && rp1.base_lid != rp2.base_lid
                {
                    out1 = true;
                    out2 = true;
                }
            }
            if out1 {
                self.header_once(o);
                self.port_out(o, &self.one, self.i1, p);
            }
            if out2 {
                self.header_once(o);
                self.port_out(o, &self.two, i2, p);
            }
        }
    }

    /// `diff_iter_func`.
    fn run(&mut self, o: &mut String, flags: DiffCheck) {
        let (f1, f2) = (self.one.f, self.two.f);
        let n1 = &f1.nodes[self.i1];
        let Some(i2) = f2.find(n1.guid()) else {
            let p = self.one.prefix;
            o.push_str(&header(f1, self.i1, self.opts, p, p));
            for port in 1..=n1.num_ports() {
                if n1.port(port).is_some_and(|x| x.remote.is_some()) {
                    self.port_out(o, &self.one, self.i1, port);
                }
            }
            return;
        };
        if !(flags.has(DiffCheck::PORT)
            || flags.has(DiffCheck::LID)
            || flags.has(DiffCheck::NODE_DESC))
        {
            return;
        }
        let n2 = &f2.nodes[i2];
        if (flags.has(DiffCheck::LID) && n1.smalid != n2.smalid)
            || (flags.has(DiffCheck::NODE_DESC) && !same_desc(n1, n2))
        {
            o.push_str(&header(f1, self.i1, self.opts, "", self.one.prefix));
            o.push_str(&detail(f2, i2, self.opts, self.two.prefix));
            o.push('\n');
            self.header_out = true;
        }
        if n1.num_ports() != n2.num_ports() {
            self.header_once(o);
            let _ = writeln!(o, "{}numports = {}", self.one.prefix, n1.num_ports());
            let _ = writeln!(o, "{}numports = {}", self.two.prefix, n2.num_ports());
            return;
        }
        if flags.has(DiffCheck::PORT) || flags.has(DiffCheck::LID) {
            self.ports(o, i2, flags);
        }
    }
}

/// `diff_common` for one node type.
fn diff_type(
    o: &mut String,
    old: &Fabric,
    new: &Fabric,
    t: NodeType,
    flags: DiffCheck,
    opts: &TopologyOptions<'_>,
) {
    for i in old.listed_of(t) {
        NodeDiff {
            one: Side {
                f: old,
                prefix: "< ",
            },
            two: Side {
                f: new,
                prefix: "> ",
            },
            i1: i,
            opts,
            header_out: false,
        }
        .run(o, flags);
    }
    // The other way round only finds nodes the cache lacks.
    let only_new = flags
        .without(DiffCheck::PORT)
        .without(DiffCheck::LID)
        .without(DiffCheck::NODE_DESC);
    for i in new.listed_of(t) {
        NodeDiff {
            one: Side {
                f: new,
                prefix: "> ",
            },
            two: Side {
                f: old,
                prefix: "< ",
            },
            i1: i,
            opts,
            header_out: false,
        }
        .run(o, only_new);
    }
}

/// ibnetdiscover's `--diff` output: `old` (the cache given to `--diff`)
/// against `new` (the fabric discovered or loaded now).
#[must_use]
pub fn diff(old: &Fabric, new: &Fabric, flags: DiffCheck, opts: &TopologyOptions<'_>) -> String {
    let mut o = String::new();
    for (flag, t) in [
        (DiffCheck::SWITCH, NodeType::SWITCH),
        (DiffCheck::CA, NodeType::CA),
        (DiffCheck::ROUTER, NodeType::ROUTER),
    ] {
        if flags.has(flag) {
            diff_type(&mut o, old, new, t, flags, opts);
        }
    }
    o
}
