//! MultiPathRecord (SA attribute 0x003A): the fixed 24 bytes, then up to
//! [`MultiPathRecord::MAX_GIDS`] GIDs (SGIDCount source GIDs, then
//! DGIDCount destination GIDs).

use super::Selector;
use crate::wire::{AttributeId, Error};

crate::wire_struct! {
    /// MultiPathRecord (IBA 15.2.5.20), the part before the GIDs. Fields
    /// and their order follow opensm `ib_multipath_rec_t`; the answer to
    /// SubnAdmGetMulti(MultiPathRecord) is a table of PathRecords.
    pub struct MultiPathRecord ("MultiPathRecord", 24) {
        /// RawTraffic (byte 0, mask 0x80).
        raw_traffic: uint bool [0, 1] => "RawTraffic",
        /// Reserved (byte 0, mask 0x70).
        reserved0: uint u8 [1, 3] => _,
        /// FlowLabel, 20 bits.
        flow_label: uint u32 [4, 20] => "FlowLabel",
        /// HopLimit (byte 3).
        hop_limit: uint u8 [24, 8] => "HopLimit",
        /// Traffic class (byte 4).
        tclass: uint u8 [32, 8] => "TClass",
        /// Reversible (byte 5, mask 0x80).
        reversible: uint bool [40, 1] => "Reversible",
        /// NumbPath: the most paths to return (byte 5, mask 0x7F).
        numb_path: uint u8 [41, 7] => "NumbPath",
        /// Partition key.
        pkey: uint u16 [48, 16] => "P_Key",
        /// QoSClass, 12 bits.
        qos_class: uint u16 [64, 12] => "QoSClass",
        /// Service level.
        sl: uint u8 [76, 4] => "SL",
        /// MTU selector.
        mtu_selector: uint Selector [80, 2] => "MTUSelector",
        /// MTU code.
        mtu: uint u8 [82, 6] => "MTU",
        /// Rate selector.
        rate_selector: uint Selector [88, 2] => "RateSelector",
        /// Rate code.
        rate: uint u8 [90, 6] => "Rate",
        /// PacketLifeTime selector.
        packet_life_time_selector: uint Selector [96, 2] => "PacketLifeTimeSelector",
        /// PacketLifeTime.
        packet_life_time: uint u8 [98, 6] => "PacketLifeTime",
        /// The top 8 bits of the ServiceID (byte 13).
        service_id_msb: uint u8 [104, 8] => "ServiceID8MSB",
        /// IndependenceSelector (byte 14, mask 0xC0).
        independence_selector: uint u8 [112, 2] => "IndependenceSelector",
        /// Reserved (byte 14 low 6 bits).
        reserved1: uint u8 [114, 6] => _,
        /// Source GIDs that follow (byte 15).
        sgid_count: uint u8 [120, 8] => "SGIDCount",
        /// Destination GIDs that follow the source GIDs (byte 16).
        dgid_count: uint u8 [128, 8] => "DGIDCount",
        /// The low 56 bits of the ServiceID (bytes 17–23).
        service_id_lsb: uint u64 [136, 56] => "ServiceID56LSB",
    }
}

sa_record! {
    MultiPathRecord, AttributeId::SA_MULTIPATH_RECORD, padded 24;
    0 COMP_RAW_TRAFFIC => "RawTraffic",
    1 COMP_RESERVED0 => "reserved",
    2 COMP_FLOW_LABEL => "FlowLabel",
    3 COMP_HOP_LIMIT => "HopLimit",
    4 COMP_TCLASS => "TClass",
    5 COMP_REVERSIBLE => "Reversible",
    6 COMP_NUMB_PATH => "NumbPath",
    7 COMP_PKEY => "P_Key",
    8 COMP_QOS_CLASS => "QoSClass",
    9 COMP_SL => "SL",
    10 COMP_MTU_SELECTOR => "MTUSelector",
    11 COMP_MTU => "MTU",
    12 COMP_RATE_SELECTOR => "RateSelector",
    13 COMP_RATE => "Rate",
    14 COMP_PACKET_LIFE_TIME_SELECTOR => "PacketLifeTimeSelector",
    15 COMP_PACKET_LIFE_TIME => "PacketLifeTime",
    16 COMP_SERVICE_ID_MSB => "ServiceID8MSB",
    17 COMP_INDEPENDENCE_SELECTOR => "IndependenceSelector",
    18 COMP_RESERVED1 => "reserved",
    19 COMP_SGID_COUNT => "SGIDCount",
    20 COMP_DGID_COUNT => "DGIDCount",
    21 COMP_SERVICE_ID_LSB => "ServiceID56LSB",
}

impl MultiPathRecord {
    /// GIDs that fit behind the fixed part in one MAD (opensm
    /// `IB_MULTIPATH_MAX_GIDS`: 24 + 11 × 16 = 200 bytes of SA data).
    pub const MAX_GIDS: usize = 11;

    /// The record followed by `sgids` then `dgids`, with SGIDCount and
    /// DGIDCount set to their numbers.
    ///
    /// # Errors
    /// [`Error::Invalid`] when there are more than
    /// [`MultiPathRecord::MAX_GIDS`] GIDs in all; [`Error::FieldOverflow`]
    /// when a field of `self` is wider than its bits.
    pub fn with_gids(&self, sgids: &[[u8; 16]], dgids: &[[u8; 16]]) -> Result<Vec<u8>, Error> {
        if sgids.len() + dgids.len() > Self::MAX_GIDS {
            return Err(Error::Invalid {
                what: "MultiPathRecord",
                field: "SGIDCount + DGIDCount",
                value: (sgids.len() + dgids.len()) as u64,
                reason: "more GIDs than fit in one MAD (11)",
            });
        }
        let mut head = self.clone();
        head.sgid_count = sgids.len() as u8;
        head.dgid_count = dgids.len() as u8;
        let mut v = crate::wire::Repr::to_vec(&head)?;
        for g in sgids.iter().chain(dgids) {
            v.extend_from_slice(g);
        }
        Ok(v)
    }

    /// The GIDs behind the fixed part of `data` (a request's SA data):
    /// first `sgids` source GIDs, then `dgids` destination GIDs, each
    /// count cut to what fits in [`MultiPathRecord::MAX_GIDS`] and in
    /// `data` (opensm's rule: the destinations get what the sources
    /// leave).
    #[must_use]
    pub fn gids(data: &[u8], sgids: usize, dgids: usize) -> (Vec<[u8; 16]>, Vec<[u8; 16]>) {
        let fits = data.len().saturating_sub(24) / 16;
        let s = sgids.min(Self::MAX_GIDS).min(fits);
        let d = dgids.min(Self::MAX_GIDS - s).min(fits - s);
        let gid = |i: usize| {
            let mut g = [0u8; 16];
            g.copy_from_slice(&data[24 + 16 * i..24 + 16 * (i + 1)]);
            g
        };
        ((0..s).map(gid).collect(), (s..s + d).map(gid).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;

    #[test]
    fn counts_and_gids_sit_where_opensm_reads_them() {
        let r = MultiPathRecord {
            numb_path: 2,
            service_id_lsb: 0x00AB_CDEF_0123_4567,
            ..MultiPathRecord::default()
        };
        let s = [[1u8; 16], [2u8; 16]];
        let d = [[3u8; 16]];
        let v = r.with_gids(&s, &d).unwrap();
        assert_eq!(v.len(), 24 + 48);
        assert_eq!(v[5], 2, "NumbPath");
        assert_eq!((v[15], v[16]), (2, 1), "SGIDCount, DGIDCount");
        assert_eq!(&v[17..24], &[0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67]);
        let back = MultiPathRecord::parse(&v).unwrap();
        assert_eq!(back.sgid_count, 2);
        assert_eq!(MultiPathRecord::gids(&v, 2, 1), (s.to_vec(), d.to_vec()));
    }

    #[test]
    fn gid_counts_are_cut_to_what_fits() {
        let v = MultiPathRecord::default()
            .with_gids(&[[9u8; 16]], &[])
            .unwrap();
        let (s, d) = MultiPathRecord::gids(&v, 5, 5);
        assert_eq!((s.len(), d.len()), (1, 0));
        let too_many = vec![[0u8; 16]; 12];
        assert!(MultiPathRecord::default()
            .with_gids(&too_many, &[])
            .is_err());
    }
}
