//! A generic MAD decoder: from raw bytes to an ordered list of layers that
//! printers walk with the [`Fields`] reflection.
//!
//! [`decode_mad`] parses the common header and then, by management class,
//! method and attribute:
//! - SMP (LID-routed or directed-route): the SMP header, then the attribute;
//! - SA: RMPP header, SA header, then the record(s) — a GetTable-style
//!   response is split into records by `AttributeOffset`;
//! - PerfMgt: the PerfMgt header, then the attribute (PortCounters,
//!   PortCountersExtended, ClassPortInfo);
//! - CM: the message (REQ, REP, ..., ClassPortInfo) at byte 24;
//! - vendor range 2: RMPP header and OUI header, then raw data;
//! - other RMPP classes: RMPP header, then raw data;
//! - anything else, or an attribute not known here: raw data bytes.
//!
//! The decoder never panics. Only a buffer too short for the common header
//! (or for the fixed class header of its class) is an error; everything it
//! cannot interpret further becomes a [`LayerData::Raw`] layer with a note
//! saying why.

use super::perf::{PerfMad, PERF_DATA_OFFSET};
use super::rmpp::{RmppHeader, RmppType};
use super::sa::{SaHeader, SaMad, SA_HEADER_OFFSET};
use super::smp::{DrSmpRepr, SmpRepr};
use super::vendor::VendorMad;
use super::{
    AttributeId, Error, Fields, MadHeader, MgmtClass, Repr, MAD_HEADER_LEN, SA_DATA_OFFSET,
    SMP_DATA_LEN, SMP_DATA_OFFSET, VENDOR_DATA_OFFSET,
};

/// The content of one decoded layer.
#[derive(Debug)]
pub enum LayerData {
    /// A structure with reflective fields.
    Fields(Box<dyn Fields>),
    /// Bytes this decoder does not interpret.
    Raw(Vec<u8>),
}

/// One decoded part of a MAD, in wire order.
#[derive(Debug)]
pub struct Layer {
    /// What the layer is: a structure name (`"NodeInfo"`, `"RMPP"`) or
    /// `"Data"` for uninterpreted bytes.
    pub name: &'static str,
    /// Position of a record in a table (SA GetTable responses), else `None`.
    pub index: Option<usize>,
    /// Byte offset of the layer from the start of the MAD.
    pub offset: usize,
    /// The decoded content.
    pub data: LayerData,
    /// Why a layer is raw, or anything else worth telling the reader.
    pub note: Option<String>,
}

impl Layer {
    /// The reflective structure, if the layer is one.
    #[must_use]
    pub fn fields(&self) -> Option<&dyn Fields> {
        match &self.data {
            LayerData::Fields(f) => Some(f.as_ref()),
            LayerData::Raw(_) => None,
        }
    }

    /// The raw bytes, if the layer is raw.
    #[must_use]
    pub fn raw(&self) -> Option<&[u8]> {
        match &self.data {
            LayerData::Fields(_) => None,
            LayerData::Raw(b) => Some(b),
        }
    }
}

/// A decoded MAD: the common header plus the layers that follow it.
#[derive(Debug)]
pub struct DecodedMad {
    /// The common MAD header.
    pub header: MadHeader,
    /// Everything after the common header, in wire order.
    pub layers: Vec<Layer>,
    /// Observations about the MAD as a whole (e.g. "RMPP middle segment").
    pub notes: Vec<String>,
    /// Length of the decoded buffer in bytes.
    pub len: usize,
}

impl DecodedMad {
    /// The first layer called `name`.
    #[must_use]
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Every layer called `name` (SA table records), in order.
    pub fn layers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Layer> + 'a {
        self.layers.iter().filter(move |l| l.name == name)
    }
}

/// Parses `R` from the start of `buf` and boxes it as a [`Fields`] object.
pub(crate) fn boxed<R: Repr + Fields + 'static>(buf: &[u8]) -> Result<Box<dyn Fields>, Error> {
    Ok(Box::new(R::parse(buf)?))
}

/// A parser of one structure into a reflective box.
pub(crate) type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

/// A known attribute or record: its display name, parser and length.
#[derive(Clone, Copy)]
struct Known {
    name: &'static str,
    parse: ParseFn,
    len: usize,
}

impl Known {
    fn of<R: Repr + Fields + 'static>(name: &'static str) -> Self {
        Self {
            name,
            parse: boxed::<R>,
            len: R::LEN,
        }
    }
}

/// Decodes one MAD (256 bytes, or a longer reassembled RMPP message).
///
/// # Errors
/// [`Error::Truncated`] when `buf` is shorter than the common header or
/// than the fixed header of its class (SMP, SA, RMPP, PerfMgt, vendor).
pub fn decode_mad(buf: &[u8]) -> Result<DecodedMad, Error> {
    let header = MadHeader::parse(buf)?;
    let mut d = DecodedMad {
        header,
        layers: Vec::new(),
        notes: Vec::new(),
        len: buf.len(),
    };
    let class = d.header.mgmt_class;
    if class.is_smp() {
        decode_smp(buf, &mut d)?;
    } else if class == MgmtClass::SUBN_ADM {
        decode_sa(buf, &mut d)?;
    } else if class == MgmtClass::PERF_MGT {
        decode_perf(buf, &mut d)?;
    } else if class == MgmtClass::COM_MGT {
        let known = super::cm::decode_known(d.header.attr_id).map(|(n, p, l)| Known {
            name: n,
            parse: p,
            len: l,
        });
        push_attribute(
            &mut d,
            known,
            buf.get(MAD_HEADER_LEN..).unwrap_or(&[]),
            MAD_HEADER_LEN,
        )?;
        if let Some((offset, cma)) = super::cm::cma_header_in(d.header.attr_id, buf) {
            d.layers.push(Layer {
                name: "CmaHeader",
                index: None,
                offset,
                data: LayerData::Fields(Box::new(cma)),
                note: Some("rdma_cm header at the start of the private data".to_owned()),
            });
        }
    } else if class.is_vendor_range2() {
        decode_vendor(buf, &mut d)?;
    } else if class.is_rmpp_class() {
        decode_rmpp_class(buf, &mut d)?;
    } else {
        push_raw(&mut d, buf, MAD_HEADER_LEN, None);
    }
    Ok(d)
}

/// Appends `buf[offset..]` as a raw `"Data"` layer (nothing when empty).
fn push_raw(d: &mut DecodedMad, buf: &[u8], offset: usize, note: Option<String>) {
    push_raw_slice(d, buf.get(offset..).unwrap_or(&[]), offset, note);
}

/// Appends `bytes` (found at `offset`) as a raw layer (nothing when empty).
fn push_raw_slice(d: &mut DecodedMad, bytes: &[u8], offset: usize, note: Option<String>) {
    if bytes.is_empty() {
        return;
    }
    d.layers.push(Layer {
        name: "Data",
        index: None,
        offset,
        data: LayerData::Raw(bytes.to_vec()),
        note,
    });
}

/// Parses a fixed header layer at `offset` of `buf`.
fn push_fields(
    d: &mut DecodedMad,
    name: &'static str,
    parse: ParseFn,
    buf: &[u8],
    offset: usize,
) -> Result<(), Error> {
    let f = parse(buf.get(offset..).unwrap_or(&[]))?;
    d.layers.push(Layer {
        name,
        index: None,
        offset,
        data: LayerData::Fields(f),
        note: None,
    });
    Ok(())
}

/// The note for an attribute this decoder does not know.
fn unknown_note(d: &DecodedMad) -> String {
    let attr = d.header.attr_id;
    match attr.name_in(d.header.mgmt_class) {
        Some(n) => format!("attribute {n} ({:#06x}) is not decoded here", attr.0),
        None => format!("unknown attribute {:#06x}", attr.0),
    }
}

/// Decodes one attribute from `data` (found at `offset`): a known one as
/// fields when `data` is long enough, followed by any non-zero bytes after
/// it; anything else as raw bytes with a note.
fn push_attribute(
    d: &mut DecodedMad,
    known: Option<Known>,
    data: &[u8],
    offset: usize,
) -> Result<(), Error> {
    match known {
        Some(k) if data.len() >= k.len => {
            push_fields(d, k.name, k.parse, data, 0)?;
            if let Some(l) = d.layers.last_mut() {
                l.offset = offset;
            }
            let rest = data.get(k.len..).unwrap_or(&[]);
            if rest.iter().any(|b| *b != 0) {
                let note = format!("bytes after the {} attribute", k.name);
                push_raw_slice(d, rest, offset + k.len, Some(note));
            }
        }
        Some(k) => {
            let note = format!(
                "{} needs {} bytes but only {} are present; shown raw",
                k.name,
                k.len,
                data.len()
            );
            push_raw_slice(d, data, offset, Some(note));
        }
        None => {
            let note = unknown_note(d);
            push_raw_slice(d, data, offset, Some(note));
        }
    }
    Ok(())
}

/// `len` bytes of `buf` from `offset`, or fewer if `buf` ends first.
fn slice_at(buf: &[u8], offset: usize, len: usize) -> &[u8] {
    let end = offset.saturating_add(len).min(buf.len());
    buf.get(offset..end).unwrap_or(&[])
}

// ---------------------------------------------------------------- SMP

/// The SMP attribute `attr`, if this decoder knows it.
fn smp_attribute(attr: AttributeId) -> Option<Known> {
    use super::attr::{
        GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, PKeyTable,
        PortInfo, SlToVlTable, SmInfo, SwitchInfo, VlArbTable,
    };
    Some(match attr {
        AttributeId::NODE_DESC => Known::of::<NodeDescription>("NodeDescription"),
        AttributeId::NODE_INFO => Known::of::<NodeInfo>("NodeInfo"),
        AttributeId::SWITCH_INFO => Known::of::<SwitchInfo>("SwitchInfo"),
        AttributeId::GUID_INFO => Known::of::<GuidInfo>("GUIDInfo"),
        AttributeId::PORT_INFO => Known::of::<PortInfo>("PortInfo"),
        AttributeId::PKEY_TABLE => Known::of::<PKeyTable>("P_KeyTable"),
        AttributeId::SL_TO_VL_TABLE => Known::of::<SlToVlTable>("SLtoVLMappingTable"),
        AttributeId::VL_ARB_TABLE => Known::of::<VlArbTable>("VLArbitrationTable"),
        AttributeId::LINEAR_FWD_TABLE => Known::of::<LinearFwdTable>("LinearForwardingTable"),
        AttributeId::MCAST_FWD_TABLE => Known::of::<MulticastFwdTable>("MulticastForwardingTable"),
        AttributeId::SM_INFO => Known::of::<SmInfo>("SMInfo"),
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

/// A structure shown with some of its fields hidden: [`Fields::field_value`]
/// returns `None` for them, which printers skip. Used to show the SMP
/// headers without repeating the common header and the attribute data.
#[derive(Debug)]
struct Without<T> {
    inner: T,
    hidden: &'static [&'static str],
}

impl<T: Fields> Fields for Without<T> {
    fn struct_name(&self) -> &'static str {
        self.inner.struct_name()
    }
    fn field_descs(&self) -> &'static [super::FieldDesc] {
        self.inner.field_descs()
    }
    fn field_value(&self, index: usize) -> Option<super::FieldValue<'_>> {
        let desc = self.inner.field_descs().get(index)?;
        if self.hidden.contains(&desc.name) {
            return None;
        }
        self.inner.field_value(index)
    }
}

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
    d.layers.push(Layer {
        name,
        index: None,
        offset: 0,
        data: LayerData::Fields(f),
        note: None,
    });
    Ok(())
}

fn decode_smp(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_smp_header(d, buf)?;
    let data = slice_at(buf, SMP_DATA_OFFSET, SMP_DATA_LEN);
    if d.header.attr_id == AttributeId::NOTICE && data.len() == SMP_DATA_LEN {
        // A trap's Notice is cut to the 64 bytes of SMP data: everything but
        // the IssuerGID, which only GS Notices (SA Reports) carry.
        let mut full = [0u8; <super::attr::Notice as Repr>::LEN];
        full[..SMP_DATA_LEN].copy_from_slice(data);
        push_fields(d, "Notice", boxed::<super::attr::Notice>, &full, 0)?;
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

// ---------------------------------------------------------------- SA

/// The SA attribute `attr` (a record, or a class attribute), if known.
fn sa_attribute(attr: AttributeId) -> Option<Known> {
    use super::attr::{ClassPortInfo, Notice};
    match attr {
        AttributeId::CLASS_PORT_INFO => Some(Known::of::<ClassPortInfo>("ClassPortInfo")),
        AttributeId::NOTICE => Some(Known::of::<Notice>("Notice")),
        _ => super::sa_records::record_info(attr).map(|r| Known {
            name: r.name,
            parse: r.parse,
            len: r.len,
        }),
    }
}

/// Decodes the RMPP header at byte 24 and returns it.
fn push_rmpp(d: &mut DecodedMad, buf: &[u8]) -> Result<RmppHeader, Error> {
    let body = buf.get(MAD_HEADER_LEN..).unwrap_or(&[]);
    let h = RmppHeader::parse(body)?;
    d.layers.push(Layer {
        name: "RMPP",
        index: None,
        offset: MAD_HEADER_LEN,
        data: LayerData::Fields(Box::new(h.clone())),
        note: None,
    });
    Ok(h)
}

/// What an RMPP header says about the data of its MAD.
enum RmppPart {
    /// Not RMPP, a single-segment message, or a reassembled message: the
    /// data is whole.
    Whole,
    /// The first segment of several: data begins at a record boundary but
    /// the last record may continue in the next segment.
    First,
    /// A later segment: the data continues the previous segment's bytes.
    Later(u32),
    /// An ACK, STOP or ABORT: no data.
    Control,
}

fn rmpp_part(h: &RmppHeader, len: usize) -> RmppPart {
    if !h.is_active() {
        return RmppPart::Whole;
    }
    if h.rmpp_type != RmppType::DATA {
        return RmppPart::Control;
    }
    if len > super::MAD_LEN || (h.is_first() && h.is_last()) {
        return RmppPart::Whole;
    }
    if h.is_first() {
        RmppPart::First
    } else {
        RmppPart::Later(h.data1)
    }
}

/// Pushes the records of a table at `offset` (stride `stride` bytes), then
/// any non-zero remainder as raw bytes with `rest_note`.
fn push_table(
    d: &mut DecodedMad,
    known: Option<Known>,
    data: &[u8],
    offset: usize,
    stride: usize,
    rest_note: &str,
) -> Result<(), Error> {
    let stride = stride.max(1);
    let count = data.len() / stride;
    let Some(k) = known else {
        let note = unknown_note(d);
        push_raw_slice(d, data, offset, Some(note));
        return Ok(());
    };
    if k.len > stride && count > 0 {
        let note = format!(
            "AttributeOffset gives {stride}-byte records but {} needs {}; shown raw",
            k.name, k.len
        );
        push_raw_slice(d, data, offset, Some(note));
        return Ok(());
    }
    for i in 0..count {
        let at = i * stride;
        let rec = data.get(at..at + stride).unwrap_or(&[]);
        let f = (k.parse)(rec)?;
        d.layers.push(Layer {
            name: k.name,
            index: Some(i),
            offset: offset + at,
            data: LayerData::Fields(f),
            note: None,
        });
    }
    let rest = data.get(count * stride..).unwrap_or(&[]);
    if rest.iter().any(|b| *b != 0) {
        push_raw_slice(d, rest, offset + count * stride, Some(rest_note.to_owned()));
    }
    Ok(())
}

fn decode_sa(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let sa = SaMad::new_checked(buf)?;
    let rmpp = push_rmpp(d, buf)?;
    push_fields(d, "SA", boxed::<SaHeader>, buf, SA_HEADER_OFFSET)?;
    let known = sa_attribute(d.header.attr_id);
    let data = sa.data();
    let table = sa.is_table_response();
    match rmpp_part(&rmpp, buf.len()) {
        RmppPart::Control => {
            if data.iter().any(|b| *b != 0) {
                let note = format!("RMPP {} carries no data", rmpp.rmpp_type);
                push_raw_slice(d, data, SA_DATA_OFFSET, Some(note));
            }
        }
        RmppPart::Later(seg) => {
            let note = format!(
                "RMPP segment {seg} of a multi-segment message: its data continues the \
                 previous segment and cannot be split into records on its own"
            );
            d.notes.push(note.clone());
            push_raw_slice(d, data, SA_DATA_OFFSET, Some(note));
        }
        RmppPart::First => {
            d.notes.push(
                "RMPP first segment of a multi-segment message: only the records that \
                 fit in this segment are shown"
                    .to_owned(),
            );
            let stride = usize::from(sa.attr_offset()) * 8;
            if table && stride > 0 {
                push_table(
                    d,
                    known,
                    data,
                    SA_DATA_OFFSET,
                    stride,
                    "the start of a record that continues in the next segment",
                )?;
            } else {
                push_attribute(d, known, data, SA_DATA_OFFSET)?;
            }
        }
        RmppPart::Whole => {
            let used = match sa.used_data() {
                Ok(u) => u,
                Err(e) => {
                    let note = format!("{e}; data shown raw");
                    push_raw_slice(d, data, SA_DATA_OFFSET, Some(note));
                    return Ok(());
                }
            };
            let stride = usize::from(sa.attr_offset()) * 8;
            if table {
                if stride == 0 {
                    d.notes.push("no records (AttributeOffset 0)".to_owned());
                    if data.iter().any(|b| *b != 0) {
                        let note = "data of a table with AttributeOffset 0".to_owned();
                        push_raw_slice(d, data, SA_DATA_OFFSET, Some(note));
                    }
                    return Ok(());
                }
                if stride > used.len() && !used.is_empty() {
                    let note = format!(
                        "AttributeOffset {} ({stride} bytes) is larger than the {} bytes of \
                         data; shown raw",
                        sa.attr_offset(),
                        used.len()
                    );
                    push_raw_slice(d, data, SA_DATA_OFFSET, Some(note));
                    return Ok(());
                }
                push_table(
                    d,
                    known,
                    used,
                    SA_DATA_OFFSET,
                    stride,
                    "bytes after the last record",
                )?;
            } else {
                push_attribute(d, known, used, SA_DATA_OFFSET)?;
            }
            let tail = data.get(used.len()..).unwrap_or(&[]);
            if tail.iter().any(|b| *b != 0) {
                let note = "bytes beyond the RMPP PayloadLength".to_owned();
                push_raw_slice(d, tail, SA_DATA_OFFSET + used.len(), Some(note));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- PerfMgt

/// The PerfMgt attribute `attr`, if this decoder knows it.
fn perf_attribute(attr: AttributeId) -> Option<Known> {
    use super::attr::{ClassPortInfo, PortCounters, PortCountersExt};
    Some(match attr {
        AttributeId::CLASS_PORT_INFO => Known::of::<ClassPortInfo>("ClassPortInfo"),
        AttributeId::PM_PORT_COUNTERS => Known::of::<PortCounters>("PortCounters"),
        AttributeId::PM_PORT_COUNTERS_EXT => Known::of::<PortCountersExt>("PortCountersExtended"),
        _ => return None,
    })
}

fn decode_perf(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let pm = PerfMad::new_checked(buf)?;
    let reserved = pm.reserved();
    if reserved.iter().any(|b| *b != 0) {
        let note = "the 40 reserved bytes of the PerfMgt header are not zero".to_owned();
        push_raw_slice(d, reserved, MAD_HEADER_LEN, Some(note));
    }
    let attr = perf_attribute(d.header.attr_id);
    push_attribute(d, attr, pm.data(), PERF_DATA_OFFSET)?;
    Ok(())
}

// ---------------------------------------------------------------- vendor / RMPP

/// Fields of [`VendorHeader`] shown by the RMPP layer.
const VENDOR_SHOWN_ELSEWHERE: &[&str] = &["rmpp"];

fn decode_vendor(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let vm = VendorMad::new_checked(buf)?;
    let inner = vm.header()?;
    push_rmpp(d, buf)?;
    d.layers.push(Layer {
        name: "Vendor",
        index: None,
        offset: MAD_HEADER_LEN,
        data: LayerData::Fields(Box::new(Without {
            inner,
            hidden: VENDOR_SHOWN_ELSEWHERE,
        })),
        note: None,
    });
    push_raw(d, buf, VENDOR_DATA_OFFSET, None);
    Ok(())
}

fn decode_rmpp_class(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_rmpp(d, buf)?;
    push_raw(d, buf, super::RMPP_HEADER_END, None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::attr::{ClassPortInfo, NodeInfo, Notice, PortCounters};
    use crate::wire::rmpp::{RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST};
    use crate::wire::sa_records::{InformInfo, PathRecord};

    fn mad(class: u8, method: u8, attr: u16) -> Vec<u8> {
        let mut b = vec![0u8; 256];
        b[0] = 1;
        b[1] = class;
        b[2] = 1;
        b[3] = method;
        b[16..18].copy_from_slice(&attr.to_be_bytes());
        b
    }

    /// Sets the RMPP header of `b`.
    fn rmpp(b: &mut [u8], ty: u8, flags: u8, seg: u32, payload: u32) {
        b[24] = 1;
        b[25] = ty;
        b[26] = (0x1F << 3) | flags;
        b[28..32].copy_from_slice(&seg.to_be_bytes());
        b[32..36].copy_from_slice(&payload.to_be_bytes());
    }

    fn path(dlid: u16) -> PathRecord {
        PathRecord {
            dlid,
            slid: 1,
            pkey: 0xFFFF,
            ..PathRecord::default()
        }
    }

    /// The record of layer `l` re-parsed as `R` through its Debug text.
    fn same<R: core::fmt::Debug>(l: &Layer, r: &R) -> bool {
        l.fields().map(|f| format!("{f:?}")) == Some(format!("{r:?}"))
    }

    #[test]
    fn buffer_shorter_than_the_common_header_is_an_error() {
        for n in 0..MAD_HEADER_LEN {
            assert!(matches!(
                decode_mad(&vec![0u8; n]),
                Err(Error::Truncated { need: 24, .. })
            ));
        }
    }

    #[test]
    fn smp_node_info_is_decoded_at_byte_64() {
        let mut b = mad(0x01, 0x81, 0x0011);
        b[64 + 2] = 2; // NodeType switch
        b[64 + 3] = 36; // NumPorts
        b[64 + 12..64 + 20].copy_from_slice(&0x0002_c903_0000_1234u64.to_be_bytes());
        let d = decode_mad(&b).unwrap();
        let l = d.layer("NodeInfo").expect("NodeInfo layer");
        assert_eq!(l.offset, 64);
        assert_eq!(l.fields().unwrap().struct_name(), "NodeInfo");
        let ni = NodeInfo::parse(&b[64..]).unwrap();
        assert_eq!(ni.num_ports, 36);
        assert_eq!(ni.node_guid, 0x0002_c903_0000_1234);
        assert!(same(l, &ni));
    }

    /// Names of the fields of `f` that have a value (are not hidden).
    fn visible(f: &dyn Fields) -> Vec<&'static str> {
        (0..f.field_descs().len())
            .filter(|i| f.field_value(*i).is_some())
            .map(|i| f.field_descs()[i].name)
            .collect()
    }

    #[test]
    fn dr_smp_header_layer_shows_routing_fields_but_not_header_or_data_again() {
        let mut b = mad(0x81, 0x81, 0x0011);
        b[4] = 0x80; // D bit
        b[6] = 2; // hop pointer
        b[7] = 1; // hop count
        b[24..32].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        b[32..36].copy_from_slice(&[0xFF, 0xFF, 0x00, 0x07]);
        b[129] = 3;
        let d = decode_mad(&b).unwrap();
        let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
        assert_eq!(names, ["DrSMP", "NodeInfo"]);
        let f = d.layer("DrSMP").unwrap().fields().unwrap();
        assert_eq!(
            visible(f),
            [
                "direction",
                "status",
                "hop_ptr",
                "hop_cnt",
                "m_key",
                "dr_slid",
                "dr_dlid",
                "reserved1",
                "initial_path",
                "return_path"
            ]
        );
        let dr = DrSmpRepr::parse(&b).unwrap();
        assert_eq!((dr.direction, dr.hop_ptr, dr.hop_cnt), (true, 2, 1));
        assert_eq!(
            (dr.dr_slid, dr.dr_dlid, dr.m_key),
            (0xFFFF, 7, 0x1122_3344_5566_7788)
        );
        let i = f
            .field_descs()
            .iter()
            .position(|x| x.name == "dr_dlid")
            .unwrap();
        assert!(matches!(
            f.field_value(i),
            Some(crate::wire::FieldValue::Uint(7))
        ));
    }

    #[test]
    fn lid_routed_smp_header_layer_shows_the_m_key() {
        let mut b = mad(0x01, 0x01, 0x0015);
        b[24..32].copy_from_slice(&5u64.to_be_bytes());
        let d = decode_mad(&b).unwrap();
        let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
        assert_eq!(names, ["SMP", "PortInfo"]);
        let f = d.layer("SMP").unwrap().fields().unwrap();
        assert_eq!(visible(f), ["m_key", "reserved", "reserved1"]);
        assert!(matches!(
            f.field_value(1),
            Some(crate::wire::FieldValue::Uint(5))
        ));
    }

    #[test]
    fn smp_shorter_than_256_bytes_is_an_error() {
        let b = mad(0x01, 0x01, 0x0015);
        assert!(matches!(
            decode_mad(&b[..200]),
            Err(Error::Truncated { need: 256, .. })
        ));
    }

    #[test]
    fn smp_unknown_attribute_is_raw_with_a_note() {
        let b = mad(0x81, 0x01, 0xFF90);
        let d = decode_mad(&b).unwrap();
        let l = d.layer("Data").unwrap();
        assert_eq!(l.offset, 64);
        assert_eq!(l.raw().map(<[u8]>::len), Some(64));
        assert!(l.note.as_deref().unwrap_or("").contains("0xff90"));
    }

    #[test]
    fn smp_every_known_attribute_decodes_under_its_name() {
        for (id, name) in [
            (0x02, "Notice"),
            (0x10, "NodeDescription"),
            (0x11, "NodeInfo"),
            (0x12, "SwitchInfo"),
            (0x14, "GUIDInfo"),
            (0x15, "PortInfo"),
            (0x16, "P_KeyTable"),
            (0x17, "SLtoVLMappingTable"),
            (0x18, "VLArbitrationTable"),
            (0x19, "LinearForwardingTable"),
            (0x1B, "MulticastForwardingTable"),
            (0x20, "SMInfo"),
        ] {
            for class in [0x01, 0x81] {
                let d = decode_mad(&mad(class, 0x81, id)).unwrap();
                let l = d
                    .layer(name)
                    .unwrap_or_else(|| panic!("{name} in {class:#x}"));
                assert_eq!(l.offset, 64);
                assert!(l.fields().is_some());
            }
        }
    }

    #[test]
    fn sa_single_segment_get_table_response_is_split_by_attribute_offset() {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(
            &mut b,
            1,
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
            1,
            20 + 128,
        );
        b[44..46].copy_from_slice(&8u16.to_be_bytes()); // 64-byte records
        path(5).emit(&mut b[56..]).unwrap();
        path(6).emit(&mut b[120..]).unwrap();
        let d = decode_mad(&b).unwrap();
        let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
        assert_eq!(names, ["RMPP", "SA", "PathRecord", "PathRecord"]);
        let recs: Vec<_> = d.layers_named("PathRecord").collect();
        assert_eq!((recs[0].index, recs[0].offset), (Some(0), 56));
        assert_eq!((recs[1].index, recs[1].offset), (Some(1), 120));
        assert!(same(recs[0], &path(5)));
        assert!(same(recs[1], &path(6)));
    }

    #[test]
    fn sa_rmpp_middle_and_last_segments_are_raw_with_a_note() {
        for (flags, seg) in [
            (RMPP_FLAG_ACTIVE, 2),
            (RMPP_FLAG_ACTIVE | RMPP_FLAG_LAST, 3),
        ] {
            let mut b = mad(0x03, 0x92, 0x0035);
            rmpp(&mut b, 1, flags, seg, 0);
            b[44..46].copy_from_slice(&8u16.to_be_bytes());
            path(7).emit(&mut b[56..]).unwrap();
            let d = decode_mad(&b).unwrap();
            assert!(d.layer("PathRecord").is_none());
            let raw = d.layer("Data").unwrap();
            assert_eq!((raw.offset, raw.raw().map(<[u8]>::len)), (56, Some(200)));
            let note = raw.note.as_deref().unwrap();
            assert!(note.contains(&format!("segment {seg}")), "{note}");
            assert!(note.contains("cannot be split into records"), "{note}");
            assert!(d.notes.iter().any(|n| n.contains("cannot be split")));
        }
    }

    #[test]
    fn sa_rmpp_first_segment_shows_the_whole_records_and_the_cut_one_raw() {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(&mut b, 1, RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 1, 5 * 220);
        b[44..46].copy_from_slice(&8u16.to_be_bytes());
        for i in 0..3 {
            path(10 + i as u16).emit(&mut b[56 + 64 * i..]).unwrap();
        }
        b[56 + 192] = 0xFE; // start of the fourth record
        let d = decode_mad(&b).unwrap();
        assert_eq!(d.layers_named("PathRecord").count(), 3);
        let raw = d.layer("Data").unwrap();
        assert_eq!((raw.offset, raw.raw().map(<[u8]>::len)), (248, Some(8)));
        assert!(raw.note.as_deref().unwrap().contains("next segment"));
    }

    #[test]
    fn sa_reassembled_message_longer_than_a_mad_gives_every_record() {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(&mut b, 1, RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 1, 0);
        b[44..46].copy_from_slice(&8u16.to_be_bytes());
        b.resize(56 + 64 * 5, 0);
        for i in 0..5 {
            path(20 + i as u16).emit(&mut b[56 + 64 * i..]).unwrap();
        }
        let d = decode_mad(&b).unwrap();
        let recs: Vec<_> = d.layers_named("PathRecord").collect();
        assert_eq!(recs.len(), 5);
        assert!(same(recs[4], &path(24)));
        assert_eq!(recs[4].offset, 56 + 256);
    }

    #[test]
    fn sa_get_table_with_attribute_offset_zero_has_no_records() {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(
            &mut b,
            1,
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
            1,
            20,
        );
        let d = decode_mad(&b).unwrap();
        assert!(d.layer("PathRecord").is_none() && d.layer("Data").is_none());
        assert!(d.notes.iter().any(|n| n.contains("no records")));
    }

    #[test]
    fn sa_get_response_holds_one_record_and_no_index() {
        let mut b = mad(0x03, 0x81, 0x0035);
        path(9).emit(&mut b[56..]).unwrap();
        let d = decode_mad(&b).unwrap();
        let l = d.layer("PathRecord").unwrap();
        assert_eq!((l.index, l.offset), (None, 56));
        assert!(same(l, &path(9)));
        // The zero bytes after the record are not shown.
        assert!(d.layer("Data").is_none());
    }

    #[test]
    fn sa_inform_info_notice_and_class_port_info_decode() {
        let mut b = mad(0x03, 0x02, 0x0003);
        let ii = InformInfo {
            subscribe: 1,
            ..InformInfo::default()
        };
        ii.emit(&mut b[56..]).unwrap();
        let d = decode_mad(&b).unwrap();
        assert!(same(d.layer("InformInfo").unwrap(), &ii));

        let mut b = mad(0x03, 0x06, 0x0002);
        let n = Notice {
            issuer_lid: 0x42,
            ..Notice::default()
        };
        n.emit(&mut b[56..]).unwrap();
        let d = decode_mad(&b).unwrap();
        assert!(same(d.layer("Notice").unwrap(), &n));

        let mut b = mad(0x03, 0x81, 0x0001);
        let c = ClassPortInfo {
            capability_mask: 0x0602,
            ..ClassPortInfo::default()
        };
        c.emit(&mut b[56..]).unwrap();
        let d = decode_mad(&b).unwrap();
        assert!(same(d.layer("ClassPortInfo").unwrap(), &c));
    }

    #[test]
    fn sa_every_record_type_decodes_in_a_get_response_and_a_table() {
        for r in crate::wire::sa_records::all_records() {
            let mut b = mad(0x03, 0x81, r.attr_id.0);
            b[56] = 0x5A;
            let d = decode_mad(&b).unwrap();
            let l = d.layer(r.name).unwrap_or_else(|| panic!("{}", r.name));
            assert_eq!((l.offset, l.index), (56, None), "{}", r.name);
            let expect = (r.parse)(&b[56..]).unwrap();
            assert_eq!(format!("{:?}", l.fields().unwrap()), format!("{expect:?}"));

            let mut t = mad(0x03, 0x92, r.attr_id.0);
            let n = 200 / r.padded_len;
            rmpp(
                &mut t,
                1,
                RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
                1,
                (20 + n * r.padded_len) as u32,
            );
            t[44..46].copy_from_slice(&((r.padded_len / 8) as u16).to_be_bytes());
            for i in 0..n {
                t[56 + i * r.padded_len] = i as u8 + 1;
            }
            let d = decode_mad(&t).unwrap();
            let recs: Vec<_> = d.layers_named(r.name).collect();
            assert_eq!(recs.len(), n, "{}", r.name);
            for (i, l) in recs.iter().enumerate() {
                assert_eq!(l.index, Some(i));
                assert_eq!(l.offset, 56 + i * r.padded_len);
                let at = 56 + i * r.padded_len;
                let expect = (r.parse)(&t[at..]).unwrap();
                assert_eq!(format!("{:?}", l.fields().unwrap()), format!("{expect:?}"));
            }
            assert!(d.layer("Data").is_none(), "{}", r.name);
        }
    }

    #[test]
    fn sa_rmpp_ack_has_no_record_layer() {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(&mut b, 2, RMPP_FLAG_ACTIVE, 3, 8);
        let d = decode_mad(&b).unwrap();
        let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
        assert_eq!(names, ["RMPP", "SA"]);
        let r = d.layer("RMPP").unwrap().fields().unwrap();
        assert_eq!(r.struct_name(), "RmppHeader");
    }

    #[test]
    fn sa_unknown_attribute_is_raw() {
        let mut b = mad(0x03, 0x81, 0x0077);
        b[60] = 1;
        let d = decode_mad(&b).unwrap();
        let l = d.layer("Data").unwrap();
        assert_eq!(l.offset, 56);
        assert!(l.note.as_deref().unwrap().contains("0x0077"));
    }

    #[test]
    fn sa_shorter_than_its_header_is_an_error() {
        let b = mad(0x03, 0x81, 0x0035);
        assert!(matches!(
            decode_mad(&b[..50]),
            Err(Error::Truncated { need: 56, .. })
        ));
    }

    #[test]
    fn perf_port_counters_and_class_port_info_decode_at_byte_64() {
        let mut b = mad(0x04, 0x81, 0x0012);
        let pc = PortCounters {
            port_select: 3,
            symbol_error_counter: 77,
            ..PortCounters::default()
        };
        pc.emit(&mut b[64..]).unwrap();
        let d = decode_mad(&b).unwrap();
        let l = d.layer("PortCounters").unwrap();
        assert_eq!(l.offset, 64);
        assert!(same(l, &pc));

        let d = decode_mad(&mad(0x04, 0x81, 0x0001)).unwrap();
        assert!(d.layer("ClassPortInfo").is_some());
        let d = decode_mad(&mad(0x04, 0x81, 0x001D)).unwrap();
        assert!(d.layer("PortCountersExtended").is_some());
        let d = decode_mad(&mad(0x04, 0x81, 0x0010)).unwrap();
        assert!(d
            .layer("Data")
            .unwrap()
            .note
            .as_deref()
            .unwrap()
            .contains("PortSamplesControl"));
    }

    #[test]
    fn vendor_range2_shows_rmpp_oui_and_data_from_byte_40() {
        let mut b = mad(0x32, 0x01, 0x0000);
        rmpp(&mut b, 1, 0, 0, 0);
        b[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
        b[40] = 0x99;
        let d = decode_mad(&b).unwrap();
        let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
        assert_eq!(names, ["RMPP", "Vendor", "Data"]);
        let v = d.layer("Vendor").unwrap().fields().unwrap();
        assert_eq!(visible(v), ["reserved", "oui"]);
        assert!(matches!(
            v.field_value(2),
            Some(crate::wire::FieldValue::Uint(0x1405))
        ));
        let raw = d.layer("Data").unwrap();
        assert_eq!((raw.offset, raw.raw().map(|r| r[0])), (40, Some(0x99)));
        assert!(matches!(decode_mad(&b[..39]), Err(Error::Truncated { .. })));
    }

    #[test]
    fn perf_reserved_header_bytes_show_only_when_set() {
        let mut b = mad(0x04, 0x81, 0x0012);
        assert!(decode_mad(&b).unwrap().layer("Data").is_none());
        b[30] = 1;
        let d = decode_mad(&b).unwrap();
        let l = d.layer("Data").unwrap();
        assert_eq!((l.offset, l.raw().map(<[u8]>::len)), (24, Some(40)));
        assert!(matches!(
            decode_mad(&b[..255]),
            Err(Error::Truncated { need: 256, .. })
        ));
    }

    #[test]
    fn other_rmpp_classes_show_the_rmpp_header() {
        for class in [0x06, 0x10, 0x12] {
            let mut b = mad(class, 0x01, 0x0010);
            rmpp(
                &mut b,
                1,
                RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
                1,
                220,
            );
            let d = decode_mad(&b).unwrap();
            assert_eq!(d.layers[0].name, "RMPP", "class {class:#x}");
            assert!(d.layers.iter().any(|l| l.raw().is_some()));
        }
    }

    #[test]
    fn unknown_class_gives_header_and_raw_data() {
        let mut buf = [0u8; 256];
        buf[0] = 1;
        buf[1] = 0x08; // SNMP
        buf[255] = 0xAB;
        let d = decode_mad(&buf).unwrap();
        assert_eq!(d.header.mgmt_class, MgmtClass::SNMP);
        assert_eq!(d.layers.len(), 1);
        assert_eq!(d.layers[0].offset, 24);
        assert_eq!(d.layers[0].raw().map(<[u8]>::len), Some(232));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn never_panics_on_any_bytes_of_any_class(
            class_pick in 0usize..12,
            method in proptest::prelude::any::<u8>(),
            attr_pick in 0usize..40,
            flags in 0u8..8,
            mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700),
        ) {
            const CLASSES: [u8; 12] = [1, 0x81, 3, 4, 5, 6, 7, 0x10, 0x12, 0x30, 0x4F, 0x21];
            const ATTRS: [u16; 12] = [1, 2, 3, 0x10, 0x11, 0x12, 0x14, 0x15, 0x1D, 0x20, 0x35, 0xF3];
            if bytes.len() >= 27 {
                bytes[1] = CLASSES[class_pick];
                bytes[3] = method;
                if attr_pick < ATTRS.len() {
                    bytes[16..18].copy_from_slice(&ATTRS[attr_pick].to_be_bytes());
                }
                bytes[26] = (bytes[26] & 0xF8) | flags;
            }
            let _ = decode_mad(&bytes);
        }
    }
}
