//! What SM-lite reports: its events, its errors and its counters.

use std::collections::VecDeque;

use mad_core::wire::attr::{PortState, SmState};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Method};

/// Something that went wrong, reported as [`SmEvent::Error`]. None of
/// them stops SM-lite; a sweep with errors raises no SubnetUp and is
/// repeated after [`crate::SmConfig::error_resweep_delay`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SmError {
    /// An SMP went unanswered after every retry.
    #[error("{method} {attr} (modifier {attr_mod:#x}) via {path}: no answer after {tries} tries")]
    Timeout {
        /// Method sent.
        method: Method,
        /// Attribute.
        attr: AttributeId,
        /// Attribute modifier.
        attr_mod: u32,
        /// Directed route.
        path: DrPath,
        /// Times it was sent.
        tries: u32,
    },
    /// An SMP was answered with a non-zero status.
    #[error("{method} {attr} (modifier {attr_mod:#x}) via {path}: status {status:#06x}")]
    Status {
        /// Method sent.
        method: Method,
        /// Attribute.
        attr: AttributeId,
        /// Attribute modifier.
        attr_mod: u32,
        /// Directed route.
        path: DrPath,
        /// The status (15 bits for DR SMPs).
        status: u16,
    },
    /// An answer whose attribute could not be parsed.
    #[error("{attr} via {path}: unparsable answer: {reason}")]
    Malformed {
        /// Attribute.
        attr: AttributeId,
        /// Directed route.
        path: DrPath,
        /// Why.
        reason: String,
    },
    /// A PortInfo Set did not leave the port as asked.
    #[error("node {node_guid:#018x} port {port}: asked for {wanted} (LID {lid}), port reports {got} (LID {got_lid})")]
    PortNotSet {
        /// Node GUID.
        node_guid: u64,
        /// Port number.
        port: u8,
        /// State asked for (NoChange: none).
        wanted: PortState,
        /// State reported.
        got: PortState,
        /// LID asked for (0: none).
        lid: u16,
        /// LID reported.
        got_lid: u16,
    },
    /// A LinearForwardingTable or SwitchInfo Set was answered with other
    /// contents than were set.
    #[error("switch {switch_guid:#018x}: {attr} (modifier {attr_mod:#x}) not taken")]
    SwitchNotSet {
        /// Switch GUID.
        switch_guid: u64,
        /// Attribute.
        attr: AttributeId,
        /// Attribute modifier.
        attr_mod: u32,
    },
    /// The unicast LID space (1–0xBFFF) ran out.
    #[error("{ports} ports left without a LID: unicast LIDs exhausted")]
    LidsExhausted {
        /// Ports without a LID.
        ports: usize,
    },
    /// A switch's LinearFDBCap is below the highest LID.
    #[error("switch {switch_guid:#018x}: LinearFDBCap {cap} cannot hold LID {max_lid}")]
    FdbCap {
        /// Switch GUID.
        switch_guid: u64,
        /// Its LinearFDBCap.
        cap: u16,
        /// Highest LID.
        max_lid: u16,
    },
    /// The node behind a port of a node the sweep did read could not
    /// be read (its NodeInfo unanswered, refused or unparsable): it and
    /// whatever lies only behind it are left as they are, and the link
    /// to it is not armed. The sweep is repeated after
    /// [`SmConfig::error_resweep_delay`](crate::SmConfig::error_resweep_delay).
    #[error(
        "not configured: the node behind {via_desc:?} ({via_guid:#018x}) port {port}: NodeInfo via {path}: {reason}"
    )]
    NodeUnreachable {
        /// GUID of the node it hangs on.
        via_guid: u64,
        /// NodeDescription of that node.
        via_desc: String,
        /// The port of that node it hangs on.
        port: u8,
        /// The directed route to it.
        path: DrPath,
        /// What went wrong ("no answer after 4 tries", "status 0x001c").
        reason: String,
    },
    /// The SM's own port did not answer NodeInfo: nothing was swept.
    #[error("the SM's own port did not answer NodeInfo")]
    LocalUnreachable,
}

/// What SM-lite reports through [`crate::SubnetManager::poll_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmEvent {
    /// A sweep finished (configured or not).
    SweepDone {
        /// Nodes found.
        nodes: usize,
        /// Of which switches.
        switches: usize,
        /// LIDs in use.
        lids: usize,
        /// Set SMPs sent (each counted once, resends not).
        sets: usize,
        /// SMPs sent in all, resends included.
        smps: usize,
        /// Resends after a timeout.
        retries: usize,
        /// Errors reported during the sweep.
        errors: usize,
    },
    /// Every port found is configured and Active, every switch routed.
    SubnetUp,
    /// A trap (SubnTrap Notice) reached the SM; it was repressed.
    Trap {
        /// Generic trap number (None for a vendor trap).
        number: Option<u16>,
        /// IssuerLID.
        issuer_lid: u16,
    },
    /// Something failed.
    Error(SmError),
    /// The SM's own state (SMInfo SMState) changed: NotActive,
    /// Discovering, Standby or Master.
    StateChanged {
        /// The state before.
        from: SmState,
        /// The state now.
        to: SmState,
    },
    /// Another SM answered SMInfo during a sweep (found by its port's
    /// IsSM capability bit).
    RemoteSm {
        /// Its port GUID.
        guid: u64,
        /// Its priority (0–15).
        priority: u8,
        /// Its state.
        state: SmState,
    },
    /// SM-lite sent SMInfo Set HANDOVER to a better SM (higher priority,
    /// or equal priority and lower GUID); it stands by once the Set is
    /// answered.
    HandoverSent {
        /// Port GUID of the SM handed over to.
        guid: u64,
    },
    /// The SM polled while standing by stopped answering
    /// ([`crate::SmConfig::polling_retry_number`] polls in a row): SM-lite
    /// goes Discovering and sweeps.
    MasterLost {
        /// Port GUID of the SM that stopped answering.
        guid: u64,
    },
    /// A heavy sweep routed the fabric with a routing engine other than
    /// min-hop alone ([`crate::SmConfig::routing`]): the engine whose
    /// tables are programmed, and what the engines tried said (why one
    /// fell back to the next, which root `updn` chose).
    Routed {
        /// The engine that routed.
        engine: crate::routing::engines::Engine,
        /// The engines' notes, in order.
        notes: Vec<String>,
    },
    /// A light sweep (SwitchInfo of every switch) finished.
    LightSweepDone {
        /// A switch reported a port state change, did not answer, or
        /// holds another LinearFDBTop than SM-lite wrote: a heavy sweep
        /// follows.
        changed: bool,
        /// SMPs it sent.
        smps: usize,
    },
}

/// Counters for a command's status line and for tests
/// ([`crate::SubnetManager::stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmStats {
    /// Heavy sweeps finished (discovery and configuration).
    pub heavy_sweeps: u64,
    /// Light sweeps finished.
    pub light_sweeps: u64,
    /// SMPs SM-lite sent in all (requests, resends and answers).
    pub smps: u64,
    /// Traps received.
    pub traps: u64,
    /// LinearForwardingTable blocks sent in all (each block once,
    /// resends not counted).
    pub lft_blocks: u64,
    /// SMPs of the last heavy sweep, resends included.
    pub last_sweep_smps: usize,
    /// Set SMPs of the last heavy sweep.
    pub last_sweep_sets: usize,
    /// LinearForwardingTable blocks the last heavy sweep sent (only
    /// blocks that differ from what the switch was last given).
    pub last_lft_blocks: usize,
    /// PortInfo Sets of the last heavy sweep.
    pub last_port_sets: usize,
    /// Events dropped, oldest first, because nobody took them with
    /// [`crate::SubnetManager::poll_event`] while [`EVENT_QUEUE_CAP`] were queued.
    pub events_dropped: u64,
}

/// The most events SM-lite keeps for [`crate::SubnetManager::poll_event`]; an
/// embedder that never asks for them costs at most this many (the oldest
/// go first and are counted in [`SmStats::events_dropped`]).
pub const EVENT_QUEUE_CAP: usize = 4096;

/// SM-lite's event queue, bounded at [`EVENT_QUEUE_CAP`].
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    queue: VecDeque<SmEvent>,
    dropped: u64,
}

impl EventQueue {
    /// Queues `ev`, dropping the oldest event when full.
    pub(crate) fn push_back(&mut self, ev: SmEvent) {
        if self.queue.len() >= EVENT_QUEUE_CAP {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(ev);
    }

    /// The oldest event queued.
    pub(crate) fn pop_front(&mut self) -> Option<SmEvent> {
        self.queue.pop_front()
    }

    /// Events dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;

    #[test]
    fn an_event_queue_nobody_reads_keeps_the_newest_cap_events_and_counts_the_rest() {
        let mut q = EventQueue::default();
        let extra = 904;
        for i in 0..EVENT_QUEUE_CAP + extra {
            q.push_back(SmEvent::MasterLost { guid: i as u64 });
        }
        assert_eq!(q.dropped(), extra as u64);
        let mut kept = Vec::new();
        while let Some(SmEvent::MasterLost { guid }) = q.pop_front() {
            kept.push(guid);
        }
        assert_eq!(kept.len(), EVENT_QUEUE_CAP);
        assert_eq!(kept.first(), Some(&(extra as u64)));
        assert_eq!(kept.last(), Some(&((EVENT_QUEUE_CAP + extra - 1) as u64)));
    }
}
