//! Device events through rdma-core's libibverbs, loaded at run time.
//!
//! libibumad reports no asynchronous events: port up / down, LID, P_Key,
//! GID and SM changes, client reregistration and fatal device errors come
//! only through a verbs device context's asynchronous event queue. This
//! module opens the verbs device behind a umad port (by its CA name) for
//! nothing but that queue, and reads it without blocking.
//!
//! As for libibumad, `cargo build` needs no system library:
//! `libibverbs.so.1` (Debian package `libibverbs1`) is opened with `dlopen`
//! the first time events are asked for, and the device's provider (rxe,
//! mlx5, ...: Debian package `ibverbs-providers`) is loaded by libibverbs
//! itself. Anything missing is an error string naming the package; the
//! umad transport then works without events.
//!
//! Also here: [`WakeSet`], the level-triggered epoll set through which one
//! descriptor reports both the umad fd and the async-event fd.
//!
//! Every `unsafe` of the verbs and epoll calls is in this file.
#![allow(unsafe_code)]

use super::dl::symbols;
use super::AsyncEvent;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The shared object loaded for device events.
pub const LIBIBVERBS: &str = "libibverbs.so.1";
/// The Debian package that provides [`LIBIBVERBS`].
pub const LIBIBVERBS_PACKAGE: &str = "libibverbs1";
/// The Debian package with libibverbs' device providers (rxe, mlx4, mlx5,
/// ...), without which libibverbs lists no device.
pub const PROVIDERS_PACKAGE: &str = "ibverbs-providers";

/// `enum ibv_event_type` values (rdma-core `infiniband/verbs.h`, checked
/// against libibverbs-dev 44.0).
mod ev_type {
    pub const DEVICE_FATAL: u32 = 8;
    pub const PORT_ACTIVE: u32 = 9;
    pub const PORT_ERR: u32 = 10;
    pub const LID_CHANGE: u32 = 11;
    pub const PKEY_CHANGE: u32 = 12;
    pub const SM_CHANGE: u32 = 13;
    pub const CLIENT_REREGISTER: u32 = 17;
    pub const GID_CHANGE: u32 = 18;
}

/// The start of `struct ibv_context`, as far as `async_fd`:
///
/// ```c
/// struct ibv_context {
///     struct ibv_device      *device;
///     struct ibv_context_ops  ops;      /* 32 function pointers */
///     int                     cmd_fd;
///     int                     async_fd;
///     ...
/// };
/// ```
///
/// Verified with libibverbs-dev 44.0 on x86_64 (`offsetof` in C):
/// `ops` at 8, `sizeof(struct ibv_context_ops)` 256, `cmd_fd` at 264,
/// `async_fd` at 268, `sizeof(struct ibv_context)` 328. This prefix is
/// part of libibverbs' ABI (`IBVERBS_1.1`); the test
/// `context_layout_matches_libibverbs` pins it. Only ever read through a
/// pointer libibverbs returned, never constructed.
#[repr(C)]
struct IbvContextHead {
    device: *mut c_void,
    ops: [*mut c_void; 32],
    cmd_fd: c_int,
    async_fd: c_int,
}

/// `union { struct ibv_cq *cq; struct ibv_qp *qp; struct ibv_srq *srq;
/// struct ibv_wq *wq; int port_num; }`.
#[repr(C)]
#[derive(Clone, Copy)]
union IbvEventElement {
    ptr: *mut c_void,
    port_num: c_int,
}

/// `struct ibv_async_event` (16 bytes on LP64: element at 0, event_type at 8).
#[repr(C)]
struct IbvAsyncEvent {
    element: IbvEventElement,
    event_type: u32,
}

type FnGetDeviceList = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
type FnFreeDeviceList = unsafe extern "C" fn(*mut *mut c_void);
type FnGetDeviceName = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type FnOpenDevice = unsafe extern "C" fn(*mut c_void) -> *mut IbvContextHead;
type FnCloseDevice = unsafe extern "C" fn(*mut IbvContextHead) -> c_int;
type FnGetAsyncEvent = unsafe extern "C" fn(*mut IbvContextHead, *mut IbvAsyncEvent) -> c_int;
type FnAckAsyncEvent = unsafe extern "C" fn(*mut IbvAsyncEvent);

/// The libibverbs entry points used here.
struct Lib {
    _lib: libloading::Library,
    get_device_list: FnGetDeviceList,
    free_device_list: FnFreeDeviceList,
    get_device_name: FnGetDeviceName,
    open_device: FnOpenDevice,
    close_device: FnCloseDevice,
    get_async_event: FnGetAsyncEvent,
    ack_async_event: FnAckAsyncEvent,
}

// SAFETY: plain function pointers into a library that stays loaded for the
// life of the process (it lives in a static); libibverbs' calls used here
// are thread-safe.
unsafe impl Send for Lib {}
// SAFETY: as for Send.
unsafe impl Sync for Lib {}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

fn load_lib_from(name: &str) -> Result<Lib, String> {
    // SAFETY: loading libibverbs runs its constructors, which only set up
    // its own globals (no device is touched before ibv_get_device_list).
    let lib = unsafe { libloading::Library::new(name) }.map_err(|e| {
        format!(
            "cannot load {name} ({e}); install the Debian package {LIBIBVERBS_PACKAGE} \
             (apt-get install {LIBIBVERBS_PACKAGE} {PROVIDERS_PACKAGE})"
        )
    })?;
    // SAFETY: each symbol has its field's C signature in libibverbs 1
    // (rdma-core verbs.h; the default symbol version IBVERBS_1.1); the
    // pointers are copied out while the library stays loaded in `Lib`.
    unsafe {
        Ok(symbols!(
            lib,
            name,
            "ibv_",
            Lib {
                get_device_list,
                free_device_list,
                get_device_name,
                open_device,
                close_device,
                get_async_event,
                ack_async_event
            }
        ))
    }
}

fn lib() -> Result<&'static Lib, String> {
    LIB.get_or_init(|| load_lib_from(LIBIBVERBS))
        .as_ref()
        .map_err(Clone::clone)
}

/// True if libibverbs can be loaded on this machine.
#[must_use]
pub fn is_available() -> bool {
    lib().is_ok()
}

/// The event a verbs async event of type `event_type` on port `port_num`
/// means for a transport bound to `our_port`: port events of other ports
/// and the QP / CQ / SRQ / WQ events (this context creates none of those)
/// mean nothing; a fatal device error concerns every port.
fn map_event(event_type: u32, port_num: c_int, our_port: u8) -> Option<AsyncEvent> {
    use ev_type as t;
    if event_type == t::DEVICE_FATAL {
        return Some(AsyncEvent::DeviceFatal);
    }
    let ev = match event_type {
        t::PORT_ACTIVE => AsyncEvent::PortActive,
        t::PORT_ERR => AsyncEvent::PortError,
        t::LID_CHANGE => AsyncEvent::LidChange,
        t::PKEY_CHANGE => AsyncEvent::PkeyChange,
        t::SM_CHANGE => AsyncEvent::SmChange,
        t::CLIENT_REREGISTER => AsyncEvent::ClientReregister,
        t::GID_CHANGE => AsyncEvent::GidChange,
        _ => return None,
    };
    (port_num == c_int::from(our_port)).then_some(ev)
}

/// A verbs device context opened only to read its asynchronous events for
/// one port, without blocking.
pub struct DeviceEvents {
    lib: &'static Lib,
    ctx: *mut IbvContextHead,
    async_fd: RawFd,
    port: u8,
    name: String,
}

// SAFETY: the context pointer is used only through `&mut self` (reading
// events) and in Drop; libibverbs allows a context to be used from any
// thread.
unsafe impl Send for DeviceEvents {}

impl std::fmt::Debug for DeviceEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceEvents")
            .field("device", &self.name)
            .field("port", &self.port)
            .field("async_fd", &self.async_fd)
            .finish_non_exhaustive()
    }
}

impl DeviceEvents {
    /// Opens the verbs device named `ca_name` (the name libibumad and sysfs
    /// use, e.g. `mlx5_0`, `rxe0`) for the events of port `port`, and puts
    /// its async-event descriptor in non-blocking mode.
    ///
    /// # Errors
    /// A sentence saying why not: libibverbs missing (naming its package),
    /// no verbs device of that name (provider missing, no
    /// `/dev/infiniband/uverbs*`), or the device cannot be opened.
    pub fn open(ca_name: &str, port: u8) -> Result<Self, String> {
        let l = lib()?;
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out-pointer; the list is freed below.
        let list = unsafe { (l.get_device_list)(&mut n) };
        if list.is_null() {
            // ENOSYS: the kernel has no verbs devices at all (no
            // ib_uverbs, or no RDMA device).
            return Err(format!(
                "no verbs device {ca_name:?}: ibv_get_device_list failed ({}); \
                 is ib_uverbs loaded?",
                std::io::Error::last_os_error()
            ));
        }
        let mut names = Vec::new();
        let mut found = std::ptr::null_mut();
        for i in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: the list holds `n` device pointers (NULL-terminated).
            let dev = unsafe { *list.add(i) };
            if dev.is_null() {
                break;
            }
            // SAFETY: `dev` is a device of the list; the name is a
            // NUL-terminated string owned by it.
            let name_ptr = unsafe { (l.get_device_name)(dev) };
            if name_ptr.is_null() {
                continue;
            }
            // SAFETY: non-null, NUL-terminated, alive while the list is.
            let name = unsafe { CStr::from_ptr(name_ptr) }
                .to_string_lossy()
                .into_owned();
            if name == ca_name {
                found = dev;
            }
            names.push(name);
        }
        let ctx = if found.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: `found` is a device of the list, which is still alive;
            // an opened context stays valid after the list is freed.
            unsafe { (l.open_device)(found) }
        };
        let open_err = std::io::Error::last_os_error();
        // SAFETY: `list` came from ibv_get_device_list and is freed once.
        unsafe { (l.free_device_list)(list) };
        if found.is_null() {
            return Err(format!(
                "libibverbs has no device named {ca_name:?} (it lists {}); the provider \
                 (Debian package {PROVIDERS_PACKAGE}) or /dev/infiniband/uverbs* may be missing",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
        if ctx.is_null() {
            return Err(format!("ibv_open_device({ca_name}) failed: {open_err}"));
        }
        // SAFETY: `ctx` is a live context returned by ibv_open_device; its
        // layout up to `async_fd` is `IbvContextHead` (see there).
        let async_fd = unsafe { (*ctx).async_fd };
        let this = Self {
            lib: l,
            ctx,
            async_fd,
            port,
            name: ca_name.to_string(),
        };
        set_nonblocking(async_fd)
            .map_err(|e| format!("cannot make {ca_name}'s async event fd non-blocking: {e}"))?;
        Ok(this)
    }

    /// The async-event descriptor (readable when an event is queued).
    #[must_use]
    pub fn fd(&self) -> RawFd {
        self.async_fd
    }

    /// The device name.
    #[must_use]
    pub fn device(&self) -> &str {
        &self.name
    }

    /// Reads (and acknowledges) queued events until one concerns this port;
    /// `Ok(None)` when none is left.
    ///
    /// # Errors
    /// The read failed other than for "nothing queued" (`EIO` once the
    /// device was disassociated, e.g. unplugged).
    pub fn next_event(&mut self) -> std::io::Result<Option<AsyncEvent>> {
        loop {
            let mut ev = IbvAsyncEvent {
                element: IbvEventElement {
                    ptr: std::ptr::null_mut(),
                },
                event_type: 0,
            };
            // SAFETY: `ctx` is open; `ev` is a valid out-pointer; the fd is
            // non-blocking, so this returns at once.
            let rc = unsafe { (self.lib.get_async_event)(self.ctx, &mut ev) };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => return Ok(None),
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                }
            }
            // SAFETY: for the port and device events this reads, libibverbs
            // filled the `port_num` member; for the others (which carry a
            // pointer) the value is not used beyond the comparison below.
            let port_num = unsafe { ev.element.port_num };
            let mapped = map_event(ev.event_type, port_num, self.port);
            // SAFETY: every event got must be acknowledged exactly once.
            unsafe { (self.lib.ack_async_event)(&mut ev) };
            if mapped.is_some() {
                return Ok(mapped);
            }
        }
    }
}

impl Drop for DeviceEvents {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from ibv_open_device and is closed once; every
        // event read was acknowledged.
        unsafe { (self.lib.close_device)(self.ctx) };
    }
}

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor we hold; F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above; F_SETFL takes an int.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A level-triggered epoll set: one descriptor that is readable while any
/// member is. An epoll descriptor is itself pollable, so a caller that
/// waits on one descriptor (the runtime's mio loop) can wait on several.
#[derive(Debug)]
pub struct WakeSet {
    epfd: OwnedFd,
}

impl WakeSet {
    /// An epoll set holding `fds`, each watched for input, level-triggered.
    ///
    /// # Errors
    /// `epoll_create1` or `epoll_ctl` failed (e.g. `EBADF` or `EPERM` for
    /// a descriptor epoll cannot watch, such as libumad2sim's fake ones).
    pub fn new(fds: &[RawFd]) -> std::io::Result<Self> {
        // SAFETY: no pointers; the result is checked.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let epfd = unsafe { OwnedFd::from_raw_fd(raw) };
        let set = Self { epfd };
        for &fd in fds {
            set.add(fd)?;
        }
        Ok(set)
    }

    fn add(&self, fd: RawFd) -> std::io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: `ev` is a valid epoll_event; the kernel copies it.
        let rc =
            unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `fd` (before it is closed elsewhere).
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: EPOLL_CTL_DEL ignores the event pointer (NULL allowed
        // since Linux 2.6.9); a descriptor not in the set is a harmless
        // ENOENT.
        unsafe {
            libc::epoll_ctl(
                self.epfd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// The epoll descriptor.
    #[must_use]
    pub fn fd(&self) -> RawFd {
        self.epfd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_layout_matches_libibverbs() {
        // Pinned against rdma-core 44.0's verbs.h (see IbvContextHead).
        if cfg!(target_pointer_width = "64") {
            assert_eq!(std::mem::offset_of!(IbvContextHead, ops), 8);
            assert_eq!(std::mem::offset_of!(IbvContextHead, cmd_fd), 264);
            assert_eq!(std::mem::offset_of!(IbvContextHead, async_fd), 268);
            assert_eq!(std::mem::size_of::<IbvAsyncEvent>(), 16);
            assert_eq!(std::mem::offset_of!(IbvAsyncEvent, event_type), 8);
        }
        assert_eq!(
            std::mem::offset_of!(IbvContextHead, async_fd),
            33 * std::mem::size_of::<*mut c_void>() + std::mem::size_of::<c_int>()
        );
    }

    #[test]
    fn a_missing_libibverbs_is_named_with_its_package() {
        let err = load_lib_from("libibverbs-not-here.so.1")
            .err()
            .unwrap_or_default();
        assert!(err.contains("libibverbs-not-here.so.1"), "{err}");
        assert!(
            err.contains("apt-get install libibverbs1 ibverbs-providers"),
            "{err}"
        );
    }

    #[test]
    fn events_map_by_type_and_port() {
        assert_eq!(map_event(9, 1, 1), Some(AsyncEvent::PortActive));
        assert_eq!(map_event(10, 1, 1), Some(AsyncEvent::PortError));
        assert_eq!(map_event(11, 1, 1), Some(AsyncEvent::LidChange));
        assert_eq!(map_event(12, 1, 1), Some(AsyncEvent::PkeyChange));
        assert_eq!(map_event(13, 1, 1), Some(AsyncEvent::SmChange));
        assert_eq!(map_event(17, 1, 1), Some(AsyncEvent::ClientReregister));
        assert_eq!(map_event(18, 1, 1), Some(AsyncEvent::GidChange));
        // Another port's events are not ours; a fatal device error is.
        assert_eq!(map_event(9, 2, 1), None);
        assert_eq!(map_event(18, 2, 1), None);
        assert_eq!(map_event(8, 0, 1), Some(AsyncEvent::DeviceFatal));
        assert_eq!(map_event(8, 2, 1), Some(AsyncEvent::DeviceFatal));
        // CQ / QP / SRQ / WQ events: nothing of ours.
        for t in [0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 16, 19] {
            assert_eq!(map_event(t, 1, 1), None, "type {t}");
        }
    }

    #[test]
    fn a_missing_device_is_a_reason_not_a_panic() {
        let Err(reason) = DeviceEvents::open("no_such_verbs_dev_xyz", 1) else {
            panic!("opened a device that does not exist");
        };
        assert!(
            reason.contains("no_such_verbs_dev_xyz") || reason.contains(LIBIBVERBS),
            "{reason}"
        );
    }

    #[test]
    fn a_wake_set_is_readable_while_a_member_is() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        let set = WakeSet::new(&[a.as_raw_fd()]).expect("epoll");
        let readable = |fd: RawFd| {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, no wait.
            unsafe { libc::poll(&mut p, 1, 0) == 1 }
        };
        assert!(!readable(set.fd()));
        std::io::Write::write_all(&mut b, b"x").expect("write");
        assert!(readable(set.fd()));
        // Level-triggered: still readable until the member is drained.
        assert!(readable(set.fd()));
        let mut buf = [0u8; 1];
        std::io::Read::read_exact(&mut &a, &mut buf).expect("read");
        assert!(!readable(set.fd()));
        set.remove(a.as_raw_fd());
        std::io::Write::write_all(&mut b, b"y").expect("write");
        assert!(!readable(set.fd()));
    }
}
