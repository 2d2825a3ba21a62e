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
//! - vendor range 2: RMPP header and OUI header, then raw data;
//! - other RMPP classes: RMPP header, then raw data;
//! - anything else, or an attribute not known here: raw data bytes.
//!
//! The decoder never panics. Only a buffer too short for the common header
//! (or for the fixed class header of its class) is an error; everything it
//! cannot interpret further becomes a [`LayerData::Raw`] layer with a note
//! saying why.

use super::{AttributeId, Error, Fields, MadHeader, MgmtClass, Repr, MAD_HEADER_LEN};

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
fn boxed<R: Repr + Fields + 'static>(buf: &[u8]) -> Result<Box<dyn Fields>, Error> {
    Ok(Box::new(R::parse(buf)?))
}

/// A parser of one structure into a reflective box.
type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

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
    let bytes = buf.get(offset..).unwrap_or(&[]);
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

/// Parses a fixed header layer at `offset` and returns it.
fn push_fields(
    d: &mut DecodedMad,
    name: &'static str,
    parse: ParseFn,
    buf: &[u8],
    offset: usize,
    index: Option<usize>,
) -> Result<(), Error> {
    let body = buf.get(offset..).unwrap_or(&[]);
    let f = parse(body)?;
    d.layers.push(Layer {
        name,
        index,
        offset,
        data: LayerData::Fields(f),
        note: None,
    });
    Ok(())
}

/// Decodes the attribute found at `offset`: a known one as fields (when the
/// data is long enough), anything else as raw bytes.
fn push_attribute(
    d: &mut DecodedMad,
    known: Option<Known>,
    buf: &[u8],
    offset: usize,
    data_len: usize,
) -> Result<(), Error> {
    let end = offset.saturating_add(data_len).min(buf.len());
    let data = buf.get(offset..end).unwrap_or(&[]);
    let attr = d.header.attr_id;
    let class = d.header.mgmt_class;
    match known {
        Some(k) if data.len() >= k.len => {
            push_fields(d, k.name, k.parse, data, 0, None)?;
            if let Some(l) = d.layers.last_mut() {
                l.offset = offset;
            }
            let rest = data.get(k.len..).unwrap_or(&[]);
            if rest.iter().any(|b| *b != 0) {
                d.layers.push(Layer {
                    name: "Data",
                    index: None,
                    offset: offset + k.len,
                    data: LayerData::Raw(rest.to_vec()),
                    note: Some(format!("bytes after the {} attribute", k.name)),
                });
            }
        }
        Some(k) => {
            let note = format!(
                "{} needs {} bytes but only {} are present; shown raw",
                k.name,
                k.len,
                data.len()
            );
            push_raw(d, &buf[..end], offset, Some(note));
        }
        None => {
            let note = match attr.name_in(class) {
                Some(n) => format!("attribute {n} ({:#06x}) is not decoded here", attr.0),
                None => format!("unknown attribute {:#06x}", attr.0),
            };
            push_raw(d, &buf[..end], offset, Some(note));
        }
    }
    Ok(())
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

fn decode_smp(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let attr = smp_attribute(d.header.attr_id);
    push_attribute(d, attr, buf, super::SMP_DATA_OFFSET, super::SMP_DATA_LEN)?;
    Ok(())
}

// ---------------------------------------------------------------- SA

fn decode_sa(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_raw(d, buf, MAD_HEADER_LEN, None);
    Ok(())
}

// ---------------------------------------------------------------- PerfMgt

/// The PerfMgt attribute `attr`, if this decoder knows it.
fn perf_attribute(attr: AttributeId) -> Option<Known> {
    let _ = attr;
    None
}

fn decode_perf(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let attr = perf_attribute(d.header.attr_id);
    push_attribute(d, attr, buf, super::SMP_DATA_OFFSET, 192)?;
    Ok(())
}

// ---------------------------------------------------------------- vendor / RMPP

fn decode_vendor(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_raw(d, buf, MAD_HEADER_LEN, None);
    Ok(())
}

fn decode_rmpp_class(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_raw(d, buf, MAD_HEADER_LEN, None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_shorter_than_the_common_header_is_an_error() {
        for n in 0..MAD_HEADER_LEN {
            assert!(matches!(
                decode_mad(&vec![0u8; n]),
                Err(Error::Truncated { need: 24, .. })
            ));
        }
    }

    fn mad(class: u8, method: u8, attr: u16) -> Vec<u8> {
        let mut b = vec![0u8; 256];
        b[0] = 1;
        b[1] = class;
        b[2] = 1;
        b[3] = method;
        b[16..18].copy_from_slice(&attr.to_be_bytes());
        b
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
        let f = l.fields().unwrap();
        assert_eq!(f.struct_name(), "NodeInfo");
        let ni = super::super::attr::NodeInfo::parse(&b[64..]).unwrap();
        assert_eq!(ni.num_ports, 36);
        assert_eq!(ni.node_guid, 0x0002_c903_0000_1234);
        assert_eq!(format!("{f:?}"), format!("{ni:?}"));
    }

    #[test]
    fn smp_unknown_attribute_is_raw_with_a_note() {
        let b = mad(0x81, 0x01, 0xFF90);
        let d = decode_mad(&b).unwrap();
        let l = d.layers.iter().find(|l| l.offset == 64).unwrap();
        assert_eq!(l.raw().map(<[u8]>::len), Some(64));
        assert!(l.note.as_deref().unwrap_or("").contains("0xff90"));
    }

    #[test]
    fn smp_every_known_attribute_decodes_under_its_name() {
        for (id, name) in [
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
    fn unknown_class_gives_header_and_raw_data() {
        let mut buf = [0u8; 256];
        buf[0] = 1;
        buf[1] = 0x07; // CM
        buf[255] = 0xAB;
        let d = decode_mad(&buf).unwrap();
        assert_eq!(d.header.mgmt_class, MgmtClass::COM_MGT);
        assert_eq!(d.layers.len(), 1);
        assert_eq!(d.layers[0].offset, 24);
        assert_eq!(d.layers[0].raw().map(<[u8]>::len), Some(232));
    }
}
