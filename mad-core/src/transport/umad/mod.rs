//! The umad transport: rdma-core's libibumad, loaded at run time.
//!
//! `cargo build` needs no system library: `libibumad.so.3` is opened with
//! `dlopen` the first time a umad transport is used, and a missing library is
//! a clear error naming the Debian package that provides it. Under
//! `LD_PRELOAD=.../libumad2sim.so` the same code path talks to ibsim, which is
//! how CI exercises the hardware path without hardware.
//!
//! # Semantics
//! - Kernel MAD agents are registered per (management class, class version)
//!   with `rmpp_version` 0: RMPP is done by madstack, never by the kernel.
//!   An agent for sending is registered lazily on the first send of a class;
//!   [`Transport::register_requests`] adds the method mask (and OUI) for
//!   receiving unsolicited requests.
//! - [`Transport::post`] writes a MAD that awaits no answer with
//!   `timeout_ms = 0`, and a request with the stack's wait for
//!   its answer (less a tenth, at most 50 ms). madstack does its own
//!   response tracking and retries, but the kernel's MAD layer passes a
//!   response on only if it matches a request still on its wait list
//!   (`ib_mad_complete_recv`: an unmatched response is dropped, except an
//!   RMPP-active one of a class using RMPP, which takes the "user RMPP"
//!   path). A request written with no timeout leaves that list at once, so
//!   its GetResp never arrives: seen against the real kernel (an RMPP Set's
//!   GetResp was lost). Each RMPP DATA segment is a request too: the
//!   receiver's ACKs complete some (the earliest-expiring first), the
//!   answer matches another; the agent layer holds the last segment longest
//!   for that. A limit of the kernel that remains: a one- or two-segment
//!   request whose every segment an ACK completes leaves nothing for a
//!   non-RMPP answer to match (an RMPP-active answer always arrives). The kernel
//!   must have let go of a request before the stack retries it with the
//!   same TID (ib_umad refuses a request whose TID a pending one has, and a
//!   response identical to one still in flight, with EINVAL): hence the
//!   shorter wait, and a refused write is tried again for up to 20 ms. A
//!   request whose answer never comes makes the kernel report `ETIMEDOUT`
//!   when its wait ends; such reports are counted in
//!   [`UmadTransport::failed_recv_status`] and otherwise ignored.
//!   A send completes with `Success` once the kernel accepted the write; a
//!   refused write is an error of `post_send` itself.
//! - TIDs: for every request written, the kernel replaces the upper 32 bits
//!   of the TID with its agent's `hi_tid`. This transport remembers the upper
//!   32 bits madstack wrote (by management class and lower 32 bits) and puts
//!   them back into the response, so the agent layer sees its own TIDs; the
//!   kernel's bits are never modified on the way out.
//! - libibumad reports no QP states: the QPs are the kernel's. `qp_state`
//!   is always RTS, and `modify_qp` / `recreate_queues` have nothing to do.
//!
//! # Device events
//! libibumad reports no asynchronous events either. [`UmadTransport::open`]
//! therefore also opens the verbs device of the same name through
//! libibverbs ([`super::verbs`], loaded at run time like libibumad) and
//! `poll_event` reads its asynchronous events without blocking:
//! `IBV_EVENT_PORT_ACTIVE`, `PORT_ERR`, `LID_CHANGE`, `PKEY_CHANGE`,
//! `GID_CHANGE`, `SM_CHANGE` and `CLIENT_REREGISTER` of this port, and
//! `DEVICE_FATAL` of the device. Before such an event is returned the
//! cached [`PortAttrs`] are re-read (so [`PortAttrs::gid`] is the port's
//! new GID after `GidChange`); after `DeviceFatal` every send and refresh
//! fails with [`TransportError::DeviceDead`].
//!
//! Removing the device (`rdma link del`, a driver unbound) kills the umad
//! port: its reads fail with EIO. `poll_recv` reports that as
//! [`TransportError::DeviceDead`] (the port layer's `DeviceFatal`), and the
//! transport is dead from then on. A provider that cannot disassociate
//! (rxe) makes the removal wait until the process closes the device:
//! dropping the transport does.
//!
//! When libibverbs, the provider or the verbs device is missing (as under
//! libumad2sim, which fakes only umad), the port works without events and
//! [`UmadTransport::no_events_reason`] says why; opening does not fail.
//!
//! # Waking up
//! With events, [`Transport::raw_fd`] is a level-triggered epoll descriptor
//! ([`super::verbs::WakeSet`]) holding the umad fd and the async-event fd:
//! it is readable while either is, so a loop that waits on `raw_fd` and
//! then drains `poll_recv` and `poll_event` (as the port layer's `poll`
//! does) wakes for both. Without events, or if epoll refuses the umad fd,
//! `raw_fd` is the umad fd itself, as before; events are then noticed
//! whenever the port is polled for another reason.
#![allow(unsafe_code)]

use super::verbs::{DeviceEvents, WakeSet};
use super::{
    Address, AsyncEvent, Grh, OutMad, PortAttrs, Posted, PostedAtOnce, Qp, QpState, Received,
    SendCompletion, Transport, TransportError,
};
use crate::wire::{Mad, MgmtClass};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_long};

mod ca;
#[cfg(test)]
mod tests;

use ca::{c_name, get_port, lib, method_list, open_error, Lib};
pub use ca::{get_ca, is_available, list_cas, UmadCa, UmadPort, LIBIBUMAD, LIBIBUMAD_PACKAGE};

const USER_MAD_HDR: usize = 64;
const MAD_LEN: usize = 256;
/// How often a write refused as a duplicate of one still in the kernel (a
/// request of the same TID still waiting, a response still in flight) is
/// tried again, 1 ms apart.
const BUSY_RETRIES: u32 = 20;
/// How many request TIDs are remembered for restoring their upper bits.
const TID_MEMORY: usize = 1 << 16;

/// One port opened through libibumad.
pub struct UmadTransport {
    lib: &'static Lib,
    portid: c_int,
    fd: c_int,
    attrs: PortAttrs,
    /// (class, class version) -> kernel agent id.
    agents: HashMap<(u8, u8), c_int>,
    /// (class, class version) -> methods asked for by `register_requests`.
    request_masks: HashMap<(u8, u8), u128>,
    /// kernel agent id -> QP it lives on.
    agent_qp: HashMap<c_int, Qp>,
    sent: PostedAtOnce,
    /// (class, low 32 TID bits) -> upper 32 bits madstack wrote.
    tid_hi: HashMap<(u8, u32), (u32, u64)>,
    /// Insertion order with each entry's generation: an entry is evicted
    /// only if it is still the one that was inserted (an answered TID whose
    /// low bits were reused must not evict the new, live entry).
    tid_order: VecDeque<((u8, u32), u64)>,
    tid_gen: u64,
    buf: Vec<u8>,
    /// MADs received with a non-zero umad status (kernel-reported failures).
    pub failed_recv_status: u64,
    /// Writes the kernel refused as duplicates of a MAD it still held, and
    /// that were written again.
    pub busy_writes: u64,
    /// The verbs device whose async events this port reports, if open.
    events: Option<DeviceEvents>,
    /// Why there are no device events (`events` is `None`).
    no_events: Option<String>,
    /// umad fd + async-event fd behind one descriptor, when both are there.
    wake: Option<WakeSet>,
    /// A `DeviceFatal` event was reported.
    dead: bool,
    /// The last link event passed on (or what the port state at open
    /// implies), for dropping repeats.
    last_link: Option<AsyncEvent>,
    /// The port's GID when last reported (at open or by a GID change).
    last_gid: [u8; 16],
    /// The issm device held open while this port claims IsSM
    /// ([`UmadTransport::set_issm`]).
    issm_fd: Option<c_int>,
    /// Device events dropped because they repeated what was already
    /// reported (a second PORT_ACTIVE for one link up, a GID change that
    /// leaves the GID as it was).
    pub duplicate_events: u64,
}

impl std::fmt::Debug for UmadTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UmadTransport")
            .field("portid", &self.portid)
            .field("attrs", &self.attrs)
            .field("events", &self.events)
            .field("no_events", &self.no_events)
            .finish_non_exhaustive()
    }
}

impl UmadTransport {
    /// Opens `port` of CA `ca` (`None`: the first CA libibumad lists; port 0
    /// picks the first active port, as libibumad does).
    ///
    /// # Errors
    /// libibumad missing, no such CA, no such port, or the umad device
    /// cannot be opened.
    pub fn open(ca: Option<&str>, port: u8) -> Result<Self, TransportError> {
        let l = lib()?;
        let ca_name = match ca {
            Some(n) => n.to_string(),
            None => {
                let cas = list_cas()?;
                match cas.first() {
                    Some(c) => c.name.clone(),
                    None => {
                        return Err(open_error("no InfiniBand CA found (libibumad lists none)"))
                    }
                }
            }
        };
        let ca_info = get_ca(&ca_name)?;
        let port_info = get_port(&ca_name, port)?;
        let cname = c_name(&ca_name)?;
        // SAFETY: NUL-terminated name.
        let portid = unsafe { (l.open_port)(cname.as_ptr(), c_int::from(port)) };
        if portid < 0 {
            return Err(open_error(&format!(
                "cannot open umad device of CA {ca_name:?} port {port} ({portid}); \
                 is ib_umad loaded and are you allowed to open /dev/infiniband/umad*?"
            )));
        }
        // SAFETY: portid is open.
        let fd = unsafe { (l.get_fd)(portid) };
        let attrs = port_attrs(
            ca_name.clone(),
            ca_info.node_guid,
            ca_info.node_type == 2,
            port_info,
        );
        let (events, no_events) = match DeviceEvents::open(&ca_name, attrs.port_num) {
            Ok(ev) => (Some(ev), None),
            Err(why) => (None, Some(why)),
        };
        // One descriptor for both, if epoll takes the umad fd (libumad2sim's
        // fake fds it refuses; there is no verbs device then anyway).
        let wake = events
            .as_ref()
            .and_then(|ev| WakeSet::new(&[fd, ev.fd()]).ok());
        let last_link = match attrs.state {
            4 => Some(AsyncEvent::PortActive),
            1 => Some(AsyncEvent::PortError),
            _ => None,
        };
        let last_gid = attrs.gid();
        Ok(Self {
            lib: l,
            portid,
            fd,
            attrs,
            agents: HashMap::new(),
            request_masks: HashMap::new(),
            agent_qp: HashMap::new(),
            sent: PostedAtOnce::default(),
            tid_hi: HashMap::new(),
            tid_order: VecDeque::new(),
            tid_gen: 0,
            buf: vec![0u8; USER_MAD_HDR + MAD_LEN],
            failed_recv_status: 0,
            busy_writes: 0,
            events,
            no_events,
            wake,
            dead: false,
            last_link,
            last_gid,
            issm_fd: None,
            duplicate_events: 0,
        })
    }

    /// Sets IsSM in the port's CapabilityMask, as a subnet manager does:
    /// opens the port's issm device (`umad_get_issm_path`, e.g.
    /// `/dev/infiniband/issm0`; under libumad2sim its stand-in, which
    /// sets the bit in ibsim). The bit is cleared when the device is
    /// closed: by [`UmadTransport::clear_issm`] or when the transport is
    /// dropped. Setting it twice does nothing more.
    ///
    /// # Errors
    /// libibumad has no `umad_get_issm_path`, no issm device for this
    /// port, or it cannot be opened (not allowed, or another process
    /// holds it: the kernel lets one opener at a time).
    pub fn set_issm(&mut self) -> Result<(), TransportError> {
        if self.issm_fd.is_some() {
            return Ok(());
        }
        let get = self.lib.get_issm_path.ok_or_else(|| {
            open_error("this libibumad has no umad_get_issm_path: cannot set IsSM")
        })?;
        let cname = c_name(&self.attrs.ca_name)?;
        let mut path = [0 as std::ffi::c_char; 256];
        // SAFETY: NUL-terminated name; `path` holds 256 bytes and is
        // NUL-terminated by libibumad on success.
        let rc = unsafe {
            get(
                cname.as_ptr(),
                c_int::from(self.attrs.port_num),
                path.as_mut_ptr(),
                256,
            )
        };
        if rc < 0 {
            return Err(open_error(&format!(
                "no issm device for CA {:?} port {} ({rc})",
                self.attrs.ca_name, self.attrs.port_num
            )));
        }
        // SAFETY: libibumad wrote a NUL-terminated path into `path`.
        let p = unsafe { std::ffi::CStr::from_ptr(path.as_ptr()) };
        // `open` (not open64, as std would call): libumad2sim replaces
        // exactly this symbol.
        // SAFETY: NUL-terminated path; plain flags.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(open_error(&format!(
                "cannot open {} to set IsSM: {e}{}",
                p.to_string_lossy(),
                if e.raw_os_error() == Some(libc::EBUSY) {
                    " (another subnet manager holds it)"
                } else {
                    ""
                }
            )));
        }
        self.issm_fd = Some(fd);
        Ok(())
    }

    /// Clears IsSM again (closes the issm device [`UmadTransport::set_issm`]
    /// opened); nothing when it is not set.
    pub fn clear_issm(&mut self) {
        if let Some(fd) = self.issm_fd.take() {
            // SAFETY: fd was opened by set_issm and is closed once.
            unsafe { libc::close(fd) };
        }
    }

    /// True while this port claims IsSM ([`UmadTransport::set_issm`]).
    #[must_use]
    pub fn is_sm(&self) -> bool {
        self.issm_fd.is_some()
    }

    /// Why this port reports no device events (libibverbs, its provider
    /// or the verbs device missing, or the event queue failed), or `None`
    /// when it does. Print it as "no device events: {reason}".
    #[must_use]
    pub fn no_events_reason(&self) -> Option<&str> {
        self.no_events.as_deref()
    }

    /// Stops reading device events, remembering why.
    fn drop_events(&mut self, why: String) {
        if let (Some(w), Some(ev)) = (&self.wake, &self.events) {
            w.remove(ev.fd());
        }
        self.events = None;
        self.no_events = Some(why);
    }

    /// ib_umad killed the port (`ib_umad_kill_port`: the device is being
    /// unregistered, e.g. `rdma link del`): every read fails with EIO and
    /// the fd polls as an error forever. The device is gone: stop waking
    /// for either fd and fail from now on with
    /// [`TransportError::DeviceDead`], so the port layer reports
    /// `DeviceFatal` and the owner closes the device (the kernel waits for
    /// that before `rdma link del` returns).
    fn removed(&mut self) -> TransportError {
        self.dead = true;
        self.drop_events(format!("{} was removed", self.attrs.ca_name));
        if let Some(w) = &self.wake {
            w.remove(self.fd);
        }
        self.dead_error()
    }

    fn dead_error(&self) -> TransportError {
        TransportError::DeviceDead(self.attrs.ca_name.clone())
    }

    /// The next event of the verbs device, with the attributes refreshed.
    fn next_device_event(&mut self) -> Option<AsyncEvent> {
        let ev = match self.events.as_mut()?.next_event() {
            Ok(ev) => ev?,
            Err(e) => {
                // EIO: the device was disassociated (unplugged, driver
                // unbound): as fatal as DEVICE_FATAL itself.
                let gone = e.raw_os_error() == Some(libc::EIO);
                let dev = self.attrs.ca_name.clone();
                self.drop_events(format!("reading {dev}'s async events failed: {e}"));
                if !gone {
                    return None;
                }
                AsyncEvent::DeviceFatal
            }
        };
        if ev == AsyncEvent::DeviceFatal {
            self.dead = true;
        } else {
            // The port layer refreshes too; doing it here keeps
            // `port_attrs` current for a caller without it. A failure
            // leaves the old attributes and the port layer's own refresh
            // reports it.
            let _ = self.refresh_port_attrs();
        }
        Some(ev)
    }

    /// True for an event that tells nothing new: soft-RoCE raises
    /// PORT_ACTIVE twice for one link up and GID_CHANGE several times for
    /// one new MAC (also before the GID has changed, and while the entry
    /// reads as empty). A link event equal to the last one passed on, or a
    /// GID change that leaves the port's GID as it was last reported or
    /// empty, is dropped (and counted), so every client hears each change
    /// once.
    fn repeats_what_is_known(&mut self, ev: AsyncEvent) -> bool {
        match ev {
            AsyncEvent::PortActive | AsyncEvent::PortError => {
                let repeat = self.last_link == Some(ev);
                self.last_link = Some(ev);
                repeat
            }
            AsyncEvent::GidChange => {
                let gid = self.attrs.gid();
                // Mid-change the entry reads as empty (its interface id
                // zero): the change is reported when the new GID is there.
                if gid[8..] == [0; 8] {
                    return true;
                }
                let repeat = self.last_gid == gid;
                self.last_gid = gid;
                repeat
            }
            _ => false,
        }
    }

    fn register_raw(
        &mut self,
        class: MgmtClass,
        version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<c_int, TransportError> {
        let mut mask = [0 as c_long; 16 / std::mem::size_of::<c_long>()];
        let bits_per = std::mem::size_of::<c_long>() * 8;
        for bit in 0..128usize {
            if methods & (1u128 << bit) != 0 {
                mask[bit / bits_per] |= (1 as c_long) << (bit % bits_per);
            }
        }
        let id = match oui {
            // SAFETY: mask has 128 bits; oui has 3 bytes.
            Some(mut o) => unsafe {
                (self.lib.register_oui)(
                    self.portid,
                    c_int::from(class.0),
                    0,
                    o.as_mut_ptr(),
                    mask.as_mut_ptr(),
                )
            },
            // SAFETY: mask has 128 bits.
            None => unsafe {
                (self.lib.register)(
                    self.portid,
                    c_int::from(class.0),
                    c_int::from(version),
                    0,
                    mask.as_mut_ptr(),
                )
            },
        };
        if id < 0 {
            let why = std::io::Error::last_os_error();
            let oui = oui.map_or(String::new(), |o| {
                format!(" OUI {:02x}:{:02x}:{:02x}", o[0], o[1], o[2])
            });
            return Err(TransportError::Open(format!(
                "the kernel refused to register class {:#04x} version {version}{oui} \
                 methods {} on {}:{} ({why}); another process (or a kernel agent) \
                 owns one of them",
                class.0,
                method_list(methods),
                self.attrs.ca_name,
                self.attrs.port_num,
            )));
        }
        let qp = if class.is_smp() { Qp::Qp0 } else { Qp::Qp1 };
        self.agent_qp.insert(id, qp);
        Ok(id)
    }

    fn agent_for(&mut self, class: MgmtClass, version: u8) -> Result<c_int, TransportError> {
        if let Some(id) = self.agents.get(&(class.0, version)) {
            return Ok(*id);
        }
        let id = self.register_raw(class, version, 0, None)?;
        self.agents.insert((class.0, version), id);
        Ok(id)
    }

    fn remember_tid(&mut self, class: u8, tid: u64) {
        let key = (class, tid as u32);
        self.tid_gen += 1;
        let gen = self.tid_gen;
        self.tid_hi.insert(key, ((tid >> 32) as u32, gen));
        self.tid_order.push_back((key, gen));
        while self.tid_order.len() > TID_MEMORY {
            if let Some((old, g)) = self.tid_order.pop_front() {
                if self.tid_hi.get(&old).is_some_and(|(_, cur)| *cur == g) {
                    self.tid_hi.remove(&old);
                }
            }
        }
    }
}

/// The attributes of port `p` of the CA `ca_name` (node GUID `node_guid`,
/// a switch if `is_switch`).
fn port_attrs(ca_name: String, node_guid: u64, is_switch: bool, p: UmadPort) -> PortAttrs {
    PortAttrs {
        ca_name,
        port_num: p.port_num,
        node_guid,
        port_guid: p.port_guid,
        gid_prefix: p.gid_prefix,
        lid: p.lid,
        lmc: p.lmc,
        sm_lid: p.sm_lid,
        sm_sl: p.sm_sl,
        state: p.state,
        phys_state: p.phys_state,
        capability_mask: p.capability_mask,
        pkeys: p.pkeys,
        is_switch,
    }
}

impl Transport for UmadTransport {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        let p = get_port(&self.attrs.ca_name, self.attrs.port_num)?;
        let (node_guid, is_switch) = (self.attrs.node_guid, self.attrs.is_switch);
        self.attrs = port_attrs(
            std::mem::take(&mut self.attrs.ca_name),
            node_guid,
            is_switch,
            p,
        );
        Ok(())
    }

    fn send_queue_depth(&self) -> usize {
        // The kernel's MAD QPs have 128 send WRs and queue the excess
        // themselves; anything posted is accepted.
        128
    }

    /// Writes one MAD; a request stays on the kernel's wait list a little
    /// less than `wait` (so that it has left before the stack posts the same
    /// TID again: ib_umad refuses a request whose TID a pending one has).
    fn post(&mut self, out: OutMad<'_>, dest: &Address, wait: std::time::Duration) -> Posted {
        if self.dead {
            return Err(self.dead_error());
        }
        let (qp, mad, class) = (out.qp(), out.bytes(), out.class());
        let view = Mad::new_unchecked(mad);
        let agent = self.agent_for(class, view.class_version())?;
        let view_is_response = view.is_response();
        if !view_is_response {
            self.remember_tid(class.0, view.tid());
        }
        let b = &mut self.buf;
        b.iter_mut().for_each(|x| *x = 0);
        // struct ib_user_mad: agent_id, status, timeout_ms, retries, length.
        b[0..4].copy_from_slice(&(agent as u32).to_ne_bytes());
        b[16..20].copy_from_slice(&(mad.len() as u32).to_ne_bytes());
        // ib_mad_addr at 20.
        let a = 20;
        b[a..a + 4].copy_from_slice(&dest.qpn.to_be_bytes());
        b[a + 4..a + 8].copy_from_slice(&dest.qkey.to_be_bytes());
        b[a + 8..a + 10].copy_from_slice(&dest.lid.to_be_bytes());
        b[a + 10] = dest.sl;
        b[a + 11] = dest.path_bits;
        if let Some(g) = &dest.grh {
            b[a + 12] = 1;
            b[a + 13] = g.sgid_index;
            b[a + 14] = g.hop_limit;
            b[a + 15] = g.traffic_class;
            b[a + 16..a + 32].copy_from_slice(&g.gid);
            b[a + 32..a + 36].copy_from_slice(&g.flow_label.to_be_bytes());
        }
        b[a + 36..a + 38].copy_from_slice(&dest.pkey_index.to_ne_bytes());
        b[USER_MAD_HDR..USER_MAD_HDR + mad.len()].copy_from_slice(mad);
        let early = (wait / 10).min(std::time::Duration::from_millis(50));
        let wait_ms = c_int::try_from(wait.saturating_sub(early).as_millis()).unwrap_or(c_int::MAX);
        let mut attempts = 0;
        loop {
            // SAFETY: buf holds the 64-byte header plus `mad.len()` bytes.
            let rc = unsafe {
                (self.lib.send)(
                    self.portid,
                    agent,
                    self.buf.as_mut_ptr().cast(),
                    mad.len() as c_int,
                    wait_ms,
                    0,
                )
            };
            if rc >= 0 {
                break;
            }
            // libibumad returns -EIO for any failed write(); errno says
            // why. ib_umad refuses (EINVAL) a request whose TID and class a
            // pending request of this fd has (a retry racing the kernel's
            // end of the first one's wait), and a response whose TID, class
            // and destination match one still in flight (a reply right
            // behind our own final RMPP ACK), until that one's send
            // completes, which takes the kernel a moment: try again.
            let errno = std::io::Error::last_os_error().raw_os_error();
            if errno == Some(libc::EINVAL) && attempts < BUSY_RETRIES {
                attempts += 1;
                self.busy_writes += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let source = match errno {
                Some(e) if e != 0 => std::io::Error::from_raw_os_error(e),
                _ => std::io::Error::from_raw_os_error(-rc),
            };
            return Err(TransportError::Io {
                context: format!(
                    "umad_send on {}:{}",
                    self.attrs.ca_name, self.attrs.port_num
                ),
                source,
            });
        }
        Ok(self.sent.succeed(qp))
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        Ok(self.sent.drain(out))
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        loop {
            let mut len: c_int = MAD_LEN as c_int;
            self.buf.iter_mut().for_each(|x| *x = 0);
            // SAFETY: buf holds header + 256 bytes; len says 256.
            let rc =
                unsafe { (self.lib.recv)(self.portid, self.buf.as_mut_ptr().cast(), &mut len, 0) };
            if rc < 0 {
                let errno = -rc;
                if errno == libc::ETIMEDOUT || errno == libc::EAGAIN {
                    return Ok(None);
                }
                if errno == libc::EIO {
                    return Err(self.removed());
                }
                return Err(TransportError::Io {
                    context: format!(
                        "umad_recv on {}:{}",
                        self.attrs.ca_name, self.attrs.port_num
                    ),
                    source: std::io::Error::from_raw_os_error(errno),
                });
            }
            let b = &self.buf;
            let status = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
            if status != 0 {
                // A send the kernel gave up on; madstack never asks the
                // kernel for timeouts, so count it and go on.
                self.failed_recv_status += 1;
                continue;
            }
            let qp = self.agent_qp.get(&rc).copied().unwrap_or(Qp::Qp1);
            let a = 20;
            let grh = if b[a + 12] != 0 {
                let mut gid = [0u8; 16];
                gid.copy_from_slice(&b[a + 16..a + 32]);
                Some(Grh {
                    gid,
                    sgid_index: b[a + 13],
                    flow_label: u32::from_be_bytes([b[a + 32], b[a + 33], b[a + 34], b[a + 35]]),
                    hop_limit: b[a + 14],
                    traffic_class: b[a + 15],
                })
            } else {
                None
            };
            let src = Address {
                qpn: u32::from_be_bytes([b[a], b[a + 1], b[a + 2], b[a + 3]]),
                qkey: u32::from_be_bytes([b[a + 4], b[a + 5], b[a + 6], b[a + 7]]),
                lid: u16::from_be_bytes([b[a + 8], b[a + 9]]),
                sl: b[a + 10],
                path_bits: b[a + 11],
                pkey_index: u16::from_ne_bytes([b[a + 36], b[a + 37]]),
                grh,
            };
            let n = (len.max(0) as usize).min(MAD_LEN);
            let mut mad = crate::MadBuf::from_slice(&b[USER_MAD_HDR..USER_MAD_HDR + n]);
            if let Ok(view) = Mad::new_checked(&mad[..]) {
                if view.is_response() {
                    let tid = view.tid();
                    let key = (view.mgmt_class().0, tid as u32);
                    // Looked up, not removed: one request can have many
                    // responses (an RMPP sender gets an ACK per window,
                    // then the answer), all with the kernel's upper bits.
                    // Entries leave in insertion order (TID_MEMORY).
                    if let Some((hi, _)) = self.tid_hi.get(&key) {
                        let restored = (u64::from(*hi) << 32) | (tid & 0xFFFF_FFFF);
                        Mad::new_unchecked(&mut mad[..]).set_tid(restored);
                    }
                }
            }
            return Ok(Some(Received { qp, src, mad }));
        }
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        loop {
            let ev = self.next_device_event()?;
            if self.repeats_what_is_known(ev) {
                self.duplicate_events += 1;
                continue;
            }
            return Some(ev);
        }
    }

    fn qp_state(&self, _qp: Qp) -> QpState {
        QpState::Rts
    }

    fn modify_qp(&mut self, _qp: Qp, _to: QpState) -> Result<(), TransportError> {
        Ok(())
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        Ok(())
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        if self.dead && self.wake.is_none() {
            // A removed device's umad fd is readable (POLLERR) for ever.
            return None;
        }
        if let Some(w) = &self.wake {
            return Some(w.fd());
        }
        (self.fd >= 0).then_some(self.fd)
    }

    /// Registers a kernel agent that receives the unsolicited requests
    /// asked for. RMPP stays off in
    /// the kernel (rmpp_version 0). Masks accumulate: the kernel agent of
    /// that class and version is replaced by one owning the union of every
    /// mask asked for so far (the old one is unregistered first, since the
    /// kernel refuses overlapping methods even within one process).
    fn register_requests(
        &mut self,
        class: MgmtClass,
        version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        let key = (class.0, version);
        let wanted = self.request_masks.get(&key).copied().unwrap_or(0) | methods;
        if let Some(old) = self.agents.remove(&key) {
            // SAFETY: `old` is an agent id this port registered.
            unsafe { (self.lib.unregister)(self.portid, old) };
            self.agent_qp.remove(&old);
        }
        let id = match self.register_raw(class, version, wanted, oui) {
            Ok(id) => id,
            Err(e) => {
                // Put back what was there, so earlier agents keep working.
                let before = self.request_masks.get(&key).copied().unwrap_or(0);
                if let Ok(id) = self.register_raw(class, version, before, oui) {
                    self.agents.insert(key, id);
                }
                return Err(e);
            }
        };
        self.agents.insert(key, id);
        self.request_masks.insert(key, wanted);
        Ok(())
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        self.clear_issm();
        // The epoll set and the verbs context close with their fields.
        for id in self.agent_qp.keys() {
            // SAFETY: ids registered on this open port.
            unsafe { (self.lib.unregister)(self.portid, *id) };
        }
        // SAFETY: portid was opened by umad_open_port.
        unsafe { (self.lib.close_port)(self.portid) };
    }
}
