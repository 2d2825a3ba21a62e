//! Who is at the other end of a transfer.
//!
//! On InfiniBand a peer is known by its LID; on RoCE (and across IB
//! routers) every MAD carries a GRH and the LID means nothing (every RoCE
//! peer is LID 0). A [`Peer`] is therefore the source GID when the MAD
//! came with a GRH, else the source LID, plus the source QP: two peers at
//! LID 0 with different GIDs are different peers, and their transfers
//! never share state.

use mad_wire::addr::{Address, GSI_QKEY};

/// How a peer is addressed: by GID when a GRH is present, else by LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerAddr {
    /// A LID (no GRH).
    Lid(u16),
    /// A GID (from the GRH).
    Gid([u8; 16]),
}

/// A peer identity: [`PeerAddr`] plus QP number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Peer {
    /// The LID or GID.
    pub addr: PeerAddr,
    /// The QP number.
    pub qpn: u32,
}

impl Peer {
    /// A peer known by LID (no GRH).
    #[must_use]
    pub fn lid(lid: u16, qpn: u32) -> Self {
        Self {
            addr: PeerAddr::Lid(lid),
            qpn,
        }
    }

    /// A peer known by GID (GRH present).
    #[must_use]
    pub fn gid(gid: [u8; 16], qpn: u32) -> Self {
        Self {
            addr: PeerAddr::Gid(gid),
            qpn,
        }
    }

    /// The peer a received MAD came from (`src`), or a send goes to
    /// (`dest`): its GRH's GID if it has one, else its LID, and its QP.
    #[must_use]
    pub fn of(a: &Address) -> Self {
        match &a.grh {
            Some(g) => Self::gid(g.gid, a.qpn),
            None => Self::lid(a.lid, a.qpn),
        }
    }
}

/// The address to answer a MAD received from `src` at: the whole source
/// address, GRH included (a received GRH's GID is the peer's, which is
/// the destination GID of the answer; hop limit, traffic class, flow label
/// and GID index are kept), with the Q_Key of the peer's QP (0 for QP0,
/// [`GSI_QKEY`] otherwise).
#[must_use]
pub fn reply_address(src: &Address) -> Address {
    Address {
        qkey: if src.qpn == 0 { 0 } else { GSI_QKEY },
        ..*src
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_wire::addr::Grh;

    #[test]
    fn a_grh_makes_the_gid_the_identity_and_the_lid_irrelevant() {
        let mut a = Address::gsi(0);
        let mut g = Grh::default();
        g.gid[15] = 7;
        a.grh = Some(g);
        let mut b = a;
        b.lid = 9;
        assert_eq!(Peer::of(&a), Peer::of(&b));
        let mut c = a;
        c.grh = Some(Grh { gid: [1; 16], ..g });
        assert_ne!(Peer::of(&a), Peer::of(&c));
        assert_eq!(Peer::of(&Address::gsi(3)), Peer::lid(3, 1));
    }

    #[test]
    fn the_reply_address_keeps_the_grh_and_sets_the_qkey() {
        let mut src = Address {
            lid: 0,
            qpn: 1,
            qkey: 0,
            ..Address::default()
        };
        src.grh = Some(Grh {
            gid: [3; 16],
            hop_limit: 64,
            ..Grh::default()
        });
        let r = reply_address(&src);
        assert_eq!(r.grh, src.grh);
        assert_eq!(r.qkey, GSI_QKEY);
        assert_eq!(reply_address(&Address::smi(4)).qkey, 0);
    }
}
