//! The PerfMgt attributes behind perfquery's `-X -S -D -E -T -c` and its
//! long-only options (IBTA vol. 1 ch. 16.1.4 and annex A10, libibmad
//! `fields.c` labels). Array fields carry the label libibmad prints with
//! the element index appended (`XmtDataSL0` ...).
//!
//! Every attribute but PortSamplesControl and PortExtendedSpeedsCounters
//! starts with the same four bytes: byte 0 (OpCode for the per-opcode
//! attributes, else reserved), PortSelect, CounterSelect.

crate::wire_struct! {
    /// PortSamplesControl: the sampling mechanism's setup and status. PerfMgt 0x0010, 80 bytes (of 192).
    pub struct PortSamplesControl ("PortSamplesControl", 80) {
        /// OpCode (byte 0).
        op_code: uint u8 [0, 8] => "OpCode",
        /// PortSelect (byte 1).
        port_select: uint u8 [8, 8] => "PortSelect",
        /// Tick (byte 2).
        tick: uint u8 [16, 8] => "Tick",
        /// Reserved.
        reserved: uint u8 [24, 5] => _,
        /// CounterWidth.
        counter_width: uint u8 [29, 3] => "CounterWidth",
        /// Reserved.
        reserved2: uint u8 [32, 2] => _,
        /// CounterMask0.
        counter_mask0: uint u8 [34, 3] => "CounterMask0",
        /// CounterMasks1to9.
        counter_masks1to9: uint u32 [37, 27] => "CounterMasks1to9",
        /// Reserved.
        reserved3: uint u8 [64, 1] => _,
        /// CounterMasks10to14.
        counter_masks10to14: uint u16 [65, 15] => "CounterMasks10to14",
        /// SampleMechanisms.
        sample_mechanisms: uint u8 [80, 8] => "SampleMechanisms",
        /// Reserved.
        reserved4: uint u8 [88, 6] => _,
        /// SampleStatus.
        sample_status: uint u8 [94, 2] => "SampleStatus",
        /// OptionMask.
        option_mask: uint u64 [96, 64] => "OptionMask",
        /// VendorMask.
        vendor_mask: uint u64 [160, 64] => "VendorMask",
        /// SampleStart.
        sample_start: uint u32 [224, 32] => "SampleStart",
        /// SampleInterval.
        sample_interval: uint u32 [256, 32] => "SampleInterval",
        /// Tag.
        tag: uint u16 [288, 16] => "Tag",
        /// CounterSelect0–14.
        counter_selects: array [u16; 15] [304, 16] => "CounterSelect",
        /// Reserved.
        reserved5: uint u32 [544, 32] => _,
        /// SamplesOnlyOptionMask.
        samples_only_option_mask: uint u64 [576, 64] => "SamplesOnlyOptionMask",
    }
}

crate::wire_struct! {
    /// PortSamplesResult: the sampling mechanism's counters. PerfMgt 0x0011, 64 bytes (of 192).
    pub struct PortSamplesResult ("PortSamplesResult", 64) {
        /// Tag (bytes 0–1): PortSamplesControl's Tag of the sample.
        tag: uint u16 [0, 16] => "Tag",
        /// Reserved.
        reserved: uint u16 [16, 14] => _,
        /// SampleStatus.
        sample_status: uint u8 [30, 2] => "SampleStatus",
        /// Counter0–14.
        counters: array [u32; 15] [32, 32] => "Counter",
    }
}

perf_attr! {
    /// PortRcvErrorDetails: why received packets were discarded. PerfMgt 0x0015, 16 bytes (of 192).
    pub struct PortRcvErrorDetails ("PortRcvErrorDetails", 16) {
        /// PortLocalPhysicalErrors.
        local_physical_errors: uint u16 [32, 16] => "PortLocalPhysicalErrors",
        /// PortMalformedPktErrors.
        malformed_pkt_errors: uint u16 [48, 16] => "PortMalformedPktErrors",
        /// PortBufferOverrunErrors.
        buffer_overrun_errors: uint u16 [64, 16] => "PortBufferOverrunErrors",
        /// PortDLIDMappingErrors.
        dlid_mapping_errors: uint u16 [80, 16] => "PortDLIDMappingErrors",
        /// PortVLMappingErrors.
        vl_mapping_errors: uint u16 [96, 16] => "PortVLMappingErrors",
        /// PortLoopingErrors.
        looping_errors: uint u16 [112, 16] => "PortLoopingErrors",
    }
}

perf_attr! {
    /// PortXmitDiscardDetails: why outbound packets were discarded. PerfMgt 0x0016, 12 bytes (of 192).
    pub struct PortXmitDiscardDetails ("PortXmitDiscardDetails", 12) {
        /// PortInactiveDiscards.
        inactive_discards: uint u16 [32, 16] => "PortInactiveDiscards",
        /// PortNeighborMTUDiscards.
        neighbor_mtu_discards: uint u16 [48, 16] => "PortNeighborMTUDiscards",
        /// PortSwLifetimeLimitDiscards.
        sw_lifetime_limit_discards: uint u16 [64, 16] => "PortSwLifetimeLimitDiscards",
        /// PortSwHOQLifetimeLimitDiscards.
        sw_hoq_lifetime_limit_discards: uint u16 [80, 16] => "PortSwHOQLifetimeLimitDiscards",
    }
}

perf_attr! {
    /// PortOpRcvCounters: packets and data received with one opcode. PerfMgt 0x0017, 12 bytes (of 192).
    pub struct PortOpRcvCounters ("PortOpRcvCounters", 12) per_opcode {
        /// PortOpRcvPkts.
        op_rcv_pkts: uint u32 [32, 32] => "PortOpRcvPkts",
        /// PortOpRcvData (4-octet words).
        op_rcv_data: uint u32 [64, 32] => "PortOpRcvData",
    }
}

perf_attr! {
    /// PortFlowCtlCounters: flow-control packets sent and received. PerfMgt 0x0018, 12 bytes (of 192).
    pub struct PortFlowCtlCounters ("PortFlowCtlCounters", 12) {
        /// PortXmitFlowPkts.
        xmit_flow_pkts: uint u32 [32, 32] => "PortXmitFlowPkts",
        /// PortRcvFlowPkts.
        rcv_flow_pkts: uint u32 [64, 32] => "PortRcvFlowPkts",
    }
}

perf_attr! {
    /// PortVLOpPackets: packets received with one opcode, per VL. PerfMgt 0x0019, 36 bytes (of 192).
    pub struct PortVlOpPackets ("PortVLOpPackets", 36) per_opcode {
        /// Per VL 0–15.
        packets: array [u16; 16] [32, 16] => "PortVLOpPackets",
    }
}

perf_attr! {
    /// PortVLOpData: data received with one opcode, per VL. PerfMgt 0x001A, 68 bytes (of 192).
    pub struct PortVlOpData ("PortVLOpData", 68) per_opcode {
        /// Per VL 0–15 (4-octet words).
        data: array [u32; 16] [32, 32] => "PortVLOpData",
    }
}

perf_attr! {
    /// PortVLXmitFlowCtlUpdateErrors: 2-bit flow-control update error counters per VL. PerfMgt 0x001B, 8 bytes (of 192).
    pub struct PortVlXmitFlowCtlUpdateErrors ("PortVLXmitFlowCtlUpdateErrors", 8) {
        /// Per VL 0–15.
        errors: array [u8; 16] [32, 2] => "PortVLXmitFlowCtlUpdateErrors",
    }
}

perf_attr! {
    /// PortVLXmitWaitCounters: ticks a VL had data but could not send. PerfMgt 0x001C, 36 bytes (of 192).
    pub struct PortVlXmitWaitCounters ("PortVLXmitWaitCounters", 36) {
        /// Per VL 0–15.
        wait: array [u16; 16] [32, 16] => "PortVLXmitWait",
    }
}

perf_attr! {
    /// PortExtendedSpeedsCounters: FDR/EDR lane error and FEC counters. PerfMgt 0x001F, 140 bytes (of 192).
    pub struct PortExtSpeedsCounters ("PortExtendedSpeedsCounters", 140) ext_speeds {
        /// ErrorDetectionCounter per lane.
        error_detection: array [u16; 12] [160, 16] => "ErrorDetectionCounterLane",
        /// FECCorrectableBlockCtr per lane.
        fec_correctable_block: array [u32; 12] [352, 32] => "FECCorrectableBlockCtrLane",
        /// FECUncorrectableBlockCtr per lane.
        fec_uncorrectable_block: array [u32; 12] [736, 32] => "FECUncorrectableBlockCtrLane",
    }
}

perf_attr! {
    /// PortExtendedSpeedsCounters as a port with RS-FEC active reports it. PerfMgt 0x001F, 152 bytes (of 192).
    pub struct PortExtSpeedsCountersRsfec ("PortExtendedSpeedsCountersRsfec", 152) ext_speeds {
        /// Reserved (bytes 20–43).
        reserved3: bytes [u8; 24] [20] => _,
        /// FECCorrectableSymbolCtr per lane.
        fec_correctable_symbol: array [u32; 12] [352, 32] => "FECCorrectableSymbolCtrLane",
        /// Reserved (bytes 92–139).
        reserved4: bytes [u8; 48] [92] => _,
        /// PortFECCorrectableBlockCtr.
        port_fec_correctable_block: uint u32 [1120, 32] => "PortFECCorrectableBlockCtr",
        /// PortFECUncorrectableBlockCtr.
        port_fec_uncorrectable_block: uint u32 [1152, 32] => "PortFECUncorrectableBlockCtr",
        /// PortFECCorrectedSymbolCtr.
        port_fec_corrected_symbol: uint u32 [1184, 32] => "PortFECCorrectedSymbolCtr",
    }
}

perf_attr! {
    /// SwPortVLCongestion: per-VL congestion counters of a switch port. PerfMgt 0x0030, 36 bytes (of 192).
    pub struct SwPortVlCongestion ("SwPortVLCongestion", 36) {
        /// Per VL 0–15.
        congestion: array [u16; 16] [32, 16] => "SWPortVLCongestion",
    }
}

perf_attr! {
    /// PortRcvConCtrl: packets received with FECN / BECN set. PerfMgt 0x0031, 12 bytes (of 192).
    pub struct PortRcvConCtrl ("PortRcvConCtrl", 12) {
        /// PortPktRcvFECN.
        pkt_rcv_fecn: uint u32 [32, 32] => "PortPktRcvFECN",
        /// PortPktRcvBECN.
        pkt_rcv_becn: uint u32 [64, 32] => "PortPktRcvBECN",
    }
}

perf_attr! {
    /// PortSLRcvFECN: packets received with FECN set, per SL. PerfMgt 0x0032, 68 bytes (of 192).
    pub struct PortSlRcvFecn ("PortSLRcvFECN", 68) {
        /// Per SL 0–15.
        fecn: array [u32; 16] [32, 32] => "PortSLRcvFECN",
    }
}

perf_attr! {
    /// PortSLRcvBECN: packets received with BECN set, per SL. PerfMgt 0x0033, 68 bytes (of 192).
    pub struct PortSlRcvBecn ("PortSLRcvBECN", 68) {
        /// Per SL 0–15.
        becn: array [u32; 16] [32, 32] => "PortSLRcvBECN",
    }
}

perf_attr! {
    /// PortXmitConCtrl: time the port spent in congestion. PerfMgt 0x0034, 8 bytes (of 192).
    pub struct PortXmitConCtrl ("PortXmitConCtrl", 8) {
        /// PortXmitTimeCong.
        xmit_time_cong: uint u32 [32, 32] => "PortXmitTimeCong",
    }
}

perf_attr! {
    /// PortVLXmitTimeCong: time each data VL spent in congestion. PerfMgt 0x0035, 64 bytes (of 192).
    pub struct PortVlXmitTimeCong ("PortVLXmitTimeCong", 64) {
        /// Per VL 0–14.
        time_cong: array [u32; 15] [32, 32] => "PortVLXmitTimeCong",
    }
}

perf_attr! {
    /// PortXmitDataSL: data sent per SL (4-octet words). PerfMgt 0x0036, 68 bytes (of 192).
    pub struct PortXmitDataSl ("PortXmitDataSL", 68) {
        /// Per SL 0–15.
        data: array [u32; 16] [32, 32] => "XmtDataSL",
    }
}

perf_attr! {
    /// PortRcvDataSL: data received per SL (4-octet words). PerfMgt 0x0037, 68 bytes (of 192).
    pub struct PortRcvDataSl ("PortRcvDataSL", 68) {
        /// Per SL 0–15.
        data: array [u32; 16] [32, 32] => "RcvDataSL",
    }
}

/// PerfMgt attribute IDs of this module's structures.
pub mod pm_attr {
    /// PortSamplesControl.
    pub const PORT_SAMPLES_CONTROL: u16 = 0x0010;
    /// PortSamplesResult.
    pub const PORT_SAMPLES_RESULT: u16 = 0x0011;
    /// PortRcvErrorDetails.
    pub const PORT_RCV_ERROR_DETAILS: u16 = 0x0015;
    /// PortXmitDiscardDetails.
    pub const PORT_XMIT_DISCARD_DETAILS: u16 = 0x0016;
    /// PortOpRcvCounters.
    pub const PORT_OP_RCV_COUNTERS: u16 = 0x0017;
    /// PortFlowCtlCounters.
    pub const PORT_FLOW_CTL_COUNTERS: u16 = 0x0018;
    /// PortVLOpPackets.
    pub const PORT_VL_OP_PACKETS: u16 = 0x0019;
    /// PortVLOpData.
    pub const PORT_VL_OP_DATA: u16 = 0x001A;
    /// PortVLXmitFlowCtlUpdateErrors.
    pub const PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS: u16 = 0x001B;
    /// PortVLXmitWaitCounters.
    pub const PORT_VL_XMIT_WAIT_COUNTERS: u16 = 0x001C;
    /// PortExtendedSpeedsCounters.
    pub const PORT_EXTENDED_SPEEDS_COUNTERS: u16 = 0x001F;
    /// SwPortVLCongestion.
    pub const SW_PORT_VL_CONGESTION: u16 = 0x0030;
    /// PortRcvConCtrl.
    pub const PORT_RCV_CON_CTRL: u16 = 0x0031;
    /// PortSLRcvFECN.
    pub const PORT_SL_RCV_FECN: u16 = 0x0032;
    /// PortSLRcvBECN.
    pub const PORT_SL_RCV_BECN: u16 = 0x0033;
    /// PortXmitConCtrl.
    pub const PORT_XMIT_CON_CTRL: u16 = 0x0034;
    /// PortVLXmitTimeCong.
    pub const PORT_VL_XMIT_TIME_CONG: u16 = 0x0035;
    /// PortXmitDataSL.
    pub const PORT_XMIT_DATA_SL: u16 = 0x0036;
    /// PortRcvDataSL.
    pub const PORT_RCV_DATA_SL: u16 = 0x0037;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(
        PortSamplesControl,
        PortSamplesResult,
        PortRcvErrorDetails,
        PortXmitDiscardDetails,
        PortOpRcvCounters,
        PortFlowCtlCounters,
        PortVlOpPackets,
        PortVlOpData,
        PortVlXmitFlowCtlUpdateErrors,
        PortVlXmitWaitCounters,
        PortExtSpeedsCounters,
        PortExtSpeedsCountersRsfec,
        SwPortVlCongestion,
        PortRcvConCtrl,
        PortSlRcvFecn,
        PortSlRcvBecn,
        PortXmitConCtrl,
        PortVlXmitTimeCong,
        PortXmitDataSl,
        PortRcvDataSl,
    );

    #[test]
    fn rcv_error_details_are_six_big_endian_u16_after_the_selects() {
        let mut b = [0u8; 16];
        b[1] = 3;
        b[2..4].copy_from_slice(&[0x00, 0x3f]);
        b[4..6].copy_from_slice(&[0x01, 0x02]);
        b[14..16].copy_from_slice(&[0xff, 0xfe]);
        let d = PortRcvErrorDetails::parse(&b).unwrap();
        assert_eq!((d.port_select, d.counter_select), (3, 0x3f));
        assert_eq!(d.local_physical_errors, 0x0102);
        assert_eq!(d.looping_errors, 0xfffe);
    }

    #[test]
    fn flow_ctl_update_errors_pack_two_bits_per_vl_msb_first() {
        let mut b = [0u8; 8];
        b[4] = 0b1101_0010;
        b[7] = 0b0000_0011;
        let d = PortVlXmitFlowCtlUpdateErrors::parse(&b).unwrap();
        assert_eq!(&d.errors[..4], &[3, 1, 0, 2]);
        assert_eq!(d.errors[15], 3);
    }

    #[test]
    fn samples_result_status_is_the_low_bits_of_byte_3() {
        let mut b = [0u8; 64];
        b[0..2].copy_from_slice(&[0xab, 0xcd]);
        b[3] = 0x02;
        b[60..64].copy_from_slice(&[0, 0, 1, 2]);
        let r = PortSamplesResult::parse(&b).unwrap();
        assert_eq!((r.tag, r.sample_status, r.counters[14]), (0xabcd, 2, 0x102));
    }

    #[test]
    fn samples_control_odd_width_fields_sit_where_libibmad_reads_them() {
        let mut b = [0u8; 80];
        b[3] = 0x05; // CounterWidth, low 3 bits of byte 3
        b[4] = 0x38; // CounterMask0: bits 34..36
        b[11] = 0x03; // SampleStatus: low 2 bits of byte 11
        b[38..40].copy_from_slice(&[0x12, 0x34]); // CounterSelect0
        let c = PortSamplesControl::parse(&b).unwrap();
        assert_eq!(
            (c.counter_width, c.counter_mask0, c.sample_status),
            (5, 7, 3)
        );
        assert_eq!(c.counter_selects[0], 0x1234);
    }
}
