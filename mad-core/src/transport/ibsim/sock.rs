//! The two sockets to ibsim (control and data; local abstract or UDP)
//! and the errors of its control channel.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::transport::TransportError;

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

/// A receive that only found nothing yet (would block, timed out,
/// interrupted): try again.
pub(super) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
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
