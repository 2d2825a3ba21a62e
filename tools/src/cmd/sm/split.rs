//! One transport, two owners: [`split`] hands out a QP0 half (for the
//! SM's [`mad_sm::SmDriver`]) and a QP1 half (for the agent
//! [`mad_agents::Runtime`] that runs the SA responder) of the same port.
//!
//! ibsim delivers requests to a port's QP0 and QP1 only to the one client
//! that attached there as SM, and a umad port's SM owns the QP0 agents of
//! that port: so `mad sm` keeps a single transport and splits it by QP.
//! Whichever half polls drains the transport and queues what belongs to
//! the other half; send completions go to the half of their QP. The QP1
//! half has no file descriptor (the runtime then ticks, every
//! [`mad_agents::EngineConfig::fallback_tick`]): the QP0 half's thread
//! may have drained the SA's request from the shared descriptor already.
//! Asynchronous events go to the QP1 half (the runtime's port layer);
//! a dead device shows on the QP0 half as failed sends.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::umad::UmadTransport;
use mad_core::transport::{
    Address, AsyncEvent, OutMad, PortAttrs, Posted, Qp, QpState, Received, SendCompletion,
    Transport, TransportError,
};
use mad_core::wire::MgmtClass;

/// A transport the QP0 half can wait on.
pub trait Waitable: Transport {
    /// Waits up to `timeout` for a receive (or returns at once when the
    /// transport cannot wait).
    fn wait_for(&mut self, timeout: Duration);

    /// A descriptor that becomes readable when a receive may be ready,
    /// to wait on with the transport unlocked; None when something is
    /// ready now or the transport has none to offer.
    fn wait_fd(&mut self) -> Option<std::os::fd::RawFd> {
        None
    }
}

impl Waitable for IbSimTransport {
    fn wait_for(&mut self, timeout: Duration) {
        let _ = self.wait_readable(timeout);
    }

    fn wait_fd(&mut self) -> Option<std::os::fd::RawFd> {
        match self.wait_readable(Duration::ZERO) {
            Ok(false) => self.raw_fd(),
            _ => None,
        }
    }
}

impl Waitable for UmadTransport {
    fn wait_for(&mut self, timeout: Duration) {
        // libumad2sim hands out descriptors no poll(2) may see; a short
        // sleep bounds the delay instead.
        std::thread::sleep(timeout.min(Duration::from_micros(200)));
    }
}

impl Waitable for mad_sim::SimPort {
    fn wait_for(&mut self, timeout: Duration) {
        // The built-in fabric answers inside the post; what else arrives
        // (traps, SA queries of other endpoints) waits a short sleep.
        std::thread::sleep(timeout.min(Duration::from_micros(200)));
    }
}

impl Waitable for mad_sim::FaultyPort {
    fn wait_for(&mut self, timeout: Duration) {
        // As a plain SimPort: the device faults come with the next poll.
        std::thread::sleep(timeout.min(Duration::from_micros(200)));
    }
}

struct Shared<T> {
    inner: T,
    recv: [VecDeque<Received>; 2],
    done: [Vec<SendCompletion>; 2],
    scratch: Vec<SendCompletion>,
}

/// One QP's half of a split transport (see the module docs).
pub struct Half<T> {
    shared: Arc<Mutex<Shared<T>>>,
    qp: Qp,
    attrs: PortAttrs,
    /// What [`Half::wait`] waits in, made at its first wait on a
    /// transport with a [`Waitable::wait_fd`].
    waiter: Option<(mio::Poll, mio::Events)>,
}

/// Splits `t` into its QP0 half and its QP1 half.
pub fn split<T: Transport>(t: T) -> (Half<T>, Half<T>) {
    let attrs = t.port_attrs().clone();
    let shared = Arc::new(Mutex::new(Shared {
        inner: t,
        recv: [VecDeque::new(), VecDeque::new()],
        done: [Vec::new(), Vec::new()],
        scratch: Vec::new(),
    }));
    let half = |qp| Half {
        shared: shared.clone(),
        qp,
        attrs: attrs.clone(),
        waiter: None,
    };
    (half(Qp::Qp0), half(Qp::Qp1))
}

impl<T> Half<T> {
    fn lock(&self) -> MutexGuard<'_, Shared<T>> {
        match self.shared.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

impl<T: Waitable> Half<T> {
    /// Waits up to `timeout` (at most 1 ms at a time) for something to
    /// receive.
    ///
    /// The transport is only looked at under the lock (what has arrived
    /// is drained); the wait itself is made with the transport unlocked,
    /// so the other half (the SA's runtime) can receive and send
    /// meanwhile: over ibsim in epoll on the data socket (woken as soon as
    /// a datagram arrives), else a sleep. Waiting under the lock held the
    /// SA's answers back for milliseconds per query: osmtest's
    /// 4,002-query flood took 52 s against mad sm over ibsim, 0.5 s
    /// against OpenSM.
    pub fn wait(&mut self, timeout: Duration) {
        let timeout = timeout.min(Duration::from_millis(1));
        let fd = {
            let mut g = self.lock();
            if !g.recv[self.qp.index()].is_empty() {
                return;
            }
            match g.inner.wait_fd() {
                Some(fd) => fd,
                None => {
                    g.inner.wait_for(Duration::ZERO);
                    drop(g);
                    std::thread::sleep(timeout.min(Duration::from_micros(200)));
                    return;
                }
            }
        };
        if self.waiter.is_none() {
            self.waiter = mio::Poll::new().ok().and_then(|p| {
                p.registry()
                    .register(
                        &mut mio::unix::SourceFd(&fd),
                        mio::Token(0),
                        mio::Interest::READABLE,
                    )
                    .ok()
                    .map(|()| (p, mio::Events::with_capacity(4)))
            });
        }
        match self.waiter.as_mut() {
            Some((p, ev)) => {
                let _ = p.poll(ev, Some(timeout));
            }
            None => std::thread::sleep(timeout.min(Duration::from_micros(200))),
        }
    }
}

impl<T: Transport> Transport for Half<T> {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        let a = {
            let mut g = self.lock();
            g.inner.refresh_port_attrs()?;
            g.inner.port_attrs().clone()
        };
        self.attrs = a;
        Ok(())
    }

    fn send_queue_depth(&self) -> usize {
        self.lock().inner.send_queue_depth()
    }

    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        self.lock().inner.post(mad, dest, wait)
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        let mut g = self.lock();
        let g = &mut *g;
        g.scratch.clear();
        g.inner.poll_send_completions(&mut g.scratch)?;
        for c in g.scratch.drain(..) {
            g.done[c.qp.index()].push(c);
        }
        let mine = &mut g.done[self.qp.index()];
        let n = mine.len();
        out.append(mine);
        Ok(n)
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        let mut g = self.lock();
        if let Some(r) = g.recv[self.qp.index()].pop_front() {
            return Ok(Some(r));
        }
        while let Some(r) = g.inner.poll_recv()? {
            if r.qp == self.qp {
                return Ok(Some(r));
            }
            g.recv[r.qp.index()].push_back(r);
        }
        Ok(None)
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        if self.qp == Qp::Qp1 {
            self.lock().inner.poll_event()
        } else {
            None
        }
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        self.lock().inner.qp_state(qp)
    }

    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        self.lock().inner.modify_qp(qp, to)
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        self.lock().inner.recreate_queues()
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    fn bounded_far_side(&self) -> bool {
        true
    }

    fn register_requests(
        &mut self,
        class: MgmtClass,
        class_version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        self.lock()
            .inner
            .register_requests(class, class_version, methods, oui)
    }
}
