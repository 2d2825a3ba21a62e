//! STOP / ABORT MADs for a response being reassembled while the request
//! is in any state: answered as the kernel's `mad_rmpp.c` does.

use std::time::{Duration, Instant};

use mad_agents::{EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::Address;
use mad_core::wire::rmpp::RmppStatus;
use mad_core::wire::{Mad, Method};

use super::support::{self, completions, gsi_from};
use super::{payload, vendor_agent, vendor_msg, MS};

/// What the far side was sent, as (method, RMPP type, RMPP status).
fn sent_kinds(sent: &support::Sent) -> Vec<(u8, u8, u8)> {
    sent.lock()
        .unwrap()
        .iter()
        .map(|(_, m, _)| (Mad::new_unchecked(m).raw_method(), m[25], m[27]))
        .collect()
}

/// A vendor MAD with `tid`: `method`, RMPP active with `rtype`, `flags`
/// (First 2, Last 4), `status`, data1 and data2, 216 data bytes.
fn vendor_rmpp(tid: u64, method: u8, rtype: u8, flags: u8, st: u8, d1: u32, d2: u32) -> Vec<u8> {
    let mut m = vendor_msg(Method(method), &[0u8; 216]);
    mad_testkit::header::edit(&mut m, |h| h.tid = tid);
    m[24] = 1; // RMPP version
    m[25] = rtype;
    m[26] = flags | 0x01; // RRespTime 0, Active
    m[27] = st;
    m[28..32].copy_from_slice(&d1.to_be_bytes());
    m[32..36].copy_from_slice(&d2.to_be_bytes());
    m
}

#[test]
fn an_abort_with_a_non_abort_status_for_a_response_being_received_is_answered_with_abort_bad_status(
) {
    // The kernel's mad_rmpp.c (`process_rmpp_abort`) answers an ABORT
    // whose status is not 118..127 with `nack_recv`: ABORT(BAD_STATUS),
    // the received method with the response bit flipped (GetResp 0x81 ->
    // 0x01), and ends the send (`abort_send`) without sending for it.
    // Requests: one MAD (no RMPP), RMPP still being sent (1 of 10
    // segments out), RMPP all acknowledged.
    for (len, ack_all) in [(100usize, false), (2000, false), (2000, true)] {
        for status in [0u8, 117, 128, 255] {
            let what = format!("request of {len} bytes, all acked {ack_all}, status {status}");
            let (lb, sent) = support::recording(1, 64);
            let mut a = Stack::new(lb, EngineConfig::default());
            let tx = vendor_agent(&mut a, "tx", &[]);
            let t0 = Instant::now();
            let s = a
                .send(
                    tx,
                    SendRequest::new(vendor_msg(Method::SET, &payload(len)), Address::gsi(2))
                        .expect_response(Duration::from_secs(10), 0),
                    t0,
                )
                .unwrap();
            a.poll(t0);
            let tid = a.send_tid(s).unwrap();
            if ack_all {
                // ACK each segment as it comes (window one ahead).
                for _ in 0..20 {
                    let n = sent.lock().unwrap().len() as u32;
                    let ack = vendor_rmpp(tid, 0x82, 2, 0, 0, n, n + 1);
                    a.handle_recv(t0, gsi_from(2, ack)).unwrap();
                    a.poll(t0);
                }
            }
            // Segment 1 of 3 of the GetResp, then the ABORT for it.
            let first = vendor_rmpp(tid, 0x81, 1, 0x02, 0, 1, 3 * 216);
            a.handle_recv(t0 + MS, gsi_from(2, first)).unwrap();
            a.poll(t0 + MS);
            assert_eq!(a.rmpp_reassemblies(tx), 1, "{what}");
            sent.lock().unwrap().clear();
            let abort = vendor_rmpp(tid, 0x81, 4, 0, status, 0, 0);
            a.handle_recv(t0 + 2 * MS, gsi_from(2, abort)).unwrap();
            let mut evs = Vec::new();
            for i in 2..2000u32 {
                a.poll(t0 + i * MS);
                evs.extend(std::iter::from_fn(|| a.poll_event()));
            }
            assert_eq!(
                sent_kinds(&sent),
                [(0x01, 4, RmppStatus::BAD_STATUS.0)],
                "{what}: one ABORT(BAD_STATUS) for the response, nothing else"
            );
            let c = completions(&evs);
            assert_eq!(c.len(), 1, "{what}: {evs:?}");
            assert_eq!(
                c[0].status,
                SendStatus::RmppAbort(RmppStatus::BAD_STATUS),
                "{what}"
            );
            assert_eq!(a.rmpp_reassemblies(tx), 0, "{what}");
            assert_eq!(a.outstanding(), 0, "{what}");
        }
    }
}
