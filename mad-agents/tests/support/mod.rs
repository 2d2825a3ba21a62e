//! Shared pieces of the mad-agents integration tests: a far side that
//! records what was sent, MAD builders, and a Loopback wrapper with a
//! chosen file descriptor.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mad_agents::{AgentEvent, AgentId, Completion, Engine};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received, Transport, TransportError};
use mad_core::wire::{Mad, Method, MgmtClass};

/// What the far side saw: (QP, MAD, destination).
pub type Sent = Arc<Mutex<Vec<(Qp, Vec<u8>, Address)>>>;

/// A Loopback whose far side records every MAD it is sent and answers
/// nothing (tests answer with `push_recv`).
pub fn recording(lid: u16, depth: usize) -> (Loopback, Sent) {
    let sent: Sent = Arc::default();
    let s2 = sent.clone();
    let lb = Loopback::new(Loopback::attrs("lb0", 1, lid), depth).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            s2.lock().unwrap().push((qp, mad.to_vec(), *dest));
            Vec::new()
        },
    ));
    (lb, sent)
}

/// A Loopback (LID 5) whose far side answers every request with a
/// GetResp (same TID) from the LID it was sent to, until `silent` is set.
pub fn answering(silent: Arc<AtomicBool>) -> Loopback {
    Loopback::new(Loopback::attrs("lb0", 1, 5), 64).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            if silent.load(Ordering::SeqCst) || Mad::new_unchecked(mad).is_response() {
                return Vec::new();
            }
            let mut r = mad.to_vec();
            r[3] = 0x81;
            vec![Received {
                qp,
                src: Address {
                    lid: dest.lid,
                    qpn: 1,
                    ..Address::default()
                },
                mad: r.into(),
            }]
        },
    ))
}

/// A PerfMgt Get(PortCounters).
pub fn perf_get() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, MgmtClass::PERF_MGT.0, 1, Method::GET.0]);
    m[16..18].copy_from_slice(&0x0012u16.to_be_bytes());
    m
}

/// The TID of a MAD.
pub fn tid_of(mad: &[u8]) -> u64 {
    Mad::new_unchecked(mad).tid()
}

/// The GetResp to `mad`, received on `qp` from `src`.
pub fn answer(qp: Qp, mad: &[u8], src: Address) -> Received {
    let mut r = mad.to_vec();
    r[3] = 0x81;
    Received {
        qp,
        src,
        mad: r.into(),
    }
}

/// Every event handed out so far.
pub fn drain<T: Transport>(e: &mut Engine<T>) -> Vec<(AgentId, AgentEvent)> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

/// The completions among `evs`.
pub fn completions(evs: &[(AgentId, AgentEvent)]) -> Vec<Completion> {
    evs.iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::SendDone(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// Which file descriptor a [`WithFd`] hands out.
pub enum Fd {
    /// None: the runtime must tick.
    None,
    /// A socket that becomes readable when [`Doorbell::ring`] is called
    /// (and is drained by `poll_recv`).
    Real(UnixStream),
    /// A number that is no open descriptor: epoll refuses it with EBADF,
    /// as it refuses libumad2sim's fake umad descriptors.
    Bogus(RawFd),
}

/// The test's end of a [`Fd::Real`] descriptor.
pub struct Doorbell(UnixStream);

impl Doorbell {
    /// Makes the transport's descriptor readable.
    pub fn ring(&mut self) {
        self.0.write_all(&[1]).unwrap();
    }
}

/// A socket pair: the transport's end and the test's doorbell.
pub fn doorbell() -> (Fd, Doorbell) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    (Fd::Real(a), Doorbell(b))
}

/// A Loopback with a chosen file descriptor.
pub struct WithFd {
    /// The Loopback.
    pub inner: Loopback,
    /// Its descriptor.
    pub fd: Fd,
    /// Received MADs queued by the test from other threads (delivered by
    /// `poll_recv`).
    pub inbox: Arc<Mutex<Vec<Received>>>,
}

impl WithFd {
    /// `inner` with descriptor `fd`.
    pub fn new(inner: Loopback, fd: Fd) -> Self {
        Self {
            inner,
            fd,
            inbox: Arc::default(),
        }
    }
}

mad_core::transport_layer!(WithFd, inner: Loopback);

impl Transport for WithFd {
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        if let Fd::Real(s) = &mut self.fd {
            let mut b = [0u8; 64];
            while matches!(s.read(&mut b), Ok(n) if n > 0) {}
        }
        {
            let mut q = self.inbox.lock().unwrap();
            if !q.is_empty() {
                return Ok(Some(q.remove(0)));
            }
        }
        self.inner.poll_recv()
    }
    fn raw_fd(&self) -> Option<RawFd> {
        match &self.fd {
            Fd::None => None,
            Fd::Real(s) => Some(s.as_raw_fd()),
            Fd::Bogus(n) => Some(*n),
        }
    }
    mad_core::forward_transport!(
        port_attrs,
        refresh_port_attrs,
        send_queue_depth,
        post_send,
        poll_send_completions,
        poll_event,
        qp_state,
        modify_qp,
        recreate_queues
    );
}
