//! The values the CM hands to and takes from its user: connection IDs,
//! paths, connect / accept parameters, what a verbs user needs to move its
//! QP ([`ConnInfo`]), events, errors and outgoing MADs.

use std::time::Duration;

use mad_core::transport::{Address, Grh};
use mad_core::wire::cm::{timeout_duration, RejectReason};
use mad_core::wire::sa_records::PathRecord;

/// A connection, named by its local Communication ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u32);

impl ConnId {
    /// No connection (never a local Communication ID): the ID of an event
    /// about a listener.
    pub const NONE: ConnId = ConnId(0);
}

/// A listener, named by the service ID it listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenId(pub u64);

/// The primary path of a connection, as the REQ carries it, seen from this
/// side (`local_*` is this port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmPath {
    /// This port's LID.
    pub local_lid: u16,
    /// The peer port's LID.
    pub remote_lid: u16,
    /// This port's GID.
    pub local_gid: [u8; 16],
    /// The peer port's GID.
    pub remote_gid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Static rate code (6 bits).
    pub rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level (4 bits).
    pub sl: u8,
    /// Both ports are in one subnet (no GRH needed).
    pub subnet_local: bool,
    /// Packet lifetime, 4.096 µs × 2^value (6 bits: 0–63;
    /// [`Cm::connect`](crate::Cm::connect) refuses more with
    /// [`CmError::OutOfRange`]).
    pub packet_life_time: u8,
    /// Partition key.
    pub pkey: u16,
    /// Path MTU code (1 = 256 … 5 = 4096).
    pub mtu: u8,
}

impl CmPath {
    /// The path a PathRecord describes, with its source as this port.
    #[must_use]
    pub fn from_path_record(p: &PathRecord) -> Self {
        Self {
            local_lid: p.slid,
            remote_lid: p.dlid,
            local_gid: p.sgid,
            remote_gid: p.dgid,
            flow_label: p.flow_label,
            rate: p.rate,
            traffic_class: p.tclass,
            hop_limit: p.hop_limit,
            sl: p.sl,
            subnet_local: p.hop_limit <= 1,
            packet_life_time: p.packet_life_time,
            pkey: p.pkey,
            mtu: p.mtu,
        }
    }

    /// A RoCE path (what rdma_cm's `cma_resolve_iboe_route` builds): no
    /// LIDs and no SA, the ports named by their GIDs (index 0 of each
    /// device's table), hop limit 64 as an IP route gives, the packet
    /// lifetime rdma_cm uses on RoCE (`CMA_IBOE_PACKET_LIFETIME`, 18) and
    /// the path MTU the Ethernet MTU `netdev_mtu` leaves room for
    /// ([`iboe_mtu`]). MADs along it always carry a GRH.
    #[must_use]
    pub fn roce(local_gid: [u8; 16], remote_gid: [u8; 16], netdev_mtu: u32) -> Self {
        Self {
            local_gid,
            remote_gid,
            hop_limit: 64,
            subnet_local: false,
            packet_life_time: 18,
            pkey: 0xFFFF,
            mtu: iboe_mtu(netdev_mtu),
            ..Self::default()
        }
    }

    /// The same path seen from the other end.
    #[must_use]
    pub fn reversed(&self) -> Self {
        Self {
            local_lid: self.remote_lid,
            remote_lid: self.local_lid,
            local_gid: self.remote_gid,
            remote_gid: self.local_gid,
            ..*self
        }
    }

    /// The local ACK timeout exponent the REQ carries (the packet lifetime
    /// doubled, as the kernel's `cm_ack_timeout` does without a CA delay).
    #[must_use]
    pub fn ack_timeout(&self) -> u8 {
        self.packet_life_time.saturating_add(1).min(31)
    }

    /// The packet lifetime as a duration.
    #[must_use]
    pub fn packet_life(&self) -> Duration {
        timeout_duration(self.packet_life_time)
    }

    /// Where CM MADs to the peer go: its QP1, with a GRH unless the path
    /// is subnet-local and has a LID (a path with no remote LID, as on
    /// RoCE, is reachable by GID only).
    #[must_use]
    pub fn gsi_address(&self) -> Address {
        let grh = (!self.subnet_local || self.remote_lid == 0).then_some(Grh {
            gid: self.remote_gid,
            sgid_index: 0,
            flow_label: self.flow_label,
            hop_limit: self.hop_limit,
            traffic_class: self.traffic_class,
        });
        Address {
            sl: self.sl,
            grh,
            ..Address::gsi(self.remote_lid)
        }
    }
}

/// The path MTU code (1 = 256 … 5 = 4096) of RoCE over an Ethernet MTU
/// of `netdev_mtu` bytes: the largest IB MTU that fits once the GRH, UDP,
/// BTH, XRC and AtomicETH headers and the ICRC (96 bytes) are taken off,
/// as the kernel's `iboe_get_mtu`; 0 when not even 256 bytes fit.
#[must_use]
pub fn iboe_mtu(netdev_mtu: u32) -> u8 {
    let room = netdev_mtu.saturating_sub(40 + 8 + 12 + 4 + 28 + 4);
    (1..=5u8)
        .rev()
        .find(|code| room >= 128 << code)
        .unwrap_or(0)
}

/// What the active side asks for ([`Cm::connect`](crate::Cm::connect)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectParams {
    /// The service to connect to.
    pub service_id: u64,
    /// The local QP (RC) the connection is for.
    pub qpn: u32,
    /// The local QP's starting send PSN (24 bits).
    pub starting_psn: u32,
    /// RDMA reads / atomics this side accepts in flight.
    pub responder_resources: u8,
    /// RDMA reads / atomics this side issues in flight.
    pub initiator_depth: u8,
    /// Transport retry count (3 bits).
    pub retry_count: u8,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// The primary path.
    pub path: CmPath,
    /// How often the REQ (and later the DREQ) is resent (4 bits: at most
    /// 15; more is refused).
    pub max_cm_retries: u8,
    /// How long the peer's CM may take to answer, 4.096 µs × 2^value.
    pub remote_cm_response_timeout: u8,
    /// Private data for the REQ (at most 92 bytes).
    pub private_data: Vec<u8>,
    /// Send the RTU as soon as the REP arrives and report `Established`
    /// (what rdma_cm does for an ID with a QP). When false the REP is
    /// reported as `ConnectResponse` and the user calls
    /// [`Cm::establish`](crate::Cm::establish) after moving its QP.
    pub auto_rtu: bool,
}

impl ConnectParams {
    /// Parameters with librdmacm's defaults (retry counts 7, 15 CM
    /// retries, 4.3 s CM response timeout, no private data, RTU sent
    /// automatically).
    #[must_use]
    pub fn new(service_id: u64, qpn: u32, starting_psn: u32, path: CmPath) -> Self {
        Self {
            service_id,
            qpn,
            starting_psn,
            responder_resources: 0,
            initiator_depth: 0,
            retry_count: 7,
            rnr_retry_count: 7,
            path,
            max_cm_retries: 15,
            remote_cm_response_timeout: 20,
            private_data: Vec::new(),
            auto_rtu: true,
        }
    }
}

/// What the passive side answers with ([`Cm::accept`](crate::Cm::accept)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AcceptParams {
    /// The local QP (RC) accepting the connection.
    pub qpn: u32,
    /// The local QP's starting send PSN (24 bits).
    pub starting_psn: u32,
    /// RDMA reads / atomics this side accepts in flight.
    pub responder_resources: u8,
    /// RDMA reads / atomics this side issues in flight.
    pub initiator_depth: u8,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// Private data for the REP (at most 196 bytes).
    pub private_data: Vec<u8>,
}

/// Everything a verbs user needs to move its QP to RTR / RTS, as known on
/// this side when the event is raised.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnInfo {
    /// The service ID of the connection.
    pub service_id: u64,
    /// The peer's Communication ID.
    pub remote_comm_id: u32,
    /// The peer's CA GUID.
    pub remote_ca_guid: u64,
    /// The peer's QPN (0 until known).
    pub remote_qpn: u32,
    /// The peer's starting PSN: this side's receive PSN.
    pub remote_psn: u32,
    /// This side's QPN.
    pub local_qpn: u32,
    /// This side's starting PSN.
    pub local_psn: u32,
    /// RDMA reads the peer accepts in flight (this side's `max_rd_atomic`).
    pub responder_resources: u8,
    /// RDMA reads the peer issues (this side's `max_dest_rd_atomic`).
    pub initiator_depth: u8,
    /// Transport retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// The primary path, seen from this side (MTU included).
    pub path: CmPath,
    /// Local ACK timeout exponent for the QP.
    pub ack_timeout: u8,
    /// The private data of the message that raised the event.
    pub private_data: Vec<u8>,
}

/// A connection event, with the meaning rdma_cm gives its
/// `RDMA_CM_EVENT_*` of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmEvent {
    /// Passive side: a REQ arrived for a listener; answer with
    /// [`Cm::accept`](crate::Cm::accept), [`Cm::reject`](crate::Cm::reject)
    /// or [`Cm::delay`](crate::Cm::delay).
    ConnectRequest {
        /// The listener the REQ matched.
        listener: ListenId,
        /// The REQ's parameters.
        info: ConnInfo,
    },
    /// Active side, without `auto_rtu`: the REP arrived; move the QP and
    /// call [`Cm::establish`](crate::Cm::establish) (or reject).
    ConnectResponse {
        /// The REP's parameters.
        info: ConnInfo,
    },
    /// Both sides: the connection is established.
    Established {
        /// The connection's parameters.
        info: ConnInfo,
    },
    /// The peer rejected the REQ (active side) or the REP (passive side).
    Rejected {
        /// Why.
        reason: RejectReason,
        /// The REJ's additional reject information (valid bytes only).
        ari: Vec<u8>,
        /// The REJ's private data.
        private_data: Vec<u8>,
    },
    /// Active side: nobody answered the REQ within its retries.
    Unreachable,
    /// Establishing failed after the peer answered (the RTU never came,
    /// or the peer disconnected before the connection was established).
    ConnectError {
        /// What went wrong.
        why: &'static str,
    },
    /// Both sides: the connection is disconnected (DREQ received, DREP
    /// received, or the DREQ went unanswered). Timewait follows.
    Disconnected {
        /// The DREQ's or DREP's private data (empty after a timeout).
        private_data: Vec<u8>,
        /// What ended it (rdma_cm does not say; a trace for debugging,
        /// and the proof that two DREQs crossed).
        cause: DisconnectCause,
    },
    /// Timewait is over: the QP may be reused.
    TimewaitExit,
    /// The port went away; the connection is gone.
    DeviceRemoval,
    /// The port went away under a listener (`RDMA_CM_EVENT_DEVICE_REMOVAL`
    /// on a listening ID): it takes no more REQs and is gone. Its event's
    /// [`ConnId`] is [`ConnId::NONE`], which names no connection.
    ListenerRemoved {
        /// The listener.
        listener: ListenId,
    },
}

/// What disconnected a connection ([`CmEvent::Disconnected`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisconnectCause {
    /// The peer's DREQ, this side not disconnecting.
    DreqReceived,
    /// The peer's DREQ while this side's own DREQ was outstanding (state
    /// DREQ sent): a simultaneous disconnect, the DREQs crossed.
    DreqCrossed,
    /// The DREP answering this side's DREQ.
    DrepReceived,
    /// This side's DREQ went unanswered.
    DreqUnanswered,
    /// A REJ on an established connection.
    RejReceived,
}

impl DisconnectCause {
    /// A short description, naming the CM state where it matters.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::DreqReceived => "DREQ received",
            Self::DreqCrossed => "DREQ received in state DREQ sent",
            Self::DrepReceived => "DREP received",
            Self::DreqUnanswered => "DREQ unanswered",
            Self::RejReceived => "REJ received",
        }
    }
}

/// A call the CM refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmError {
    /// No such connection (or it is gone).
    #[error("no connection {0:?}")]
    UnknownConnection(ConnId),
    /// The call does not fit the connection's state.
    #[error("connection {id:?} is {state}: cannot {what}")]
    InvalidState {
        /// The connection.
        id: ConnId,
        /// Its state.
        state: &'static str,
        /// The refused call.
        what: &'static str,
    },
    /// Someone already listens on this service ID.
    #[error("service ID {0:#x} already has a listener")]
    AlreadyListening(u64),
    /// Private data longer than the message has room for.
    #[error("{what} private data is {len} bytes; the message holds {max}")]
    PrivateDataTooLong {
        /// The message.
        what: &'static str,
        /// Bytes given.
        len: usize,
        /// Room in the message.
        max: usize,
    },
    /// A value does not fit its wire field.
    #[error("{0}")]
    Wire(#[from] mad_core::wire::Error),
    /// Too many connections.
    #[error("the CM already holds {0} connections")]
    TooManyConnections(usize),
    /// A parameter outside the range its field allows.
    #[error("{what} {value} is out of range (0 to {max})")]
    OutOfRange {
        /// The parameter.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
}

/// A CM MAD to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to.
    pub to: Address,
    /// The 256-byte MAD.
    pub mad: [u8; 256],
}

/// CM-wide settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmConfig {
    /// This CA's GUID (REQ/REP LocalCAGUID, REJ timeout ARI).
    pub ca_guid: u64,
    /// How long this side's CM may take to answer, 4.096 µs × 2^value
    /// (advertised in REQs as LocalCMResponseTimeout).
    pub response_timeout: u8,
    /// Most connections held at once (timewait included).
    pub max_connections: usize,
    /// Most connections one peer (one source LID, or GID when the REQ
    /// came with a GRH) may hold here through its REQs, timewait included:
    /// past it that peer's REQs get REJ(NoResources) while other peers'
    /// are still taken.
    pub max_per_peer: usize,
    /// Longest a connection waits for its user's answer (accept / reject
    /// / MRA to a REQ, establish after a REP): the wait is what the peer
    /// waits for that answer (its retries included), cut to this. Past
    /// it the connection is dropped with a REJ(ConsumerReject), as the
    /// kernel's `ib_cm` rejects an ID destroyed in REQ received.
    pub max_user_wait: Duration,
    /// Seed of the local Communication IDs: `None` (the default) seeds
    /// them from the operating system, so that they cannot be guessed;
    /// `Some` gives a reproducible sequence (tests). Either way each ID is
    /// a random nonzero 32-bit number not in use.
    pub comm_id_seed: Option<u64>,
}

impl Default for CmConfig {
    fn default() -> Self {
        Self {
            ca_guid: 0,
            response_timeout: 20,
            max_connections: 65_536,
            max_per_peer: 1024,
            max_user_wait: Duration::from_secs(120),
            comm_id_seed: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{iboe_mtu, CmPath};

    #[test]
    fn iboe_mtu_is_the_largest_ib_mtu_under_the_ethernet_mtu_less_96_bytes() {
        // 1500 - 96 = 1404: 1024; 9000: 4096; 2144 - 96 = 2048 exactly.
        let cases = [
            (1500, 3),
            (9000, 5),
            (2144, 4),
            (2143, 3),
            (352, 1),
            (351, 0),
            (0, 0),
        ];
        for (eth, code) in cases {
            assert_eq!(iboe_mtu(eth), code, "netdev MTU {eth}");
        }
    }

    #[test]
    fn a_roce_path_reaches_its_peer_by_gid_through_a_grh() {
        let (ours, theirs) = ([0xfe; 16], [0x80; 16]);
        let p = CmPath::roce(ours, theirs, 1500);
        assert_eq!((p.local_lid, p.remote_lid, p.mtu), (0, 0, 3));
        let to = p.gsi_address();
        let grh = to.grh.expect("RoCE MADs carry a GRH");
        assert_eq!((grh.gid, grh.hop_limit), (theirs, 64));
        // Seen from the peer, the GIDs swap and the GRH names ours.
        assert_eq!(p.reversed().gsi_address().grh.map(|g| g.gid), Some(ours));
        // An IB path inside the subnet with a LID needs none.
        let ib = CmPath {
            remote_lid: 7,
            subnet_local: true,
            ..CmPath::default()
        };
        assert!(ib.gsi_address().grh.is_none());
    }
}
