//! Wire enums: newtypes over the integer with named constants, so that
//! unknown values survive a parse/emit round trip (rustls' `enum_builder!`
//! idea).

/// Declares a wire enum: `pub struct Name(pub uN)` with named constants,
/// `name()`, `Debug`/`Display` that show the name or the number, and
/// [`FieldInt`](crate::wire::field::FieldInt) so it can be a `wire_struct!` field.
///
/// ```
/// mad_wire::wire_enum! {
///     /// Colours.
///     pub struct Colour(u8) {
///         /// Red.
///         RED = 1 => "Red",
///     }
/// }
/// assert_eq!(Colour::RED.name(), Some("Red"));
/// assert_eq!(format!("{}", Colour(9)), "9");
/// ```
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$m:meta])*
        pub struct $name:ident($t:ty) {
            $( $(#[$cm:meta])* $c:ident = $v:expr => $s:literal, )*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $t);

        impl $name {
            $( $(#[$cm])* pub const $c: Self = Self($v); )*

            /// The symbolic name of this value, if it is a known one.
            #[must_use]
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $( Self::$c => Some($s), )*
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            #[doc(hidden)]
            pub fn __value_name(v: u64) -> Option<&'static str> {
                <$t>::try_from(v).ok().and_then(|x| Self(x).name())
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}({:#x})", n, self.0),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}", self.0),
                }
            }
        }

        impl From<$t> for $name {
            fn from(v: $t) -> Self { Self(v) }
        }

        impl From<$name> for $t {
            fn from(v: $name) -> Self { v.0 }
        }

        impl $crate::wire::field::FieldInt for $name {
            #[inline(always)]
            fn to_u64(self) -> u64 { self.0 as u64 }
            #[inline(always)]
            fn from_u64(v: u64) -> Self { Self(v as $t) }
            const VALUE_NAME: Option<fn(u64) -> Option<&'static str>> = Some(Self::__value_name);
        }

        impl $crate::wire::field::Zero for $name {
            fn zero() -> Self { Self(0) }
        }
    };
}

wire_enum! {
    /// Management class (MAD byte 1).
    pub struct MgmtClass(u8) {
        /// Subnet management, LID-routed SMPs (QP0).
        SUBN_LID_ROUTED = 0x01 => "SubnMgmt",
        /// Subnet management, directed-route SMPs (QP0).
        SUBN_DIRECTED_ROUTE = 0x81 => "SubnMgmtDR",
        /// Subnet administration (SA).
        SUBN_ADM = 0x03 => "SubnAdm",
        /// Performance management.
        PERF_MGT = 0x04 => "PerfMgt",
        /// Baseboard management.
        BM = 0x05 => "BM",
        /// Device management.
        DEVICE_MGT = 0x06 => "DevMgt",
        /// Communication management.
        COM_MGT = 0x07 => "ComMgt",
        /// SNMP tunnelling.
        SNMP = 0x08 => "SNMP",
        /// Application / device administration.
        DEVICE_ADM = 0x10 => "DevAdm",
        /// Boot management.
        BOOT_MGT = 0x11 => "BootMgt",
        /// BIS.
        BIS = 0x12 => "BIS",
        /// Congestion control.
        CONG_MGT = 0x21 => "CongMgt",
    }
}

impl MgmtClass {
    /// QP0 classes: the two SMP classes.
    #[must_use]
    #[inline]
    pub fn is_smp(self) -> bool {
        self == Self::SUBN_LID_ROUTED || self == Self::SUBN_DIRECTED_ROUTE
    }
    /// Vendor range 1 (0x09–0x0F): no OUI, no RMPP.
    #[must_use]
    pub fn is_vendor_range1(self) -> bool {
        (0x09..=0x0F).contains(&self.0)
    }
    /// Vendor range 2 (0x30–0x4F): OUI at byte 37, RMPP allowed.
    #[must_use]
    #[inline]
    pub fn is_vendor_range2(self) -> bool {
        (0x30..=0x4F).contains(&self.0)
    }
    /// Classes whose MADs carry an RMPP header (the kernel's
    /// `ib_is_mad_class_rmpp`): SA, DevMgt, DevAdm, BIS, vendor range 2.
    #[must_use]
    #[inline]
    pub fn is_rmpp_class(self) -> bool {
        matches!(
            self,
            Self::SUBN_ADM | Self::DEVICE_MGT | Self::DEVICE_ADM | Self::BIS
        ) || self.is_vendor_range2()
    }
    /// Offset of class data in the MAD (the kernel's
    /// `ib_get_mad_data_offset`; SMP and PerfMgt use 64 through their own
    /// layouts).
    #[must_use]
    #[inline]
    pub fn data_offset(self) -> usize {
        match self {
            Self::SUBN_ADM => super::SA_DATA_OFFSET,
            Self::DEVICE_MGT | Self::DEVICE_ADM | Self::BIS => 64,
            Self::SUBN_LID_ROUTED | Self::SUBN_DIRECTED_ROUTE | Self::PERF_MGT => 64,
            c if c.is_vendor_range2() => super::VENDOR_DATA_OFFSET,
            _ => super::MAD_HEADER_LEN,
        }
    }
}

wire_enum! {
    /// Method, without the response bit (MAD byte 3, low 7 bits).
    pub struct Method(u8) {
        /// Get.
        GET = 0x01 => "Get",
        /// Set.
        SET = 0x02 => "Set",
        /// Send.
        SEND = 0x03 => "Send",
        /// Trap.
        TRAP = 0x05 => "Trap",
        /// Report.
        REPORT = 0x06 => "Report",
        /// TrapRepress (counts as a response).
        TRAP_REPRESS = 0x07 => "TrapRepress",
        /// SA GetTable.
        GET_TABLE = 0x12 => "GetTable",
        /// SA GetTraceTable.
        GET_TRACE_TABLE = 0x13 => "GetTraceTable",
        /// SA GetMulti.
        GET_MULTI = 0x14 => "GetMulti",
        /// SA Delete.
        DELETE = 0x15 => "Delete",
    }
}

/// The response bit of MAD byte 3.
pub const METHOD_RESPONSE_BIT: u8 = 0x80;

wire_enum! {
    /// Attribute identifier (MAD bytes 16–17). Names depend on the class;
    /// the constants cover SMP, SA, PerfMgt and the common ones, and
    /// [`AttributeId::name_in`] picks by class.
    pub struct AttributeId(u16) {
        /// ClassPortInfo (all GS classes).
        CLASS_PORT_INFO = 0x0001 => "ClassPortInfo",
        /// Notice (traps, SA reports).
        NOTICE = 0x0002 => "Notice",
        /// InformInfo.
        INFORM_INFO = 0x0003 => "InformInfo",
        /// SMP NodeDescription.
        NODE_DESC = 0x0010 => "NodeDescription",
        /// SMP NodeInfo.
        NODE_INFO = 0x0011 => "NodeInfo",
        /// SMP SwitchInfo.
        SWITCH_INFO = 0x0012 => "SwitchInfo",
        /// SMP GUIDInfo.
        GUID_INFO = 0x0014 => "GUIDInfo",
        /// SMP PortInfo.
        PORT_INFO = 0x0015 => "PortInfo",
        /// SMP P_KeyTable.
        PKEY_TABLE = 0x0016 => "P_KeyTable",
        /// SMP SLtoVLMappingTable.
        SL_TO_VL_TABLE = 0x0017 => "SLtoVLMappingTable",
        /// SMP VLArbitrationTable.
        VL_ARB_TABLE = 0x0018 => "VLArbitrationTable",
        /// SMP LinearForwardingTable.
        LINEAR_FWD_TABLE = 0x0019 => "LinearForwardingTable",
        /// SMP RandomForwardingTable.
        RANDOM_FWD_TABLE = 0x001A => "RandomForwardingTable",
        /// SMP MulticastForwardingTable.
        MCAST_FWD_TABLE = 0x001B => "MulticastForwardingTable",
        /// SMP SMInfo.
        SM_INFO = 0x0020 => "SMInfo",
        /// SMP PortInfoExtended.
        PORT_INFO_EXT = 0x0033 => "PortInfoExtended",
    }
}

impl AttributeId {
    /// SA NodeRecord.
    pub const SA_NODE_RECORD: Self = Self(0x0011);
    /// SA PortInfoRecord.
    pub const SA_PORTINFO_RECORD: Self = Self(0x0012);
    /// SA SLtoVLMappingTableRecord.
    pub const SA_SL2VL_RECORD: Self = Self(0x0013);
    /// SA SwitchInfoRecord.
    pub const SA_SWITCHINFO_RECORD: Self = Self(0x0014);
    /// SA LinearForwardingTableRecord.
    pub const SA_LFT_RECORD: Self = Self(0x0015);
    /// SA RandomForwardingTableRecord.
    pub const SA_RFT_RECORD: Self = Self(0x0016);
    /// SA MulticastForwardingTableRecord.
    pub const SA_MFT_RECORD: Self = Self(0x0017);
    /// SA SMInfoRecord.
    pub const SA_SMINFO_RECORD: Self = Self(0x0018);
    /// SA LinkRecord.
    pub const SA_LINK_RECORD: Self = Self(0x0020);
    /// SA GuidInfoRecord.
    pub const SA_GUIDINFO_RECORD: Self = Self(0x0030);
    /// SA ServiceRecord.
    pub const SA_SERVICE_RECORD: Self = Self(0x0031);
    /// SA P_KeyTableRecord.
    pub const SA_PKEY_TABLE_RECORD: Self = Self(0x0033);
    /// SA PathRecord.
    pub const SA_PATH_RECORD: Self = Self(0x0035);
    /// SA VLArbitrationTableRecord.
    pub const SA_VLARB_RECORD: Self = Self(0x0036);
    /// SA MCMemberRecord.
    pub const SA_MCMEMBER_RECORD: Self = Self(0x0038);
    /// SA TraceRecord.
    pub const SA_TRACE_RECORD: Self = Self(0x0039);
    /// SA MultiPathRecord.
    pub const SA_MULTIPATH_RECORD: Self = Self(0x003A);
    /// SA InformInfoRecord.
    pub const SA_INFORMINFO_RECORD: Self = Self(0x00F3);
    /// PerfMgt PortSamplesControl.
    pub const PM_PORT_SAMPLES_CONTROL: Self = Self(0x0010);
    /// PerfMgt PortSamplesResult.
    pub const PM_PORT_SAMPLES_RESULT: Self = Self(0x0011);
    /// PerfMgt PortCounters.
    pub const PM_PORT_COUNTERS: Self = Self(0x0012);
    /// PerfMgt PortCountersExtended.
    pub const PM_PORT_COUNTERS_EXT: Self = Self(0x001D);

    /// The attribute's name as used by `class`.
    #[must_use]
    pub fn name_in(self, class: MgmtClass) -> Option<&'static str> {
        match (class, self.0) {
            (_, 0x0001) => Some("ClassPortInfo"),
            (_, 0x0002) => Some("Notice"),
            (_, 0x0003) => Some("InformInfo"),
            (c, _) if c.is_smp() => self.name(),
            (MgmtClass::SUBN_ADM, v) => Some(match v {
                0x0011 => "NodeRecord",
                0x0012 => "PortInfoRecord",
                0x0013 => "SLtoVLMappingTableRecord",
                0x0014 => "SwitchInfoRecord",
                0x0015 => "LinearForwardingTableRecord",
                0x0016 => "RandomForwardingTableRecord",
                0x0017 => "MulticastForwardingTableRecord",
                0x0018 => "SMInfoRecord",
                0x0019 => "LinkSpeedWidthPairsTableRecord",
                0x0020 => "LinkRecord",
                0x0030 => "GuidInfoRecord",
                0x0031 => "ServiceRecord",
                0x0033 => "P_KeyTableRecord",
                0x0035 => "PathRecord",
                0x0036 => "VLArbitrationTableRecord",
                0x0038 => "MCMemberRecord",
                0x0039 => "TraceRecord",
                0x003A => "MultiPathRecord",
                0x003B => "ServiceAssociationRecord",
                0x00F3 => "InformInfoRecord",
                _ => return None,
            }),
            (MgmtClass::PERF_MGT, v) => Some(match v {
                0x0010 => "PortSamplesControl",
                0x0011 => "PortSamplesResult",
                0x0012 => "PortCounters",
                0x0015 => "PortRcvErrorDetails",
                0x0016 => "PortXmitDiscardDetails",
                0x0017 => "PortOpRcvCounters",
                0x0018 => "PortFlowCtlCounters",
                0x0019 => "PortVLOpPackets",
                0x001A => "PortVLOpData",
                0x001B => "PortVLXmitFlowCtlUpdateErrors",
                0x001C => "PortVLXmitWaitCounters",
                0x001D => "PortCountersExtended",
                0x001F => "PortExtendedSpeedsCounters",
                0x0030 => "SwPortVLCongestion",
                0x0031 => "PortRcvConCtrl",
                0x0032 => "PortSLRcvFECN",
                0x0033 => "PortSLRcvBECN",
                0x0034 => "PortXmitConCtrl",
                0x0035 => "PortVLXmitTimeCong",
                0x0036 => "PortXmitDataSL",
                0x0037 => "PortRcvDataSL",
                _ => return None,
            }),
            (MgmtClass::CONG_MGT, v) => Some(match v {
                0x0011 => "CongestionInfo",
                0x0012 => "CongestionKeyInfo",
                0x0013 => "CongestionLog",
                0x0014 => "SwitchCongestionSetting",
                0x0015 => "SwitchPortCongestionSetting",
                0x0016 => "CACongestionSetting",
                0x0017 => "CongestionControlTable",
                0x0018 => "TimeStamp",
                _ => return None,
            }),
            _ => None,
        }
    }
}

/// MAD status word (bytes 4–5). For directed-route SMPs bit 15 is the D
/// bit and is not part of the status; see [`crate::wire::smp`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MadStatus(pub u16);

impl MadStatus {
    /// Success.
    pub const SUCCESS: Self = Self(0);
    /// Busy (bit 0).
    pub const BUSY: Self = Self(0x0001);
    /// Redirect required (bit 1).
    pub const REDIRECT: Self = Self(0x0002);
    /// Bad base or class version.
    pub const BAD_VERSION: Self = Self(1 << 2);
    /// Method not supported.
    pub const METHOD_UNSUPPORTED: Self = Self(2 << 2);
    /// Method/attribute combination not supported.
    pub const METHOD_ATTR_UNSUPPORTED: Self = Self(3 << 2);
    /// Invalid attribute or attribute-modifier value.
    pub const INVALID_FIELD: Self = Self(7 << 2);
    /// SA: no resources.
    pub const SA_NO_RESOURCES: Self = Self(0x0100);
    /// SA: request invalid.
    pub const SA_REQ_INVALID: Self = Self(0x0200);
    /// SA: no records.
    pub const SA_NO_RECORDS: Self = Self(0x0300);
    /// SA: too many records.
    pub const SA_TOO_MANY_RECORDS: Self = Self(0x0400);
    /// SA: invalid GID.
    pub const SA_REQ_INVALID_GID: Self = Self(0x0500);
    /// SA: insufficient components.
    pub const SA_REQ_INSUFFICIENT_COMPONENTS: Self = Self(0x0600);
    /// SA: request denied.
    pub const SA_REQ_DENIED: Self = Self(0x0700);

    /// Busy bit.
    #[must_use]
    pub fn is_busy(self) -> bool {
        self.0 & 1 != 0
    }
    /// Redirect bit.
    #[must_use]
    pub fn is_redirect(self) -> bool {
        self.0 & 2 != 0
    }
    /// The 3-bit "invalid field" code (bits 2–4).
    #[must_use]
    pub fn invalid_field_code(self) -> u8 {
        ((self.0 >> 2) & 7) as u8
    }
    /// The class-specific code (upper byte).
    #[must_use]
    pub fn class_code(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// A human description of the common bits.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self.invalid_field_code() {
            0 if self.0 == 0 => "success",
            0 if self.is_busy() => "busy",
            0 if self.is_redirect() => "redirect required",
            0 => "class-specific status",
            1 => "bad base or class version",
            2 => "method not supported",
            3 => "method/attribute combination not supported",
            7 => "invalid attribute or attribute modifier",
            _ => "reserved invalid-field code",
        }
    }
}

impl core::fmt::Debug for MadStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "MadStatus({:#06x}: {})", self.0, self.describe())
    }
}

impl core::fmt::Display for MadStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#06x} ({})", self.0, self.describe())
    }
}

impl crate::wire::field::FieldInt for MadStatus {
    fn to_u64(self) -> u64 {
        u64::from(self.0)
    }
    fn from_u64(v: u64) -> Self {
        Self(v as u16)
    }
}

impl crate::wire::field::Zero for MadStatus {
    fn zero() -> Self {
        Self(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_enum_values_round_trip_and_print_as_numbers() {
        let c = MgmtClass(0x77);
        assert_eq!(c.name(), None);
        assert_eq!(u8::from(c), 0x77);
        assert_eq!(format!("{c}"), "119");
        assert_eq!(format!("{}", MgmtClass::SUBN_ADM), "SubnAdm");
    }

    #[test]
    fn class_properties_follow_the_kernel() {
        assert!(MgmtClass::SUBN_ADM.is_rmpp_class());
        assert!(MgmtClass(0x30).is_rmpp_class());
        assert!(!MgmtClass::PERF_MGT.is_rmpp_class());
        assert_eq!(MgmtClass::SUBN_ADM.data_offset(), 56);
        assert_eq!(MgmtClass(0x4F).data_offset(), 40);
        assert_eq!(MgmtClass::COM_MGT.data_offset(), 24);
        assert_eq!(
            AttributeId(0x35).name_in(MgmtClass::SUBN_ADM),
            Some("PathRecord")
        );
        assert_eq!(
            AttributeId(0x15).name_in(MgmtClass::SUBN_LID_ROUTED),
            Some("PortInfo")
        );
    }

    #[test]
    fn status_bits_decode() {
        assert_eq!(MadStatus(0x000C).invalid_field_code(), 3);
        assert_eq!(MadStatus::SA_NO_RECORDS.class_code(), 3);
        assert!(MadStatus(1).is_busy());
    }
}
