//! Cases: LID-routed and directed-route SMPs of every attribute.

use mad_core::pcap::Direction;
use mad_core::wire::attr::*;
use mad_core::wire::field::Fields;
use mad_core::wire::smp::{DrSmpRepr, SmpRepr};
use mad_core::wire::{AttributeId, Method, MgmtClass, Repr};

use crate::attrs::*;
use crate::expect::*;

// --------------------------------------------------------------- cases

/// A LID-routed SMP GetResp carrying `attr`; `more` adds the attribute's
/// expectations.
pub(crate) fn smp_case<T: Repr + Fields>(
    rng: &mut Rng,
    name: &str,
    attr_id: AttributeId,
    attr_mod: u32,
    attr: &T,
    more: impl FnOnce(&mut Expect, &T, &SmpRepr),
) -> Case {
    let smp = smp_lid(
        rng,
        Method::GET,
        true,
        attr_id,
        attr_mod,
        &attr.to_vec().expect("emit"),
    );
    let mut c = Case::new(
        name,
        smp.to_vec().expect("emit SMP"),
        0x0101,
        0x0202,
        Direction::Received,
    );
    expect_smp_lid(&mut c.expect, &smp);
    more(&mut c.expect, attr, &smp);
    c
}

pub(crate) fn smp_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    let a: NodeInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP NodeInfo",
        AttributeId::NODE_INFO,
        0,
        &a,
        |e, a, _| e.fields(a, "", NODE_INFO),
    ));
    let a = NodeDescription {
        desc: text("madstack sw-7 HCA-2 mlx5_0 port 1"),
    };
    out.push(smp_case(
        rng,
        "SMP NodeDescription",
        AttributeId::NODE_DESC,
        0,
        &a,
        |e, a, _| {
            e.text(
                "infiniband.nodedescription.nodestring",
                &a.desc,
                "NodeDescription.desc",
            );
        },
    ));
    let a: PortInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP PortInfo",
        AttributeId::PORT_INFO,
        3,
        &a,
        |e, a, _| expect_port_info(e, a, ""),
    ));
    let a: SwitchInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SwitchInfo",
        AttributeId::SWITCH_INFO,
        0,
        &a,
        |e, a, _| e.fields(a, "", SWITCH_INFO),
    ));
    let a: GuidInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP GUIDInfo",
        AttributeId::GUID_INFO,
        2,
        &a,
        |e, a, _| e.field(a, "infiniband.switchinfo.guid", "guids"),
    ));
    let a: PKeyTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP P_KeyTable",
        AttributeId::PKEY_TABLE,
        0x0005_0001,
        &a,
        |e, a, smp| {
            e.bytes(
                "infiniband.p_keytable.p_keytableblock",
                &smp.data,
                "PKeyTable (SmpRepr.data)",
            );
            expect_pkeys(e, a, "pkeys");
        },
    ));
    let a: SlToVlTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SLtoVLMappingTable",
        AttributeId::SL_TO_VL_TABLE,
        0x0000_0203,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            for i in 0..8 {
                e.uint(
                    "infiniband.sltovlmappingtable.sltovlhighbits",
                    u64::from(a.vl[2 * i]),
                    format!("SlToVlTable.vl[{}]", 2 * i),
                );
                e.uint(
                    "infiniband.sltovlmappingtable.sltovllowbits",
                    u64::from(a.vl[2 * i + 1]),
                    format!("SlToVlTable.vl[{}]", 2 * i + 1),
                );
            }
        },
    ));
    let a: VlArbTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP VLArbitrationTable",
        AttributeId::VL_ARB_TABLE,
        0x0002_0004,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.field_xf(a, "infiniband.vlarbitrationtable.vl", "entries", |v| {
                (v >> 8) & 0x0F
            });
            e.field_xf(a, "infiniband.vlarbitrationtable.weight", "entries", |v| {
                v & 0xFF
            });
        },
    ));
    let a: LinearFwdTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP LinearForwardingTable",
        AttributeId::LINEAR_FWD_TABLE,
        7,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.field(a, "infiniband.linearforwardingtable.port", "ports");
        },
    ));
    let a: MulticastFwdTable = varied(rng);
    out.push(smp_case(
        rng,
        "SMP MulticastForwardingTable",
        AttributeId::MCAST_FWD_TABLE,
        0x2000_0003,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            // tshark shows only the first 16 of the block's 32 PortMasks.
            for (i, m) in a.masks.iter().enumerate().take(16) {
                e.uint(
                    "infiniband.multicastforwardingtable.portmask",
                    u64::from(*m),
                    format!("MulticastFwdTable.masks[{i}]"),
                );
            }
        },
    ));
    let a: SmInfo = varied(rng);
    out.push(smp_case(
        rng,
        "SMP SMInfo",
        AttributeId::SM_INFO,
        0,
        &a,
        |e, a, smp| {
            e.field(smp, "infiniband.smplid.smpdata", "data");
            e.fields(a, "", SM_INFO);
        },
    ));
    // Traps carrying a Notice, one per DataDetails layout tshark decodes.
    // (Trap 259 is left out: tshark 4.0's own dissection of it is malformed,
    // "Trying to fetch an IPv6 address with length 2", whatever the bytes.)
    for tn in [64u16, 65, 128, 129, 130, 131, 144, 145, 256, 257, 258] {
        let mut n: Notice = varied(rng);
        n.is_generic = true;
        n.notice_type = (tn % 5) as u8;
        n.producer_type_or_vendor_id = u32::from(tn % 4) + 1;
        n.trap_number_or_device_id = tn;
        let smp = smp_lid(
            rng,
            Method::TRAP,
            false,
            AttributeId::NOTICE,
            0,
            &n.to_vec().expect("emit")[..64],
        );
        let mut c = Case::new(
            &format!("SMP Trap {tn}"),
            smp.to_vec().expect("emit SMP"),
            0x0009,
            0x0001,
            Direction::Received,
        );
        let e = &mut c.expect;
        expect_smp_lid(e, &smp);
        e.field(&smp, "infiniband.smplid.smpdata", "data");
        e.fields(&n, "", NOTICE);
        e.field(&n, "infiniband.notice.datadetails", "data_details");
        e.field(&n, "infiniband.smplid.smpdata", "data_details");
        expect_trap_details(e, &n);
        out.push(c);
    }
}

pub(crate) fn dr_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for (i, (ni_hops, direction)) in [(&[1u8, 7, 3, 12][..], true), (&[2u8, 5][..], false)]
        .into_iter()
        .enumerate()
    {
        let ni: NodeInfo = varied(rng);
        let mut d = [0u8; 64];
        d[..40].copy_from_slice(&ni.to_vec().expect("emit"));
        let mut ip = [0u8; 64];
        ip[1..=ni_hops.len()].copy_from_slice(ni_hops);
        let mut rp = [0u8; 64];
        if direction {
            for (k, h) in ni_hops.iter().enumerate() {
                rp[k + 1] = h.wrapping_mul(3) % 36 + 1;
            }
        }
        let dr = DrSmpRepr {
            base_version: 1,
            mgmt_class: MgmtClass::SUBN_DIRECTED_ROUTE,
            class_version: 1,
            response: direction,
            method: Method::GET,
            direction,
            status: if direction { 0x001C } else { 0 },
            hop_ptr: if direction { ni_hops.len() as u8 } else { 0 },
            hop_cnt: ni_hops.len() as u8,
            tid: rng.next_u64(),
            attr_id: AttributeId::NODE_INFO,
            reserved: 0,
            attr_mod: 0,
            m_key: rng.next_u64(),
            dr_slid: if i == 0 { 0xFFFF } else { 0x0011 },
            dr_dlid: if i == 0 { 0x0042 } else { 0xFFFF },
            reserved1: [0; 28],
            data: d,
            initial_path: ip,
            return_path: rp,
        };
        let mad = dr.to_vec().expect("emit DR SMP");
        let name = format!(
            "DR SMP NodeInfo {}",
            if direction { "returning" } else { "outbound" }
        );
        let mut c = Case::new(&name, mad.clone(), 0xFFFF, 0xFFFF, Direction::Sent);
        let e = &mut c.expect;
        e.bytes("infiniband.smpdirected", &mad, "the whole DR SMP");
        e.uint(
            "infiniband.smpdirected.smpstatus",
            (u64::from(dr.direction) << 15) | u64::from(dr.status),
            "DrSmpRepr.direction<<15 | DrSmpRepr.status",
        );
        e.quirk(
            "infiniband.smpdirected.d",
            Want::Uint(0),
            "DrSmpRepr.direction",
            "mask 0x8000 on a 1-byte item",
        );
        e.field(&dr, "infiniband.smpdirected.hoppointer", "hop_ptr");
        e.field(&dr, "infiniband.smpdirected.hopcount", "hop_cnt");
        e.field(&dr, "infiniband.smplid.mkey", "m_key");
        e.field(&dr, "infiniband.smpdirected.drslid", "dr_slid");
        e.field(&dr, "infiniband.smpdirected.drdlid", "dr_dlid");
        e.field(&dr, &at(P_SMPDR, "infiniband.reserved"), "reserved1");
        e.field(&dr, "infiniband.smplid.smpdata", "data");
        e.fields(&ni, "", NODE_INFO);
        e.field(&dr, "infiniband.smpdirected.initialpath", "initial_path");
        e.field(&dr, "infiniband.smpdirected.returnpath", "return_path");
        out.push(c);
    }
}
