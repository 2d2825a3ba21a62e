//! `Box<dyn Transport>` is a transport: the default transport of a port.

use crate::transport::{
    Address, AsyncEvent, PortAttrs, Qp, QpState, Received, SendCompletion, Transport,
    TransportError, WrId,
};

/// A boxed transport is a transport (the default of [`Port`](super::Port)).
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn port_attrs(&self) -> &PortAttrs {
        (**self).port_attrs()
    }
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        (**self).refresh_port_attrs()
    }
    fn send_queue_depth(&self) -> usize {
        (**self).send_queue_depth()
    }
    fn post_send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Result<WrId, TransportError> {
        (**self).post_send(qp, mad, dest)
    }
    fn post_request(
        &mut self,
        qp: Qp,
        mad: &[u8],
        dest: &Address,
        wait: std::time::Duration,
    ) -> Result<WrId, TransportError> {
        (**self).post_request(qp, mad, dest, wait)
    }
    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        (**self).poll_send_completions(out)
    }
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        (**self).poll_recv()
    }
    fn poll_event(&mut self) -> Option<AsyncEvent> {
        (**self).poll_event()
    }
    fn qp_state(&self, qp: Qp) -> QpState {
        (**self).qp_state(qp)
    }
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        (**self).modify_qp(qp, to)
    }
    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        (**self).recreate_queues()
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        (**self).raw_fd()
    }

    fn bounded_far_side(&self) -> bool {
        (**self).bounded_far_side()
    }
    fn register_requests(
        &mut self,
        class: crate::wire::MgmtClass,
        class_version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        (**self).register_requests(class, class_version, methods, oui)
    }
}
