//! Building the CM messages from what the user and the connection know.

use mad_core::wire::cm::{
    CmDrep, CmDreq, CmMessage, CmMra, CmRej, CmRep, CmReq, CmRtu, MsgRef, RejectReason,
    TransportType,
};

use crate::conn::Conn;
use crate::types::{AcceptParams, CmConfig, CmError, ConnId, ConnectParams};

/// `data` in a zero-padded private data field of `N` bytes.
fn private<const N: usize>(what: &'static str, data: &[u8]) -> Result<[u8; N], CmError> {
    let mut out = [0u8; N];
    out.get_mut(..data.len())
        .ok_or(CmError::PrivateDataTooLong {
            what,
            len: data.len(),
            max: N,
        })?
        .copy_from_slice(data);
    Ok(out)
}

/// `m`, once it is known to fit its wire fields (so a refused call
/// changes no state).
fn checked(m: CmMessage) -> Result<CmMessage, CmError> {
    m.to_mad(0)?;
    Ok(m)
}

/// The REQ of a new active connection.
pub(super) fn req(cfg: &CmConfig, id: ConnId, p: &ConnectParams) -> Result<CmMessage, CmError> {
    let path = &p.path;
    checked(CmMessage::Req(Box::new(CmReq {
        local_comm_id: id.0,
        service_id: p.service_id,
        local_ca_guid: cfg.ca_guid,
        local_qpn: p.qpn,
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        remote_cm_response_timeout: p.remote_cm_response_timeout,
        transport_type: TransportType::RC,
        end_to_end_flow_control: true,
        starting_psn: p.starting_psn,
        local_cm_response_timeout: cfg.response_timeout,
        retry_count: p.retry_count,
        pkey: path.pkey,
        path_mtu: path.mtu,
        rnr_retry_count: p.rnr_retry_count,
        max_cm_retries: p.max_cm_retries,
        primary_local_lid: path.local_lid,
        primary_remote_lid: path.remote_lid,
        primary_local_gid: path.local_gid,
        primary_remote_gid: path.remote_gid,
        primary_flow_label: path.flow_label,
        primary_packet_rate: path.rate,
        primary_traffic_class: path.traffic_class,
        primary_hop_limit: path.hop_limit,
        primary_sl: path.sl,
        primary_subnet_local: path.subnet_local,
        primary_local_ack_timeout: path.ack_timeout(),
        private_data: private("REQ", &p.private_data)?,
        ..CmReq::default()
    })))
}

/// The REP accepting connection `c`.
pub(super) fn rep(cfg: &CmConfig, c: &Conn, p: &AcceptParams) -> Result<CmMessage, CmError> {
    checked(CmMessage::Rep(Box::new(CmRep {
        local_comm_id: c.id.0,
        remote_comm_id: c.info.remote_comm_id,
        local_qpn: p.qpn,
        starting_psn: p.starting_psn,
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        target_ack_delay: 0,
        failover_accepted: 1, // alternate paths not supported
        end_to_end_flow_control: true,
        rnr_retry_count: p.rnr_retry_count,
        local_ca_guid: cfg.ca_guid,
        private_data: private("REP", &p.private_data)?,
        ..CmRep::default()
    })))
}

/// A REJ.
pub(super) fn rej(
    local: u32,
    remote: u32,
    of: MsgRef,
    reason: RejectReason,
    ari: &[u8],
    private_data: &[u8],
) -> Result<CmMessage, CmError> {
    checked(CmMessage::Rej(Box::new(CmRej {
        local_comm_id: local,
        remote_comm_id: remote,
        message_rejected: of,
        reject_info_length: ari.len().min(72) as u8,
        reason,
        ari: private("REJ ARI", ari)?,
        private_data: private("REJ", private_data)?,
        ..CmRej::default()
    })))
}

/// An MRA.
pub(super) fn mra(
    local: u32,
    remote: u32,
    of: MsgRef,
    service_timeout: u8,
) -> Result<CmMessage, CmError> {
    checked(CmMessage::Mra(Box::new(CmMra {
        local_comm_id: local,
        remote_comm_id: remote,
        message_mraed: of,
        service_timeout,
        ..CmMra::default()
    })))
}

/// An RTU.
pub(super) fn rtu(local: u32, remote: u32, private_data: &[u8]) -> Result<CmMessage, CmError> {
    checked(CmMessage::Rtu(Box::new(CmRtu {
        local_comm_id: local,
        remote_comm_id: remote,
        private_data: private("RTU", private_data)?,
    })))
}

/// A DREQ.
pub(super) fn dreq(
    local: u32,
    remote: u32,
    remote_qpn: u32,
    private_data: &[u8],
) -> Result<CmMessage, CmError> {
    checked(CmMessage::Dreq(Box::new(CmDreq {
        local_comm_id: local,
        remote_comm_id: remote,
        remote_qpn_eecn: remote_qpn,
        private_data: private("DREQ", private_data)?,
        ..CmDreq::default()
    })))
}

/// A DREP.
pub(super) fn drep(local: u32, remote: u32, private_data: &[u8]) -> Result<CmMessage, CmError> {
    checked(CmMessage::Drep(Box::new(CmDrep {
        local_comm_id: local,
        remote_comm_id: remote,
        private_data: private("DREP", private_data)?,
    })))
}
