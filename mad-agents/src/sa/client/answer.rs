//! Checking an SA answer (completion status, method, MAD status,
//! attribute) and parsing its records.

use mad_core::wire::rmpp::{RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST};
use mad_core::wire::sa::SaMad;
use mad_core::wire::sa_records::SaRecord;
use mad_core::wire::{AttributeId, Method, MAD_LEN, SA_DATA_OFFSET};

use crate::sa::SaError;
use crate::types::{Completion, Message, SendStatus};

/// Records of a GetTable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table<R> {
    /// The records, in the SA's order.
    pub records: Vec<R>,
    /// The answer was cut to one MAD ([`crate::sa::TableMode::SingleMad`]): the SA
    /// sent, or may have sent, more records than these.
    pub truncated: bool,
    /// The AttributeOffset of the answer (record stride / 8; 0 when
    /// empty).
    pub attr_offset: u16,
}

/// The response of a completed send, or the error its status means.
pub(super) fn completion_response(c: &Completion, lid: u16) -> Result<Message, SaError> {
    match (c.status, &c.response) {
        (SendStatus::Success, Some(m)) => Ok(m.clone()),
        (SendStatus::Success, None) => Err(SaError::Malformed(
            "the send completed without a response".to_owned(),
        )),
        (SendStatus::Timeout, _) => Err(SaError::Timeout {
            lid,
            attempts: c.retries + 1,
        }),
        (s, _) => Err(SaError::Transfer(s)),
    }
}

/// The method byte (with the response bit) that answers `asked`: Get and
/// Set are answered with GetResp (0x81), GetTable with GetTableResp
/// (0x12 | 0x80), GetTraceTable with GetTableResp too (IBA 15.4.2),
/// Delete with DeleteResp (0x95).
#[must_use]
pub fn answer_method(asked: Method) -> u8 {
    let m = match asked {
        Method::SET => Method::GET,
        Method::GET_TRACE_TABLE => Method::GET_TABLE,
        m => m,
    };
    m.0 | mad_core::wire::METHOD_RESPONSE_BIT
}

/// The answer must carry the method that answers `asked`.
pub(super) fn check_method(resp: &Message, asked: Method) -> Result<(), SaError> {
    let got = resp.mad().raw_method();
    let want = answer_method(asked);
    if got == want {
        Ok(())
    } else {
        Err(SaError::Inconsistent {
            field: "Method",
            detail: format!(
                "a {} request is answered with method {want:#04x}, this answer has {got:#04x}",
                asked.name().unwrap_or("?")
            ),
        })
    }
}

/// A NO_RECORDS answer to GetTable may carry no records: any non-zero
/// byte in its data is a record the status denies.
pub(super) fn check_no_records_empty(resp: &Message) -> Result<(), SaError> {
    let v = SaMad::new_checked(resp.bytes()).map_err(|e| SaError::Malformed(e.to_string()))?;
    let data = v
        .used_data()
        .map_err(|e| SaError::Malformed(e.to_string()))?;
    match data.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(SaError::Inconsistent {
            field: "Status",
            detail: format!(
                "status 0x0300 ERR_NO_RECORDS, yet the answer carries {} data bytes \
                 (AttributeOffset {}), the first non-zero at offset {at}",
                data.len(),
                v.attr_offset()
            ),
        }),
    }
}

/// The SA status of an answer as an error.
pub(super) fn check_status(resp: &Message) -> Result<(), SaError> {
    if resp.bytes().len() < SA_DATA_OFFSET {
        return Err(SaError::Malformed(format!(
            "an SA answer has at least {SA_DATA_OFFSET} bytes, this one {}",
            resp.bytes().len()
        )));
    }
    match resp.mad().status().0 {
        0 => Ok(()),
        s => Err(SaError::from_status(s)),
    }
}

/// The answer must carry the attribute asked for.
pub(super) fn check_attr(resp: &Message, attr: AttributeId) -> Result<(), SaError> {
    let got = resp.mad().attr_id();
    if got == attr {
        Ok(())
    } else {
        Err(SaError::Malformed(format!(
            "asked for attribute {:#06x}, the answer carries {:#06x}",
            attr.0, got.0
        )))
    }
}

/// The one record of a GetResp (or Set / Delete response) MAD.
///
/// # Errors
/// [`SaError::Malformed`] when the data is shorter than the record.
pub fn parse_record<R: SaRecord>(mad: &[u8]) -> Result<R, SaError> {
    let data = mad.get(SA_DATA_OFFSET..).unwrap_or(&[]);
    R::parse(data).map_err(|e| SaError::Malformed(format!("{}: {e}", R::NAME)))
}

/// The part of `data` that is records (see [`parse_table`]).
pub(super) fn whole_records(
    data: &[u8],
    attr_offset: u16,
    stride: usize,
    exact: bool,
    truncated: bool,
) -> Result<&[u8], SaError> {
    let inconsistent = |detail: String| SaError::Inconsistent {
        field: "AttributeOffset",
        detail,
    };
    if stride == 0 {
        let present = if exact {
            !data.is_empty()
        } else {
            data.iter().any(|&b| b != 0)
        };
        if present {
            return Err(inconsistent(format!(
                "0 (no records), yet {} data bytes are present",
                data.len()
            )));
        }
        return Ok(&[]);
    }
    let rest = data.len() % stride;
    let mut end = data.len() - rest;
    if truncated {
        // One MAD of a longer answer: a record may go on in the next one,
        // and an SA that sent fewer records than fit left the slots after
        // them zero.
        while end >= stride && data[end - stride..end].iter().all(|&b| b == 0) {
            end -= stride;
        }
        return Ok(&data[..end]);
    }
    if exact && rest != 0 {
        return Err(inconsistent(format!(
            "{attr_offset} ({stride}-byte records), but the answer has {} data bytes: \
             {} records and {rest} bytes over",
            data.len(),
            data.len() / stride
        )));
    }
    if !exact {
        if data[end..].iter().any(|&b| b != 0) {
            return Err(inconsistent(format!(
                "{attr_offset} ({stride}-byte records): the {rest} bytes after the last \
                 whole record are not zero padding"
            )));
        }
        while end >= stride && data[end - stride..end].iter().all(|&b| b == 0) {
            end -= stride;
        }
    }
    Ok(&data[..end])
}

/// The records of a GetTableResp: a reassembled message, a
/// single-segment RMPP answer trimmed by its PayloadLength, or one MAD of
/// a longer answer (then [`Table::truncated`] is set: a 256-byte MAD whose
/// RMPP header is Active without both First and Last). The status and
/// method are not checked.
///
/// The data must be whole records: in a reassembled or PayloadLength-trimmed
/// answer its length is a multiple of the stride (AttributeOffset × 8);
/// in a plain 256-byte MAD (RMPP inactive) what follows the last whole
/// record is zero padding, and trailing all-zero strides are padding too
/// (an unused slot, not a record), as they are in one MAD of a longer
/// answer. AttributeOffset 0 means no records, so
/// the data must then be empty (or zero padding).
///
/// # Errors
/// [`SaError::Malformed`] for a buffer shorter than the SA header, a
/// record stride shorter than the record, or a bad PayloadLength;
/// [`SaError::Inconsistent`] naming AttributeOffset for data present with
/// AttributeOffset 0 or data that is not a whole number of records.
pub fn parse_table<R: SaRecord>(mad: &[u8]) -> Result<Table<R>, SaError> {
    let v = SaMad::new_checked(mad).map_err(|e| SaError::Malformed(e.to_string()))?;
    let r = v.rmpp();
    let flags = r.flags();
    let whole = RMPP_FLAG_FIRST | RMPP_FLAG_LAST;
    // One MAD of an RMPP answer that is not First|Last: the rest is lost.
    let truncated = mad.len() == MAD_LEN && r.is_active() && flags & whole != whole;
    let attr_offset = v.attr_offset();
    let stride = usize::from(attr_offset) * 8;
    if stride != 0 && stride < R::LEN {
        return Err(SaError::Malformed(format!(
            "AttributeOffset {attr_offset} ({stride} bytes) is shorter than a {} ({} bytes)",
            R::NAME,
            R::LEN
        )));
    }
    let data = if truncated {
        v.data()
    } else {
        v.used_data()
            .map_err(|e| SaError::Malformed(e.to_string()))?
    };
    let single = RMPP_FLAG_ACTIVE | whole;
    // The data's length is the SA's own count (reassembled, or trimmed by
    // PayloadLength), not a MAD padded to 256 bytes.
    let exact = mad.len() != MAD_LEN || (r.is_active() && flags == single);
    let data = whole_records(data, attr_offset, stride, exact, truncated)?;
    let recs = mad_core::wire::sa::split_records(data, attr_offset)
        .map_err(|e| SaError::Malformed(e.to_string()))?;
    let records = recs
        .map(|b| R::parse(b).map_err(|e| SaError::Malformed(format!("{}: {e}", R::NAME))))
        .collect::<Result<Vec<R>, SaError>>()?;
    Ok(Table {
        records,
        truncated,
        attr_offset,
    })
}
