//! perfquery and sminfo against the formatters of `diags::perf` and
//! `diags::smp`.

use super::*;

const PC_CLASS_PORT_INFO: u16 = 0x0001;
const PC_PORT_COUNTERS: u16 = 0x0012;
const PC_PORT_COUNTERS_EXT: u16 = 0x001D;

/// PerfMgt ClassPortInfo CapabilityMask and CapabilityMask2, or `None`
/// when the PMA gives no good answer.
fn pm_caps(f: &mut Fetch, lid: u16, port: u8) -> Option<(u16, u32)> {
    let d = f.pma(lid, PC_CLASS_PORT_INFO, port)?;
    let cpi = ClassPortInfo::parse(&d).expect("ClassPortInfo");
    Some((cpi.capability_mask, cpi.capability_mask2))
}

#[test]
fn perfquery_outputs_on_idle_ports_are_byte_identical() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    let mut f = Fetch::new(&sim);
    // Ports no MAD of ours or the tool's crosses (unlinked ports, the
    // switch's port 0, the inter-switch link OpenSM does not route over),
    // so the counters read the same from both: switches 1 and 3, HCAs 2
    // and 4. An HCA's unlinked port has no answering PMA: that checks
    // perfquery's failure line.
    let cases: &[(u16, &[u8])] = &[(1, &[0, 4, 8]), (2, &[2]), (3, &[0, 5]), (4, &[1])];
    for (lid, ports) in cases {
        let l = lid.to_string();
        for &port in *ports {
            let p = port.to_string();
            check(&sim, &mut f, "perfquery", &[&l, &p], |f| {
                perfquery_port(f, *lid, port, false)
            });
            check(&sim, &mut f, "perfquery", &["-x", &l, &p], |f| {
                perfquery_port(f, *lid, port, true)
            });
        }
        // -a on an HCA: its PMA lacks AllPortSelect, so perfquery reads
        // port by port (a switch's port 255 sums busy ports: covered by
        // the test on the MADs perfquery received).
        if *lid == 2 || *lid == 4 {
            check(&sim, &mut f, "perfquery", &["-a", &l], |f| {
                perfquery_all_ports(f, *lid)
            });
        }
    }
}

/// perfquery `LID PORT` (`-x LID PORT` when `ext`): ClassPortInfo, then
/// PortCounters (PortCountersExtended); a failing query ends it with
/// perfquery's line for that query.
fn perfquery_port(f: &mut Fetch, lid: u16, port: u8, ext: bool) -> Out {
    let Some((cap, cap2)) = pm_caps(f, lid, port) else {
        return Out::iberror(String::new(), "perfquery", "classportinfo query");
    };
    let (attr, failed) = if ext {
        (PC_PORT_COUNTERS_EXT, "perfextquery")
    } else {
        (PC_PORT_COUNTERS, "perfquery")
    };
    let Some(d) = f.pma(lid, attr, port) else {
        return Out::iberror(String::new(), "perfquery", failed);
    };
    let (id, port) = (PortIdText::lid(lid), i32::from(port));
    Out::ok(if ext {
        let pc = PortCountersExt::parse(&d).expect("PortCountersExt");
        perf::format_perfcounters_ext(&id, port, cap, cap2, &pc)
    } else {
        let pc = PortCounters::parse(&d).expect("PortCounters");
        perf::format_perfcounters(&id, port, cap, &pc)
    })
}

/// perfquery `-a LID`: one PortSelect-255 query when the PMA has
/// AllPortSelect, else (with a warning on stderr) every port 1..=N read
/// and aggregated under port 255; the first failing port ends it.
fn perfquery_all_ports(f: &mut Fetch, lid: u16) -> Out {
    let Some((cap, _)) = pm_caps(f, lid, 255) else {
        return Out::iberror(String::new(), "perfquery", "classportinfo query");
    };
    let id = PortIdText::lid(lid);
    if cap & 0x0100 != 0 {
        return match f.pma(lid, PC_PORT_COUNTERS, 255) {
            Some(d) => Out::ok(perf::format_perfcounters(
                &id,
                255,
                cap,
                &PortCounters::parse(&d).expect("PortCounters"),
            )),
            None => Out::iberror(String::new(), "perfquery", "perfquery"),
        };
    }
    let ni: NodeInfo = f
        .smp_as(&Route::Lid(lid), AttributeId::NODE_INFO, 0)
        .expect("NodeInfo");
    let mut pcs = Vec::new();
    for port in 1..=ni.num_ports {
        match f.pma(lid, PC_PORT_COUNTERS, port) {
            Some(d) => pcs.push(PortCounters::parse(&d).expect("PortCounters")),
            None => return Out::iberror(String::new(), "perfquery", "perfquery"),
        }
    }
    Out::ok(perf::format_perfcounters_aggregate(&id, cap, &pcs))
}

/// perfquery's text for the PerfMgt answers it received itself (dumped
/// by libibmad). With `-a` on a PMA without AllPortSelect, perfquery
/// reads every port and prints the aggregate as port 255.
fn perfquery_from_its_mads(args: &[&str], lid: u16, port: i32, mads: &[Vec<u8>]) -> Out {
    let cpi = ClassPortInfo::parse(&last_with_attr(mads, PC_CLASS_PORT_INFO)[64..])
        .expect("ClassPortInfo");
    let (cap, cap2) = (cpi.capability_mask, cpi.capability_mask2);
    let id = PortIdText::lid(lid);
    let all_of = |attr: u16| -> Vec<&[u8]> {
        mads.iter()
            .filter(|m| {
                let h = mad_testkit::header::of(m);
                h.attr_id.0 == attr && h.mgmt_class == mad_core::wire::MgmtClass::PERF_MGT
            })
            .map(|m| &m[64..])
            .collect()
    };
    let aggregate = args.contains(&"-a") && cap & 0x0100 == 0;
    if args.contains(&"-x") {
        let pcs: Vec<PortCountersExt> = all_of(PC_PORT_COUNTERS_EXT)
            .into_iter()
            .map(|d| PortCountersExt::parse(d).expect("PortCountersExt"))
            .collect();
        if aggregate {
            return Out::ok(perf::format_perfcounters_ext_aggregate(
                &id, cap, cap2, &pcs,
            ));
        }
        let pc = pcs.last().expect("a PortCountersExtended answer");
        Out::ok(perf::format_perfcounters_ext(&id, port, cap, cap2, pc))
    } else {
        let pcs: Vec<PortCounters> = all_of(PC_PORT_COUNTERS)
            .into_iter()
            .map(|d| PortCounters::parse(d).expect("PortCounters"))
            .collect();
        if aggregate {
            return Out::ok(perf::format_perfcounters_aggregate(&id, cap, &pcs));
        }
        let pc = pcs.last().expect("a PortCounters answer");
        Out::ok(perf::format_perfcounters(&id, port, cap, pc))
    }
}

#[test]
fn perfquery_formats_the_counters_it_received_byte_identically() {
    // Two switches and two HCAs with both ports linked.
    let Some((sim, _osm)) = opensm_up(support::topologies_dir().join("net.2sw2path4hca2port"))
    else {
        return;
    };
    let mut f = Fetch::new(&sim);
    let mut nonzero = false;
    for lid in 1..=6u16 {
        let ni: NodeInfo = f
            .smp_as(&Route::Lid(lid), AttributeId::NODE_INFO, 0)
            .unwrap_or_else(|| panic!("NodeInfo of LID {lid}"));
        let ports: Vec<i32> = if ni.node_type == NodeType::SWITCH {
            vec![0, 1, 2, 3, 5, 8]
        } else {
            vec![i32::from(ni.local_port_num)]
        };
        let l = lid.to_string();
        for port in ports {
            let p = port.to_string();
            for extra in [&[][..], &["-x"][..]] {
                let mut args: Vec<&str> = extra.to_vec();
                args.extend([l.as_str(), p.as_str()]);
                let (theirs, mads) = run_tool_seen(&sim, "perfquery", &args);
                let ours = perfquery_from_its_mads(&args, lid, port, &mads);
                assert_same(&format!("perfquery {}", args.join(" ")), &theirs, &ours);
                nonzero |= theirs
                    .stdout
                    .lines()
                    .any(|line| line.starts_with("PortXmitPkts:") && !line.ends_with(".0"));
            }
        }
        // -a: a switch's PMA has AllPortSelect (port 255 in one query);
        // an HCA's makes perfquery loop over its ports, which ibsim's PMA
        // refuses for any port but the one asked through (modelled in
        // the idle-port test).
        if ni.node_type != NodeType::SWITCH {
            continue;
        }
        for extra in [&["-a"][..], &["-x", "-a"][..]] {
            let mut args: Vec<&str> = extra.to_vec();
            args.push(l.as_str());
            let (theirs, mads) = run_tool_seen(&sim, "perfquery", &args);
            let ours = perfquery_from_its_mads(&args, lid, 255, &mads);
            assert_same(&format!("perfquery {}", args.join(" ")), &theirs, &ours);
        }
    }
    assert!(nonzero, "every PortXmitPkts was 0: the test saw no traffic");
}

#[test]
fn sminfo_formats_the_sminfo_it_received_byte_identically() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    for (args, lid) in [(&["1"][..], 1u16), (&["-D", "0"][..], 0), (&[][..], 1)] {
        let (theirs, mads) = run_tool_seen(&sim, "sminfo", args);
        let sm = SmInfo::parse(&last_with_attr(&mads, 0x0020)[64..]).expect("SMInfo");
        let ours = Out::ok(smp::format_sminfo(lid, &sm));
        assert_same(&format!("sminfo {}", args.join(" ")), &theirs, &ours);
    }
}

// ---------------------------------------------------------------- saquery
