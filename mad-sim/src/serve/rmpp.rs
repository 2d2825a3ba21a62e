//! RMPP for the clients of a served fabric that do none of it.
//!
//! Under a kernel, RMPP is the kernel's: libibumad's clients (OpenSM's
//! `osmtest`, infiniband-diags) send a message with the Active flag and
//! let the kernel segment it, and read answers the kernel reassembled, at
//! their length. Through libumad2sim no kernel is there: such a client
//! sends one MAD with the Active flag and no segment number, never
//! acknowledges a segment, and counts the records of an answer by the
//! length the datagram declares. madstack's own clients (the ibsim
//! transport under the agent runtime) do RMPP themselves. The server
//! tells them apart by what they send and does the kernel's part for the
//! others:
//!
//! - a client that sends a well-formed RMPP MAD (version 1: an ACK, STOP
//!   or ABORT, or a DATA segment numbered from 1) does RMPP
//!   ([`Rmpp::Speaks`]); one that sends an Active MAD that is no segment
//!   does not ([`Rmpp::Lacks`]), and neither does one that leaves a
//!   segment unacknowledged for [`GRACE`];
//! - such a request is sent into the fabric as the single segment of a
//!   transfer ([`as_single_segment`]), and the ACKs, STOPs and ABORTs the
//!   fabric sends back to a client that lacks RMPP are dropped;
//! - every DATA segment to such a client is acknowledged on its behalf
//!   ([`ack`]); it is handed only the first segment of an answer, as
//!   OpenSM under libumad2sim hands it one MAD; later segments of a
//!   transfer to a client that is not known to do RMPP (or that went
//!   away) are acknowledged and dropped, and the transfers still waiting
//!   on a client that detaches are aborted ([`abort`]), so that no old
//!   answer reaches the next client at the port under a reused TID;
//! - to every client, a Last segment goes at the length it uses (the RMPP
//!   header and its PayloadLength, [`RmppView::used_len`]), not padded to 256 bytes
//!   (madstack's ibsim transport pads it back for its RMPP layer).

use std::time::{Duration, Instant};

use super::IbSimServer;

use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::rmpp::{
    RmppStatus, RmppType, RmppView, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST,
    RMPP_NO_RESP_TIME, RMPP_VERSION,
};
use mad_core::wire::{Mad, MAD_LEN, RMPP_HEADER_END};

/// What a client is known to do about RMPP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Rmpp {
    /// Nothing seen yet.
    #[default]
    Unknown,
    /// It sent well-formed RMPP MADs: it acknowledges its own segments.
    Speaks,
    /// It sent an Active MAD that is no segment, or left a segment
    /// unacknowledged: the server does its RMPP.
    Lacks,
}

/// How long a client not yet known to do RMPP may take to acknowledge a
/// segment before the server acknowledges it on its behalf (and from then
/// on does its RMPP). Well under the senders' 2 s ACK timeout. With 1 s,
/// a libumad2sim client flooding the SA (osmtest `-f f -s2` right after
/// it attached) left so many answers waiting that the served SA stopped
/// answering it (not investigated further). A client that does RMPP but
/// was judged too slow is known to again by its next ACK; the transfer
/// that ACK belongs to may have lost segments and time out (its requester
/// then asks again).
pub(super) const GRACE: Duration = Duration::from_millis(200);

/// The window granted in ACKs sent on a client's behalf (the kernel's).
const WINDOW: u32 = 64;

/// The RMPP header of `mad` when it is an Active MAD of an RMPP class.
pub(super) fn active(mad: &[u8]) -> Option<RmppView<&[u8]>> {
    // A buffer too short for the class reads class 0, no RMPP class.
    if !Mad::new_unchecked(mad).mgmt_class().is_rmpp_class() {
        return None;
    }
    RmppView::new_checked(mad).ok().filter(RmppView::is_active)
}

/// True for what only a client doing RMPP itself sends: version 1 and an
/// ACK, STOP or ABORT, or a DATA segment numbered from 1.
pub(super) fn well_formed(v: &RmppView<&[u8]>) -> bool {
    v.version() == RMPP_VERSION
        && match v.rmpp_type() {
            RmppType::DATA => v.seg_num() >= 1,
            t => t == RmppType::ACK || t == RmppType::STOP || t == RmppType::ABORT,
        }
}

/// Makes `mad` (an Active MAD that is no segment: what libumad2sim passes
/// on for a kernel to segment) the single segment of a transfer: version
/// 1, DATA, Active|First|Last, segment 1, PayloadLength every byte after
/// the RMPP header.
pub(super) fn as_single_segment(mad: &mut [u8]) {
    let payload = mad.len().saturating_sub(RMPP_HEADER_END) as u32;
    let mut v = RmppView::new_unchecked(mad);
    v.set_version(RMPP_VERSION);
    v.set_rmpp_type(RmppType::DATA);
    v.set_resp_time(RMPP_NO_RESP_TIME);
    v.set_flags(RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST);
    v.set_status(RmppStatus::SUCCESS);
    v.set_seg_num(1);
    v.set_payload_len(payload);
}

/// The ACK a receiver sends for DATA segment `data` (its class header,
/// the response bit flipped, segment number `data`'s, a window of
/// [`WINDOW`] more).
pub(super) fn ack(data: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; MAD_LEN];
    // (A class not there reads 0, whose offset the clamp raises to the
    // RMPP header's end.)
    let hdr = Mad::new_unchecked(data)
        .mgmt_class()
        .data_offset()
        .clamp(RMPP_HEADER_END, MAD_LEN)
        .min(data.len());
    m[..hdr].copy_from_slice(&data[..hdr]);
    let mut head = Mad::new_unchecked(&mut m[..]);
    let response = head.response_bit();
    head.set_response_bit(!response);
    let (seg, rt) = {
        let v = RmppView::new_unchecked(data);
        (v.seg_num(), v.resp_time())
    };
    let mut v = RmppView::new_unchecked(&mut m[..]);
    v.set_version(RMPP_VERSION);
    v.set_rmpp_type(RmppType::ACK);
    v.set_resp_time(rt);
    v.set_flags(RMPP_FLAG_ACTIVE);
    v.set_status(RmppStatus::SUCCESS);
    v.set_seg_num(seg);
    v.set_new_window_last(seg.saturating_add(WINDOW));
    m
}

/// The ABORT a receiver that went away sends for DATA segment `data`
/// (status UNSPEC): its sender stops instead of sending the transfer
/// again to whoever attaches at the port next (reusing the same TIDs).
pub(super) fn abort(data: &[u8]) -> Vec<u8> {
    let mut m = ack(data);
    let hdr = Mad::new_unchecked(&m[..])
        .mgmt_class()
        .data_offset()
        .clamp(RMPP_HEADER_END, MAD_LEN);
    m[hdr..].fill(0);
    let mut v = RmppView::new_unchecked(&mut m[..]);
    v.set_rmpp_type(RmppType::ABORT);
    v.set_status(RmppStatus::UNSPEC);
    v.set_seg_num(0);
    v.set_new_window_last(0);
    m
}

/// A segment handed to a client of unknown kind, waiting for its ACK.
#[derive(Debug)]
pub(super) struct Pending {
    /// The client.
    pub(super) client: usize,
    /// Its port (node, port).
    pub(super) port: (usize, u8),
    /// Where the ACK goes (the segment's source).
    pub(super) to: Address,
    /// The ACK to send if the client does not.
    pub(super) ack: Vec<u8>,
    /// The ABORT to send if the client goes away first.
    pub(super) abort: Vec<u8>,
    /// When the segment was handed over.
    pub(super) since: Instant,
}

impl IbSimServer {
    /// Sends `ack` from the port `key` to `to`, for the client there.
    pub(super) fn ack_for(&mut self, key: (usize, u8), ack: &[u8], to: &Address) {
        if let Some(m) = self.muxes.get_mut(&key) {
            if m.ep.post_send(Qp::Qp1, ack, to).is_ok() {
                self.stats.rmpp_acked += 1;
            }
        }
    }

    /// Segments handed to clients of unknown kind: forgotten once the
    /// client is seen doing RMPP (or is gone), acknowledged on its behalf
    /// once it is known not to, or has let one wait [`GRACE`].
    pub(super) fn settle_pending(&mut self, now: Instant) {
        if self.pending.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let kind = self
                .clients
                .get(p.client)
                .and_then(Option::as_ref)
                .map(|c| c.rmpp);
            match kind {
                None | Some(Rmpp::Speaks) => {}
                Some(Rmpp::Lacks) => self.ack_for(p.port, &p.ack, &p.to),
                Some(Rmpp::Unknown) if now.duration_since(p.since) >= GRACE => {
                    if let Some(c) = self.clients[p.client].as_mut() {
                        c.rmpp = Rmpp::Lacks;
                    }
                    self.ack_for(p.port, &p.ack, &p.to);
                }
                Some(Rmpp::Unknown) => keep.push(p),
            }
        }
        // Clients newly known to lack RMPP: their other waiting segments.
        let (lacking, waiting): (Vec<Pending>, Vec<Pending>) = keep.into_iter().partition(|p| {
            self.clients
                .get(p.client)
                .and_then(Option::as_ref)
                .is_some_and(|c| c.rmpp == Rmpp::Lacks)
        });
        for p in lacking {
            self.ack_for(p.port, &p.ack, &p.to);
        }
        self.pending = waiting;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::{AttributeId, MadStatus, Method, MgmtClass};
    use mad_testkit::MadBuilder;

    /// An SA GetTableResp: the header only.
    fn sa_mad(method: Method, response: bool) -> Vec<u8> {
        let b = MadBuilder::new(MgmtClass::SUBN_ADM, 2, method, AttributeId(0));
        let mut m = if response {
            b.response(MadStatus::SUCCESS)
        } else {
            b
        }
        .to_vec();
        m.truncate(MAD_LEN);
        m
    }

    fn seg(flags: u8, seg_num: u32, paylen: u32) -> Vec<u8> {
        let mut m = sa_mad(Method::GET_TABLE, true);
        let mut v = RmppView::new_unchecked(&mut m[..]);
        v.set_version(RMPP_VERSION);
        v.set_rmpp_type(RmppType::DATA);
        v.set_flags(flags);
        v.set_seg_num(seg_num);
        v.set_payload_len(paylen);
        m
    }

    #[test]
    fn a_single_segment_is_used_up_to_its_payload_length() {
        let m = seg(
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
            1,
            20 + 72,
        );
        let v = active(&m).unwrap();
        assert!(well_formed(&v));
        assert_eq!(v.used_len(m.len()), 36 + 20 + 72);
        let first = seg(RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 1, 1000);
        assert_eq!(active(&first).unwrap().used_len(256), 256);
    }

    #[test]
    fn an_active_mad_without_a_segment_becomes_a_single_segment() {
        let mut m = sa_mad(Method::GET_MULTI, false);
        m[26] = RMPP_FLAG_ACTIVE;
        let v = active(&m).unwrap();
        assert!(!well_formed(&v));
        as_single_segment(&mut m);
        let v = active(&m).unwrap();
        assert!(well_formed(&v) && v.is_first() && v.is_last());
        assert_eq!((v.seg_num(), v.payload_len()), (1, 220));
    }

    #[test]
    fn the_ack_answers_the_segment_with_a_window() {
        let m = seg(RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 3, 0);
        let a = ack(&m);
        assert_eq!(a[3], 0x12, "response bit flipped");
        let v = active(&a).unwrap();
        assert_eq!(v.rmpp_type(), RmppType::ACK);
        assert_eq!((v.seg_num(), v.new_window_last()), (3, 3 + WINDOW));
        let b = abort(&m);
        let v = active(&b).unwrap();
        assert_eq!(
            (v.rmpp_type(), v.status()),
            (RmppType::ABORT, RmppStatus::UNSPEC)
        );
        assert_eq!(b[3], 0x12);
    }
}
