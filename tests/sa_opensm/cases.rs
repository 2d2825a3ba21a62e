//! The queries compared: every record type against the `net` fabric.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use crate::compare::*;
use crate::fields::*;
use crate::support::IbSim;
use mad_agents::sa::SaClient;
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, ServiceRecord, SmInfoRecord, SwitchInfoRecord,
};
use mad_core::wire::{AttributeId, Method};

pub(crate) fn cases(nodes: &[(u16, NodeRecord)]) -> Vec<Case> {
    let ca: Vec<u16> = nodes
        .iter()
        .filter(|(_, n)| n.node_info.node_type.0 == 1)
        .map(|(l, _)| *l)
        .collect();
    let sw: Vec<u16> = nodes
        .iter()
        .filter(|(_, n)| n.node_info.node_type.0 == 2)
        .map(|(l, _)| *l)
        .collect();
    let mut v = vec![
        case("nr_all", &[], Method::GET_TABLE, &NodeRecord::default(), 0),
        case(
            "lr_all",
            &["LR"],
            Method::GET_TABLE,
            &LinkRecord::default(),
            0,
        ),
        case(
            "pr_all",
            &["PR"],
            Method::GET_TABLE,
            &PathRecord::default(),
            0,
        ),
        case(
            "swir_all",
            &["SWIR"],
            Method::GET_TABLE,
            &SwitchInfoRecord::default(),
            0,
        ),
        case(
            "smir_all",
            &["SMIR"],
            Method::GET_TABLE,
            &SmInfoRecord::default(),
            0,
        ),
        case(
            "gir_all",
            &["GIR"],
            Method::GET_TABLE,
            &GuidInfoRecord::default(),
            0,
        ),
        case(
            "pktr_all",
            &["PKTR"],
            Method::GET_TABLE,
            &PKeyTableRecord::default(),
            0,
        ),
        case(
            "mcmr_all",
            &["MCMR"],
            Method::GET_TABLE,
            &McMemberRecord::default(),
            0,
        ),
        case(
            "sr_all",
            &["SR"],
            Method::GET_TABLE,
            &ServiceRecord::default(),
            0,
        ),
        case(
            "iir_all",
            &["IIR"],
            Method::GET_TABLE,
            &InformInfoRecord::default(),
            0,
        ),
        case(
            "pir_all",
            &["PIR"],
            Method::GET_TABLE,
            &PortInfoRecord::default(),
            0,
        ),
        Case {
            name: "cpi".to_owned(),
            saquery: vec!["CPI".to_owned()],
            method: Method::GET,
            attr: AttributeId::CLASS_PORT_INFO,
            comp_mask: 0,
            template: Vec::new(),
        },
    ];
    for (lid, _) in nodes {
        let l = lid.to_string();
        v.push(case(
            &format!("nr_lid{lid}"),
            &["NR", &l],
            Method::GET_TABLE,
            &NodeRecord {
                lid: *lid,
                ..NodeRecord::default()
            },
            NodeRecord::COMP_LID,
        ));
        v.push(case(
            &format!("pir_lid{lid}"),
            &["PIR", &l],
            Method::GET_TABLE,
            &PortInfoRecord {
                lid: *lid,
                ..PortInfoRecord::default()
            },
            PortInfoRecord::COMP_LID,
        ));
        v.push(case(
            &format!("lr_from{lid}"),
            &["LR", &l],
            Method::GET_TABLE,
            &LinkRecord {
                from_lid: *lid,
                ..LinkRecord::default()
            },
            LinkRecord::COMP_FROM_LID,
        ));
        v.push(case(
            &format!("gir_lid{lid}"),
            &["GIR", &format!("{lid}/0")],
            Method::GET_TABLE,
            &GuidInfoRecord {
                lid: *lid,
                ..GuidInfoRecord::default()
            },
            GuidInfoRecord::COMP_LID | GuidInfoRecord::COMP_BLOCK_NUM,
        ));
    }
    for lid in &sw {
        let l = lid.to_string();
        v.push(case(
            &format!("swir_lid{lid}"),
            &["SWIR", &l],
            Method::GET_TABLE,
            &SwitchInfoRecord {
                lid: *lid,
                ..SwitchInfoRecord::default()
            },
            SwitchInfoRecord::COMP_LID,
        ));
        v.push(case(
            &format!("lftr_lid{lid}_b0"),
            &["LFTR", &format!("{lid}/0")],
            Method::GET_TABLE,
            &LftRecord {
                lid: *lid,
                ..LftRecord::default()
            },
            LftRecord::COMP_LID | LftRecord::COMP_BLOCK_NUM,
        ));
        v.push(case(
            &format!("smir_lid{lid}"),
            &["SMIR", &l],
            Method::GET_TABLE,
            &SmInfoRecord {
                lid: *lid,
                ..SmInfoRecord::default()
            },
            SmInfoRecord::COMP_LID,
        ));
    }
    // Paths between every ordered pair of CA LIDs (and to the SM's
    // switch): Get as `--src-to-dst`, GetTable as `PR --slid --dlid`.
    let mut ends = ca.clone();
    ends.extend(sw.first());
    for s in &ends {
        for d in &ends {
            let t = PathRecord {
                slid: *s,
                dlid: *d,
                ..PathRecord::default()
            };
            let m = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
            v.push(case(
                &format!("pr_get_{s}_{d}"),
                &["--src-to-dst", &format!("{s}:{d}")],
                Method::GET,
                &t,
                m,
            ));
            v.push(case(
                &format!("pr_table_{s}_{d}"),
                &["PR", "--slid", &s.to_string(), "--dlid", &d.to_string()],
                Method::GET_TABLE,
                &t,
                m,
            ));
        }
    }
    v
}

/// The cases on `net` kept as fixtures: every record type OpenSM serves,
/// whole tables cut to one MAD and single-record answers, a Get, an error
/// status and empty tables.
pub(crate) const FIXTURES: &[&str] = &[
    "nr_all",
    "nr_lid2",
    "pir_all",
    "pir_lid1",
    "pir_lid2",
    "lr_all",
    "lr_from1",
    "pr_all",
    "pr_get_2_4",
    "pr_table_2_4",
    "swir_all",
    "swir_lid1",
    "smir_all",
    "gir_all",
    "gir_lid2",
    "lftr_lid1_b0",
    "mcmr_all",
    "pktr_all",
    "sr_all",
    "iir_all",
    "iir_subscribed",
    "cpi",
];

/// Runs every case against saquery and our client; returns the fields
/// compared. Writes fixtures into `fixtures` when given.
pub(crate) fn compare_all(
    sim: &IbSim,
    client: &SaClient,
    cases: &[Case],
    topo: &str,
    fixtures: Option<&Path>,
) -> usize {
    let mut failures = Vec::new();
    let mut fields = 0;
    for c in cases {
        let theirs_text = run_saquery(sim, &c.saquery);
        let resp = client
            .request(c.method, c.attr, 0, c.comp_mask, &c.template)
            .unwrap_or_else(|e| panic!("{topo} {}: {e}", c.name));
        let mad = resp.bytes();
        let ours = decode(c.attr, mad).unwrap_or_else(|e| panic!("{topo} {}: {e}", c.name));
        let theirs = parse_saquery(&theirs_text);
        match compare(c.attr, &ours, &theirs, Order::SaqueryFirst) {
            Ok(n) => fields += n,
            Err(e) => failures.push(format!(
                "{topo} {} (saquery {}): {e}\nsaquery printed:\n{theirs_text}",
                c.name,
                c.saquery.join(" ")
            )),
        }
        if let Some(dir) = fixtures.filter(|_| FIXTURES.contains(&c.name.as_str())) {
            let mut hex = String::new();
            let _ = writeln!(
                hex,
                "# OpenSM 3.3 answer on ibsim topology `{topo}` to our SA client (at Hca1), as received through ibsim (one MAD: libumad2sim does no RMPP)"
            );
            let _ = writeln!(
                hex,
                "# query: {} {} comp_mask {:#018x}; saquery {}",
                c.method.name().unwrap_or("?"),
                attr_name(c.attr),
                c.comp_mask,
                c.saquery.join(" ")
            );
            let _ = writeln!(hex, "# attribute {}", attr_name(c.attr));
            hex.push_str(&to_hex(mad));
            fs::write(dir.join(format!("{}.hex", c.name)), hex).expect("write fixture");
            fs::write(dir.join(format!("{}.saquery", c.name)), &theirs_text)
                .expect("write fixture");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    fields
}
