//! One way to wrap a [`Transport`]: [`TransportLayer`] names the wrapped
//! transport, and [`forward_transport!`](crate::forward_transport) writes
//! the methods a wrapper passes through unchanged, so that a wrapper spells
//! out only what it changes.
//!
//! ```
//! use mad_core::{forward_transport, transport_layer};
//! use mad_core::transport::loopback::Loopback;
//! use mad_core::transport::{Received, Transport, TransportError};
//!
//! /// Counts what it receives; everything else goes to the inner transport.
//! struct Counting<T> {
//!     inner: T,
//!     received: usize,
//! }
//!
//! transport_layer!([T: Transport] Counting<T>, inner: T);
//!
//! impl<T: Transport> Transport for Counting<T> {
//!     fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
//!         let r = self.inner.poll_recv()?;
//!         self.received += usize::from(r.is_some());
//!         Ok(r)
//!     }
//!     forward_transport!(control, post);
//! }
//!
//! let mut c = Counting { inner: Loopback::new(Loopback::attrs("lb0", 1, 1), 4), received: 0 };
//! assert!(c.poll_recv().unwrap().is_none());
//! assert_eq!(c.port_attrs().lid, 1);
//! ```

use super::Transport;

/// A transport that wraps another: the inner transport, for
/// [`forward_transport!`](crate::forward_transport) to pass methods to.
/// (There is deliberately no blanket `impl Transport for` every layer: it
/// would collide with `impl Transport for Box<T>`.)
pub trait TransportLayer {
    /// The wrapped transport.
    type Inner: Transport + ?Sized;
    /// The wrapped transport.
    fn inner(&self) -> &Self::Inner;
    /// The wrapped transport, mutably.
    fn inner_mut(&mut self) -> &mut Self::Inner;
}

/// Implements [`TransportLayer`](crate::transport::TransportLayer) for a
/// wrapper that holds its inner transport in a field:
/// `transport_layer!(Wrapper, inner: Loopback);`, or for a generic one
/// `transport_layer!([T: Transport] Wrapper<T>, inner: T);`.
#[macro_export]
macro_rules! transport_layer {
    ([$($g:tt)*] $ty:ty, $field:ident: $inner:ty) => {
        impl<$($g)*> $crate::transport::TransportLayer for $ty {
            type Inner = $inner;
            fn inner(&self) -> &$inner {
                &self.$field
            }
            fn inner_mut(&mut self) -> &mut $inner {
                &mut self.$field
            }
        }
    };
    ($ty:ty, $field:ident: $inner:ty) => {
        $crate::transport_layer!([] $ty, $field: $inner);
    };
}

/// Inside `impl Transport for W` where `W:`
/// [`TransportLayer`](crate::transport::TransportLayer): writes each named
/// [`Transport`](crate::transport::Transport) method as a call of the same
/// method on the inner transport. Name every method the impl does not
/// write itself (a missing one is a compile error, as in any impl; a
/// provided method left out keeps its default). `control` names every
/// method but the two that carry MADs, `post` and `poll_recv` (what a
/// tap changes): `forward_transport!(control, poll_recv)` is a wrapper
/// that writes only `post`.
#[macro_export]
macro_rules! forward_transport {
    ($($method:ident),+ $(,)?) => {
        $( $crate::forward_transport!(@one $method); )+
    };
    (@one control) => {
        $crate::forward_transport!(
            port_attrs,
            refresh_port_attrs,
            send_queue_depth,
            poll_send_completions,
            poll_event,
            qp_state,
            modify_qp,
            recreate_queues,
            raw_fd,
            watch_fd,
            bounded_far_side,
            register_requests,
        );
    };
    (@one port_attrs) => {
        fn port_attrs(&self) -> &$crate::transport::PortAttrs {
            $crate::transport::TransportLayer::inner(self).port_attrs()
        }
    };
    (@one refresh_port_attrs) => {
        fn refresh_port_attrs(&mut self) -> ::std::result::Result<(), $crate::transport::TransportError> {
            $crate::transport::TransportLayer::inner_mut(self).refresh_port_attrs()
        }
    };
    (@one send_queue_depth) => {
        fn send_queue_depth(&self) -> usize {
            $crate::transport::TransportLayer::inner(self).send_queue_depth()
        }
    };
    (@one post) => {
        fn post(
            &mut self,
            mad: $crate::transport::OutMad<'_>,
            dest: &$crate::transport::Address,
            wait: ::std::time::Duration,
        ) -> $crate::transport::Posted {
            $crate::transport::TransportLayer::inner_mut(self).post(mad, dest, wait)
        }
    };
    (@one poll_send_completions) => {
        fn poll_send_completions(
            &mut self,
            out: &mut ::std::vec::Vec<$crate::transport::SendCompletion>,
        ) -> ::std::result::Result<usize, $crate::transport::TransportError> {
            $crate::transport::TransportLayer::inner_mut(self).poll_send_completions(out)
        }
    };
    (@one poll_recv) => {
        fn poll_recv(
            &mut self,
        ) -> ::std::result::Result<
            ::std::option::Option<$crate::transport::Received>,
            $crate::transport::TransportError,
        > {
            $crate::transport::TransportLayer::inner_mut(self).poll_recv()
        }
    };
    (@one poll_event) => {
        fn poll_event(&mut self) -> ::std::option::Option<$crate::transport::AsyncEvent> {
            $crate::transport::TransportLayer::inner_mut(self).poll_event()
        }
    };
    (@one qp_state) => {
        fn qp_state(&self, qp: $crate::transport::Qp) -> $crate::transport::QpState {
            $crate::transport::TransportLayer::inner(self).qp_state(qp)
        }
    };
    (@one modify_qp) => {
        fn modify_qp(
            &mut self,
            qp: $crate::transport::Qp,
            to: $crate::transport::QpState,
        ) -> ::std::result::Result<(), $crate::transport::TransportError> {
            $crate::transport::TransportLayer::inner_mut(self).modify_qp(qp, to)
        }
    };
    (@one recreate_queues) => {
        fn recreate_queues(&mut self) -> ::std::result::Result<(), $crate::transport::TransportError> {
            $crate::transport::TransportLayer::inner_mut(self).recreate_queues()
        }
    };
    (@one raw_fd) => {
        fn raw_fd(&self) -> ::std::option::Option<::std::os::fd::RawFd> {
            $crate::transport::TransportLayer::inner(self).raw_fd()
        }
    };
    (@one bounded_far_side) => {
        fn bounded_far_side(&self) -> bool {
            $crate::transport::TransportLayer::inner(self).bounded_far_side()
        }
    };
    (@one watch_fd) => {
        fn watch_fd(&mut self, watched: bool) {
            $crate::transport::TransportLayer::inner_mut(self).watch_fd(watched)
        }
    };
    (@one register_requests) => {
        fn register_requests(
            &mut self,
            class: $crate::wire::MgmtClass,
            class_version: u8,
            methods: u128,
            oui: ::std::option::Option<[u8; 3]>,
        ) -> ::std::result::Result<(), $crate::transport::TransportError> {
            $crate::transport::TransportLayer::inner_mut(self)
                .register_requests(class, class_version, methods, oui)
        }
    };
}
