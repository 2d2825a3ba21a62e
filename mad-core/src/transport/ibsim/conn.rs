//! The connection to ibsim: its control socket (attach, detach, node and
//! port queries) and data socket, over a local abstract socket or UDP.

use super::sock::{abstract_addr, local_id_candidates};
use super::*;

impl IbSimTransport {
    pub(super) fn open_local(cfg: &IbSimConfig) -> Result<(Sock, Sock, u32), TransportError> {
        let server = abstract_addr(&format!("{}:ctl", cfg.sockname))?;
        for id in local_id_candidates() {
            let ctl_name = format!("{}:ctl{id}", cfg.sockname);
            let ctl = match UnixDatagram::bind_addr(&abstract_addr(&ctl_name)?) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(io_err(format!("bind ibsim control socket @{ctl_name}"), e)),
            };
            let in_name = format!("{}:in{id}", cfg.sockname);
            let data = match UnixDatagram::bind_addr(&abstract_addr(&in_name)?) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(io_err(format!("bind ibsim data socket @{in_name}"), e)),
            };
            if let Err(e) = ctl.connect_addr(&server) {
                return Err(if is_gone(&e) {
                    TransportError::Open(format!(
                        "ibsim is not running: nothing listens on @{}:ctl (IBSIM_SOCKNAME={}): {e}",
                        cfg.sockname, cfg.sockname
                    ))
                } else {
                    io_err(format!("connect to ibsim @{}:ctl", cfg.sockname), e)
                });
            }
            return Ok((Sock::Unix(ctl), Sock::Unix(data), id));
        }
        Err(TransportError::Open(format!(
            "no free local socket name @{}:in<id> for an ibsim client",
            cfg.sockname
        )))
    }

    pub(super) fn open_udp(
        cfg: &IbSimConfig,
        host: &str,
        port: u16,
    ) -> Result<(Sock, Sock, u32), TransportError> {
        let server = Self::resolve(host, port)?;
        let ctl = UdpSocket::bind(("0.0.0.0", 0))
            .map_err(|e| io_err("bind UDP control socket for ibsim", e))?;
        ctl.connect(server)
            .map_err(|e| io_err(format!("connect to {}", cfg.location()), e))?;
        let data = UdpSocket::bind(("0.0.0.0", 0))
            .map_err(|e| io_err("bind UDP data socket for ibsim", e))?;
        let id = data
            .local_addr()
            .map_err(|e| io_err("UDP data socket address", e))?
            .port();
        Ok((Sock::Udp(ctl), Sock::Udp(data), u32::from(id)))
    }

    pub(super) fn resolve(host: &str, port: u16) -> Result<SocketAddr, TransportError> {
        let addrs = (host, port).to_socket_addrs().map_err(|e| {
            TransportError::Open(format!("cannot resolve ibsim server \"{host}\": {e}"))
        })?;
        addrs.into_iter().find(SocketAddr::is_ipv4).ok_or_else(|| {
            TransportError::Open(format!(
                "ibsim server \"{host}\" has no IPv4 address (ibsim speaks IPv4 only)"
            ))
        })
    }

    pub(super) fn connect_data(&mut self) -> Result<(), TransportError> {
        let id = self.client_id;
        match (&self.data, &self.cfg.server) {
            (Sock::Unix(s), _) => {
                let name = format!("{}:out{id}", self.cfg.sockname);
                s.connect_addr(&abstract_addr(&name)?)
                    .map_err(|e| io_err(format!("connect to ibsim data socket @{name}"), e))
            }
            (Sock::Udp(s), Some((host, port))) => {
                let dport = u32::from(*port) + id + 1;
                let dport = u16::try_from(dport).map_err(|_| {
                    TransportError::Open(format!("ibsim data port {dport} out of range"))
                })?;
                let addr = Self::resolve(host, dport)?;
                s.connect(addr)
                    .map_err(|e| io_err(format!("connect to ibsim data port {addr}"), e))
            }
            (Sock::Udp(_), None) => Err(TransportError::Open(
                "ibsim: UDP socket without a server".into(),
            )),
        }
    }

    /// An error of the control socket: ibsim gone (nothing listens, the
    /// connection reset) is [`TransportError::Open`] saying so; anything
    /// else an I/O error in the context `doing` names (followed by the
    /// location).
    fn ctl_error(&self, e: std::io::Error, doing: impl FnOnce() -> String) -> TransportError {
        let at = self.cfg.location();
        if is_gone(&e) {
            TransportError::Open(format!("{at} is not running: {e}"))
        } else {
            io_err(format!("{} {at}", doing()), e)
        }
    }

    /// One control round trip. While waiting, datagrams arriving on the
    /// data socket are moved to the receive queue, so ibsim can never be
    /// stuck writing to us while we wait for it.
    pub(super) fn ctl_call(
        &mut self,
        ty: CtlType,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<[u8; CTL_DATA_LEN], CtlFail> {
        let fail = CtlFail::Failed;
        // Drop stale answers of calls that timed out earlier.
        let _ = self.ctl.set_nonblocking(true);
        let mut buf = [0u8; 256];
        while self.ctl.recv(&mut buf).is_ok() {}
        let _ = self.ctl.set_nonblocking(false);

        let req = SimCtl::new(self.client_id, ty, payload).encode();
        if let Err(e) = self.ctl.send(&req) {
            return Err(fail(self.ctl_error(e, || format!("send {ty:?} to"))));
        }
        let deadline = Instant::now() + timeout;
        let step = Duration::from_millis(2);
        self.ctl
            .set_read_timeout(Some(step))
            .map_err(|e| fail(io_err("ibsim control socket timeout", e)))?;
        loop {
            match self.ctl.recv(&mut buf) {
                Ok(n) => {
                    // Anything but an 80-byte message with the magic is
                    // not ibsim's answer: ignore it.
                    if let Some(reply) = SimCtl::decode(&buf[..n]).filter(|r| r.magic == SIM_MAGIC)
                    {
                        if reply.is_error() {
                            return Err(CtlFail::Refused);
                        }
                        return Ok(reply.data);
                    }
                }
                Err(e) if is_transient(&e) => {
                    if self.attached && !self.dead {
                        self.drain_data().map_err(fail)?;
                    }
                }
                Err(e) => return Err(fail(self.ctl_error(e, || format!("{ty:?} answer from")))),
            }
            if Instant::now() >= deadline {
                return Err(fail(TransportError::Open(format!(
                    "{} did not answer {ty:?} within {:?}",
                    self.cfg.location(),
                    timeout
                ))));
            }
        }
    }

    /// A control call that must succeed.
    pub(super) fn ctl_ok(
        &mut self,
        ty: CtlType,
        payload: &[u8],
    ) -> Result<[u8; CTL_DATA_LEN], TransportError> {
        match self.ctl_call(ty, payload, self.cfg.ctl_timeout) {
            Ok(d) => Ok(d),
            Err(CtlFail::Failed(e)) => Err(e),
            Err(CtlFail::Refused) => Err(TransportError::Open(format!(
                "{} refused {ty:?} for client {}",
                self.cfg.location(),
                self.client_id
            ))),
        }
    }

    pub(super) fn connect(
        &mut self,
        node: Option<&str>,
        issm: u32,
        qp: u32,
    ) -> Result<SimClientInfo, CtlFail> {
        let info = SimClientInfo {
            id: self.data_id,
            qp,
            issm,
            node: node.unwrap_or("").to_owned(),
        };
        let d = self.ctl_call(CtlType::Connect, &info.encode(), self.cfg.ctl_timeout)?;
        SimClientInfo::decode(&d).ok_or_else(|| {
            CtlFail::Failed(TransportError::Open(
                "short CONNECT answer from ibsim".into(),
            ))
        })
    }

    pub(super) fn disconnect(&mut self, client: u32) {
        let saved = std::mem::replace(&mut self.client_id, client);
        let _ = self.ctl_call(CtlType::Disconnect, &[], Duration::from_secs(1));
        self.client_id = saved;
    }

    /// Works out why ibsim refused an attach, by probing with attaches
    /// it would accept (each detached at once).
    pub(super) fn diagnose_refusal(&mut self) -> String {
        let loc = self.cfg.location();
        match self.connect(None, 0, 0) {
            Err(CtlFail::Refused) => {
                return format!(
                    "{loc} refused the attach: all {} client slots are taken",
                    proto::MAX_CLIENTS
                )
            }
            Err(CtlFail::Failed(e)) => return format!("{loc} refused the attach ({e})"),
            Ok(probe) => self.disconnect(probe.id),
        }
        match self.cfg.node.clone() {
            Some(name) => match self.connect(Some(&name), 0, 0) {
                Err(CtlFail::Refused) => format!(
                    "{loc} has no node \"{name}\" (neither a node name in its topology file nor a NodeDescription)"
                ),
                Err(CtlFail::Failed(e)) => format!("{loc} refused the attach at node \"{name}\" ({e})"),
                Ok(probe) => {
                    self.disconnect(probe.id);
                    format!("{loc} refused the attach at node \"{name}\": an SM client is already attached there")
                }
            },
            None if self.cfg.issm => format!(
                "{loc} refused the attach at its default node: an SM client is already attached there"
            ),
            None => format!("{loc} refused the attach"),
        }
    }

    pub(super) fn query_attrs(&mut self) -> Result<PortAttrs, TransportError> {
        let ni = self.ctl_ok(CtlType::GetNodeInfo, &[])?;
        let pi = self.ctl_ok(CtlType::GetPortInfo, &[0])?;
        let pk = self.ctl_ok(CtlType::GetPkeys, &[])?;
        Ok(attrs_from_ctl(&self.attrs.ca_name, &ni, &pi, &pk))
    }
}
