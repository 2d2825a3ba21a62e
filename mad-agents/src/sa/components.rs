//! ComponentMask layouts of the SA records and template matching.
//!
//! ComponentMask bit *n* names component *n* of a record, counted in the
//! record's field order with reserved fields included (MAD.md §7,
//! ATTRIBUTES.md §11). A layout here is the list of component **widths in
//! bits**, in order, starting at bit 0 of the record; component *n* spans
//! `[sum(widths[..n]), widths[n])`. The widths follow opensm's
//! `IB_*_COMPMASK_*` numbering as the record types in
//! [`mad_core::wire::sa_records`] name it (`SaRecord::COMPONENTS`): a unit
//! test checks for every layout that the component count equals the
//! record's `COMPONENTS` list and that the widths add up to the record's
//! length, and (for records whose structure has one field per component)
//! that each component starts where the structure's field does.
//!
//! # Matching
//! [`record_matches`] is what an SA does with a request's template: for
//! every bit *n* set in the mask, component *n* of the candidate must equal
//! component *n* of the template, with two documented exceptions taken
//! from opensm's PathRecord / MCMemberRecord handling:
//! - a **selector** component (MTUSelector, RateSelector,
//!   PacketLifeTimeSelector) whose bit is set together with its value's
//!   bit turns the value comparison into "greater than" (0), "less than"
//!   (1), "exactly" (2) or "best available" (3, accepts any value); with
//!   only the value's bit set the comparison is equality;
//! - PathRecord **NumbPath** is the most paths wanted, not a property of a
//!   path: it never excludes a record.
//!
//! Bits beyond the record's last component are ignored (opensm ignores
//! them too).

use mad_core::wire::field::get_bits;
use mad_core::wire::AttributeId;

/// How the components of one record type sit in its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentLayout {
    /// The SA attribute.
    pub attr_id: AttributeId,
    /// Width in bits of each component, in ComponentMask bit order.
    pub widths: &'static [u16],
    /// `(selector component, value component)` pairs.
    pub selectors: &'static [(u8, u8)],
    /// Components that never exclude a record (PathRecord NumbPath).
    pub ignored: &'static [u8],
}

impl ComponentLayout {
    /// Number of components.
    #[must_use]
    pub fn len(&self) -> usize {
        self.widths.len()
    }

    /// True if the layout has no component (never the case for a known
    /// record).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.widths.is_empty()
    }

    /// `(bit offset, bit length)` of component `n` within the record.
    #[must_use]
    pub fn range(&self, n: usize) -> Option<(usize, usize)> {
        let w = *self.widths.get(n)?;
        let off: usize = self.widths[..n].iter().map(|w| usize::from(*w)).sum();
        Some((off, usize::from(w)))
    }

    /// Total length covered, in bits.
    #[must_use]
    pub fn total_bits(&self) -> usize {
        self.widths.iter().map(|w| usize::from(*w)).sum()
    }

    /// The mask with every component's bit set.
    #[must_use]
    pub fn full_mask(&self) -> u64 {
        match self.widths.len() {
            0 => 0,
            n if n >= 64 => u64::MAX,
            n => (1u64 << n) - 1,
        }
    }
}

const fn rep<const N: usize>(w: u16) -> [u16; N] {
    [w; N]
}

/// Concatenates width lists at compile time.
macro_rules! widths {
    ($($part:expr),* $(,)?) => {{
        const LEN: usize = 0 $(+ $part.len())*;
        const OUT: [u16; LEN] = {
            let mut out = [0u16; LEN];
            let mut i = 0;
            $(
                let p = $part;
                let mut j = 0;
                while j < p.len() {
                    out[i] = p[j];
                    i += 1;
                    j += 1;
                }
            )*
            let _ = i;
            out
        };
        &OUT
    }};
}

/// InformInfo (36 bytes): GID, LIDRangeBegin, LIDRangeEnd, reserved,
/// IsGeneric, Subscribe, Type, TrapNumber/DeviceID, QPN, reserved,
/// RespTimeValue, reserved, ProducerType/VendorID.
const INFORM_INFO: [u16; 13] = [128, 16, 16, 16, 8, 8, 16, 16, 24, 3, 5, 8, 24];
/// NodeInfo as NodeRecord components 2–13.
const NODE_INFO: [u16; 12] = [8, 8, 8, 8, 64, 64, 64, 16, 16, 32, 8, 24];
/// PortInfo as PortInfoRecord components 3–57 (component 51, "reserved",
/// covers the 8 bits before LinkRoundTripLatency, where newer PortInfo
/// layouts put LinkSpeedExtActive2 and friends).
const PORT_INFO: [u16; 55] = [
    64, 64, 16, 16, 32, 16, 16, 8, 8, 8, 8, 4, 4, 4, 4, 2, 3, 3, 4, 4, 4, 4, 4, 4, 8, 8, 8, 4, 4,
    3, 5, 4, 1, 1, 1, 1, 16, 16, 16, 8, 1, 2, 5, 3, 5, 4, 4, 16, 8, 24, 16, 4, 4, 3, 5,
];
/// SwitchInfo as SwitchInfoRecord components 2–21.
const SWITCH_INFO: [u16; 20] = [
    16, 16, 16, 16, 8, 8, 8, 5, 1, 2, 16, 16, 1, 1, 1, 1, 1, 3, 8, 16,
];

static LAYOUTS: &[ComponentLayout] = &[
    ComponentLayout {
        attr_id: AttributeId::INFORM_INFO,
        widths: &INFORM_INFO,
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_NODE_RECORD,
        widths: widths!([16u16, 16], NODE_INFO, [512u16]),
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_PORTINFO_RECORD,
        widths: widths!([16u16, 8, 8], PORT_INFO),
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_SL2VL_RECORD,
        widths: &[16, 8, 8, 32, 64],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_SWITCHINFO_RECORD,
        widths: widths!([16u16, 16], SWITCH_INFO),
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_LFT_RECORD,
        widths: &[16, 16, 32, 512],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_MFT_RECORD,
        widths: &[16, 4, 3, 9, 32, 512],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_SMINFO_RECORD,
        widths: &[16, 16, 64, 64, 32, 4, 4],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_LINK_RECORD,
        widths: &[16, 8, 8, 16, 16],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_GUIDINFO_RECORD,
        widths: widths!([16u16, 8, 8, 32], rep::<8>(64)),
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_SERVICE_RECORD,
        widths: widths!(
            [64u16, 128, 16, 16, 32, 128, 512],
            rep::<16>(8),
            rep::<8>(16),
            rep::<4>(32),
            rep::<2>(64)
        ),
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_PKEY_TABLE_RECORD,
        widths: &[16, 16, 8, 24, 512],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_PATH_RECORD,
        widths: &[
            32, 32, 128, 128, 16, 16, 1, 3, 20, 8, 8, 1, 7, 16, 12, 4, 2, 6, 2, 6, 2, 6, 8, 2, 14,
            32,
        ],
        selectors: &[(16, 17), (18, 19), (20, 21)],
        ignored: &[12],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_VLARB_RECORD,
        widths: &[16, 8, 8, 32, 512],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_MCMEMBER_RECORD,
        widths: &[
            128, 128, 32, 16, 2, 6, 8, 16, 2, 6, 2, 6, 4, 20, 8, 4, 4, 1, 23,
        ],
        selectors: &[(4, 5), (8, 9), (10, 11)],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_MULTIPATH_RECORD,
        widths: &[
            1, 3, 20, 8, 8, 1, 7, 16, 12, 4, 2, 6, 2, 6, 2, 6, 8, 2, 6, 8, 8, 56,
        ],
        selectors: &[(10, 11), (12, 13), (14, 15)],
        ignored: &[6, 19, 20],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_TRACE_RECORD,
        widths: &[64, 16, 8, 8, 64, 64, 64, 64, 8, 8],
        selectors: &[],
        ignored: &[],
    },
    ComponentLayout {
        attr_id: AttributeId::SA_INFORMINFO_RECORD,
        widths: widths!([128u16, 16, 48], INFORM_INFO),
        selectors: &[],
        ignored: &[],
    },
];

/// The component layout of SA attribute `attr`, if known.
#[must_use]
pub fn component_layout(attr: AttributeId) -> Option<&'static ComponentLayout> {
    LAYOUTS.iter().find(|l| l.attr_id == attr)
}

/// Every known layout.
#[must_use]
pub fn all_layouts() -> &'static [ComponentLayout] {
    LAYOUTS
}

/// Compares one component of two records; components wider than 64 bits
/// are byte-aligned runs (GIDs, names, tables) and compare as bytes.
fn component_eq(a: &[u8], b: &[u8], off: usize, len: usize) -> bool {
    if len <= 64 {
        return get_bits(a, off, len) == get_bits(b, off, len);
    }
    let (s, e) = (off / 8, (off + len).div_ceil(8));
    a.get(s..e).unwrap_or(&[]) == b.get(s..e).unwrap_or(&[])
}

/// True if `candidate` matches `template` on every component selected by
/// `comp_mask` (see the [module documentation](self) for selectors and
/// ignored components). Bytes missing from either buffer read as zero.
#[must_use]
pub fn record_matches(
    layout: &ComponentLayout,
    template: &[u8],
    candidate: &[u8],
    comp_mask: u64,
) -> bool {
    for n in 0..layout.len().min(64) {
        if comp_mask & (1u64 << n) == 0 {
            continue;
        }
        let n8 = n as u8;
        if layout.ignored.contains(&n8) || layout.selectors.iter().any(|(s, _)| *s == n8) {
            continue;
        }
        let Some((off, len)) = layout.range(n) else {
            continue;
        };
        let selector = layout
            .selectors
            .iter()
            .find(|(_, v)| *v == n8)
            .map(|(s, _)| usize::from(*s))
            .filter(|s| comp_mask & (1u64 << s) != 0)
            .and_then(|s| layout.range(s));
        let ok = match selector {
            Some((soff, slen)) => {
                let want = get_bits(template, off, len);
                let have = get_bits(candidate, off, len);
                match get_bits(template, soff, slen) {
                    0 => have > want,
                    1 => have < want,
                    2 => have == want,
                    _ => true,
                }
            }
            None => component_eq(template, candidate, off, len),
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::field::{FieldKind, FieldValue, Fields};
    use mad_core::wire::sa_records::{all_records, PathRecord, SaRecord};
    use mad_core::wire::Repr;

    fn leaf_offsets(f: &dyn Fields, base: u32, out: &mut Vec<u32>) {
        for (i, d) in f.field_descs().iter().enumerate() {
            match (d.kind, f.field_value(i)) {
                (FieldKind::Nested, Some(FieldValue::Nested(n))) => {
                    leaf_offsets(n, base + d.bit_offset, out);
                }
                _ => out.push(base + d.bit_offset),
            }
        }
    }

    #[test]
    fn every_record_type_has_a_layout_covering_its_bytes_with_its_component_count() {
        for r in all_records() {
            let l = component_layout(r.attr_id)
                .unwrap_or_else(|| panic!("no component layout for {}", r.name));
            assert_eq!(l.len(), r.components.len(), "{}: component count", r.name);
            assert_eq!(
                l.total_bits(),
                r.len * 8,
                "{}: widths cover the record",
                r.name
            );
        }
        assert_eq!(all_layouts().len(), all_records().len());
    }

    #[test]
    fn component_offsets_agree_with_the_record_structures_where_fields_are_components() {
        let mut checked = 0;
        for r in all_records() {
            let l = component_layout(r.attr_id).unwrap();
            let rec = (r.parse)(&vec![0u8; r.len]).unwrap();
            let mut offs = Vec::new();
            leaf_offsets(&*rec, 0, &mut offs);
            if offs.len() != l.len() {
                continue; // arrays split into components, ServiceID halves, ...
            }
            for (n, off) in offs.iter().enumerate() {
                assert_eq!(
                    l.range(n).unwrap().0,
                    *off as usize,
                    "{} component {n} ({})",
                    r.name,
                    r.components[n]
                );
            }
            checked += 1;
        }
        assert!(checked >= 10, "only {checked} records checked");
    }

    #[test]
    fn selected_components_must_be_equal_and_others_are_free() {
        let l = component_layout(PathRecord::ATTR_ID).unwrap();
        let t = PathRecord {
            slid: 1,
            dlid: 4,
            sl: 3,
            ..PathRecord::default()
        };
        let mut c = t.clone();
        c.pkey = 0xFFFF;
        let (tb, cb) = (t.to_vec().unwrap(), c.to_vec().unwrap());
        let m = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
        assert!(record_matches(l, &tb, &cb, m));
        assert!(!record_matches(l, &tb, &cb, m | PathRecord::COMP_PKEY));
        assert!(record_matches(l, &tb, &cb, 0), "an empty mask matches all");
        // NumbPath never excludes.
        let mut t2 = t.clone();
        t2.numb_path = 7;
        assert!(record_matches(
            l,
            &t2.to_vec().unwrap(),
            &cb,
            m | PathRecord::COMP_NUMB_PATH
        ));
    }

    #[test]
    fn selectors_compare_greater_less_exact_or_best() {
        let l = component_layout(PathRecord::ATTR_ID).unwrap();
        let cand = PathRecord {
            mtu: 4,
            ..PathRecord::default()
        }
        .to_vec()
        .unwrap();
        let m = PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR;
        let tmpl = |sel: u8, mtu: u8| {
            PathRecord {
                mtu_selector: mad_core::wire::sa_records::Selector(sel),
                mtu,
                ..PathRecord::default()
            }
            .to_vec()
            .unwrap()
        };
        assert!(record_matches(l, &tmpl(0, 3), &cand, m), "4 > 3");
        assert!(!record_matches(l, &tmpl(0, 4), &cand, m), "not 4 > 4");
        assert!(record_matches(l, &tmpl(1, 5), &cand, m), "4 < 5");
        assert!(!record_matches(l, &tmpl(1, 4), &cand, m), "not 4 < 4");
        assert!(record_matches(l, &tmpl(2, 4), &cand, m));
        assert!(!record_matches(l, &tmpl(2, 5), &cand, m));
        assert!(record_matches(l, &tmpl(3, 1), &cand, m), "best takes any");
        // Value bit alone: equality, the selector bits in the template
        // do not matter.
        assert!(!record_matches(l, &tmpl(0, 3), &cand, PathRecord::COMP_MTU));
        assert!(record_matches(l, &tmpl(0, 4), &cand, PathRecord::COMP_MTU));
    }

    #[test]
    fn wide_components_compare_as_bytes() {
        use mad_core::wire::sa_records::NodeRecord;
        let l = component_layout(NodeRecord::ATTR_ID).unwrap();
        let mut a = NodeRecord::default();
        a.node_desc.desc[..4].copy_from_slice(b"Hca1");
        let mut b = a.clone();
        let m = NodeRecord::COMP_NODE_DESCRIPTION;
        assert!(record_matches(
            l,
            &a.to_vec().unwrap(),
            &b.to_vec().unwrap(),
            m
        ));
        b.node_desc.desc[63] = b'x';
        assert!(!record_matches(
            l,
            &a.to_vec().unwrap(),
            &b.to_vec().unwrap(),
            m
        ));
        // Short buffers read as zero instead of panicking.
        assert!(record_matches(l, &[], &[], u64::MAX));
    }

    #[test]
    fn full_mask_has_one_bit_per_component() {
        let l = component_layout(PathRecord::ATTR_ID).unwrap();
        assert_eq!(
            l.full_mask().count_ones() as usize,
            PathRecord::COMPONENTS.len()
        );
    }
}
