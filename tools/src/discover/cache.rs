//! libibnetdisc's fabric cache file (`ibnd_cache_fabric` /
//! `ibnd_load_fabric`, `ibnetdisc_cache.c` in rdma-core 44): what
//! `ibnetdiscover --cache` writes and `--load-cache` / `--diff` read,
//! converted to and from the discovered [`Fabric`] model.
//!
//! # Format (all integers little-endian)
//! - header, 28 bytes: magic `0x8FE7832B`, version 1, node count, port
//!   count (u32 each), the GUID of the node discovery started from (u64),
//!   max hops discovered (u32);
//! - per node, 207 bytes and 9 per port key: SMA LID (u16), SMA LMC,
//!   EnhancedPort0 flag, SwitchInfo (64 bytes), node GUID (u64), node
//!   type, number of ports, NodeInfo (64 bytes), NodeDescription (64
//!   bytes), the number of port keys, then each key: port GUID (u64) and
//!   port number;
//! - per port, 95 bytes: port GUID (u64), port number, external port
//!   number, base LID (u16), LMC, PortInfo (64 bytes), the owning node's
//!   GUID (u64), a flag "has a remote port", the remote port's GUID (u64)
//!   and number.
//!
//! Nodes are written in libibnetdisc's list order (newest first), ports in
//! the order of its port hash table (137 buckets by `HASHGUID`, newest
//! first within a bucket). Reading checks what libibnetdisc checks (magic,
//! version, every key and remote naming a port record, the from-node
//! existing, no port listed twice) and more, so that a hostile file cannot
//! build a model the formatters could trip on: counts that do not fit the
//! file, a port number beyond its node's ports, a duplicate node or port
//! record, a port listed by a node other than its owner, a remote port no
//! node lists, bytes after the last record. What the model does not keep
//! (ExtendedPortInfo, the directed routes) is not in the file either:
//! a loaded fabric has no routes, no FDR10 marks and 0 MADs used.

use std::collections::{HashMap, HashSet};
use std::fmt;

use mad_core::wire::attr::{NodeInfo, NodeType, PortInfo, SwitchInfo};
use mad_core::wire::Repr;

use super::model::{Fabric, Node, Port, PortRef};

/// The magic number a cache file starts with.
pub const MAGIC: u32 = 0x8FE7_832B;
/// The only format version there is.
pub const VERSION: u32 = 1;
/// Bytes of an SMP attribute buffer as libibnetdisc stores it.
const SMP_DATA: usize = 64;
/// Bytes of the header.
pub const HEADER_LEN: usize = 28;
/// Bytes of a node record before its port keys.
const NODE_LEN: usize = 15 + SMP_DATA * 3;
/// Bytes of one port key of a node record.
const KEY_LEN: usize = 9;
/// Bytes of a port record.
const PORT_LEN: usize = 31 + SMP_DATA;
/// libibnetdisc's hash table size (`HTSZ`).
const HTSZ: u32 = 137;

/// Why a cache file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheError(String);

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CacheError {}

fn err<T>(msg: impl Into<String>) -> Result<T, CacheError> {
    Err(CacheError(msg.into()))
}

/// libibnetdisc's `HASHGUID(guid) % HTSZ`.
fn bucket(guid: u64) -> u32 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "HASHGUID truncates to 32 bits"
    )]
    let (lo, hi) = (guid as u32, (guid >> 32) as u32);
    (lo.wrapping_mul(101) ^ hi.wrapping_mul(103)) % HTSZ
}

/// A 64-byte attribute buffer holding `r` (zeros after it).
fn smp_data<R: Repr>(r: Option<&R>) -> Result<[u8; SMP_DATA], CacheError> {
    let mut b = [0u8; SMP_DATA];
    if let Some(r) = r {
        r.emit(&mut b)
            .map_err(|e| CacheError(format!("cannot encode {}: {e}", R::NAME)))?;
    }
    Ok(b)
}

/// The cache file of `f`, as `ibnd_cache_fabric` writes it.
///
/// # Errors
/// A model attribute that does not encode (a field wider than its bits).
pub fn encode(f: &Fabric) -> Result<Vec<u8>, CacheError> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&VERSION.to_le_bytes());
    // Node and port counts, filled in at the end.
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(&f.nodes.get(f.from_node).map_or(0, Node::guid).to_le_bytes());
    out.extend_from_slice(&f.max_hops.to_le_bytes());
    let mut node_count = 0u32;
    for i in f.listed() {
        let n = &f.nodes[i];
        out.extend_from_slice(&n.smalid.to_le_bytes());
        out.push(n.smalmc);
        out.push(u8::from(n.enhanced_port0));
        out.extend_from_slice(&smp_data(n.switch_info.as_ref())?);
        out.extend_from_slice(&n.guid().to_le_bytes());
        out.push(n.node_type().0);
        out.push(n.num_ports());
        out.extend_from_slice(&smp_data(Some(&n.info))?);
        let mut desc = [0u8; SMP_DATA];
        let len = n.desc.len().min(SMP_DATA);
        desc[..len].copy_from_slice(&n.desc[..len]);
        out.extend_from_slice(&desc);
        let ports: Vec<&Port> = n.ports.iter().flatten().collect();
        out.push(u8::try_from(ports.len()).unwrap_or(u8::MAX));
        for p in ports.iter().take(usize::from(u8::MAX)) {
            out.extend_from_slice(&p.guid.to_le_bytes());
            out.push(p.num);
        }
        node_count += 1;
    }
    // libibnetdisc's port table: buckets in order, newest port first in
    // each. Ports go in as libibnetdisc added them (`port_order`: a
    // switch's port 0 can go in long before its ports 1..=N when other
    // SMPs are queued between); any port not recorded there follows in
    // node order, then port order.
    let mut buckets: Vec<Vec<(usize, &Port)>> = vec![Vec::new(); HTSZ as usize];
    let all = f.nodes.iter().enumerate().flat_map(|(i, n)| {
        n.ports.iter().flatten().map(move |p| PortRef {
            node: i,
            port: p.num,
        })
    });
    let mut seen = HashSet::new();
    for r in f.port_order.iter().copied().chain(all) {
        if let Some(p) = f.port(r).filter(|_| seen.insert(r)) {
            buckets[bucket(p.guid) as usize].push((r.node, p));
        }
    }
    let mut port_count = 0u32;
    for b in &buckets {
        for &(i, p) in b.iter().rev() {
            out.extend_from_slice(&p.guid.to_le_bytes());
            out.push(p.num);
            // External port numbers (chassis) are not in the model.
            out.push(0);
            out.extend_from_slice(&p.base_lid.to_le_bytes());
            out.push(p.lmc);
            // libibnetdisc reads a CA's or router's PortInfo through that
            // very port, so its LocalPortNum is the port's number (phase
            // 1 may have read it through the node's other port).
            let mut info = p.info.clone();
            if let Some(pi) = info.as_mut().filter(|_| !f.nodes[i].is_switch()) {
                if pi.local_port_num != 0 {
                    pi.local_port_num = p.num;
                }
            }
            out.extend_from_slice(&smp_data(info.as_ref())?);
            out.extend_from_slice(&f.nodes[i].guid().to_le_bytes());
            match p.remote.and_then(|r| f.port(r).map(|rp| (rp.guid, r.port))) {
                Some((guid, num)) => {
                    out.push(1);
                    out.extend_from_slice(&guid.to_le_bytes());
                    out.push(num);
                }
                None => out.extend_from_slice(&[0u8; 10]),
            }
            port_count += 1;
        }
    }
    out[8..12].copy_from_slice(&node_count.to_le_bytes());
    out[12..16].copy_from_slice(&port_count.to_le_bytes());
    Ok(out)
}

/// A reader over the file's bytes that names what it was reading when
/// the file ended.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &dyn Fn() -> String) -> Result<&'a [u8], CacheError> {
        match self.buf.get(self.at..self.at + n) {
            Some(s) => {
                self.at += n;
                Ok(s)
            }
            None => err(format!(
                "truncated: {} needs {n} bytes at offset {}, the file has {} left",
                what(),
                self.at,
                self.buf.len() - self.at
            )),
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// A node record as read.
struct NodeRec {
    smalid: u16,
    smalmc: u8,
    enhanced: bool,
    switch_info: SwitchInfo,
    guid: u64,
    ntype: u8,
    num_ports: u8,
    info: NodeInfo,
    desc: Vec<u8>,
    keys: Vec<(u64, u8)>,
}

/// A port record as read.
struct PortRec {
    guid: u64,
    num: u8,
    base_lid: u16,
    lmc: u8,
    info: PortInfo,
    node_guid: u64,
    remote: Option<(u64, u8)>,
}

fn parse_attr<R: Repr>(b: &[u8], what: &dyn Fn() -> String) -> Result<R, CacheError> {
    R::parse(b).map_err(|e| CacheError(format!("{}: bad {}: {e}", what(), R::NAME)))
}

fn read_node(c: &mut Cursor<'_>, i: u32, count: u32) -> Result<NodeRec, CacheError> {
    let what = || format!("node record {} of {count}", i + 1);
    let b = c.take(NODE_LEN, &what)?;
    let guid = u64_at(b, 68);
    let named = || format!("node record {} of {count} (GUID 0x{guid:016x})", i + 1);
    let mut info: NodeInfo = parse_attr(&b[78..78 + SMP_DATA], &named)?;
    let (ntype, num_ports) = (b[76], b[77]);
    // libibnetdisc uses the record's own GUID, type and port count.
    info.node_guid = guid;
    info.node_type = NodeType(ntype);
    info.num_ports = num_ports;
    let raw_desc = &b[142..142 + SMP_DATA];
    let end = raw_desc.iter().position(|&x| x == 0).unwrap_or(SMP_DATA);
    let nkeys = b[206];
    let kb = c.take(usize::from(nkeys) * KEY_LEN, &|| {
        format!("{}: {nkeys} port keys", named())
    })?;
    let keys = kb
        .chunks_exact(KEY_LEN)
        .map(|k| (u64_at(k, 0), k[8]))
        .collect();
    Ok(NodeRec {
        smalid: u16_at(b, 0),
        smalmc: b[2],
        enhanced: b[3] != 0,
        switch_info: parse_attr(&b[4..4 + SMP_DATA], &named)?,
        guid,
        ntype,
        num_ports,
        info,
        desc: raw_desc[..end].to_vec(),
        keys,
    })
}

fn read_port(c: &mut Cursor<'_>, i: u32, count: u32) -> Result<PortRec, CacheError> {
    let what = || format!("port record {} of {count}", i + 1);
    let b = c.take(PORT_LEN, &what)?;
    Ok(PortRec {
        guid: u64_at(b, 0),
        num: b[8],
        base_lid: u16_at(b, 10),
        lmc: b[12],
        info: parse_attr(&b[13..13 + SMP_DATA], &what)?,
        node_guid: u64_at(b, 77),
        remote: (b[85] != 0).then(|| (u64_at(b, 86), b[94])),
    })
}

/// Checks that `count` records of at least `each` bytes fit in what is
/// left, before anything is allocated for them.
fn fits(c: &Cursor<'_>, count: u32, each: usize, what: &str) -> Result<(), CacheError> {
    let left = c.buf.len() - c.at;
    let need = (count as usize).saturating_mul(each);
    if need > left {
        return err(format!(
            "the header promises {count} {what} ({need} bytes at least) but only {left} bytes follow"
        ));
    }
    Ok(())
}

/// Checks the magic and version of a header (its first [`HEADER_LEN`]
/// bytes); returns its node and port counts.
fn check_header(h: &[u8]) -> Result<(u32, u32), CacheError> {
    let magic = u32_at(h, 0);
    if magic != MAGIC {
        return err(format!(
            "not an ibnetdiscover cache file (magic 0x{magic:08x}, expected 0x{MAGIC:08x})"
        ));
    }
    let version = u32_at(h, 4);
    if version != VERSION {
        return err(format!(
            "unsupported cache version {version} (this reads version {VERSION})"
        ));
    }
    Ok((u32_at(h, 8), u32_at(h, 12)))
}

/// The most bytes a file whose header promises `nodes` and `ports` can
/// hold (every node with 255 port keys).
fn max_file_len(nodes: u32, ports: u32) -> u64 {
    let per_node = (NODE_LEN + usize::from(u8::MAX) * KEY_LEN) as u64;
    (HEADER_LEN as u64)
        .saturating_add(u64::from(nodes).saturating_mul(per_node))
        .saturating_add(u64::from(ports).saturating_mul(PORT_LEN as u64))
}

/// Reads the bytes of the cache file at `path` with bounded reads: a
/// regular file longer than `limit` is refused before anything is read;
/// otherwise the header is read and checked first (so `/dev/zero` or a
/// sparse file of zeros fails on its magic after 28 bytes), then at most
/// what its counts allow, never more than `limit` bytes in all.
fn read_bounded(path: &str, limit: u64) -> Result<Vec<u8>, CacheError> {
    use std::io::Read;
    let named = |e: &dyn fmt::Display| CacheError(format!("{path}: {e}"));
    let what = "an ibnetdiscover cache file";
    let file = std::fs::File::open(path).map_err(|e| named(&e))?;
    if let Ok(m) = file.metadata() {
        if m.is_file() && m.len() > limit {
            return Err(named(&mad_core::limits::too_large(limit, what)));
        }
    }
    let mut buf = Vec::with_capacity(HEADER_LEN);
    let mut file = file;
    (&mut file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut buf)
        .map_err(|e| named(&e))?;
    if buf.len() < HEADER_LEN {
        // decode names the truncation.
        return Ok(buf);
    }
    let (nodes, ports) = check_header(&buf).map_err(|e| named(&e))?;
    // One byte past what the counts allow (decode names the bytes after
    // the last record) or past the limit.
    let most = max_file_len(nodes, ports).min(limit);
    file.take(most - HEADER_LEN as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| named(&e))?;
    if buf.len() as u64 > limit {
        return Err(named(&mad_core::limits::too_large(limit, what)));
    }
    Ok(buf)
}

/// Reads a cache file into the model, as `ibnd_load_fabric` does (the
/// node list in the file's order, newest first).
///
/// # Errors
/// A file that is not a version-1 cache, is truncated, or whose records
/// do not make one consistent fabric: the message names what is wrong.
pub fn decode(buf: &[u8]) -> Result<Fabric, CacheError> {
    let mut c = Cursor { buf, at: 0 };
    let h = c.take(HEADER_LEN, &|| "the header".to_owned())?;
    let (node_count, port_count) = check_header(h)?;
    let from_guid = u64_at(h, 16);
    let max_hops = u32_at(h, 24);
    fits(&c, node_count, NODE_LEN, "nodes")?;
    let mut nodes = Vec::with_capacity(node_count as usize);
    for i in 0..node_count {
        nodes.push(read_node(&mut c, i, node_count)?);
    }
    fits(&c, port_count, PORT_LEN, "ports")?;
    let mut ports = Vec::with_capacity(port_count as usize);
    for i in 0..port_count {
        ports.push(read_port(&mut c, i, port_count)?);
    }
    if c.at != buf.len() {
        return err(format!(
            "{} bytes after the last port record",
            buf.len() - c.at
        ));
    }
    build(nodes, ports, from_guid, max_hops)
}

/// Links the records into the model.
fn build(
    recs: Vec<NodeRec>,
    ports: Vec<PortRec>,
    from_guid: u64,
    max_hops: u32,
) -> Result<Fabric, CacheError> {
    // The model keeps nodes oldest first; the file lists them newest first.
    let n = recs.len();
    let mut by_guid = HashMap::with_capacity(n);
    for (j, r) in recs.iter().enumerate() {
        if by_guid.insert(r.guid, n - 1 - j).is_some() {
            return err(format!("two node records have GUID 0x{:016x}", r.guid));
        }
    }
    let mut port_by_key = HashMap::with_capacity(ports.len());
    for (j, p) in ports.iter().enumerate() {
        if !by_guid.contains_key(&p.node_guid) {
            return err(format!(
                "port record 0x{:016x} port {} belongs to node 0x{:016x}, which has no node record",
                p.guid, p.num, p.node_guid
            ));
        }
        if port_by_key.insert((p.guid, p.num), j).is_some() {
            return err(format!(
                "two port records for port GUID 0x{:016x} port {}",
                p.guid, p.num
            ));
        }
    }
    let Some(&from_node) = by_guid.get(&from_guid) else {
        return err(format!(
            "the node discovery started from (0x{from_guid:016x}) has no node record"
        ));
    };
    let mut used = vec![false; ports.len()];
    let mut out: Vec<Option<Node>> = vec![None; n];
    for r in recs.into_iter().rev() {
        let idx = by_guid[&r.guid];
        let mut slots: Vec<Option<Port>> = vec![None; usize::from(r.num_ports) + 1];
        for &(guid, num) in &r.keys {
            let Some(&j) = port_by_key.get(&(guid, num)) else {
                return err(format!(
                    "node 0x{:016x} lists port GUID 0x{guid:016x} port {num}, which has no port record",
                    r.guid
                ));
            };
            let p = &ports[j];
            if p.node_guid != r.guid {
                return err(format!(
                    "node 0x{:016x} lists port GUID 0x{guid:016x} port {num}, which belongs to node 0x{:016x}",
                    r.guid, p.node_guid
                ));
            }
            if used[j] {
                return err(format!(
                    "port GUID 0x{guid:016x} port {num} is listed twice"
                ));
            }
            let Some(slot) = slots.get_mut(usize::from(num)) else {
                return err(format!(
                    "node 0x{:016x} lists port {num} but has {} ports",
                    r.guid, r.num_ports
                ));
            };
            used[j] = true;
            let remote = match p.remote {
                None => None,
                Some(key) => Some(remote_ref(key, p, &ports, &port_by_key, &by_guid)?),
            };
            *slot = Some(Port {
                num,
                guid,
                info: Some(p.info.clone()),
                ext_speed_active: 0,
                base_lid: p.base_lid,
                lmc: p.lmc,
                remote,
            });
        }
        out[idx] = Some(Node {
            info: r.info,
            desc: r.desc,
            enhanced_port0: r.enhanced,
            smalid: r.smalid,
            smalmc: r.smalmc,
            path: Vec::new(),
            ports: slots,
            switch_info: (r.ntype == NodeType::SWITCH.0).then_some(r.switch_info),
        });
    }
    let nodes: Vec<Node> = out.into_iter().flatten().collect();
    // A remote port must be one a node lists (libibnetdisc would point at
    // a port outside every node; the model cannot).
    for (i, node) in nodes.iter().enumerate() {
        for p in node.ports.iter().flatten() {
            if let Some(r) = p.remote {
                if nodes[r.node].port(r.port).is_none() {
                    return err(format!(
                        "port {} of node 0x{:016x} is linked to port {} of node 0x{:016x}, which that node does not list",
                        p.num,
                        nodes[i].guid(),
                        r.port,
                        nodes[r.node].guid()
                    ));
                }
            }
        }
    }
    // The order ports went into libibnetdisc's table: each bucket's
    // records reversed (the file lists them newest first).
    let mut order: Vec<(u32, std::cmp::Reverse<usize>)> = (0..ports.len())
        .filter(|&j| used[j])
        .map(|j| (bucket(ports[j].guid), std::cmp::Reverse(j)))
        .collect();
    order.sort_unstable();
    let port_order = order
        .into_iter()
        .map(|(_, std::cmp::Reverse(j))| PortRef {
            node: by_guid[&ports[j].node_guid],
            port: ports[j].num,
        })
        .collect();
    let from_port = nodes[from_node].info.local_port_num;
    Ok(Fabric {
        nodes,
        from_node,
        from_port,
        total_mads: 0,
        max_hops,
        show_lines: Vec::new(),
        port_order,
    })
}

/// The model reference of a port record's remote key.
fn remote_ref(
    key: (u64, u8),
    p: &PortRec,
    ports: &[PortRec],
    port_by_key: &HashMap<(u64, u8), usize>,
    by_guid: &HashMap<u64, usize>,
) -> Result<PortRef, CacheError> {
    let Some(&k) = port_by_key.get(&key) else {
        return err(format!(
            "port GUID 0x{:016x} port {} is linked to port GUID 0x{:016x} port {}, which has no port record",
            p.guid, p.num, key.0, key.1
        ));
    };
    Ok(PortRef {
        node: by_guid[&ports[k].node_guid],
        port: key.1,
    })
}

/// Reads and decodes the cache file at `path`, at most
/// [`MAX_CACHE_FILE_LEN`](crate::limits::MAX_CACHE_FILE_LEN) bytes of it.
///
/// # Errors
/// The file cannot be read, is longer than the limit (the message names
/// the file and the limit), or [`decode`] rejects it.
pub fn load(path: &str) -> Result<Fabric, CacheError> {
    let buf = read_bounded(path, crate::limits::MAX_CACHE_FILE_LEN)?;
    decode(&buf).map_err(|e| CacheError(format!("{path}: {e}")))
}

/// Writes the cache file of `f` to `path` as `ibnd_cache_fabric` does:
/// an existing file is removed first, the new one created with mode
/// 0644 (and removed again if writing fails).
///
/// # Errors
/// The file cannot be removed, created or written.
pub fn store(f: &Fabric, path: &str) -> Result<(), CacheError> {
    use std::io::Write;
    let bytes = encode(f)?;
    let io = |e: std::io::Error| CacheError(format!("{path}: {e}"));
    if std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_file(path).map_err(io)?;
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o644);
    let mut file = o.open(path).map_err(io)?;
    if let Err(e) = file.write_all(&bytes) {
        let _ = std::fs::remove_file(path);
        return Err(io(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
