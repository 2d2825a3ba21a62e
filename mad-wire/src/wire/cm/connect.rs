//! Connection establishment: REQ, MRA, REJ, REP, RTU (IBTA tables
//! 106–111). Each is 232 bytes of CM data from MAD byte 24.

use super::{RejectReason, TransportType};

crate::wire_struct! {
    /// ConnectRequest. Bit offsets are relative to MAD byte 24.
    pub struct CmReq ("ConnectRequest", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Reserved (byte 4).
        reserved: uint u8 [32, 8] => _,
        /// Vendor ID (bytes 5–7).
        vendor_id: uint u32 [40, 24] => "VendorID",
        /// Service ID.
        service_id: uint u64 [64, 64] => "ServiceID",
        /// Local CA GUID.
        local_ca_guid: uint u64 [128, 64] => "LocalCAGUID",
        /// Reserved (bytes 24–27).
        reserved1: uint u32 [192, 32] => _,
        /// Local Q_Key (UD/RD).
        local_qkey: uint u32 [224, 32] => "LocalQKey",
        /// Local QPN.
        local_qpn: uint u32 [256, 24] => "LocalQPN",
        /// Responder resources offered (RDMA reads/atomics in flight).
        responder_resources: uint u8 [280, 8] => "ResponderResources",
        /// Local EECN.
        local_eecn: uint u32 [288, 24] => "LocalEECN",
        /// Initiator depth.
        initiator_depth: uint u8 [312, 8] => "InitiatorDepth",
        /// Remote EECN.
        remote_eecn: uint u32 [320, 24] => "RemoteEECN",
        /// Remote CM response timeout (4.096 µs × 2^value).
        remote_cm_response_timeout: uint u8 [344, 5] => "RemoteCMResponseTimeout",
        /// Transport service type.
        transport_type: uint TransportType [349, 2] => "TransportServiceType",
        /// End-to-end flow control.
        end_to_end_flow_control: uint bool [351, 1] => "EndToEndFlowControl",
        /// Starting PSN.
        starting_psn: uint u32 [352, 24] => "StartingPSN",
        /// Local CM response timeout (4.096 µs × 2^value).
        local_cm_response_timeout: uint u8 [376, 5] => "LocalCMResponseTimeout",
        /// Retry count (transport).
        retry_count: uint u8 [381, 3] => "RetryCount",
        /// Partition key.
        pkey: uint u16 [384, 16] => "PartitionKey",
        /// Path packet payload MTU (1 = 256 … 5 = 4096).
        path_mtu: uint u8 [400, 4] => "PathPacketPayloadMTU",
        /// RDC exists.
        rdc_exists: uint bool [404, 1] => "RDCExists",
        /// RNR retry count.
        rnr_retry_count: uint u8 [405, 3] => "RNRRetryCount",
        /// Max CM retries.
        max_cm_retries: uint u8 [408, 4] => "MaxCMRetries",
        /// SRQ.
        srq: uint bool [412, 1] => "SRQ",
        /// Extended transport type (XRC).
        extended_transport_type: uint u8 [413, 3] => "ExtendedTransportType",
        /// Primary local port LID.
        primary_local_lid: uint u16 [416, 16] => "PrimaryLocalPortLID",
        /// Primary remote port LID.
        primary_remote_lid: uint u16 [432, 16] => "PrimaryRemotePortLID",
        /// Primary local port GID.
        primary_local_gid: bytes [u8; 16] [56] => "PrimaryLocalPortGID",
        /// Primary remote port GID.
        primary_remote_gid: bytes [u8; 16] [72] => "PrimaryRemotePortGID",
        /// Primary flow label.
        primary_flow_label: uint u32 [704, 20] => "PrimaryFlowLabel",
        /// Reserved (6 bits).
        reserved2: uint u8 [724, 6] => _,
        /// Primary packet rate.
        primary_packet_rate: uint u8 [730, 6] => "PrimaryPacketRate",
        /// Primary traffic class.
        primary_traffic_class: uint u8 [736, 8] => "PrimaryTrafficClass",
        /// Primary hop limit.
        primary_hop_limit: uint u8 [744, 8] => "PrimaryHopLimit",
        /// Primary SL.
        primary_sl: uint u8 [752, 4] => "PrimarySL",
        /// Primary subnet local.
        primary_subnet_local: uint bool [756, 1] => "PrimarySubnetLocal",
        /// Reserved (3 bits).
        reserved3: uint u8 [757, 3] => _,
        /// Primary local ACK timeout.
        primary_local_ack_timeout: uint u8 [760, 5] => "PrimaryLocalACKTimeout",
        /// Reserved (3 bits).
        reserved4: uint u8 [765, 3] => _,
        /// Alternate local port LID.
        alternate_local_lid: uint u16 [768, 16] => "AlternateLocalPortLID",
        /// Alternate remote port LID.
        alternate_remote_lid: uint u16 [784, 16] => "AlternateRemotePortLID",
        /// Alternate local port GID.
        alternate_local_gid: bytes [u8; 16] [100] => "AlternateLocalPortGID",
        /// Alternate remote port GID.
        alternate_remote_gid: bytes [u8; 16] [116] => "AlternateRemotePortGID",
        /// Alternate flow label.
        alternate_flow_label: uint u32 [1056, 20] => "AlternateFlowLabel",
        /// Reserved (6 bits).
        reserved5: uint u8 [1076, 6] => _,
        /// Alternate packet rate.
        alternate_packet_rate: uint u8 [1082, 6] => "AlternatePacketRate",
        /// Alternate traffic class.
        alternate_traffic_class: uint u8 [1088, 8] => "AlternateTrafficClass",
        /// Alternate hop limit.
        alternate_hop_limit: uint u8 [1096, 8] => "AlternateHopLimit",
        /// Alternate SL.
        alternate_sl: uint u8 [1104, 4] => "AlternateSL",
        /// Alternate subnet local.
        alternate_subnet_local: uint bool [1108, 1] => "AlternateSubnetLocal",
        /// Reserved (3 bits).
        reserved6: uint u8 [1109, 3] => _,
        /// Alternate local ACK timeout.
        alternate_local_ack_timeout: uint u8 [1112, 5] => "AlternateLocalACKTimeout",
        /// SAP supported.
        sap_supported: uint bool [1117, 1] => "SAPSupported",
        /// Reserved (2 bits).
        reserved7: uint u8 [1118, 2] => _,
        /// Private data (92 bytes; rdma_cm puts its header here).
        private_data: bytes [u8; 92] [140] => "PrivateData",
    }
}

crate::wire_struct! {
    /// MsgRcptAck (MRA, IBTA table 107): "I got your message, wait
    /// longer".
    pub struct CmMra ("MsgRcptAck", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// The message being acknowledged (REQ, REP or LAP).
        message_mraed: uint super::MsgRef [64, 2] => "MessageMRAed",
        /// Reserved (6 bits).
        reserved: uint u8 [66, 6] => _,
        /// Service timeout: how much longer to wait (4.096 µs × 2^value).
        service_timeout: uint u8 [72, 5] => "ServiceTimeout",
        /// Reserved (3 bits).
        reserved1: uint u8 [77, 3] => _,
        /// Private data (222 bytes).
        private_data: bytes [u8; 222] [10] => "PrivateData",
    }
}

crate::wire_struct! {
    /// ConnectReject (REJ, IBTA table 108).
    pub struct CmRej ("ConnectReject", 232) {
        /// Local Communication ID of the rejecting side.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// The message being rejected (REQ, REP or other).
        message_rejected: uint super::MsgRef [64, 2] => "MessageRejected",
        /// Reserved (6 bits).
        reserved: uint u8 [66, 6] => _,
        /// Bytes of ARI that are valid.
        reject_info_length: uint u8 [72, 7] => "RejectInfoLength",
        /// Reserved (1 bit).
        reserved1: uint u8 [79, 1] => _,
        /// Why.
        reason: uint RejectReason [80, 16] => "Reason",
        /// Additional reject information (72 bytes).
        ari: bytes [u8; 72] [12] => "ARI",
        /// Private data (148 bytes).
        private_data: bytes [u8; 148] [84] => "PrivateData",
    }
}

crate::wire_struct! {
    /// ConnectReply (REP, IBTA table 110).
    pub struct CmRep ("ConnectReply", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// Local Q_Key.
        local_qkey: uint u32 [64, 32] => "LocalQKey",
        /// Local QPN.
        local_qpn: uint u32 [96, 24] => "LocalQPN",
        /// Vendor ID, high byte.
        vendor_id_hi: uint u8 [120, 8] => "VendorIDH",
        /// Local EE context number.
        local_eecn: uint u32 [128, 24] => "LocalEECN",
        /// Vendor ID, middle byte.
        vendor_id_mid: uint u8 [152, 8] => "VendorIDM",
        /// Starting PSN.
        starting_psn: uint u32 [160, 24] => "StartingPSN",
        /// Vendor ID, low byte.
        vendor_id_lo: uint u8 [184, 8] => "VendorIDL",
        /// Responder resources.
        responder_resources: uint u8 [192, 8] => "ResponderResources",
        /// Initiator depth.
        initiator_depth: uint u8 [200, 8] => "InitiatorDepth",
        /// Target ACK delay.
        target_ack_delay: uint u8 [208, 5] => "TargetACKDelay",
        /// Failover accepted (0 accepted, 1 not supported, 2 rejected).
        failover_accepted: uint u8 [213, 2] => "FailoverAccepted",
        /// End-to-end flow control.
        end_to_end_flow_control: uint bool [215, 1] => "EndToEndFlowControl",
        /// RNR retry count.
        rnr_retry_count: uint u8 [216, 3] => "RNRRetryCount",
        /// SRQ.
        srq: uint bool [219, 1] => "SRQ",
        /// Reserved (4 bits).
        reserved: uint u8 [220, 4] => _,
        /// Local CA GUID.
        local_ca_guid: uint u64 [224, 64] => "LocalCAGUID",
        /// Private data (196 bytes).
        private_data: bytes [u8; 196] [36] => "PrivateData",
    }
}

crate::wire_struct! {
    /// ReadyToUse (RTU, IBTA table 111).
    pub struct CmRtu ("ReadyToUse", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// Private data (224 bytes).
        private_data: bytes [u8; 224] [8] => "PrivateData",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(CmReq, CmMra, CmRej, CmRep, CmRtu);

    #[test]
    fn req_packed_fields_sit_where_the_ibta_puts_them() {
        let mut b = [0u8; 232];
        b[0..4].copy_from_slice(&0x1122_3344u32.to_be_bytes());
        b[5..8].copy_from_slice(&[0x00, 0x14, 0x05]);
        b[32..36].copy_from_slice(&[0x00, 0x00, 0x2A, 0x04]); // QPN 0x2A, RR 4
                                                              // RemoteEECN 0, remote CM timeout 20, RC, flow control on.
        b[43] = (20 << 3) | 1;
        // PSN 0xABCDEF, local timeout 18, retry 7.
        b[44..48].copy_from_slice(&[0xAB, 0xCD, 0xEF, (18 << 3) | 7]);
        b[50] = (4 << 4) | 7; // MTU 2048, RNR retry 7
        b[51] = (15 << 4) | 0x08; // max CM retries 15, SRQ
        b[88..92].copy_from_slice(&[0x12, 0x34, 0x50, 0x03]); // flow 0x12345, rate 3
        b[94] = (5 << 4) | 0x08; // SL 5, subnet local
        b[95] = 14 << 3;
        b[139] = (19 << 3) | 0x04; // alt ack timeout 19, SAP
        b[140] = 0xAA;
        b[231] = 0x55;
        let r = CmReq::parse(&b).unwrap();
        assert_eq!(r.local_comm_id, 0x1122_3344);
        assert_eq!(r.vendor_id, 0x1405);
        assert_eq!((r.local_qpn, r.responder_resources), (0x2A, 4));
        assert_eq!(r.remote_cm_response_timeout, 20);
        assert_eq!(r.transport_type, TransportType::RC);
        assert!(r.end_to_end_flow_control);
        assert_eq!(
            (r.starting_psn, r.local_cm_response_timeout, r.retry_count),
            (0xAB_CDEF, 18, 7)
        );
        assert_eq!((r.path_mtu, r.rdc_exists, r.rnr_retry_count), (4, false, 7));
        assert_eq!((r.max_cm_retries, r.srq), (15, true));
        assert_eq!((r.primary_flow_label, r.primary_packet_rate), (0x12345, 3));
        assert_eq!((r.primary_sl, r.primary_subnet_local), (5, true));
        assert_eq!(r.primary_local_ack_timeout, 14);
        assert_eq!((r.alternate_local_ack_timeout, r.sap_supported), (19, true));
        assert_eq!((r.private_data[0], r.private_data[91]), (0xAA, 0x55));
        assert_eq!(r.to_vec().unwrap(), b.to_vec());
    }

    #[test]
    fn rej_rep_mra_fields_sit_where_the_ibta_puts_them() {
        let mut b = [0u8; 232];
        b[8] = 1 << 6; // REP
        b[9] = 5 << 1; // info length 5
        b[10..12].copy_from_slice(&10u16.to_be_bytes());
        b[12] = 0xEE;
        b[84] = 0xDD;
        let r = CmRej::parse(&b).unwrap();
        assert_eq!(
            (r.message_rejected, r.reject_info_length),
            (super::super::MsgRef::REP, 5)
        );
        assert_eq!(r.reason, RejectReason::STALE_CONN);
        assert_eq!((r.ari[0], r.private_data[0]), (0xEE, 0xDD));

        let mut b = [0u8; 232];
        b[12..16].copy_from_slice(&[0x00, 0x01, 0x02, 0x11]); // QPN 0x102, vendor H
        b[20..24].copy_from_slice(&[0x00, 0x00, 0x07, 0x33]); // PSN 7, vendor L
        b[26] = (17 << 3) | (2 << 1) | 1;
        b[27] = (6 << 5) | 0x10;
        b[28..36].copy_from_slice(&0x0002_c903_00a1_b2c3u64.to_be_bytes());
        let r = CmRep::parse(&b).unwrap();
        assert_eq!((r.local_qpn, r.vendor_id_hi), (0x102, 0x11));
        assert_eq!((r.starting_psn, r.vendor_id_lo), (7, 0x33));
        assert_eq!((r.target_ack_delay, r.failover_accepted), (17, 2));
        assert!(r.end_to_end_flow_control);
        assert_eq!((r.rnr_retry_count, r.srq), (6, true));
        assert_eq!(r.local_ca_guid, 0x0002_c903_00a1_b2c3);

        let mut b = [0u8; 232];
        b[8] = 2 << 6;
        b[9] = 21 << 3;
        let m = CmMra::parse(&b).unwrap();
        assert_eq!(
            (m.message_mraed, m.service_timeout),
            (super::super::MsgRef::OTHER, 21)
        );
    }
}
