//! `-d`: libibmad's `DEBUG` line for each request a tool makes, written
//! as the request goes out (the transport layer sees every MAD whichever
//! client sends it): `smp_query_status_via` / `smp_set_status_via` for an
//! SMP Get / Set (`attr 0x11 mod 0x0 route Lid 1`), `pma_query_via` /
//! `performance_reset_via` for a PerfMgt Get / Set (`lid 1 port 0`, with
//! `mask 0x...` for a reset). A resend (the same TID) is not a new query
//! and prints nothing (libibmad prints these lines once, before its
//! tries).
//!
//! A directed route is named as the tool named it: a route given on the
//! command line (`-D 0,1`) with DR SLID and DLID 65535, as `str2drpath`
//! sets them; the routes a fabric walk builds (libibnetdisc, ibtracert)
//! with 0 and 0, as their zeroed `ib_portid_t` has them (both go out as
//! the permissive LID): [`WalkNames`]. A discovery (libibnetdisc's
//! engine, which sends its SMPs without libibmad's query functions)
//! prints none. The lines go to the process's stderr, as libibmad's do
//! ([`crate::ibdiag::ibdebug`]).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use mad_core::transport::{Address, OutMad, Posted, Transport};
use mad_core::wire::smp::Smp;
use mad_core::wire::Mad;
use std::time::Duration;

use crate::diags::PortIdText;

/// TIDs remembered to tell a resend from a new query: more than any
/// command keeps in flight, so memory stays bounded however long a
/// command runs.
const TIDS_KEPT: usize = 4096;

const PERMISSIVE_LID: u16 = 0xFFFF;

/// A transport layer printing libibmad's `DEBUG` line for each new SMP
/// and PerfMgt request it posts.
pub struct DebugTap<T: Transport> {
    inner: T,
    seen: HashSet<u64>,
    order: VecDeque<u64>,
    walk: WalkNames,
}

/// How the requests sent from now on are told (as given by default): set once the command
/// walks the fabric ([`WalkNames::walk`]) or discovers it
/// ([`WalkNames::discover`]).
#[derive(Debug, Clone, Default)]
pub struct WalkNames(Arc<AtomicU8>);

const AS_GIVEN: u8 = 0;
const NAMED_AS_WALK: u8 = 1;
const DISCOVERY: u8 = 2;

impl WalkNames {
    /// Directed routes with the permissive DR SLID and DLID are named
    /// with 0 and 0 (ibtracert's walk).
    pub fn walk(&self) {
        self.0.store(NAMED_AS_WALK, Ordering::Relaxed);
    }

    /// No line (libibnetdisc's discovery).
    pub fn discover(&self) {
        self.0.store(DISCOVERY, Ordering::Relaxed);
    }

    /// Lines again, directed routes named as given (the default).
    pub fn as_given(&self) {
        self.0.store(AS_GIVEN, Ordering::Relaxed);
    }
}

impl<T: Transport> DebugTap<T> {
    /// Wraps `inner`; `walk` says how directed routes are named.
    pub fn new(inner: T, walk: WalkNames) -> Self {
        Self {
            inner,
            seen: HashSet::new(),
            order: VecDeque::new(),
            walk,
        }
    }

    /// The line for `mad` to `dest` unless its TID was seen (a resend).
    fn note(&mut self, mad: &[u8], dest: &Address) {
        let state = self.walk.0.load(Ordering::Relaxed);
        if state == DISCOVERY {
            return;
        }
        let Some(line) = debug_line(mad, dest, state == NAMED_AS_WALK) else {
            return;
        };
        // A MAD too short to hold its TID is not noted (as before).
        if mad.len() < 16 {
            return;
        }
        let tid = Mad::new_unchecked(mad).tid();
        if !self.seen.insert(tid) {
            return;
        }
        self.order.push_back(tid);
        if self.order.len() > TIDS_KEPT {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        let (func, msg) = line;
        crate::ibdiag::ibdebug::eprint_ibwarn(func, &msg);
    }
}

fn be16(mad: &[u8], at: usize) -> u16 {
    mad.get(at..at + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

/// libibmad's function and `DEBUG` text for the request `mad` to `dest`,
/// if it is an SMP or a PerfMgt Get or Set; `walk`: a permissive DR SLID
/// and DLID are named 0 ([`WalkNames`]).
#[must_use]
pub fn debug_line(mad: &[u8], dest: &Address, walk: bool) -> Option<(&'static str, String)> {
    // Shorter than the first header word: no class, no method. Fields not
    // wholly in `mad` read as 0 through the views.
    if mad.len() < 4 {
        return None;
    }
    let smp = Smp::new_unchecked(mad);
    let head = smp.mad();
    let (class, method) = (head.mgmt_class().0, head.raw_method());
    let attr = head.attr_id().0;
    let attr_mod = head.attr_mod();
    match (class, method) {
        (0x01 | 0x81, 0x01 | 0x02) => {
            let route = if class == 0x01 {
                PortIdText::lid(dest.lid)
            } else {
                // Shorter than the class-specific word: no hop count.
                if mad.len() < 8 {
                    return None;
                }
                let hops = usize::from(smp.hop_cnt() & 0x3F);
                let named = |lid: u16| {
                    if walk && lid == PERMISSIVE_LID {
                        0
                    } else {
                        lid
                    }
                };
                PortIdText {
                    lid: if dest.lid == PERMISSIVE_LID {
                        0
                    } else {
                        dest.lid
                    },
                    gid: None,
                    drslid: named(smp.dr_slid()),
                    drdlid: named(smp.dr_dlid()),
                    path: mad.get(128..=128 + hops)?.to_vec(),
                }
            };
            let func = if method == 0x01 {
                "smp_query_status_via"
            } else {
                "smp_set_status_via"
            };
            Some((
                func,
                format!("attr 0x{attr:x} mod 0x{attr_mod:x} route {route}"),
            ))
        }
        (0x04, 0x01) => Some((
            "pma_query_via",
            format!("lid {} port {}", dest.lid, mad.get(65)?),
        )),
        (0x04, 0x02) => Some((
            "performance_reset_via",
            format!(
                "lid {} port {} mask 0x{:x}",
                dest.lid,
                mad.get(65)?,
                be16(mad, 66)
            ),
        )),
        _ => None,
    }
}

mad_core::transport_layer!([T: Transport] DebugTap<T>, inner: T);

impl<T: Transport> Transport for DebugTap<T> {
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        self.note(mad.bytes(), dest);
        self.inner.post(mad, dest, wait)
    }

    mad_core::forward_transport!(control, poll_recv);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smp(class: u8, method: u8, attr: u16, attr_mod: u32) -> Vec<u8> {
        use mad_core::wire::{AttributeId, Method, MgmtClass, METHOD_RESPONSE_BIT};
        let mut m = vec![0u8; 256];
        mad_testkit::header::edit(&mut m, |h| {
            h.base_version = 1;
            h.mgmt_class = MgmtClass(class);
            h.class_version = 1;
            h.response = method & METHOD_RESPONSE_BIT != 0;
            h.method = Method(method & !METHOD_RESPONSE_BIT);
            h.attr_id = AttributeId(attr);
            h.attr_mod = attr_mod;
        });
        m
    }

    #[test]
    fn smp_and_pma_requests_get_libibmads_debug_text() {
        let m = smp(0x01, 0x01, 0x11, 0);
        assert_eq!(
            debug_line(&m, &Address::smi(1), false),
            Some((
                "smp_query_status_via",
                "attr 0x11 mod 0x0 route Lid 1".to_owned()
            ))
        );
        let mut dr = smp(0x81, 0x02, 0x15, 3);
        dr[7] = 1;
        dr[32..34].copy_from_slice(&0xFFFFu16.to_be_bytes());
        dr[34..36].copy_from_slice(&0xFFFFu16.to_be_bytes());
        dr[129] = 1;
        assert_eq!(
            debug_line(&dr, &Address::smi(PERMISSIVE_LID), false),
            Some((
                "smp_set_status_via",
                "attr 0x15 mod 0x3 route DR path slid 65535; dlid 65535; 0,1".to_owned()
            ))
        );
        let mut pma = smp(0x04, 0x01, 0x12, 0);
        pma[65] = 2;
        assert_eq!(
            debug_line(&dr, &Address::smi(PERMISSIVE_LID), true).map(|l| l.1),
            Some("attr 0x15 mod 0x3 route DR path slid 0; dlid 0; 0,1".to_owned())
        );
        assert_eq!(
            debug_line(&pma, &Address::gsi(4), false),
            Some(("pma_query_via", "lid 4 port 2".to_owned()))
        );
        assert_eq!(
            debug_line(&smp(0x03, 0x01, 0x11, 0), &Address::gsi(1), false),
            None
        );
    }
}
