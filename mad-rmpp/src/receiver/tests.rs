//! Unit tests of the receiver table.

use super::*;
use crate::segment::{header, write_header, FLAG_ACTIVE, FLAG_FIRST, FLAG_LAST, MAD_LEN};
use crate::{Peer, SendEvent, Sender, SenderConfig};
use mad_testkit_wire::{header as mad_header, MadBuilder};
use mad_wire::addr::Address;
use mad_wire::wire::{AttributeId, MadStatus, Method, MgmtClass};

const SRC: (u16, u32) = (9, 1);

fn seg(n: u32, flags: u8, d2: u32) -> Vec<u8> {
    // An SA GetTableResp, TID 0xAB.
    let mut m = MadBuilder::new(MgmtClass::SUBN_ADM, 2, Method::GET_TABLE, AttributeId(0))
        .response(MadStatus::SUCCESS)
        .tid(0xAB)
        .to_vec();
    m.truncate(MAD_LEN);
    for (i, b) in m.iter_mut().enumerate().skip(56) {
        *b = (i as u32 + n) as u8;
    }
    write_header(
        &header(
            RmppType::DATA,
            0x1F,
            FLAG_ACTIVE | flags,
            RmppStatus::SUCCESS,
            n,
            d2,
        ),
        &mut m,
    );
    m
}

fn outputs(t: &mut ReceiverTable) -> Vec<Output> {
    std::iter::from_fn(|| t.poll_output()).collect()
}

fn sent(o: &[Output]) -> Vec<(RmppType, RmppStatus, u32, u32)> {
    o.iter()
        .filter_map(|x| match x {
            Output::Send { mad, .. } => {
                let h = read_header(mad).unwrap();
                Some((h.rmpp_type, h.status, h.data1, h.data2))
            }
            _ => None,
        })
        .collect()
}

fn ended(o: &[Output]) -> Option<Outcome> {
    o.iter().find_map(|x| match x {
        Output::Ended { outcome, .. } => Some(*outcome),
        _ => None,
    })
}

/// A table with the default configuration changed by `set`.
fn table_with(set: impl FnOnce(&mut ReceiverConfig)) -> ReceiverTable {
    let mut cfg = ReceiverConfig::default();
    set(&mut cfg);
    ReceiverTable::new(cfg)
}

/// A default table that took the first segment of a transfer (answers
/// drained), and when.
fn first_segment_taken() -> (ReceiverTable, Instant) {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    t.handle(&seg(1, FLAG_FIRST, 660), &Address::gsi(SRC.0), now);
    outputs(&mut t);
    (t, now)
}

fn nack_case(mads: &[Vec<u8>], want: RmppStatus) {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    let mut all = Vec::new();
    for m in mads {
        t.handle(m, &Address::gsi(SRC.0), now);
        all.extend(outputs(&mut t));
    }
    let s = sent(&all);
    let last = s.last().copied().unwrap();
    let rtype = if want == RmppStatus::RESX {
        RmppType::STOP
    } else {
        RmppType::ABORT
    };
    assert_eq!((last.0, last.1), (rtype, want), "{s:?}");
    assert_eq!(t.active(), 0, "no active transfer is left behind");
    // The owner learns that the transfer ended, with that status.
    assert_eq!(ended(&all), Some(Outcome::Aborted(want)), "{all:?}");
    // The far side ends the transfer with that status.
    let mut reply = None;
    for o in &all {
        if let Output::Send { mad, .. } = o {
            reply = Some(mad.clone());
        }
    }
    let mut tx = Sender::new(&mads[0][..56], &[0u8; 5000], SenderConfig::default(), now).unwrap();
    let _ = tx.poll_transmit(now);
    tx.handle_reply(&reply.unwrap(), now);
    assert_eq!(
        tx.poll_event(),
        Some(SendEvent::Finished(Outcome::Aborted(want)))
    );
}

#[test]
fn segment_one_without_first_is_bad_seg() {
    nack_case(&[seg(1, 0, 0)], RmppStatus::BAD_SEG);
}

#[test]
fn first_flag_on_a_later_segment_is_bad_seg() {
    nack_case(
        &[seg(1, FLAG_FIRST, 660), seg(2, FLAG_FIRST, 0)],
        RmppStatus::BAD_SEG,
    );
}

#[test]
fn unsupported_version_is_unv_illegal_type_is_badt_and_data_with_a_status_is_bad_status() {
    // (RMPP header byte, its value, the status of the ABORT).
    for (byte, value, want) in [
        (24, 2, RmppStatus::UNV),
        (25, 9, RmppStatus::BADT),
        (27, 3, RmppStatus::BAD_STATUS),
    ] {
        let mut m = seg(1, FLAG_FIRST, 440);
        m[byte] = value;
        nack_case(&[m], want);
    }
}

#[test]
fn an_abort_for_a_class_without_a_class_header_keeps_its_rmpp_header() {
    // Found by the rmpp_receiver_ops fuzz target: the ABORT / STOP answer
    // clears the class data after the class header, and for a class whose
    // data starts at byte 24 (no class header) that wiped the RMPP header
    // just written, so the answer was no RMPP MAD at all.
    let mut m = seg(1, FLAG_FIRST, 440);
    mad_header::edit(&mut m, |h| h.mgmt_class = MgmtClass(0x20)); // no class header: data at byte 24
    m[24] = 2; // unsupported RMPP version
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    assert!(t.handle(&m, &Address::gsi(SRC.0), now));
    let out = outputs(&mut t);
    assert_eq!(
        sent(&out),
        vec![(RmppType::ABORT, RmppStatus::UNV, 0, 0)],
        "{out:?}"
    );
    let Output::Send { mad, .. } = &out[0] else {
        unreachable!()
    };
    assert!(read_header(mad).unwrap().is_active());
    assert!(mad[36..].iter().all(|b| *b == 0), "no data in an ABORT");
}

#[test]
fn a_segment_beyond_the_last_is_s2b() {
    // Segment 3 says Last while 2 is missing; segment 4 then lies beyond it.
    nack_case(
        &[
            seg(1, FLAG_FIRST, 660),
            seg(3, FLAG_LAST, 100),
            seg(4, 0, 0),
        ],
        RmppStatus::S2B,
    );
}

#[test]
fn last_length_over_220_is_bad_len() {
    nack_case(
        &[seg(1, FLAG_FIRST, 440), seg(2, FLAG_LAST, 221)],
        RmppStatus::BAD_LEN,
    );
}

#[test]
fn a_continuation_segment_shorter_than_a_mad_is_bad_len_not_a_panic() {
    let mut short = seg(2, FLAG_LAST, 220);
    short.truncate(100);
    nack_case(&[seg(1, FLAG_FIRST, 440), short], RmppStatus::BAD_LEN);
}

#[test]
fn first_total_disagreeing_with_the_last_is_bad_len() {
    nack_case(
        &[seg(1, FLAG_FIRST, 999), seg(2, FLAG_LAST, 220)],
        RmppStatus::BAD_LEN,
    );
}

#[test]
fn a_message_past_the_bound_is_stopped_with_resx_and_allocates_no_more() {
    let now = Instant::now();
    let mut t = table_with(|c| c.max_message_len = 1000);
    // The first segment claims 4 GiB: nothing is allocated for that.
    t.handle(&seg(1, FLAG_FIRST, u32::MAX), &Address::gsi(SRC.0), now);
    let mut all = outputs(&mut t);
    for n in 2..=10 {
        t.handle(&seg(n, 0, 0), &Address::gsi(SRC.0), now);
        all.extend(outputs(&mut t));
    }
    assert!(sent(&all).contains(&(RmppType::STOP, RmppStatus::RESX, 0, 0)));
    assert_eq!(ended(&all), Some(Outcome::Aborted(RmppStatus::RESX)));
    assert!(t.is_empty());
}

#[test]
fn too_many_concurrent_transfers_from_one_source_are_stopped() {
    let now = Instant::now();
    let mut t = table_with(|c| c.max_per_source = 2);
    for tid in 0..3u64 {
        let mut m = seg(1, FLAG_FIRST, 660);
        mad_header::edit(&mut m, |h| h.tid = tid);
        t.handle(&m, &Address::gsi(SRC.0), now);
    }
    let all = outputs(&mut t);
    assert_eq!(t.active(), 2);
    assert_eq!(
        sent(&all).last().map(|s| (s.0, s.1)),
        Some((RmppType::STOP, RmppStatus::RESX))
    );
    // Another source is not affected.
    t.handle(&seg(1, FLAG_FIRST, 660), &Address::gsi(10), now);
    assert_eq!(t.active(), 3);
}

#[test]
fn an_idle_transfer_ends_after_the_total_time_with_abort_t2l() {
    let (mut t, now) = first_segment_taken();
    t.handle_timeout(now + Duration::from_secs(39));
    assert_eq!(t.active(), 1, "an early timeout does nothing");
    t.handle_timeout(now + Duration::from_secs(40));
    let all = outputs(&mut t);
    assert_eq!(sent(&all), vec![(RmppType::ABORT, RmppStatus::T2L, 0, 0)]);
    assert_eq!(ended(&all), Some(Outcome::TimedOut));
    assert!(t.is_empty());
}

#[test]
fn duplicates_are_re_acked_and_out_of_window_segments_dropped() {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig {
        window: 4,
        ..ReceiverConfig::default()
    });
    t.handle(&seg(1, FLAG_FIRST, 20 * 220), &Address::gsi(SRC.0), now);
    assert_eq!(
        sent(&outputs(&mut t)),
        vec![(RmppType::ACK, RmppStatus::SUCCESS, 1, 5)]
    );
    t.handle(&seg(1, FLAG_FIRST, 20 * 220), &Address::gsi(SRC.0), now);
    assert_eq!(
        sent(&outputs(&mut t)),
        vec![(RmppType::ACK, RmppStatus::SUCCESS, 1, 5)]
    );
    t.handle(&seg(9, 0, 0), &Address::gsi(SRC.0), now);
    assert!(outputs(&mut t).is_empty());
    assert_eq!(t.dropped, 1);
    // Out of order inside the window: no ACK until the window fills.
    for n in [3, 5, 4] {
        t.handle(&seg(n, 0, 0), &Address::gsi(SRC.0), now);
        assert!(outputs(&mut t).is_empty());
    }
    t.handle(&seg(2, 0, 0), &Address::gsi(SRC.0), now);
    assert_eq!(
        sent(&outputs(&mut t)),
        vec![(RmppType::ACK, RmppStatus::SUCCESS, 5, 9)]
    );
}

#[test]
fn a_finished_transfer_lingers_then_is_forgotten() {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    t.handle(
        &seg(1, FLAG_FIRST | FLAG_LAST, 120),
        &Address::gsi(SRC.0),
        now,
    );
    let all = outputs(&mut t);
    assert!(all
        .iter()
        .any(|o| matches!(o, Output::Delivered { message, .. } if message.len() == 156)));
    assert_eq!(t.len(), 1);
    t.handle(
        &seg(1, FLAG_FIRST | FLAG_LAST, 120),
        &Address::gsi(SRC.0),
        now,
    );
    let again = outputs(&mut t);
    assert_eq!(sent(&again).len(), 1, "re-ACKed, not delivered twice");
    assert!(!again.iter().any(|o| matches!(o, Output::Delivered { .. })));
    t.handle_timeout(now + Duration::from_secs(10));
    assert!(t.is_empty());
}

#[test]
fn a_ds_ack_sets_the_response_window_of_the_completed_request() {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    // A one-segment request (method GetMulti 0x14) completes here.
    let mut req = seg(1, FLAG_FIRST | FLAG_LAST, 120);
    req[3] = 0x14;
    t.handle(&req, &Address::gsi(SRC.0), now);
    let key = TransferKey::of(&req, Peer::lid(SRC.0, SRC.1)).unwrap();
    let acks = outputs(&mut t);
    let Some(Output::Send { mad: final_ack, .. }) =
        acks.iter().find(|o| matches!(o, Output::Send { .. }))
    else {
        panic!("no final ACK: {acks:?}");
    };
    assert_eq!(final_ack[3], 0x94, "the ACK flips the response bit");
    assert_eq!(t.response_window(&key), Some(1));
    // The requester's sender answers the final ACK with a DS ACK.
    let mut tx = Sender::new(
        &req[..56],
        &[0u8; 100],
        SenderConfig {
            expects_response: true,
            ..SenderConfig::default()
        },
        now,
    )
    .unwrap();
    let _ = tx.poll_transmit(now);
    tx.handle_reply(final_ack, now);
    let mut ds = tx.poll_transmit(now).unwrap();
    assert_eq!(ds[3], 0x14, "the DS ACK carries the request method");
    // Advertise a bigger window than 1 to see it taken.
    write_header(
        &header(RmppType::ACK, 0x1F, FLAG_ACTIVE, RmppStatus::SUCCESS, 0, 32),
        &mut ds,
    );
    t.handle(&ds, &Address::gsi(SRC.0), now);
    assert_eq!(t.response_window(&key), Some(32));
}

// ----- hostile peers (issues 12 and 13) -----

/// QP1 at LID 0 with a GRH whose GID ends in `last`: a RoCE peer.
fn roce(last: u8) -> Address {
    let mut a = Address::gsi(0);
    let mut gid = [0u8; 16];
    gid[..2].copy_from_slice(&[0xfe, 0x80]);
    gid[15] = last;
    a.qkey = 0;
    a.grh = Some(mad_wire::addr::Grh {
        gid,
        hop_limit: 1,
        ..Default::default()
    });
    a
}

fn with_tid(mut m: Vec<u8>, tid: u64) -> Vec<u8> {
    mad_header::edit(&mut m, |h| h.tid = tid);
    m
}

#[test]
fn two_peers_at_lid_0_with_different_gids_and_the_same_tid_get_separate_transfers() {
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    let (x, y) = (roce(1), roce(2));
    // Interleaved: segment 1 from each, then segment 2 (Last) from each,
    // with different bytes so a shared buffer would show.
    // Segment 2's byte 100 is the message's byte 56 + 200 + 44.
    let mut x2 = seg(2, FLAG_LAST, 220);
    x2[100] = 0x11;
    let mut y2 = seg(2, FLAG_LAST, 220);
    y2[100] = 0x22;
    t.handle(&seg(1, FLAG_FIRST, 440), &x, now);
    t.handle(&seg(1, FLAG_FIRST, 440), &y, now);
    assert_eq!(t.active(), 2, "one transfer per GID");
    t.handle(&x2, &x, now);
    t.handle(&y2, &y, now);
    let all = outputs(&mut t);
    let mut delivered = Vec::new();
    for o in &all {
        match o {
            Output::Send { key, to, .. } => {
                assert_eq!(
                    to.grh,
                    if key.src == Peer::of(&x) {
                        x.grh
                    } else {
                        y.grh
                    }
                );
                assert_eq!(to.qkey, mad_wire::addr::GSI_QKEY);
            }
            Output::Delivered { key, src, message } => {
                assert_eq!(Peer::of(src), key.src);
                delivered.push((src.grh.unwrap().gid[15], message[300]));
            }
            Output::Ended { .. } => panic!("{all:?}"),
        }
    }
    delivered.sort_unstable();
    assert_eq!(delivered, vec![(1, 0x11), (2, 0x22)]);
    // Every ACK went to the GID its transfer came from: 2 per peer.
    let to_x = all
        .iter()
        .filter(|o| matches!(o, Output::Send { to, .. } if to.grh == x.grh))
        .count();
    assert_eq!(to_x, 2);
}

#[test]
fn a_malformed_stop_or_abort_for_a_transfer_being_received_is_answered_with_abort_bad_status() {
    for (rtype, status) in [(RmppType::STOP, 118), (RmppType::ABORT, 3)] {
        let now = Instant::now();
        let mut t = ReceiverTable::new(ReceiverConfig::default());
        t.handle(&seg(1, FLAG_FIRST, 660), &roce(5), now);
        outputs(&mut t);
        let mut bad = seg(0, 0, 0);
        write_header(
            &header(rtype, 0x1F, FLAG_ACTIVE, RmppStatus(status), 0, 0),
            &mut bad,
        );
        t.handle(&bad, &roce(5), now);
        let all = outputs(&mut t);
        assert_eq!(
            sent(&all),
            vec![(RmppType::ABORT, RmppStatus::BAD_STATUS, 0, 0)],
            "{rtype:?}"
        );
        assert!(matches!(&all[0], Output::Send { to, .. } if to.grh == roce(5).grh));
        assert_eq!(ended(&all), Some(Outcome::Aborted(RmppStatus::BAD_STATUS)));
        assert_eq!(t.active(), 0);
        assert_eq!(t.stats().bad_status, 1);
    }
}

#[test]
fn a_valid_stop_ends_the_transfer_without_an_answer() {
    let (mut t, now) = first_segment_taken();
    let mut stop = seg(0, 0, 0);
    write_header(
        &header(RmppType::STOP, 0x1F, FLAG_ACTIVE, RmppStatus::RESX, 0, 0),
        &mut stop,
    );
    t.handle(&stop, &Address::gsi(SRC.0), now);
    let all = outputs(&mut t);
    assert!(sent(&all).is_empty());
    assert_eq!(ended(&all), Some(Outcome::Aborted(RmppStatus::RESX)));
}

#[test]
fn a_source_finishing_endless_small_transfers_holds_a_bounded_number_of_lingering_ones() {
    let now = Instant::now();
    let cfg = ReceiverConfig::default();
    let mut t = ReceiverTable::new(cfg);
    let n = 20_000u64;
    for tid in 0..n {
        t.handle(
            &with_tid(seg(1, FLAG_FIRST | FLAG_LAST, 120), tid),
            &Address::gsi(SRC.0),
            now,
        );
        while t.poll_output().is_some() {}
    }
    assert_eq!(t.lingering(), cfg.max_lingering_per_source);
    assert_eq!(t.len(), cfg.max_lingering_per_source);
    assert_eq!(
        t.stats().evicted_lingering,
        n - cfg.max_lingering_per_source as u64
    );
    // Many sources: the table-wide bound holds.
    for lid in 1..=40u16 {
        for tid in 0..300u64 {
            t.handle(
                &with_tid(seg(1, FLAG_FIRST | FLAG_LAST, 120), tid),
                &Address::gsi(lid),
                now,
            );
            while t.poll_output().is_some() {}
        }
    }
    assert_eq!(t.lingering(), cfg.max_lingering);
    assert_eq!(t.len(), cfg.max_lingering);
}

/// Starts transfer `tid` from `src` and feeds it `segs` in-order segments
/// (never the Last), as a peer that never finishes does.
fn unfinished(t: &mut ReceiverTable, src: &Address, tid: u64, segs: u32, now: Instant) {
    t.handle(&with_tid(seg(1, FLAG_FIRST, 0), tid), src, now);
    for n in 2..=segs {
        t.handle(&with_tid(seg(n, 0, 0), tid), src, now);
    }
    while t.poll_output().is_some() {}
}

#[test]
fn unfinished_large_transfers_are_stopped_at_the_byte_budgets() {
    let now = Instant::now();
    let cfg = ReceiverConfig {
        window: 100_000,
        max_bytes: 4 << 20,
        max_bytes_per_source: 1 << 20,
        ..ReceiverConfig::default()
    };
    let mut t = ReceiverTable::new(cfg);
    // One source, many 600 KB transfers: its budget stops the second.
    for tid in 0..4 {
        unfinished(&mut t, &Address::gsi(SRC.0), tid, 3000, now);
        assert!(t.held_bytes() <= cfg.max_bytes_per_source);
    }
    assert_eq!(t.active(), 1);
    assert_eq!(t.stats().refused_bytes, 3);
    // Many sources: the table's budget holds.
    for lid in 100..120u16 {
        unfinished(&mut t, &Address::gsi(lid), 1, 3000, now);
        assert!(t.held_bytes() <= cfg.max_bytes, "{}", t.held_bytes());
    }
    assert!(t.stats().refused_bytes > 3 + 10);
    // What was held is given back when the transfers end.
    t.handle_timeout(now + cfg.total_timeout);
    assert_eq!(t.held_bytes(), 0);
}

/// The worst case the crate documentation states: a flood of every kind
/// from many sources never takes the table past its bounds.
#[test]
fn a_hostile_flood_stays_within_the_documented_worst_case() {
    let now = Instant::now();
    let cfg = ReceiverConfig {
        window: 100_000,
        max_total: 64,
        max_per_source: 8,
        max_lingering: 512,
        max_lingering_per_source: 32,
        max_bytes: 8 << 20,
        max_bytes_per_source: 2 << 20,
        ..ReceiverConfig::default()
    };
    let mut t = ReceiverTable::new(cfg);
    let mut tid = 0u64;
    for round in 0..4u64 {
        for g in 0..32u8 {
            let src = roce(g);
            for _ in 0..40 {
                tid += 1;
                t.handle(
                    &with_tid(seg(1, FLAG_FIRST | FLAG_LAST, 120), tid),
                    &src,
                    now,
                );
            }
            tid += 1;
            unfinished(&mut t, &src, tid, 2000 + 500 * round as u32, now);
            assert!(t.held_bytes() <= cfg.max_bytes);
            assert!(t.active() <= cfg.max_total);
            assert!(t.lingering() <= cfg.max_lingering);
            assert!(t.len() <= cfg.max_total + cfg.max_lingering);
        }
    }
    // The fixed record per transfer the documentation counts: the
    // transfer, its key in the map and in the deadline set, and the
    // lingering queues' entries.
    let record = std::mem::size_of::<Transfer>()
        + 4 * std::mem::size_of::<TransferKey>()
        + std::mem::size_of::<Instant>();
    assert!(record <= 600, "{record}");
    let st = t.stats();
    assert!(st.refused_bytes > 0 && st.evicted_lingering > 0, "{st:?}");
}

#[test]
fn an_honest_transfer_grows_its_buffer_to_its_claimed_size_and_not_past_it() {
    // 1.5 MiB of SA data in 7,865 segments of 200 bytes: doubling alone
    // grows the buffer from 1 MiB to 2 MiB for 1.5 MiB + 56 bytes of
    // message (held until the last segment completes it).
    let now = Instant::now();
    let mut hdr = seg(1, 0, 0);
    hdr.truncate(56);
    let data: Vec<u8> = (0..3u32 << 19).map(|i| (i % 251) as u8).collect();
    let cfg = SenderConfig {
        initial_window: u32::MAX,
        ..SenderConfig::default()
    };
    let mut tx = Sender::new(&hdr, &data, cfg, now).unwrap();
    let mut t = table_with(|c| c.window = 1 << 20);
    let final_len = 56 + data.len().div_ceil(200) * 200;
    let mut most = 0;
    let mut delivered = None;
    let mut m = [0u8; MAD_LEN];
    while tx.poll_transmit_into(now, &mut m).is_some() {
        t.handle(&m, &Address::gsi(SRC.0), now);
        most = most.max(t.held_bytes());
        for o in outputs(&mut t) {
            if let Output::Delivered { message, .. } = o {
                delivered = Some(message);
            }
        }
    }
    let message = delivered.expect("the message is delivered");
    assert_eq!(message.len(), 56 + data.len());
    assert_eq!(&message[56..], &data[..]);
    assert!(most <= final_len, "held {most} bytes for {final_len}");
    assert!(most > 1 << 20, "{most}");
}

#[test]
fn a_claim_below_what_arrives_is_ignored_and_growth_doubles_as_before() {
    // Segment 1 claims one segment's payload, then three more arrive: the
    // buffer grows by doubling (not one segment at a time) to hold them.
    let now = Instant::now();
    let mut t = ReceiverTable::new(ReceiverConfig::default());
    let src = Address::gsi(SRC.0);
    t.handle(&seg(1, FLAG_FIRST, 220), &src, now);
    let after_one = t.held_bytes();
    t.handle(&seg(2, 0, 0), &src, now);
    t.handle(&seg(3, 0, 0), &src, now);
    assert!(
        t.held_bytes() >= 2 * after_one,
        "{after_one} -> {}",
        t.held_bytes()
    );
    t.handle(&seg(4, FLAG_LAST, 220), &src, now);
    assert!(outputs(&mut t)
        .iter()
        .any(|o| matches!(o, Output::Ended { .. } | Output::Delivered { .. })));
}
