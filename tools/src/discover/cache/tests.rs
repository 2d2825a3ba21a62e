//! The cache file: a discovered fabric survives a write and a read, and
//! every kind of broken file is refused with a message naming the fault.

use std::path::PathBuf;
use std::time::Duration;

use super::{bucket, decode, encode, CacheError, HEADER_LEN, MAGIC, NODE_LEN, PORT_LEN};
use crate::discover::gather::GatherOptions;
use crate::discover::{discover_transport, Fabric};
use crate::session::sim::bring_up;

fn discovered(name: &str) -> Fabric {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = [
        here.join("tests/fixtures/topologies"),
        here.join("../tests/fixtures/topologies"),
    ]
    .into_iter()
    .map(|d| d.join(name))
    .find(|p| p.exists())
    .unwrap();
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let mut port = sf.attach(sf.endpoint_at(None).unwrap()).unwrap();
    let idle = |_: &mut mad_sim::SimPort, max: Duration| {
        std::thread::sleep(max.min(Duration::from_micros(200)));
        Ok(())
    };
    discover_transport(
        &mut port,
        &GatherOptions::default(),
        false,
        idle,
        &mut |_| {},
    )
    .unwrap()
    .fabric
}

/// What a cache file keeps of a fabric (routes, MAD counts, FDR10 marks
/// and --show lines are not in it).
fn cached_part(f: &Fabric) -> Fabric {
    let mut f = f.clone();
    f.total_mads = 0;
    f.show_lines.clear();
    f.from_port = f.nodes[f.from_node].info.local_port_num;
    // The table's order per bucket is what the file keeps.
    let guids: Vec<u64> = f
        .port_order
        .iter()
        .map(|&r| f.port(r).map_or(0, |p| p.guid))
        .collect();
    let mut order: Vec<(u32, usize)> = guids.iter().map(|&g| bucket(g)).zip(0..).collect();
    order.sort_unstable();
    f.port_order = order.into_iter().map(|(_, j)| f.port_order[j]).collect();
    for n in &mut f.nodes {
        n.path.clear();
        let ca = !n.is_switch();
        for p in n.ports.iter_mut().flatten() {
            p.ext_speed_active = 0;
            // A CA port's PortInfo as read through that port.
            if let Some(pi) = p.info.as_mut().filter(|pi| ca && pi.local_port_num != 0) {
                pi.local_port_num = p.num;
            }
        }
    }
    f
}

fn fails(buf: &[u8]) -> String {
    match decode(buf) {
        Ok(_) => panic!("a broken file was accepted"),
        Err(CacheError(m)) => m,
    }
}

#[test]
fn a_discovered_fabric_reads_back_as_it_was_written() {
    for name in ["net.2sw2path4hca2port", "net.odd-names", "net.medium"] {
        let f = discovered(name);
        let bytes = encode(&f).unwrap();
        let back = decode(&bytes).unwrap();
        assert_eq!(back, cached_part(&f), "{name}");
        // And writing what was read gives the same bytes again.
        assert_eq!(encode(&back).unwrap(), bytes, "{name}");
    }
}

#[test]
fn the_layout_is_libibnetdiscs() {
    let f = discovered("net.2sw2path4hca2port");
    let b = encode(&f).unwrap();
    assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), MAGIC);
    assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 1);
    let nodes = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    let ports = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    assert_eq!(nodes, f.nodes.len());
    let keys: usize = f
        .nodes
        .iter()
        .map(|n| n.ports.iter().flatten().count())
        .sum();
    assert_eq!(ports, keys);
    assert_eq!(
        b.len(),
        HEADER_LEN + nodes * NODE_LEN + keys * 9 + ports * PORT_LEN
    );
    let from = u64::from_le_bytes(b[16..24].try_into().unwrap());
    assert_eq!(from, f.nodes[f.from_node].guid());
    // The first node record is the newest node.
    let first = u64::from_le_bytes(b[HEADER_LEN + 68..HEADER_LEN + 76].try_into().unwrap());
    assert_eq!(first, f.nodes.last().unwrap().guid());
}

#[test]
fn every_truncation_is_refused_by_what_it_cut() {
    let b = encode(&discovered("net.2sw2path4hca2port")).unwrap();
    for len in 0..b.len() {
        let m = fails(&b[..len]);
        assert!(
            m.contains("truncated") || m.contains("promises"),
            "cut at {len}: {m}"
        );
    }
    assert!(fails(&b[..10]).contains("the header"));
    assert!(fails(&b[..HEADER_LEN + 5]).contains("promises"));
}

#[test]
fn a_foreign_or_newer_file_is_refused() {
    let mut b = encode(&discovered("net")).unwrap();
    b[0] ^= 1;
    assert!(fails(&b).contains("not an ibnetdiscover cache file"));
    b[0] ^= 1;
    b[4] = 2;
    assert!(fails(&b).contains("unsupported cache version 2"));
    b[4] = 1;
    b.push(0);
    assert!(fails(&b).contains("1 bytes after the last port record"));
}

#[test]
fn counts_beyond_the_file_allocate_nothing_and_are_refused() {
    let mut b = encode(&discovered("net")).unwrap();
    b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(fails(&b).contains("promises 4294967295 nodes"));
}

/// Byte offset of the node record whose GUID is `guid`.
fn node_at(b: &[u8], guid: u64) -> usize {
    let n = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let mut at = HEADER_LEN;
    for _ in 0..n {
        if u64::from_le_bytes(b[at + 68..at + 76].try_into().unwrap()) == guid {
            return at;
        }
        at += NODE_LEN + usize::from(b[at + 206]) * 9;
    }
    panic!("no node 0x{guid:x}");
}

#[test]
fn inconsistent_records_are_refused_by_name() {
    let f = discovered("net.2sw2path4hca2port");
    let b = encode(&f).unwrap();
    let sw = f
        .nodes
        .iter()
        .find(|n| n.is_switch())
        .map(crate::discover::Node::guid)
        .unwrap();
    let at = node_at(&b, sw);
    // Port number beyond the node's ports.
    let mut x = b.clone();
    x[at + 77] = 1;
    assert!(fails(&x).contains("but has 1 ports"), "{}", fails(&x));
    // A key naming no port record.
    let mut x = b.clone();
    x[at + 207 + 8] = 200;
    assert!(fails(&x).contains("which has no port record"));
    // The from-node missing.
    let mut x = b.clone();
    x[16] ^= 0x55;
    assert!(fails(&x).contains("discovery started from"));
    // The same node twice.
    let mut x = b.clone();
    let first = HEADER_LEN;
    let second = first + NODE_LEN + usize::from(x[first + 206]) * 9;
    let g: [u8; 8] = x[first + 68..first + 76].try_into().unwrap();
    x[second + 68..second + 76].copy_from_slice(&g);
    assert!(fails(&x).contains("two node records"));
}

#[test]
fn no_single_corrupted_byte_panics() {
    let b = encode(&discovered("net.2sw2path4hca2port")).unwrap();
    for i in 0..b.len() {
        for v in [0u8, 0xff, b[i] ^ 0x01] {
            let mut x = b.clone();
            x[i] = v;
            // Either a fabric or an error; never a panic.
            let _ = decode(&x);
        }
    }
}
