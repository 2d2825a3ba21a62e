//! MADs built from the wire crate's `Repr`s: the common header
//! ([`MadHeader`]), the RMPP and SA headers ([`RmppHeader`],
//! [`SaHeader`]), the vendor header ([`VendorHeader`]) and any attribute
//! `Repr` as data. A test says what the MAD is, not where its bytes go.

use mad_wire::wire::rmpp::{RmppHeader, RmppType, RMPP_FLAG_ACTIVE};
use mad_wire::wire::sa::{attr_offset_for, SaHeader, SA_CLASS_VERSION};
use mad_wire::wire::smp::DrPath;
use mad_wire::wire::vendor::VendorHeader;
use mad_wire::wire::{
    AttributeId, Mad, MadHeader, MadStatus, Method, MgmtClass, Repr, MAD_HEADER_LEN, MAD_LEN,
    RMPP_HEADER_END, SA_DATA_OFFSET, SMP_DATA_OFFSET, VENDOR_DATA_OFFSET,
};

/// Where the SA header starts (right after the RMPP header).
const SA_HEADER_OFFSET: usize = RMPP_HEADER_END;
/// Where the vendor header (RMPP header, reserved byte, OUI) starts.
const VENDOR_HEADER_OFFSET: usize = MAD_HEADER_LEN;

/// A MAD under construction: its common header and the 232 bytes after
/// it. Start from a constructor naming the class ([`MadBuilder::smp_get`],
/// [`MadBuilder::perf_get`], [`MadBuilder::sa_get_table`], ...), adjust
/// with the setters, finish with [`MadBuilder::build`] (256 bytes) or
/// [`MadBuilder::to_vec`].
#[derive(Debug, Clone)]
pub struct MadBuilder {
    header: MadHeader,
    /// The whole MAD; the header is written over its first 24 bytes at
    /// build time.
    bytes: [u8; MAD_LEN],
}

impl MadBuilder {
    /// A request of `class` / `class_version` with `method` and `attr`,
    /// TID 0, attribute modifier 0, data zero.
    #[must_use]
    pub fn new(class: MgmtClass, class_version: u8, method: Method, attr: AttributeId) -> Self {
        Self {
            header: MadHeader {
                base_version: 1,
                mgmt_class: class,
                class_version,
                method,
                attr_id: attr,
                ..MadHeader::default()
            },
            bytes: [0; MAD_LEN],
        }
    }

    /// A LID-routed SMP Get of `attr`.
    #[must_use]
    pub fn smp_get(attr: AttributeId) -> Self {
        Self::new(MgmtClass::SUBN_LID_ROUTED, 1, Method::GET, attr)
    }

    /// A LID-routed SMP Set of `attr` carrying `data`.
    #[must_use]
    pub fn smp_set(attr: AttributeId, data: &impl Repr) -> Self {
        Self::new(MgmtClass::SUBN_LID_ROUTED, 1, Method::SET, attr).repr_at(SMP_DATA_OFFSET, data)
    }

    /// A directed-route SMP `method` of `attr` along `hops` (initial
    /// path entries 1..; empty for the local port). Hops past the
    /// 63-hop limit are cut off there.
    #[must_use]
    pub fn dr(hops: &[u8], method: Method, attr: AttributeId) -> Self {
        let hops = &hops[..hops
            .len()
            .min(usize::from(mad_wire::wire::smp::DR_MAX_HOPS))];
        let path = DrPath::from_hops(hops).unwrap_or_else(|_| DrPath::local());
        let bytes = path.build_request(method, attr, 0, 0, 0);
        let mut b = Self::new(MgmtClass::SUBN_DIRECTED_ROUTE, 1, method, attr);
        b.bytes = bytes;
        // ClassSpecific of a DR SMP: the hop pointer and count the route
        // wrote.
        b.header.class_specific = Mad::new_unchecked(&bytes[..]).class_specific();
        b
    }

    /// A PerfMgt Get of `attr` for port `port` (PortSelect; counters
    /// attributes carry it in their second byte).
    #[must_use]
    pub fn perf_get(port: u8, attr: AttributeId) -> Self {
        let b = Self::new(MgmtClass::PERF_MGT, 1, Method::GET, attr);
        if attr == AttributeId::CLASS_PORT_INFO {
            return b;
        }
        let select = mad_wire::wire::attr::PortCounters {
            port_select: port,
            ..Default::default()
        };
        b.repr_at(SMP_DATA_OFFSET, &select)
    }

    /// An SA GetTable of `attr` with `record` as template and `comp_mask`
    /// selecting its components (AttributeOffset from the record's size).
    #[must_use]
    pub fn sa_get_table(attr: AttributeId, record: &impl Repr, comp_mask: u64) -> Self {
        Self::sa(Method::GET_TABLE, attr, record, comp_mask)
    }

    /// An SA request `method` of `attr` with `record` and `comp_mask`.
    #[must_use]
    pub fn sa(method: Method, attr: AttributeId, record: &impl Repr, comp_mask: u64) -> Self {
        let sa = SaHeader {
            attr_offset: attr_offset_for(record.buffer_len()).unwrap_or(0),
            comp_mask,
            ..SaHeader::default()
        };
        Self::new(MgmtClass::SUBN_ADM, SA_CLASS_VERSION, method, attr)
            .repr_at(SA_HEADER_OFFSET, &sa)
            .repr_at(SA_DATA_OFFSET, record)
    }

    /// An RMPP DATA segment of `class` / `class_version` `method` /
    /// `attr`: segment `seg` with `flags` (ACTIVE is always set; add
    /// FIRST / LAST) and PayloadLength `payload_len` (the first segment's
    /// whole length, the last one's remainder, 0 otherwise).
    #[must_use]
    pub fn rmpp_data(
        class: MgmtClass,
        class_version: u8,
        method: Method,
        attr: AttributeId,
        seg: u32,
        flags: u8,
        payload_len: u32,
    ) -> Self {
        Self::new(class, class_version, method, attr).rmpp(&RmppHeader {
            version: 1,
            rmpp_type: RmppType::DATA,
            resp_time: 0,
            flags: flags | RMPP_FLAG_ACTIVE,
            data1: seg,
            data2: payload_len,
            ..RmppHeader::default()
        })
    }

    /// A vendor range-2 MAD (class 0x30–0x4F) with `oui`.
    #[must_use]
    pub fn vendor(class: MgmtClass, oui: u32, method: Method, attr: AttributeId) -> Self {
        let vh = VendorHeader {
            oui,
            ..VendorHeader::default()
        };
        Self::new(class, 1, method, attr).repr_at(VENDOR_HEADER_OFFSET, &vh)
    }

    /// A builder holding `mad` (its header parsed, the rest kept), to
    /// derive a variant of a MAD (its response, another class, ...).
    ///
    /// # Errors
    /// `mad` is shorter than the 24-byte header.
    pub fn parse(mad: &[u8]) -> Result<Self, mad_wire::wire::Error> {
        let header = MadHeader::parse(mad)?;
        let mut bytes = [0; MAD_LEN];
        let n = mad.len().min(MAD_LEN);
        bytes[..n].copy_from_slice(&mad[..n]);
        Ok(Self { header, bytes })
    }

    /// Sets the management class.
    #[must_use]
    pub fn class(mut self, class: MgmtClass) -> Self {
        self.header.mgmt_class = class;
        self
    }

    /// Sets the ClassSpecific word (a DR SMP's hop pointer, high byte, and
    /// hop count, low byte).
    #[must_use]
    pub fn class_specific(mut self, v: u16) -> Self {
        self.header.class_specific = v;
        self
    }

    /// Sets an SMP's M_Key (bytes 24–31).
    #[must_use]
    pub fn m_key(self, key: u64) -> Self {
        self.bytes_at(MAD_HEADER_LEN, &key.to_be_bytes())
    }

    /// Sets the TID.
    #[must_use]
    pub fn tid(mut self, tid: u64) -> Self {
        self.header.tid = tid;
        self
    }

    /// Sets the attribute modifier.
    #[must_use]
    pub fn attr_mod(mut self, attr_mod: u32) -> Self {
        self.header.attr_mod = attr_mod;
        self
    }

    /// Sets the method (without the response bit).
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        self.header.method = method;
        self
    }

    /// Makes it a response (`GetResp` for a Get) with `status`.
    #[must_use]
    pub fn response(mut self, status: MadStatus) -> Self {
        self.header.response = true;
        self.header.status = status;
        self
    }

    /// Sets the class version.
    #[must_use]
    pub fn class_version(mut self, v: u8) -> Self {
        self.header.class_version = v;
        self
    }

    /// Sets the base version (1 for IB; anything else is refused by a
    /// conforming receiver).
    #[must_use]
    pub fn base_version(mut self, v: u8) -> Self {
        self.header.base_version = v;
        self
    }

    /// Writes the RMPP header (bytes 24–35).
    #[must_use]
    pub fn rmpp(self, h: &RmppHeader) -> Self {
        self.repr_at(MAD_HEADER_LEN, h)
    }

    /// Writes `r` at byte `offset` (attribute data: 64 for SMP and
    /// PerfMgt, 56 for SA, 40 for vendor range 2). A `Repr` that does not
    /// fit leaves the bytes as they were.
    #[must_use]
    pub fn repr_at(mut self, offset: usize, r: &impl Repr) -> Self {
        if let Some(dst) = self.bytes.get_mut(offset..) {
            let _ = r.emit(dst);
        }
        self
    }

    /// Copies `data` to byte `offset` (cut at the end of the MAD).
    #[must_use]
    pub fn bytes_at(mut self, offset: usize, data: &[u8]) -> Self {
        if let Some(dst) = self.bytes.get_mut(offset..) {
            let n = dst.len().min(data.len());
            dst[..n].copy_from_slice(&data[..n]);
        }
        self
    }

    /// Writes attribute data for the class: at 64 for SMP and PerfMgt, 56
    /// for SA, 40 for vendor range 2, 24 otherwise.
    #[must_use]
    pub fn data(self, r: &impl Repr) -> Self {
        let at = self.data_offset();
        self.repr_at(at, r)
    }

    /// Where this class's attribute data starts.
    #[must_use]
    pub fn data_offset(&self) -> usize {
        let c = self.header.mgmt_class;
        if c == MgmtClass::SUBN_LID_ROUTED
            || c == MgmtClass::SUBN_DIRECTED_ROUTE
            || c == MgmtClass::PERF_MGT
        {
            SMP_DATA_OFFSET
        } else if c == MgmtClass::SUBN_ADM {
            SA_DATA_OFFSET
        } else if c.is_vendor_range2() {
            VENDOR_DATA_OFFSET
        } else {
            MAD_HEADER_LEN
        }
    }

    /// The common header as built so far.
    #[must_use]
    pub fn header(&self) -> MadHeader {
        self.header.clone()
    }

    /// The 256-byte MAD.
    #[must_use]
    pub fn build(&self) -> [u8; MAD_LEN] {
        let mut out = self.bytes;
        // Cannot fail: the buffer holds the 24-byte header.
        let _ = self.header.emit(&mut out[..MAD_HEADER_LEN]);
        out
    }

    /// The MAD as a `Vec`.
    #[must_use]
    pub fn to_vec(&self) -> Vec<u8> {
        self.build().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_wire::wire::rmpp::RmppView;
    use mad_wire::wire::sa_records::NodeRecord;
    use mad_wire::wire::smp::Smp;
    use mad_wire::wire::Mad;

    #[test]
    fn header_fields_land_where_the_wire_crate_reads_them() {
        let m = MadBuilder::perf_get(3, AttributeId::PM_PORT_COUNTERS)
            .tid(0x1234)
            .attr_mod(9)
            .build();
        let v = Mad::new_unchecked(&m[..]);
        assert_eq!(v.base_version(), 1);
        assert_eq!(v.mgmt_class(), MgmtClass::PERF_MGT);
        assert_eq!(v.method(), Method::GET);
        assert_eq!(v.tid(), 0x1234);
        assert_eq!(v.attr_mod(), 9);
        assert_eq!(m[SMP_DATA_OFFSET + 1], 3, "PortSelect");
        let r = MadBuilder::smp_get(AttributeId::NODE_INFO)
            .response(MadStatus::INVALID_FIELD)
            .build();
        let v = Mad::new_unchecked(&r[..]);
        assert!(v.is_response());
        assert_eq!(v.status(), MadStatus::INVALID_FIELD);
    }

    #[test]
    fn sa_and_rmpp_headers() {
        let m = MadBuilder::sa_get_table(AttributeId(0x11), &NodeRecord::default(), 1).build();
        let sa = SaHeader::parse(&m[SA_HEADER_OFFSET..SA_DATA_OFFSET]).expect("SA header");
        assert_eq!(sa.comp_mask, 1);
        assert_eq!(
            sa.record_stride(),
            NodeRecord::default().buffer_len().div_ceil(8) * 8
        );
        let d = MadBuilder::rmpp_data(
            MgmtClass::SUBN_ADM,
            2,
            Method::GET_TABLE,
            AttributeId(0x11),
            2,
            0,
            0,
        )
        .build();
        let r = RmppView::new_unchecked(&d[..]);
        assert!(r.is_active() && !r.is_first());
        assert_eq!(r.rmpp_type(), RmppType::DATA);
        assert_eq!(r.seg_num(), 2);
    }

    #[test]
    fn directed_route_carries_its_path() {
        let m = MadBuilder::dr(&[1, 3], Method::GET, AttributeId::NODE_INFO)
            .tid(5)
            .build();
        let s = Smp::new_checked(&m[..]).expect("SMP");
        assert!(s.is_directed_route());
        assert_eq!(s.hop_cnt(), 2);
        assert_eq!(s.initial_path()[1..3], [1, 3]);
        assert_eq!(s.tid(), 5);
    }

    #[test]
    fn vendor_oui() {
        let m = MadBuilder::vendor(MgmtClass(0x32), 0x1405, Method::GET, AttributeId(0x10)).build();
        assert_eq!(m[37..40], [0x00, 0x14, 0x05]);
    }
}
