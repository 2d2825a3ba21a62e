//! Fixtures: the SMP answers ibsim gives on the `net` topology, kept as
//! hex files and compared with ibsim and with the sweep.

use std::path::{Path, PathBuf};

use crate::support::{IbSim, NEEDS_IBSIM};
use mad_core::transport::Transport;
use mad_core::wire::attr::{NodeDescription, NodeInfo, PortInfo};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Repr};

use super::*;

// ---------------------------------------------------------------------
// Fixtures: the SMP answers ibsim gives, from the `net` topology.

/// Mellanox's vendor SMP attribute ibsim also answers (`smpquery MEPI`).
pub(crate) const MLNX_EXT_PORT_INFO: AttributeId = AttributeId(0xFF90);

/// One captured answer: file name, query, and what it proves.
pub(crate) struct Capture {
    pub(crate) file: &'static str,
    pub(crate) path: &'static [u8],
    pub(crate) attr: AttributeId,
    pub(crate) attr_mod: u32,
    pub(crate) what: &'static str,
}

/// Every SMP attribute ibsim answers, from Switch1 (ibsim's default node
/// for `net`) and Hca1 (behind Switch1 port 1).
pub(crate) const CAPTURES: &[Capture] = &[
    Capture {
        file: "node_info_switch1.hex",
        path: &[],
        attr: AttributeId::NODE_INFO,
        attr_mod: 0,
        what: "NodeInfo of Switch1",
    },
    Capture {
        file: "node_info_hca1.hex",
        path: &[1],
        attr: AttributeId::NODE_INFO,
        attr_mod: 0,
        what: "NodeInfo of Hca1",
    },
    Capture {
        file: "node_desc_switch1.hex",
        path: &[],
        attr: AttributeId::NODE_DESC,
        attr_mod: 0,
        what: "NodeDescription of Switch1",
    },
    Capture {
        file: "node_desc_hca1.hex",
        path: &[1],
        attr: AttributeId::NODE_DESC,
        attr_mod: 0,
        what: "NodeDescription of Hca1",
    },
    Capture {
        file: "port_info_switch1_p0.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 0,
        what: "PortInfo of Switch1 port 0",
    },
    Capture {
        file: "port_info_switch1_p1.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 1,
        what: "PortInfo of Switch1 port 1 (to Hca1)",
    },
    Capture {
        file: "port_info_switch1_p5.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 5,
        what: "PortInfo of Switch1 port 5 (unlinked)",
    },
    Capture {
        file: "port_info_hca1_p1.hex",
        path: &[1],
        attr: AttributeId::PORT_INFO,
        attr_mod: 1,
        what: "PortInfo of Hca1 port 1",
    },
    Capture {
        file: "switch_info_switch1.hex",
        path: &[],
        attr: AttributeId::SWITCH_INFO,
        attr_mod: 0,
        what: "SwitchInfo of Switch1",
    },
    Capture {
        file: "pkey_table_hca1.hex",
        path: &[1],
        attr: AttributeId::PKEY_TABLE,
        attr_mod: 0,
        what: "P_KeyTable block 0 of Hca1",
    },
    Capture {
        file: "pkey_table_switch1_p1.hex",
        path: &[],
        attr: AttributeId::PKEY_TABLE,
        attr_mod: 1 << 16,
        what: "P_KeyTable block 0 of Switch1 port 1",
    },
    Capture {
        file: "sl2vl_hca1.hex",
        path: &[1],
        attr: AttributeId::SL_TO_VL_TABLE,
        attr_mod: 0,
        what: "SLtoVLMappingTable of Hca1",
    },
    Capture {
        file: "sl2vl_switch1_in1_out3.hex",
        path: &[],
        attr: AttributeId::SL_TO_VL_TABLE,
        attr_mod: 0x0103,
        what: "SLtoVLMappingTable of Switch1, input port 1, output port 3",
    },
    Capture {
        file: "vlarb_low_hca1.hex",
        path: &[1],
        attr: AttributeId::VL_ARB_TABLE,
        attr_mod: 1 << 16,
        what: "VLArbitrationTable low entries 0-31 of Hca1",
    },
    Capture {
        file: "vlarb_high_switch1_p1.hex",
        path: &[],
        attr: AttributeId::VL_ARB_TABLE,
        attr_mod: (3 << 16) | 1,
        what: "VLArbitrationTable high entries 0-31 of Switch1 port 1",
    },
    Capture {
        file: "lft_switch1_b0.hex",
        path: &[],
        attr: AttributeId::LINEAR_FWD_TABLE,
        attr_mod: 0,
        what: "LinearForwardingTable block 0 of Switch1",
    },
    Capture {
        file: "mft_switch1_b0.hex",
        path: &[],
        attr: AttributeId::MCAST_FWD_TABLE,
        attr_mod: 0,
        what: "MulticastForwardingTable block 0, position 0 of Switch1",
    },
    Capture {
        file: "guid_info_hca1.hex",
        path: &[1],
        attr: AttributeId::GUID_INFO,
        attr_mod: 0,
        what: "GUIDInfo block 0 of Hca1",
    },
    Capture {
        file: "mlnx_ext_port_info_switch1_p1.hex",
        path: &[],
        attr: MLNX_EXT_PORT_INFO,
        attr_mod: 1,
        what: "MlnxExtPortInfo (vendor attribute 0xFF90) of Switch1 port 1",
    },
];

pub(crate) fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ibsim")
}

pub(crate) fn path_text(path: &[u8]) -> String {
    std::iter::once(0u8)
        .chain(path.iter().copied())
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub(crate) fn to_hex_file(c: &Capture, mad: &[u8]) -> String {
    let mut s = format!(
        "# {}: ibsim 0.10 answer, topology `net` (client at Switch1), to DR SMP Get {} (0x{:04x}) attr mod 0x{:08x} path {}\n",
        c.what,
        c.attr.name().unwrap_or("MlnxExtPortInfo"),
        c.attr.0,
        c.attr_mod,
        path_text(c.path)
    );
    for row in mad.chunks(16) {
        let line: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        s.push_str(&line.join(" "));
        s.push('\n');
    }
    s
}

pub(crate) fn read_hex_file(path: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (regenerate with MADSTACK_UPDATE_FIXTURES=1)",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|b| {
            u8::from_str_radix(b, 16).unwrap_or_else(|e| panic!("{}: {b:?}: {e}", path.display()))
        })
        .collect()
}

pub(crate) fn fixture(file: &str) -> Vec<u8> {
    let mad = read_hex_file(&fixture_dir().join(file));
    assert_eq!(mad.len(), 256, "{file}");
    mad
}

/// The TID bytes differ between runs; everything else is ibsim's answer.
pub(crate) fn without_tid(mad: &[u8]) -> Vec<u8> {
    let mut m = mad.to_vec();
    mad_testkit::header::edit(&mut m, |h| h.tid = 0);
    m
}

#[test]
pub(crate) fn fixtures_equal_what_ibsim_answers_now() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let update = std::env::var("MADSTACK_UPDATE_FIXTURES").is_ok_and(|v| v == "1");
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    assert_eq!(t.port_attrs().ca_name, "Switch1");
    if update {
        std::fs::create_dir_all(fixture_dir()).unwrap();
    }
    for c in CAPTURES {
        let mad = query(&mut t, c.path, c.attr, c.attr_mod);
        let smp = Smp::new_checked(&mad[..]).unwrap();
        assert_eq!(smp.dr_status() & 0x7FFF, 0, "{}: status", c.file);
        assert_eq!(smp.attr_id(), c.attr, "{}", c.file);
        if update {
            std::fs::write(fixture_dir().join(c.file), to_hex_file(c, &mad)).unwrap();
        }
        assert_eq!(
            without_tid(&fixture(c.file)),
            without_tid(&mad),
            "{} differs from ibsim's answer now",
            c.file
        );
    }
    // Nothing else in the directory: every fixture is checked here.
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CAPTURES.iter().map(|c| c.file.to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
pub(crate) fn fixtures_parse_to_what_the_sweep_reports() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    let (fabric, _) = sweep(&mut t);
    let sw1 = &fabric.nodes[&0x20_0000];
    let hca1 = &fabric.nodes[&0x10_0000];
    assert_eq!(
        NodeInfo::parse(data(&fixture("node_info_switch1.hex"))).unwrap(),
        sw1.info
    );
    assert_eq!(
        NodeInfo::parse(data(&fixture("node_info_hca1.hex"))).unwrap(),
        hca1.info
    );
    assert_eq!(
        NodeDescription::parse(data(&fixture("node_desc_switch1.hex")))
            .unwrap()
            .text(),
        sw1.desc
    );
    assert_eq!(
        NodeDescription::parse(data(&fixture("node_desc_hca1.hex")))
            .unwrap()
            .text(),
        hca1.desc
    );
    for (file, port) in [
        ("port_info_switch1_p0.hex", 0u8),
        ("port_info_switch1_p1.hex", 1),
        ("port_info_switch1_p5.hex", 5),
    ] {
        assert_eq!(
            PortInfo::parse(data(&fixture(file))).unwrap(),
            sw1.ports[&port],
            "{file}"
        );
    }
    assert_eq!(
        PortInfo::parse(data(&fixture("port_info_hca1_p1.hex"))).unwrap(),
        hca1.ports[&1]
    );
}
