//! Wire enums of the CM class: attribute IDs, REJ reasons, the message a
//! REJ/MRA refers to, APR and SIDR statuses, transport service types.

use crate::wire::AttributeId;

/// ClassPortInfo of the CM class.
pub const ATTR_CLASS_PORT_INFO: AttributeId = AttributeId(0x0001);
/// ConnectRequest (REQ).
pub const ATTR_REQ: AttributeId = AttributeId(0x0010);
/// MsgRcptAck (MRA).
pub const ATTR_MRA: AttributeId = AttributeId(0x0011);
/// ConnectReject (REJ).
pub const ATTR_REJ: AttributeId = AttributeId(0x0012);
/// ConnectReply (REP).
pub const ATTR_REP: AttributeId = AttributeId(0x0013);
/// ReadyToUse (RTU).
pub const ATTR_RTU: AttributeId = AttributeId(0x0014);
/// DisconnectRequest (DREQ).
pub const ATTR_DREQ: AttributeId = AttributeId(0x0015);
/// DisconnectReply (DREP).
pub const ATTR_DREP: AttributeId = AttributeId(0x0016);
/// ServiceIDResReq (SIDR_REQ).
pub const ATTR_SIDR_REQ: AttributeId = AttributeId(0x0017);
/// ServiceIDResReqResp (SIDR_REP).
pub const ATTR_SIDR_REP: AttributeId = AttributeId(0x0018);
/// LoadAlternatePath (LAP).
pub const ATTR_LAP: AttributeId = AttributeId(0x0019);
/// AlternatePathResponse (APR).
pub const ATTR_APR: AttributeId = AttributeId(0x001A);

/// The IBTA name of a CM attribute, if it is one.
#[must_use]
pub fn attribute_name(attr: AttributeId) -> Option<&'static str> {
    Some(match attr.0 {
        0x0001 => "ClassPortInfo",
        0x0010 => "ConnectRequest",
        0x0011 => "MsgRcptAck",
        0x0012 => "ConnectReject",
        0x0013 => "ConnectReply",
        0x0014 => "ReadyToUse",
        0x0015 => "DisconnectRequest",
        0x0016 => "DisconnectReply",
        0x0017 => "ServiceIDResReq",
        0x0018 => "ServiceIDResReqResp",
        0x0019 => "LoadAlternatePath",
        0x001A => "AlternatePathResponse",
        _ => return None,
    })
}

crate::wire_enum! {
    /// ConnectReject reason (REJ bytes 10–11; IBTA table 109).
    pub struct RejectReason(u16) {
        /// No QP available.
        NO_QP = 1 => "NoQP",
        /// No EEC available.
        NO_EEC = 2 => "NoEEC",
        /// No resources available.
        NO_RESOURCES = 3 => "NoResources",
        /// Timeout: the sender gave up waiting (ARI holds the CA GUID).
        TIMEOUT = 4 => "Timeout",
        /// Unsupported request.
        UNSUPPORTED = 5 => "Unsupported",
        /// Invalid Communication ID.
        INVALID_COMM_ID = 6 => "InvalidCommID",
        /// Invalid Communication Instance.
        INVALID_COMM_INSTANCE = 7 => "InvalidCommInstance",
        /// Invalid Service ID: nobody listens on it.
        INVALID_SERVICE_ID = 8 => "InvalidServiceID",
        /// Invalid transport service type.
        INVALID_TRANSPORT_TYPE = 9 => "InvalidTransportType",
        /// Stale connection: the QP is still in use by an old connection.
        STALE_CONN = 10 => "StaleConnection",
        /// RDC does not exist.
        RDC_NOT_EXIST = 11 => "RDCDoesNotExist",
        /// Primary remote port GID rejected.
        INVALID_GID = 12 => "InvalidGID",
        /// Primary remote port LID rejected.
        INVALID_LID = 13 => "InvalidLID",
        /// Primary SL rejected.
        INVALID_SL = 14 => "InvalidSL",
        /// Primary traffic class rejected.
        INVALID_TRAFFIC_CLASS = 15 => "InvalidTrafficClass",
        /// Primary hop limit rejected.
        INVALID_HOP_LIMIT = 16 => "InvalidHopLimit",
        /// Primary packet rate rejected.
        INVALID_PACKET_RATE = 17 => "InvalidPacketRate",
        /// Alternate remote port GID rejected.
        INVALID_ALT_GID = 18 => "InvalidAltGID",
        /// Alternate remote port LID rejected.
        INVALID_ALT_LID = 19 => "InvalidAltLID",
        /// Alternate SL rejected.
        INVALID_ALT_SL = 20 => "InvalidAltSL",
        /// Alternate traffic class rejected.
        INVALID_ALT_TRAFFIC_CLASS = 21 => "InvalidAltTrafficClass",
        /// Alternate hop limit rejected.
        INVALID_ALT_HOP_LIMIT = 22 => "InvalidAltHopLimit",
        /// Alternate packet rate rejected.
        INVALID_ALT_PACKET_RATE = 23 => "InvalidAltPacketRate",
        /// Port redirection for the CM (ARI holds a ClassPortInfo).
        PORT_CM_REDIRECT = 24 => "PortCMRedirect",
        /// Port redirection.
        PORT_REDIRECT = 25 => "PortRedirect",
        /// Path MTU not supported.
        INVALID_MTU = 26 => "InvalidMTU",
        /// Insufficient responder resources.
        INSUFFICIENT_RESP_RESOURCES = 27 => "InsufficientRespResources",
        /// Consumer-defined reason (in the private data).
        CONSUMER_DEFINED = 28 => "ConsumerReject",
        /// Invalid RNR NAK retry count.
        INVALID_RNR_RETRY = 29 => "InvalidRNRRetry",
        /// Duplicate local Communication ID.
        DUPLICATE_LOCAL_COMM_ID = 30 => "DuplicateLocalCommID",
        /// Unsupported class version.
        INVALID_CLASS_VERSION = 31 => "InvalidClassVersion",
        /// Primary flow label rejected.
        INVALID_FLOW_LABEL = 32 => "InvalidFlowLabel",
        /// Alternate flow label rejected.
        INVALID_ALT_FLOW_LABEL = 33 => "InvalidAltFlowLabel",
        /// Vendor option not supported.
        VENDOR_OPTION_NOT_SUPPORTED = 35 => "VendorOptionNotSupported",
    }
}

crate::wire_enum! {
    /// Which message a REJ or MRA refers to (2 bits).
    pub struct MsgRef(u8) {
        /// The REQ.
        REQ = 0 => "REQ",
        /// The REP.
        REP = 1 => "REP",
        /// Another message (LAP).
        OTHER = 2 => "Other",
    }
}

crate::wire_enum! {
    /// Transport service type of a REQ (2 bits).
    pub struct TransportType(u8) {
        /// Reliable connected.
        RC = 0 => "RC",
        /// Unreliable connected.
        UC = 1 => "UC",
        /// Reliable datagram.
        RD = 2 => "RD",
        /// See the extended transport type (XRC).
        EXTENDED = 3 => "Extended",
    }
}

crate::wire_enum! {
    /// AP status of an APR (IBTA table 117).
    pub struct ApStatus(u8) {
        /// The alternate path was loaded.
        LOADED = 0 => "APLoaded",
        /// Invalid Communication ID.
        INVALID_COMM_ID = 1 => "InvalidCommID",
        /// Alternate paths not supported.
        UNSUPPORTED = 2 => "APUnsupported",
        /// Rejected.
        REJECTED = 3 => "APRejected",
        /// Redirect (ClassPortInfo in the additional information).
        REDIRECT = 4 => "Redirect",
        /// The path is already the current one.
        IS_CURRENT = 5 => "IsCurrent",
        /// Invalid QPN/EECN.
        INVALID_QPN_EECN = 6 => "InvalidQPN",
        /// Invalid LID.
        INVALID_LID = 7 => "InvalidLID",
        /// Invalid GID.
        INVALID_GID = 8 => "InvalidGID",
        /// Invalid flow label.
        INVALID_FLOW_LABEL = 9 => "InvalidFlowLabel",
        /// Invalid traffic class.
        INVALID_TCLASS = 10 => "InvalidTClass",
        /// Invalid hop limit.
        INVALID_HOP_LIMIT = 11 => "InvalidHopLimit",
        /// Invalid packet rate.
        INVALID_PACKET_RATE = 12 => "InvalidPacketRate",
        /// Invalid SL.
        INVALID_SL = 13 => "InvalidSL",
    }
}

crate::wire_enum! {
    /// Status of a SIDR_REP (IBTA table 121).
    pub struct SidrStatus(u8) {
        /// The QPN and Q_Key are valid.
        VALID = 0 => "Valid",
        /// Service ID not supported.
        SERVICE_NOT_SUPPORTED = 1 => "ServiceIDNotSupported",
        /// Rejected by the service provider.
        REJECTED = 2 => "Rejected",
        /// No QP available.
        NO_QP = 3 => "NoQP",
        /// Redirect (ClassPortInfo in the additional information).
        REDIRECT = 4 => "Redirect",
        /// Class version not supported.
        UNSUPPORTED_VERSION = 5 => "UnsupportedClassVersion",
    }
}
