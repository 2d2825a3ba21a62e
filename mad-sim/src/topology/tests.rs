use super::parse::scan::scan_lid_width_speed;
use super::*;

fn parse(s: &str) -> Topology {
    match Topology::parse_str(s) {
        Ok(t) => t,
        Err(e) => panic!("parse failed: {e}"),
    }
}

fn err(s: &str) -> TopologyError {
    match Topology::parse_str(s) {
        Ok(t) => panic!("parsed, expected an error: {t:?}"),
        Err(e) => e,
    }
}

/// ibsim's example topology, the one copy in the test kit.
const IBSIM_NET: &str = include_str!("../../../mad-testkit/nets/ibsim_example.net");

#[test]
fn guids_follow_ibsim_counters_per_node_kind() {
    let t = parse(IBSIM_NET);
    let g: Vec<(&str, u64)> = t
        .nodes()
        .iter()
        .map(|n| (n.id.as_str(), n.node_guid))
        .collect();
    // Switches count from 0x200000 by 1; CAs from 0x100000 by ports + 1.
    assert_eq!(
        g,
        [
            ("Switch1", 0x20_0000),
            ("Switch2", 0x20_0001),
            ("Hca1", 0x10_0000),
            ("Hca2", 0x10_0003),
        ]
    );
    let hca2 = &t.nodes()[3];
    assert_eq!(hca2.port(1).unwrap().guid, 0x10_0004);
    assert_eq!(hca2.port(2).unwrap().guid, 0x10_0005);
    assert!(hca2.port(0).is_none(), "a CA has no port 0");
    assert_eq!(hca2.system_image_guid, hca2.node_guid);
    let sw = &t.nodes()[0];
    assert!(sw.existing_ports().all(|p| p.guid == 0x20_0000));
    assert_eq!(sw.existing_ports().count(), 9);
    assert_eq!((sw.vendor_id, sw.device_id), (0, 0));
    assert_eq!(sw.description, "Switch1", "no description: the id");
}

#[test]
fn links_are_listed_once_with_both_ends_connected() {
    let t = parse(IBSIM_NET);
    assert_eq!(t.links().len(), 4);
    let s1 = t.find("Switch1").unwrap();
    let hca2 = t.find("Hca2").unwrap();
    let p = t.nodes()[s1].port(2).unwrap();
    assert_eq!(
        p.remote,
        Some(PortRef {
            node: hca2,
            port: 2
        })
    );
    assert_eq!(
        t.nodes()[hca2].port(2).unwrap().remote,
        Some(PortRef { node: s1, port: 2 })
    );
    assert_eq!(t.nodes()[hca2].port(1).unwrap().remote, None);
    assert_eq!(t.default_port(), Some(PortRef { node: 0, port: 0 }));
    let l = t.links()[0];
    assert_eq!((l.width, l.speed, l.speed_ext), (width::W4X, speed::SDR, 0));
    assert_eq!(t.find_guid(0x10_0003), Some(hca2));
    assert_eq!(t.switch_count(), 2);
}

const IBNETDISCOVER: &str = include_str!("../../../tests/fixtures/ibnetdiscover/one-switch.txt");

#[test]
fn ibnetdiscover_output_gives_its_guids_ids_descriptions_and_speeds() {
    let t = parse(IBNETDISCOVER);
    let sw = &t.nodes()[0];
    assert_eq!(sw.id, "S-0002c90300a1b2c3");
    assert_eq!(sw.node_guid, 0x0002_c903_00a1_b2c3);
    assert_eq!(sw.system_image_guid, 0x0002_c903_00a1_b2c3);
    assert_eq!(sw.description, "MF0;sw-a:SX6036/U1");
    assert_eq!((sw.vendor_id, sw.device_id), (0x2c9, 0xc738));
    assert_eq!(sw.enhanced_port0, Some(true));
    assert_eq!((sw.ports[0].lid, sw.ports[0].lmc), (1, 0));
    let h1 = &t.nodes()[1];
    assert_eq!(h1.node_guid, 0x0002_c903_00c2_d3e4);
    assert_eq!(h1.port(1).unwrap().guid, 0x0002_c903_00c2_d3e5);
    assert_eq!(h1.system_image_guid, 0x0002_c903_00c2_d3e7);
    assert_eq!(h1.description, "host1 mlx4_0");
    assert_eq!((h1.port(1).unwrap().lid, h1.port(1).unwrap().lmc), (2, 0));
    let h2 = &t.nodes()[2];
    // sysimgguid and vendid apply to one node only; devid stays.
    assert_eq!(h2.system_image_guid, h2.node_guid);
    assert_eq!((h2.vendor_id, h2.device_id), (0, 0x1003));
    assert_eq!(h2.port(1).unwrap().lmc, 1);
    // 4xQDR: 1X|4X enabled, SDR|DDR|QDR; 4xFDR adds the FDR extended speed.
    let l1 = t.links()[0];
    assert_eq!(
        (l1.width, l1.speed, l1.speed_ext),
        (width::W4X, speed::QDR, 0)
    );
    let l2 = t.links()[1];
    assert_eq!(
        (l2.width, l2.speed, l2.speed_ext),
        (width::W4X, speed::QDR, speed::EXT_FDR)
    );
    let p = sw.port(2).unwrap();
    assert_eq!(
        (p.width_enabled, p.speed_ext_enabled, p.fdr10_active),
        (3, 1, true)
    );
}

#[test]
fn guid_bases_absolute_and_relative() {
    let t = parse(
        "switchguid=0x1000\nSwitch 2 \"A\"\n\nSwitch 2 \"B\"\n\nswitchguid+0x10\nSwitch 2 \"C\"\n\n\
         caguid=0x50\nHca 3 \"H\"\n\nHca 1 \"I\"\n\nrtguid=0x900\nRt 2 \"R\"\n",
    );
    let g: Vec<u64> = t.nodes().iter().map(|n| n.node_guid).collect();
    assert_eq!(g, [0x1000, 0x1001, 0x1010, 0x50, 0x54, 0x900]);
    assert_eq!(t.nodes()[5].kind, NodeKind::Router);
    assert_eq!(t.nodes()[5].port(2).unwrap().guid, 0x902);
}

#[test]
fn first_router_gets_guid_zero_like_ibsim() {
    let t = parse("Rt 1 \"R\"\n");
    assert_eq!(t.nodes()[0].node_guid, 0);
    assert_eq!(t.nodes()[0].port(1).unwrap().guid, 1);
}

#[test]
fn module_prefix_names_nodes_and_their_links() {
    let t = parse("module=\"m1\"\nSwitch 2 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[1]\n");
    assert_eq!(t.nodes()[0].id, "m1#S");
    assert_eq!(t.find("m1#H"), Some(1));
    assert_eq!(t.links().len(), 1);
    assert_eq!(t.nodes()[0].description, "m1#S");
}

#[test]
fn port_options_set_enabled_width_and_speed_and_active_is_the_best_common() {
    let t = parse(
        "Switch 2 \"S\"\n[1] \"H\"[1] w=11 s=7 e=3\n\nHca 1 \"H\"\n[1] \"S\"[1]\tw=0x9 s=5 e=2\n",
    );
    let l = t.links()[0];
    assert_eq!(l.width, width::W12X, "11 & 9 = 1X|12X");
    assert_eq!(l.speed, speed::QDR, "7 & 5");
    assert_eq!(l.speed_ext, speed::EXT_EDR, "3 & 2");
    let p = t.nodes()[0].port(1).unwrap();
    assert_eq!(
        (p.width_enabled, p.speed_enabled, p.speed_ext_enabled),
        (11, 7, 3)
    );
}

#[test]
fn global_width_and_speed_apply_to_later_nodes() {
    let t = parse("width=8\nspeed=4\nSwitch 1 \"S\"\n[1] \"H\"\n\nHca 1 \"H\"\n[1] \"S\"\n");
    assert_eq!(t.links()[0].width, width::W12X);
    assert_eq!(t.links()[0].speed, speed::QDR);
}

#[test]
fn remote_port_defaults_to_one_and_comments_inside_records_are_skipped() {
    let t = parse("Switch 3 \"S\"\n# a comment\n[2] \"H\"\n\nHca 1 \"H\"\n[1] \"S\"[2]\n");
    assert_eq!(t.links().len(), 1);
    assert_eq!(t.links()[0].a, PortRef { node: 0, port: 2 });
}

#[test]
fn crlf_lines_and_a_missing_final_newline_are_accepted() {
    let t = parse("Switch 1 \"S\"\r\n[1] \"H\"[1]\r\n\r\nHca 1 \"H\"\r\n[1] \"S\"[1]");
    assert_eq!(t.links().len(), 1);
}

#[test]
fn a_record_ends_after_its_port_count_of_port_lines() {
    // ibsim reads at most NumPorts port lines; the next one is top level.
    let e = err("Hca 1 \"H\"\n[1] \"S\"[1]\n[2] \"S\"[2]\n");
    assert_eq!(e.location.line, 3);
    assert_eq!(e.kind, ErrorKind::PortLineOutsideRecord);
}

#[test]
fn full_record_may_be_followed_directly_by_a_header() {
    let t = parse("Switch 1 \"S\"\n[1] \"H\"[1]\nHca 1 \"H\"\n[1] \"S\"[1]\n");
    assert_eq!(t.nodes().len(), 2);
}

#[test]
fn header_directly_after_an_incomplete_record_is_refused() {
    let e = err("Switch 8 \"S\"\n[1] \"H\"[1]\nHca 1 \"H\"\n[1] \"S\"[1]\n");
    assert_eq!(e.location.line, 3);
    assert!(matches!(e.kind, ErrorKind::SwallowedLine { .. }), "{e}");
}

#[test]
fn bad_port_number_names_the_line() {
    let e = err("\n\nSwitch 4 \"S\"\n[1] \"H\"[1]\n[5] \"H\"[2]\n");
    assert_eq!(e.location.line, 5);
    assert!(
        matches!(
            e.kind,
            ErrorKind::BadPortNumber {
                port: 5,
                max: 4,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "<string>:5: bad port number 5 (node \"S\" has ports 1-4)"
    );
    assert_eq!(
        err("Switch 4 \"S\"\n[0] \"H\"[1]\n").kind,
        ErrorKind::PortZero
    );
    assert!(matches!(
        err("Switch 4 \"S\"\n[-1] \"H\"[1]\n").kind,
        ErrorKind::BadPortNumber { port: -1, .. }
    ));
}

#[test]
fn link_to_a_missing_node_names_the_port_line() {
    let e = err("Switch 4 \"S\"\n[1] \"H\"[1]\n[2] \"Nope\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[1]\n");
    assert_eq!(e.location.line, 3);
    assert!(
        matches!(&e.kind, ErrorKind::UnknownRemoteNode { remote, port: 2, .. } if remote == "Nope"),
        "{e}"
    );
}

#[test]
fn one_sided_links_are_refused() {
    let e = err("Switch 4 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n");
    assert_eq!(e.location.line, 2);
    assert!(matches!(e.kind, ErrorKind::OneSidedLink { .. }), "{e}");
    // Both sides list a link, but to different ports.
    let e = err("Switch 4 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[2]\n");
    assert!(
        matches!(&e.kind, ErrorKind::OneSidedLink { remote_says, .. } if remote_says.contains("port 2")),
        "{e}"
    );
}

#[test]
fn remote_port_beyond_the_remote_node_is_refused() {
    let e = err("Switch 4 \"S\"\n[1] \"H\"[3]\n\nHca 2 \"H\"\n[1] \"S\"[1]\n");
    assert!(
        matches!(
            e.kind,
            ErrorKind::RemotePortOutOfRange {
                remote_port: 3,
                remote_ports: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(
        err("Switch 4 \"S\"\n[1] \"H\"[0]\n").kind,
        ErrorKind::BadRemotePort { .. }
    ));
    assert!(matches!(
        err("Switch 4 \"S\"\n[1] \"S\"[1]\n").kind,
        ErrorKind::SelfLink { port: 1, .. }
    ));
}

#[test]
fn duplicate_guids_and_ids_are_refused() {
    let e = err("switchguid=0x10\nSwitch 1 \"A\"\n\nswitchguid=0x10\nSwitch 1 \"B\"\n");
    assert_eq!(e.location.line, 5);
    assert!(
        matches!(e.kind, ErrorKind::DuplicateGuid { guid: 0x10, .. }),
        "{e}"
    );
    // A CA port GUID equal to another CA's... node GUID is fine, but equal
    // port GUIDs are not.
    let e = err("caguid=0x10\nHca 2 \"A\"\n\ncaguid=0x11\nHca 1 \"B\"\n");
    assert!(
        matches!(e.kind, ErrorKind::DuplicateGuid { guid: 0x12, .. }),
        "{e}"
    );
    let e = err("Switch 1 \"A\"\n\nSwitch 1 \"A\"\n");
    assert_eq!(e.location.line, 3);
    assert!(matches!(e.kind, ErrorKind::DuplicateNodeId { .. }));
}

#[test]
fn port_listed_twice_is_refused() {
    let e = err("Switch 4 \"S\"\n[1] \"H\"[1]\n[1] \"H\"[1]\n");
    assert_eq!(e.location.line, 3);
    assert!(matches!(e.kind, ErrorKind::DuplicatePort { port: 1, .. }));
}

#[test]
fn mismatched_link_widths_are_refused() {
    let e = err("Switch 1 \"S\"\n[1] \"H\"[1] w=8\n\nHca 1 \"H\"\n[1] \"S\"[1] w=2\n");
    assert!(
        matches!(e.kind, ErrorKind::LinkMismatch { what: "width", .. }),
        "{e}"
    );
    let e = err("Switch 1 \"S\"\n[1] \"H\"[1] s=4\n\nHca 1 \"H\"\n[1] \"S\"[1] s=3\n");
    assert!(
        matches!(e.kind, ErrorKind::LinkMismatch { what: "speed", .. }),
        "{e}"
    );
    assert!(matches!(
        err("Switch 1 \"S\"\n[1] \"H\"[1] w=32\n").kind,
        ErrorKind::BadLinkValue { value: 32, .. }
    ));
    assert!(matches!(
        err("Switch 1 \"S\"\n[1] \"H\"[1] s=0\n").kind,
        ErrorKind::BadLinkValue { value: 0, .. }
    ));
}

#[test]
fn header_errors() {
    assert!(matches!(
        err("Switch 0 \"S\"\n").kind,
        ErrorKind::BadPortCount { .. }
    ));
    assert!(matches!(
        err("Switch \"S\"\n").kind,
        ErrorKind::BadPortCount { .. }
    ));
    assert!(matches!(
        err("Switch 256 \"S\"\n").kind,
        ErrorKind::BadPortCount { .. }
    ));
    assert_eq!(err("Switch 2 S\n").kind, ErrorKind::NoNodeId);
    assert!(matches!(
        err("Switch 2 \"\"\n").kind,
        ErrorKind::BadNodeId { .. }
    ));
    assert!(matches!(
        err("Switch 2 \"a#b\"\n").kind,
        ErrorKind::BadNodeId { .. }
    ));
    let long = format!("Switch 2 \"{}\"\n", "x".repeat(65));
    assert!(matches!(err(&long).kind, ErrorKind::BadNodeId { .. }));
    // "Ca12" without a separator: ibsim starts at the "2".
    assert!(matches!(
        err("Ca12 \"H\"\n").kind,
        ErrorKind::MisreadPortCount {
            written: 12,
            ibsim: 2,
            ..
        }
    ));
    assert_eq!(parse("Ca\t12 \"H\"\n").nodes()[0].num_ports, 12);
    assert_eq!(parse("Ca 12 \"H\"\n").nodes()[0].num_ports, 12);
    assert_eq!(parse("Hca 12 \"H\"\n").nodes()[0].num_ports, 12);
    assert_eq!(parse("Switch 0x24 \"S\"\n").nodes()[0].num_ports, 36);
}

#[test]
fn directive_errors_name_the_line() {
    for (text, key) in [
        ("switchguid 0x10\n", "switchguid"),
        ("caguid=zz\n", "caguid"),
        ("vendid=0x1000000\n", "vendid"),
        ("devid=0x10000\n", "devid"),
        ("vendid\n", "vendid"),
        ("module=m\n", "module"),
        ("module=\"abcdefghijklmnopqrstu\"\n", "module"),
        ("pdebug\n", "pdebug"),
    ] {
        let e = err(text);
        assert_eq!(e.location.line, 1, "{text}");
        assert!(
            matches!(&e.kind, ErrorKind::BadAssignment { key: k, .. } if *k == key),
            "{text}: {e}"
        );
    }
    assert!(matches!(
        err("width=0\n").kind,
        ErrorKind::BadLinkValue { .. }
    ));
    assert!(matches!(
        err("speed=8\n").kind,
        ErrorKind::BadLinkValue { .. }
    ));
    assert!(matches!(
        err("extspeed=-1\n").kind,
        ErrorKind::BadLinkValue { .. }
    ));
}

#[test]
fn unsupported_and_structural_errors() {
    assert!(matches!(err("do link\n").kind, ErrorKind::Unsupported(_)));
    assert!(matches!(
        err("Switch 2 \"S\"\n@[1] \"alias\"\n").kind,
        ErrorKind::Unsupported(_)
    ));
    assert!(matches!(
        err("Switch 2 \"S\"\n[1] \"x@alias\"\n").kind,
        ErrorKind::Unsupported(_)
    ));
    assert!(matches!(err("include \"x\"\n").kind, ErrorKind::Include(_)));
    assert_eq!(
        err("\n[1] \"S\"[1]\n").kind,
        ErrorKind::PortLineOutsideRecord
    );
    let long = format!("# {}\n", "x".repeat(300));
    assert!(matches!(err(&long).kind, ErrorKind::LineTooLong { .. }));
    let e = Topology::parse_bytes(b"Switch 1 \"S\"\n\xff\n").unwrap_err();
    assert_eq!((e.location.line, e.kind), (2, ErrorKind::NotUtf8));
    assert_eq!(err("a\0b\n").kind, ErrorKind::NulByte);
}

#[test]
fn ignored_lines_and_empty_files_parse() {
    let t = parse("");
    assert!(t.nodes().is_empty());
    assert_eq!(t.default_port(), None);
    let t = parse("hello\n  Switch 2 \"indented lines are ignored by ibsim\"\n# c\n");
    assert!(t.nodes().is_empty());
}

#[test]
fn switch_port0_lid_and_lmc_are_read_and_checked() {
    let t = parse("Switch 1 \"A\" # d base port 0 lmc 2 lid 0x10\n");
    assert_eq!(
        (t.nodes()[0].ports[0].lid, t.nodes()[0].ports[0].lmc),
        (16, 2)
    );
    for (text, key, reason) in [
        ("lid 70000", "lid", "70000 is not a LID"),
        ("lid -1", "lid", "-1 is not a LID"),
        ("lid 1 lmc 8", "lmc", "8 is not an LMC (0-7)"),
    ] {
        let e = err(&format!("Switch 1 \"A\" # d base port 0 {text}\n"));
        assert!(
            matches!(&e.kind, ErrorKind::BadAssignment { key: k, reason: r }
                if *k == key && r == reason),
            "{text}: {e}"
        );
    }
}

#[test]
fn description_forms() {
    let t = parse(
        "Switch 1 \"A\" # desc with spaces base port 0 lid 7\n\nSwitch 1 \"B\" #\"quoted # desc\" enhanced port 0\n\n\
         Hca 1 \"C\" # \"\"\n\nHca 1 \"D\" #\n",
    );
    let n = t.nodes();
    assert_eq!(n[0].description, "desc with spaces");
    assert_eq!(n[0].enhanced_port0, Some(false));
    assert_eq!(n[0].ports[0].lid, 7);
    assert_eq!(n[1].description, "quoted # desc");
    assert_eq!(n[1].enhanced_port0, Some(true));
    assert_eq!(n[2].description, "C", "empty description: the id");
    assert_eq!(n[3].description, "D");
    let t = parse(&format!("Hca 1 \"E\" # \"{}\"\n", "d".repeat(70)));
    assert_eq!(t.nodes()[0].description.len(), MAX_DESC_LEN);
}

#[test]
fn include_resolves_relative_to_the_including_file_and_reports_the_chain() {
    let dir = std::env::temp_dir().join(format!("mad-sim-topo-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("main.net"),
        "Switch 1 \"S\"\n[1] \"H\"[1]\n\ninclude \"sub/hosts.net\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/hosts.net"), "Hca 1 \"H\"\n[1] \"S\"[1]\n").unwrap();
    let t = Topology::load(dir.join("main.net")).unwrap();
    assert_eq!(t.nodes().len(), 2);
    assert_eq!(t.links().len(), 1);
    std::fs::write(dir.join("sub/hosts.net"), "Hca 1 \"H\"\n[2] \"S\"[1]\n").unwrap();
    let e = Topology::load(dir.join("main.net")).unwrap_err();
    assert_eq!(e.location.line, 2);
    assert!(e.location.file.ends_with("hosts.net"));
    assert_eq!(e.location.included_from.len(), 1);
    assert_eq!(e.location.included_from[0].1, 4);
    assert!(e.to_string().contains("included from"), "{e}");
    std::fs::write(dir.join("loop.net"), "include \"loop.net\"\n").unwrap();
    let e = Topology::load(dir.join("loop.net")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Include(_)), "{e}");
    let e = Topology::load(dir.join("missing.net")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Io(_)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sscanf_tail_parser_matches_c() {
    assert_eq!(scan_lid_width_speed("lid 2 4xQDR"), Some((4, "QDR")));
    assert_eq!(scan_lid_width_speed("lid2 12xFDR10 x"), Some((12, "FDR10")));
    assert_eq!(scan_lid_width_speed("lid 2 4x"), None);
    assert_eq!(scan_lid_width_speed("lid x 4xQDR"), None);
    assert_eq!(
        scan_lid_width_speed("lid 1 4xABCDEFGHIJK"),
        Some((4, "ABCDEFGHI"))
    );
}

#[test]
fn the_built_in_default_topology_is_a_two_level_fat_tree_with_described_nodes() {
    let t = crate::default_topology();
    assert_eq!(t.nodes().len(), 12);
    assert_eq!(t.switch_count(), 4);
    // 8 host links + 4 leaf-spine links.
    assert_eq!(t.links().len(), 12);
    // ibsim's GUID counters: CAs from 0x100000 in steps of ports + 1,
    // switches from 0x200000 in steps of 1, in file order.
    let h1 = &t.nodes()[t.find("host-1").unwrap()];
    assert_eq!(h1.node_guid, GUID_BASE_CA);
    assert_eq!(h1.description, "host-1 HCA-1");
    assert_eq!(h1.num_ports, 2);
    assert!(h1.port(1).unwrap().remote.is_some());
    assert!(h1.port(2).unwrap().remote.is_none());
    let h8 = &t.nodes()[t.find("host-8").unwrap()];
    assert_eq!(h8.node_guid, GUID_BASE_CA + 7 * 3);
    let spine2 = &t.nodes()[t.find("spine-2").unwrap()];
    assert_eq!(spine2.node_guid, GUID_BASE_SWITCH + 3);
    assert_eq!(spine2.description, "spine-2 madsim 8-port spine switch");
    // Every leaf reaches both spines; every host hangs on a leaf.
    for leaf in ["leaf-1", "leaf-2"] {
        let l = &t.nodes()[t.find(leaf).unwrap()];
        for (p, spine) in [(7, "spine-1"), (8, "spine-2")] {
            let r = l.port(p).unwrap().remote.unwrap();
            assert_eq!(t.nodes()[r.node].id, spine);
        }
    }
    // The first node (where ibsim and mad_sim::Subnet put the SM) is a CA.
    assert_eq!(t.nodes()[0].id, "host-1");
    assert_eq!(t.nodes()[0].kind, NodeKind::Ca);
}
