//! Loading libibumad and listing its CAs and ports (`umad_get_cas_names`,
//! `umad_get_ca`, `umad_get_port`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CString};
use std::sync::OnceLock;

use crate::transport::dl::{symbol, symbols};
use crate::transport::TransportError;

/// The shared object this transport loads.
pub const LIBIBUMAD: &str = "libibumad.so.3";
/// The Debian package that provides [`LIBIBUMAD`].
pub const LIBIBUMAD_PACKAGE: &str = "libibumad3";

pub(super) const UMAD_CA_NAME_LEN: usize = 20;
pub(super) const UMAD_CA_MAX_PORTS: usize = 10;
pub(super) const UMAD_MAX_CAS: usize = 32;

#[repr(C)]
pub(super) struct UmadPortRaw {
    pub(super) ca_name: [c_char; UMAD_CA_NAME_LEN],
    pub(super) portnum: c_int,
    pub(super) base_lid: c_uint,
    pub(super) lmc: c_uint,
    pub(super) sm_lid: c_uint,
    pub(super) sm_sl: c_uint,
    pub(super) state: c_uint,
    pub(super) phys_state: c_uint,
    pub(super) rate: c_uint,
    pub(super) capmask: u32,
    pub(super) gid_prefix: u64,
    pub(super) port_guid: u64,
    pub(super) pkeys_size: c_uint,
    pub(super) pkeys: *mut u16,
    pub(super) link_layer: [c_char; UMAD_CA_NAME_LEN],
}

#[repr(C)]
pub(super) struct UmadCaRaw {
    pub(super) ca_name: [c_char; UMAD_CA_NAME_LEN],
    pub(super) node_type: c_uint,
    pub(super) numports: c_int,
    pub(super) fw_ver: [c_char; 20],
    pub(super) ca_type: [c_char; 40],
    pub(super) hw_ver: [c_char; 20],
    pub(super) node_guid: u64,
    pub(super) system_guid: u64,
    pub(super) ports: [*mut UmadPortRaw; UMAD_CA_MAX_PORTS],
}

type FnInit = unsafe extern "C" fn() -> c_int;
type FnGetCasNames = unsafe extern "C" fn(*mut [c_char; UMAD_CA_NAME_LEN], c_int) -> c_int;
type FnGetCa = unsafe extern "C" fn(*const c_char, *mut UmadCaRaw) -> c_int;
type FnReleaseCa = unsafe extern "C" fn(*mut UmadCaRaw) -> c_int;
type FnGetPort = unsafe extern "C" fn(*const c_char, c_int, *mut UmadPortRaw) -> c_int;
type FnReleasePort = unsafe extern "C" fn(*mut UmadPortRaw) -> c_int;
type FnOpenPort = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type FnClosePort = unsafe extern "C" fn(c_int) -> c_int;
type FnRegister = unsafe extern "C" fn(c_int, c_int, c_int, u8, *mut c_long) -> c_int;
type FnRegisterOui = unsafe extern "C" fn(c_int, c_int, u8, *mut u8, *mut c_long) -> c_int;
type FnUnregister = unsafe extern "C" fn(c_int, c_int) -> c_int;
type FnSend = unsafe extern "C" fn(c_int, c_int, *mut c_void, c_int, c_int, c_int) -> c_int;
type FnRecv = unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, c_int) -> c_int;
type FnGetFd = unsafe extern "C" fn(c_int) -> c_int;
/// `umad_get_issm_path(ca_name, portnum, path, max)`.
pub(super) type FnGetIssmPath =
    unsafe extern "C" fn(*const c_char, c_int, *mut c_char, c_int) -> c_int;

/// The libibumad entry points madstack uses, resolved from the shared object.
pub(super) struct Lib {
    pub(super) _lib: libloading::Library,
    pub(super) get_cas_names: FnGetCasNames,
    pub(super) get_ca: FnGetCa,
    pub(super) release_ca: FnReleaseCa,
    pub(super) get_port: FnGetPort,
    pub(super) release_port: FnReleasePort,
    pub(super) open_port: FnOpenPort,
    pub(super) close_port: FnClosePort,
    pub(super) register: FnRegister,
    pub(super) register_oui: FnRegisterOui,
    pub(super) unregister: FnUnregister,
    pub(super) send: FnSend,
    pub(super) recv: FnRecv,
    pub(super) get_fd: FnGetFd,
    /// Absent from very old libibumad builds: only setting IsSM needs it.
    pub(super) get_issm_path: Option<FnGetIssmPath>,
}

// SAFETY: the struct holds plain function pointers into a library that
// stays loaded for the life of the process (it lives in a static).
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

pub(super) static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

pub(super) fn open_error(what: &str) -> TransportError {
    TransportError::Open(what.to_string())
}

pub(super) fn load_lib() -> Result<Lib, String> {
    load_lib_from(LIBIBUMAD)
}

pub(super) fn load_lib_from(name: &str) -> Result<Lib, String> {
    // SAFETY: loading libibumad runs its (trivial) constructors only.
    let lib = unsafe { libloading::Library::new(name) }.map_err(|e| {
        format!(
            "cannot load {name} ({e}); install the Debian package {LIBIBUMAD_PACKAGE} \
             (apt-get install {LIBIBUMAD_PACKAGE})"
        )
    })?;
    // SAFETY: umad_get_issm_path has this signature in libibumad 3
    // (rdma-core umad.h); the pointer is kept while the library is.
    let issm: Option<FnGetIssmPath> =
        unsafe { symbol(&lib, LIBIBUMAD, b"umad_get_issm_path\0") }.ok();
    // SAFETY: each symbol has its field's C signature in libibumad 3
    // (rdma-core umad.h); the pointers are copied out while the library
    // stays loaded in `Lib`.
    let (init, l): (FnInit, Lib) = unsafe {
        (
            symbol(&lib, LIBIBUMAD, b"umad_init\0")?,
            symbols!(
                lib,
                LIBIBUMAD,
                "umad_",
                Lib {
                    get_cas_names,
                    get_ca,
                    release_ca,
                    get_port,
                    release_port,
                    open_port,
                    close_port,
                    register,
                    register_oui,
                    unregister,
                    send,
                    recv,
                    get_fd
                } with {
                    get_issm_path: issm
                }
            ),
        )
    };
    // SAFETY: umad_init takes no arguments; it is idempotent.
    let rc = unsafe { init() };
    if rc < 0 {
        return Err(format!("umad_init failed ({rc})"));
    }
    Ok(l)
}

pub(super) fn lib() -> Result<&'static Lib, TransportError> {
    LIB.get_or_init(load_lib)
        .as_ref()
        .map_err(|e| open_error(e))
}

/// True if libibumad can be loaded on this machine.
#[must_use]
pub fn is_available() -> bool {
    lib().is_ok()
}

/// `methods` (bit n = method n) as `0x01, 0x02` (`none` when empty).
pub(super) fn method_list(methods: u128) -> String {
    let list: Vec<String> = (0..128u32)
        .filter(|b| methods & (1u128 << b) != 0)
        .map(|b| format!("{b:#04x}"))
        .collect();
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.join(", ")
    }
}

pub(super) fn cstr_field(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One port of a CA as libibumad reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmadPort {
    /// Port number.
    pub port_num: u8,
    /// Base LID.
    pub lid: u16,
    /// LMC.
    pub lmc: u8,
    /// SM LID.
    pub sm_lid: u16,
    /// SM SL.
    pub sm_sl: u8,
    /// Port state (1 Down … 4 Active).
    pub state: u8,
    /// Physical state.
    pub phys_state: u8,
    /// Rate in Gb/s as sysfs reports it.
    pub rate: u32,
    /// CapabilityMask (host order).
    pub capability_mask: u32,
    /// Subnet prefix (host order).
    pub gid_prefix: u64,
    /// Port GUID (host order).
    pub port_guid: u64,
    /// Link layer ("InfiniBand", "Ethernet").
    pub link_layer: String,
    /// P_Key table.
    pub pkeys: Vec<u16>,
}

/// A channel adapter as libibumad reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmadCa {
    /// CA name (`mlx5_0`, or what umad2sim presents).
    pub name: String,
    /// Node type (1 CA, 2 switch, 3 router).
    pub node_type: u32,
    /// Node GUID (host order).
    pub node_guid: u64,
    /// System image GUID (host order).
    pub system_guid: u64,
    /// Firmware version.
    pub fw_ver: String,
    /// Ports (port 0 only for switches).
    pub ports: Vec<UmadPort>,
}

pub(super) fn c_name(name: &str) -> Result<CString, TransportError> {
    CString::new(name).map_err(|_| open_error(&format!("CA name {name:?} contains a NUL byte")))
}

pub(super) fn convert_port(p: &UmadPortRaw) -> UmadPort {
    let pkeys = if p.pkeys.is_null() {
        Vec::new()
    } else {
        // SAFETY: libibumad allocated `pkeys_size` entries at `pkeys`
        // and keeps them until umad_release_port/ca.
        unsafe { std::slice::from_raw_parts(p.pkeys, p.pkeys_size as usize) }
            .iter()
            .map(|k| u16::from_be(*k))
            .collect()
    };
    UmadPort {
        port_num: p.portnum as u8,
        lid: p.base_lid as u16,
        lmc: p.lmc as u8,
        sm_lid: p.sm_lid as u16,
        sm_sl: p.sm_sl as u8,
        state: p.state as u8,
        phys_state: p.phys_state as u8,
        rate: p.rate,
        capability_mask: u32::from_be(p.capmask),
        gid_prefix: u64::from_be(p.gid_prefix),
        port_guid: u64::from_be(p.port_guid),
        link_layer: cstr_field(&p.link_layer),
        pkeys,
    }
}

/// Lists the CAs libibumad sees, with their ports.
///
/// # Errors
/// libibumad missing, or the CA list cannot be read.
pub fn list_cas() -> Result<Vec<UmadCa>, TransportError> {
    let l = lib()?;
    let mut names = [[0 as c_char; UMAD_CA_NAME_LEN]; UMAD_MAX_CAS];
    // SAFETY: the array has UMAD_MAX_CAS entries of UMAD_CA_NAME_LEN.
    let n = unsafe { (l.get_cas_names)(names.as_mut_ptr(), UMAD_MAX_CAS as c_int) };
    if n < 0 {
        return Err(open_error(&format!("umad_get_cas_names failed ({n})")));
    }
    let mut out = Vec::new();
    for raw_name in names.iter().take(n as usize) {
        let name = cstr_field(raw_name);
        out.push(get_ca(&name)?);
    }
    Ok(out)
}

/// Reads one CA by name.
///
/// # Errors
/// libibumad missing, or no CA of that name.
pub fn get_ca(name: &str) -> Result<UmadCa, TransportError> {
    let l = lib()?;
    let cname = c_name(name)?;
    // SAFETY: UmadCaRaw is plain old data; all-zero is a valid value.
    let mut ca: UmadCaRaw = unsafe { std::mem::zeroed() };
    // SAFETY: cname is NUL-terminated; ca is a valid out-pointer.
    let rc = unsafe { (l.get_ca)(cname.as_ptr(), &mut ca) };
    if rc < 0 {
        return Err(open_error(&format!(
            "no InfiniBand CA named {name:?} (umad_get_ca: {rc})"
        )));
    }
    let ports = ca
        .ports
        .iter()
        .filter(|p| !p.is_null())
        // SAFETY: non-null entries point to ports owned by `ca`.
        .map(|p| convert_port(unsafe { &**p }))
        .collect();
    let out = UmadCa {
        name: cstr_field(&ca.ca_name),
        node_type: ca.node_type,
        node_guid: u64::from_be(ca.node_guid),
        system_guid: u64::from_be(ca.system_guid),
        fw_ver: cstr_field(&ca.fw_ver),
        ports,
    };
    // SAFETY: releases what umad_get_ca allocated.
    unsafe { (l.release_ca)(&mut ca) };
    Ok(out)
}

pub(super) fn get_port(ca: &str, port: u8) -> Result<UmadPort, TransportError> {
    let l = lib()?;
    let cname = c_name(ca)?;
    // SAFETY: plain old data.
    let mut p: UmadPortRaw = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers.
    let rc = unsafe { (l.get_port)(cname.as_ptr(), c_int::from(port), &mut p) };
    if rc < 0 {
        let known = get_ca(ca)
            .map(|c| {
                c.ports
                    .iter()
                    .map(|p| p.port_num.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        return Err(open_error(&format!(
            "port {port} does not exist on CA {ca:?} (ports: {})",
            if known.is_empty() {
                "none found".to_string()
            } else {
                known
            }
        )));
    }
    let out = convert_port(&p);
    // SAFETY: releases what umad_get_port allocated.
    unsafe { (l.release_port)(&mut p) };
    Ok(out)
}
