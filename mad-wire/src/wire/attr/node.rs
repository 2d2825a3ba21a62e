//! NodeInfo (SMP 0x0011) and NodeDescription (SMP 0x0010).

use super::NodeType;
use std::borrow::Cow;

crate::wire_struct! {
    /// NodeInfo, 40 bytes (ATTRIBUTES.md §2; libibmad `fields.c` labels).
    pub struct NodeInfo ("NodeInfo", 40) {
        /// BaseVersion (byte 0).
        base_version: uint u8 [0, 8] => "BaseVers",
        /// ClassVersion (byte 1).
        class_version: uint u8 [8, 8] => "ClassVers",
        /// NodeType (byte 2): CA, switch or router.
        node_type: uint NodeType [16, 8] => "NodeType",
        /// Number of physical ports (byte 3).
        num_ports: uint u8 [24, 8] => "NumPorts",
        /// SystemImageGUID (bytes 4–11).
        system_image_guid: uint u64 [32, 64] => "SystemGuid",
        /// NodeGUID (bytes 12–19).
        node_guid: uint u64 [96, 64] => "Guid",
        /// PortGUID of the port the SMP arrived on (bytes 20–27).
        port_guid: uint u64 [160, 64] => "PortGuid",
        /// PartitionCap: P_Key table size (bytes 28–29).
        partition_cap: uint u16 [224, 16] => "PartCap",
        /// DeviceID (bytes 30–31).
        device_id: uint u16 [240, 16] => "DevId",
        /// Revision (bytes 32–35).
        revision: uint u32 [256, 32] => "Revision",
        /// LocalPortNum: the port the SMP arrived on (byte 36).
        local_port_num: uint u8 [288, 8] => "LocalPort",
        /// VendorID, an IEEE OUI (bytes 37–39).
        vendor_id: uint u32 [296, 24] => "VendorId",
    }
}

crate::wire_struct! {
    /// NodeDescription, 64 bytes of NUL-padded text (ATTRIBUTES.md §1;
    /// libibmad label `NodeDesc`). The text need not be NUL terminated
    /// when it fills all 64 bytes. Use [`NodeDescription::text`] and
    /// [`NodeDescription::from_text`] rather than the raw bytes.
    pub struct NodeDescription ("NodeDescription", 64) {
        /// The raw 64 bytes.
        desc: bytes [u8; 64] [0] => "NodeDesc",
    }
}

impl NodeDescription {
    /// The bytes before the first NUL (all 64 if there is none).
    #[must_use]
    pub fn text_bytes(&self) -> &[u8] {
        let end = self
            .desc
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(self.desc.len());
        &self.desc[..end]
    }

    /// The text up to the first NUL, decoded as UTF-8 (invalid sequences
    /// become U+FFFD; valid text is borrowed, not copied).
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.text_bytes())
    }

    /// Builds a description from `text`, NUL padded. Text longer than 64
    /// bytes is cut at the last character boundary that fits, so the
    /// stored bytes stay valid UTF-8.
    #[must_use]
    pub fn from_text(text: &str) -> Self {
        let mut end = text.len().min(64);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut desc = [0u8; 64];
        desc[..end].copy_from_slice(&text.as_bytes()[..end]);
        Self { desc }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    crate::repr_roundtrip_tests!(NodeInfo, NodeDescription);

    #[test]
    fn node_info_fields_land_at_the_documented_offsets() {
        let mut b = [0u8; 40];
        b[0] = 1;
        b[1] = 1;
        b[2] = 2;
        b[3] = 36;
        b[4..12].copy_from_slice(&0x0002_c903_00a1_b2c3u64.to_be_bytes());
        b[12..20].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        b[20..28].copy_from_slice(&0x99aa_bbcc_ddee_ff00u64.to_be_bytes());
        b[28..30].copy_from_slice(&[0x00, 0x08]);
        b[30..32].copy_from_slice(&[0xc7, 0x38]);
        b[32..36].copy_from_slice(&[0xa0, 0, 0, 1]);
        b[36] = 7;
        b[37..40].copy_from_slice(&[0x00, 0x02, 0xc9]);
        let n = NodeInfo::parse(&b).unwrap();
        assert_eq!(n.base_version, 1);
        assert_eq!(n.node_type, NodeType::SWITCH);
        assert_eq!(n.num_ports, 36);
        assert_eq!(n.system_image_guid, 0x0002_c903_00a1_b2c3);
        assert_eq!(n.node_guid, 0x1122_3344_5566_7788);
        assert_eq!(n.port_guid, 0x99aa_bbcc_ddee_ff00);
        assert_eq!(n.partition_cap, 8);
        assert_eq!(n.device_id, 0xc738);
        assert_eq!(n.revision, 0xa000_0001);
        assert_eq!(n.local_port_num, 7);
        assert_eq!(n.vendor_id, 0x0002c9);
        assert_eq!(n.to_vec().unwrap(), b.to_vec());
    }

    #[test]
    fn node_info_emit_refuses_a_vendor_id_wider_than_24_bits() {
        let n = NodeInfo {
            vendor_id: 0x0100_0000,
            ..NodeInfo::default()
        };
        assert!(matches!(
            n.to_vec(),
            Err(crate::wire::Error::FieldOverflow {
                field: "vendor_id",
                ..
            })
        ));
    }

    #[test]
    fn node_description_text_stops_at_the_first_nul() {
        let mut b = [0u8; 64];
        b[..9].copy_from_slice(b"sw1 HCA-1");
        b[20] = b'x'; // garbage after the terminator is kept but not shown
        let d = NodeDescription::parse(&b).unwrap();
        assert_eq!(d.text(), "sw1 HCA-1");
        assert_eq!(d.to_vec().unwrap(), b.to_vec());
    }

    #[test]
    fn node_description_of_64_bytes_needs_no_terminator() {
        let s = "a".repeat(64);
        let d = NodeDescription::from_text(&s);
        assert_eq!(d.text(), s);
        assert_eq!(d.desc, [b'a'; 64]);
    }

    #[test]
    fn node_description_from_text_truncates_at_a_char_boundary() {
        // 63 ASCII bytes + a 2-byte character: only the ASCII part fits.
        let s = format!("{}é", "b".repeat(63));
        let d = NodeDescription::from_text(&s);
        assert_eq!(d.text(), "b".repeat(63));
        assert_eq!(d.desc[63], 0);
        assert_eq!(
            NodeDescription::from_text("host mlx5_0").text(),
            "host mlx5_0"
        );
    }

    #[test]
    fn node_description_invalid_utf8_is_replaced_not_rejected() {
        let mut b = [0u8; 64];
        b[0] = b'a';
        b[1] = 0xff;
        let d = NodeDescription::parse(&b).unwrap();
        assert_eq!(d.text(), "a\u{fffd}");
        assert_eq!(d.text_bytes(), &[b'a', 0xff]);
    }
}
