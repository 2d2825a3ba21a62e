//! Communication Management MADs (class 0x07, IBTA vol. 1 ch. 12): the
//! common header, then 232 bytes of CM data from byte 24 (no RMPP, no
//! class header). Every message is a lossless `wire_struct!` `Repr` over
//! those 232 bytes, private data included; [`CmMessage`] picks the right
//! one by attribute ID, and [`cma`] holds the rdma_cm private-data header.
//!
//! ```
//! use mad_wire::wire::cm::{CmMessage, CmRtu};
//! let rtu = CmMessage::Rtu(Box::new(CmRtu { local_comm_id: 7, remote_comm_id: 9, ..CmRtu::default() }));
//! let mad = rtu.to_mad(0x42).unwrap();
//! assert_eq!((mad[1], mad[2], mad[3]), (0x07, 2, 0x03)); // CM, version 2, Send
//! assert_eq!(CmMessage::parse(&mad).unwrap(), rtu);
//! ```

pub mod cma;
mod connect;
mod disconnect;
mod enums;
mod lap;
mod sidr;

pub use connect::{CmMra, CmRej, CmRep, CmReq, CmRtu};
pub use disconnect::{CmDrep, CmDreq};
pub use enums::*;
pub use lap::{CmApr, CmLap};
pub use sidr::{CmSidrRep, CmSidrReq};

use super::attr::ClassPortInfo;
use super::{AttributeId, Error, MadHeader, Method, MgmtClass, Repr, MAD_HEADER_LEN, MAD_LEN};

/// The CM class version (IBA 1.2 and later).
pub const CM_CLASS_VERSION: u8 = 2;
/// Where CM data starts.
pub const CM_DATA_OFFSET: usize = MAD_HEADER_LEN;
/// Bytes of CM data in a MAD.
pub const CM_DATA_LEN: usize = MAD_LEN - CM_DATA_OFFSET;

macro_rules! cm_messages {
    ($( $(#[$m:meta])* $var:ident($ty:ty) = $attr:ident, )*) => {
        /// One CM message, by attribute.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum CmMessage {
            $( $(#[$m])* $var(Box<$ty>), )*
        }

        impl CmMessage {
            /// The attribute ID this message travels under.
            #[must_use]
            pub fn attr_id(&self) -> AttributeId {
                match self { $( Self::$var(_) => $attr, )* }
            }

            /// Parses the CM data of a MAD whose attribute is `attr`.
            ///
            /// # Errors
            /// [`Error::Truncated`] for short data, [`Error::Invalid`] for an
            /// attribute that is not a CM message.
            pub fn parse_attr(attr: AttributeId, data: &[u8]) -> Result<Self, Error> {
                $( if attr == $attr { return Ok(Self::$var(Box::new(<$ty>::parse(data)?))); } )*
                Err(Error::Invalid {
                    what: "CmMessage",
                    field: "attr_id",
                    value: u64::from(attr.0),
                    reason: "not a CM message attribute",
                })
            }

            /// Writes the message's 232 bytes of CM data.
            ///
            /// # Errors
            /// As [`Repr::emit`].
            pub fn emit_data(&self, data: &mut [u8]) -> Result<(), Error> {
                match self { $( Self::$var(m) => m.emit(data), )* }
            }

            /// Display name, parser and length of the CM attribute `attr`,
            /// for the generic decoder.
            pub(crate) fn decode_known(attr: AttributeId) -> Option<(&'static str, super::decode::ParseFn, usize)> {
                $( if attr == $attr {
                    return Some((attribute_name(attr).unwrap_or("CM"), super::decode::boxed::<$ty>, <$ty>::LEN));
                } )*
                None
            }

            /// The message as a reflective structure (for printers).
            #[must_use]
            pub fn fields(&self) -> &dyn super::Fields {
                match self { $( Self::$var(m) => m.as_ref(), )* }
            }
        }
    };
}

cm_messages! {
    /// ClassPortInfo of the CM class (Get / GetResp).
    ClassPortInfo(ClassPortInfo) = ATTR_CLASS_PORT_INFO,
    /// REQ.
    Req(CmReq) = ATTR_REQ,
    /// MRA.
    Mra(CmMra) = ATTR_MRA,
    /// REJ.
    Rej(CmRej) = ATTR_REJ,
    /// REP.
    Rep(CmRep) = ATTR_REP,
    /// RTU.
    Rtu(CmRtu) = ATTR_RTU,
    /// DREQ.
    Dreq(CmDreq) = ATTR_DREQ,
    /// DREP.
    Drep(CmDrep) = ATTR_DREP,
    /// SIDR_REQ.
    SidrReq(CmSidrReq) = ATTR_SIDR_REQ,
    /// SIDR_REP.
    SidrRep(CmSidrRep) = ATTR_SIDR_REP,
    /// LAP.
    Lap(CmLap) = ATTR_LAP,
    /// APR.
    Apr(CmApr) = ATTR_APR,
}

/// See [`CmMessage::decode_known`].
pub(crate) fn decode_known(
    attr: AttributeId,
) -> Option<(&'static str, super::decode::ParseFn, usize)> {
    CmMessage::decode_known(attr)
}

/// The rdma_cm header in a REQ or SIDR_REQ MAD `mad`, with its offset in
/// the MAD: present when the service ID is in an rdma_cm IP port space and
/// the header's versions are valid.
pub(crate) fn cma_header_in(attr: AttributeId, mad: &[u8]) -> Option<(usize, cma::CmaHeader)> {
    let data = mad.get(CM_DATA_OFFSET..MAD_LEN)?;
    let (service_id, pd_offset) = match CmMessage::parse_attr(attr, data).ok()? {
        CmMessage::Req(r) => (r.service_id, 140),
        CmMessage::SidrReq(r) => (r.service_id, 16),
        _ => return None,
    };
    cma::split_service_id(service_id)?;
    let h = cma::CmaHeader::parse(data.get(pd_offset..)?).ok()?;
    h.addrs().ok()?;
    Some((CM_DATA_OFFSET + pd_offset, h))
}

impl CmMessage {
    /// Parses a whole CM MAD (class 0x07, at least 256 bytes).
    ///
    /// # Errors
    /// [`Error::Truncated`] for a short buffer, [`Error::Invalid`] for
    /// another class or an attribute that is not a CM message.
    pub fn parse(mad: &[u8]) -> Result<Self, Error> {
        let hdr = MadHeader::parse(mad)?;
        if hdr.mgmt_class != MgmtClass::COM_MGT {
            return Err(Error::Invalid {
                what: "CmMessage",
                field: "mgmt_class",
                value: u64::from(hdr.mgmt_class.0),
                reason: "not a CM MAD (class 0x07)",
            });
        }
        if mad.len() < MAD_LEN {
            return Err(Error::Truncated {
                what: "CmMessage",
                need: MAD_LEN,
                got: mad.len(),
            });
        }
        Self::parse_attr(hdr.attr_id, &mad[CM_DATA_OFFSET..MAD_LEN])
    }

    /// The common header a CM message is sent with: class 0x07, version 2,
    /// method Send (ClassPortInfo: Get), transaction ID `tid`.
    #[must_use]
    pub fn header(&self, tid: u64) -> MadHeader {
        let method = match self {
            Self::ClassPortInfo(_) => Method::GET,
            _ => Method::SEND,
        };
        MadHeader {
            base_version: 1,
            mgmt_class: MgmtClass::COM_MGT,
            class_version: CM_CLASS_VERSION,
            method,
            tid,
            attr_id: self.attr_id(),
            ..MadHeader::default()
        }
    }

    /// The whole 256-byte MAD: [`CmMessage::header`] plus the message.
    ///
    /// # Errors
    /// [`Error::FieldOverflow`] when a field holds a value wider than its
    /// bit range.
    pub fn to_mad(&self, tid: u64) -> Result<[u8; MAD_LEN], Error> {
        let mut mad = [0u8; MAD_LEN];
        self.header(tid).emit(&mut mad)?;
        self.emit_data(&mut mad[CM_DATA_OFFSET..])?;
        Ok(mad)
    }

    /// The short name of the message (`"REQ"`, `"DREP"`, ...).
    #[must_use]
    pub fn short_name(&self) -> &'static str {
        match self {
            Self::ClassPortInfo(_) => "ClassPortInfo",
            Self::Req(_) => "REQ",
            Self::Mra(_) => "MRA",
            Self::Rej(_) => "REJ",
            Self::Rep(_) => "REP",
            Self::Rtu(_) => "RTU",
            Self::Dreq(_) => "DREQ",
            Self::Drep(_) => "DREP",
            Self::SidrReq(_) => "SIDR_REQ",
            Self::SidrRep(_) => "SIDR_REP",
            Self::Lap(_) => "LAP",
            Self::Apr(_) => "APR",
        }
    }
}

/// The CM timeout encoding: 4.096 µs × 2^`exp` (exponents above 31 are
/// clamped to 31, the largest a 5-bit field holds).
#[must_use]
pub fn timeout_duration(exp: u8) -> core::time::Duration {
    let ns = 4096u64 << exp.min(31);
    core::time::Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_through_a_mad() {
        let msgs = [
            CmMessage::ClassPortInfo(Box::default()),
            CmMessage::Req(Box::new(CmReq {
                local_comm_id: 1,
                service_id: 0x0106_1D2F,
                ..CmReq::default()
            })),
            CmMessage::Mra(Box::default()),
            CmMessage::Rej(Box::new(CmRej {
                reason: RejectReason::STALE_CONN,
                ..CmRej::default()
            })),
            CmMessage::Rep(Box::default()),
            CmMessage::Rtu(Box::default()),
            CmMessage::Dreq(Box::default()),
            CmMessage::Drep(Box::default()),
            CmMessage::SidrReq(Box::default()),
            CmMessage::SidrRep(Box::default()),
            CmMessage::Lap(Box::default()),
            CmMessage::Apr(Box::default()),
        ];
        for (i, m) in msgs.iter().enumerate() {
            let mad = m.to_mad(i as u64).unwrap();
            let h = MadHeader::parse(&mad).unwrap();
            assert_eq!(
                (h.mgmt_class, h.class_version, h.tid),
                (MgmtClass::COM_MGT, 2, i as u64)
            );
            assert_eq!(&CmMessage::parse(&mad).unwrap(), m, "{}", m.short_name());
            assert!(attribute_name(m.attr_id()).is_some());
            assert_eq!(
                m.fields().field_descs().len(),
                m.fields().field_descs().len()
            );
        }
    }

    #[test]
    fn bad_cm_mads_are_clear_errors() {
        let mut mad = CmMessage::Rtu(Box::default()).to_mad(1).unwrap();
        assert!(matches!(
            CmMessage::parse(&mad[..255]),
            Err(Error::Truncated { .. })
        ));
        mad[17] = 0x20;
        assert!(matches!(
            CmMessage::parse(&mad),
            Err(Error::Invalid {
                field: "attr_id",
                ..
            })
        ));
        mad[1] = 0x03;
        assert!(matches!(
            CmMessage::parse(&mad),
            Err(Error::Invalid {
                field: "mgmt_class",
                ..
            })
        ));
    }

    #[test]
    fn the_generic_decoder_shows_cm_messages_at_byte_24() {
        let req = CmReq {
            local_comm_id: 0xAB,
            private_data: [7; 92],
            ..CmReq::default()
        };
        let mad = CmMessage::Req(Box::new(req.clone())).to_mad(1).unwrap();
        let d = crate::wire::decode::decode_mad(&mad).unwrap();
        let l = d.layer("ConnectRequest").unwrap();
        assert_eq!(l.offset, CM_DATA_OFFSET);
        assert_eq!(format!("{:?}", l.fields().unwrap()), format!("{req:?}"));
        let mut cpi = CmMessage::ClassPortInfo(Box::default()).to_mad(2).unwrap();
        assert!(crate::wire::decode::decode_mad(&cpi)
            .unwrap()
            .layer("ClassPortInfo")
            .is_some());
        cpi[17] = 0x30; // not a CM attribute: raw, with a note
        let d = crate::wire::decode::decode_mad(&cpi).unwrap();
        assert!(d.layer("Data").unwrap().note.is_some());
        assert!(
            d.layer("CmaHeader").is_none(),
            "only a REQ or SIDR_REQ has one"
        );
        let req = CmReq {
            service_id: cma::service_id(cma::PortSpace::Tcp, 1),
            ..req
        };
        let mut with_cma = req.clone();
        let h = cma::CmaHeader::ipv4([1, 2, 3, 4].into(), [5, 6, 7, 8].into(), 9);
        h.emit(&mut with_cma.private_data).unwrap();
        for (r, shown) in [(req, false), (with_cma, true)] {
            let mad = CmMessage::Req(Box::new(r)).to_mad(1).unwrap();
            let d = crate::wire::decode::decode_mad(&mad).unwrap();
            assert_eq!(d.layer("CmaHeader").map(|l| l.offset), shown.then_some(164));
        }
        // A short CM MAD is shown raw, not refused.
        let d = crate::wire::decode::decode_mad(&mad[..100]).unwrap();
        assert!(d
            .layer("Data")
            .unwrap()
            .note
            .as_deref()
            .unwrap()
            .contains("ConnectRequest"));
    }

    #[test]
    fn timeouts_follow_the_4096_ns_power_of_two_rule() {
        assert_eq!(timeout_duration(0).as_nanos(), 4096);
        assert_eq!(timeout_duration(20).as_millis(), 4294);
        assert_eq!(timeout_duration(31), timeout_duration(200));
    }
}
