//! The rdma_cm private-data header (librdmacm / kernel `cma_hdr`): the
//! first 36 bytes of a REQ's (or SIDR_REQ's) private data when the
//! connection is made through the RDMA CM in an IP port space. The
//! destination port is not in the header: it is the low 16 bits of the
//! service ID (`0x0000_0000_0PPP_pppp`, see [`service_id`]).

use crate::wire::Error;

/// The only header version rdma_cm speaks (`CMA_VERSION`).
pub const CMA_VERSION: u8 = 0x00;

crate::wire_struct! {
    /// The rdma_cm header at the start of a REQ's private data.
    pub struct CmaHeader ("CmaHeader", 36) {
        /// Header version ([`CMA_VERSION`]).
        cma_version: uint u8 [0, 8] => "CMAVersion",
        /// IP version, 4 or 6 (high nibble of byte 1).
        ip_version: uint u8 [8, 4] => "IPVersion",
        /// Reserved (low nibble of byte 1).
        reserved: uint u8 [12, 4] => _,
        /// Source port of the active side.
        port: uint u16 [16, 16] => "SrcPort",
        /// Source address: IPv6, or IPv4 in the last four bytes.
        src_addr: bytes [u8; 16] [4] => "SrcAddr",
        /// Destination address: IPv6, or IPv4 in the last four bytes.
        dst_addr: bytes [u8; 16] [20] => "DstAddr",
    }
}

/// An rdma_cm port space (the `RDMA_PS_*` values), the high bits of an
/// IP-based service ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSpace {
    /// `RDMA_PS_TCP` (0x0106): reliable connected.
    Tcp,
    /// `RDMA_PS_UDP` (0x0111): unreliable datagram, through SIDR.
    Udp,
    /// `RDMA_PS_IPOIB` (0x0002).
    Ipoib,
    /// `RDMA_PS_IB` (0x013F): any QP type.
    Ib,
}

impl PortSpace {
    /// The 16-bit port-space number.
    #[must_use]
    pub fn code(self) -> u16 {
        match self {
            Self::Tcp => 0x0106,
            Self::Udp => 0x0111,
            Self::Ipoib => 0x0002,
            Self::Ib => 0x013F,
        }
    }

    /// The port space with number `code`, if it is one.
    #[must_use]
    pub fn from_code(code: u16) -> Option<Self> {
        [Self::Tcp, Self::Udp, Self::Ipoib, Self::Ib]
            .into_iter()
            .find(|p| p.code() == code)
    }
}

/// The service ID rdma_cm uses for `port` in `space` (`cma_get_service_id`).
#[must_use]
pub fn service_id(space: PortSpace, port: u16) -> u64 {
    (u64::from(space.code()) << 16) | u64::from(port)
}

/// Splits an rdma_cm service ID into port space and port, or `None` when
/// it is not one (`0x0000_0000_SSSS_PPPP` with a known space).
#[must_use]
pub fn split_service_id(id: u64) -> Option<(PortSpace, u16)> {
    if id >> 32 != 0 {
        return None;
    }
    let space = PortSpace::from_code((id >> 16) as u16)?;
    Some((space, id as u16))
}

impl CmaHeader {
    /// A version-0 header for IPv4 addresses.
    #[must_use]
    pub fn ipv4(src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, src_port: u16) -> Self {
        let v4 = |a: std::net::Ipv4Addr| {
            let mut b = [0u8; 16];
            b[12..].copy_from_slice(&a.octets());
            b
        };
        Self {
            cma_version: CMA_VERSION,
            ip_version: 4,
            reserved: 0,
            port: src_port,
            src_addr: v4(src),
            dst_addr: v4(dst),
        }
    }

    /// A version-0 header for IPv6 addresses.
    #[must_use]
    pub fn ipv6(src: std::net::Ipv6Addr, dst: std::net::Ipv6Addr, src_port: u16) -> Self {
        Self {
            cma_version: CMA_VERSION,
            ip_version: 6,
            reserved: 0,
            port: src_port,
            src_addr: src.octets(),
            dst_addr: dst.octets(),
        }
    }

    /// The source and destination addresses, by the header's IP version.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the version is not [`CMA_VERSION`] or the IP
    /// version is neither 4 nor 6.
    pub fn addrs(&self) -> Result<(std::net::IpAddr, std::net::IpAddr), Error> {
        if self.cma_version != CMA_VERSION {
            return Err(Error::Invalid {
                what: "CmaHeader",
                field: "cma_version",
                value: u64::from(self.cma_version),
                reason: "only rdma_cm header version 0 is defined",
            });
        }
        let v4 = |b: &[u8; 16]| std::net::Ipv4Addr::new(b[12], b[13], b[14], b[15]).into();
        let v6 = |b: &[u8; 16]| std::net::Ipv6Addr::from(*b).into();
        match self.ip_version {
            4 => Ok((v4(&self.src_addr), v4(&self.dst_addr))),
            6 => Ok((v6(&self.src_addr), v6(&self.dst_addr))),
            v => Err(Error::Invalid {
                what: "CmaHeader",
                field: "ip_version",
                value: u64::from(v),
                reason: "IP version must be 4 or 6",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Repr;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    crate::repr_roundtrip_tests!(CmaHeader);

    #[test]
    fn ipv4_header_matches_librdmacm_layout() {
        let h = CmaHeader::ipv4(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            40000,
        );
        let b = h.to_vec().unwrap();
        assert_eq!(&b[..4], &[0x00, 0x40, 0x9C, 0x40]);
        assert_eq!(&b[16..20], &[10, 0, 0, 1]);
        assert_eq!(&b[32..36], &[10, 0, 0, 2]);
        assert!(b[4..16].iter().chain(&b[20..32]).all(|x| *x == 0));
        let (s, d) = CmaHeader::parse(&b).unwrap().addrs().unwrap();
        assert_eq!(s, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(d, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
    }

    #[test]
    fn ipv6_header_and_bad_versions() {
        let a = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
        let h = CmaHeader::ipv6(a, Ipv6Addr::LOCALHOST, 7);
        assert_eq!(h.to_vec().unwrap()[1], 0x60);
        assert_eq!(
            h.addrs().unwrap(),
            (IpAddr::V6(a), IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
        let bad = CmaHeader {
            ip_version: 5,
            ..h.clone()
        };
        assert!(matches!(
            bad.addrs(),
            Err(Error::Invalid {
                field: "ip_version",
                ..
            })
        ));
        let bad = CmaHeader {
            cma_version: 1,
            ..h
        };
        assert!(matches!(
            bad.addrs(),
            Err(Error::Invalid {
                field: "cma_version",
                ..
            })
        ));
    }

    #[test]
    fn service_ids_in_ip_port_spaces() {
        assert_eq!(service_id(PortSpace::Tcp, 7471), 0x0106_1D2F);
        assert_eq!(split_service_id(0x0106_1D2F), Some((PortSpace::Tcp, 7471)));
        assert_eq!(split_service_id(0x0111_0001), Some((PortSpace::Udp, 1)));
        assert_eq!(split_service_id(0x0999_0001), None);
        assert_eq!(split_service_id(1 << 40), None);
    }
}
