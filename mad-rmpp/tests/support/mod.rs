//! Helpers shared by mad-rmpp's integration tests.

use mad_testkit_wire::MadBuilder;
use mad_wire::wire::{AttributeId, MadStatus, Method, MgmtClass};

/// An SA GetTableResp class header (common MAD header, RMPP header, SA
/// header: 56 bytes) with `tid`, AttributeID NodeRecord and an
/// AttributeOffset of 14 words (a NodeRecord's length).
pub fn sa_header(tid: u64) -> Vec<u8> {
    let mut h = MadBuilder::new(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        AttributeId::SA_NODE_RECORD,
    )
    .response(MadStatus::SUCCESS)
    .tid(tid)
    .to_vec();
    h.truncate(56);
    h[44..46].copy_from_slice(&14u16.to_be_bytes());
    h
}
