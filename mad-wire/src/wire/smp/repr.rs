//! The two `Repr`s of a whole SMP and the layout constants of the
//! directed-route part.

use crate::wire::field::check_fits;
use crate::wire::{
    AttributeId, Error, MadHeader, Method, MgmtClass, SMP_DATA_LEN, SMP_DATA_OFFSET,
};

/// The permissive LID (0xFFFF).
pub const PERMISSIVE_LID: u16 = 0xFFFF;
/// Longest directed route: HopCount is 0..=63 (`IB_SMP_MAX_PATH_HOPS` is
/// the size of the path arrays, 64).
pub const DR_MAX_HOPS: u8 = 63;
/// Entries in InitialPath / ReturnPath.
pub const DR_PATH_LEN: usize = 64;
/// Offset of InitialPath.
pub const DR_INITIAL_PATH_OFFSET: usize = 128;
/// Offset of ReturnPath.
pub const DR_RETURN_PATH_OFFSET: usize = 192;
/// Bytes a LID-routed SMP view needs (through the end of the data).
pub const SMP_MIN_LEN: usize = SMP_DATA_OFFSET + SMP_DATA_LEN;
/// The D bit in the status word of a DR SMP.
pub const DR_DIRECTION_BIT: u16 = 0x8000;
/// The status proper of a DR SMP (`IB_SMP_STATUS_MASK`).
pub const DR_STATUS_MASK: u16 = 0x7FFF;

crate::wire_struct! {
    /// A whole LID-routed SMP (class 0x01), 256 bytes.
    pub struct SmpRepr ("SMP", 256) {
        /// Common MAD header (ClassSpecific is reserved for this class).
        header: nested MadHeader [0] => "MadHeader",
        /// M_Key.
        m_key: uint u64 [192, 64] => "MadMkey",
        /// Reserved (bytes 32–63).
        reserved: bytes [u8; 32] [32] => _,
        /// SMP data: the attribute.
        data: bytes [u8; 64] [64] => "SmpData",
        /// Reserved (bytes 128–255).
        reserved1: bytes [u8; 128] [128] => _,
    }
}

crate::wire_struct! {
    /// A whole directed-route SMP (class 0x81), 256 bytes. Labels are
    /// libibmad's (`fields.c`).
    pub struct DrSmpRepr ("DrSMP", 256) {
        /// Base version.
        base_version: uint u8 [0, 8] => "MadBaseVersion",
        /// Management class (0x81).
        mgmt_class: uint MgmtClass [8, 8] => "MadMgmtClass",
        /// Class version.
        class_version: uint u8 [16, 8] => "MadClassVersion",
        /// Response bit.
        response: uint bool [24, 1] => "MadIsResponse",
        /// Method without the response bit.
        method: uint Method [25, 7] => "MadMethod",
        /// D bit: false outbound, true returning.
        direction: uint bool [32, 1] => "DrSmpDirection",
        /// Status, 15 bits.
        status: uint u16 [33, 15] => "DrSmpStatus",
        /// HopPointer.
        hop_ptr: uint u8 [48, 8] => "DrSmpHopPtr",
        /// HopCount.
        hop_cnt: uint u8 [56, 8] => "DrSmpHopCnt",
        /// Transaction ID.
        tid: uint u64 [64, 64] => "MadTRID",
        /// Attribute ID.
        attr_id: uint AttributeId [128, 16] => "MadAttr",
        /// Reserved.
        reserved: uint u16 [144, 16] => _,
        /// Attribute modifier.
        attr_mod: uint u32 [160, 32] => "MadModifier",
        /// M_Key.
        m_key: uint u64 [192, 64] => "MadMkey",
        /// DrSLID.
        dr_slid: uint u16 [256, 16] => "DrSmpSLID",
        /// DrDLID.
        dr_dlid: uint u16 [272, 16] => "DrSmpDLID",
        /// Reserved (bytes 36–63).
        reserved1: bytes [u8; 28] [36] => _,
        /// SMP data: the attribute.
        data: bytes [u8; 64] [64] => "SmpData",
        /// InitialPath (entry 0 unused).
        initial_path: bytes [u8; 64] [128] => "DrSmpPath",
        /// ReturnPath (entry 0 unused).
        return_path: bytes [u8; 64] [192] => "DrSmpRetPath",
    }
}

impl DrSmpRepr {
    /// Checks that this request/response's HopCount is in range.
    ///
    /// # Errors
    /// [`Error::FieldOverflow`] if HopCount is above 63.
    pub fn check_hop_cnt(&self) -> Result<(), Error> {
        check_fits("DrSMP", "hop_cnt", u64::from(self.hop_cnt), 6)
    }
}
