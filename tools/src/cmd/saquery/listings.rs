//! saquery's listings that are not one record type's query: the node
//! list and its name and LID look-ups (`-N`, `-D`, `-L`, `-l`, `-G`,
//! `-O`, `-U`, no argument), the IsSM ports (`-s`), the multicast groups
//! (`-g`) and their members (`-m`).

use mad_core::wire::attr::port_cap;
use mad_core::wire::sa_records::{McMemberRecord, NodeRecord, PortInfoRecord};
use mad_core::wire::Repr;

use super::options::NodePrint;
use super::query::{desc_eq, Ctx, Fail};
use crate::diags::sa;
use crate::ibdiag;

/// `print_node_records`.
pub(super) fn print_node_records(
    c: &mut Ctx<'_>,
    how: NodePrint,
    requested_name: Option<&str>,
    requested_lid: u16,
    requested_guid: u64,
) -> Result<bool, Fail> {
    c.attribute = "NodeRecord";
    let a = c.get_all(0x0011)?;
    let records = a.records::<NodeRecord>();
    if how == NodePrint::AllDesc {
        let remapped: Vec<NodeRecord> = records.iter().map(|r| c.remap(r)).collect();
        c.out.push_str(&sa::format_node_list(&remapped));
        for r in remapped.iter().filter(|r| r.node_info.node_type.0 == 1) {
            c.json_records.push(ibdiag::attr_json(r));
        }
        return Ok(false);
    }
    for nr in &records {
        let shown = c.remap(nr);
        let print = |c: &mut Ctx<'_>| {
            let s = match how {
                NodePrint::LidOnly | NodePrint::UniqueLidOnly => sa::format_node_lid(nr),
                NodePrint::GuidOnly => sa::format_node_port_guid(nr),
                NodePrint::NameOfLid | NodePrint::NameOfGuid => sa::format_node_name(&shown),
                _ => sa::format_node_record(&shown),
            };
            c.out.push_str(&s);
            c.json_records.push(ibdiag::attr_json(&shown));
        };
        match how {
            NodePrint::NameOfLid => {
                if requested_lid == nr.lid {
                    print(c);
                }
            }
            NodePrint::NameOfGuid => {
                if requested_guid == nr.node_info.port_guid {
                    print(c);
                }
            }
            _ => {
                let remapped = c.names.remap(nr.node_info.node_guid, &nr.node_desc);
                let matches = match requested_name {
                    None => true,
                    Some(n) => {
                        desc_eq(n, &nr.node_desc)
                            || n.get(..n.len().min(64)) == remapped.get(..remapped.len().min(64))
                    }
                };
                if matches {
                    print(c);
                    if how == NodePrint::UniqueLidOnly {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// `-s`: the ports with the IsSM, then the IsSMdisabled capability bit.
pub(super) fn print_is_sm(c: &mut Ctx<'_>) -> Result<(), Fail> {
    c.attribute = "PortInfoRecord";
    let issm = |c: &mut Ctx<'_>, bit: u32| -> Result<Vec<PortInfoRecord>, Fail> {
        let mut r = PortInfoRecord::default();
        r.port_info.capability_mask = bit;
        let a = c.get_any(
            0x0012,
            1 << 31,
            PortInfoRecord::COMP_CAPABILITY_MASK,
            &r.to_vec().unwrap_or_default(),
        )?;
        Ok(a.records())
    };
    let sm = issm(c, port_cap::IS_SM)?;
    c.out.push_str("IsSM ports\n");
    c.out
        .push_str(&sa::format_all(&sm, sa::format_portinfo_record_brief));
    let dis = issm(c, port_cap::SM_DISAB)?;
    c.out.push_str("\nIsSMdisabled ports\n");
    c.out
        .push_str(&sa::format_all(&dis, sa::format_portinfo_record_brief));
    for r in sm.iter().chain(&dis) {
        c.json_records.push(ibdiag::attr_json(r));
    }
    Ok(())
}

/// `-g`: the multicast groups.
pub(super) fn print_mc_groups(c: &mut Ctx<'_>) -> Result<(), Fail> {
    c.attribute = "MCMemberRecord";
    let a = c.get_all(0x0038)?;
    c.dump(&a, sa::format_mcgroup_record);
    Ok(())
}

/// `-m [MLID]`: the members of each multicast group (of one group).
pub(super) fn print_mc_members(c: &mut Ctx<'_>, mlid: Option<&str>) -> Result<(), Fail> {
    c.attribute = "MCMemberRecord";
    let g = c.get_all(0x0038)?;
    let n = c.get_all(0x0011)?;
    let groups = g.records::<McMemberRecord>();
    let nodes: Vec<NodeRecord> = n
        .records::<NodeRecord>()
        .iter()
        .map(|r| c.remap(r))
        .collect();
    c.out
        .push_str(&sa::format_mcmember_members(&groups, &nodes, mlid));
    for r in &groups {
        c.json_records.push(ibdiag::attr_json(r));
    }
    Ok(())
}
