//! Our types for each libibmad group, and how libibmad's fields map to ours.

use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, Notice,
    PortCounters, PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo, VlArbTable,
};
use mad_core::wire::field::{Fields, Repr};
use mad_core::wire::rmpp::RmppHeader;
use mad_core::wire::sa::SaHeader;
use mad_core::wire::sa_records::{
    GuidInfoRecord, LftRecord, McMemberRecord, MftRecord, NodeRecord, PathRecord, PortInfoRecord,
    ServiceRecord, Sl2VlRecord, SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use mad_core::wire::smp::{DrSmpRepr, SmpRepr};
use mad_core::wire::vendor::VendorHeader;
use mad_core::wire::{Error, MadHeader};

use crate::run::*;

// ------------------------------------------------------------------ our types

/// A type-erased `Repr::parse`.
pub(crate) type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

/// One of our `Repr`s, type-erased.
#[derive(Clone, Copy)]
pub(crate) struct Ty {
    pub(crate) name: &'static str,
    pub(crate) len: usize,
    pub(crate) parse: ParseFn,
    /// Parses `src` and emits the result into `dst`.
    pub(crate) reemit: fn(&[u8], &mut [u8]) -> Result<(), Error>,
}

macro_rules! ty {
    ($t:ty) => {
        Ty {
            name: <$t as Repr>::NAME,
            len: <$t as Repr>::LEN,
            parse: |b| <$t as Repr>::parse(b).map(|v| Box::new(v) as Box<dyn Fields>),
            reemit: |src, dst| <$t as Repr>::parse(src)?.emit(dst),
        }
    };
}

/// What a libibmad field group (the C program's `part` name) is on our side.
pub(crate) enum Target {
    /// Our `Repr` for it, starting at this byte of the MAD.
    Ours(Ty, usize),
    /// Nothing here to compare with, and why.
    NotOurs(&'static str),
}

pub(crate) fn target(group: &str) -> Option<Target> {
    use Target::*;
    Some(match group {
        "MadHeader" => Ours(ty!(MadHeader), 0),
        "RmppHeader" => Ours(ty!(RmppHeader), 24),
        "SaHeader" => Ours(ty!(SaHeader), 36),
        "NodeInfo" => Ours(ty!(NodeInfo), 64),
        "NodeDesc" => Ours(ty!(NodeDescription), 64),
        "PortInfo" => Ours(ty!(PortInfo), 64),
        "SwitchInfo" => Ours(ty!(SwitchInfo), 64),
        "GuidInfo" => Ours(ty!(GuidInfo), 64),
        "SlToVlTable" => Ours(ty!(SlToVlTable), 64),
        "VlArbTable" => Ours(ty!(VlArbTable), 64),
        "LinearFwdTable" => Ours(ty!(LinearFwdTable), 64),
        "MulticastFwdTable" => Ours(ty!(MulticastFwdTable), 64),
        "SmInfo" => Ours(ty!(SmInfo), 64),
        "Notice" => Ours(ty!(Notice), 64),
        "ClassPortInfo" => Ours(ty!(ClassPortInfo), 64),
        "PortCounters" => Ours(ty!(PortCounters), 64),
        "PortCountersExt" => Ours(ty!(PortCountersExt), 64),
        "NodeRecord" => Ours(ty!(NodeRecord), 56),
        "PathRecord" => Ours(ty!(PathRecord), 56),
        "McMemberRecord" => Ours(ty!(McMemberRecord), 56),
        "ServiceRecord" => Ours(ty!(ServiceRecord), 56),
        "GuidInfoRecord" => Ours(ty!(GuidInfoRecord), 56),
        "PortInfoRecord" => Ours(ty!(PortInfoRecord), 56),
        "SwitchInfoRecord" => Ours(ty!(SwitchInfoRecord), 56),
        "SmInfoRecord" => Ours(ty!(SmInfoRecord), 56),
        "LftRecord" => Ours(ty!(LftRecord), 56),
        "MftRecord" => Ours(ty!(MftRecord), 56),
        "Sl2VlRecord" => Ours(ty!(Sl2VlRecord), 56),
        "VlArbRecord" => Ours(ty!(VlArbRecord), 56),

        "SmpHeader" => Ours(ty!(SmpRepr), 0),
        "DrSmpHeader" => Ours(ty!(DrSmpRepr), 0),
        "Vendor2Header" => Ours(ty!(VendorHeader), 24),
        "SaData" | "GsData" | "Vendor2Data" => NotOurs(
            "libibmad's raw payload blob (SaData = MAD bytes 56-255, GsData = 64-255, \
             Vendor2Data = 40-255); the records and attributes inside are compared one by one",
        ),
        "CcHeader"
        | "CongestionInfo"
        | "CongestionKeyInfo"
        | "CongestionLogSwitch"
        | "CongestionLogEventSwitch"
        | "CongestionLogCa"
        | "CongestionLogEventCa"
        | "SwitchCongestionSetting"
        | "SwitchPortCongestionSettingElement"
        | "CaCongestionSetting"
        | "CaCongestionEntry"
        | "CongestionControlTable"
        | "CongestionControlTableEntry"
        | "Timestamp" => NotOurs("Congestion Control class (0x21): not a class madstack speaks"),
        "PortXmitDataSL"
        | "PortRcvDataSL"
        | "PortXmitDiscardDetails"
        | "PortRcvErrorDetails"
        | "PortSamplesControl"
        | "PortSamplesResult"
        | "PortExtendedSpeedsCounters"
        | "PortExtendedSpeedsCountersRsfec"
        | "PortOpRcvCounters"
        | "PortFlowCtlCounters"
        | "PortVLOpPackets"
        | "PortVLOpData"
        | "PortVLXmitFlowCtlUpdateErrors"
        | "PortVLXmitWaitCounters"
        | "SwPortVLCongestion"
        | "PortRcvConCtrl"
        | "PortSLRcvFECN"
        | "PortSLRcvBECN"
        | "PortXmitConCtrl"
        | "PortVLXmitTimeCong" => NotOurs(
            "PerfMgt attribute outside issue 2 (only PortCounters and PortCountersExtended)",
        ),
        "MlnxExtPortInfo" | "PortInfoExtended" => {
            NotOurs("SMP attribute outside issue 2 (vendor ExtendedPortInfo / PortInfoExtended)")
        }
        "MultiPathRecord" => NotOurs("SA MultiPathRecord is outside issue 2"),
        _ => return None,
    })
}

// ------------------------------------------------------------------ mapping

/// How one libibmad field maps onto our fields.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Map {
    /// Exactly our field with this label, same bits.
    Exact(&'static str),
    /// A sub-range of our field with this label (an element of an array,
    /// bytes inside a blob).
    Within(&'static str),
    /// Exactly these consecutive fields of ours.
    Span(&'static [&'static str]),
    /// libibmad declares the field with a raw offset its setter swizzles:
    /// it lands exactly on our field `lands_on`, while our field `ours`
    /// (the IBA position) is elsewhere.
    Misplaced {
        lands_on: &'static str,
        ours: &'static str,
    },
}

/// Where a libibmad field's print name is not our label (or a field is not
/// one-to-one). Everything else maps by print name, exact bits.
pub(crate) const EXPLICIT: &[(&str, &str, Map)] = &[
    // Common MAD header: libibmad prefixes "Mad"; we print the short names.
    ("MadHeader", "IB_MAD_METHOD_F", Map::Exact("Method")),
    ("MadHeader", "IB_MAD_RESPONSE_F", Map::Exact("IsResponse")),
    ("MadHeader", "IB_MAD_CLASSVER_F", Map::Exact("ClassVers")),
    ("MadHeader", "IB_MAD_MGMTCLASS_F", Map::Exact("MgmtClass")),
    ("MadHeader", "IB_MAD_BASEVER_F", Map::Exact("BaseVers")),
    ("MadHeader", "IB_MAD_STATUS_F", Map::Exact("Status")),
    ("MadHeader", "IB_MAD_TRID_F", Map::Exact("TID")),
    ("MadHeader", "IB_MAD_ATTRID_F", Map::Exact("AttrId")),
    ("MadHeader", "IB_MAD_ATTRMOD_F", Map::Exact("AttrMod")),
    // RMPP data words: one field each on our side, libibmad has aliases.
    ("RmppHeader", "IB_SA_RMPP_D1_F", Map::Exact("RmppSegNum")),
    ("RmppHeader", "IB_SA_RMPP_D2_F", Map::Exact("RmppPayload")),
    (
        "RmppHeader",
        "IB_SA_RMPP_NEWWIN_F",
        Map::Exact("RmppPayload"),
    ),
    // Tables: libibmad names single entries of our arrays.
    ("GuidInfo", "IB_GI_GUID0_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID1_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID2_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID3_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID4_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID5_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID6_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GI_GUID7_F", Map::Within("GUID")),
    ("GuidInfo", "IB_GUID_GUID0_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID0_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID1_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID2_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID3_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID4_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID5_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID6_F", Map::Within("GUID")),
    ("GuidInfoRecord", "IB_SA_GIR_GUID7_F", Map::Within("GUID")),
    // Notice: our labels name both the generic and the vendor meaning.
    (
        "Notice",
        "IB_NOTICE_PRODUCER_F",
        Map::Exact("NoticeProducerType/VendorID"),
    ),
    (
        "Notice",
        "IB_NOTICE_TRAP_NUMBER_F",
        Map::Exact("NoticeTrapNumber/DeviceID"),
    ),
    // Trap-specific words inside DataDetails.
    (
        "Notice",
        "IB_NOTICE_DATA_LID_F",
        Map::Within("NoticeDataDetails"),
    ),
    (
        "Notice",
        "IB_NOTICE_DATA_144_LID_F",
        Map::Within("NoticeDataDetails"),
    ),
    (
        "Notice",
        "IB_NOTICE_DATA_144_CAPMASK_F",
        Map::Within("NoticeDataDetails"),
    ),
    // PortCounters.QP1Dropped: libibmad's {160, 16} raw offset is swizzled by
    // its setter onto bytes 22-23, i.e. VL15Dropped (ATTRIBUTES.md §9).
    (
        "PortCounters",
        "IB_PC_QP1_DROP_F",
        Map::Misplaced {
            lands_on: "VL15Dropped",
            ours: "QP1Dropped",
        },
    ),
    // The generic GID halves, applied to PathRecord.DGID by the C program.
    ("PathRecord", "IB_GID_PREFIX_F", Map::Within("PathRecDGid")),
    ("PathRecord", "IB_GID_GUID_F", Map::Within("PathRecDGid")),
    // ServiceData is four typed arrays here, one blob in libibmad.
    (
        "ServiceRecord",
        "IB_SA_SR_DATA_F",
        Map::Span(&[
            "ServiceData8",
            "ServiceData16",
            "ServiceData32",
            "ServiceData64",
        ]),
    ),
    // ATS (the SM's address-translation service record) inside ServiceData.
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_ADDR_F",
        Map::Within("ServiceData8"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_MAGIC_KEY_F",
        Map::Within("ServiceData16"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_TYPE_F",
        Map::Within("ServiceData16"),
    ),
    (
        "ServiceRecord",
        "IB_ATS_SM_NODE_NAME_F",
        Map::Span(&["ServiceData32", "ServiceData64"]),
    ),
];

/// Distinct libibmad fields compared per group. Pinned so that coverage
/// cannot shrink silently.
pub(crate) const EXPECTED_COUNTS: &[(&str, usize)] = &[
    ("MadHeader", 9),
    ("SmpHeader", 1),
    ("DrSmpHeader", 17),
    ("Vendor2Header", 1),
    ("RmppHeader", 10),
    ("SaHeader", 3),
    ("NodeInfo", 12),
    ("NodeDesc", 1),
    ("PortInfo", 51),
    ("SwitchInfo", 18),
    ("GuidInfo", 9),
    ("SlToVlTable", 1),
    ("VlArbTable", 1),
    ("LinearFwdTable", 1),
    ("MulticastFwdTable", 1),
    ("SmInfo", 5),
    ("Notice", 11),
    ("ClassPortInfo", 22),
    ("PortCounters", 21),
    ("PortCountersExt", 25),
    ("NodeRecord", 14),
    ("PathRecord", 8),
    ("McMemberRecord", 12),
    ("ServiceRecord", 11),
    ("GuidInfoRecord", 10),
    ("PortInfoRecord", 51),
    ("SwitchInfoRecord", 18),
    ("SmInfoRecord", 5),
    ("LftRecord", 1),
    ("MftRecord", 1),
    ("Sl2VlRecord", 1),
    ("VlArbRecord", 1),
];

pub(crate) fn mapping(group: &str, lf: &LibField) -> Map {
    EXPLICIT
        .iter()
        .find(|(g, e, _)| *g == group && *e == lf.ename)
        .map(|(_, _, m)| *m)
        .unwrap_or_else(|| Map::Exact(leak(lf.print.clone())))
}

pub(crate) fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
