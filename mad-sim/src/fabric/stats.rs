//! Why packets were dropped: counts by reason and the latest drops.

use std::collections::VecDeque;

use super::PortAddr;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// A directed-route hop-pointer rule discarded it (bad path, a CA in
    /// the middle of the path, a port beyond the switch's ports, ...).
    DrPath,
    /// A directed-route SMP with DrSLID / DrDLID not permissive.
    DrLidRouted,
    /// The port it should leave or enter is not physically up or has no
    /// link.
    LinkDown,
    /// The port's logical state does not let it through.
    PortNotActive,
    /// A switch has no LFT entry for the DLID (or it is above
    /// LinearFDBTop).
    NoRoute,
    /// LID 0.
    InvalidLid,
    /// A multicast DLID a switch's MFT sends nowhere (no entry, or only
    /// the port it came in on).
    Multicast,
    /// The DLID is not one of the receiving CA port's LIDs.
    NotForThisPort,
    /// A packet for QP0 not on VL15.
    Qp0NotVl15,
    /// A VL15 packet for a QP other than 0.
    Vl15NotQp0,
    /// An SMP class to QP1, or another class to QP0.
    WrongQp,
    /// The P_Key is not in the receiving port's table.
    PKey,
    /// A switch port's partition enforcement refused it.
    PKeyEnforcement,
    /// A failed M_Key check.
    MKey,
    /// Nobody to receive it (no endpoint, no SM).
    NoReceiver,
    /// The receiving endpoint's QP cannot receive.
    QpNotReady,
    /// Base version other than 1.
    BadBaseVersion,
    /// No such port.
    NoSuchPort,
    /// The link filter dropped it.
    LinkFilter,
    /// It went around more than 256 links (a forwarding loop).
    HopLimit,
    /// A link fault ([`Fabric::set_link_faults`](super::Fabric::set_link_faults)) lost it on the wire.
    LinkFault,
    /// A muted SMA ([`SmaFault::Mute`](super::SmaFault::Mute)) took it
    /// and never answered.
    SmaMute,
}

impl DropReason {
    /// Every reason, in index order.
    pub const ALL: &'static [DropReason] = &[
        Self::DrPath,
        Self::DrLidRouted,
        Self::LinkDown,
        Self::PortNotActive,
        Self::NoRoute,
        Self::InvalidLid,
        Self::Multicast,
        Self::NotForThisPort,
        Self::Qp0NotVl15,
        Self::Vl15NotQp0,
        Self::WrongQp,
        Self::PKey,
        Self::PKeyEnforcement,
        Self::MKey,
        Self::NoReceiver,
        Self::QpNotReady,
        Self::BadBaseVersion,
        Self::NoSuchPort,
        Self::LinkFilter,
        Self::HopLimit,
        Self::LinkFault,
        Self::SmaMute,
    ];

    pub(super) fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// One dropped packet: why and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRecord {
    /// Why.
    pub reason: DropReason,
    /// Where.
    pub at: PortAddr,
}

/// What the fabric did.
#[derive(Debug, Clone, Default)]
pub struct FabricStats {
    /// Packets processed (sent by endpoints, SMAs and PMAs).
    pub packets: u64,
    /// Requests handled by SMAs.
    pub to_sma: u64,
    /// Requests handled by PMAs.
    pub to_pma: u64,
    /// Requests handed to SM handlers.
    pub to_sm: u64,
    /// MADs put on endpoint receive queues.
    pub to_endpoints: u64,
    /// GSI requests answered "unsupported" for want of an agent.
    pub unmatched: u64,
    /// M_Key violations (all ports).
    pub mkey_violations: u64,
    drops: Vec<u64>,
    recent: VecDeque<DropRecord>,
    keep: usize,
}

impl FabricStats {
    pub(super) fn new(keep: usize) -> Self {
        Self {
            drops: vec![0; DropReason::ALL.len()],
            keep,
            ..Self::default()
        }
    }

    pub(crate) fn record_drop(&mut self, reason: DropReason, node: usize, port: u8) {
        if let Some(c) = self.drops.get_mut(reason.index()) {
            *c += 1;
        }
        if self.keep > 0 {
            if self.recent.len() == self.keep {
                self.recent.pop_front();
            }
            self.recent.push_back(DropRecord {
                reason,
                at: PortAddr { node, port },
            });
        }
    }

    /// Packets dropped for `reason`.
    #[must_use]
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops.get(reason.index()).copied().unwrap_or(0)
    }

    /// Packets dropped for any reason.
    #[must_use]
    pub fn total_dropped(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// The most recent drops, oldest first.
    pub fn recent_drops(&self) -> impl Iterator<Item = &DropRecord> {
        self.recent.iter()
    }
}
