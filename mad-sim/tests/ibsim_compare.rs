//! The simulated fabric against ibsim (Debian `ibsim-utils`), both
//! unconfigured, on every shared topology: a directed-route sweep of each
//! returns the same nodes, GUIDs, port counts, descriptions and links, and
//! the same NodeInfo and PortInfo of every port; SwitchInfo, P_KeyTable,
//! SLtoVLMappingTable, VLArbitrationTable, GUIDInfo, LinearForwardingTable
//! and MulticastForwardingTable answers are compared on a sample of nodes
//! (all nodes of the small fabrics). Every field compared is equal: the
//! differences documented in `mad_sim::fabric` are behaviours (Set
//! handling, M_Key, answers to unsupported requests), not default values.
//!
//! Each test starts its own ibsim under a unique IBSIM_SOCKNAME (the
//! workspace's `tests/support` guard) and kills it by PID when done.
//! Outside CI a missing ibsim makes the test print "NOT RUN"; with
//! CI=true it fails.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::support::sweep::{dr_sweep, Fabric as Swept};
use common::support::{self, IbSim, NEEDS_IBSIM};
use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::Transport;
use mad_core::wire::attr::{
    GuidInfo, LinearFwdTable, MulticastFwdTable, NodeType, PKeyTable, SlToVlTable, SwitchInfo,
    VlArbTable,
};
use mad_core::wire::{AttributeId, Fields, Repr};
use mad_sim::{Fabric, Topology};

/// Field-by-field differences of two wire structures.
fn field_diff(a: &dyn Fields, b: &dyn Fields) -> Vec<String> {
    let mut out = Vec::new();
    for (i, d) in a.field_descs().iter().enumerate() {
        let (x, y) = (
            format!("{:?}", a.field_value(i)),
            format!("{:?}", b.field_value(i)),
        );
        if x != y {
            out.push(format!("{}: sim {x} ibsim {y}", d.name));
        }
    }
    out
}

fn ibsim_idle(t: &mut IbSimTransport) -> Result<(), String> {
    support::sweep::ibsim_idle(t, Duration::from_millis(200))
}

fn compare_sweeps(name: &str, sim: &Swept, ib: &Swept) -> Vec<String> {
    let mut diffs = Vec::new();
    let a: Vec<u64> = sim.nodes.keys().copied().collect();
    let b: Vec<u64> = ib.nodes.keys().copied().collect();
    if a != b {
        diffs.push(format!(
            "{name}: node GUIDs differ: sim {a:x?} ibsim {b:x?}"
        ));
        return diffs;
    }
    if sim.links != ib.links {
        diffs.push(format!("{name}: links differ"));
    }
    for (guid, s) in &sim.nodes {
        let i = &ib.nodes[guid];
        for d in field_diff(&s.info, &i.info) {
            diffs.push(format!("{name} node {guid:#x} NodeInfo {d}"));
        }
        if s.desc != i.desc {
            diffs.push(format!(
                "{name} node {guid:#x} desc {:?} vs {:?}",
                s.desc, i.desc
            ));
        }
        if s.port_guids != i.port_guids {
            diffs.push(format!("{name} node {guid:#x} port GUIDs differ"));
        }
        for (p, pi) in &s.ports {
            match i.ports.get(p) {
                None => diffs.push(format!("{name} node {guid:#x} port {p}: no ibsim PortInfo")),
                Some(q) => {
                    for d in field_diff(pi, q) {
                        diffs.push(format!("{name} node {guid:#x} port {p} PortInfo {d}"));
                    }
                }
            }
        }
    }
    diffs
}

/// Attribute answers that are not part of the sweep: (attribute,
/// modifier) pairs to ask a node.
fn extra_queries(is_switch: bool, num_ports: u8) -> Vec<(AttributeId, u32)> {
    let mut q = vec![(AttributeId::GUID_INFO, 0), (AttributeId::PKEY_TABLE, 0)];
    if is_switch {
        q.extend([
            (AttributeId::SWITCH_INFO, 0),
            (AttributeId::PKEY_TABLE, 1 << 16),
            (AttributeId::SL_TO_VL_TABLE, 0),
            (
                AttributeId::SL_TO_VL_TABLE,
                (1 << 8) | u32::from(num_ports.min(2)),
            ),
            (AttributeId::VL_ARB_TABLE, (1 << 16) | 1),
            (AttributeId::VL_ARB_TABLE, (3 << 16) | 1),
            (AttributeId::LINEAR_FWD_TABLE, 0),
            (AttributeId::LINEAR_FWD_TABLE, 5),
            (AttributeId::MCAST_FWD_TABLE, 0),
        ]);
    } else {
        q.extend([
            (AttributeId::PKEY_TABLE, 1),
            (AttributeId::SL_TO_VL_TABLE, 0),
            (AttributeId::VL_ARB_TABLE, 1 << 16),
            (AttributeId::VL_ARB_TABLE, 3 << 16),
        ]);
    }
    q
}

/// Differences in one attribute answer, decoded for the message.
fn data_diff(attr: AttributeId, a: &[u8; 64], b: &[u8; 64]) -> Vec<String> {
    fn d<R: Repr + Fields>(a: &[u8], b: &[u8]) -> Vec<String> {
        field_diff(&R::parse(a).unwrap(), &R::parse(b).unwrap())
    }
    if a == b {
        return Vec::new();
    }
    match attr {
        AttributeId::SWITCH_INFO => d::<SwitchInfo>(a, b),
        AttributeId::GUID_INFO => d::<GuidInfo>(a, b),
        AttributeId::PKEY_TABLE => d::<PKeyTable>(a, b),
        AttributeId::SL_TO_VL_TABLE => d::<SlToVlTable>(a, b),
        AttributeId::VL_ARB_TABLE => d::<VlArbTable>(a, b),
        AttributeId::LINEAR_FWD_TABLE => d::<LinearFwdTable>(a, b),
        AttributeId::MCAST_FWD_TABLE => d::<MulticastFwdTable>(a, b),
        _ => vec![format!("{a:02x?} vs {b:02x?}")],
    }
}

/// Sweeps `path` with both simulators and compares; returns the
/// differences and the number of extra attribute answers compared.
fn compare_file(path: &std::path::Path) -> (Vec<String>, usize) {
    let mut diffs = Vec::new();
    let mut compared = 0usize;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let topo = Topology::load(path).unwrap();
    let fabric = Fabric::new(&topo);
    let mut sim = fabric.attach_default().unwrap();
    let ibsim = IbSim::start(path);
    let mut ib = IbSimTransport::attach(ibsim.config()).unwrap();
    assert_eq!(
        (ib.port_attrs().node_guid, ib.port_attrs().port_num),
        (sim.port_attrs().node_guid, sim.port_attrs().port_num),
        "{name}: both attach at the same port"
    );
    // One SMP at a time, so both sweeps take the same paths.
    let (s_sw, _) = dr_sweep(&mut sim, 1, |_| Err("no answer".into()))
        .unwrap_or_else(|e| panic!("{name} sim: {e}"));
    let (i_sw, _) =
        dr_sweep(&mut ib, 1, ibsim_idle).unwrap_or_else(|e| panic!("{name} ibsim: {e}"));
    diffs.extend(compare_sweeps(&name, &s_sw, &i_sw));

    // More attributes, on every node of a small fabric and every 40th
    // node of a big one.
    let every = if topo.nodes().len() > 100 { 40 } else { 1 };
    for (k, (guid, node)) in s_sw.nodes.iter().enumerate() {
        if k % every != 0 {
            continue;
        }
        let is_switch = node.info.node_type == NodeType::SWITCH;
        for (attr, amod) in extra_queries(is_switch, node.info.num_ports) {
            let req = common::Req::get(&node.path, attr, amod);
            let a = common::sim_rpc(&mut sim, &req);
            let mut waits = 0;
            let b = common::dr_rpc(&mut ib, &req, |t| {
                waits += 1;
                waits < 50 && ibsim_idle(t).is_ok()
            });
            compared += 1;
            match (a, b) {
                (Some((sa, da)), Some((sb, db))) => {
                    if sa != sb {
                        diffs.push(format!(
                            "{name} {guid:#x} {attr:?}/{amod:#x}: status {sa:#x} vs {sb:#x}"
                        ));
                    }
                    for d in data_diff(attr, &da, &db) {
                        diffs.push(format!("{name} {guid:#x} {attr:?}/{amod:#x}: {d}"));
                    }
                }
                (a, b) => diffs.push(format!(
                    "{name} {guid:#x} {attr:?}/{amod:#x}: answered sim {} ibsim {}",
                    a.is_some(),
                    b.is_some()
                )),
            }
        }
    }
    drop(ib);
    ibsim.stop();
    (diffs, compared)
}

/// Asserts that at least `at_least` extra answers were compared and that
/// no difference was found.
fn assert_agree(diffs: &[String], compared: usize, at_least: usize) {
    assert!(
        compared >= at_least,
        "compared only {compared} extra answers"
    );
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// Writes a topology file with `write` (given a fresh directory for this
/// process's files of one test), compares both simulators on it and
/// asserts they agree on at least `at_least` extra answers. Does nothing
/// (the test passes) when ibsim is missing outside CI.
fn assert_agree_on_file(
    tag: &str,
    at_least: usize,
    write: impl FnOnce(&std::path::Path) -> std::path::PathBuf,
) {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mad-sim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = write(&dir);
    let (diffs, compared) = compare_file(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_agree(&diffs, compared, at_least);
}

#[test]
fn sim_and_ibsim_answer_a_sweep_identically_on_every_topology() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let mut diffs = Vec::new();
    let mut compared = 0usize;
    for path in common::topo_files() {
        let (d, c) = compare_file(&path);
        diffs.extend(d);
        compared += c;
    }
    assert_agree(&diffs, compared, 51);
}

/// ibnetdiscover output with explicit GUIDs (absolute and relative),
/// system image GUIDs, vendor and device ids, descriptions, enhanced port
/// 0, LIDs, link widths and speeds (QDR, FDR, DDR), per-port options, a
/// module prefix, a router and an include.
const IBNETDISCOVER: &str = include_str!("../../tests/fixtures/ibnetdiscover/guids.txt");

#[test]
fn sim_and_ibsim_agree_on_ibnetdiscover_output_with_explicit_guids_and_speeds() {
    assert_agree_on_file("ibnd", 30, |dir| {
        // The hosts come from an included file (absolute path: ibsim opens
        // it relative to its working directory, this parser relative to
        // the including file).
        let hosts = dir.join("hosts.net");
        let split = IBNETDISCOVER.find("vendid=0x2c9\ndevid=0x1003").unwrap();
        std::fs::write(&hosts, &IBNETDISCOVER[split..]).unwrap();
        let main = dir.join("main.net");
        std::fs::write(
            &main,
            format!(
                "{}\ninclude \"{}\"\n",
                &IBNETDISCOVER[..split],
                hosts.display()
            ),
        )
        .unwrap();
        let topo = Topology::load(&main).unwrap();
        assert_eq!(topo.nodes().len(), 6);
        assert_eq!(
            topo.find("S-0002c90300a1b2d0")
                .map(|i| topo.nodes()[i].node_guid),
            Some(0x0002_c903_00a1_b2f0)
        );
        main
    });
}

/// The built-in default topology loads in ibsim with the same nodes,
/// GUIDs, descriptions and attribute answers.
#[test]
fn sim_and_ibsim_agree_on_the_built_in_default_topology() {
    assert_agree_on_file("default", 12, |dir| {
        let path = dir.join("default.net");
        std::fs::write(&path, mad_sim::DEFAULT_TOPOLOGY).unwrap();
        path
    });
}
