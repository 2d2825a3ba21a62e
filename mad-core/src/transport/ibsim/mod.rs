//! The ibsim transport: a pure-Rust client of the InfiniBand fabric
//! simulator `ibsim`, speaking its own socket protocol (the one
//! `libumad2sim` speaks; see [`proto`]).
//!
//! ```no_run
//! use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport};
//! use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
//! // IBSIM_SOCKNAME, IBSIM_SERVER_NAME, IBSIM_SERVER_PORT, SIM_HOST and
//! // SIM_SET_ISSM mean what they mean for libumad2sim.
//! let mut t = IbSimTransport::attach(IbSimConfig::from_env())?;
//! println!("attached at {} port {}", t.port_attrs().ca_name, t.port_attrs().port_num);
//! let mut smp = [0u8; 256];
//! smp[..4].copy_from_slice(&[1, 0x81, 1, 1]); // DR SMP Get
//! smp[16..18].copy_from_slice(&0x0011u16.to_be_bytes()); // NodeInfo
//! smp[32..36].copy_from_slice(&[0xff; 4]); // DrSLID, DrDLID permissive
//! t.post_send(Qp::Qp0, &smp, &Address::smi(PERMISSIVE_LID))?;
//! while !t.wait_readable(std::time::Duration::from_secs(1))? {}
//! let answer = t.poll_recv()?.expect("a response");
//! assert_eq!(answer.mad[3], 0x81); // GetResp
//! # Ok::<(), mad_core::transport::TransportError>(())
//! ```
//!
//! # How ibsim behaves, and what this transport does about it
//! - **Attaching.** A client attaches at a node (the topology file's
//!   name for it, or its NodeDescription; default: the first node in the
//!   file), at port 0 of a switch or the *first* port of a CA: ibsim
//!   offers no way to attach at a CA's second port. It serves at most
//!   [`proto::MAX_CLIENTS`] clients; the 11th attach is refused at once.
//!   ibsim refuses with one undifferentiated error, so on a refusal this
//!   transport probes (attach at the default node; attach at the named
//!   node without the SM flag, detaching each probe at once) to say
//!   which of "no free client slot", "no such node" or "an SM is already
//!   attached there" it was.
//! - **Port attributes** come from the control channel (`GET_NODEINFO`,
//!   `GET_PORTINFO`, `GET_PKEYS`), never through the data path, so
//!   [`Transport::refresh_port_attrs`] never interleaves with MAD
//!   traffic. ibsim's control NodeInfo carries the node GUID as port
//!   GUID; the port GUID is computed by ibsim's own rule (node GUID +
//!   port number on a CA, the node GUID on a switch). Only the first
//!   32 P_Keys are available this way.
//! - **Sends never fail.** A datagram written to ibsim is a completed
//!   send: every [`Transport::post`] queues a
//!   [`crate::transport::WcStatus::Success`] completion at once. The QP state machine is
//!   kept only so the port layer can drive it; ibsim itself never puts a
//!   QP in error, never overflows a CQ and raises no async events.
//!   The one failure that remains is ibsim going away: the first send or
//!   receive that finds its socket gone raises
//!   [`AsyncEvent::DeviceFatal`], and every later post fails with
//!   [`TransportError::DeviceDead`].
//! - **Undeliverable MADs.** When ibsim cannot deliver a MAD (no route,
//!   a LID-routed MAD before an SM assigned LIDs, a request nobody
//!   serves such as SMInfo without an SM) it sends it back to its sender
//!   with status 110 (`ETIMEDOUT`). Those never appear as receives; they
//!   are kept for [`IbSimTransport::poll_undeliverable`] (the most
//!   recent [`UNDELIVERABLE_KEEP`]) and counted.
//! - **Transaction IDs.** ibsim overwrites bits 48–63 of every request's
//!   TID with the sender's client number and routes the response back by
//!   them; responses arrive with those bits as ibsim wrote them. Keep
//!   your own TID bits below bit 48.
//! - **Flow control.** A datagram the client sends is charged to the
//!   client's socket until ibsim reads it, and an answer to ibsim's
//!   socket until the client reads it (connected Unix datagram sockets:
//!   the sender's send buffer, `net.core.wmem_default`, about 170
//!   MADs, is the limit; `max_dgram_qlen` does not apply). ibsim busy-waits
//!   on a write to a client whose queue is full, serving nobody else
//!   meanwhile; a client blocked in its own write at that moment (as
//!   libumad2sim is, with hundreds unanswered) never reads again, and
//!   both are stuck for good. This transport never blocks in a send: when
//!   the socket to ibsim is full, [`Transport::post`] returns
//!   [`TransportError::QueueFull`]; poll receives, then post again, and
//!   ibsim resumes. Keep at most [`IBSIM_MAX_IN_FLIGHT`] requests
//!   unanswered per client and drain receives promptly. While waiting for
//!   a control answer this transport keeps reading the data socket (into
//!   its receive queue), so a control call cannot deadlock either.
//! - **Addressing.** Directed-route SMPs go to [`PERMISSIVE_LID`]; the
//!   source LID of a LID-routed send is filled in by ibsim. ibsim carries
//!   no GRH, SL, P_Key index or Q_Key: a send with a GRH is refused;
//!   receives report SL 0, P_Key index 0, and the well-known Q_Key of
//!   the QP they arrived on.
//! - **Requests to this port.** Requests to QP0 / QP1 of the attached
//!   port reach this client only if it attached as SM
//!   ([`IbSimConfig::issm`]; one per node); requests to a QP number
//!   above 1 reach the client that named that number
//!   ([`IbSimConfig::qpn`]), and arrive here as QP1 receives.

mod conn;
pub mod proto;
mod sock;
#[cfg(test)]
mod tests;

use sock::{io_err, is_gone, is_transient, CtlFail, Sock};

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::RawFd;
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use crate::wire::field::{be_u16, be_u32, be_u64};

use self::proto::{CtlType, SimClientInfo, SimCtl, SimRequest, CTL_DATA_LEN, SIM_MAGIC};
use super::{
    Address, AsyncEvent, OutMad, PortAttrs, Posted, PostedAtOnce, Qp, QpState, Received,
    SendCompletion, Transport, TransportError, Unsendable, GSI_QKEY, PERMISSIVE_LID,
};

/// Most requests one client should leave unanswered at ibsim (see "Flow
/// control" in the module docs); also what
/// [`Transport::send_queue_depth`] reports.
pub const IBSIM_MAX_IN_FLIGHT: usize = 256;
/// How many undeliverable MADs are kept for
/// [`IbSimTransport::poll_undeliverable`]; older ones are dropped (but
/// counted).
pub const UNDELIVERABLE_KEEP: usize = 1024;

/// Where ibsim is and how to attach to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbSimConfig {
    /// Socket base name of a local ibsim (`IBSIM_SOCKNAME`, default
    /// `sim`): it listens on `@NAME:ctl`.
    pub sockname: String,
    /// A remote ibsim (`ibsim -r`) at this host and UDP control port
    /// (`IBSIM_SERVER_NAME`, `IBSIM_SERVER_PORT`, default 7070). `None`:
    /// the local one named by `sockname`.
    pub server: Option<(String, u16)>,
    /// Node to attach at (`SIM_HOST`): its name in the topology file or
    /// its NodeDescription; `None`: ibsim's default (the first node in
    /// the file).
    pub node: Option<String>,
    /// Attach as the node's SM (`SIM_SET_ISSM`): receive requests to
    /// QP0 / QP1 of this port and set the IsSM capability bit.
    pub issm: bool,
    /// A QP number above 1 under which other clients can reach this one
    /// (0: none).
    pub qpn: u32,
    /// How long to wait for ibsim to answer a control request.
    pub ctl_timeout: Duration,
}

impl Default for IbSimConfig {
    fn default() -> Self {
        Self {
            sockname: proto::DEFAULT_SOCKNAME.to_owned(),
            server: None,
            node: None,
            issm: false,
            qpn: 0,
            ctl_timeout: Duration::from_secs(5),
        }
    }
}

impl IbSimConfig {
    /// The local ibsim with socket base name `sockname`.
    #[must_use]
    pub fn local(sockname: impl Into<String>) -> Self {
        Self {
            sockname: sockname.into(),
            ..Self::default()
        }
    }

    /// The settings libumad2sim takes from the environment:
    /// `IBSIM_SOCKNAME`, `IBSIM_SERVER_NAME` (non-empty: remote mode),
    /// `IBSIM_SERVER_PORT`, `SIM_HOST`, `SIM_SET_ISSM` (set: attach as SM).
    #[must_use]
    pub fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// As [`IbSimConfig::from_env`], reading variables through `get`.
    #[must_use]
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut c = Self::default();
        if let Some(s) = get("IBSIM_SOCKNAME").filter(|s| !s.is_empty()) {
            c.sockname = s;
        }
        if let Some(host) = get("IBSIM_SERVER_NAME").filter(|s| !s.is_empty()) {
            // Like libumad2sim's atoi(): an unparsable port is the default.
            let port = get("IBSIM_SERVER_PORT")
                .and_then(|p| p.trim().parse::<u16>().ok())
                .unwrap_or(proto::DEFAULT_SERVER_PORT);
            c.server = Some((host, port));
        }
        c.node = get("SIM_HOST").filter(|s| !s.is_empty());
        c.issm = get("SIM_SET_ISSM").is_some();
        c
    }

    /// Sets the node to attach at.
    #[must_use]
    pub fn node(mut self, name: impl Into<String>) -> Self {
        self.node = Some(name.into());
        self
    }

    /// Human-readable location of the ibsim this names.
    #[must_use]
    pub fn location(&self) -> String {
        match &self.server {
            Some((h, p)) => format!("ibsim at udp {h}:{p}"),
            None => format!(
                "ibsim @{}:ctl (IBSIM_SOCKNAME={})",
                self.sockname, self.sockname
            ),
        }
    }
}

/// One port of an ibsim fabric: QP0 and QP1 of the node this client is
/// attached at. Detaches from ibsim when dropped.
#[derive(Debug)]
pub struct IbSimTransport {
    cfg: IbSimConfig,
    ctl: Sock,
    data: Sock,
    /// Our data-socket id (`in<id>` / UDP port) sent in `CONNECT`.
    data_id: u32,
    /// Where the data socket sends (`@NAME:out<i>` or a UDP address).
    client_id: u32,
    attrs: PortAttrs,
    sent: PostedAtOnce,
    pending: VecDeque<Received>,
    undeliverable: VecDeque<Received>,
    undeliverable_count: u64,
    malformed_count: u64,
    events: VecDeque<AsyncEvent>,
    qp_state: [QpState; 2],
    dead: bool,
    attached: bool,
}

impl IbSimTransport {
    /// Attaches to ibsim as `cfg` says and reads the port's attributes.
    ///
    /// # Errors
    /// [`TransportError::Open`] naming the socket when ibsim is not
    /// running, naming the node when there is no such node, and saying
    /// why when ibsim refuses the attach (no free client slot, an SM
    /// already attached at the node); I/O errors otherwise.
    pub fn attach(cfg: IbSimConfig) -> Result<Self, TransportError> {
        if let Some(n) = &cfg.node {
            if n.len() > proto::MAX_NODEID_LEN || n.as_bytes().contains(&0) {
                return Err(TransportError::Open(format!(
                    "ibsim node name \"{n}\" cannot be sent to ibsim: at most {} bytes, no NUL",
                    proto::MAX_NODEID_LEN
                )));
            }
        }
        if cfg.qpn == 1 {
            return Err(TransportError::Open(
                "ibsim client QP number 1 is the GSI; use 0 (none) or a number above 1".into(),
            ));
        }
        let (ctl, data, data_id) = match &cfg.server {
            None => Self::open_local(&cfg)?,
            Some((host, port)) => Self::open_udp(&cfg, host, *port)?,
        };
        let mut t = Self {
            cfg,
            ctl,
            data,
            data_id,
            client_id: u32::MAX,
            attrs: PortAttrs::default(),
            sent: PostedAtOnce::default(),
            pending: VecDeque::new(),
            undeliverable: VecDeque::new(),
            undeliverable_count: 0,
            malformed_count: 0,
            events: VecDeque::new(),
            qp_state: [QpState::Rts; 2],
            dead: false,
            attached: false,
        };
        let (issm, qpn) = (u32::from(t.cfg.issm), t.cfg.qpn);
        let node = t.cfg.node.clone();
        let info = match t.connect(node.as_deref(), issm, qpn) {
            Ok(info) => info,
            Err(CtlFail::Failed(e)) => return Err(e),
            Err(CtlFail::Refused) => return Err(TransportError::Open(t.diagnose_refusal())),
        };
        t.client_id = info.id;
        t.attached = true;
        t.attrs.ca_name = info.node;
        t.connect_data()?;
        t.data
            .set_nonblocking(true)
            .map_err(|e| io_err("ibsim data socket: set non-blocking", e))?;
        t.attrs = t.query_attrs()?;
        if t.cfg.issm {
            t.ctl_ok(CtlType::SetIsSm, &1i32.to_ne_bytes())?;
            t.attrs = t.query_attrs()?;
        }
        Ok(t)
    }

    /// Handles one data datagram.
    fn accept(&mut self, b: &[u8]) {
        let Some(r) = SimRequest::decode(b) else {
            self.malformed_count += 1;
            return;
        };
        let qp = if r.dqp == 0 { Qp::Qp0 } else { Qp::Qp1 };
        let rx = Received {
            qp,
            src: Address {
                lid: r.slid,
                qpn: r.sqp,
                qkey: if qp == Qp::Qp0 { 0 } else { GSI_QKEY },
                ..Address::default()
            },
            mad: crate::MadBuf::from_slice(&unsegmented_request(whole_segment(
                r.mad_bytes(),
                &r.mad,
            ))),
        };
        if r.status != 0 {
            self.undeliverable_count += 1;
            if self.undeliverable.len() >= UNDELIVERABLE_KEEP {
                self.undeliverable.pop_front();
            }
            self.undeliverable.push_back(rx);
        } else {
            self.pending.push_back(rx);
        }
    }

    fn mark_dead(&mut self) {
        if !self.dead {
            self.dead = true;
            self.events.push_back(AsyncEvent::DeviceFatal);
        }
    }

    /// Reads every datagram waiting on the data socket into the queues.
    fn drain_data(&mut self) -> Result<(), TransportError> {
        let mut buf = [0u8; 512];
        loop {
            match self.data.recv(&mut buf) {
                Ok(n) => self.accept(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_gone(&e) => {
                    self.mark_dead();
                    return Ok(());
                }
                Err(e) => return Err(io_err("ibsim data socket receive", e)),
            }
        }
    }

    /// Blocks up to `timeout` until a receive is ready; true if one is.
    /// (For simple tools and tests; an event loop registers
    /// [`Transport::raw_fd`] instead.)
    ///
    /// # Errors
    /// On an I/O failure of the data socket.
    pub fn wait_readable(&mut self, timeout: Duration) -> Result<bool, TransportError> {
        if self.pending.is_empty() && !self.dead {
            self.drain_data()?;
        }
        if !self.pending.is_empty() || self.dead || timeout.is_zero() {
            return Ok(!self.pending.is_empty());
        }
        let set = |s: &Sock, block: bool| -> Result<(), TransportError> {
            s.set_nonblocking(!block)
                .map_err(|e| io_err("ibsim data socket mode", e))
        };
        set(&self.data, true)?;
        let r = self.data.set_read_timeout(Some(timeout));
        let mut buf = [0u8; 512];
        let got = match r {
            Ok(()) => self.data.recv(&mut buf),
            Err(e) => Err(e),
        };
        set(&self.data, false)?;
        match got {
            Ok(n) => self.accept(&buf[..n]),
            Err(e) if is_transient(&e) => {}
            Err(e) if is_gone(&e) => self.mark_dead(),
            Err(e) => return Err(io_err("ibsim data socket receive", e)),
        }
        if !self.dead {
            self.drain_data()?;
        }
        Ok(!self.pending.is_empty())
    }

    /// The next MAD ibsim returned undelivered (status 110), if any.
    pub fn poll_undeliverable(&mut self) -> Option<Received> {
        self.undeliverable.pop_front()
    }

    /// How many MADs ibsim returned undelivered since attaching.
    #[must_use]
    pub fn undeliverable_count(&self) -> u64 {
        self.undeliverable_count
    }

    /// How many datagrams of the wrong size arrived (should stay 0).
    #[must_use]
    pub fn malformed_count(&self) -> u64 {
        self.malformed_count
    }

    /// This client's number at ibsim (0–9), which ibsim writes into TID
    /// bits 48–63 of every request we send.
    #[must_use]
    pub fn client_id(&self) -> u32 {
        self.client_id
    }

    /// The configuration this transport attached with.
    #[must_use]
    pub fn config(&self) -> &IbSimConfig {
        &self.cfg
    }
}

/// Port attributes from ibsim's control answers: NodeInfo (`ni`),
/// PortInfo (`pi`) and P_Keys (`pk`), wire layouts per ATTRIBUTES.md.
fn attrs_from_ctl(ca_name: &str, ni: &[u8], pi: &[u8], pk: &[u8]) -> PortAttrs {
    let is_switch = ni.get(2).copied() == Some(2);
    let node_guid = be_u64(ni, 12);
    // PortInfo LocalPortNum: ibsim sets the port number on a CA and 0 on
    // a switch (the attached port is the switch's port 0).
    let port_num = if is_switch {
        0
    } else {
        pi.get(28).copied().unwrap_or(0)
    };
    let port_guid = if is_switch {
        node_guid
    } else {
        node_guid.wrapping_add(u64::from(port_num))
    };
    let cap = usize::from(be_u16(ni, 28)).min(pk.len() / 2);
    let pkeys = (0..cap).map(|i| be_u16(pk, 2 * i)).collect();
    let byte = |i: usize| pi.get(i).copied().unwrap_or(0);
    PortAttrs {
        ca_name: ca_name.to_owned(),
        port_num,
        node_guid,
        port_guid,
        gid_prefix: be_u64(pi, 8),
        lid: be_u16(pi, 16),
        lmc: byte(34) & 0x07,
        sm_lid: be_u16(pi, 18),
        sm_sl: byte(36) & 0x0F,
        state: byte(32) & 0x0F,
        phys_state: byte(33) >> 4,
        capability_mask: be_u32(pi, 20),
        pkeys,
        is_switch,
    }
}

/// The async events a change from `old` to `new` port attributes means.
fn attr_events(old: &PortAttrs, new: &PortAttrs) -> Vec<AsyncEvent> {
    let mut ev = Vec::new();
    const ACTIVE: u8 = 4;
    if old.state != new.state {
        if new.state == ACTIVE {
            ev.push(AsyncEvent::PortActive);
        } else if old.state == ACTIVE {
            ev.push(AsyncEvent::PortError);
        }
    }
    if (old.lid, old.lmc) != (new.lid, new.lmc) {
        ev.push(AsyncEvent::LidChange);
    }
    if old.pkeys != new.pkeys {
        ev.push(AsyncEvent::PkeyChange);
    }
    if old.gid_prefix != new.gid_prefix {
        ev.push(AsyncEvent::GidChange);
    }
    if (old.sm_lid, old.sm_sl) != (new.sm_lid, new.sm_sl) {
        ev.push(AsyncEvent::SmChange);
    }
    ev
}

impl Transport for IbSimTransport {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }

    /// Re-reads NodeInfo, PortInfo and P_Keys through ibsim's control
    /// channel, and queues the async events the differences mean (port
    /// active / error, LID, P_Key, GID prefix, SM change): ibsim raises
    /// none itself.
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        if self.dead {
            return Err(TransportError::DeviceDead(self.attrs.ca_name.clone()));
        }
        let new = self.query_attrs()?;
        self.events.extend(attr_events(&self.attrs, &new));
        self.attrs = new;
        Ok(())
    }

    /// [`IBSIM_MAX_IN_FLIGHT`]. Completions are immediate, so the port
    /// layer never has this many posted; the figure is the number of
    /// *unanswered requests* to stay under.
    fn send_queue_depth(&self) -> usize {
        IBSIM_MAX_IN_FLIGHT
    }

    fn post(&mut self, out: OutMad<'_>, dest: &Address, _wait: std::time::Duration) -> Posted {
        let (qp, mad) = (out.qp(), out.bytes());
        if self.dead {
            return Err(TransportError::DeviceDead(self.attrs.ca_name.clone()));
        }
        let state = self.qp_state[qp.index()];
        if state != QpState::Rts {
            return Err(TransportError::QpNotReady { qp, state });
        }
        if dest.grh.is_some() {
            return Err(Unsendable::GrhUnsupported.into());
        }
        let sqp = match qp {
            Qp::Qp0 => 0,
            Qp::Qp1 if self.cfg.qpn > 1 => self.cfg.qpn,
            Qp::Qp1 => 1,
        };
        let slid = if dest.lid == PERMISSIVE_LID {
            PERMISSIVE_LID
        } else {
            0
        };
        // A Last RMPP segment goes at the length it uses, as a kernel
        // would hand it over: libumad2sim's clients (saquery, osmtest)
        // count records from the datagram's length, and would take the
        // zero padding for records.
        let used = if out.class().is_rmpp_class() {
            crate::wire::rmpp::RmppView::new_checked(mad)
                .map_or(mad.len(), |v| v.used_len(mad.len()))
        } else {
            mad.len()
        };
        let req = SimRequest::new(dest.lid, slid, dest.qpn, sqp, &mad[..used]).encode();
        loop {
            match self.data.send(&req) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(TransportError::QueueFull {
                        qp,
                        depth: IBSIM_MAX_IN_FLIGHT,
                    })
                }
                Err(e) if is_gone(&e) => {
                    self.mark_dead();
                    return Err(TransportError::DeviceDead(format!(
                        "{} ({}: {e})",
                        self.attrs.ca_name,
                        self.cfg.location()
                    )));
                }
                Err(e) => return Err(io_err("send to ibsim", e)),
            }
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
        if self.pending.is_empty() && !self.dead {
            let mut buf = [0u8; 512];
            loop {
                match self.data.recv(&mut buf) {
                    Ok(n) => {
                        self.accept(&buf[..n]);
                        if !self.pending.is_empty() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if is_gone(&e) => {
                        self.mark_dead();
                        break;
                    }
                    Err(e) => return Err(io_err("ibsim data socket receive", e)),
                }
            }
        }
        Ok(self.pending.pop_front())
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.events.pop_front()
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        self.qp_state[qp.index()]
    }

    /// Follows the verbs state diagram
    /// ([`check_qp_transition`](super::loopback::check_qp_transition)).
    /// ibsim has no QPs; nothing else happens.
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        super::loopback::check_qp_transition(qp, self.qp_state[qp.index()], to)?;
        self.qp_state[qp.index()] = to;
        Ok(())
    }

    /// Drops queued completions and puts both QPs in RTS. ibsim has no
    /// queues to recreate.
    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        if self.dead {
            return Err(TransportError::DeviceDead(self.attrs.ca_name.clone()));
        }
        self.sent.clear();
        self.qp_state = [QpState::Rts; 2];
        Ok(())
    }

    /// The data socket. It becomes readable when a MAD arrives; send
    /// completions are queued synchronously by `post_send` and events by
    /// `refresh_port_attrs` or a failed socket call, so poll those after
    /// calling them.
    fn raw_fd(&self) -> Option<RawFd> {
        Some(self.data.fd())
    }
}

impl Drop for IbSimTransport {
    fn drop(&mut self) {
        if !self.attached || self.dead {
            return;
        }
        if self.cfg.issm {
            let _ = self.ctl_call(
                CtlType::SetIsSm,
                &0i32.to_ne_bytes(),
                Duration::from_secs(1),
            );
        }
        let id = self.client_id;
        self.disconnect(id);
    }
}

/// A request of an RMPP class with the Active flag and RMPP version 0 is
/// what a program under libumad2sim sends for a kernel to segment (osmtest's
/// GetMulti): no kernel is there, the whole request is this one MAD, and
/// an RMPP receiver would answer it ABORT(UNV). It is delivered as the
/// single MAD it is, its RMPP header cleared (as OpenSM's vendor layer
/// clears the header of a MAD it does not send as RMPP). Anything else is
/// delivered as it came.
fn unsegmented_request(mad: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use crate::wire::rmpp::RmppView;
    let head = crate::wire::Mad::new_unchecked(mad);
    let lone = mad.len() >= 28
        && head.mgmt_class().is_rmpp_class()
        && !head.response_bit()
        && RmppView::new_unchecked(mad).version() == 0
        && RmppView::new_unchecked(mad).is_active();
    if lone {
        let mut m = mad.to_vec();
        m[24..28].fill(0);
        std::borrow::Cow::Owned(m)
    } else {
        std::borrow::Cow::Borrowed(mad)
    }
}

/// The MAD bytes to deliver from a datagram whose declared length is
/// `used` (out of the 256 in `whole`): an RMPP DATA segment (version 1,
/// First or Last set) shorter than a MAD is a segment a served fabric cut
/// to the length it uses, as libumad2sim clients count records by length
/// (`mad sim --serve`); the RMPP layer takes segments whole, so it is
/// given back its zero padding. Anything else is delivered as declared.
fn whole_segment<'a>(used: &'a [u8], whole: &'a [u8]) -> &'a [u8] {
    use crate::wire::rmpp::{RmppType, RmppView, RMPP_FLAG_FIRST, RMPP_FLAG_LAST, RMPP_VERSION};
    let cut = used.len() < whole.len()
        && crate::wire::Mad::new_unchecked(used)
            .mgmt_class()
            .is_rmpp_class()
        && RmppView::new_checked(used).is_ok_and(|v| {
            v.is_active()
                && v.version() == RMPP_VERSION
                && v.rmpp_type() == RmppType::DATA
                && v.flags() & (RMPP_FLAG_FIRST | RMPP_FLAG_LAST) != 0
        });
    if cut {
        whole
    } else {
        used
    }
}
