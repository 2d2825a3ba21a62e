//! Loopback far sides written once: the GetResp to a request
//! ([`get_resp`]), a MAD received from the LID a request went to
//! ([`from_dest`]), and a [`Loopback`] that answers every request
//! ([`answering`]).
//!
//! ```
//! use mad_core::transport::Transport;
//! use mad_core::transport::{Address, Qp};
//! use mad_testkit::{far, MadBuilder};
//! use mad_core::wire::{AttributeId, Mad};
//!
//! let mut lb = far::answering("lb0", 5, 8, None);
//! let get = MadBuilder::perf_get(1, AttributeId::PM_PORT_COUNTERS).tid(9).build();
//! lb.post_send(Qp::Qp1, &get, &Address { lid: 7, ..Address::default() }).unwrap();
//! lb.poll_send_completions(&mut Vec::new()).unwrap();
//! let r = lb.poll_recv().unwrap().expect("answered");
//! assert_eq!((r.src.lid, r.src.qpn), (7, 1));
//! assert!(Mad::new_unchecked(&r.mad).is_response());
//! assert_eq!(Mad::new_unchecked(&r.mad).tid(), 9);
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Mad, Method};

/// The GetResp to `mad`: the same bytes (same TID, attribute and data)
/// with the method set to GetResp.
#[must_use]
pub fn get_resp(mad: &[u8]) -> Vec<u8> {
    let mut r = mad.to_vec();
    Mad::new_unchecked(&mut r[..]).set_method(Method::GET, true);
    r
}

/// `mad` received on `qp` from the LID `dest` names, from QP `qpn`.
#[must_use]
pub fn from_dest(qp: Qp, dest: &Address, qpn: u32, mad: Vec<u8>) -> Received {
    Received {
        qp,
        src: Address {
            lid: dest.lid,
            qpn,
            ..Address::default()
        },
        mad: mad.into(),
    }
}

/// A [`Loopback`] (`name`, port 1, `lid`, `depth` sends) whose far side
/// answers every request with its [`get_resp`] from the LID it was sent
/// to (QP 1), and ignores responses; while `silent` is set it answers
/// nothing.
#[must_use]
pub fn answering(name: &str, lid: u16, depth: usize, silent: Option<Arc<AtomicBool>>) -> Loopback {
    Loopback::new(Loopback::attrs(name, 1, lid), depth).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            let quiet = silent.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
            if quiet || Mad::new_unchecked(mad).is_response() {
                return Vec::new();
            }
            vec![from_dest(qp, dest, 1, get_resp(mad))]
        },
    ))
}

/// What a [`recording`] far side was sent: (QP, MAD, destination).
pub type Sent = Arc<Mutex<Vec<(Qp, Vec<u8>, Address)>>>;

/// A [`Loopback`] (`name`, port 1, `lid`, `depth` sends) whose far side
/// records every MAD it is sent and answers nothing (a test answers with
/// `push_recv`, e.g. an [`answer`]).
#[must_use]
pub fn recording(name: &str, lid: u16, depth: usize) -> (Loopback, Sent) {
    let sent: Sent = Arc::default();
    let seen = Arc::clone(&sent);
    let lb = Loopback::new(Loopback::attrs(name, 1, lid), depth).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((qp, mad.to_vec(), *dest));
            Vec::new()
        },
    ));
    (lb, sent)
}

/// `mad` received on QP1 from LID `lid`'s QP1.
#[must_use]
pub fn gsi_from(lid: u16, mad: impl Into<mad_core::MadBuf>) -> Received {
    Received {
        qp: Qp::Qp1,
        src: Address::gsi(lid),
        mad: mad.into(),
    }
}

/// The [`get_resp`] to `mad`, received on `qp` from `src`.
#[must_use]
pub fn answer(qp: Qp, mad: &[u8], src: Address) -> Received {
    Received {
        qp,
        src,
        mad: get_resp(mad).into(),
    }
}
