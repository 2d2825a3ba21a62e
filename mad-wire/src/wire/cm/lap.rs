//! Alternate paths: LAP and APR (IBTA tables 115–116).

use super::ApStatus;

crate::wire_struct! {
    /// LoadAlternatePath (LAP, IBTA table 115).
    pub struct CmLap ("LoadAlternatePath", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// Reserved (bytes 8–11).
        reserved: uint u32 [64, 32] => _,
        /// The receiver's QPN (or EECN).
        remote_qpn_eecn: uint u32 [96, 24] => "RemoteQPN/EECN",
        /// Remote CM response timeout.
        remote_cm_response_timeout: uint u8 [120, 5] => "RemoteCMResponseTimeout",
        /// Reserved (3 bits).
        reserved1: uint u8 [125, 3] => _,
        /// Reserved (bytes 16–19).
        reserved2: uint u32 [128, 32] => _,
        /// Alternate local port LID.
        alternate_local_lid: uint u16 [160, 16] => "AlternateLocalPortLID",
        /// Alternate remote port LID.
        alternate_remote_lid: uint u16 [176, 16] => "AlternateRemotePortLID",
        /// Alternate local port GID.
        alternate_local_gid: bytes [u8; 16] [24] => "AlternateLocalPortGID",
        /// Alternate remote port GID.
        alternate_remote_gid: bytes [u8; 16] [40] => "AlternateRemotePortGID",
        /// Alternate flow label.
        alternate_flow_label: uint u32 [448, 20] => "AlternateFlowLabel",
        /// Reserved (4 bits).
        reserved3: uint u8 [468, 4] => _,
        /// Alternate traffic class.
        alternate_traffic_class: uint u8 [472, 8] => "AlternateTrafficClass",
        /// Alternate hop limit.
        alternate_hop_limit: uint u8 [480, 8] => "AlternateHopLimit",
        /// Reserved (2 bits).
        reserved4: uint u8 [488, 2] => _,
        /// Alternate packet rate.
        alternate_packet_rate: uint u8 [490, 6] => "AlternatePacketRate",
        /// Alternate SL.
        alternate_sl: uint u8 [496, 4] => "AlternateSL",
        /// Alternate subnet local.
        alternate_subnet_local: uint bool [500, 1] => "AlternateSubnetLocal",
        /// Reserved (3 bits).
        reserved5: uint u8 [501, 3] => _,
        /// Alternate local ACK timeout.
        alternate_local_ack_timeout: uint u8 [504, 5] => "AlternateLocalACKTimeout",
        /// Reserved (3 bits).
        reserved6: uint u8 [509, 3] => _,
        /// Private data (168 bytes).
        private_data: bytes [u8; 168] [64] => "PrivateData",
    }
}

crate::wire_struct! {
    /// AlternatePathResponse (APR, IBTA table 116).
    pub struct CmApr ("AlternatePathResponse", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// Bytes of additional information that are valid.
        additional_info_length: uint u8 [64, 8] => "AdditionalInfoLength",
        /// AP status.
        ap_status: uint ApStatus [72, 8] => "APStatus",
        /// Reserved (bytes 10–11).
        reserved: uint u16 [80, 16] => _,
        /// Additional information (72 bytes).
        additional_info: bytes [u8; 72] [12] => "AdditionalInfo",
        /// Private data (148 bytes).
        private_data: bytes [u8; 148] [84] => "PrivateData",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(CmLap, CmApr);

    #[test]
    fn lap_and_sidr_fields_sit_where_the_ibta_puts_them() {
        let mut b = [0u8; 232];
        b[12..16].copy_from_slice(&[0x00, 0x00, 0x99, 16 << 3]);
        b[56..60].copy_from_slice(&[0xAB, 0xCD, 0xE0, 0x42]);
        b[61] = 0x3F;
        b[62] = (9 << 4) | 0x08;
        b[63] = 31 << 3;
        let l = CmLap::parse(&b).unwrap();
        assert_eq!(
            (l.remote_qpn_eecn, l.remote_cm_response_timeout),
            (0x99, 16)
        );
        assert_eq!(
            (l.alternate_flow_label, l.alternate_traffic_class),
            (0xABCDE, 0x42)
        );
        assert_eq!((l.alternate_packet_rate, l.alternate_sl), (0x3F, 9));
        assert!(l.alternate_subnet_local);
        assert_eq!(l.alternate_local_ack_timeout, 31);
    }
}
