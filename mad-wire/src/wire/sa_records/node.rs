//! NodeRecord (SA attribute 0x0011), 108 bytes, padded 112.

use crate::wire::attr::{NodeDescription, NodeInfo};
use crate::wire::AttributeId;

crate::wire_struct! {
    /// NodeRecord (ATTRIBUTES.md §11.1): a port's LID with its node's
    /// NodeInfo and NodeDescription. Offsets from libibmad `IB_SA_NR_*`
    /// and opensm `ib_node_record_t` (node_info at 4, node_desc at 44,
    /// struct size 112).
    pub struct NodeRecord ("NodeRecord", 108) {
        /// LID of the port.
        lid: uint u16 [0, 16] => "Lid",
        /// Reserved (bytes 2–3).
        reserved: uint u16 [16, 16] => _,
        /// The node's NodeInfo (bytes 4–43).
        node_info: nested NodeInfo [4] => "NodeInfo",
        /// The node's NodeDescription (bytes 44–107).
        node_desc: nested NodeDescription [44] => "NodeDescription",
    }
}

sa_record! {
    NodeRecord, AttributeId::SA_NODE_RECORD, padded 112;
    0 COMP_LID => "LID",
    1 COMP_RESERVED => "reserved",
    2 COMP_BASE_VERSION => "BaseVersion",
    3 COMP_CLASS_VERSION => "ClassVersion",
    4 COMP_NODE_TYPE => "NodeType",
    5 COMP_NUM_PORTS => "NumPorts",
    6 COMP_SYS_IMAGE_GUID => "SystemImageGUID",
    7 COMP_NODE_GUID => "NodeGUID",
    8 COMP_PORT_GUID => "PortGUID",
    9 COMP_PARTITION_CAP => "PartitionCap",
    10 COMP_DEVICE_ID => "DeviceID",
    11 COMP_REVISION => "Revision",
    12 COMP_LOCAL_PORT_NUM => "LocalPortNum",
    13 COMP_VENDOR_ID => "VendorID",
    14 COMP_NODE_DESCRIPTION => "NodeDescription",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::attr::NodeType;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(NodeRecord);

    #[test]
    fn node_info_and_description_sit_at_bytes_4_and_44() {
        let mut b = [0u8; 108];
        b[0..2].copy_from_slice(&0x0011u16.to_be_bytes());
        b[4] = 1; // BaseVers
        b[6] = 2; // NodeType switch
        b[7] = 36; // NumPorts
        b[16..24].copy_from_slice(&0x0002_c903_0000_1234u64.to_be_bytes()); // NodeGUID
        b[41..44].copy_from_slice(&[0x00, 0x02, 0xC9]); // VendorId
        b[44..48].copy_from_slice(b"sw-1");
        let r = NodeRecord::parse(&b).unwrap();
        assert_eq!(r.lid, 0x11);
        assert_eq!(r.node_info.base_version, 1);
        assert_eq!(r.node_info.node_type, NodeType(2));
        assert_eq!(r.node_info.num_ports, 36);
        assert_eq!(r.node_info.node_guid, 0x0002_c903_0000_1234);
        assert_eq!(r.node_info.vendor_id, 0x0002C9);
        assert_eq!(&r.node_desc.desc[..4], b"sw-1");
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_nr_compmask() {
        // ib_types.h: IB_NR_COMPMASK_NODEGUID <<7, _PORTGUID <<8,
        // _NODEDESC <<14.
        assert_eq!(NodeRecord::COMP_NODE_GUID, 1 << 7);
        assert_eq!(NodeRecord::COMP_PORT_GUID, 1 << 8);
        assert_eq!(NodeRecord::COMP_NODE_DESCRIPTION, 1 << 14);
        assert_eq!(NodeRecord::ATTR_OFFSET, 14);
    }
}
