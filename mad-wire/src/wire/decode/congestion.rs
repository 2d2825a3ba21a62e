//! The Congestion Control class (0x21): the CC_Key at byte 24, then
//! CongestionLog's 224 bytes from byte 32, or every other attribute's
//! 192 bytes from byte 64; attributes with repeated entries (the logs'
//! events, SwitchPortCongestionSetting's ports, CACongestionSetting's
//! SLs, CongestionControlTable's entries) as one layer per entry, as
//! libibmad dumps them.

use super::gsi::push_table;
use super::layer::{
    boxed, push_attribute, push_fields, push_raw_slice, slice_at, DecodedMad, Known, Without,
};
use crate::wire::cc::{
    cc_attr, CaCongestionEntry, CaCongestionSetting, CcKey, CcTimestamp, CctEntry,
    CongestionControlTable, CongestionInfo, CongestionKeyInfo, CongestionLogCa,
    CongestionLogCommon, CongestionLogEventCa, CongestionLogEventSwitch, CongestionLogSwitch,
    SwitchCongestionSetting, SwitchPortCongestionElement, CA_LOG_EVENTS, CC_DATA_LEN,
    CC_DATA_OFFSET, CC_KEY_OFFSET, CC_LOG_DATA_LEN, CC_LOG_DATA_OFFSET, LOG_TYPE_CA,
    LOG_TYPE_SWITCH, SWITCH_LOG_EVENTS,
};
use crate::wire::{Error, Fields, Repr};

/// A log header without its first two bytes (shown by the
/// `CongestionLog` layer before it).
fn log_header<R: Repr + Fields + 'static>(b: &[u8]) -> Result<Box<dyn Fields>, Error> {
    let inner = R::parse(b)?;
    Ok(Box::new(Without {
        inner,
        hidden: &["common"],
    }))
}

/// [`log_header`] as a known structure called `name`.
fn log_known<R: Repr + Fields + 'static>(name: &'static str) -> Known {
    Known {
        name,
        parse: log_header::<R>,
        len: R::LEN,
    }
}

/// A header and the entries that follow it: (header, entry, how many).
type Repeated = (Known, Known, usize);

/// Pushes `r`'s header at `offset`, then its entries, one layer each.
fn push_repeated(d: &mut DecodedMad, data: &[u8], offset: usize, r: Repeated) -> Result<(), Error> {
    let (head, entry, count) = r;
    push_attribute(d, Some(head), slice_at(data, 0, head.len), offset)?;
    let entries = slice_at(data, head.len, entry.len * count);
    push_table(
        d,
        Some(entry),
        entries,
        offset + head.len,
        entry.len,
        "a partial entry",
    )?;
    let rest = data.get(head.len + entry.len * count..).unwrap_or(&[]);
    if rest.iter().any(|b| *b != 0) {
        let at = offset + head.len + entry.len * count;
        push_raw_slice(
            d,
            rest,
            at,
            Some(format!("bytes after the {} entries", entry.name)),
        );
    }
    Ok(())
}

pub(super) fn decode_cc(buf: &[u8], d: &mut DecodedMad) -> Result<(), Error> {
    push_fields(d, "CC", boxed::<CcKey>, buf, CC_KEY_OFFSET)?;
    let attr = d.header.attr_id.0;
    if attr == cc_attr::CONGESTION_LOG {
        let data = slice_at(buf, CC_LOG_DATA_OFFSET, CC_LOG_DATA_LEN);
        let log_type = CongestionLogCommon::parse(data).map(|c| c.log_type);
        if log_type.is_ok() {
            push_fields(d, "CongestionLog", boxed::<CongestionLogCommon>, data, 0)?;
            if let Some(l) = d.layers.last_mut() {
                l.offset = CC_LOG_DATA_OFFSET;
            }
        }
        let r = match log_type {
            Ok(LOG_TYPE_SWITCH) => (
                log_known::<CongestionLogSwitch>("CongestionLogSwitch"),
                Known::of::<CongestionLogEventSwitch>(),
                SWITCH_LOG_EVENTS,
            ),
            Ok(LOG_TYPE_CA) => (
                log_known::<CongestionLogCa>("CongestionLogCA"),
                Known::of::<CongestionLogEventCa>(),
                CA_LOG_EVENTS,
            ),
            _ => {
                let rest = data.get(CongestionLogCommon::LEN..).unwrap_or(&[]);
                let at = CC_LOG_DATA_OFFSET + CongestionLogCommon::LEN;
                let note = "a LogType neither switch (1) nor CA (2): the log is shown raw";
                push_raw_slice(d, rest, at, Some(note.to_owned()));
                return Ok(());
            }
        };
        return push_repeated(d, data, CC_LOG_DATA_OFFSET, r);
    }
    let reserved = slice_at(buf, CC_LOG_DATA_OFFSET, CC_DATA_OFFSET - CC_LOG_DATA_OFFSET);
    if reserved.iter().any(|b| *b != 0) {
        let note = "the 32 reserved bytes of the CC header are not zero".to_owned();
        push_raw_slice(d, reserved, CC_LOG_DATA_OFFSET, Some(note));
    }
    let data = slice_at(buf, CC_DATA_OFFSET, CC_DATA_LEN);
    let one = |k: Known| Some(k);
    let known = match attr {
        cc_attr::CLASS_PORT_INFO => one(Known::of::<crate::wire::attr::ClassPortInfo>()),
        cc_attr::CONGESTION_INFO => one(Known::of::<CongestionInfo>()),
        cc_attr::CONGESTION_KEY_INFO => one(Known::of::<CongestionKeyInfo>()),
        cc_attr::SWITCH_CONGESTION_SETTING => one(Known::of::<SwitchCongestionSetting>()),
        cc_attr::TIMESTAMP => one(Known::of::<CcTimestamp>()),
        cc_attr::SWITCH_PORT_CONGESTION_SETTING => {
            let k = Known::of::<SwitchPortCongestionElement>();
            return push_table(d, Some(k), data, CC_DATA_OFFSET, k.len, "a partial element");
        }
        cc_attr::CA_CONGESTION_SETTING => {
            let r = (
                Known::of::<CaCongestionSetting>(),
                Known::of::<CaCongestionEntry>(),
                16,
            );
            return push_repeated(d, data, CC_DATA_OFFSET, r);
        }
        cc_attr::CONGESTION_CONTROL_TABLE => {
            let r = (
                Known::of::<CongestionControlTable>(),
                Known::of::<CctEntry>(),
                crate::wire::cc::CCT_ENTRIES_PER_BLOCK,
            );
            return push_repeated(d, data, CC_DATA_OFFSET, r);
        }
        _ => None,
    };
    push_attribute(d, known, data, CC_DATA_OFFSET)
}
