//! The kernel's directed-route rules, clause by clause (C14-6, C14-9,
//! C14-13) and the forwarding decision.

use super::*;

// ---- C14-6

#[test]
fn c14_6_hop_count_64_is_discarded_on_send_and_recv_both_ways() {
    for d in [false, true] {
        let mut s = dr(64, 1, d, &[], &[]);
        assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 0), Discard);
        assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 0, 36), Discard);
        assert_eq!(s.hop_ptr(), 1, "no change on a discarded SMP");
    }
}

// ---- outbound send (C14-9)

#[test]
fn send_out_c14_9_1_requester_increments_and_checks_initial_path() {
    let mut s = dr(2, 0, false, &[1, 3], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
    assert_eq!(s.hop_ptr(), 1);
    let mut s = dr(2, 0, false, &[1, 3], &[]);
    assert_eq!(
        dr_handle_send(&mut s, IS_CA, 2),
        Discard,
        "wrong egress port"
    );
    assert_eq!(s.hop_ptr(), 1);
}

#[test]
fn send_out_c14_9_2_switch_increments_and_checks_initial_path() {
    let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 3), Handle);
    assert_eq!(s.hop_ptr(), 2);
    let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 4), Discard);
}

#[test]
fn send_out_c14_9_2_non_switch_discards() {
    let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 3), Discard);
    assert_eq!(s.hop_ptr(), 1, "discarded before the increment");
}

#[test]
fn send_out_c14_9_3_end_of_dr_part_keeps_for_switch_or_permissive_dlid() {
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    assert_eq!(
        dr_handle_send(&mut s, IS_CA, 1),
        Handle,
        "CA, DrDLID permissive"
    );
    assert_eq!(s.hop_ptr(), 3);
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    s.set_dr_dlid(0x0010);
    assert_eq!(
        dr_handle_send(&mut s, IS_SWITCH, 1),
        Handle,
        "switch, LID DrDLID"
    );
    assert_eq!(s.hop_ptr(), 3);
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    s.set_dr_dlid(0x0010);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard, "CA, LID DrDLID");
    // hc = 0: the local case is C14-9:3 too.
    let mut s = dr(0, 0, false, &[], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
    assert_eq!(s.hop_ptr(), 1);
    assert!(is_local_smp(&s));
}

#[test]
fn send_out_c14_9_4_hop_ptr_past_the_end_keeps() {
    let mut s = dr(2, 3, false, &[1, 3], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 9), Handle);
    assert_eq!(s.hop_ptr(), 3, "unchanged");
}

#[test]
fn send_out_c14_9_5_unreasonable_hop_ptr_discards() {
    let mut s = dr(2, 4, false, &[1, 3], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
    let mut s = dr(2, 255, false, &[1, 3], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
}

// ---- outbound receive (C14-9)

#[test]
fn recv_out_c14_9_1_hop_ptr_zero_is_discarded() {
    let mut s = dr(2, 0, false, &[1, 3], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Discard);
}

#[test]
fn recv_out_c14_9_2_switch_records_return_port_and_checks_next_hop() {
    let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 7, 8), Handle);
    assert_eq!(s.return_path()[1], 7);
    assert_eq!(s.hop_ptr(), 1, "hop pointer advances on send, not recv");
    // Next hop's port beyond the switch's port count.
    let mut s = dr(3, 1, false, &[1, 9, 5], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 7, 8), Discard);
    assert_eq!(s.return_path()[1], 7, "recorded before the check");
}

#[test]
fn recv_out_c14_9_2_non_switch_discards() {
    let mut s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 7, 8), Discard);
    assert_eq!(s.return_path()[1], 0, "nothing recorded");
}

#[test]
fn recv_out_c14_9_3_end_records_return_port_and_checks_dlid() {
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
    assert_eq!(s.return_path()[2], 4);
    assert_eq!(s.hop_ptr(), 2);
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    s.set_dr_dlid(0x0020);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Discard);
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    s.set_dr_dlid(0x0020);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Handle);
    // hc = 0: nothing recorded.
    let mut s = dr(0, 0, false, &[], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
    assert_eq!(s.return_path()[0], 0);
}

#[test]
fn recv_out_c14_9_4_hop_ptr_past_the_end_keeps() {
    let mut s = dr(2, 3, false, &[1, 3], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 4, 1), Handle);
    assert_eq!(s.hop_ptr(), 3);
}

#[test]
fn recv_out_c14_9_5_unreasonable_hop_ptr_discards() {
    let mut s = dr(2, 5, false, &[1, 3], &[]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Discard);
}

// ---- returning send (C14-13)

#[test]
fn send_ret_c14_13_1_responder_decrements_and_checks_return_path() {
    let mut s = dr(2, 3, true, &[1, 3], &[0, 4]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 4), Handle);
    assert_eq!(s.hop_ptr(), 2);
    let mut s = dr(2, 3, true, &[1, 3], &[0, 4]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 5), Discard);
    assert_eq!(s.hop_ptr(), 2);
}

#[test]
fn send_ret_c14_13_2_switch_decrements_and_checks_return_path() {
    let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 9), Handle);
    assert_eq!(s.hop_ptr(), 2);
    let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 7), Discard);
}

#[test]
fn send_ret_c14_13_2_non_switch_discards() {
    let mut s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 7), Discard);
    assert_eq!(s.hop_ptr(), 2);
}

#[test]
fn send_ret_c14_13_3_hop_ptr_one_goes_to_zero_for_switch_or_permissive_slid() {
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
    assert_eq!(s.hop_ptr(), 0);
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    s.set_dr_slid(0x0003);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Handle);
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    s.set_dr_slid(0x0003);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard);
    assert_eq!(s.hop_ptr(), 0);
    // The local response (hc = 0, hp = 1) takes this row.
    let mut s = dr(0, 1, true, &[], &[]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
    assert!(is_local_returning_smp(&s));
}

#[test]
fn send_ret_c14_13_4_hop_ptr_zero_keeps() {
    let mut s = dr(2, 0, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Handle);
    assert_eq!(s.hop_ptr(), 0);
}

#[test]
fn send_ret_c14_13_5_unreasonable_hop_ptr_discards() {
    let mut s = dr(2, 4, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_send(&mut s, IS_SWITCH, 1), Discard);
    assert_eq!(s.hop_ptr(), 4);
}

// ---- returning receive (C14-13)

#[test]
fn recv_ret_c14_13_1_decrements_and_checks_return_path() {
    let mut s = dr(2, 3, true, &[1, 3], &[7, 4]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 4, 36), Handle);
    assert_eq!(s.hop_ptr(), 2);
    let mut s = dr(2, 3, true, &[1, 3], &[7, 4]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 5, 36), Discard);
}

#[test]
fn recv_ret_c14_13_2_switch_checks_previous_return_port() {
    let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 5, 9), Handle);
    assert_eq!(s.hop_ptr(), 3, "hop pointer moves on send, not recv");
    let mut s = dr(3, 3, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(
        dr_handle_recv(&mut s, IS_SWITCH, 5, 8),
        Discard,
        "port 9 > 8 ports"
    );
}

#[test]
fn recv_ret_c14_13_2_non_switch_discards() {
    let mut s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 5, 36), Discard);
}

#[test]
fn recv_ret_c14_13_3_permissive_slid_gives_to_sm_else_switch_keeps() {
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Handle);
    assert_eq!(s.hop_ptr(), 0);
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    s.set_dr_slid(0x0003);
    assert_eq!(dr_handle_recv(&mut s, IS_SWITCH, 1, 36), Handle);
    assert_eq!(s.hop_ptr(), 1, "not decremented: continues LID-routed");
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    s.set_dr_slid(0x0003);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
}

#[test]
fn recv_ret_c14_13_4_hop_ptr_zero_keeps() {
    let mut s = dr(2, 0, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Handle);
}

#[test]
fn recv_ret_c14_13_5_unreasonable_hop_ptr_discards() {
    let mut s = dr(2, 9, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
}

// ---- forwarding decision

#[test]
fn forward_out_intermediate_hop_forwards_out_next_initial_port() {
    let s = dr(3, 1, false, &[1, 3, 5], &[]);
    assert_eq!(dr_check_forward(&s), DrForward::Forward);
    assert_eq!(dr_fwd_port(&s), 3);
}

#[test]
fn forward_out_end_of_dr_part_sends_if_dlid_permissive_else_local() {
    let mut s = dr(2, 2, false, &[1, 3], &[]);
    assert_eq!(dr_check_forward(&s), DrForward::Send);
    s.set_dr_dlid(0x0042);
    assert_eq!(dr_check_forward(&s), DrForward::Local);
}

#[test]
fn forward_out_hop_ptr_past_end_sends_and_zero_is_local() {
    assert_eq!(
        dr_check_forward(&dr(2, 3, false, &[1, 3], &[])),
        DrForward::Send
    );
    assert_eq!(
        dr_check_forward(&dr(2, 0, false, &[1, 3], &[])),
        DrForward::Local
    );
    assert_eq!(
        dr_check_forward(&dr(2, 7, false, &[1, 3], &[])),
        DrForward::Local
    );
}

#[test]
fn forward_ret_intermediate_hop_forwards_out_previous_return_port() {
    let s = dr(3, 2, true, &[1, 3, 5], &[7, 9, 1]);
    assert_eq!(dr_check_forward(&s), DrForward::Forward);
    assert_eq!(dr_fwd_port(&s), 7);
}

#[test]
fn forward_ret_hop_ptr_one_sends_if_slid_not_permissive_else_local() {
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    assert_eq!(dr_check_forward(&s), DrForward::Local);
    s.set_dr_slid(0x0005);
    assert_eq!(dr_check_forward(&s), DrForward::Send);
    assert_eq!(
        dr_check_forward(&dr(2, 0, true, &[1, 3], &[7, 9])),
        DrForward::Local
    );
}

#[test]
fn fwd_port_out_of_range_is_zero_not_a_panic() {
    assert_eq!(dr_fwd_port(&dr(2, 0, true, &[], &[])), 0);
    assert_eq!(dr_fwd_port(&dr(63, 63, false, &[], &[])), 0);
    assert_eq!(dr_fwd_port(&dr(63, 255, false, &[], &[])), 0);
}

#[test]
fn local_smp_predicates_follow_the_kernel() {
    assert!(is_local_smp(&dr(2, 3, false, &[], &[])));
    assert!(!is_local_smp(&dr(2, 3, true, &[], &[])));
    assert!(!is_local_smp(&dr(2, 2, false, &[], &[])));
    assert!(is_local_smp(&dr(63, 64, false, &[], &[])));
    assert!(is_local_returning_smp(&dr(2, 0, true, &[], &[])));
    assert!(!is_local_returning_smp(&dr(2, 0, false, &[], &[])));
    assert!(!is_local_returning_smp(&dr(2, 1, true, &[], &[])));
}

// ---- the send verdict without writing

#[test]
fn check_send_gives_handle_sends_verdict_and_writes_nothing() {
    let mut cases = 0;
    for hc in [0u8, 1, 2, 3, 62, 63, 64, 255] {
        for hp in [0u8, 1, 2, 3, 4, 62, 63, 64, 65, 255] {
            for d in [false, true] {
                for (slid, dlid) in [
                    (PERMISSIVE_LID, PERMISSIVE_LID),
                    (5, PERMISSIVE_LID),
                    (PERMISSIVE_LID, 9),
                ] {
                    for is_switch in [IS_CA, IS_SWITCH] {
                        for port in 0..=4u8 {
                            let mut s = dr(hc, hp, d, &[1, 3, 2], &[4, 2, 3]);
                            s.set_dr_slid(slid);
                            s.set_dr_dlid(dlid);
                            let before = s.as_bytes().to_vec();
                            let verdict = dr_check_send(&s, is_switch, port);
                            assert_eq!(s.as_bytes(), &before[..], "dr_check_send wrote to the SMP");
                            assert_eq!(
                                verdict,
                                dr_handle_send(&mut s, is_switch, port),
                                "hc {hc} hp {hp} d {d} slid {slid:#x} dlid {dlid:#x} switch \
                                 {is_switch} port {port}"
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 8 * 10 * 2 * 3 * 2 * 5);
}

#[test]
fn check_send_refuses_what_the_kernel_refuses_on_post() {
    // A CA requester whose first hop names another port.
    assert_eq!(
        dr_check_send(&dr(2, 0, false, &[1, 3], &[]), IS_CA, 2),
        Discard
    );
    assert_eq!(
        dr_check_send(&dr(2, 0, false, &[1, 3], &[]), IS_CA, 1),
        Handle
    );
    // A CA cannot send from the middle of a path.
    assert_eq!(
        dr_check_send(&dr(3, 1, false, &[1, 3, 5], &[]), IS_CA, 3),
        Discard
    );
    // More than 63 hops, either way.
    assert_eq!(
        dr_check_send(&dr(64, 0, false, &[], &[]), IS_SWITCH, 0),
        Discard
    );
    assert_eq!(
        dr_check_send(&dr(64, 65, true, &[], &[]), IS_SWITCH, 0),
        Discard
    );
    // A returning SMP at hop pointer 1 without a switch or permissive DrSLID.
    let mut s = dr(2, 1, true, &[1, 3], &[7, 9]);
    s.set_dr_slid(0x0005);
    assert_eq!(dr_check_send(&s, IS_CA, 7), Discard);
    assert_eq!(dr_check_send(&s, IS_SWITCH, 7), Handle);
}
