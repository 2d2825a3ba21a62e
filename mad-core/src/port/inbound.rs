//! A received MAD parsed once, at the port boundary: [`Inbound`].
//!
//! The transport delivers bytes ([`Received`]); the port checks their
//! common header with the wire crate's views, refuses what is not a MAD
//! of the QP it arrived on, and routes the checked value, whose typed
//! accessors (common header, RMPP header for a class that carries one,
//! vendor OUI) read the bytes through the same views. Nothing above the
//! port reads raw header offsets again.

use std::sync::Arc;

use crate::transport::{Address, Qp, Received};
use crate::wire::rmpp::{RmppHeader, RmppType, RmppView, RMPP_FLAG_ACTIVE};
use crate::wire::vendor::VendorMad;
use crate::wire::{Mad, MadHeader, Method, MgmtClass, RMPP_HEADER_END, VENDOR_DATA_OFFSET};

/// Accessors of [`Inbound`] that read one field of the common header
/// through its view: `name: Type = view_accessor;`.
macro_rules! header_fields {
    ($($(#[$doc:meta])* $name:ident: $ty:ty = $view:ident;)*) => {$(
        $(#[$doc])*
        #[must_use]
        #[inline]
        pub fn $name(&self) -> $ty {
            self.view().$view()
        }
    )*};
}

/// Why a received buffer is not an [`Inbound`] MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboundError {
    /// Shorter than the 24-byte common header.
    #[error("{0} bytes are shorter than a MAD header")]
    Truncated(usize),
    /// Base version other than 1.
    #[error("base version {0} is not 1")]
    BaseVersion(u8),
    /// An SMP class on QP1 or a GSI class on QP0.
    #[error("class {class:#04x} does not belong on {qp:?}")]
    WrongQp {
        /// The management class.
        class: u8,
        /// The QP it arrived on.
        qp: Qp,
    },
}

/// A received MAD, checked: at least a common header of base version 1,
/// of a class that belongs on the QP it arrived on. Its common header,
/// its RMPP header when its class carries one, and its vendor OUI for
/// vendor range 2 (classes 0x30-0x4F) are read from the bytes (shared,
/// not copied) when asked for: the value is one pointer, so handing it
/// from the port to a client and on costs nothing, and a field nobody
/// asks for is never decoded.
///
/// ```
/// use mad_core::port::Inbound;
/// use mad_core::transport::{Address, Qp, Received};
/// use mad_core::wire::{Method, MgmtClass};
///
/// let mut mad = [0u8; 256];
/// mad[..4].copy_from_slice(&[1, MgmtClass::PERF_MGT.0, 1, Method::GET.0]);
/// let r = Received { qp: Qp::Qp1, src: Address::gsi(3), mad: mad.as_slice().into() };
/// let m = Inbound::parse(r).unwrap();
/// assert_eq!(m.class(), MgmtClass::PERF_MGT);
/// assert!(!m.is_response() && m.rmpp().is_none() && m.oui().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    received: Arc<Received>,
}

impl Inbound {
    /// Checks what a transport delivered.
    ///
    /// # Errors
    /// [`InboundError`]: too short for a header, a base version other
    /// than 1, or a class that does not belong on its QP.
    pub fn parse(received: Received) -> Result<Self, InboundError> {
        let m = Mad::new_checked(&received.mad[..])
            .map_err(|_| InboundError::Truncated(received.mad.len()))?;
        if m.base_version() != 1 {
            return Err(InboundError::BaseVersion(m.base_version()));
        }
        let class = m.mgmt_class();
        if class.is_smp() != (received.qp == Qp::Qp0) {
            return Err(InboundError::WrongQp {
                class: class.0,
                qp: received.qp,
            });
        }
        Ok(Self {
            received: Arc::new(received),
        })
    }

    /// The common header, as a view of the bytes (at least 24 of them).
    #[inline]
    fn view(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.bytes())
    }

    /// The bytes from the RMPP header on, for a class that carries one
    /// and a MAD long enough to hold it.
    #[inline]
    fn rmpp_view(&self) -> Option<RmppView<&[u8]>> {
        let bytes = self.bytes();
        (self.class().is_rmpp_class() && bytes.len() >= RMPP_HEADER_END)
            .then(|| RmppView::new_unchecked(bytes))
    }

    /// The common header.
    #[must_use]
    #[inline]
    pub fn header(&self) -> MadHeader {
        // `parse` checked the length, so this never falls back.
        self.view().header().unwrap_or_default()
    }

    header_fields! {
        /// The management class.
        class: MgmtClass = mgmt_class;
        /// The class version.
        class_version: u8 = class_version;
        /// The method, without the response bit.
        method: Method = method;
        /// The transaction ID as received.
        tid: u64 = tid;
        /// The method byte as on the wire (response bit included).
        method_byte: u8 = raw_method;
        /// True when it is routed as a response, by TID
        /// ([`MadHeader::is_response`]).
        is_response: bool = is_response;
    }

    /// The RMPP header, for a class that carries one (whether or not its
    /// Active flag is set).
    #[must_use]
    #[inline]
    pub fn rmpp(&self) -> Option<RmppHeader> {
        self.rmpp_view().and_then(|v| v.header().ok())
    }

    /// The RMPP type of a MAD whose RMPP header has the Active flag set:
    /// it belongs to an RMPP transfer.
    #[must_use]
    #[inline]
    pub fn rmpp_active(&self) -> Option<RmppType> {
        self.rmpp_view()
            .filter(|v| v.flags() & RMPP_FLAG_ACTIVE != 0)
            .map(|v| v.rmpp_type())
    }

    /// The IEEE OUI of a vendor range-2 MAD.
    #[must_use]
    #[inline]
    pub fn oui(&self) -> Option<u32> {
        let bytes = self.bytes();
        (self.class().is_vendor_range2() && bytes.len() >= VENDOR_DATA_OFFSET)
            .then(|| VendorMad::new_unchecked(bytes).oui())
    }

    /// The QP it arrived on.
    #[must_use]
    #[inline]
    pub fn qp(&self) -> Qp {
        self.received.qp
    }

    /// Where it came from.
    #[must_use]
    #[inline]
    pub fn src(&self) -> &Address {
        &self.received.src
    }

    /// The bytes.
    #[must_use]
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.received.mad
    }

    /// The received MAD itself (shared with every other holder).
    #[must_use]
    #[inline]
    pub fn received(&self) -> &Arc<Received> {
        &self.received
    }

    /// The received MAD itself, taking this value's reference to it.
    #[must_use]
    #[inline]
    pub fn into_received(self) -> Arc<Received> {
        self.received
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::wire::{AttributeId, MadStatus};
    use mad_testkit_wire::{header, MadBuilder};

    fn received(qp: Qp, head: &[u8], len: usize) -> Received {
        let mut mad = vec![0u8; len];
        mad[..head.len()].copy_from_slice(head);
        Received {
            qp,
            src: Address::gsi(7),
            mad: mad.as_slice().into(),
        }
    }

    #[test]
    fn what_is_not_a_mad_of_its_qp_is_refused_with_the_reason() {
        assert_eq!(
            Inbound::parse(received(Qp::Qp1, &[1, 4], 23)),
            Err(InboundError::Truncated(23))
        );
        assert_eq!(
            Inbound::parse(received(Qp::Qp1, &[2, 4], 256)),
            Err(InboundError::BaseVersion(2))
        );
        assert_eq!(
            Inbound::parse(received(Qp::Qp1, &[1, 0x81], 256)),
            Err(InboundError::WrongQp {
                class: 0x81,
                qp: Qp::Qp1
            })
        );
        assert!(Inbound::parse(received(Qp::Qp0, &[1, 4], 256)).is_err());
    }

    #[test]
    fn rmpp_header_and_oui_come_with_the_classes_that_carry_them() {
        // SA GetTableResp, RMPP DATA with Active | First.
        let mut head = [0u8; 28];
        header::edit(&mut head, |h| {
            *h = MadBuilder::new(MgmtClass::SUBN_ADM, 2, Method::GET_TABLE, AttributeId(0))
                .response(MadStatus::SUCCESS)
                .tid(0x1234)
                .header();
        });
        let mut rmpp = RmppView::new_unchecked(&mut head[..]);
        rmpp.set_version(1);
        rmpp.set_rmpp_type(RmppType::DATA);
        rmpp.set_flags(RMPP_FLAG_ACTIVE | crate::wire::rmpp::RMPP_FLAG_FIRST);
        let m = Inbound::parse(received(Qp::Qp1, &head, 256)).unwrap();
        assert!(m.is_response());
        assert_eq!(m.tid(), 0x1234);
        assert_eq!(m.method_byte(), 0x92);
        assert_eq!(m.rmpp_active(), Some(RmppType::DATA));
        assert_eq!(m.oui(), None);
        // The same bytes as PerfMgt: no RMPP header.
        header::edit(&mut head, |h| h.mgmt_class = MgmtClass::PERF_MGT);
        let m = Inbound::parse(received(Qp::Qp1, &head, 256)).unwrap();
        assert!(m.rmpp().is_none());
        // Vendor range 2: OUI from bytes 37..40, RMPP header too.
        let mut head = [0u8; 40];
        header::edit(&mut head, |h| {
            *h = MadBuilder::new(MgmtClass(0x30), 1, Method::GET, AttributeId(0)).header();
        });
        head[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
        let m = Inbound::parse(received(Qp::Qp1, &head, 256)).unwrap();
        assert_eq!(m.oui(), Some(0x0000_1405));
        assert!(m.rmpp().is_some() && m.rmpp_active().is_none());
        // Too short for the OUI: none.
        let m = Inbound::parse(received(Qp::Qp1, &head[..24], 24)).unwrap();
        assert_eq!(m.oui(), None);
    }
}
