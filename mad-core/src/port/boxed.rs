//! `Box<dyn Transport>` is a transport: the default transport of a port.

use crate::transport::{Transport, TransportLayer};

/// A box is a layer over the transport it holds.
impl<T: Transport + ?Sized> TransportLayer for Box<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        self
    }
    fn inner_mut(&mut self) -> &mut T {
        self
    }
}

/// A boxed transport is a transport (the transport of the runtime's driver).
impl<T: Transport + ?Sized> Transport for Box<T> {
    crate::forward_transport!(control, post, poll_recv);
}
