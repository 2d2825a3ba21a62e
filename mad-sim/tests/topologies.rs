//! Every topology file in tests/fixtures/topologies parses, with the node,
//! switch and link counts the file says (generated files) or that ibsim's
//! examples have, and a consistent link table.

#![allow(clippy::unwrap_used, reason = "test helpers")]

use std::collections::HashSet;

mod common;

use common::{topo_dir, topo_files as files};
use mad_sim::topology::{NodeKind, Topology};

/// `# HCAs=324 switches=27 links=648` from a generated file's header.
fn header_counts(text: &str) -> Option<(usize, usize, usize)> {
    let line = text.lines().find(|l| l.starts_with("# HCAs="))?;
    let mut it = line[2..].split_whitespace().map(|kv| {
        kv.split('=')
            .nth(1)
            .unwrap()
            .replace(',', "")
            .parse::<usize>()
            .unwrap()
    });
    Some((it.next()?, it.next()?, it.next()?))
}

#[test]
fn every_shared_topology_parses_with_the_counts_it_states() {
    let files = files();
    assert!(
        files.len() >= 8,
        "expected the shared topologies, found {files:?}"
    );
    let known = [
        ("net", (2, 2, 4)),
        ("net.1", (2, 1, 2)),
        ("net.2sw2path", (2, 2, 4)),
        ("net.2sw2path4hca", (4, 2, 6)),
        ("net.2sw2path4hca2port", (2, 2, 6)),
    ];
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let t = Topology::load(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let cas = t.nodes().iter().filter(|n| n.kind == NodeKind::Ca).count();
        let got = (cas, t.switch_count(), t.links().len());
        let want = header_counts(&text)
            .or_else(|| known.iter().find(|(n, _)| *n == name).map(|(_, c)| *c))
            .unwrap_or_else(|| panic!("{name}: no expected counts"));
        assert_eq!(got, want, "{name}: (CAs, switches, links)");

        // Links are symmetric and each port is in at most one link.
        let mut used = HashSet::new();
        for l in t.links() {
            assert!(used.insert(l.a) && used.insert(l.b), "{name}: port reused");
            assert_eq!(t.port(l.a).unwrap().remote, Some(l.b));
            assert_eq!(t.port(l.b).unwrap().remote, Some(l.a));
        }
        // Node GUIDs and port GUIDs are unique; CA ports are node GUID + n.
        let mut guids = HashSet::new();
        for n in t.nodes() {
            assert!(guids.insert(n.node_guid), "{name}: duplicate node GUID");
            if !n.is_switch() {
                for p in n.existing_ports() {
                    assert_eq!(p.guid, n.node_guid + u64::from(p.num));
                }
            }
        }
        assert!(t.default_port().is_some());
    }
}

#[test]
fn generated_fat_trees_put_a_ca_first_and_number_guids_like_ibsim() {
    let t = Topology::load(topo_dir().join("net.medium")).unwrap();
    let first = &t.nodes()[0];
    assert_eq!(first.kind, NodeKind::Ca);
    assert_eq!(first.node_guid, 0x10_0000);
    // One-port CAs take 2 GUIDs each; switches 1 each from 0x200000.
    let cas: Vec<u64> = t
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Ca)
        .map(|n| n.node_guid)
        .collect();
    assert!(cas
        .iter()
        .enumerate()
        .all(|(i, g)| *g == 0x10_0000 + 2 * i as u64));
    let sws: Vec<u64> = t
        .nodes()
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.node_guid)
        .collect();
    assert!(sws
        .iter()
        .enumerate()
        .all(|(i, g)| *g == 0x20_0000 + i as u64));
}

/// Each of the four malformed-topology cases of issue 6, written to a
/// file: refused with the file, the line and what is wrong.
#[test]
fn malformed_files_are_refused_with_file_line_and_reason() {
    let dir = std::env::temp_dir().join(format!("mad-sim-bad-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "bad-port",
            "Switch\t4 \"S\"\n[1]\t\"H\"[1]\n[9]\t\"H\"[2]\n\nHca\t2 \"H\"\n[1]\t\"S\"[1]\n",
            3,
            "bad port number 9 (node \"S\" has ports 1-4)",
        ),
        (
            "missing-node",
            "Switch\t4 \"S\"\n[1]\t\"H\"[1]\n[2]\t\"Ghost\"[1]\n\nHca\t1 \"H\"\n[1]\t\"S\"[1]\n",
            3,
            "node \"S\" port 2 is linked to unknown node \"Ghost\"",
        ),
        (
            "duplicate-guid",
            "caguid=0x500\nHca\t1 \"A\"\n\ncaguid=0x500\nHca\t1 \"B\"\n",
            5,
            "GUID 0x0000000000000500 of node \"B\" is already used by node \"A\"",
        ),
        (
            "one-sided",
            "Switch\t4 \"S\"\n[1]\t\"H\"[1]\n[2]\t\"H2\"[1]\n\nHca\t1 \"H\"\n[1]\t\"S\"[1]\n\nHca\t1 \"H2\"\n",
            3,
            "node \"S\" port 2 says it is linked to \"H2\" port 1, but that port",
        ),
    ];
    for (name, text, line, what) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let e = Topology::load(&path).unwrap_err();
        let msg = e.to_string();
        let want = format!("{}:{line}: ", path.display());
        assert!(msg.starts_with(&want), "{name}: {msg}");
        assert!(msg.contains(what), "{name}: {msg}");
        assert_eq!(e.location.line, line, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
