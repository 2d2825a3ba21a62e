//! [`DrPath`], the responder and a whole walk out and back.

use super::*;

// ---- DrPath and the responder

#[test]
fn dr_path_parses_the_smpquery_form() {
    let p: DrPath = "0,1,3".parse().unwrap();
    assert_eq!(p.hop_cnt(), 2);
    assert_eq!(p.hops(), &[1, 3]);
    assert_eq!(p.to_string(), "0,1,3");
    assert_eq!((p.dr_slid, p.dr_dlid), (0xFFFF, 0xFFFF));
    let p: DrPath = "0".parse().unwrap();
    assert_eq!(p.hop_cnt(), 0);
    assert_eq!(p, DrPath::local());
    let p: DrPath = " 0, 2 ,255".parse().unwrap();
    assert_eq!(p.hops(), &[2, 255]);
    assert_eq!(
        DrPath::from_hops(&[1, 3]).unwrap(),
        "0,1,3".parse().unwrap()
    );
}

#[test]
fn dr_path_rejects_bad_elements_and_too_many_hops() {
    for bad in ["", "0,", "0,x", "0,256", "0,-1", "0,,1"] {
        assert!(
            matches!(
                bad.parse::<DrPath>(),
                Err(Error::Invalid { field: "path", .. })
            ),
            "{bad:?}"
        );
    }
    let ok63 = std::iter::once("0")
        .chain((0..63).map(|_| "1"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(ok63.parse::<DrPath>().unwrap().hop_cnt(), 63);
    let bad64 = format!("{ok63},1");
    assert!(matches!(
        bad64.parse::<DrPath>(),
        Err(Error::Invalid {
            field: "hop_cnt",
            ..
        })
    ));
    assert!(DrPath::from_hops(&[1; 63]).is_ok());
    assert!(matches!(
        DrPath::from_hops(&[1; 64]),
        Err(Error::Invalid {
            field: "hop_cnt",
            value: 64,
            ..
        })
    ));
}

#[test]
fn dr_path_builds_a_request_like_libibmad() {
    let p: DrPath = "0,1,3".parse().unwrap();
    let buf = p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0x42, 0);
    let s = Smp::new_checked(&buf[..]).unwrap();
    let r = s.to_dr_repr().unwrap();
    assert_eq!(
        (r.base_version, r.mgmt_class, r.class_version),
        (1, MgmtClass::SUBN_DIRECTED_ROUTE, 1)
    );
    assert_eq!((r.method, r.response), (Method::GET, false));
    assert_eq!(
        (r.hop_cnt, r.hop_ptr, r.direction, r.status),
        (2, 0, false, 0)
    );
    assert_eq!((r.dr_slid, r.dr_dlid), (0xFFFF, 0xFFFF));
    assert_eq!(&r.initial_path[..4], &[0, 1, 3, 0]);
    assert!(r.return_path.iter().all(|b| *b == 0));
    assert_eq!((r.tid, r.attr_id), (0x42, AttributeId::NODE_INFO));
    // write_route leaves a short buffer alone with an error.
    let mut short = Smp::new_checked([0u8; 128]).unwrap();
    assert!(p.write_route(&mut short).is_err());
}

#[test]
fn responder_sets_getresp_direction_and_hop_ptr_count_plus_one() {
    let p: DrPath = "0,1,3".parse().unwrap();
    let mut s =
        Smp::new_checked(p.build_request(Method::SET, AttributeId::PORT_INFO, 1, 7, 0)).unwrap();
    s.set_hop_ptr(3);
    dr_make_response(&mut s).unwrap();
    assert_eq!(s.mad().raw_method(), 0x81);
    assert!(s.direction());
    assert_eq!(s.hop_ptr(), 3);
    assert_eq!(s.tid(), 7);
    // Errors: already a response / returning; not DR; bad method.
    assert!(matches!(
        dr_make_response(&mut s),
        Err(Error::Invalid {
            field: "method",
            ..
        })
    ));
    let mut s =
        Smp::new_checked(p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 1, 0)).unwrap();
    s.set_direction(true);
    assert!(matches!(
        dr_make_response(&mut s),
        Err(Error::Invalid {
            field: "direction",
            ..
        })
    ));
    let mut s =
        Smp::new_checked(p.build_request(Method::TRAP, AttributeId::NOTICE, 0, 1, 0)).unwrap();
    assert!(matches!(
        dr_make_response(&mut s),
        Err(Error::Invalid {
            field: "method",
            ..
        })
    ));
    let mut s = Smp::new_checked([0u8; 256]).unwrap();
    s.mad_mut().set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
    assert!(matches!(
        dr_make_response(&mut s),
        Err(Error::Invalid {
            field: "mgmt_class",
            ..
        })
    ));
    let mut s =
        Smp::new_checked(p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 1, 0)).unwrap();
    s.set_hop_cnt(64);
    assert!(matches!(
        dr_make_response(&mut s),
        Err(Error::Invalid {
            field: "hop_cnt",
            ..
        })
    ));
}

// ---- the whole walk

/// One node of the walk: a switch or a CA with `ports` ports.
struct Node {
    is_switch: bool,
    ports: u8,
}

/// What a receiving node does with a DR SMP, as the kernel's
/// `handle_ib_smi` does: the receive rules, then forward (switch),
/// or send rules + local SMA, or local. Returns the egress port for a
/// forward, or `None` when the SMP stays at this node.
fn receive(s: &mut Smp<[u8; 256]>, n: &Node, port: u8) -> Option<u8> {
    assert_eq!(
        dr_handle_recv(s, n.is_switch, port, n.ports),
        Handle,
        "recv rules"
    );
    match dr_check_forward(s) {
        DrForward::Forward => {
            assert!(n.is_switch);
            let out = dr_fwd_port(s);
            assert_eq!(
                dr_handle_send(s, n.is_switch, out),
                Handle,
                "send rules on forward"
            );
            Some(out)
        }
        DrForward::Send => {
            assert_eq!(
                dr_handle_send(s, n.is_switch, port),
                Handle,
                "send rules to SMA"
            );
            assert!(is_local_smp(s));
            None
        }
        DrForward::Local => None,
    }
}

#[test]
fn full_walk_requester_two_switches_responder_and_back() {
    // R (CA) port 1 -> S1 in 7, out 3 -> S2 in 9, out 5 -> D (CA) port 1.
    let ca = Node {
        is_switch: false,
        ports: 2,
    };
    let sw = Node {
        is_switch: true,
        ports: 36,
    };
    let path: DrPath = "0,1,3,5".parse().unwrap();
    let mut s =
        Smp::new_checked(path.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0x99, 0))
            .unwrap();

    // Requester sends out of port 1.
    assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
    assert_eq!((s.hop_ptr(), s.direction()), (1, false));

    // Switch 1 receives on 7 and forwards out 3.
    assert_eq!(receive(&mut s, &sw, 7), Some(3));
    assert_eq!(s.return_path()[1], 7);
    assert_eq!(s.hop_ptr(), 2);

    // Switch 2 receives on 9 and forwards out 5.
    assert_eq!(receive(&mut s, &sw, 9), Some(5));
    assert_eq!(s.return_path()[2], 9);
    assert_eq!(s.hop_ptr(), 3);

    // Responder receives on port 1: for its SMA, hop pointer hc + 1.
    assert_eq!(receive(&mut s, &ca, 1), None);
    assert_eq!(s.return_path()[3], 1);
    assert_eq!(s.hop_ptr(), 4);
    assert!(is_local_smp(&s));
    assert_eq!(
        &s.initial_path()[..4],
        &[0, 1, 3, 5],
        "initial path untouched"
    );

    // The SMA answers.
    dr_make_response(&mut s).unwrap();
    s.data_mut()[0] = 0x5A;
    assert_eq!((s.hop_ptr(), s.direction()), (4, true));
    assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
    assert_eq!(s.hop_ptr(), 3);

    // Switch 2 receives on 5 and forwards out 9 (ReturnPath[2]).
    assert_eq!(receive(&mut s, &sw, 5), Some(9));
    assert_eq!(s.hop_ptr(), 2);

    // Switch 1 receives on 3 and forwards out 7 (ReturnPath[1]).
    assert_eq!(receive(&mut s, &sw, 3), Some(7));
    assert_eq!(s.hop_ptr(), 1);

    // Requester receives on 1: hop pointer 0, for the local SM.
    assert_eq!(receive(&mut s, &ca, 1), None);
    assert_eq!(s.hop_ptr(), 0);
    assert!(is_local_returning_smp(&s));
    assert_eq!(&s.return_path()[..4], &[0, 7, 9, 1]);
    assert_eq!(
        (s.tid(), s.data()[0], s.mad().raw_method()),
        (0x99, 0x5A, 0x81)
    );
}

#[test]
fn full_walk_with_hop_count_zero_stays_local() {
    let ca = Node {
        is_switch: false,
        ports: 1,
    };
    let mut s = Smp::new_checked(DrPath::local().build_request(
        Method::GET,
        AttributeId::NODE_INFO,
        0,
        1,
        0,
    ))
    .unwrap();
    assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
    assert!(is_local_smp(&s));
    dr_make_response(&mut s).unwrap();
    assert_eq!(s.hop_ptr(), 1);
    assert_eq!(dr_handle_send(&mut s, ca.is_switch, 1), Handle);
    assert!(is_local_returning_smp(&s));
}
