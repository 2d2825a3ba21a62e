//! Sharing one port among several clients: a registry of ports keyed by
//! CA name and port number, handing out reference-counted handles.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use crate::transport::{Address, Qp, Transport, TransportError};
use crate::wire::MgmtClass;

use super::{ClientId, Port, PortConfig, PortError, PortEvent, SendToken};

/// Opens the transport of a port: `(ca_name, port_num)` → transport.
pub type TransportFactory<T> =
    Box<dyn FnMut(&str, u8) -> Result<T, TransportError> + Send + 'static>;

struct Shared<T: Transport> {
    ca: String,
    port_num: u8,
    port: Mutex<Port<T>>,
}

/// Live ports by (CA name, port number).
type PortMap<T> = HashMap<(String, u8), Weak<Shared<T>>>;

struct Inner<T: Transport> {
    ports: Mutex<PortMap<T>>,
    factory: Mutex<TransportFactory<T>>,
    config: PortConfig,
}

/// Hands out [`PortHandle`]s: every handle to the same (CA, port) shares one
/// [`Port`] and so one transport (QPs, CQ, registrations). The transport is
/// opened through the factory by the first [`PortRegistry::open`] and
/// dropped exactly when the last handle to it is dropped; a later `open`
/// opens it afresh. Cloning the registry shares it.
pub struct PortRegistry<T: Transport> {
    inner: Arc<Inner<T>>,
}

impl<T: Transport> Clone for PortRegistry<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Transport> std::fmt::Debug for PortRegistry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortRegistry")
            .field("open_ports", &self.open_ports())
            .finish_non_exhaustive()
    }
}

fn lock<U>(m: &Mutex<U>) -> MutexGuard<'_, U> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T: Transport> PortRegistry<T> {
    /// A registry opening transports with `factory` and default settings.
    pub fn new(
        factory: impl FnMut(&str, u8) -> Result<T, TransportError> + Send + 'static,
    ) -> Self {
        Self::with_config(factory, PortConfig::default())
    }

    /// A registry whose ports use `config`.
    pub fn with_config(
        factory: impl FnMut(&str, u8) -> Result<T, TransportError> + Send + 'static,
        config: PortConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                ports: Mutex::new(HashMap::new()),
                factory: Mutex::new(Box::new(factory)),
                config,
            }),
        }
    }

    /// Opens port `port_num` of `ca`: a new client of the shared port,
    /// opening the transport if no handle to it is alive.
    ///
    /// Do not call `open` from inside the factory (it would deadlock).
    ///
    /// # Errors
    /// Whatever the factory returns (a missing device, a port that does not
    /// exist, ...).
    pub fn open(&self, ca: &str, port_num: u8) -> Result<PortHandle<T>, TransportError> {
        let mut ports = lock(&self.inner.ports);
        let key = (ca.to_owned(), port_num);
        let shared = match ports.get(&key).and_then(Weak::upgrade) {
            Some(s) => s,
            None => {
                let transport = (lock(&self.inner.factory))(ca, port_num)?;
                let s = Arc::new(Shared {
                    ca: ca.to_owned(),
                    port_num,
                    port: Mutex::new(Port::new(transport, self.inner.config.clone())),
                });
                ports.retain(|_, w| w.strong_count() > 0);
                ports.insert(key, Arc::downgrade(&s));
                s
            }
        };
        drop(ports);
        let client = lock(&shared.port).register();
        Ok(PortHandle { shared, client })
    }

    /// Ports with at least one live handle.
    #[must_use]
    pub fn open_ports(&self) -> usize {
        lock(&self.inner.ports)
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

/// One client's handle to a shared port. Dropping it unregisters the
/// client (see [`Port::unregister`]); dropping the last handle of a port
/// drops the port and its transport.
///
/// Do not hold the guard of [`PortHandle::lock`] while dropping another
/// handle of the same port on the same thread (it would deadlock).
pub struct PortHandle<T: Transport> {
    shared: Arc<Shared<T>>,
    client: ClientId,
}

impl<T: Transport> std::fmt::Debug for PortHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortHandle")
            .field("ca", &self.shared.ca)
            .field("port", &self.shared.port_num)
            .field("client", &self.client)
            .finish()
    }
}

impl<T: Transport> PortHandle<T> {
    /// This handle's client id on the port.
    #[must_use]
    pub fn client(&self) -> ClientId {
        self.client
    }

    /// The CA name it was opened with.
    #[must_use]
    pub fn ca_name(&self) -> &str {
        &self.shared.ca
    }

    /// The port number it was opened with.
    #[must_use]
    pub fn port_num(&self) -> u8 {
        self.shared.port_num
    }

    /// True if both handles share one port (and one transport).
    #[must_use]
    pub fn shares_port_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Live handles to this port.
    #[must_use]
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.shared)
    }

    /// The shared port, locked.
    pub fn lock(&self) -> MutexGuard<'_, Port<T>> {
        lock(&self.shared.port)
    }

    /// [`Port::post`] as this client.
    ///
    /// # Errors
    /// As [`Port::post`].
    pub fn post(
        &self,
        qp: Qp,
        mad: &[u8],
        dest: &Address,
        cookie: u64,
    ) -> Result<SendToken, PortError> {
        self.lock().post(self.client, qp, mad, dest, cookie)
    }

    /// [`Port::poll`].
    pub fn poll(&self, now: Instant) {
        self.lock().poll(now);
    }

    /// [`Port::poll_client`] for this client.
    #[must_use]
    pub fn next_event(&self) -> Option<PortEvent> {
        self.lock().poll_client(self.client)
    }

    /// [`Port::ack_reset`] as this client.
    ///
    /// # Errors
    /// As [`Port::ack_reset`].
    pub fn ack_reset(&self) -> Result<(), PortError> {
        self.lock().ack_reset(self.client)
    }

    /// [`Port::subscribe`] as this client.
    ///
    /// # Errors
    /// As [`Port::subscribe`].
    pub fn subscribe(&self, qp: Qp, class: MgmtClass) -> Result<(), PortError> {
        self.lock().subscribe(self.client, qp, class)
    }
}

impl<T: Transport> Drop for PortHandle<T> {
    fn drop(&mut self) {
        // Unknown only if the port was told to unregister us already.
        let _ = self.lock().unregister(self.client);
    }
}
