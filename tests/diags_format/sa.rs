//! saquery against the formatters of `diags::sa`.

use super::*;

fn sa_cpi(f: &mut Fetch) -> ClassPortInfo {
    let a = f.sa(SM_LID, Method::GET, AttributeId::CLASS_PORT_INFO, 0, 0, &[]);
    assert_eq!(a.status, 0, "SA ClassPortInfo status");
    ClassPortInfo::parse(&a.mad[56..]).expect("SA ClassPortInfo")
}

/// The record dumps saquery prints for `a`, less the records libumad2sim
/// garbles (see [`UMAD2SIM_VALID_BYTES`]), which are left out of the
/// comparison on both sides.
fn dump<R: SaRecord>(a: &SaAnswer, fmt: impl Fn(&R) -> String) -> Out {
    let all = a.records::<R>();
    let ok = a.reliable(all.len());
    let mut out = Out::ok(sa::format_all(&all[..ok], &fmt));
    if ok < all.len() {
        let header = fmt(&all[0]).lines().next().unwrap_or_default().to_owned();
        out.keep = Some((header, ok));
    }
    out
}

fn bytes<R: Repr>(r: &R) -> Vec<u8> {
    r.to_vec().expect("emit query record")
}

/// A GetTable of `attr` from the SM's SA with `q` as the template and
/// `comp_mask` naming its fields that count.
fn get_table<R: Repr>(f: &mut Fetch, attr: AttributeId, comp_mask: u64, q: &R) -> SaAnswer {
    f.sa(SM_LID, Method::GET_TABLE, attr, 0, comp_mask, &bytes(q))
}

/// saquery's dump of every record of `attr` (as [`dump`]).
fn dump_all<R: SaRecord>(f: &mut Fetch, attr: AttributeId, fmt: impl Fn(&R) -> String) -> Out {
    dump(&f.sa_all(attr), fmt)
}

#[test]
fn saquery_outputs_are_byte_identical() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    let mut f = Fetch::new(&sim);

    // No arguments, NR, -N: every NodeRecord (cut to one MAD by umad2sim).
    for args in [&[][..], &["NR"][..], &["-N"][..]] {
        check(&sim, &mut f, "saquery", args, |f| {
            dump_all(f, AttributeId::SA_NODE_RECORD, sa::format_node_record)
        });
    }
    check(&sim, &mut f, "saquery", &["NR", "2"], |f| {
        let q = NodeRecord {
            lid: 2,
            ..NodeRecord::default()
        };
        let a = get_table(f, AttributeId::SA_NODE_RECORD, NodeRecord::COMP_LID, &q);
        dump(&a, sa::format_node_record)
    });
    check(&sim, &mut f, "saquery", &["-D"], |f| {
        let a = f.sa_all(AttributeId::SA_NODE_RECORD);
        Out::ok(sa::format_node_list(&a.records::<NodeRecord>()))
    });
    for args in [&["-c"][..], &["CPI"][..]] {
        check(&sim, &mut f, "saquery", args, |f| {
            Out::ok(sa::format_class_port_info(&sa_cpi(f)))
        });
    }
    for (arg, lid, port) in [("2/1", 2u16, 1u8), ("1/0", 1, 0), ("3/4", 3, 4)] {
        check(&sim, &mut f, "saquery", &["PIR", arg], |f| {
            let q = PortInfoRecord {
                lid,
                port_num: port,
                ..PortInfoRecord::default()
            };
            let a = get_table(
                f,
                AttributeId::SA_PORTINFO_RECORD,
                PortInfoRecord::COMP_LID | PortInfoRecord::COMP_PORT_NUM,
                &q,
            );
            dump(&a, |r: &PortInfoRecord| {
                sa::format_portinfo_record(r, false)
            })
        });
    }
    check(&sim, &mut f, "saquery", &["SWIR"], |f| {
        let cap2 = sa_cpi(f).capability_mask2;
        dump_all(f, AttributeId::SA_SWITCHINFO_RECORD, |r| {
            sa::format_switch_info_record(r, cap2)
        })
    });
    for args in [&["LR"][..], &["-x"][..]] {
        check(&sim, &mut f, "saquery", args, |f| {
            dump_all(f, AttributeId::SA_LINK_RECORD, sa::format_link_record)
        });
    }
    check(&sim, &mut f, "saquery", &["SMIR"], |f| {
        dump_all(f, AttributeId::SA_SMINFO_RECORD, sa::format_sm_info_record)
    });
    check(&sim, &mut f, "saquery", &["-s"], |f| {
        let mut q = PortInfoRecord::default();
        let mut issm = |f: &mut Fetch, bit: u32| {
            q.port_info.capability_mask = bit;
            let a = f.sa(
                SM_LID,
                Method::GET_TABLE,
                AttributeId::SA_PORTINFO_RECORD,
                1 << 31,
                PortInfoRecord::COMP_CAPABILITY_MASK,
                &bytes(&q),
            );
            a.records::<PortInfoRecord>()
        };
        let sm = issm(f, 1 << 1);
        let disabled = issm(f, 1 << 10);
        Out::ok(sa::format_issm(&sm, &disabled))
    });
    check(&sim, &mut f, "saquery", &["-g"], |f| {
        dump_all(
            f,
            AttributeId::SA_MCMEMBER_RECORD,
            sa::format_mcgroup_record,
        )
    });
    for args in [&["-m"][..], &["-m", "0xC000"][..], &["-m", "0xC001"][..]] {
        let requested = args.get(1).copied();
        check(&sim, &mut f, "saquery", args, |f| {
            let groups = f.sa_all(AttributeId::SA_MCMEMBER_RECORD);
            let nodes = f.sa_all(AttributeId::SA_NODE_RECORD);
            Out::ok(sa::format_mcmember_members(
                &groups.records::<McMemberRecord>(),
                &nodes.records::<NodeRecord>(),
                requested,
            ))
        });
    }
    check(&sim, &mut f, "saquery", &["MCMR"], |f| {
        dump_all(
            f,
            AttributeId::SA_MCMEMBER_RECORD,
            sa::format_mcmember_record,
        )
    });
    check(&sim, &mut f, "saquery", &["GIR"], |f| {
        dump_all(
            f,
            AttributeId::SA_GUIDINFO_RECORD,
            sa::format_guidinfo_record,
        )
    });
    for (arg, lid, block) in [("1/0", 1u16, 0u16), ("3/0", 3, 0)] {
        check(&sim, &mut f, "saquery", &["LFTR", arg], |f| {
            let q = LftRecord {
                lid,
                block_num: block,
                ..LftRecord::default()
            };
            let a = get_table(
                f,
                AttributeId::SA_LFT_RECORD,
                LftRecord::COMP_LID | LftRecord::COMP_BLOCK_NUM,
                &q,
            );
            dump(&a, sa::format_lft_record)
        });
    }
    check(&sim, &mut f, "saquery", &["MFTR"], |f| {
        dump_all(f, AttributeId::SA_MFT_RECORD, sa::format_mft_record)
    });
    check(&sim, &mut f, "saquery", &["SL2VL"], |f| {
        dump_all(f, AttributeId::SA_SL2VL_RECORD, sa::format_sl2vl_record)
    });
    check(&sim, &mut f, "saquery", &["VLAR", "1"], |f| {
        let q = VlArbRecord {
            lid: 1,
            ..VlArbRecord::default()
        };
        let a = get_table(f, AttributeId::SA_VLARB_RECORD, VlArbRecord::COMP_LID, &q);
        dump(&a, sa::format_vlarb_record)
    });
    check(&sim, &mut f, "saquery", &["PR"], |f| {
        dump_all(f, AttributeId::SA_PATH_RECORD, sa::format_path_record)
    });
    for (src, dst) in [(2u16, 4u16), (1, 3)] {
        let arg = format!("{src}:{dst}");
        check(&sim, &mut f, "saquery", &["--src-to-dst", &arg], |f| {
            let q = PathRecord {
                slid: src,
                dlid: dst,
                numb_path: 0x7F,
                ..PathRecord::default()
            };
            let a = get_table(
                f,
                AttributeId::SA_PATH_RECORD,
                PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_NUMB_PATH,
                &q,
            );
            dump(&a, sa::format_path_record)
        });
    }
    check(&sim, &mut f, "saquery", &["SR"], |f| {
        dump_all(f, AttributeId::SA_SERVICE_RECORD, |r: &ServiceRecord| {
            sa::format_service_record(r, false)
        })
    });
    check(&sim, &mut f, "saquery", &["IIR"], |f| {
        dump_all(
            f,
            AttributeId::SA_INFORMINFO_RECORD,
            |r: &InformInfoRecord| sa::format_inform_info_record(r, false),
        )
    });
}

#[test]
fn saquery_error_status_goes_to_stderr_in_sa_report_err_form() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    let mut f = Fetch::new(&sim);
    // OpenSM cannot build P_KeyTableRecords on ibsim (no SMP P_KeyTable
    // for them): the SA answers with an error status.
    let a = f.sa_all(AttributeId::SA_PKEY_TABLE_RECORD);
    assert_ne!(a.status, 0, "PKTR unexpectedly succeeded on ibsim");
    let out = sim.umad2sim_output("saquery", ["PKTR"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = sa::format_sa_report_err(a.status);
    assert!(
        stderr.lines().any(|l| format!("{l}\n") == want),
        "saquery PKTR stderr lacks {want:?}:\n{stderr}"
    );
    assert_ne!(out.status.code(), Some(0));
}

/// The port GID with the default subnet prefix.
fn gid(port_guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    g[8..].copy_from_slice(&port_guid.to_be_bytes());
    g
}

#[test]
fn saquery_service_record_of_a_registered_service_is_byte_identical() {
    let Some((sim, _osm)) = opensm_up(net()) else {
        return;
    };
    let mut f = Fetch::new(&sim);

    // A service, registered through our own port.
    let mut sr = ServiceRecord {
        service_id: 0x1000_0000_0000_00AB,
        service_gid: gid(0x20_0000),
        service_pkey: 0xFFFF,
        service_lease: 0xFFFF_FFFF,
        ..ServiceRecord::default()
    };
    sr.set_name("madstack diags test").expect("name");
    sr.service_key[15] = 0x5A;
    for (i, d) in sr.service_data8.iter_mut().enumerate() {
        *d = (i as u8) * 17;
    }
    sr.service_data16[7] = 0xBEEF;
    sr.service_data32[1] = 0xDEAD_BEEF;
    sr.service_data64[1] = 0x0123_4567_89AB_CDEF;
    let mask = (0..37).fold(0u64, |m, b| if b == 3 { m } else { m | 1 << b });
    let a = f.sa(
        SM_LID,
        Method::SET,
        AttributeId::SA_SERVICE_RECORD,
        0,
        mask,
        &bytes(&sr),
    );
    assert_eq!(a.status, 0, "ServiceRecord Set refused");

    // The last 8 bytes of OpenSM's answer (ServiceData64.2) came back as
    // 0 to saquery and as stray bytes to our client, not as what was
    // registered: this compares saquery's text with the formatter applied
    // to the very MAD saquery received (its `-d -d` dump).
    for args in [&["-d", "-d", "SR"][..], &["-d", "-d", "-S"][..]] {
        let (mads, text) = run_saquery_seen(&sim, args);
        assert_eq!(mads.len(), 1, "one SA answer expected");
        let a = SaAnswer::from_mad(mads[0].clone());
        let records = a.records::<ServiceRecord>();
        assert_eq!(records.len(), 1, "the registered service is listed");
        assert_eq!(records[0].name(), "madstack diags test");
        let ours = sa::format_all(&records, |r| sa::format_service_record(r, false));
        assert!(
            text == ours,
            "`saquery {}` differs\n--- saquery:\n{text}\n--- ours:\n{ours}",
            args.join(" ")
        );
    }
}
