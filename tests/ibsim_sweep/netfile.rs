//! The topology file `net`, read independently of ibsim, against the
//! fixtures.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::sweep::width_speed;
use mad_core::wire::attr::{
    GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, NodeType, PKeyTable,
    PhysPortState, PortInfo, PortState, SlToVlTable, SwitchInfo, VlArbTable,
};
use mad_core::wire::smp::Smp;
use mad_core::wire::Repr;

use super::*;
use crate::captures::{fixture, CAPTURES};

// --- The topology file `net`, read independently of ibsim.

/// A node of a topology file: kind, port count, links (port -> (peer
/// name, peer port, width)).
#[derive(Debug)]
pub(crate) struct NetNode {
    pub(crate) switch: bool,
    pub(crate) ports: u8,
    pub(crate) links: BTreeMap<u8, (String, u8, Option<u8>)>,
}

/// Reads the nodes of an ibsim topology file, in file order.
pub(crate) fn read_netfile(path: &Path) -> Vec<(String, NetNode)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut nodes: Vec<(String, NetNode)> = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if line.starts_with("Switch") || line.starts_with("Hca") {
            let mut it = line.split('"');
            let words: Vec<&str> = it.next().unwrap().split_whitespace().collect();
            let name = it.next().unwrap().to_owned();
            nodes.push((
                name,
                NetNode {
                    switch: words[0] == "Switch",
                    ports: words[1].parse().unwrap(),
                    links: BTreeMap::new(),
                },
            ));
        } else if let Some(rest) = line.strip_prefix('[') {
            let (port, rest) = rest.split_once(']').unwrap();
            let mut q = rest.split('"');
            q.next();
            let peer = q.next().unwrap().to_owned();
            let after = q.next().unwrap();
            let peer_port = after
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let width = after.split("w=").nth(1).map(|w| w.trim().parse().unwrap());
            nodes
                .last_mut()
                .unwrap()
                .1
                .links
                .insert(port.parse().unwrap(), (peer, peer_port, width));
        }
    }
    nodes
}

/// Node GUIDs the way ibsim hands them out (`sim_net.c` `new_node`): CAs
/// from 0x100000 and switches from 0x200000, in file order; a CA takes
/// `ports + 1` GUIDs (node GUID, then one per port), a switch one.
pub(crate) fn ibsim_guids(nodes: &[(String, NetNode)]) -> BTreeMap<String, u64> {
    let (mut ca, mut sw) = (0x10_0000u64, 0x20_0000u64);
    nodes
        .iter()
        .map(|(name, n)| {
            let g = if n.switch {
                sw += 1;
                sw - 1
            } else {
                ca += u64::from(n.ports) + 1;
                ca - u64::from(n.ports) - 1
            };
            (name.clone(), g)
        })
        .collect()
}

#[test]
pub(crate) fn fixtures_parse_to_what_the_topology_file_says() {
    let net = read_netfile(&topology("net"));
    let guids = ibsim_guids(&net);
    let node = |name: &str| &net.iter().find(|(n, _)| n == name).unwrap().1;
    let (sw1, hca1) = (node("Switch1"), node("Hca1"));

    let ni = NodeInfo::parse(data(&fixture("node_info_switch1.hex"))).unwrap();
    assert_eq!(ni.node_type, NodeType::SWITCH);
    assert_eq!(ni.num_ports, sw1.ports);
    assert_eq!(
        (ni.node_guid, ni.port_guid, ni.system_image_guid),
        (guids["Switch1"], guids["Switch1"], guids["Switch1"])
    );
    assert_eq!(ni.local_port_num, 0);
    assert_eq!(
        ni.to_vec().unwrap(),
        data(&fixture("node_info_switch1.hex"))[..40].to_vec()
    );

    let ni = NodeInfo::parse(data(&fixture("node_info_hca1.hex"))).unwrap();
    assert_eq!(ni.node_type, NodeType::CA);
    assert_eq!(ni.num_ports, hca1.ports);
    assert_eq!(ni.node_guid, guids["Hca1"]);
    // Entered at Hca1 port 1 (Switch1 port 1 links to it): port GUID is
    // node GUID + 1.
    assert_eq!(sw1.links[&1], ("Hca1".to_owned(), 1, None));
    assert_eq!((ni.local_port_num, ni.port_guid), (1, guids["Hca1"] + 1));

    for (file, name) in [
        ("node_desc_switch1.hex", "Switch1"),
        ("node_desc_hca1.hex", "Hca1"),
    ] {
        assert_eq!(
            NodeDescription::parse(data(&fixture(file))).unwrap().text(),
            name,
            "{file}"
        );
    }

    // Linked ports: 4x (no w= given; ibsim's default), SDR, LinkUp,
    // Initialize (no SM has run). The unlinked port: Down / Polling.
    let p1 = PortInfo::parse(data(&fixture("port_info_switch1_p1.hex"))).unwrap();
    assert_eq!(sw1.links[&1].2, None);
    assert_eq!(width_speed(&p1), "4xSDR");
    assert_eq!(
        (p1.port_state, p1.port_phys_state),
        (PortState::INIT, PhysPortState::LINK_UP)
    );
    assert!(!sw1.links.contains_key(&5));
    let p5 = PortInfo::parse(data(&fixture("port_info_switch1_p5.hex"))).unwrap();
    assert_eq!(
        (p5.port_state, p5.port_phys_state),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    let p0 = PortInfo::parse(data(&fixture("port_info_switch1_p0.hex"))).unwrap();
    assert_eq!(p0.port_state, PortState::ACTIVE);
    let h1 = PortInfo::parse(data(&fixture("port_info_hca1_p1.hex"))).unwrap();
    assert_eq!(width_speed(&h1), "4xSDR");
    assert_eq!((h1.local_port_num, h1.port_state), (1, PortState::INIT));
    // Switch PortInfo answers carry the port the SMP arrived at (0).
    assert_eq!(p1.local_port_num, 0);

    let si = SwitchInfo::parse(data(&fixture("switch_info_switch1.hex"))).unwrap();
    // ibsim's defaults (MaxLinearCap / MaxMcastCap it prints at start).
    assert_eq!((si.linear_fdb_cap, si.multicast_fdb_cap), (30720, 1024));
    assert_eq!(si.linear_fdb_top, 0);
    // Its links came up and no SM has cleared PortStateChange.
    assert!(si.port_state_change);
    assert_eq!(si.partition_enforcement_cap, 64);

    for file in ["pkey_table_hca1.hex", "pkey_table_switch1_p1.hex"] {
        let pk = PKeyTable::parse(data(&fixture(file))).unwrap();
        assert_eq!(pk.pkeys[0], 0xFFFF, "{file}: default full-member P_Key");
    }
    // ibsim's default SL-to-VL map (sim_net.c `default_sl2vl`): SL n to
    // VL n, SL 15 to VL 7 (VL 15 carries no data).
    let mut sl2vl: Vec<u8> = (0..15).collect();
    sl2vl.push(7);
    for file in ["sl2vl_hca1.hex", "sl2vl_switch1_in1_out3.hex"] {
        let t = SlToVlTable::parse(data(&fixture(file))).unwrap();
        assert_eq!(t.vl.to_vec(), sl2vl, "{file}");
    }
    // ibsim's default arbitration tables (`default_vlarb_low` / `_high`):
    // low VL 0 weight 0, VLs 1.. weight 4; high VL 0 weight 4, VLs 1..
    // weight 0; cut to the port's VLArbLowCap / VLArbHighCap entries.
    for (name, file, cap, weight0, weight_rest) in [
        ("low", "vlarb_low_hca1.hex", h1.vl_arb_low_cap, 0, 4),
        (
            "high",
            "vlarb_high_switch1_p1.hex",
            p1.vl_arb_high_cap,
            4,
            0,
        ),
    ] {
        let table = VlArbTable::parse(data(&fixture(file))).unwrap();
        let cap = usize::from(cap);
        assert!(cap > 1 && cap <= 32, "{name} cap {cap}");
        for i in 0..32 {
            let want = if i < cap {
                VlArbTable::entry(i as u8, if i == 0 { weight0 } else { weight_rest })
            } else {
                0
            };
            assert_eq!(table.entries[i], want, "{name} entry {i}");
        }
    }
    // No SM has programmed the switch: every LID unrouted, no groups.
    let lft = LinearFwdTable::parse(data(&fixture("lft_switch1_b0.hex"))).unwrap();
    assert!(lft.ports.iter().all(|p| *p == 0xFF));
    let mft = MulticastFwdTable::parse(data(&fixture("mft_switch1_b0.hex"))).unwrap();
    assert_eq!(mft.to_vec().unwrap(), vec![0u8; 64]);
    // GUIDInfo: ibsim 0.10 answers block 0 with the port GUID as GUID0.
    let gi = GuidInfo::parse(data(&fixture("guid_info_hca1.hex"))).unwrap();
    assert_eq!(gi.guids[0], guids["Hca1"] + 1);
    assert!(gi.guids[1..].iter().all(|g| *g == 0));

    // MlnxExtPortInfo: no FDR10 in `net`, so ibsim reports nothing.
    assert_eq!(
        data(&fixture("mlnx_ext_port_info_switch1_p1.hex")),
        &[0u8; 64][..]
    );

    // Every fixture is a GetResp to a DR Get of its attribute.
    for c in CAPTURES {
        let mad = fixture(c.file);
        let smp = Smp::new_checked(&mad[..]).unwrap();
        assert!(
            smp.is_directed_route() && smp.response_bit() && smp.direction(),
            "{}",
            c.file
        );
        assert_eq!(
            (smp.attr_id(), smp.attr_mod()),
            (c.attr, c.attr_mod),
            "{}",
            c.file
        );
        assert_eq!(usize::from(smp.hop_cnt()), c.path.len(), "{}", c.file);
        assert_eq!(&smp.initial_path()[1..=c.path.len()], c.path, "{}", c.file);
    }
}
