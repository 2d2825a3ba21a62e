//! Serving the fabric to other processes in ibsim's own socket protocol
//! (`mad_core::transport::ibsim::proto`), so that madstack's ibsim
//! transport, libumad2sim (`LD_PRELOAD=libumad2sim.so` under
//! infiniband-diags or OpenSM) and anything else that speaks to ibsim can
//! attach to a [`Fabric`] — any number of stacks, in this process and in
//! others.
//!
//! [`IbSimServer::bind`] takes the names ibsim takes (abstract Unix
//! datagram sockets `@NAME:ctl` and `@NAME:out0` … `@NAME:out9`);
//! [`IbSimServer::spawn`] serves them on a thread until the handle is
//! dropped.
//!
//! # As ibsim 0.10 does
//! - A client attaches (`CONNECT`) at a node named by its id in the
//!   topology or its NodeDescription, at port 0 of a switch or the first
//!   port of a CA; at most 10 clients; one SM client (`issm`) per node.
//! - Control requests: `GET_PORT`, `GET_VENDOR`, `GET_GID`, `GET_GUID`,
//!   `GET_NODEINFO`, `GET_PORTINFO` (by port number, 0: the attached one),
//!   `SET_ISSM` (sets PortInfo IsSM), `GET_PKEYS`, `DISCONNECT`; an
//!   unknown type is answered `ERROR`.
//! - Bits 48–63 of the TID of every request a client sends are replaced
//!   by its client number; responses go back to the client those bits
//!   name. Requests to QP0 / QP1 of a port go to its SM client.
//!
//! # Differences
//! - Clients attached at the same port share one endpoint of the fabric;
//!   a port already used by an in-process endpoint (SM-lite and the SA of
//!   a [`crate::Subnet`]) cannot be attached: a client naming no node
//!   goes to [`ServeConfig::default_at`] (the subnet's first free CA port)
//!   rather than to the first node.
//! - A MAD the fabric drops is not returned with status 110; a send the
//!   endpoint refuses (a malformed directed route, say) is.
//! - Clients' own QP numbers (`qp` > 1) are not served.
//! - RMPP: a client that does none (libibumad's under libumad2sim, which
//!   leave it to a kernel) gets it done by the server: its Active requests
//!   are made single segments, the segments sent to it are acknowledged on
//!   its behalf and it gets the first of them; every client gets a Last
//!   segment at the length it uses, not padded to 256 bytes, as OpenSM's
//!   answers reach libumad2sim clients (`rmpp`).
//! - Virtual time follows the wall clock while serving
//!   ([`ServeConfig::follow_wall_clock`]), so link delays and SM-lite's
//!   timers run in real time for the clients.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::proto::{
    CtlType, SimClientInfo, SimCtl, SimRequest, CTL_DATA_LEN, MAX_CLIENTS, SIM_MAGIC,
    STATUS_UNDELIVERABLE,
};
use mad_core::transport::{Address, Qp, Transport, GSI_QKEY, PERMISSIVE_LID};
use mad_core::wire::{Mad, MgmtClass, Repr};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::fabric::{Fabric, NodeSel};

mod rmpp;
use crate::topology::NodeKind;
use crate::SimPort;
use rmpp::{Pending, Rmpp};

/// How an [`IbSimServer`] serves.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Socket base name (ibsim's `IBSIM_SOCKNAME`).
    pub name: String,
    /// Where a client naming no node attaches (node, port); `None`: the
    /// first node's first end port, as ibsim.
    pub default_at: Option<(usize, u8)>,
    /// Move the fabric's virtual time on with the wall clock.
    pub follow_wall_clock: bool,
}

impl ServeConfig {
    /// Serving under `name`, defaults otherwise.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            default_at: None,
            follow_wall_clock: true,
        }
    }
}

/// What the server did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServeStats {
    /// Clients attached so far.
    pub connects: u64,
    /// Attaches refused.
    pub refused: u64,
    /// Control requests answered.
    pub ctl: u64,
    /// MADs clients sent into the fabric.
    pub to_fabric: u64,
    /// MADs handed to clients.
    pub to_clients: u64,
    /// MADs returned undeliverable (status 110).
    pub undeliverable: u64,
    /// MADs for a port with no client to take them.
    pub unclaimed: u64,
    /// RMPP segments acknowledged on behalf of clients that do no RMPP.
    pub rmpp_acked: u64,
}

struct Client {
    node: usize,
    port: u8,
    issm: bool,
    rmpp: Rmpp,
}

/// The endpoint the clients at one port share.
struct Mux {
    ep: SimPort,
    fd: Option<RawFd>,
}

/// An ibsim-protocol server over a fabric; see the [module
/// documentation](self).
pub struct IbSimServer {
    fabric: Fabric,
    cfg: ServeConfig,
    ctl: UnixDatagram,
    outs: Vec<UnixDatagram>,
    clients: Vec<Option<Client>>,
    muxes: HashMap<(usize, u8), Mux>,
    next_token: usize,
    stats: ServeStats,
    poll: Poll,
    last_tick: Instant,
    /// Segments handed to clients not yet known to do RMPP.
    pending: Vec<Pending>,
    /// Transfers the server runs for clients that lack RMPP, by client
    /// and TID, until their Last segment: aborted if the client goes.
    open: HashMap<(usize, u64), Pending>,
}

impl std::fmt::Debug for IbSimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IbSimServer")
            .field("name", &self.cfg.name)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// ibsim's abstract socket name: the C string with its terminating NUL.
fn abstract_addr(name: &str) -> io::Result<UnixAddr> {
    let mut b = name.as_bytes().to_vec();
    b.push(0);
    UnixAddr::from_abstract_name(&b)
}

const CTL: Token = Token(0);
/// Tokens 1..=10: the clients' data sockets; muxes from here up.
const FIRST_MUX_TOKEN: usize = 100;

impl IbSimServer {
    /// Binds `@NAME:ctl` and `@NAME:out0..9`.
    ///
    /// # Errors
    /// A socket cannot be bound (another ibsim or server uses the name).
    pub fn bind(fabric: &Fabric, cfg: ServeConfig) -> io::Result<Self> {
        let ctl = UnixDatagram::bind_addr(&abstract_addr(&format!("{}:ctl", cfg.name))?)?;
        ctl.set_nonblocking(true)?;
        let mut outs = Vec::new();
        for i in 0..MAX_CLIENTS {
            let s = UnixDatagram::bind_addr(&abstract_addr(&format!("{}:out{i}", cfg.name))?)?;
            s.set_nonblocking(true)?;
            outs.push(s);
        }
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut SourceFd(&ctl.as_raw_fd()), CTL, Interest::READABLE)?;
        for (i, s) in outs.iter().enumerate() {
            poll.registry().register(
                &mut SourceFd(&s.as_raw_fd()),
                Token(i + 1),
                Interest::READABLE,
            )?;
        }
        Ok(Self {
            fabric: fabric.clone(),
            cfg,
            ctl,
            outs,
            clients: (0..MAX_CLIENTS).map(|_| None).collect(),
            muxes: HashMap::new(),
            next_token: FIRST_MUX_TOKEN,
            stats: ServeStats::default(),
            poll,
            last_tick: Instant::now(),
            pending: Vec::new(),
            open: HashMap::new(),
        })
    }

    /// What the server did so far.
    #[must_use]
    pub fn stats(&self) -> ServeStats {
        self.stats
    }

    /// Clients attached now.
    #[must_use]
    pub fn client_count(&self) -> usize {
        self.clients.iter().flatten().count()
    }

    /// Waits up to `timeout` for something to do and does it.
    ///
    /// # Errors
    /// The poll itself failed.
    pub fn serve_once(&mut self, timeout: Duration) -> io::Result<()> {
        let mut events = Events::with_capacity(32);
        match self.poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if self.cfg.follow_wall_clock {
            let now = Instant::now();
            let d = now.saturating_duration_since(self.last_tick);
            self.last_tick = now;
            if !d.is_zero() {
                self.fabric.advance(d);
            }
        }
        // Edge-triggered: drain everything, whatever woke us.
        self.drain_ctl();
        for i in 0..self.outs.len() {
            self.drain_client(i);
        }
        self.drain_muxes();
        self.settle_pending(Instant::now());
        Ok(())
    }

    /// Serves on a thread until the handle is dropped (or stopped).
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn spawn(mut self) -> io::Result<ServerHandle> {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mad-sim-serve-{}", self.cfg.name))
            .spawn(move || {
                while !s2.load(Ordering::SeqCst) {
                    if self.serve_once(Duration::from_millis(20)).is_err() {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                self.stats
            })?;
        Ok(ServerHandle {
            stop,
            thread: Some(thread),
        })
    }

    fn drain_ctl(&mut self) {
        let mut buf = [0u8; 256];
        loop {
            let (n, from) = match self.ctl.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            let Some(mut ctl) = SimCtl::decode(&buf[..n]) else {
                continue;
            };
            if ctl.magic != SIM_MAGIC {
                continue;
            }
            self.stats.ctl += 1;
            if !self.control(&mut ctl) {
                ctl.ctl_type = CtlType::Error as u32;
            }
            let _ = self.ctl.send_to_addr(&ctl.encode(), &from);
        }
    }

    /// Answers one control request in place; false: refuse it.
    fn control(&mut self, ctl: &mut SimCtl) -> bool {
        let t = ctl.ctl_type;
        if t == CtlType::Connect as u32 {
            return self.connect(ctl);
        }
        let Some(i) = usize::try_from(ctl.client_id)
            .ok()
            .filter(|i| *i < self.clients.len())
        else {
            return false;
        };
        if t == CtlType::Disconnect as u32 {
            self.disconnect(i);
            return true;
        }
        let Some(c) = &self.clients[i] else {
            return false;
        };
        let (node, port) = (c.node, c.port);
        let mut d = [0u8; CTL_DATA_LEN];
        let f = &self.fabric;
        match t {
            x if x == CtlType::GetPort as u32 => {
                let Some(pi) = f.port_info(node, port) else {
                    return false;
                };
                d[0..2].copy_from_slice(&pi.lid.to_ne_bytes());
                d[2] = pi.port_state.0;
            }
            x if x == CtlType::GetVendor as u32 => {
                let Some(ni) = f.node_info(node) else {
                    return false;
                };
                d[0..4].copy_from_slice(&ni.vendor_id.to_ne_bytes());
                d[4..8].copy_from_slice(&u32::from(ni.device_id).to_ne_bytes());
                d[8..12].copy_from_slice(&ni.revision.to_ne_bytes());
                d[16..24].copy_from_slice(&1u64.to_ne_bytes());
            }
            x if x == CtlType::GetGid as u32 => {
                let (Some(pi), Some(ni)) = (f.port_info(node, port), f.node_info(node)) else {
                    return false;
                };
                d[0..8].copy_from_slice(&pi.gid_prefix.to_be_bytes());
                d[8..16].copy_from_slice(&ni.node_guid.to_ne_bytes());
            }
            x if x == CtlType::GetGuid as u32 => {
                let Some(ni) = f.node_info(node) else {
                    return false;
                };
                d[0..8].copy_from_slice(&ni.node_guid.to_ne_bytes());
            }
            x if x == CtlType::GetNodeInfo as u32 => {
                let Some(ni) = f.node_info(node) else {
                    return false;
                };
                if ni.emit(&mut d).is_err() {
                    return false;
                }
            }
            x if x == CtlType::GetPortInfo as u32 => {
                let nports = f.node(node).map_or(0, |n| n.num_ports);
                let want = ctl.data[0];
                let p = if want == 0 || want > nports {
                    port
                } else {
                    want
                };
                let Some(mut pi) = f.port_info(node, p) else {
                    return false;
                };
                if f.node(node).is_some_and(|n| n.kind == NodeKind::Switch) && p == 0 {
                    pi.local_port_num = 0;
                }
                if pi.emit(&mut d).is_err() {
                    return false;
                }
            }
            x if x == CtlType::SetIsSm as u32 => {
                let on =
                    i32::from_ne_bytes([ctl.data[0], ctl.data[1], ctl.data[2], ctl.data[3]]) != 0;
                if let Some(c) = self.clients[i].as_mut() {
                    c.issm = on;
                }
                if let Some(m) = self.muxes.get_mut(&(node, port)) {
                    m.ep.set_is_sm(on);
                }
                d = ctl.data;
            }
            x if x == CtlType::GetPkeys as u32 => {
                let pk = f.pkeys(node, port).unwrap_or_default();
                for (k, v) in pk.iter().take(CTL_DATA_LEN / 2).enumerate() {
                    d[2 * k..2 * k + 2].copy_from_slice(&v.to_be_bytes());
                }
            }
            _ => return false,
        }
        ctl.data = d;
        true
    }

    fn resolve(&self, name: &str) -> Option<(usize, u8)> {
        if name.is_empty() {
            return self.cfg.default_at.or_else(|| {
                let n = self.fabric.node(0)?;
                Some((0, u8::from(n.kind != NodeKind::Switch)))
            });
        }
        let n = self.fabric.find(NodeSel::Id(name.to_owned())).or_else(|| {
            self.fabric
                .nodes()
                .into_iter()
                .find(|n| n.description == name)
                .map(|n| n.index)
        })?;
        let s = self.fabric.node(n)?;
        Some((n, u8::from(s.kind != NodeKind::Switch)))
    }

    fn connect(&mut self, ctl: &mut SimCtl) -> bool {
        let Some(info) = SimClientInfo::decode(&ctl.data) else {
            return false;
        };
        let ok = self.try_connect(&info);
        match ok {
            Some((i, node_id)) => {
                let reply = SimClientInfo {
                    id: i as u32,
                    node: node_id,
                    ..info
                };
                let mut d = [0u8; CTL_DATA_LEN];
                d[..SimClientInfo::LEN].copy_from_slice(&reply.encode());
                ctl.data = d;
                self.stats.connects += 1;
                true
            }
            None => {
                self.stats.refused += 1;
                false
            }
        }
    }

    fn try_connect(&mut self, info: &SimClientInfo) -> Option<(usize, String)> {
        let i = self.clients.iter().position(Option::is_none)?;
        let (node, port) = self.resolve(&info.node)?;
        let issm = info.issm != 0;
        if issm
            && self
                .clients
                .iter()
                .flatten()
                .any(|c| c.node == node && c.issm)
        {
            return None;
        }
        if !self.muxes.contains_key(&(node, port)) {
            let ep = self.fabric.attach(node, port).ok()?;
            let fd = ep.raw_fd();
            let token = self.next_token;
            self.next_token += 1;
            if let Some(fd) = fd {
                let _ = self.poll.registry().register(
                    &mut SourceFd(&fd),
                    Token(token),
                    Interest::READABLE,
                );
            }
            self.muxes.insert((node, port), Mux { ep, fd });
        }
        let data = abstract_addr(&format!("{}:in{}", self.cfg.name, info.id)).ok()?;
        if self.outs[i].connect_addr(&data).is_err() {
            self.release_mux_if_unused(node, port);
            return None;
        }
        if issm {
            if let Some(m) = self.muxes.get_mut(&(node, port)) {
                m.ep.set_is_sm(true);
            }
        }
        self.clients[i] = Some(Client {
            node,
            port,
            issm,
            rmpp: Rmpp::Unknown,
        });
        Some((i, self.fabric.node(node)?.id))
    }

    fn disconnect(&mut self, i: usize) {
        // Its segments still waiting are acknowledged, so that their
        // senders do not send them again to whoever attaches next.
        let (gone, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.client == i);
        self.pending = rest;
        let open: Vec<(usize, u64)> = self.open.keys().filter(|k| k.0 == i).copied().collect();
        let open = open.into_iter().filter_map(|k| self.open.remove(&k));
        for p in gone.into_iter().chain(open.collect::<Vec<_>>()) {
            self.ack_for(p.port, &p.abort, &p.to);
        }
        if let Some(c) = self.clients.get_mut(i).and_then(Option::take) {
            if c.issm {
                if let Some(m) = self.muxes.get_mut(&(c.node, c.port)) {
                    m.ep.set_is_sm(false);
                }
            }
            self.release_mux_if_unused(c.node, c.port);
        }
    }

    fn release_mux_if_unused(&mut self, node: usize, port: u8) {
        let used = self
            .clients
            .iter()
            .flatten()
            .any(|c| c.node == node && c.port == port);
        if used {
            return;
        }
        if let Some(m) = self.muxes.remove(&(node, port)) {
            if let Some(fd) = m.fd {
                let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
            }
        }
    }

    /// MADs client `i` sent.
    fn drain_client(&mut self, i: usize) {
        let mut buf = [0u8; 512];
        loop {
            let n = match self.outs[i].recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            let Some(req) = SimRequest::decode(&buf[..n]) else {
                continue;
            };
            let Some(c) = &self.clients[i] else {
                continue;
            };
            let key = (c.node, c.port);
            let mut mad = req.mad_bytes().to_vec();
            if mad.len() < 24 {
                continue;
            }
            let mut head = Mad::new_unchecked(&mut mad[..]);
            if !head.response_bit() {
                // ibsim: the client number in TID bits 48-63.
                let t = (head.tid() & 0x0000_FFFF_FFFF_FFFF) | ((i as u64) << 48);
                head.set_tid(t);
            }
            if let Some(speaks) = rmpp::active(&mad).map(|v| rmpp::well_formed(&v)) {
                if let Some(c) = self.clients[i].as_mut() {
                    c.rmpp = if speaks { Rmpp::Speaks } else { Rmpp::Lacks };
                }
                if !speaks {
                    rmpp::as_single_segment(&mut mad);
                }
            }
            let qp = if Mad::new_unchecked(&mad[..]).mgmt_class().is_smp() {
                Qp::Qp0
            } else {
                Qp::Qp1
            };
            let dest = Address {
                lid: req.dlid,
                qpn: req.dqp,
                qkey: GSI_QKEY,
                ..Address::default()
            };
            let Some(m) = self.muxes.get_mut(&key) else {
                continue;
            };
            match m.ep.post_send(qp, &mad, &dest) {
                Ok(_) => self.stats.to_fabric += 1,
                Err(_) => {
                    let mut back = req.clone();
                    back.status = STATUS_UNDELIVERABLE;
                    let _ = self.outs[i].send(&back.encode());
                    self.stats.undeliverable += 1;
                }
            }
        }
    }

    /// MADs the fabric delivered at the clients' ports.
    fn drain_muxes(&mut self) {
        let keys: Vec<(usize, u8)> = self.muxes.keys().copied().collect();
        let mut done = Vec::new();
        for key in keys {
            let mut rx = Vec::new();
            if let Some(m) = self.muxes.get_mut(&key) {
                let _ = m.ep.poll_send_completions(&mut done);
                done.clear();
                while let Ok(Some(r)) = m.ep.poll_recv() {
                    rx.push(r);
                }
                while m.ep.poll_event().is_some() {}
            }
            let own_lid = self.fabric.port_info(key.0, key.1).map_or(0, |p| p.lid);
            for r in rx {
                self.hand_to_client(key, own_lid, &r);
            }
        }
    }

    fn hand_to_client(
        &mut self,
        key: (usize, u8),
        own_lid: u16,
        r: &mad_core::transport::Received,
    ) {
        let head = Mad::new_unchecked(&r.mad[..]);
        // Shorter than the first header word (up to the method): nothing
        // to route.
        if r.mad.len() < 4 {
            return;
        }
        let target = if head.response_bit() {
            // A TID not wholly there reads as 0 (client 0).
            let i = (head.tid() >> 48) as usize;
            self.clients
                .get(i)
                .and_then(Option::as_ref)
                .filter(|c| (c.node, c.port) == key)
                .map(|_| i)
        } else {
            self.clients.iter().position(|c| {
                c.as_ref()
                    .is_some_and(|c| (c.node, c.port) == key && c.issm)
            })
        };
        let Some(i) = target else {
            // A segment of a transfer whose client went away: ended here.
            if let Some(v) = rmpp::active(&r.mad) {
                if v.rmpp_type() == mad_core::wire::rmpp::RmppType::DATA {
                    let to = Address {
                        lid: r.src.lid,
                        qpn: r.src.qpn,
                        qkey: GSI_QKEY,
                        ..Address::default()
                    };
                    self.ack_for(key, &rmpp::abort(&r.mad), &to);
                }
            }
            self.stats.unclaimed += 1;
            return;
        };
        let mut len = r.mad.len();
        if let Some(v) = rmpp::active(&r.mad) {
            let kind = self.clients[i].as_ref().map_or(Rmpp::Unknown, |c| c.rmpp);
            if v.rmpp_type() != mad_core::wire::rmpp::RmppType::DATA {
                if kind == Rmpp::Lacks {
                    // The ACK / STOP / ABORT of a transfer the server runs
                    // for this client.
                    return;
                }
            } else {
                len = v.used_len(len);
                let first = v.seg_num() == 1;
                let to = Address {
                    lid: r.src.lid,
                    qpn: r.src.qpn,
                    qkey: GSI_QKEY,
                    ..Address::default()
                };
                match kind {
                    Rmpp::Speaks => {}
                    Rmpp::Lacks => {
                        let tid = head.tid();
                        if v.is_last() {
                            self.open.remove(&(i, tid));
                        } else {
                            self.open.entry((i, tid)).or_insert_with(|| Pending {
                                client: i,
                                port: key,
                                to,
                                ack: Vec::new(),
                                abort: rmpp::abort(&r.mad),
                                since: Instant::now(),
                            });
                        }
                        self.ack_for(key, &rmpp::ack(&r.mad), &to);
                        if !first {
                            return;
                        }
                    }
                    // Only a first segment can be this client's: the sender
                    // waits for its ACK before the next.
                    Rmpp::Unknown if !first => {
                        self.ack_for(key, &rmpp::ack(&r.mad), &to);
                        return;
                    }
                    Rmpp::Unknown => self.pending.push(Pending {
                        client: i,
                        port: key,
                        to,
                        ack: rmpp::ack(&r.mad),
                        abort: rmpp::abort(&r.mad),
                        since: Instant::now(),
                    }),
                }
            }
        }
        let dr = head.mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE;
        let req = SimRequest::new(
            if dr { PERMISSIVE_LID } else { own_lid },
            if dr { PERMISSIVE_LID } else { r.src.lid },
            r.qp.qpn(),
            r.src.qpn,
            &r.mad[..len],
        );
        if self.outs[i].send(&req.encode()).is_ok() {
            self.stats.to_clients += 1;
        }
    }
}

/// A server running on its thread; dropping it stops the server (and
/// detaches its clients' endpoints).
#[derive(Debug)]
pub struct ServerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<ServeStats>>,
}

impl ServerHandle {
    /// Stops the server and returns what it did.
    #[must_use]
    pub fn stop(mut self) -> ServeStats {
        self.finish()
    }

    fn finish(&mut self) -> ServeStats {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
