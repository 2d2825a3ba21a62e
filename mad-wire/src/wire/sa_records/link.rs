//! LinkRecord (SA attribute 0x0020), 8 bytes.

use crate::wire::AttributeId;

crate::wire_struct! {
    /// LinkRecord (ATTRIBUTES.md §11.4): one link, from a port to its
    /// neighbour. The IBA table (python-rdma `SALinkRecord`) ends with a
    /// 16-bit reserved field, so the record is 8 bytes (opensm
    /// `ib_link_record_t` calls those bytes `pad`).
    pub struct LinkRecord ("LinkRecord", 8) {
        /// LID of the port the link leaves from.
        from_lid: uint u16 [0, 16] => "FromLID",
        /// Port number the link leaves from.
        from_port: uint u8 [16, 8] => "FromPort",
        /// Port number the link arrives at.
        to_port: uint u8 [24, 8] => "ToPort",
        /// LID of the port the link arrives at.
        to_lid: uint u16 [32, 16] => "ToLID",
        /// Reserved (bytes 6–7).
        reserved: uint u16 [48, 16] => _,
    }
}

sa_record! {
    LinkRecord, AttributeId::SA_LINK_RECORD, padded 8;
    0 COMP_FROM_LID => "FromLID",
    1 COMP_FROM_PORT => "FromPort",
    2 COMP_TO_PORT => "ToPort",
    3 COMP_TO_LID => "ToLID",
    4 COMP_RESERVED => "reserved",
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sa_records::SaRecord;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(LinkRecord);

    #[test]
    fn fields_sit_at_their_documented_offsets() {
        let b = [0x00, 0x05, 0x03, 0x11, 0x00, 0x09, 0, 0];
        let r = LinkRecord::parse(&b).unwrap();
        assert_eq!(
            (r.from_lid, r.from_port, r.to_port, r.to_lid),
            (5, 3, 17, 9)
        );
        assert_eq!(r.to_vec().unwrap(), b);
    }

    #[test]
    fn component_bits_match_opensm_ib_lr_compmask() {
        // ib_types.h: IB_LR_COMPMASK_FROM_LID <<0 ... _TO_LID <<3.
        assert_eq!(LinkRecord::COMP_FROM_LID, 1);
        assert_eq!(LinkRecord::COMP_FROM_PORT, 2);
        assert_eq!(LinkRecord::COMP_TO_PORT, 4);
        assert_eq!(LinkRecord::COMP_TO_LID, 8);
        assert_eq!(LinkRecord::ATTR_OFFSET, 1);
    }
}
