//! One way to wrap a [`Transport`] in a test: [`Wrapped`] forwards every
//! method to the inner transport, and a [`Hooks`] value sees (or changes)
//! what is sent, what is received, the registrations and the file
//! descriptor. The hooks tests use are here: [`Recording`] (what was sent
//! and registered, with a refusal switch), [`Tap`] (a callback on every
//! MAD either way) and [`WithFd`] (a chosen descriptor and an inbox other
//! threads can fill).

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mad_core::transport::{
    Address, AsyncEvent, OutMad, Posted, Qp, Received, Transport, TransportError, WrId,
};
use mad_core::wire::MgmtClass;
use std::time::Duration;

/// What a wrapper may see or change. Every method has a default that
/// changes nothing, so a hook overrides only what it is about.
pub trait Hooks: Send {
    /// A MAD about to be posted on `qp` to `dest`. `None` forwards it to
    /// the inner transport; `Some(result)` answers in its place.
    fn send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Option<Result<WrId, TransportError>> {
        let _ = (qp, mad, dest);
        None
    }

    /// A MAD to receive before asking the inner transport (an injected
    /// one, or a duplicate kept back by [`Hooks::received`]).
    fn inject(&mut self) -> Option<Received> {
        None
    }

    /// A MAD received: return it to pass it on, `None` to lose it.
    fn received(&mut self, r: Received) -> Option<Received> {
        Some(r)
    }

    /// A registration (see [`Transport::register_requests`]) about to be
    /// forwarded; an error refuses it.
    ///
    /// # Errors
    /// When the hook refuses the registration.
    fn register(&mut self, r: Registration) -> Result<(), TransportError> {
        let _ = r;
        Ok(())
    }

    /// An error for `poll_recv` to return instead of receiving (a device
    /// that went away: [`TransportError::DeviceDead`]); `None` receives.
    fn recv_error(&mut self) -> Option<TransportError> {
        None
    }

    /// A port event to report before asking the inner transport (an
    /// injected one); `None` asks the inner transport.
    fn event(&mut self) -> Option<AsyncEvent> {
        None
    }

    /// The descriptor to report instead of the inner transport's
    /// (`Some(None)`: none at all); `None` keeps the inner one.
    fn raw_fd(&self) -> Option<Option<RawFd>> {
        None
    }
}

/// A transport `T` seen through hooks `H`.
#[derive(Debug)]
pub struct Wrapped<T, H> {
    /// The transport underneath.
    pub inner: T,
    /// The hooks.
    pub hooks: H,
}

impl<T, H> Wrapped<T, H> {
    /// `inner` seen through `hooks`.
    pub fn new(inner: T, hooks: H) -> Self {
        Self { inner, hooks }
    }
}

mad_core::transport_layer!([T: Transport, H] Wrapped<T, H>, inner: T);

/// Built on mad-core's [`TransportLayer`](mad_core::transport::TransportLayer):
/// `forward_transport!` writes what passes through unchanged, and only the
/// methods a hook can see or change are spelt out here.
impl<T: Transport, H: Hooks> Transport for Wrapped<T, H> {
    mad_core::forward_transport!(
        port_attrs,
        refresh_port_attrs,
        send_queue_depth,
        poll_send_completions,
        qp_state,
        modify_qp,
        recreate_queues
    );
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        match self.hooks.send(mad.qp(), mad.bytes(), dest) {
            Some(r) => r,
            None => self.inner.post(mad, dest, wait),
        }
    }
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        if let Some(e) = self.hooks.recv_error() {
            return Err(e);
        }
        loop {
            let r = match self.hooks.inject() {
                Some(r) => r,
                None => match self.inner.poll_recv()? {
                    Some(r) => r,
                    None => return Ok(None),
                },
            };
            if let Some(r) = self.hooks.received(r) {
                return Ok(Some(r));
            }
        }
    }
    fn raw_fd(&self) -> Option<RawFd> {
        self.hooks.raw_fd().unwrap_or_else(|| self.inner.raw_fd())
    }
    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.hooks.event().or_else(|| self.inner.poll_event())
    }
    fn bounded_far_side(&self) -> bool {
        match self.hooks.raw_fd() {
            Some(fd) => fd.is_some(),
            None => self.inner.bounded_far_side(),
        }
    }
    fn register_requests(
        &mut self,
        class: MgmtClass,
        class_version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        self.hooks.register(Registration {
            class,
            class_version,
            methods,
            oui,
        })?;
        self.inner
            .register_requests(class, class_version, methods, oui)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One registration a [`Recording`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// The class.
    pub class: MgmtClass,
    /// Its version.
    pub class_version: u8,
    /// Method bits.
    pub methods: u128,
    /// The OUI of a vendor range-2 class.
    pub oui: Option<[u8; 3]>,
}

/// What a [`Recording`] has seen, shared with the test.
#[derive(Debug, Default)]
pub struct Record {
    /// Every MAD posted, with its QP and destination.
    pub sent: Vec<(Qp, Vec<u8>, Address)>,
    /// Every registration asked for (refused ones included).
    pub registrations: Vec<Registration>,
    /// Refuse registrations with this message.
    pub refuse_register: Option<String>,
}

/// Records sends and registrations; can refuse registrations.
#[derive(Debug, Clone, Default)]
pub struct Recording(pub Arc<Mutex<Record>>);

impl Recording {
    /// A new recording and its shared record.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The record so far.
    pub fn record(&self) -> MutexGuard<'_, Record> {
        lock(&self.0)
    }
}

impl Hooks for Recording {
    fn send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Option<Result<WrId, TransportError>> {
        lock(&self.0).sent.push((qp, mad.to_vec(), *dest));
        None
    }
    fn register(&mut self, reg: Registration) -> Result<(), TransportError> {
        let mut r = lock(&self.0);
        r.registrations.push(reg);
        match &r.refuse_register {
            Some(msg) => Err(TransportError::Open(msg.clone())),
            None => Ok(()),
        }
    }
}

/// Which way a tapped MAD went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Posted by the stack.
    Sent,
    /// Received by the stack.
    Received,
}

/// What a [`Tap`] calls with every MAD.
pub type TapFn = Box<dyn FnMut(Way, &[u8]) + Send>;

/// Calls a function with every MAD sent and received (to write a capture,
/// count, or check an invariant).
pub struct Tap(pub TapFn);

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

impl Hooks for Tap {
    fn send(&mut self, _: Qp, mad: &[u8], _: &Address) -> Option<Result<WrId, TransportError>> {
        (self.0)(Way::Sent, mad);
        None
    }
    fn received(&mut self, r: Received) -> Option<Received> {
        (self.0)(Way::Received, r.mad.as_slice());
        Some(r)
    }
}

/// The descriptor a [`WithFd`] reports.
#[derive(Debug)]
pub enum Fd {
    /// None: the transport has no descriptor.
    None,
    /// A real socket (a doorbell the test rings); drained on every
    /// receive poll.
    Real(UnixStream),
    /// A number that is not an open descriptor (for error paths).
    Bogus(RawFd),
}

/// A chosen file descriptor, and an inbox other threads can fill with
/// MADs to receive (before the inner transport's).
#[derive(Debug)]
pub struct WithFd {
    /// The descriptor reported.
    pub fd: Fd,
    /// MADs to deliver, front first.
    pub inbox: Arc<Mutex<VecDeque<Received>>>,
}

impl WithFd {
    /// Reports `fd`, with an empty inbox.
    #[must_use]
    pub fn new(fd: Fd) -> Self {
        Self {
            fd,
            inbox: Arc::default(),
        }
    }

    /// A real descriptor and the socket that rings it: writing a byte to
    /// the returned stream makes the descriptor readable.
    ///
    /// # Errors
    /// When the socket pair cannot be made.
    pub fn doorbell() -> std::io::Result<(Self, UnixStream)> {
        let (a, b) = UnixStream::pair()?;
        a.set_nonblocking(true)?;
        Ok((Self::new(Fd::Real(a)), b))
    }
}

impl Hooks for WithFd {
    fn inject(&mut self) -> Option<Received> {
        if let Fd::Real(s) = &mut self.fd {
            let mut b = [0u8; 64];
            while matches!(s.read(&mut b), Ok(n) if n > 0) {}
        }
        lock(&self.inbox).pop_front()
    }
    fn raw_fd(&self) -> Option<Option<RawFd>> {
        Some(match &self.fd {
            Fd::None => None,
            Fd::Real(s) => Some(s.as_raw_fd()),
            Fd::Bogus(n) => Some(*n),
        })
    }
}

/// A [`Hooks`] made of two: `A` sees sends and receives first, then `B`.
#[derive(Debug)]
pub struct Both<A, B>(pub A, pub B);

impl<A: Hooks, B: Hooks> Hooks for Both<A, B> {
    fn send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Option<Result<WrId, TransportError>> {
        self.0
            .send(qp, mad, dest)
            .or_else(|| self.1.send(qp, mad, dest))
    }
    fn inject(&mut self) -> Option<Received> {
        self.0.inject().or_else(|| self.1.inject())
    }
    fn received(&mut self, r: Received) -> Option<Received> {
        self.0.received(r).and_then(|r| self.1.received(r))
    }
    fn register(&mut self, r: Registration) -> Result<(), TransportError> {
        self.0.register(r)?;
        self.1.register(r)
    }
    fn raw_fd(&self) -> Option<Option<RawFd>> {
        self.0.raw_fd().or_else(|| self.1.raw_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::transport::loopback::Loopback;
    use mad_core::wire::AttributeId;

    use crate::MadBuilder;

    fn port() -> Loopback {
        Loopback::new(Loopback::attrs("kit", 1, 1), 4)
    }

    #[test]
    fn recording_sees_sends_and_refuses_registrations() -> Result<(), TransportError> {
        let rec = Recording::new();
        rec.record().refuse_register = Some("method 1 taken".into());
        let mut w = Wrapped::new(port(), rec.clone());
        let mad = MadBuilder::perf_get(1, AttributeId::PM_PORT_COUNTERS)
            .tid(3)
            .build();
        w.post_send(Qp::Qp1, &mad, &Address::gsi(2))?;
        let refused = w.register_requests(MgmtClass::PERF_MGT, 1, 1 << 1, None);
        assert!(matches!(refused, Err(TransportError::Open(m)) if m == "method 1 taken"));
        let r = rec.record();
        assert_eq!(r.sent.len(), 1);
        assert_eq!(r.sent[0].1, mad.to_vec());
        assert_eq!(r.registrations[0].class, MgmtClass::PERF_MGT);
        Ok(())
    }

    #[test]
    fn with_fd_delivers_its_inbox_and_a_tap_sees_it() -> Result<(), Box<dyn std::error::Error>> {
        let (fd, mut bell) = WithFd::doorbell()?;
        let inbox = Arc::clone(&fd.inbox);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let tap = Tap(Box::new(move |way, mad: &[u8]| {
            lock(&s).push((way, crate::header::of(mad).mgmt_class))
        }));
        let mut w = Wrapped::new(port(), Both(fd, tap));
        assert!(w.raw_fd().is_some());
        assert!(w.bounded_far_side());
        let mad = MadBuilder::smp_get(AttributeId::NODE_INFO).build();
        lock(&inbox).push_back(Received {
            qp: Qp::Qp0,
            src: Address::smi(2),
            mad: mad[..].into(),
        });
        std::io::Write::write_all(&mut bell, &[1])?;
        let got = w.poll_recv()?.ok_or("the inbox MAD")?;
        assert_eq!(got.mad.as_slice(), &mad[..]);
        assert!(w.poll_recv()?.is_none());
        assert_eq!(*lock(&seen), [(Way::Received, MgmtClass::SUBN_LID_ROUTED)]);
        Ok(())
    }
}
