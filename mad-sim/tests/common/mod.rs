//! Helpers for mad-sim's integration tests: the shared topology files,
//! SMP round trips through any `Transport`, and the workspace's shared
//! directed-route sweep (`tests/support`, included by path).
#![allow(dead_code, reason = "not every test uses every helper")]
#![allow(clippy::unwrap_used, reason = "test helpers")]

// The workspace's shared test support (not this crate's code: its lints
// are its owner's business).
#[allow(clippy::all)]
#[path = "../../../tests/support/mod.rs"]
pub mod support;

use std::path::PathBuf;

use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method};

/// ../shared/topologies, from this crate.
pub fn topo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/topologies")
}

/// Every topology file (all but the README), sorted.
pub fn topo_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(topo_dir())
        .expect("../shared/topologies")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("net"))
        })
        .collect();
    v.sort();
    v
}

/// The topology file called `name`.
pub fn topo(name: &str) -> PathBuf {
    topo_dir().join(name)
}

/// A directed-route SMP request.
#[derive(Debug, Clone, Copy)]
pub struct Req<'a> {
    /// Egress ports of hops 1.. (empty: the local port).
    pub hops: &'a [u8],
    /// Get or Set.
    pub method: Method,
    /// Attribute.
    pub attr: AttributeId,
    /// Attribute modifier.
    pub amod: u32,
    /// M_Key.
    pub m_key: u64,
    /// Attribute data (Set).
    pub data: &'a [u8],
}

impl<'a> Req<'a> {
    /// Get `attr` / `amod` at `hops`.
    pub fn get(hops: &'a [u8], attr: AttributeId, amod: u32) -> Self {
        Self {
            hops,
            method: Method::GET,
            attr,
            amod,
            m_key: 0,
            data: &[],
        }
    }
    /// Set `attr` / `amod` at `hops` to `data`.
    pub fn set(hops: &'a [u8], attr: AttributeId, amod: u32, data: &'a [u8]) -> Self {
        Self {
            hops,
            method: Method::SET,
            attr,
            amod,
            m_key: 0,
            data,
        }
    }
    /// With this M_Key.
    pub fn key(mut self, m_key: u64) -> Self {
        self.m_key = m_key;
        self
    }
    /// The SMP bytes with this TID.
    pub fn build(&self, tid: u64) -> [u8; 256] {
        let mut m = DrPath::from_hops(self.hops).unwrap().build_request(
            self.method,
            self.attr,
            self.amod,
            tid,
            self.m_key,
        );
        m[64..64 + self.data.len()].copy_from_slice(self.data);
        m
    }
}

static TID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x4242_0000);

/// A fresh TID (below bit 48).
pub fn next_tid() -> u64 {
    TID.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xFFFF_FFFF_FFFF
}

/// Sends `req` and returns (status, data) of the answer, or `None` when
/// none came (after `idle` said there is nothing more to wait for).
pub fn dr_rpc<T: Transport + ?Sized>(
    t: &mut T,
    req: &Req<'_>,
    mut idle: impl FnMut(&mut T) -> bool,
) -> Option<(u16, [u8; 64])> {
    let tid = next_tid();
    t.post_send(Qp::Qp0, &req.build(tid), &Address::smi(PERMISSIVE_LID))
        .unwrap();
    loop {
        while let Some(r) = t.poll_recv().unwrap() {
            let s = Smp::new_checked(&r.mad[..]).unwrap();
            if s.tid() & 0xFFFF_FFFF_FFFF == tid {
                let mut d = [0u8; 64];
                d.copy_from_slice(s.data());
                return Some((s.dr_status(), d));
            }
        }
        if !idle(t) {
            return None;
        }
    }
}

/// `dr_rpc` on the simulated fabric (answers arrive at once).
pub fn sim_rpc<T: Transport + ?Sized>(t: &mut T, req: &Req<'_>) -> Option<(u16, [u8; 64])> {
    dr_rpc(t, req, |_| false)
}
