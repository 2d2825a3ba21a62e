//! Communication Management (class 0x07): the CM message at byte 24 and,
//! for a REQ or SIDR_REQ carrying one, the rdma_cm header at the start of
//! its private data.

use super::layer::{push_attribute, Known, Layer, LayerData};
use super::{DecodedMad, Error, MAD_HEADER_LEN};
use crate::wire::cm;

/// Decodes the CM message of `buf` into `d`.
pub(super) fn decode_cm(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    let known =
        cm::decode_known(d.header.attr_id).map(|(name, parse, len)| Known { name, parse, len });
    push_attribute(
        d,
        known,
        buf.get(MAD_HEADER_LEN..).unwrap_or(&[]),
        MAD_HEADER_LEN,
    )?;
    if let Some((offset, cma)) = cm::cma_header_in(d.header.attr_id, buf) {
        d.layers.push(Layer {
            name: "CmaHeader",
            index: None,
            offset,
            data: LayerData::Fields(Box::new(cma)),
            note: Some("rdma_cm header at the start of the private data".to_owned()),
        });
    }
    Ok(())
}
