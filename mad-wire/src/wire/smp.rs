//! Subnet management packets (classes 0x01 and 0x81, MAD.md §6).
//!
//! - [`SmpRepr`] and [`DrSmpRepr`]: lossless `Repr`s of a whole 256-byte
//!   LID-routed and directed-route SMP.
//! - [`Smp`]: a zero-copy view of either kind.
//! - The directed-route hop-pointer rules of IBA vol. 1 §14.2.2 as the
//!   Linux kernel implements them (`drivers/infiniband/core/smi.c`):
//!   [`dr_handle_send`], [`dr_handle_recv`], [`dr_check_forward`],
//!   [`dr_fwd_port`], [`is_local_smp`], [`is_local_returning_smp`].
//! - [`DrPath`]: a directed route as `smpquery -D` takes it (`"0,1,3"`),
//!   writing the requester's routing fields; [`dr_make_response`] turns a
//!   received DR request into its response.
//!
//! # A directed route, step by step
//! Requester R sends with HopPointer 0; every send on the outbound leg
//! increments HopPointer and checks that `InitialPath[hp]` is the port it
//! leaves through; every receive on a switch records the arrival port in
//! `ReturnPath[hp]`. At the end (hp = HopCount + 1) the SMA answers with
//! D = 1 and the same HopPointer; every returning send decrements it and
//! leaves through `ReturnPath[hp]`, until hp = 0 at the requester.

use core::fmt;
use core::str::FromStr;

use super::bytes::{self, view_methods};
use super::field::check_fits;
use super::{
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

// ---------------------------------------------------------------------
// Directed-route rules (IBA vol. 1 §14.2.2, kernel smi.c)
// ---------------------------------------------------------------------

/// Outcome of [`dr_handle_send`] / [`dr_handle_recv`] (`enum smi_action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrVerdict {
    /// Keep the SMP: send it, forward it or process it.
    Handle,
    /// Drop it.
    Discard,
}

impl DrVerdict {
    fn from_bool(keep: bool) -> Self {
        if keep {
            Self::Handle
        } else {
            Self::Discard
        }
    }
}

/// Outcome of [`dr_check_forward`] (`enum smi_forward_action`), for an SMP
/// that passed [`dr_handle_recv`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrForward {
    /// `IB_SMI_LOCAL`: complete it up the local stack as it is (the
    /// returning SMP has reached the SM side, or the outbound SMP continues
    /// LID-routed from here).
    Local,
    /// `IB_SMI_SEND`: not forwarded; run [`dr_handle_send`] on the arrival
    /// port, then (if [`is_local_smp`]) hand it to the local SMA. Also
    /// returned for a returning SMP at hp = 1 with a real DrSLID, which
    /// then continues LID-routed.
    Send,
    /// `IB_SMI_FORWARD`: a switch sends it out of [`dr_fwd_port`].
    Forward,
}

fn path_entry(path: &[u8], i: usize) -> Option<u8> {
    path.get(i).copied()
}

/// The send rules (`smi_handle_dr_smp_send`): adjusts HopPointer for an SMP
/// about to leave through `port` of a node (`is_switch` says which kind)
/// and says whether it may go.
///
/// Outbound (D = 0): C14-9:1 requester start (hc ≠ 0, hp = 0): hp += 1,
/// keep iff `InitialPath[hp] == port`; C14-9:2 intermediate (0 < hp < hc):
/// switches only, hp += 1, same check; C14-9:3 end of the DR part
/// (hp = hc): hp += 1, keep iff switch or DrDLID permissive; C14-9:4
/// hp = hc + 1 keep; C14-9:5 anything else discard.
/// Returning (D = 1): C14-13:1 responder (hc ≠ 0, hp = hc + 1): hp −= 1,
/// keep iff `ReturnPath[hp] == port`; C14-13:2 (2 ≤ hp ≤ hc): switches
/// only, hp −= 1, same check; C14-13:3 hp = 1: hp −= 1, keep iff switch or
/// DrSLID permissive; C14-13:4 hp = 0 keep; C14-13:5 discard.
/// HopCount ≥ 64 is always discarded (C14-6), as is a view without paths.
pub fn dr_handle_send<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut Smp<T>,
    is_switch: bool,
    port: u8,
) -> DrVerdict {
    let hc = smp.hop_cnt();
    let hp = smp.hop_ptr();
    if hc > DR_MAX_HOPS || !smp.has_paths() {
        return DrVerdict::Discard;
    }
    let dlid_perm = smp.dr_dlid() == PERMISSIVE_LID;
    let slid_perm = smp.dr_slid() == PERMISSIVE_LID;
    if !smp.direction() {
        // C14-9:1 and C14-9:2
        if (hc != 0 && hp == 0) || (hp != 0 && hp < hc) {
            if hp != 0 && !is_switch {
                return DrVerdict::Discard;
            }
            let hp = hp + 1;
            smp.set_hop_ptr(hp);
            return DrVerdict::from_bool(
                path_entry(smp.initial_path(), usize::from(hp)) == Some(port),
            );
        }
        // C14-9:3
        if hp == hc {
            smp.set_hop_ptr(hp + 1);
            return DrVerdict::from_bool(is_switch || dlid_perm);
        }
        // C14-9:4 / C14-9:5
        DrVerdict::from_bool(u16::from(hp) == u16::from(hc) + 1)
    } else {
        // C14-13:1 and C14-13:2
        let c1 = hc != 0 && u16::from(hp) == u16::from(hc) + 1;
        if c1 || (2..=hc).contains(&hp) {
            if !c1 && !is_switch {
                return DrVerdict::Discard;
            }
            let hp = hp - 1;
            smp.set_hop_ptr(hp);
            return DrVerdict::from_bool(
                path_entry(smp.return_path(), usize::from(hp)) == Some(port),
            );
        }
        // C14-13:3
        if hp == 1 {
            smp.set_hop_ptr(0);
            return DrVerdict::from_bool(is_switch || slid_perm);
        }
        // C14-13:4 / C14-13:5
        DrVerdict::from_bool(hp == 0)
    }
}

/// The receive rules (`smi_handle_dr_smp_recv`) for an SMP that arrived on
/// `port` of a node with `phys_port_cnt` physical ports.
///
/// Outbound (D = 0): C14-9:1 (hc ≠ 0, hp = 0) discard; C14-9:2
/// (0 < hp < hc): switches only, `ReturnPath[hp] = port`, keep iff
/// `InitialPath[hp + 1] ≤ phys_port_cnt`; C14-9:3 (hp = hc): if hc ≠ 0,
/// `ReturnPath[hp] = port`; keep iff switch or DrDLID permissive;
/// C14-9:4/5 keep iff hp = hc + 1. HopPointer is not changed on the
/// outbound leg (the send rules advance it).
/// Returning (D = 1): C14-13:1 (hc ≠ 0, hp = hc + 1): hp −= 1, keep iff
/// `ReturnPath[hp] == port`; C14-13:2 (2 ≤ hp ≤ hc): switches only, keep
/// iff `ReturnPath[hp − 1] ≤ phys_port_cnt`; C14-13:3 (hp = 1): DrSLID
/// permissive → hp = 0 and keep (for the SM), else keep iff switch;
/// C14-13:4/5 keep iff hp = 0.
/// HopCount ≥ 64 is always discarded (C14-6), as is a view without paths.
pub fn dr_handle_recv<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut Smp<T>,
    is_switch: bool,
    port: u8,
    phys_port_cnt: u8,
) -> DrVerdict {
    let hc = smp.hop_cnt();
    let hp = smp.hop_ptr();
    if hc > DR_MAX_HOPS || !smp.has_paths() {
        return DrVerdict::Discard;
    }
    let dlid_perm = smp.dr_dlid() == PERMISSIVE_LID;
    let slid_perm = smp.dr_slid() == PERMISSIVE_LID;
    let hpi = usize::from(hp);
    if !smp.direction() {
        // C14-9:1
        if hc != 0 && hp == 0 {
            return DrVerdict::Discard;
        }
        // C14-9:2
        if hp != 0 && hp < hc {
            if !is_switch {
                return DrVerdict::Discard;
            }
            if let Some(e) = smp.return_path_mut().get_mut(hpi) {
                *e = port;
            }
            return DrVerdict::from_bool(
                path_entry(smp.initial_path(), hpi + 1).is_some_and(|p| p <= phys_port_cnt),
            );
        }
        // C14-9:3
        if hp == hc {
            if hc != 0 {
                if let Some(e) = smp.return_path_mut().get_mut(hpi) {
                    *e = port;
                }
            }
            return DrVerdict::from_bool(is_switch || dlid_perm);
        }
        // C14-9:4 / C14-9:5
        DrVerdict::from_bool(u16::from(hp) == u16::from(hc) + 1)
    } else {
        // C14-13:1
        if hc != 0 && u16::from(hp) == u16::from(hc) + 1 {
            let hp = hp - 1;
            smp.set_hop_ptr(hp);
            return DrVerdict::from_bool(
                path_entry(smp.return_path(), usize::from(hp)) == Some(port),
            );
        }
        // C14-13:2
        if (2..=hc).contains(&hp) {
            if !is_switch {
                return DrVerdict::Discard;
            }
            return DrVerdict::from_bool(
                path_entry(smp.return_path(), hpi - 1).is_some_and(|p| p <= phys_port_cnt),
            );
        }
        // C14-13:3
        if hp == 1 {
            if slid_perm {
                smp.set_hop_ptr(0);
                return DrVerdict::Handle;
            }
            return DrVerdict::from_bool(is_switch);
        }
        // C14-13:4 / C14-13:5
        DrVerdict::from_bool(hp == 0)
    }
}

/// Where a received DR SMP goes next (`smi_check_forward_dr_smp`).
///
/// D = 0: 0 < hp < hc → [`DrForward::Forward`]; hp = hc → `Send` if
/// DrDLID is permissive, else `Local`; hp = hc + 1 → `Send`.
/// D = 1: 2 ≤ hp ≤ hc → `Forward`; hp = 1 → `Send` if DrSLID is *not*
/// permissive, else `Local`. Everything else → `Local`.
pub fn dr_check_forward<T: AsRef<[u8]>>(smp: &Smp<T>) -> DrForward {
    let hc = smp.hop_cnt();
    let hp = smp.hop_ptr();
    if !smp.direction() {
        if hp != 0 && hp < hc {
            return DrForward::Forward;
        }
        if hp == hc {
            return if smp.dr_dlid() == PERMISSIVE_LID {
                DrForward::Send
            } else {
                DrForward::Local
            };
        }
        if u16::from(hp) == u16::from(hc) + 1 {
            return DrForward::Send;
        }
    } else {
        if (2..=hc).contains(&hp) {
            return DrForward::Forward;
        }
        if hp == 1 {
            return if smp.dr_slid() != PERMISSIVE_LID {
                DrForward::Send
            } else {
                DrForward::Local
            };
        }
    }
    DrForward::Local
}

/// The port a switch forwards a DR SMP out of (`smi_get_fwd_port`):
/// `InitialPath[hp + 1]` outbound, `ReturnPath[hp − 1]` returning. Returns
/// 0 when that entry does not exist (hp = 0 returning, hp ≥ 63 outbound,
/// or a view without paths).
pub fn dr_fwd_port<T: AsRef<[u8]>>(smp: &Smp<T>) -> u8 {
    let hp = usize::from(smp.hop_ptr());
    let entry = if !smp.direction() {
        path_entry(smp.initial_path(), hp + 1)
    } else {
        hp.checked_sub(1)
            .and_then(|i| path_entry(smp.return_path(), i))
    };
    entry.unwrap_or(0)
}

/// An outbound SMP for the local SMA: D = 0 and hp = hc + 1
/// (`smi_check_local_smp`).
pub fn is_local_smp<T: AsRef<[u8]>>(smp: &Smp<T>) -> bool {
    !smp.direction() && u16::from(smp.hop_ptr()) == u16::from(smp.hop_cnt()) + 1
}

/// A returning SMP for the local SM: D = 1 and hp = 0
/// (`smi_check_local_returning_smp`).
pub fn is_local_returning_smp<T: AsRef<[u8]>>(smp: &Smp<T>) -> bool {
    smp.direction() && smp.hop_ptr() == 0
}

/// Turns a received directed-route request into its response, in place:
/// method GetResp (a Get or a Set is answered with GetResp), D = 1, and
/// HopPointer = HopCount + 1 as libibmad's `mad_encode` writes it for a
/// response (it is already hc + 1 after the kernel's send step at the
/// responder). Paths, TID, attribute, status and data are kept; set the
/// status with [`Smp::set_dr_status`] and the data with [`Smp::data_mut`].
///
/// # Errors
/// [`Error::Invalid`] if the SMP is not of class 0x81, is already a
/// response or returning, has HopCount > 63, or its method is not Get or
/// Set; [`Error::Truncated`] if the buffer lacks the paths.
pub fn dr_make_response<T: AsRef<[u8]> + AsMut<[u8]>>(smp: &mut Smp<T>) -> Result<(), Error> {
    let invalid = |field, value: u64, reason| Error::Invalid {
        what: "DrSMP",
        field,
        value,
        reason,
    };
    if !smp.has_paths() {
        return Err(Error::Truncated {
            what: "DrSMP",
            need: MAD_LEN,
            got: smp.as_bytes().len(),
        });
    }
    if !smp.is_directed_route() {
        return Err(invalid(
            "mgmt_class",
            u64::from(smp.mgmt_class().0),
            "not a directed-route SMP",
        ));
    }
    if smp.response_bit() {
        return Err(invalid(
            "method",
            u64::from(smp.mad().raw_method()),
            "already a response",
        ));
    }
    if smp.direction() {
        return Err(invalid("direction", 1, "already a returning SMP"));
    }
    let hc = smp.hop_cnt();
    if hc > DR_MAX_HOPS {
        return Err(invalid("hop_cnt", u64::from(hc), "more than 63 hops"));
    }
    let m = smp.method();
    if m != Method::GET && m != Method::SET {
        return Err(invalid(
            "method",
            u64::from(m.0),
            "only Get and Set have a GetResp",
        ));
    }
    smp.mad_mut().set_method(Method::GET, true);
    smp.set_direction(true);
    smp.set_hop_ptr(hc + 1);
    Ok(())
}

/// A directed route: the egress port at each hop, plus DrSLID / DrDLID.
///
/// Parsed from the comma-separated form `smpquery -D` and libibmad's
/// `str2drpath` take: `"0,1,3"` is entry 0 (unused, conventionally 0)
/// followed by the egress ports of hops 1 and 2, so HopCount = 2; `"0"`
/// is the local port (HopCount 0). DrSLID and DrDLID default to the
/// permissive LID.
#[derive(Clone, PartialEq, Eq)]
pub struct DrPath {
    path: [u8; DR_PATH_LEN],
    hop_cnt: u8,
    /// DrSLID (0xFFFF unless the route starts LID-routed).
    pub dr_slid: u16,
    /// DrDLID (0xFFFF unless the route ends LID-routed).
    pub dr_dlid: u16,
}

impl Default for DrPath {
    fn default() -> Self {
        Self::local()
    }
}

impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DrPath({self}, slid {:#06x}, dlid {:#06x})",
            self.dr_slid, self.dr_dlid
        )
    }
}

impl DrPath {
    /// The local port: HopCount 0.
    #[must_use]
    pub fn local() -> Self {
        Self {
            path: [0; DR_PATH_LEN],
            hop_cnt: 0,
            dr_slid: PERMISSIVE_LID,
            dr_dlid: PERMISSIVE_LID,
        }
    }

    /// A route through `hops`: the egress port of hop 1, 2, ... (entry 0
    /// is not included and is 0).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `hop_cnt` for more than 63 hops.
    pub fn from_hops(hops: &[u8]) -> Result<Self, Error> {
        if hops.len() > usize::from(DR_MAX_HOPS) {
            return Err(Error::Invalid {
                what: "DrPath",
                field: "hop_cnt",
                value: hops.len() as u64,
                reason: "a directed route has at most 63 hops",
            });
        }
        let mut p = Self::local();
        p.path[1..=hops.len()].copy_from_slice(hops);
        p.hop_cnt = hops.len() as u8;
        Ok(p)
    }

    /// Sets DrSLID and DrDLID.
    #[must_use]
    pub fn with_lids(mut self, dr_slid: u16, dr_dlid: u16) -> Self {
        self.dr_slid = dr_slid;
        self.dr_dlid = dr_dlid;
        self
    }

    /// HopCount.
    #[must_use]
    pub fn hop_cnt(&self) -> u8 {
        self.hop_cnt
    }

    /// The egress ports of hops 1..=HopCount.
    #[must_use]
    pub fn hops(&self) -> &[u8] {
        &self.path[1..=usize::from(self.hop_cnt)]
    }

    /// The full 64-entry InitialPath as sent (entry 0 included).
    #[must_use]
    pub fn initial_path(&self) -> &[u8; DR_PATH_LEN] {
        &self.path
    }

    /// Writes the requester's routing fields into `smp`: HopCount,
    /// HopPointer 0, D = 0 (the status is kept), DrSLID, DrDLID,
    /// InitialPath, and a zeroed ReturnPath. Other fields are untouched.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer lacks the paths (< 256 bytes).
    pub fn write_route<T: AsRef<[u8]> + AsMut<[u8]>>(&self, smp: &mut Smp<T>) -> Result<(), Error> {
        if !smp.has_paths() {
            return Err(Error::Truncated {
                what: "DrSMP",
                need: MAD_LEN,
                got: smp.as_bytes().len(),
            });
        }
        smp.set_hop_cnt(self.hop_cnt);
        smp.set_hop_ptr(0);
        smp.set_direction(false);
        smp.set_dr_slid(self.dr_slid);
        smp.set_dr_dlid(self.dr_dlid);
        smp.initial_path_mut().copy_from_slice(&self.path);
        smp.return_path_mut().fill(0);
        Ok(())
    }

    /// A complete DR request: base version 1, class 0x81, class version 1,
    /// `method`, status 0, the route, `tid`, `attr_id`, `attr_mod` and
    /// `m_key`; data zero.
    #[must_use]
    pub fn build_request(
        &self,
        method: Method,
        attr_id: AttributeId,
        attr_mod: u32,
        tid: u64,
        m_key: u64,
    ) -> [u8; MAD_LEN] {
        let mut smp = Smp::new_unchecked([0u8; MAD_LEN]);
        {
            let mut m = smp.mad_mut();
            m.set_base_version(1);
            m.set_mgmt_class(MgmtClass::SUBN_DIRECTED_ROUTE);
            m.set_class_version(1);
            m.set_method(method, false);
            m.set_tid(tid);
            m.set_attr_id(attr_id);
            m.set_attr_mod(attr_mod);
        }
        smp.set_m_key(m_key);
        // Cannot fail: the buffer has 256 bytes.
        let _ = self.write_route(&mut smp);
        smp.into_inner()
    }
}

impl fmt::Display for DrPath {
    /// The `smpquery -D` form, entry 0 included: `0,1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.path[..=usize::from(self.hop_cnt)].iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for DrPath {
    type Err = Error;

    /// Parses `"0,1,3"` (see the type docs). Each element is a decimal port
    /// number 0–255, surrounding spaces allowed; entry 0 is kept as given.
    fn from_str(s: &str) -> Result<Self, Error> {
        let mut p = Self::local();
        let mut n = 0usize;
        for (i, part) in s.split(',').enumerate() {
            let port: u8 = part.trim().parse().map_err(|_| Error::Invalid {
                what: "DrPath",
                field: "path",
                value: i as u64,
                reason: "path element is not a port number 0-255",
            })?;
            if i >= DR_PATH_LEN {
                return Err(Error::Invalid {
                    what: "DrPath",
                    field: "hop_cnt",
                    value: i as u64,
                    reason: "a directed route has at most 63 hops",
                });
            }
            p.path[i] = port;
            n = i;
        }
        p.hop_cnt = n as u8;
        Ok(p)
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

#[cfg(test)]
mod tests {
    use super::*;

    crate::repr_roundtrip_tests!(SmpRepr, DrSmpRepr);

    const IS_SWITCH: bool = true;
    const IS_CA: bool = false;

    /// A DR SMP with the given HopCount, HopPointer, D bit and path
    /// entries (index 1 onward), both DR LIDs permissive.
    fn dr(hc: u8, hp: u8, d: bool, ip: &[u8], rp: &[u8]) -> Smp<[u8; 256]> {
        let mut s = Smp::new_checked([0u8; 256]).unwrap();
        s.mad_mut().set_mgmt_class(MgmtClass::SUBN_DIRECTED_ROUTE);
        s.set_hop_cnt(hc);
        s.set_hop_ptr(hp);
        s.set_direction(d);
        s.set_dr_slid(PERMISSIVE_LID);
        s.set_dr_dlid(PERMISSIVE_LID);
        s.initial_path_mut()[1..=ip.len()].copy_from_slice(ip);
        s.return_path_mut()[1..=rp.len()].copy_from_slice(rp);
        s
    }

    use DrVerdict::{Discard, Handle};

    // ---- views and reprs

    #[test]
    fn lid_routed_view_agrees_with_smp_repr() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(13).wrapping_add(1);
        }
        buf[1] = 0x01;
        let v = Smp::new_checked(&buf[..]).unwrap();
        let r = v.to_repr().unwrap();
        assert_eq!(v.mgmt_class(), r.header.mgmt_class);
        assert_eq!(v.method(), r.header.method);
        assert_eq!(v.tid(), r.header.tid);
        assert_eq!(v.attr_id(), r.header.attr_id);
        assert_eq!(v.attr_mod(), r.header.attr_mod);
        assert_eq!(v.m_key(), r.m_key);
        assert_eq!(v.data(), &r.data[..]);
        assert!(!v.is_directed_route());
    }

    #[test]
    fn directed_route_view_agrees_with_dr_smp_repr() {
        let mut buf = [0u8; 256];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(31).wrapping_add(9);
        }
        buf[1] = 0x81;
        buf[4] = 0xC1; // D set, status high bits 0x41
        let v = Smp::new_checked(&buf[..]).unwrap();
        let r = v.to_dr_repr().unwrap();
        assert_eq!(v.direction(), r.direction);
        assert!(r.direction);
        assert_eq!(v.dr_status(), r.status);
        assert_eq!(v.dr_status(), u16::from_be_bytes([0x41, buf[5]]));
        assert_eq!(v.hop_ptr(), r.hop_ptr);
        assert_eq!(v.hop_cnt(), r.hop_cnt);
        assert_eq!(v.hop_ptr(), buf[6]);
        assert_eq!(v.hop_cnt(), buf[7]);
        assert_eq!(v.m_key(), r.m_key);
        assert_eq!(v.dr_slid(), r.dr_slid);
        assert_eq!(v.dr_dlid(), r.dr_dlid);
        assert_eq!(v.dr_slid(), u16::from_be_bytes([buf[32], buf[33]]));
        assert_eq!(v.data(), &r.data[..]);
        assert_eq!(v.initial_path(), &r.initial_path[..]);
        assert_eq!(v.return_path(), &r.return_path[..]);
        assert_eq!(v.tid(), r.tid);
        assert_eq!(v.attr_mod(), r.attr_mod);
        assert!(v.is_directed_route());
        // The common header agrees too: status word = D bit + status.
        let h = v.mad().header().unwrap();
        assert_eq!(h.status.0, 0x8000 | r.status);
        assert_eq!(h.class_specific, u16::from_be_bytes([r.hop_ptr, r.hop_cnt]));
    }

    #[test]
    fn setters_write_the_libibmad_offsets() {
        let mut s = Smp::new_checked([0u8; 256]).unwrap();
        s.set_m_key(0x1122_3344_5566_7788);
        s.set_dr_slid(0x0102);
        s.set_dr_dlid(0x0304);
        s.set_hop_ptr(5);
        s.set_hop_cnt(6);
        s.set_dr_status(0xFFFF);
        assert_eq!(s.dr_status(), 0x7FFF);
        assert!(!s.direction(), "status setter must not set D");
        s.set_direction(true);
        assert_eq!(s.dr_status(), 0x7FFF, "D setter must keep the status");
        s.set_dr_status(0x001C);
        assert!(s.direction(), "status setter must keep D");
        s.data_mut()[0] = 0xAA;
        s.initial_path_mut()[1] = 7;
        s.return_path_mut()[63] = 9;
        let b = s.into_inner();
        assert_eq!(&b[4..8], &[0x80, 0x1C, 5, 6]);
        assert_eq!(
            &b[24..32],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(&b[32..36], &[1, 2, 3, 4]);
        assert_eq!((b[64], b[129], b[255]), (0xAA, 7, 9));
    }

    #[test]
    fn lid_routed_view_needs_128_bytes_and_dr_view_needs_256() {
        assert!(Smp::new_checked(&[0u8; 128][..]).is_ok());
        assert!(matches!(
            Smp::new_checked(&[0u8; 127][..]),
            Err(Error::Truncated { need: 128, .. })
        ));
        let mut dr = [0u8; 200];
        dr[1] = 0x81;
        assert!(matches!(
            Smp::new_checked(&dr[..]),
            Err(Error::Truncated {
                need: 256,
                got: 200,
                ..
            })
        ));
        // A short LID-routed view has no paths and DR rules discard it.
        let mut s = Smp::new_checked([0u8; 128]).unwrap();
        assert!(s.initial_path().is_empty() && s.return_path().is_empty());
        assert!(!s.has_paths());
        s.set_hop_cnt(1);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
        assert_eq!(dr_fwd_port(&s), 0);
        assert!(s.to_repr().is_err());
    }

    #[test]
    fn hop_count_check_on_repr() {
        let r = DrSmpRepr {
            hop_cnt: 63,
            ..Default::default()
        };
        assert!(r.check_hop_cnt().is_ok());
        let r = DrSmpRepr {
            hop_cnt: 64,
            ..Default::default()
        };
        assert!(r.check_hop_cnt().is_err());
    }

    // ---- C14-6

    #[test]
    fn c14_6_hop_count_64_is_discarded_on_send_and_recv_both_ways() {
        for d in [false, true] {
            let mut s = dr(64, 1, d, &[], &[]);
            assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 0), Discard);
            assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 0, 36), Discard);
            assert_eq!(s.hop_ptr(), 1, "no change on a discarded SMP");
        }
    }

    // ---- outbound send (C14-9)

    #[test]
    fn send_out_c14_9_1_requester_increments_and_checks_initial_path() {
        let mut s = dr(2, 0, false, &[1, 3], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
        assert_eq!(s.hop_ptr(), 1);
        let mut s = dr(2, 0, false, &[1, 3], &[]);
        assert_eq!(
            dr_handle_send(&mut s, IS_CA, 2),
            Discard,
            "wrong egress port"
        );
        assert_eq!(s.hop_ptr(), 1);
    }

    #[test]
    fn send_out_c14_9_2_switch_increments_and_checks_initial_path() {
        let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 3), Handle);
        assert_eq!(s.hop_ptr(), 2);
        let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 4), Discard);
    }

    #[test]
    fn send_out_c14_9_2_non_switch_discards() {
        let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 3), Discard);
        assert_eq!(s.hop_ptr(), 1, "discarded before the increment");
    }

    #[test]
    fn send_out_c14_9_3_end_of_dr_part_keeps_for_switch_or_permissive_dlid() {
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        assert_eq!(
            dr_handle_send(&mut s, IS_CA, 1),
            Handle,
            "CA, DrDLID permissive"
        );
        assert_eq!(s.hop_ptr(), 3);
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        s.set_dr_dlid(0x0010);
        assert_eq!(
            dr_handle_send(&mut s, IS_SWITCH, 1),
            Handle,
            "switch, LID DrDLID"
        );
        assert_eq!(s.hop_ptr(), 3);
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        s.set_dr_dlid(0x0010);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard, "CA, LID DrDLID");
        // hc = 0: the local case is C14-9:3 too.
        let mut s = dr(0, 0, false, &[], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
        assert_eq!(s.hop_ptr(), 1);
        assert!(is_local_smp(&s));
    }

    #[test]
    fn send_out_c14_9_4_hop_ptr_past_the_end_keeps() {
        let mut s = dr(2, 3, false, &[1, 3], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 9), Handle);
        assert_eq!(s.hop_ptr(), 3, "unchanged");
    }

    #[test]
    fn send_out_c14_9_5_unreasonable_hop_ptr_discards() {
        let mut s = dr(2, 4, false, &[1, 3], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
        let mut s = dr(2, 255, false, &[1, 3], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
    }

    // ---- outbound receive (C14-9)

    #[test]
    fn recv_out_c14_9_1_hop_ptr_zero_is_discarded() {
        let mut s = dr(2, 0, false, &[1, 3], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Discard);
    }

    #[test]
    fn recv_out_c14_9_2_switch_records_return_port_and_checks_next_hop() {
        let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 7, 8), Handle);
        assert_eq!(s.return_path()[1], 7);
        assert_eq!(s.hop_ptr(), 1, "hop pointer advances on send, not recv");
        // Next hop's port beyond the switch's port count.
        let mut s = dr(3, 1, false, &[1, 9, 5], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 7, 8), Discard);
        assert_eq!(s.return_path()[1], 7, "recorded before the check");
    }

    #[test]
    fn recv_out_c14_9_2_non_switch_discards() {
        let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 7, 8), Discard);
        assert_eq!(s.return_path()[1], 0, "nothing recorded");
    }

    #[test]
    fn recv_out_c14_9_3_end_records_return_port_and_checks_dlid() {
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
        assert_eq!(s.return_path()[2], 4);
        assert_eq!(s.hop_ptr(), 2);
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        s.set_dr_dlid(0x0020);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Discard);
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        s.set_dr_dlid(0x0020);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Handle);
        // hc = 0: nothing recorded.
        let mut s = dr(0, 0, false, &[], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
        assert_eq!(s.return_path()[0], 0);
    }

    #[test]
    fn recv_out_c14_9_4_hop_ptr_past_the_end_keeps() {
        let mut s = dr(2, 3, false, &[1, 3], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
        assert_eq!(s.hop_ptr(), 3);
    }

    #[test]
    fn recv_out_c14_9_5_unreasonable_hop_ptr_discards() {
        let mut s = dr(2, 5, false, &[1, 3], &[]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Discard);
    }

    // ---- returning send (C14-13)

    #[test]
    fn send_ret_c14_13_1_responder_decrements_and_checks_return_path() {
        let mut s = dr(2, 3, true, &[1, 3], &[0, 4]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 4), Handle);
        assert_eq!(s.hop_ptr(), 2);
        let mut s = dr(2, 3, true, &[1, 3], &[0, 4]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 5), Discard);
        assert_eq!(s.hop_ptr(), 2);
    }

    #[test]
    fn send_ret_c14_13_2_switch_decrements_and_checks_return_path() {
        let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 9), Handle);
        assert_eq!(s.hop_ptr(), 2);
        let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 7), Discard);
    }

    #[test]
    fn send_ret_c14_13_2_non_switch_discards() {
        let mut s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 7), Discard);
        assert_eq!(s.hop_ptr(), 2);
    }

    #[test]
    fn send_ret_c14_13_3_hop_ptr_one_goes_to_zero_for_switch_or_permissive_slid() {
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
        assert_eq!(s.hop_ptr(), 0);
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        s.set_dr_slid(0x0003);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Handle);
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        s.set_dr_slid(0x0003);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard);
        assert_eq!(s.hop_ptr(), 0);
        // The local response (hc = 0, hp = 1) takes this row.
        let mut s = dr(0, 1, true, &[], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
        assert!(is_local_returning_smp(&s));
    }

    #[test]
    fn send_ret_c14_13_4_hop_ptr_zero_keeps() {
        let mut s = dr(2, 0, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
        assert_eq!(s.hop_ptr(), 0);
    }

    #[test]
    fn send_ret_c14_13_5_unreasonable_hop_ptr_discards() {
        let mut s = dr(2, 4, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
        assert_eq!(s.hop_ptr(), 4);
    }

    // ---- returning receive (C14-13)

    #[test]
    fn recv_ret_c14_13_1_decrements_and_checks_return_path() {
        let mut s = dr(2, 3, true, &[1, 3], &[7, 4]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Handle);
        assert_eq!(s.hop_ptr(), 2);
        let mut s = dr(2, 3, true, &[1, 3], &[7, 4]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 5, 36), Discard);
    }

    #[test]
    fn recv_ret_c14_13_2_switch_checks_previous_return_port() {
        let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 5, 9), Handle);
        assert_eq!(s.hop_ptr(), 3, "hop pointer moves on send, not recv");
        let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(
            dr_handle_recv(&mut s, IS_SWITCH, 5, 8),
            Discard,
            "port 9 > 8 ports"
        );
    }

    #[test]
    fn recv_ret_c14_13_2_non_switch_discards() {
        let mut s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 5, 36), Discard);
    }

    #[test]
    fn recv_ret_c14_13_3_permissive_slid_gives_to_sm_else_switch_keeps() {
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Handle);
        assert_eq!(s.hop_ptr(), 0);
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        s.set_dr_slid(0x0003);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 1, 36), Handle);
        assert_eq!(s.hop_ptr(), 1, "not decremented: continues LID-routed");
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        s.set_dr_slid(0x0003);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
    }

    #[test]
    fn recv_ret_c14_13_4_hop_ptr_zero_keeps() {
        let mut s = dr(2, 0, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Handle);
    }

    #[test]
    fn recv_ret_c14_13_5_unreasonable_hop_ptr_discards() {
        let mut s = dr(2, 9, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
    }

    // ---- forwarding decision

    #[test]
    fn forward_out_intermediate_hop_forwards_out_next_initial_port() {
        let s = dr(3, 1, false, &[1, 3, 5], &[]);
        assert_eq!(dr_check_forward(&s), DrForward::Forward);
        assert_eq!(dr_fwd_port(&s), 3);
    }

    #[test]
    fn forward_out_end_of_dr_part_sends_if_dlid_permissive_else_local() {
        let mut s = dr(2, 2, false, &[1, 3], &[]);
        assert_eq!(dr_check_forward(&s), DrForward::Send);
        s.set_dr_dlid(0x0042);
        assert_eq!(dr_check_forward(&s), DrForward::Local);
    }

    #[test]
    fn forward_out_hop_ptr_past_end_sends_and_zero_is_local() {
        assert_eq!(
            dr_check_forward(&dr(2, 3, false, &[1, 3], &[])),
            DrForward::Send
        );
        assert_eq!(
            dr_check_forward(&dr(2, 0, false, &[1, 3], &[])),
            DrForward::Local
        );
        assert_eq!(
            dr_check_forward(&dr(2, 7, false, &[1, 3], &[])),
            DrForward::Local
        );
    }

    #[test]
    fn forward_ret_intermediate_hop_forwards_out_previous_return_port() {
        let s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
        assert_eq!(dr_check_forward(&s), DrForward::Forward);
        assert_eq!(dr_fwd_port(&s), 7);
    }

    #[test]
    fn forward_ret_hop_ptr_one_sends_if_slid_not_permissive_else_local() {
        let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
        assert_eq!(dr_check_forward(&s), DrForward::Local);
        s.set_dr_slid(0x0005);
        assert_eq!(dr_check_forward(&s), DrForward::Send);
        assert_eq!(
            dr_check_forward(&dr(2, 0, true, &[1, 3], &[7, 9])),
            DrForward::Local
        );
    }

    #[test]
    fn fwd_port_out_of_range_is_zero_not_a_panic() {
        assert_eq!(dr_fwd_port(&dr(2, 0, true, &[], &[])), 0);
        assert_eq!(dr_fwd_port(&dr(63, 63, false, &[], &[])), 0);
        assert_eq!(dr_fwd_port(&dr(63, 255, false, &[], &[])), 0);
    }

    #[test]
    fn local_smp_predicates_follow_the_kernel() {
        assert!(is_local_smp(&dr(2, 3, false, &[], &[])));
        assert!(!is_local_smp(&dr(2, 3, true, &[], &[])));
        assert!(!is_local_smp(&dr(2, 2, false, &[], &[])));
        assert!(is_local_smp(&dr(63, 64, false, &[], &[])));
        assert!(is_local_returning_smp(&dr(2, 0, true, &[], &[])));
        assert!(!is_local_returning_smp(&dr(2, 0, false, &[], &[])));
        assert!(!is_local_returning_smp(&dr(2, 1, true, &[], &[])));
    }

    // ---- DrPath and the responder

    #[test]
    fn dr_path_parses_the_smpquery_form() {
        let p: DrPath = "0,1,3".parse().unwrap();
        assert_eq!(p.hop_cnt(), 2);
        assert_eq!(p.hops(), &[1, 3]);
        assert_eq!(p.to_string(), "0,1,3");
        assert_eq!((p.dr_slid, p.dr_dlid), (0xFFFF, 0xFFFF));
        let p: DrPath = "0".parse().unwrap();
        assert_eq!(p.hop_cnt(), 0);
        assert_eq!(p, DrPath::local());
        let p: DrPath = " 0, 2 ,255".parse().unwrap();
        assert_eq!(p.hops(), &[2, 255]);
        assert_eq!(
            DrPath::from_hops(&[1, 3]).unwrap(),
            "0,1,3".parse().unwrap()
        );
    }

    #[test]
    fn dr_path_rejects_bad_elements_and_too_many_hops() {
        for bad in ["", "0,", "0,x", "0,256", "0,-1", "0,,1"] {
            assert!(
                matches!(
                    bad.parse::<DrPath>(),
                    Err(Error::Invalid { field: "path", .. })
                ),
                "{bad:?}"
            );
        }
        let ok63 = std::iter::once("0")
            .chain((0..63).map(|_| "1"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(ok63.parse::<DrPath>().unwrap().hop_cnt(), 63);
        let bad64 = format!("{ok63},1");
        assert!(matches!(
            bad64.parse::<DrPath>(),
            Err(Error::Invalid {
                field: "hop_cnt",
                ..
            })
        ));
        assert!(DrPath::from_hops(&[1; 63]).is_ok());
        assert!(matches!(
            DrPath::from_hops(&[1; 64]),
            Err(Error::Invalid {
                field: "hop_cnt",
                value: 64,
                ..
            })
        ));
    }

    #[test]
    fn dr_path_builds_a_request_like_libibmad() {
        let p: DrPath = "0,1,3".parse().unwrap();
        let buf = p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0x42, 0);
        let s = Smp::new_checked(&buf[..]).unwrap();
        let r = s.to_dr_repr().unwrap();
        assert_eq!(
            (r.base_version, r.mgmt_class, r.class_version),
            (1, MgmtClass::SUBN_DIRECTED_ROUTE, 1)
        );
        assert_eq!((r.method, r.response), (Method::GET, false));
        assert_eq!(
            (r.hop_cnt, r.hop_ptr, r.direction, r.status),
            (2, 0, false, 0)
        );
        assert_eq!((r.dr_slid, r.dr_dlid), (0xFFFF, 0xFFFF));
        assert_eq!(&r.initial_path[..4], &[0, 1, 3, 0]);
        assert!(r.return_path.iter().all(|b| *b == 0));
        assert_eq!((r.tid, r.attr_id), (0x42, AttributeId::NODE_INFO));
        // write_route leaves a short buffer alone with an error.
        let mut short = Smp::new_checked([0u8; 128]).unwrap();
        assert!(p.write_route(&mut short).is_err());
    }

    #[test]
    fn responder_sets_getresp_direction_and_hop_ptr_count_plus_one() {
        let p: DrPath = "0,1,3".parse().unwrap();
        let mut s = Smp::new_checked(p.build_request(Method::SET, AttributeId::PORT_INFO, 1, 7, 0))
            .unwrap();
        s.set_hop_ptr(3);
        dr_make_response(&mut s).unwrap();
        assert_eq!(s.mad().raw_method(), 0x81);
        assert!(s.direction());
        assert_eq!(s.hop_ptr(), 3);
        assert_eq!(s.tid(), 7);
        // Errors: already a response / returning; not DR; bad method.
        assert!(matches!(
            dr_make_response(&mut s),
            Err(Error::Invalid {
                field: "method",
                ..
            })
        ));
        let mut s = Smp::new_checked(p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 1, 0))
            .unwrap();
        s.set_direction(true);
        assert!(matches!(
            dr_make_response(&mut s),
            Err(Error::Invalid {
                field: "direction",
                ..
            })
        ));
        let mut s =
            Smp::new_checked(p.build_request(Method::TRAP, AttributeId::NOTICE, 0, 1, 0)).unwrap();
        assert!(matches!(
            dr_make_response(&mut s),
            Err(Error::Invalid {
                field: "method",
                ..
            })
        ));
        let mut s = Smp::new_checked([0u8; 256]).unwrap();
        s.mad_mut().set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
        assert!(matches!(
            dr_make_response(&mut s),
            Err(Error::Invalid {
                field: "mgmt_class",
                ..
            })
        ));
        let mut s = Smp::new_checked(p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 1, 0))
            .unwrap();
        s.set_hop_cnt(64);
        assert!(matches!(
            dr_make_response(&mut s),
            Err(Error::Invalid {
                field: "hop_cnt",
                ..
            })
        ));
    }

    // ---- the whole walk

    /// One node of the walk: a switch or a CA with `ports` ports.
    struct Node {
        is_switch: bool,
        ports: u8,
    }

    /// What a receiving node does with a DR SMP, as the kernel's
    /// `handle_ib_smi` does: the receive rules, then forward (switch),
    /// or send rules + local SMA, or local. Returns the egress port for a
    /// forward, or `None` when the SMP stays at this node.
    fn receive(s: &mut Smp<[u8; 256]>, n: &Node, port: u8) -> Option<u8> {
        assert_eq!(
            dr_handle_recv(s, n.is_switch, port, n.ports),
            Handle,
            "recv rules"
        );
        match dr_check_forward(s) {
            DrForward::Forward => {
                assert!(n.is_switch);
                let out = dr_fwd_port(s);
                assert_eq!(
                    dr_handle_send(s, n.is_switch, out),
                    Handle,
                    "send rules on forward"
                );
                Some(out)
            }
            DrForward::Send => {
                assert_eq!(
                    dr_handle_send(s, n.is_switch, port),
                    Handle,
                    "send rules to SMA"
                );
                assert!(is_local_smp(s));
                None
            }
            DrForward::Local => None,
        }
    }

    #[test]
    fn full_walk_requester_two_switches_responder_and_back() {
        // R (CA) port 1 -> S1 in 7, out 3 -> S2 in 9, out 5 -> D (CA) port 1.
        let ca = Node {
            is_switch: false,
            ports: 2,
        };
        let sw = Node {
            is_switch: true,
            ports: 36,
        };
        let path: DrPath = "0,1,3,5".parse().unwrap();
        let mut s =
            Smp::new_checked(path.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0x99, 0))
                .unwrap();

        // Requester sends out of port 1.
        assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
        assert_eq!((s.hop_ptr(), s.direction()), (1, false));

        // Switch 1 receives on 7 and forwards out 3.
        assert_eq!(receive(&mut s, &sw, 7), Some(3));
        assert_eq!(s.return_path()[1], 7);
        assert_eq!(s.hop_ptr(), 2);

        // Switch 2 receives on 9 and forwards out 5.
        assert_eq!(receive(&mut s, &sw, 9), Some(5));
        assert_eq!(s.return_path()[2], 9);
        assert_eq!(s.hop_ptr(), 3);

        // Responder receives on port 1: for its SMA, hop pointer hc + 1.
        assert_eq!(receive(&mut s, &ca, 1), None);
        assert_eq!(s.return_path()[3], 1);
        assert_eq!(s.hop_ptr(), 4);
        assert!(is_local_smp(&s));
        assert_eq!(
            &s.initial_path()[..4],
            &[0, 1, 3, 5],
            "initial path untouched"
        );

        // The SMA answers.
        dr_make_response(&mut s).unwrap();
        s.data_mut()[0] = 0x5A;
        assert_eq!((s.hop_ptr(), s.direction()), (4, true));
        assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
        assert_eq!(s.hop_ptr(), 3);

        // Switch 2 receives on 5 and forwards out 9 (ReturnPath[2]).
        assert_eq!(receive(&mut s, &sw, 5), Some(9));
        assert_eq!(s.hop_ptr(), 2);

        // Switch 1 receives on 3 and forwards out 7 (ReturnPath[1]).
        assert_eq!(receive(&mut s, &sw, 3), Some(7));
        assert_eq!(s.hop_ptr(), 1);

        // Requester receives on 1: hop pointer 0, for the local SM.
        assert_eq!(receive(&mut s, &ca, 1), None);
        assert_eq!(s.hop_ptr(), 0);
        assert!(is_local_returning_smp(&s));
        assert_eq!(&s.return_path()[..4], &[0, 7, 9, 1]);
        assert_eq!(
            (s.tid(), s.data()[0], s.mad().raw_method()),
            (0x99, 0x5A, 0x81)
        );
    }

    #[test]
    fn full_walk_with_hop_count_zero_stays_local() {
        let ca = Node {
            is_switch: false,
            ports: 1,
        };
        let mut s = Smp::new_checked(DrPath::local().build_request(
            Method::GET,
            AttributeId::NODE_INFO,
            0,
            1,
            0,
        ))
        .unwrap();
        assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
        assert!(is_local_smp(&s));
        dr_make_response(&mut s).unwrap();
        assert_eq!(s.hop_ptr(), 1);
        assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
        assert!(is_local_returning_smp(&s));
    }
}
