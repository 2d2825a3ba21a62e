//! TraceRecord (SA attribute 0x0039), 46 bytes (48 in a table).

use crate::wire::AttributeId;

crate::wire_struct! {
    /// TraceRecord (IBA 15.2.5.21): one node of a path, as the answer to
    /// SubnAdmGetTraceTable (whose request carries a PathRecord) lists
    /// them. OpenSM 3.3.23 has no such record (no `ib_trace_record_t` in
    /// its `ib_types.h`); the layout is the IBA table's, field for field as
    /// Wireshark's `parse_TraceRecord` reads it: GIDPrefix 8 bytes,
    /// IDGeneration 2, a reserved byte, NodeType 1, NodeID, ChassisID,
    /// EntryPortID, ExitPortID 8 each, EntryPort 1, ExitPort 1.
    pub struct TraceRecord ("TraceRecord", 46) {
        /// Subnet prefix of the node's subnet.
        gid_prefix: uint u64 [0, 64] => "GIDPrefix",
        /// Changes when the IDs below are generated anew.
        id_generation: uint u16 [64, 16] => "IDGeneration",
        /// Reserved (byte 10).
        reserved: uint u8 [80, 8] => _,
        /// NodeType (1 CA, 2 switch, 3 router).
        node_type: uint u8 [88, 8] => "NodeType",
        /// An identifier of the node.
        node_id: uint u64 [96, 64] => "NodeID",
        /// An identifier of the chassis the node is in.
        chassis_id: uint u64 [160, 64] => "ChassisID",
        /// An identifier of the port the path enters the node by (0 at
        /// the path's source).
        entry_port_id: uint u64 [224, 64] => "EntryPortID",
        /// An identifier of the port the path leaves the node by (0 at
        /// the path's destination).
        exit_port_id: uint u64 [288, 64] => "ExitPortID",
        /// The number of the port the path enters by.
        entry_port: uint u8 [352, 8] => "EntryPort",
        /// The number of the port the path leaves by.
        exit_port: uint u8 [360, 8] => "ExitPort",
    }
}

sa_record! {
    TraceRecord, AttributeId::SA_TRACE_RECORD, padded 48;
    0 COMP_GID_PREFIX => "GIDPrefix",
    1 COMP_ID_GENERATION => "IDGeneration",
    2 COMP_RESERVED => "reserved",
    3 COMP_NODE_TYPE => "NodeType",
    4 COMP_NODE_ID => "NodeID",
    5 COMP_CHASSIS_ID => "ChassisID",
    6 COMP_ENTRY_PORT_ID => "EntryPortID",
    7 COMP_EXIT_PORT_ID => "ExitPortID",
    8 COMP_ENTRY_PORT => "EntryPort",
    9 COMP_EXIT_PORT => "ExitPort",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(TraceRecord);

    #[test]
    fn fields_sit_at_the_offsets_of_the_iba_table() {
        let mut b = [0u8; 46];
        b[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        b[8..10].copy_from_slice(&7u16.to_be_bytes());
        b[11] = 2;
        b[12..20].copy_from_slice(&0x11u64.to_be_bytes());
        b[20..28].copy_from_slice(&0x22u64.to_be_bytes());
        b[28..36].copy_from_slice(&0x33u64.to_be_bytes());
        b[36..44].copy_from_slice(&0x44u64.to_be_bytes());
        b[44] = 5;
        b[45] = 9;
        let r = TraceRecord::parse(&b).unwrap();
        assert_eq!(r.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!((r.id_generation, r.node_type), (7, 2));
        assert_eq!(
            (r.node_id, r.chassis_id, r.entry_port_id, r.exit_port_id),
            (0x11, 0x22, 0x33, 0x44)
        );
        assert_eq!((r.entry_port, r.exit_port), (5, 9));
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn table_stride_and_components_follow_the_iba_table() {
        assert_eq!(TraceRecord::PADDED_LEN, 48);
        assert_eq!(TraceRecord::ATTR_OFFSET, 6);
        assert_eq!(TraceRecord::COMP_NODE_TYPE, 1 << 3);
        assert_eq!(TraceRecord::COMP_EXIT_PORT, 1 << 9);
        assert_eq!(
            TraceRecord::component_names(TraceRecord::COMP_NODE_ID | TraceRecord::COMP_ENTRY_PORT),
            ["NodeID", "EntryPort"]
        );
    }
}
