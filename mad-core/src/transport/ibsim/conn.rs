//! The connection to ibsim: its control socket (attach, detach, node and
//! port queries) and data socket, over a local abstract socket or UDP.

use super::*;

#[derive(Debug)]
pub(super) enum Sock {
    Unix(UnixDatagram),
    Udp(UdpSocket),
}

impl Sock {
    pub(super) fn send(&self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.send(b),
            Sock::Udp(s) => s.send(b),
        }
    }
    pub(super) fn recv(&self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.recv(b),
            Sock::Udp(s) => s.recv(b),
        }
    }
    pub(super) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Sock::Unix(s) => s.set_nonblocking(on),
            Sock::Udp(s) => s.set_nonblocking(on),
        }
    }
    pub(super) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Unix(s) => s.set_read_timeout(t),
            Sock::Udp(s) => s.set_read_timeout(t),
        }
    }
    pub(super) fn fd(&self) -> RawFd {
        match self {
            Sock::Unix(s) => s.as_raw_fd(),
            Sock::Udp(s) => s.as_raw_fd(),
        }
    }
}

/// Why a control round trip failed.
pub(super) enum CtlFail {
    /// ibsim answered with `SIM_CTL_ERROR`.
    Refused,
    /// No answer, or a socket error.
    Failed(TransportError),
}

/// Distinct data-socket ids for local mode: above any PID (pid_max is at
/// most 2^22), so they never collide with a libumad2sim client's
/// `in<pid>` name, and positive as a C `int`.
pub(super) fn local_id_candidates() -> impl Iterator<Item = u32> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let pid = std::process::id() & 0x3F_FFFF;
    (0..256).map(move |_| {
        let n = NEXT.fetch_add(1, Ordering::Relaxed) & 0xFF;
        0x4000_0000 | (pid << 8) | n
    })
}

/// The abstract socket address ibsim (and libumad2sim) use for `name`:
/// their address length counts the C string's terminating NUL, so the
/// NUL is part of the name (/proc/net/unix shows `@sim:ctl@`).
pub(super) fn abstract_addr(name: &str) -> Result<UnixAddr, TransportError> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    UnixAddr::from_abstract_name(&bytes).map_err(|e| TransportError::Io {
        context: format!("socket name @{name}"),
        source: e,
    })
}

pub(super) fn io_err(context: impl Into<String>, source: io::Error) -> TransportError {
    TransportError::Io {
        context: context.into(),
        source,
    }
}

pub(super) fn is_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::NotConnected
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::NotFound
    )
}

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
        match self.ctl.send(&req) {
            Ok(_) => {}
            Err(e) if is_gone(&e) => {
                return Err(fail(TransportError::Open(format!(
                    "{} does not answer: {e} (is ibsim running?)",
                    self.cfg.location()
                ))))
            }
            Err(e) => {
                return Err(fail(io_err(
                    format!("send {ty:?} to {}", self.cfg.location()),
                    e,
                )))
            }
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
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.attached && !self.dead {
                        self.drain_data().map_err(fail)?;
                    }
                }
                Err(e) if is_gone(&e) => {
                    return Err(fail(TransportError::Open(format!(
                        "{} is not running: {e}",
                        self.cfg.location()
                    ))))
                }
                Err(e) => {
                    return Err(fail(io_err(
                        format!("{ty:?} answer from {}", self.cfg.location()),
                        e,
                    )))
                }
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
