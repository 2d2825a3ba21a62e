//! One connection's state: where it is in the IBTA CM state diagram, who
//! the peer is, and the message it is waiting on an answer for.

use std::time::{Duration, Instant};

use mad_core::transport::Address;

use crate::types::{ConnId, ConnInfo};

/// Where a connection is in the CM state diagram (IBTA 12.9, the kernel's
/// `ib_cm_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Active: REQ sent, waiting for REP / REJ / MRA.
    ReqSent,
    /// Active: the peer MRAed the REQ; waiting longer.
    MraReqRcvd,
    /// Passive: REQ received, waiting for the user.
    ReqRcvd,
    /// Passive: REQ received and MRAed, waiting for the user.
    MraReqSent,
    /// Passive: REP sent, waiting for RTU / REJ / MRA.
    RepSent,
    /// Passive: the peer MRAed the REP; waiting longer.
    MraRepRcvd,
    /// Active: REP received, waiting for the user (no `auto_rtu`).
    RepRcvd,
    /// Active: REP received and MRAed, waiting for the user.
    MraRepSent,
    /// Connected.
    Established,
    /// DREQ sent, waiting for DREP.
    DreqSent,
    /// Disconnected or rejected; the QP is quarantined until the deadline.
    Timewait,
    /// Passive: this side rejected the REQ; a repeated REQ gets the same
    /// REJ until the deadline.
    RejSent,
}

impl State {
    /// The IBTA name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ReqSent => "REQ sent",
            Self::MraReqRcvd => "MRA(REQ) received",
            Self::ReqRcvd => "REQ received",
            Self::MraReqSent => "MRA(REQ) sent",
            Self::RepSent => "REP sent",
            Self::MraRepRcvd => "MRA(REP) received",
            Self::RepRcvd => "REP received",
            Self::MraRepSent => "MRA(REP) sent",
            Self::Established => "established",
            Self::DreqSent => "DREQ sent",
            Self::Timewait => "timewait",
            Self::RejSent => "REJ sent",
        }
    }
}

/// A message waiting for an answer: resent on each timeout while retries
/// last.
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    /// The MAD to resend.
    pub mad: [u8; 256],
    /// Resends left.
    pub left: u8,
    /// Time to wait after each send.
    pub wait: Duration,
}

/// Which end started the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Sent the REQ.
    Active,
    /// Received the REQ.
    Passive,
}

/// One connection.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    pub id: ConnId,
    pub side: Side,
    pub state: State,
    /// Where this side's MADs go.
    pub peer: Address,
    /// What the connection is known to be so far.
    pub info: ConnInfo,
    /// The message being retried, if any.
    pub retry: Option<Retry>,
    /// The last reply sent that a duplicate is answered with (MRA, REJ,
    /// RTU, DREP).
    pub last_reply: Option<[u8; 256]>,
    /// When the current wait ends.
    pub deadline: Option<Instant>,
    /// How long this side waits for an answer to its REQ / REP / DREQ.
    pub answer_wait: Duration,
    /// Resends allowed for each of those.
    pub max_retries: u8,
    /// How long timewait lasts.
    pub timewait: Duration,
    /// Active: send the RTU as soon as the REP arrives.
    pub auto_rtu: bool,
    /// Passive: how long the peer waits for this side's answer to its REQ
    /// (its resends included): how long the user may take.
    pub user_wait: Duration,
    /// The extra wait the last MRA this side sent gave the peer.
    pub mra_wait: Option<Duration>,
    /// The (remote CA GUID, remote Communication ID) key this connection
    /// holds in the CM's index, exactly as inserted.
    pub remote_key: Option<(u64, u32)>,
    /// The (remote CA GUID, remote QPN) key this connection holds in the
    /// CM's index, exactly as inserted.
    pub qpn_key: Option<(u64, u32)>,
    /// Passive: the peer whose REQ made this connection (counted against
    /// its cap).
    pub peer_key: Option<PeerKey>,
}

/// A peer as the fabric names it: the source LID and, when the MAD came
/// with a GRH, the source GID (zero without one).
pub(crate) type PeerKey = (u16, [u8; 16]);

/// The peer `src` names.
pub(crate) fn peer_key(src: &Address) -> PeerKey {
    (src.lid, src.grh.map_or([0; 16], |g| g.gid))
}
