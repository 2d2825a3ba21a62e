//! SMP, common GS and PerfMgt attributes as lossless `Repr`s
//! (ATTRIBUTES.md §1–§10, MAD.md §9).
//!
//! Every structure is built with [`wire_struct!`](crate::wire_struct):
//! public fields in wire order, reserved ranges kept as `reserved*`
//! fields, and libibmad's print names as field labels. Fields that
//! infiniband-diags prints by name use the wire enums [`NodeType`],
//! [`PortState`], [`PhysPortState`] and [`SmState`].
//!
//! | type | attribute | bytes |
//! |---|---|---|
//! | [`NodeDescription`] | SMP 0x0010 | 64 |
//! | [`NodeInfo`] | SMP 0x0011 | 40 |
//! | [`SwitchInfo`] | SMP 0x0012 | 20 |
//! | [`GuidInfo`] | SMP 0x0014 | 64 |
//! | [`PortInfo`] | SMP 0x0015 | 64 |
//! | [`PKeyTable`] | SMP 0x0016 | 64 |
//! | [`SlToVlTable`] | SMP 0x0017 | 8 |
//! | [`VlArbTable`] | SMP 0x0018 | 64 |
//! | [`LinearFwdTable`] | SMP 0x0019 | 64 |
//! | [`MulticastFwdTable`] | SMP 0x001B | 64 |
//! | [`SmInfo`] | SMP 0x0020 | 21 |
//! | [`ClassPortInfo`] | GS 0x0001 | 72 |
//! | [`Notice`] | 0x0002 (Trap, TrapRepress, SA Report) | 80 |
//! | [`PortCounters`] | PerfMgt 0x0012 | 44 (of 192) |
//! | [`PortCountersExt`] | PerfMgt 0x001D | 184 (of 192) |
//! | `perf_ext` ([`PortRcvErrorDetails`], ...) | PerfMgt 0x0010, 0x0015–0x001F, 0x0030–0x0037 | 8–152 |
//!
//! ```
//! use mad_wire::wire::attr::{PortInfo, PortState};
//! use mad_wire::wire::Repr;
//! let mut b = [0u8; 64];
//! b[32] = 0x24;
//! let p = PortInfo::parse(&b).unwrap();
//! assert_eq!((p.link_speed_supported, p.port_state), (2, PortState::ACTIVE));
//! assert_eq!(p.to_vec().unwrap(), b.to_vec());
//! ```

/// A PerfMgt attribute as [`wire_struct!`](crate::wire_struct) builds it,
/// after the fields most PerfMgt attributes start with, written here once:
/// byte 0 (with `per_opcode`, the OpCode counted; else reserved),
/// PortSelect (byte 1) and CounterSelect (bytes 2–3, which counters a Set
/// clears). With `ext_speeds`, PortExtendedSpeedsCounters' first 20 bytes
/// instead (both of its layouts share them).
macro_rules! perf_attr {
    (@with [$($head:tt)*] $(#[$sm:meta])* pub struct $name:ident ($sname:literal, $len:expr) {
        $($fields:tt)*
    }) => {
        crate::wire_struct! {
            $(#[$sm])*
            pub struct $name ($sname, $len) {
                $($head)*
                $($fields)*
            }
        }
    };
    (@with_selects [$($byte0:tt)*] $($rest:tt)*) => {
        perf_attr! { @with [
            $($byte0)*
            /// PortSelect (byte 1); 0xFF = all ports if supported.
            port_select: uint u8 [8, 8] => "PortSelect",
            /// CounterSelect (bytes 2–3): which counters a Set clears.
            counter_select: uint u16 [16, 16] => "CounterSelect",
        ] $($rest)* }
    };
    ($(#[$sm:meta])* pub struct $name:ident ($sname:literal, $len:expr) per_opcode { $($fields:tt)* }) => {
        perf_attr! { @with_selects [
            /// OpCode (byte 0): the opcode counted.
            op_code: uint u8 [0, 8] => "OpCode",
        ] $(#[$sm])* pub struct $name ($sname, $len) { $($fields)* } }
    };
    ($(#[$sm:meta])* pub struct $name:ident ($sname:literal, $len:expr) ext_speeds { $($fields:tt)* }) => {
        perf_attr! { @with [
            /// Reserved.
            reserved: uint u8 [0, 8] => _,
            /// PortSelect (byte 1).
            port_select: uint u8 [8, 8] => "PortSelect",
            /// Reserved.
            reserved2: uint u64 [16, 48] => _,
            /// CounterSelect (bytes 8–15).
            counter_select: uint u64 [64, 64] => "CounterSelect",
            /// SyncHeaderErrorCounter.
            sync_header_error_counter: uint u16 [128, 16] => "SyncHeaderErrorCounter",
            /// UnknownBlockCounter.
            unknown_block_counter: uint u16 [144, 16] => "UnknownBlockCounter",
        ] $(#[$sm])* pub struct $name ($sname, $len) { $($fields)* } }
    };
    ($(#[$sm:meta])* pub struct $name:ident ($sname:literal, $len:expr) { $($fields:tt)* }) => {
        perf_attr! { @with_selects [
            /// Reserved (byte 0).
            reserved: uint u8 [0, 8] => _,
        ] $(#[$sm])* pub struct $name ($sname, $len) { $($fields)* } }
    };
}

mod class_port_info;
mod counters;
mod enums;
mod node;
mod notice;
mod perf_ext;
mod port_info;
mod sm_info;
mod switch;
mod tables;

pub use class_port_info::ClassPortInfo;
pub use counters::{pm_cap, pm_cap2, PortCounters, PortCountersExt};
pub use enums::{NodeType, PhysPortState, PortState, SmState};
pub use node::{NodeDescription, NodeInfo};
pub use notice::{trap, Notice};
pub use perf_ext::{
    pm_attr, PortExtSpeedsCounters, PortExtSpeedsCountersRsfec, PortFlowCtlCounters,
    PortOpRcvCounters, PortRcvConCtrl, PortRcvDataSl, PortRcvErrorDetails, PortSamplesControl,
    PortSamplesResult, PortSlRcvBecn, PortSlRcvFecn, PortVlOpData, PortVlOpPackets,
    PortVlXmitFlowCtlUpdateErrors, PortVlXmitTimeCong, PortVlXmitWaitCounters, PortXmitConCtrl,
    PortXmitDataSl, PortXmitDiscardDetails, SwPortVlCongestion,
};
pub use port_info::{port_cap, port_cap2, PortInfo};
pub use sm_info::SmInfo;
pub use switch::{LinearFwdTable, MulticastFwdTable, SwitchInfo};
pub use tables::{default_vlarb, GuidInfo, PKeyTable, SlToVlTable, VlArbTable, DEFAULT_SL2VL};
