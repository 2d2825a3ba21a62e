//! `ibccquery` output (infiniband-diags 44 `ibccquery.c`, libibmad's
//! `mad_dump_cc_*` and `mad_dump_classportinfo`): the labelled fields of
//! each Congestion Control attribute, hex where libibmad dumps hex.

use super::dump::field;
use super::perf::fields_text;
use crate::session::Session;
use mad_agents::QueryError;
use mad_core::wire::cc::{
    cc_attr, CC_CLASS, CC_CLASS_VERSION, CC_DATA_OFFSET, CC_KEY_OFFSET, CC_LOG_DATA_OFFSET,
};
use mad_core::wire::{AttributeId, Fields, Mad, Method, MgmtClass};

/// `cc_query_status_via` / `cc_config_status_via`: `method` of `attr` /
/// `amod` with `cc_key` and `payload` as the attribute, to `lid`; the
/// answer's data (from byte 32 for CongestionLog, else 64).
///
/// # Errors
/// See [`QueryError`].
pub fn rpc(
    s: &Session,
    lid: u16,
    method: Method,
    (attr, amod): (u16, u32),
    cc_key: u64,
    payload: &[u8],
) -> Result<Vec<u8>, QueryError> {
    let mut mad = [0u8; 256];
    Mad::new_unchecked(&mut mad[..]).set_request(
        MgmtClass(CC_CLASS),
        CC_CLASS_VERSION,
        method,
        AttributeId(attr),
        amod,
    );
    mad[CC_KEY_OFFSET..CC_KEY_OFFSET + 8].copy_from_slice(&cc_key.to_be_bytes());
    let off = if attr == cc_attr::CONGESTION_LOG {
        CC_LOG_DATA_OFFSET
    } else {
        CC_DATA_OFFSET
    };
    let n = payload.len().min(256 - off);
    mad[off..off + n].copy_from_slice(&payload[..n]);
    let b = s.gsi_rpc(lid, mad)?;
    Ok(b.get(off..).unwrap_or_default().to_vec())
}

/// The Congestion Control (and ClassPortInfo) labels libibmad dumps with
/// `mad_dump_hex`.
pub const CC_HEX_LABELS: &[&str] = &[
    "CapabilityMask",
    "CapabilityMask2",
    "RedirectTC",
    "RedirectFL",
    "RedirectPKey",
    "RedirectQP",
    "RedirectQKey",
    "TrapTC",
    "TrapFL",
    "TrapPKey",
    "TrapQP",
    "TrapQKey",
    "CongestionInfo",
    "CC_Key",
    "CongestionFlags",
    "ThresholdCongestionEventMap",
    "Service_Type_CN_Entry",
    "Control_Map",
    "Threshold",
    "CS_Threshold",
    "CS_ReturnDelay",
    "Port_Control",
];

/// An attribute's field lines as libibmad dumps them.
#[must_use]
pub fn fields(attr: &dyn Fields) -> String {
    fields_text(attr, &[], CC_HEX_LABELS)
}

/// `# NAME: PORTID` and the attribute's field lines.
#[must_use]
pub fn titled(name: &str, portid: &super::PortIdText, attr: &dyn Fields) -> String {
    format!("# {name}: {portid}\n{}", fields(attr))
}

/// The `Port:....N` / `SL:....N` / `Entry:....N` line ibccquery prints
/// before an element.
#[must_use]
pub fn index_line(name: &str, n: usize) -> String {
    format!("{}\n", field(name, &n.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::cc::{CctEntry, CongestionKeyInfo};

    #[test]
    fn cc_fields_print_as_libibmad() {
        let k = CongestionKeyInfo {
            cc_key: 0x1234,
            cc_key_lease_period: 60,
            ..CongestionKeyInfo::default()
        };
        assert_eq!(
            fields(&k),
            "CC_Key:..........................0x0000000000001234\nCC_KeyProtectBit:................0\nCC_KeyLeasePeriod:...............60\nCC_KeyViolations:................0\n"
        );
        assert_eq!(
            fields(&CctEntry {
                shift: 1,
                multiplier: 5
            }),
            "CCT_Shift:.......................1\nCCT_Multiplier:..................5\n"
        );
        assert_eq!(index_line("SL", 3), "SL:..............................3\n");
        assert_eq!(
            index_line("Port", 10),
            "Port:............................10\n"
        );
    }
}
