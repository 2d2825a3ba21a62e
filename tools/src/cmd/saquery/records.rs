//! saquery's record types (`query_cmds`), one entry each: its names,
//! its SA attribute, its usage, how its query's template and component
//! mask are built from the arguments and options, and how a record
//! prints.

use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, Sl2VlRecord, SmInfoRecord, SwitchInfoRecord,
    VlArbRecord,
};
use mad_core::wire::Repr;

use super::options::Params;
use super::query::{parse_lid_and_ports, pton6, set16, set8, Answer, Ctx, Fail};
use crate::diags::sa;
use crate::ibdiag;

/// What a record type's query gets besides the SA: the options, the
/// arguments after the query name, the SA's ClassPortInfo when read.
pub(super) struct Query<'q> {
    /// The PathRecord / MCMemberRecord options.
    pub params: &'q Params,
    /// The arguments after the query name.
    pub args: &'q [String],
    /// The SA's ClassPortInfo (read first for CPI and SWIR).
    pub cpi: Option<&'q ClassPortInfo>,
}

/// A template record and its component mask (`None`: no query, the
/// ClassPortInfo read first is the answer).
type Template = Option<(Vec<u8>, u64)>;

/// One record type of saquery.
pub(super) struct RecordType {
    /// Its name (`NodeRecord`), also the `attribute` of the JSON.
    pub name: &'static str,
    /// Its alias (`NR`); both match case-insensitively.
    pub alias: &'static str,
    /// The SA attribute.
    pub attr: u16,
    /// Its arguments in the usage text.
    pub usage: &'static str,
    /// The query's template and component mask.
    pub template: fn(&mut Ctx<'_>, &Query<'_>) -> Result<Template, Fail>,
    /// Prints the answer's records (text and JSON).
    pub print: fn(&mut Ctx<'_>, &Answer, &Query<'_>),
}

/// A template record being filled as saquery's `CHECK_AND_SET_VAL`
/// macros fill it: a field given (not 0 for a LID, not -1 for a number)
/// is set, and its component-mask bit with it.
#[derive(Default)]
struct Mask(u64);

impl Mask {
    fn lid(&mut self, bit: u64, v: u16, field: &mut u16) {
        if v != 0 {
            *field = v;
            self.0 |= bit;
        }
    }

    fn u8(&mut self, bit: u64, v: Option<u8>, field: &mut u8) {
        if let Some(v) = v {
            *field = v;
            self.0 |= bit;
        }
    }

    fn u16(&mut self, bit: u64, v: Option<u16>, field: &mut u16) {
        if let Some(v) = v {
            *field = v;
            self.0 |= bit;
        }
    }

    fn with<R: Repr>(self, r: &R) -> Template {
        Some((r.to_vec().unwrap_or_default(), self.0))
    }
}

/// `parse_lid_and_ports` of argument `i`: `(0, -1, -1)` when absent.
fn lid_ports(c: &mut Ctx<'_>, q: &Query<'_>, i: usize) -> Result<(u16, i64, i64), Fail> {
    match q.args.get(i) {
        Some(a) => parse_lid_and_ports(c, a),
        None => Ok((0, -1, -1)),
    }
}

/// The template of a record type keyed by LID alone (`[lid]`).
fn by_lid<R: Repr + Default>(
    c: &mut Ctx<'_>,
    q: &Query<'_>,
    bit: u64,
    lid_of: fn(&mut R) -> &mut u16,
) -> Result<Template, Fail> {
    let (lid, _, _) = lid_ports(c, q, 0)?;
    let mut r = R::default();
    let mut m = Mask::default();
    m.lid(bit, lid, lid_of(&mut r));
    Ok(m.with(&r))
}

/// Every record of the type (a GetTable without a template).
#[allow(clippy::unnecessary_wraps)]
fn all(_: &mut Ctx<'_>, _: &Query<'_>) -> Result<Template, Fail> {
    Ok(Some((Vec::new(), 0)))
}

/// The ClassPortInfo as saquery prints it (also `-c`).
pub(super) fn print_class_port_info(c: &mut Ctx<'_>, cpi: Option<&ClassPortInfo>) {
    c.attribute = "ClassPortInfo";
    if let Some(cpi) = cpi {
        c.out.push_str(&sa::format_class_port_info(cpi));
        c.json_records.push(ibdiag::attr_json(cpi));
    }
}

/// `query_cmds`, in saquery's order (the usage lists them so).
pub(super) const RECORD_TYPES: &[RecordType] = &[
    RecordType {
        name: "ClassPortInfo",
        alias: "CPI",
        attr: 0x0001,
        usage: "",
        template: |_, _| Ok(None),
        print: |c, _, q| print_class_port_info(c, q.cpi),
    },
    RecordType {
        name: "NodeRecord",
        alias: "NR",
        attr: 0x0011,
        usage: "[lid]",
        template: |c, q| by_lid(c, q, NodeRecord::COMP_LID, |r: &mut NodeRecord| &mut r.lid),
        print: |c, a, _| {
            for r in a.records::<NodeRecord>() {
                let r = c.remap(&r);
                c.out.push_str(&sa::format_node_record(&r));
                c.json_records.push(ibdiag::attr_json(&r));
            }
        },
    },
    RecordType {
        name: "PortInfoRecord",
        alias: "PIR",
        attr: 0x0012,
        usage: "[[lid]/[port]/[options]]",
        template: |c, q| {
            let (lid, port, options) = lid_ports(c, q, 0)?;
            let mut r = PortInfoRecord::default();
            let mut m = Mask::default();
            m.lid(PortInfoRecord::COMP_LID, lid, &mut r.lid);
            m.u8(PortInfoRecord::COMP_PORT_NUM, set8(port), &mut r.port_num);
            m.u8(PortInfoRecord::COMP_OPTIONS, set8(options), &mut r.options);
            Ok(m.with(&r))
        },
        print: |c, a, _| {
            let keys = c.show_keys;
            c.dump(a, |r: &PortInfoRecord| sa::format_portinfo_record(r, keys));
        },
    },
    RecordType {
        name: "SL2VLTableRecord",
        alias: "SL2VL",
        attr: 0x0013,
        usage: "[[lid]/[in_port]/[out_port]]",
        template: |c, q| {
            let (lid, inp, outp) = lid_ports(c, q, 0)?;
            let mut r = Sl2VlRecord::default();
            let mut m = Mask::default();
            m.lid(Sl2VlRecord::COMP_LID, lid, &mut r.lid);
            m.u8(Sl2VlRecord::COMP_INPUT_PORT, set8(inp), &mut r.input_port);
            m.u8(
                Sl2VlRecord::COMP_OUTPUT_PORT,
                set8(outp),
                &mut r.output_port,
            );
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_sl2vl_record),
    },
    RecordType {
        name: "PKeyTableRecord",
        alias: "PKTR",
        attr: 0x0033,
        usage: "[[lid]/[port]/[block]]",
        template: |c, q| {
            let (lid, port, block) = lid_ports(c, q, 0)?;
            let mut r = PKeyTableRecord::default();
            let mut m = Mask::default();
            m.lid(PKeyTableRecord::COMP_LID, lid, &mut r.lid);
            m.u8(PKeyTableRecord::COMP_PORT_NUM, set8(port), &mut r.port_num);
            m.u16(
                PKeyTableRecord::COMP_BLOCK_NUM,
                set16(block),
                &mut r.block_num,
            );
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_pkey_table_record),
    },
    RecordType {
        name: "VLArbitrationTableRecord",
        alias: "VLAR",
        attr: 0x0036,
        usage: "[[lid]/[port]/[block]]",
        template: |c, q| {
            let (lid, port, block) = lid_ports(c, q, 0)?;
            let mut r = VlArbRecord::default();
            let mut m = Mask::default();
            m.lid(VlArbRecord::COMP_LID, lid, &mut r.lid);
            m.u8(
                VlArbRecord::COMP_OUTPUT_PORT,
                set8(port),
                &mut r.output_port,
            );
            m.u8(VlArbRecord::COMP_BLOCK_NUM, set8(block), &mut r.block_num);
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_vlarb_record),
    },
    RecordType {
        name: "InformInfoRecord",
        alias: "IIR",
        attr: 0x00F3,
        usage: "[subscriber_gid]",
        template: |_, q| {
            let mut r = InformInfoRecord::default();
            let mut mask = 0;
            if let Some(a) = q.args.first() {
                let Some(g) = pton6(a) else {
                    return Err(Fail {
                        stderr: format!("Invalid SubscriberGID specified: \"{a}\"\n"),
                        code: 22,
                    });
                };
                r.subscriber_gid = g;
                mask = InformInfoRecord::COMP_SUBSCRIBER_GID;
            }
            Ok(Mask(mask).with(&r))
        },
        print: |c, a, _| {
            let keys = c.show_keys;
            c.dump(a, |r: &InformInfoRecord| {
                sa::format_inform_info_record(r, keys)
            });
        },
    },
    RecordType {
        name: "LinkRecord",
        alias: "LR",
        attr: 0x0020,
        usage: "[[from_lid]/[from_port]] [[to_lid]/[to_port]]",
        template: |c, q| {
            let (from_lid, from_port, _) = lid_ports(c, q, 0)?;
            let (to_lid, to_port, _) = lid_ports(c, q, 1)?;
            let mut r = LinkRecord::default();
            let mut m = Mask::default();
            m.lid(LinkRecord::COMP_FROM_LID, from_lid, &mut r.from_lid);
            m.u8(
                LinkRecord::COMP_FROM_PORT,
                set8(from_port),
                &mut r.from_port,
            );
            m.lid(LinkRecord::COMP_TO_LID, to_lid, &mut r.to_lid);
            m.u8(LinkRecord::COMP_TO_PORT, set8(to_port), &mut r.to_port);
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_link_record),
    },
    RecordType {
        name: "ServiceRecord",
        alias: "SR",
        attr: 0x0031,
        usage: "",
        template: all,
        print: |c, a, _| {
            let keys = c.show_keys;
            c.dump(a, |r: &mad_core::wire::sa_records::ServiceRecord| {
                sa::format_service_record(r, keys)
            });
        },
    },
    RecordType {
        name: "PathRecord",
        alias: "PR",
        attr: 0x0035,
        usage: "",
        template: |_, q| {
            let (r, mask) = path_template(q.params);
            Ok(Mask(mask).with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_path_record),
    },
    RecordType {
        name: "MCMemberRecord",
        alias: "MCMR",
        attr: 0x0038,
        usage: "",
        template: |_, q| {
            let (r, mask) = mcmember_template(q.params);
            Ok(Mask(mask).with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_mcmember_record),
    },
    RecordType {
        name: "LFTRecord",
        alias: "LFTR",
        attr: 0x0015,
        usage: "[[lid]/[block]]",
        template: |c, q| {
            let (lid, block, _) = lid_ports(c, q, 0)?;
            let mut r = LftRecord::default();
            let mut m = Mask::default();
            m.lid(LftRecord::COMP_LID, lid, &mut r.lid);
            m.u16(LftRecord::COMP_BLOCK_NUM, set16(block), &mut r.block_num);
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_lft_record),
    },
    RecordType {
        name: "MFTRecord",
        alias: "MFTR",
        attr: 0x0017,
        usage: "[[mlid]/[position]/[block]]",
        template: |c, q| {
            let (lid, position, block) = lid_ports(c, q, 0)?;
            let mut r = MftRecord::default();
            let mut m = Mask::default();
            m.lid(MftRecord::COMP_LID, lid, &mut r.lid);
            m.u16(
                MftRecord::COMP_BLOCK_NUM,
                set16(block).map(|v| v & 0x1FF),
                &mut r.block_num,
            );
            m.u8(
                MftRecord::COMP_POSITION,
                set8(position).map(|v| v & 0xF),
                &mut r.position,
            );
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_mft_record),
    },
    RecordType {
        name: "GUIDInfoRecord",
        alias: "GIR",
        attr: 0x0030,
        usage: "[[lid]/[block]]",
        template: |c, q| {
            let (lid, block, _) = lid_ports(c, q, 0)?;
            let mut r = GuidInfoRecord::default();
            let mut m = Mask::default();
            m.lid(GuidInfoRecord::COMP_LID, lid, &mut r.lid);
            m.u8(
                GuidInfoRecord::COMP_BLOCK_NUM,
                set8(block),
                &mut r.block_num,
            );
            Ok(m.with(&r))
        },
        print: |c, a, _| c.dump(a, sa::format_guidinfo_record),
    },
    RecordType {
        name: "SwitchInfoRecord",
        alias: "SWIR",
        attr: 0x0014,
        usage: "[lid]",
        template: |c, q| {
            by_lid(
                c,
                q,
                SwitchInfoRecord::COMP_LID,
                |r: &mut SwitchInfoRecord| &mut r.lid,
            )
        },
        print: |c, a, q| {
            let cap2 = q.cpi.map_or(0, |c| c.capability_mask2);
            c.dump(a, |r: &SwitchInfoRecord| {
                sa::format_switch_info_record(r, cap2)
            });
        },
    },
    RecordType {
        name: "SMInfoRecord",
        alias: "SMIR",
        attr: 0x0018,
        usage: "[lid]",
        template: |c, q| {
            by_lid(c, q, SmInfoRecord::COMP_LID, |r: &mut SmInfoRecord| {
                &mut r.lid
            })
        },
        print: |c, a, _| c.dump(a, sa::format_sm_info_record),
    },
];

/// The record type named `name` (or its alias), any case.
pub(super) fn find(name: &str) -> Option<&'static RecordType> {
    RECORD_TYPES
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name) || t.alias.eq_ignore_ascii_case(name))
}

/// The record type of SA attribute `attr`.
pub(super) fn of_attr(attr: u16) -> Option<&'static RecordType> {
    RECORD_TYPES.iter().find(|t| t.attr == attr)
}

/// The record name of SA attribute `attr` (`NodeRecord`, ...).
pub(super) fn attr_name(attr: u16) -> String {
    of_attr(attr).map_or_else(|| format!("attribute 0x{attr:04x}"), |t| t.name.to_owned())
}

/// Runs the query of record type `t` and prints its records.
///
/// # Errors
/// The query's failure (its message and saquery's exit status).
pub(super) fn query(c: &mut Ctx<'_>, t: &RecordType, q: &Query<'_>) -> Result<(), Fail> {
    c.attribute = t.name;
    let Some((template, mask)) = (t.template)(c, q)? else {
        (t.print)(c, &Answer::default(), q);
        return Ok(());
    };
    let a = c.get_any(t.attr, 0, mask, &template)?;
    (t.print)(c, &a, q);
    Ok(())
}

/// `query_path_records`'s template and component mask.
pub(super) fn path_template(p: &Params) -> (PathRecord, u64) {
    let mut pr = PathRecord::default();
    let mut m = 0;
    if p.service_id != 0 {
        pr.service_id = p.service_id;
        m |= PathRecord::COMP_SERVICE_ID;
    }
    if p.sgid != [0; 16] {
        pr.sgid = p.sgid;
        m |= PathRecord::COMP_SGID;
    }
    if p.dgid != [0; 16] {
        pr.dgid = p.dgid;
        m |= PathRecord::COMP_DGID;
    }
    if p.slid != 0 {
        pr.slid = p.slid;
        m |= PathRecord::COMP_SLID;
    }
    if p.dlid != 0 {
        pr.dlid = p.dlid;
        m |= PathRecord::COMP_DLID;
    }
    if p.hop_limit != -1 {
        pr.hop_limit = p.hop_limit as u8;
        m |= PathRecord::COMP_HOP_LIMIT;
    }
    if p.flow_label as u8 != 0 {
        pr.flow_label = u32::from(p.flow_label as u8);
        m |= PathRecord::COMP_FLOW_LABEL;
    }
    if p.tclass != 0 {
        pr.tclass = p.tclass;
        m |= PathRecord::COMP_TCLASS;
    }
    let mut reversible = 0u8;
    if p.reversible as i8 != -1 {
        reversible = p.reversible as u8;
        m |= PathRecord::COMP_REVERSIBLE;
    }
    let mut num_path = 0u8;
    if p.numb_path as i8 != -1 {
        num_path = p.numb_path as u8;
        m |= PathRecord::COMP_NUMB_PATH;
    }
    num_path |= reversible << 7;
    pr.numb_path = num_path & 0x7F;
    pr.reversible = num_path & 0x80 != 0;
    if p.pkey != 0 {
        pr.pkey = p.pkey;
        m |= PathRecord::COMP_PKEY;
    }
    if p.sl as i16 != -1 {
        pr.sl = (p.sl & 0xF) as u8;
        pr.qos_class = ((p.sl as u16) >> 4) & 0xFFF;
        m |= PathRecord::COMP_SL;
    }
    if p.qos_class != -1 {
        pr.qos_class = (p.qos_class & 0xFFF) as u16;
        m |= PathRecord::COMP_QOS_CLASS;
    } else {
        pr.qos_class = 0;
    }
    if p.mtu != 0 {
        pr.mtu_selector.0 = p.mtu >> 6;
        pr.mtu = p.mtu & 0x3F;
        m |= PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR;
    }
    if p.rate != 0 {
        pr.rate_selector.0 = p.rate >> 6;
        pr.rate = p.rate & 0x3F;
        m |= PathRecord::COMP_RATE | PathRecord::COMP_RATE_SELECTOR;
    }
    if p.pkt_life != 0 {
        pr.packet_life_time_selector.0 = p.pkt_life >> 6;
        pr.packet_life_time = p.pkt_life & 0x3F;
        m |= PathRecord::COMP_PACKET_LIFE_TIME | PathRecord::COMP_PACKET_LIFE_TIME_SELECTOR;
    }
    (pr, m)
}

/// `query_mcmember_records`'s template and component mask.
pub(super) fn mcmember_template(p: &Params) -> (McMemberRecord, u64) {
    let mut mr = McMemberRecord::default();
    let mut m = 0;
    if p.mgid != [0; 16] {
        mr.mgid = p.mgid;
        m |= McMemberRecord::COMP_MGID;
    }
    if p.gid != [0; 16] {
        mr.port_gid = p.gid;
        m |= McMemberRecord::COMP_PORT_GID;
    }
    if p.mlid != 0 {
        mr.mlid = p.mlid;
        m |= McMemberRecord::COMP_MLID;
    }
    if p.qkey != 0 {
        mr.qkey = p.qkey;
        m |= McMemberRecord::COMP_QKEY;
    }
    if p.mtu != 0 {
        mr.mtu_selector.0 = p.mtu >> 6;
        mr.mtu = p.mtu & 0x3F;
        m |= McMemberRecord::COMP_MTU | McMemberRecord::COMP_MTU_SELECTOR;
    }
    if p.rate != 0 {
        mr.rate_selector.0 = p.rate >> 6;
        mr.rate = p.rate & 0x3F;
        m |= McMemberRecord::COMP_RATE | McMemberRecord::COMP_RATE_SELECTOR;
    }
    if p.pkt_life != 0 {
        mr.packet_life_time_selector.0 = p.pkt_life >> 6;
        mr.packet_life_time = p.pkt_life & 0x3F;
        m |= McMemberRecord::COMP_PACKET_LIFE_TIME | McMemberRecord::COMP_PACKET_LIFE_TIME_SELECTOR;
    }
    if p.tclass != 0 {
        mr.tclass = p.tclass;
        m |= McMemberRecord::COMP_TCLASS;
    }
    if p.pkey != 0 {
        mr.pkey = p.pkey;
        m |= McMemberRecord::COMP_PKEY;
    }
    if p.sl as i8 != -1 {
        mr.sl = (p.sl & 0xF) as u8;
        m |= McMemberRecord::COMP_SL;
    }
    if p.flow_label as u8 != 0 {
        mr.flow_label = u32::from(p.flow_label as u8);
        m |= McMemberRecord::COMP_FLOW_LABEL;
    }
    if p.hop_limit as i8 != -1 {
        mr.hop_limit = p.hop_limit as u8;
        m |= McMemberRecord::COMP_HOP_LIMIT;
    }
    if p.scope != 0 {
        mr.scope = p.scope & 0xF;
        m |= McMemberRecord::COMP_SCOPE;
    }
    if p.join_state != 0 {
        mr.join_state = p.join_state & 0xF;
        mr.scope |= p.join_state >> 4;
        m |= McMemberRecord::COMP_JOIN_STATE;
    }
    if p.proxy_join as i8 != -1 {
        mr.proxy_join = p.proxy_join & 1 != 0;
        m |= McMemberRecord::COMP_PROXY_JOIN;
    }
    (mr, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_template_follows_check_and_set() {
        let p = Params {
            slid: 2,
            dlid: 4,
            numb_path: 0x7f,
            ..Params::default()
        };
        let (pr, m) = path_template(&p);
        assert_eq!((pr.slid, pr.dlid, pr.numb_path), (2, 4, 0x7f));
        assert_eq!(
            m,
            PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_NUMB_PATH
        );
        let p = Params {
            mtu: 0x84,
            reversible: 1,
            ..Params::default()
        };
        let (pr, m) = path_template(&p);
        assert_eq!((pr.mtu_selector.0, pr.mtu, pr.reversible), (2, 4, true));
        assert_eq!(
            m,
            PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR | PathRecord::COMP_REVERSIBLE
        );
    }
}
