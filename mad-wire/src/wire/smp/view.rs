//! [`Smp`], the zero-copy view of an SMP.

use super::repr::{DrSmpRepr, SmpRepr, DR_DIRECTION_BIT, DR_STATUS_MASK, SMP_MIN_LEN};
use crate::wire::bytes::{self, view_methods};
use crate::wire::{AttributeId, Error, Mad, Method, MgmtClass, Repr, MAD_LEN};

mod field {
    use core::ops::Range;
    pub const STATUS: usize = 4;
    pub const HOP_PTR: usize = 6;
    pub const HOP_CNT: usize = 7;
    pub const M_KEY: usize = 24;
    pub const DR_SLID: usize = 32;
    pub const DR_DLID: usize = 34;
    pub const DATA: Range<usize> = 64..128;
    pub const INITIAL_PATH: Range<usize> = 128..192;
    pub const RETURN_PATH: Range<usize> = 192..256;
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
    /// M_Key.
    #[inline]
    pub fn m_key(&self) -> u64 {
        bytes::be64(self.as_bytes(), field::M_KEY)
    }
    /// DrSLID (DR SMPs).
    #[inline]
    pub fn dr_slid(&self) -> u16 {
        bytes::be16(self.as_bytes(), field::DR_SLID)
    }
    /// DrDLID (DR SMPs).
    #[inline]
    pub fn dr_dlid(&self) -> u16 {
        bytes::be16(self.as_bytes(), field::DR_DLID)
    }
    /// HopPointer (DR SMPs).
    #[inline]
    pub fn hop_ptr(&self) -> u8 {
        bytes::byte(self.as_bytes(), field::HOP_PTR)
    }
    /// HopCount (DR SMPs).
    #[inline]
    pub fn hop_cnt(&self) -> u8 {
        bytes::byte(self.as_bytes(), field::HOP_CNT)
    }
    /// The D bit (DR SMPs): false outbound, true returning.
    #[inline]
    pub fn direction(&self) -> bool {
        bytes::be16(self.as_bytes(), field::STATUS) & DR_DIRECTION_BIT != 0
    }
    /// The 15-bit status of a DR SMP (the D bit removed).
    #[inline]
    pub fn dr_status(&self) -> u16 {
        bytes::be16(self.as_bytes(), field::STATUS) & DR_STATUS_MASK
    }
    /// The 64 bytes of attribute data (empty only for an unchecked short
    /// view).
    pub fn data(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), field::DATA)
    }
    /// True when the buffer holds InitialPath and ReturnPath (256 bytes).
    pub fn has_paths(&self) -> bool {
        self.as_bytes().len() >= MAD_LEN
    }
    /// InitialPath (64 entries; empty if the buffer is shorter than 256).
    pub fn initial_path(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), field::INITIAL_PATH)
    }
    /// ReturnPath (64 entries; empty if the buffer is shorter than 256).
    pub fn return_path(&self) -> &[u8] {
        bytes::sub(self.as_bytes(), field::RETURN_PATH)
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
    /// Sets M_Key.
    pub fn set_m_key(&mut self, v: u64) {
        bytes::put(self.buf.as_mut(), field::M_KEY, &v.to_be_bytes());
    }
    /// Sets DrSLID.
    pub fn set_dr_slid(&mut self, v: u16) {
        bytes::put(self.buf.as_mut(), field::DR_SLID, &v.to_be_bytes());
    }
    /// Sets DrDLID.
    pub fn set_dr_dlid(&mut self, v: u16) {
        bytes::put(self.buf.as_mut(), field::DR_DLID, &v.to_be_bytes());
    }
    /// Sets HopPointer.
    pub fn set_hop_ptr(&mut self, v: u8) {
        bytes::put(self.buf.as_mut(), field::HOP_PTR, &[v]);
    }
    /// Sets HopCount.
    pub fn set_hop_cnt(&mut self, v: u8) {
        bytes::put(self.buf.as_mut(), field::HOP_CNT, &[v]);
    }
    /// Sets the D bit, keeping the 15-bit status.
    pub fn set_direction(&mut self, returning: bool) {
        let s = self.dr_status() | if returning { DR_DIRECTION_BIT } else { 0 };
        bytes::put(self.buf.as_mut(), field::STATUS, &s.to_be_bytes());
    }
    /// Sets the 15-bit DR status (extra high bits are dropped), keeping the
    /// D bit.
    pub fn set_dr_status(&mut self, status: u16) {
        let d = if self.direction() {
            DR_DIRECTION_BIT
        } else {
            0
        };
        bytes::put(
            self.buf.as_mut(),
            field::STATUS,
            &(d | (status & DR_STATUS_MASK)).to_be_bytes(),
        );
    }
    /// The attribute data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), field::DATA)
    }
    /// InitialPath, mutable (empty if the buffer is shorter than 256).
    pub fn initial_path_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), field::INITIAL_PATH)
    }
    /// ReturnPath, mutable (empty if the buffer is shorter than 256).
    pub fn return_path_mut(&mut self) -> &mut [u8] {
        bytes::sub_mut(self.buf.as_mut(), field::RETURN_PATH)
    }
}
