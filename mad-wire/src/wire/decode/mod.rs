//! A generic MAD decoder: from raw bytes to an ordered list of layers that
//! printers walk with the [`Fields`](super::Fields) reflection.
//!
//! [`decode_mad`] parses the common header and then, by management class,
//! method and attribute:
//! - SMP (LID-routed or directed-route): the SMP header, then the attribute;
//! - SA: RMPP header, SA header, then the record(s) — a GetTable-style
//!   response is split into records by `AttributeOffset`;
//! - PerfMgt: the PerfMgt header, then the attribute (PortCounters,
//!   PortCountersExtended, ClassPortInfo, the sampling, details, per-VL,
//!   per-SL and congestion attributes);
//! - Congestion Control: the CC_Key, then the attribute, its repeated
//!   entries one layer each;
//! - vendor range 2: RMPP header and OUI header, then raw data (the
//!   OpenIB ping and sysstat classes' text as a string);
//! - other RMPP classes: RMPP header, then raw data;
//! - anything else, or an attribute not known here: raw data bytes.
//!
//! The decoder never panics. Only a buffer too short for the common header
//! (or for the fixed class header of its class) is an error; everything it
//! cannot interpret further becomes a [`LayerData::Raw`] layer with a note
//! saying why.

mod cm;
mod congestion;
mod gsi;
mod layer;
mod smp;
pub(crate) use layer::{boxed, ParseFn};
#[cfg(test)]
mod tests;

pub use layer::{DecodedMad, Layer, LayerData};

use super::{Error, MadHeader, MgmtClass, Repr, MAD_HEADER_LEN};

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
        smp::decode_smp(buf, &mut d)?;
    } else if class == MgmtClass::SUBN_ADM {
        gsi::decode_sa(buf, &mut d)?;
    } else if class == MgmtClass::PERF_MGT {
        gsi::decode_perf(buf, &mut d)?;
    } else if class == MgmtClass::CONG_MGT {
        congestion::decode_cc(buf, &mut d)?;
    } else if class == MgmtClass::COM_MGT {
        cm::decode_cm(buf, &mut d)?;
    } else if class.is_vendor_range2() {
        gsi::decode_vendor(buf, &mut d)?;
    } else if class.is_rmpp_class() {
        gsi::decode_rmpp_class(buf, &mut d)?;
    } else {
        layer::push_raw(&mut d, buf, MAD_HEADER_LEN, None);
    }
    Ok(d)
}
