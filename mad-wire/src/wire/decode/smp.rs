//! Subnet management packets: the SMP header, then the attribute.

use super::layer::{boxed, push_attribute, push_fields, slice_at, DecodedMad, Known, Without};
use crate::wire::smp::{DrSmpRepr, SmpRepr};
use crate::wire::{AttributeId, Error, Fields, MgmtClass, Repr, SMP_DATA_LEN, SMP_DATA_OFFSET};

/// The SMP attribute `attr`, if this decoder knows it.
fn smp_attribute(attr: AttributeId) -> Option<Known> {
    use crate::wire::attr::{
        GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, PKeyTable,
        PortInfo, SlToVlTable, SmInfo, SwitchInfo, VlArbTable,
    };
    Some(match attr {
        AttributeId::NODE_DESC => Known::of::<NodeDescription>(),
        AttributeId::NODE_INFO => Known::of::<NodeInfo>(),
        AttributeId::SWITCH_INFO => Known::of::<SwitchInfo>(),
        AttributeId::GUID_INFO => Known::of::<GuidInfo>(),
        AttributeId::PORT_INFO => Known::of::<PortInfo>(),
        AttributeId::PKEY_TABLE => Known::of::<PKeyTable>(),
        AttributeId::SL_TO_VL_TABLE => Known::of::<SlToVlTable>(),
        AttributeId::VL_ARB_TABLE => Known::of::<VlArbTable>(),
        AttributeId::LINEAR_FWD_TABLE => Known::of::<LinearFwdTable>(),
        AttributeId::MCAST_FWD_TABLE => Known::of::<MulticastFwdTable>(),
        AttributeId::SM_INFO => Known::of::<SmInfo>(),
        _ => return None,
    })
}

/// Fields of [`SmpRepr`] that other layers already show (the common
/// header, the attribute data).
const SMP_SHOWN_ELSEWHERE: &[&str] = &["header", "data"];

/// Fields of [`DrSmpRepr`] that other layers already show (the common
/// header, the attribute data).
const DR_SMP_SHOWN_ELSEWHERE: &[&str] = &[
    "base_version",
    "mgmt_class",
    "class_version",
    "response",
    "method",
    "tid",
    "attr_id",
    "reserved",
    "attr_mod",
    "data",
];

/// Pushes the SMP header layer: the LID-routed or directed-route `Repr`
/// without the common header and data fields.
fn push_smp_header(d: &mut DecodedMad, buf: &[u8]) -> Result<(), Error> {
    let (name, f): (&'static str, Box<dyn Fields>) =
        if d.header.mgmt_class == MgmtClass::SUBN_DIRECTED_ROUTE {
            let inner = DrSmpRepr::parse(buf)?;
            (
                "DrSMP",
                Box::new(Without {
                    inner,
                    hidden: DR_SMP_SHOWN_ELSEWHERE,
                }),
            )
        } else {
            let inner = SmpRepr::parse(buf)?;
            (
                "SMP",
                Box::new(Without {
                    inner,
                    hidden: SMP_SHOWN_ELSEWHERE,
                }),
            )
        };
    d.push_struct(name, 0, f);
    Ok(())
}

pub(super) fn decode_smp(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_smp_header(d, buf)?;
    let data = slice_at(buf, SMP_DATA_OFFSET, SMP_DATA_LEN);
    if d.header.attr_id == AttributeId::NOTICE && data.len() == SMP_DATA_LEN {
        // A trap's Notice is cut to the 64 bytes of SMP data: everything but
        // the IssuerGID, which only GS Notices (SA Reports) carry.
        let mut full = [0u8; <crate::wire::attr::Notice as Repr>::LEN];
        full[..SMP_DATA_LEN].copy_from_slice(data);
        push_fields(d, "Notice", boxed::<crate::wire::attr::Notice>, &full, 0)?;
        if let Some(l) = d.layers.last_mut() {
            l.offset = SMP_DATA_OFFSET;
            l.note =
                Some("an SMP carries the first 64 bytes of a Notice; IssuerGID is absent".into());
        }
        return Ok(());
    }
    let attr = smp_attribute(d.header.attr_id);
    push_attribute(d, attr, data, SMP_DATA_OFFSET)?;
    Ok(())
}
