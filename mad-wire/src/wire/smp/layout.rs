//! The layout of an SMP: the two `Repr`s of a whole SMP, the constants of
//! the directed-route part, and [`Smp`], the zero-copy view whose field
//! accessors [`DrSmpRepr`]'s declaration generates.

use crate::wire::bytes::{self, view_methods};
use crate::wire::field::check_fits;
use crate::wire::{
    AttributeId, Error, Mad, MadHeader, Method, MgmtClass, Repr, MAD_LEN, SMP_DATA_LEN,
    SMP_DATA_OFFSET,
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
        data: bytes [u8; SMP_DATA_LEN] [SMP_DATA_OFFSET] => "SmpData",
        /// Reserved (bytes 128–255).
        reserved1: bytes [u8; 128] [128] => _,
    }
}

crate::wire_struct! {
    /// A whole directed-route SMP (class 0x81), 256 bytes. Labels are
    /// libibmad's (`fields.c`).
    pub struct DrSmpRepr ("DrSMP", 256) view Smp at 0 {
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
        direction: uint bool [32, 1] => "DrSmpDirection" view pub direction / pub set_direction,
        /// Status, 15 bits.
        status: uint u16 [33, 15] => "DrSmpStatus" view pub dr_status / pub set_dr_status,
        /// HopPointer.
        hop_ptr: uint u8 [48, 8] => "DrSmpHopPtr" view pub hop_ptr / pub set_hop_ptr,
        /// HopCount.
        hop_cnt: uint u8 [56, 8] => "DrSmpHopCnt" view pub hop_cnt / pub set_hop_cnt,
        /// Transaction ID.
        tid: uint u64 [64, 64] => "MadTRID",
        /// Attribute ID.
        attr_id: uint AttributeId [128, 16] => "MadAttr",
        /// Reserved.
        reserved: uint u16 [144, 16] => _,
        /// Attribute modifier.
        attr_mod: uint u32 [160, 32] => "MadModifier",
        /// M_Key.
        m_key: uint u64 [192, 64] => "MadMkey" view pub m_key / pub set_m_key,
        /// DrSLID.
        dr_slid: uint u16 [256, 16] => "DrSmpSLID" view pub dr_slid / pub set_dr_slid,
        /// DrDLID.
        dr_dlid: uint u16 [272, 16] => "DrSmpDLID" view pub dr_dlid / pub set_dr_dlid,
        /// Reserved (bytes 36–63).
        reserved1: bytes [u8; 28] [36] => _,
        /// SMP data: the attribute.
        data: bytes [u8; SMP_DATA_LEN] [SMP_DATA_OFFSET] => "SmpData" view pub data / pub data_mut,
        /// InitialPath (entry 0 unused).
        initial_path: bytes [u8; DR_PATH_LEN] [DR_INITIAL_PATH_OFFSET] => "DrSmpPath"
            view pub initial_path / pub initial_path_mut,
        /// ReturnPath (entry 0 unused).
        return_path: bytes [u8; DR_PATH_LEN] [DR_RETURN_PATH_OFFSET] => "DrSmpRetPath"
            view pub return_path / pub return_path_mut,
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

/// A zero-copy view of an SMP, LID-routed or directed-route.
///
/// [`Smp::new_checked`] requires 128 bytes (header through the data) for a
/// LID-routed SMP and the full 256 bytes when the class byte is 0x81, so
/// that the paths exist. A view whose buffer is shorter than 256 bytes has
/// empty [`Smp::initial_path`] / [`Smp::return_path`] slices, and the DR
/// rule functions discard it. No accessor panics.
#[derive(Debug, Clone, Copy)]
pub struct Smp<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Smp<T> {
    view_methods! {
        /// Wraps `buf` without checking its length; missing bytes read as zero.
        /// Prefer [`Smp::new_checked`].
        new_unchecked;
    }

    /// Wraps `buf`, checking its length (see the type docs).
    ///
    /// # Errors
    /// [`Error::Truncated`] if `buf` is shorter than 128 bytes, or shorter
    /// than 256 bytes while its class byte is 0x81.
    pub fn new_checked(buf: T) -> Result<Self, Error> {
        let b = buf.as_ref();
        let need = if b.get(1) == Some(&MgmtClass::SUBN_DIRECTED_ROUTE.0) {
            MAD_LEN
        } else {
            SMP_MIN_LEN
        };
        bytes::check_len(b, need, "SMP")?;
        Ok(Self { buf })
    }

    view_methods! {
        into_inner;
        as_bytes;
    }

    /// The common header as a view (class, method, TID, attribute ...).
    pub fn mad(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buf.as_ref())
    }

    /// Management class.
    #[inline]
    pub fn mgmt_class(&self) -> MgmtClass {
        self.mad().mgmt_class()
    }
    /// True for class 0x81.
    #[inline]
    pub fn is_directed_route(&self) -> bool {
        self.mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE
    }
    /// Method without the response bit.
    #[inline]
    pub fn method(&self) -> Method {
        self.mad().method()
    }
    /// The response bit.
    #[inline]
    pub fn response_bit(&self) -> bool {
        self.mad().response_bit()
    }
    /// Transaction ID.
    #[inline]
    pub fn tid(&self) -> u64 {
        self.mad().tid()
    }
    /// Attribute ID.
    #[inline]
    pub fn attr_id(&self) -> AttributeId {
        self.mad().attr_id()
    }
    /// Attribute modifier.
    #[inline]
    pub fn attr_mod(&self) -> u32 {
        self.mad().attr_mod()
    }
    /// True when the buffer holds InitialPath and ReturnPath (256 bytes).
    pub fn has_paths(&self) -> bool {
        self.as_bytes().len() >= MAD_LEN
    }
    /// Parses the whole buffer as a LID-routed SMP.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than 256 bytes.
    pub fn to_repr(&self) -> Result<SmpRepr, Error> {
        SmpRepr::parse(self.as_bytes())
    }
    /// Parses the whole buffer as a directed-route SMP.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than 256 bytes.
    pub fn to_dr_repr(&self) -> Result<DrSmpRepr, Error> {
        DrSmpRepr::parse(self.as_bytes())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    view_methods! {
        mad_mut;
    }
}
