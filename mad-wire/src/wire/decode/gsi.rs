//! The GSI classes the decoder knows: SA (RMPP header, SA header, records),
//! PerfMgt, vendor range 2 and the other RMPP classes.

use super::layer::{
    boxed, push_attribute, push_fields, push_raw, push_raw_slice, unknown_note, DecodedMad, Known,
    Layer, LayerData, Without,
};
use crate::wire::perf::{PerfMad, PERF_DATA_OFFSET};
use crate::wire::rmpp::{RmppHeader, RmppType};
use crate::wire::sa::{SaHeader, SaMad, SA_HEADER_OFFSET};
use crate::wire::vendor::VendorMad;
use crate::wire::{
    AttributeId, Error, Repr, MAD_HEADER_LEN, MAD_LEN, RMPP_HEADER_END, SA_DATA_OFFSET,
    VENDOR_DATA_OFFSET,
};

// ---------------------------------------------------------------- SA

/// The SA attribute `attr` (a record, or a class attribute), if known.
fn sa_attribute(attr: AttributeId) -> Option<Known> {
    use crate::wire::attr::{ClassPortInfo, Notice};
    match attr {
        AttributeId::CLASS_PORT_INFO => Some(Known::of::<ClassPortInfo>()),
        AttributeId::NOTICE => Some(Known::of::<Notice>()),
        _ => crate::wire::sa_records::record_info(attr).map(|r| Known {
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
    d.push_struct("RMPP", MAD_HEADER_LEN, Box::new(h.clone()));
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
    if len > MAD_LEN || (h.is_first() && h.is_last()) {
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
pub(super) fn push_table(
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

pub(super) fn decode_sa(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let sa = SaMad::new_checked(buf)?;
    let rmpp = push_rmpp(d, buf)?;
    push_fields(d, "SA", boxed::<SaHeader>, buf, SA_HEADER_OFFSET)?;
    // A GetTraceTable request names TraceRecord but carries the PathRecord
    // of the path to trace (IBA 15.4.2); its answer carries TraceRecords.
    let known = if d.header.method == crate::wire::Method::GET_TRACE_TABLE && !d.header.response {
        sa_attribute(AttributeId::SA_PATH_RECORD)
    } else {
        sa_attribute(d.header.attr_id)
    };
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
    use crate::wire::attr::*;
    Some(match attr {
        AttributeId::CLASS_PORT_INFO => Known::of::<ClassPortInfo>(),
        AttributeId::PM_PORT_COUNTERS => Known::of::<PortCounters>(),
        AttributeId::PM_PORT_COUNTERS_EXT => Known::of::<PortCountersExt>(),
        AttributeId(a) => return perf_ext_attribute(a),
    })
}

/// The PerfMgt attributes beyond the counters ([`crate::wire::attr::pm_attr`]).
fn perf_ext_attribute(attr: u16) -> Option<Known> {
    use crate::wire::attr::*;
    Some(match attr {
        pm_attr::PORT_SAMPLES_CONTROL => Known::of::<PortSamplesControl>(),
        pm_attr::PORT_SAMPLES_RESULT => Known::of::<PortSamplesResult>(),
        pm_attr::PORT_RCV_ERROR_DETAILS => Known::of::<PortRcvErrorDetails>(),
        pm_attr::PORT_XMIT_DISCARD_DETAILS => Known::of::<PortXmitDiscardDetails>(),
        pm_attr::PORT_OP_RCV_COUNTERS => Known::of::<PortOpRcvCounters>(),
        pm_attr::PORT_FLOW_CTL_COUNTERS => Known::of::<PortFlowCtlCounters>(),
        pm_attr::PORT_VL_OP_PACKETS => Known::of::<PortVlOpPackets>(),
        pm_attr::PORT_VL_OP_DATA => Known::of::<PortVlOpData>(),
        pm_attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS => {
            Known::of::<PortVlXmitFlowCtlUpdateErrors>()
        }
        pm_attr::PORT_VL_XMIT_WAIT_COUNTERS => Known::of::<PortVlXmitWaitCounters>(),
        pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS => Known::of::<PortExtSpeedsCounters>(),
        pm_attr::SW_PORT_VL_CONGESTION => Known::of::<SwPortVlCongestion>(),
        pm_attr::PORT_RCV_CON_CTRL => Known::of::<PortRcvConCtrl>(),
        pm_attr::PORT_SL_RCV_FECN => Known::of::<PortSlRcvFecn>(),
        pm_attr::PORT_SL_RCV_BECN => Known::of::<PortSlRcvBecn>(),
        pm_attr::PORT_XMIT_CON_CTRL => Known::of::<PortXmitConCtrl>(),
        pm_attr::PORT_VL_XMIT_TIME_CONG => Known::of::<PortVlXmitTimeCong>(),
        pm_attr::PORT_XMIT_DATA_SL => Known::of::<PortXmitDataSl>(),
        pm_attr::PORT_RCV_DATA_SL => Known::of::<PortRcvDataSl>(),
        _ => return None,
    })
}

pub(super) fn decode_perf(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
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

pub(super) fn decode_vendor(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let vm = VendorMad::new_checked(buf)?;
    let inner = vm.header()?;
    push_rmpp(d, buf)?;
    let hidden = VENDOR_SHOWN_ELSEWHERE;
    d.push_struct(
        "Vendor",
        MAD_HEADER_LEN,
        Box::new(Without { inner, hidden }),
    );
    if crate::wire::openib::is_openib_text(buf) {
        use crate::wire::openib::OpenIbText;
        let known = Known::of::<OpenIbText>();
        let data = buf.get(VENDOR_DATA_OFFSET..).unwrap_or(&[]);
        return push_attribute(d, Some(known), data, VENDOR_DATA_OFFSET);
    }
    push_raw(d, buf, VENDOR_DATA_OFFSET, None);
    Ok(())
}

pub(super) fn decode_rmpp_class(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_rmpp(d, buf)?;
    push_raw(d, buf, RMPP_HEADER_END, None);
    Ok(())
}
