//! The directed-route hop-pointer rules (IBA vol. 1 §14.2.2, kernel
//! `smi.c`) and the responder's turn-around.

use super::layout::Smp;
use super::layout::{DR_MAX_HOPS, PERMISSIVE_LID};
use crate::wire::{Error, Method, MAD_LEN};

/// Outcome of [`dr_handle_send`] / [`dr_check_send`] / [`dr_handle_recv`]
/// (`enum smi_action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrVerdict {
    /// Keep the SMP: send it, forward it or process it.
    Handle,
    /// Drop it.
    Discard,
}

impl DrVerdict {
    fn from_bool(keep: bool) -> Self {
        if keep {
            Self::Handle
        } else {
            Self::Discard
        }
    }
}

/// Outcome of [`dr_check_forward`] (`enum smi_forward_action`), for an SMP
/// that passed [`dr_handle_recv`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrForward {
    /// `IB_SMI_LOCAL`: complete it up the local stack as it is (the
    /// returning SMP has reached the SM side, or the outbound SMP continues
    /// LID-routed from here).
    Local,
    /// `IB_SMI_SEND`: not forwarded; run [`dr_handle_send`] on the arrival
    /// port, then (if [`is_local_smp`]) hand it to the local SMA. Also
    /// returned for a returning SMP at hp = 1 with a real DrSLID, which
    /// then continues LID-routed.
    Send,
    /// `IB_SMI_FORWARD`: a switch sends it out of [`dr_fwd_port`].
    Forward,
}

/// What both rule sets read first: HopCount, HopPointer and whether
/// DrDLID and DrSLID are permissive; `None` (discard) when HopCount is
/// above 63 (C14-6) or the view has no paths.
#[inline(always)]
fn dr_route<T: AsRef<[u8]>>(smp: &Smp<T>) -> Option<(u8, u8, bool, bool)> {
    let hc = smp.hop_cnt();
    if hc > DR_MAX_HOPS || !smp.has_paths() {
        return None;
    }
    let dlid_perm = smp.dr_dlid() == PERMISSIVE_LID;
    let slid_perm = smp.dr_slid() == PERMISSIVE_LID;
    Some((hc, smp.hop_ptr(), dlid_perm, slid_perm))
}

fn path_entry(path: &[u8], i: usize) -> Option<u8> {
    path.get(i).copied()
}

/// The send rules (`smi_handle_dr_smp_send`): adjusts HopPointer for an SMP
/// about to leave through `port` of a node (`is_switch` says which kind)
/// and says whether it may go.
///
/// Outbound (D = 0): C14-9:1 requester start (hc ≠ 0, hp = 0): hp += 1,
/// keep iff `InitialPath[hp] == port`; C14-9:2 intermediate (0 < hp < hc):
/// switches only, hp += 1, same check; C14-9:3 end of the DR part
/// (hp = hc): hp += 1, keep iff switch or DrDLID permissive; C14-9:4
/// hp = hc + 1 keep; C14-9:5 anything else discard.
/// Returning (D = 1): C14-13:1 responder (hc ≠ 0, hp = hc + 1): hp −= 1,
/// keep iff `ReturnPath[hp] == port`; C14-13:2 (2 ≤ hp ≤ hc): switches
/// only, hp −= 1, same check; C14-13:3 hp = 1: hp −= 1, keep iff switch or
/// DrSLID permissive; C14-13:4 hp = 0 keep; C14-13:5 discard.
/// HopCount ≥ 64 is always discarded (C14-6), as is a view without paths.
///
/// [`dr_check_send`] gives the same verdict without writing.
pub fn dr_handle_send<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut Smp<T>,
    is_switch: bool,
    port: u8,
) -> DrVerdict {
    let (hop_ptr, verdict) = send_step(smp, is_switch, port);
    if let Some(hp) = hop_ptr {
        smp.set_hop_ptr(hp);
    }
    verdict
}

/// The verdict of [`dr_handle_send`] for the same SMP, node kind and port,
/// without changing the SMP: what the kernel decides when it refuses a
/// post (`smi_handle_dr_smp_send` returning `IB_SMI_DISCARD`), for a
/// caller that must not advance HopPointer yet.
pub fn dr_check_send<T: AsRef<[u8]>>(smp: &Smp<T>, is_switch: bool, port: u8) -> DrVerdict {
    send_step(smp, is_switch, port).1
}

/// The send rules of [`dr_handle_send`] as a pure function: the
/// HopPointer they write (`None`: unchanged) and the verdict.
#[inline(always)]
fn send_step<T: AsRef<[u8]>>(smp: &Smp<T>, is_switch: bool, port: u8) -> (Option<u8>, DrVerdict) {
    let Some((hc, hp, dlid_perm, slid_perm)) = dr_route(smp) else {
        return (None, DrVerdict::Discard);
    };
    // Moves HopPointer to `hp`; keeps the SMP iff `path[hp]` is `port`.
    let step = |hp: u8, path: &[u8]| {
        let keep = path_entry(path, usize::from(hp)) == Some(port);
        (Some(hp), DrVerdict::from_bool(keep))
    };
    if !smp.direction() {
        // C14-9:1 and C14-9:2
        if (hc != 0 && hp == 0) || (hp != 0 && hp < hc) {
            if hp != 0 && !is_switch {
                return (None, DrVerdict::Discard);
            }
            return step(hp + 1, smp.initial_path());
        }
        // C14-9:3
        if hp == hc {
            return (Some(hp + 1), DrVerdict::from_bool(is_switch || dlid_perm));
        }
        // C14-9:4 / C14-9:5
        (
            None,
            DrVerdict::from_bool(u16::from(hp) == u16::from(hc) + 1),
        )
    } else {
        // C14-13:1 and C14-13:2
        let c1 = hc != 0 && u16::from(hp) == u16::from(hc) + 1;
        if c1 || (2..=hc).contains(&hp) {
            if !c1 && !is_switch {
                return (None, DrVerdict::Discard);
            }
            return step(hp - 1, smp.return_path());
        }
        // C14-13:3
        if hp == 1 {
            return (Some(0), DrVerdict::from_bool(is_switch || slid_perm));
        }
        // C14-13:4 / C14-13:5
        (None, DrVerdict::from_bool(hp == 0))
    }
}

/// The receive rules (`smi_handle_dr_smp_recv`) for an SMP that arrived on
/// `port` of a node with `phys_port_cnt` physical ports.
///
/// Outbound (D = 0): C14-9:1 (hc ≠ 0, hp = 0) discard; C14-9:2
/// (0 < hp < hc): switches only, `ReturnPath[hp] = port`, keep iff
/// `InitialPath[hp + 1] ≤ phys_port_cnt`; C14-9:3 (hp = hc): if hc ≠ 0,
/// `ReturnPath[hp] = port`; keep iff switch or DrDLID permissive;
/// C14-9:4/5 keep iff hp = hc + 1. HopPointer is not changed on the
/// outbound leg (the send rules advance it).
/// Returning (D = 1): C14-13:1 (hc ≠ 0, hp = hc + 1): hp −= 1, keep iff
/// `ReturnPath[hp] == port`; C14-13:2 (2 ≤ hp ≤ hc): switches only, keep
/// iff `ReturnPath[hp − 1] ≤ phys_port_cnt`; C14-13:3 (hp = 1): DrSLID
/// permissive → hp = 0 and keep (for the SM), else keep iff switch;
/// C14-13:4/5 keep iff hp = 0.
/// HopCount ≥ 64 is always discarded (C14-6), as is a view without paths.
pub fn dr_handle_recv<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut Smp<T>,
    is_switch: bool,
    port: u8,
    phys_port_cnt: u8,
) -> DrVerdict {
    let Some((hc, hp, dlid_perm, slid_perm)) = dr_route(smp) else {
        return DrVerdict::Discard;
    };
    let hpi = usize::from(hp);
    if !smp.direction() {
        // C14-9:1
        if hc != 0 && hp == 0 {
            return DrVerdict::Discard;
        }
        // C14-9:2
        if hp != 0 && hp < hc {
            if !is_switch {
                return DrVerdict::Discard;
            }
            if let Some(e) = smp.return_path_mut().get_mut(hpi) {
                *e = port;
            }
            return DrVerdict::from_bool(
                path_entry(smp.initial_path(), hpi + 1).is_some_and(|p| p <= phys_port_cnt),
            );
        }
        // C14-9:3
        if hp == hc {
            if hc != 0 {
                if let Some(e) = smp.return_path_mut().get_mut(hpi) {
                    *e = port;
                }
            }
            return DrVerdict::from_bool(is_switch || dlid_perm);
        }
        // C14-9:4 / C14-9:5
        DrVerdict::from_bool(u16::from(hp) == u16::from(hc) + 1)
    } else {
        // C14-13:1
        if hc != 0 && u16::from(hp) == u16::from(hc) + 1 {
            let hp = hp - 1;
            smp.set_hop_ptr(hp);
            return DrVerdict::from_bool(
                path_entry(smp.return_path(), usize::from(hp)) == Some(port),
            );
        }
        // C14-13:2
        if (2..=hc).contains(&hp) {
            if !is_switch {
                return DrVerdict::Discard;
            }
            return DrVerdict::from_bool(
                path_entry(smp.return_path(), hpi - 1).is_some_and(|p| p <= phys_port_cnt),
            );
        }
        // C14-13:3
        if hp == 1 {
            if slid_perm {
                smp.set_hop_ptr(0);
                return DrVerdict::Handle;
            }
            return DrVerdict::from_bool(is_switch);
        }
        // C14-13:4 / C14-13:5
        DrVerdict::from_bool(hp == 0)
    }
}

/// Where a received DR SMP goes next (`smi_check_forward_dr_smp`).
///
/// D = 0: 0 < hp < hc → [`DrForward::Forward`]; hp = hc → `Send` if
/// DrDLID is permissive, else `Local`; hp = hc + 1 → `Send`.
/// D = 1: 2 ≤ hp ≤ hc → `Forward`; hp = 1 → `Send` if DrSLID is *not*
/// permissive, else `Local`. Everything else → `Local`.
pub fn dr_check_forward<T: AsRef<[u8]>>(smp: &Smp<T>) -> DrForward {
    let hc = smp.hop_cnt();
    let hp = smp.hop_ptr();
    if !smp.direction() {
        if hp != 0 && hp < hc {
            return DrForward::Forward;
        }
        if hp == hc {
            return if smp.dr_dlid() == PERMISSIVE_LID {
                DrForward::Send
            } else {
                DrForward::Local
            };
        }
        if u16::from(hp) == u16::from(hc) + 1 {
            return DrForward::Send;
        }
    } else {
        if (2..=hc).contains(&hp) {
            return DrForward::Forward;
        }
        if hp == 1 {
            return if smp.dr_slid() != PERMISSIVE_LID {
                DrForward::Send
            } else {
                DrForward::Local
            };
        }
    }
    DrForward::Local
}

/// The port a switch forwards a DR SMP out of (`smi_get_fwd_port`):
/// `InitialPath[hp + 1]` outbound, `ReturnPath[hp − 1]` returning. Returns
/// 0 when that entry does not exist (hp = 0 returning, hp ≥ 63 outbound,
/// or a view without paths).
pub fn dr_fwd_port<T: AsRef<[u8]>>(smp: &Smp<T>) -> u8 {
    let hp = usize::from(smp.hop_ptr());
    let entry = if !smp.direction() {
        path_entry(smp.initial_path(), hp + 1)
    } else {
        hp.checked_sub(1)
            .and_then(|i| path_entry(smp.return_path(), i))
    };
    entry.unwrap_or(0)
}

/// An outbound SMP for the local SMA: D = 0 and hp = hc + 1
/// (`smi_check_local_smp`).
pub fn is_local_smp<T: AsRef<[u8]>>(smp: &Smp<T>) -> bool {
    !smp.direction() && u16::from(smp.hop_ptr()) == u16::from(smp.hop_cnt()) + 1
}

/// A returning SMP for the local SM: D = 1 and hp = 0
/// (`smi_check_local_returning_smp`).
pub fn is_local_returning_smp<T: AsRef<[u8]>>(smp: &Smp<T>) -> bool {
    smp.direction() && smp.hop_ptr() == 0
}

/// What a node does with a directed-route SMP that arrived on one of its
/// ports ([`dr_arrive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrArrival {
    /// Dropped by the receive rules, or by the send rules of the port it
    /// would leave through or be handed up from.
    Discard,
    /// To be forwarded, but the port the path names does not exist (0,
    /// above the node's port count, or the node is not a switch): a
    /// switch relay error.
    RelayError,
    /// Forwarded out of this switch port (the send rules already applied).
    Forward(u8),
    /// For the node's SMA (an outbound SMP at the end of its path, the
    /// send rules already applied at the arrival port).
    Sma,
    /// A returning SMP back at its requester (HopPointer 0).
    Requester,
}

/// The whole of what the kernel's `handle_ib_smi` decides for a DR SMP
/// that arrived at a node: the receive rules
/// ([`dr_handle_recv`]) for `port` of a node with `phys_port_cnt` ports,
/// then the forward decision ([`dr_check_forward`]) and, for a forward
/// ([`dr_fwd_port`]) or for the SMA, the send rules
/// ([`dr_handle_send`], then [`is_local_smp`]), or for a returning SMP
/// [`is_local_returning_smp`]. One pass over the header, with the same
/// verdict and the same HopPointer and ReturnPath writes as those calls
/// in that order (a test compares them over every header).
pub fn dr_arrive<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut Smp<T>,
    is_switch: bool,
    port: u8,
    phys_port_cnt: u8,
) -> DrArrival {
    let Some((hc, hp, dlid_perm, slid_perm)) = dr_route(smp) else {
        return DrArrival::Discard;
    };
    // A forward out of the path entry `out`, HopPointer then `next`.
    let forward = |smp: &mut Smp<T>, out: u8, next: u8| {
        if !is_switch || out == 0 || out > phys_port_cnt {
            return DrArrival::RelayError;
        }
        smp.set_hop_ptr(next);
        DrArrival::Forward(out)
    };
    if !smp.direction() {
        if hc != 0 && hp == 0 {
            return DrArrival::Discard; // C14-9:1
        }
        if hp != 0 && hp < hc {
            // C14-9:2, then forward out of InitialPath[hp + 1].
            if !is_switch {
                return DrArrival::Discard;
            }
            let hpi = usize::from(hp);
            if let Some(e) = smp.return_path_mut().get_mut(hpi) {
                *e = port;
            }
            let out = path_entry(smp.initial_path(), hpi + 1).unwrap_or(u8::MAX);
            if out > phys_port_cnt {
                return DrArrival::Discard;
            }
            return forward(smp, out, hp + 1);
        }
        if hp == hc {
            // C14-9:3: the end of the directed part.
            if hc != 0 {
                if let Some(e) = smp.return_path_mut().get_mut(usize::from(hp)) {
                    *e = port;
                }
            }
            if !dlid_perm {
                // Kept by a switch, but handed up as is: not returning.
                return DrArrival::Discard;
            }
            smp.set_hop_ptr(hp + 1);
            return DrArrival::Sma;
        }
        // C14-9:4 / C14-9:5
        if u16::from(hp) == u16::from(hc) + 1 {
            DrArrival::Sma
        } else {
            DrArrival::Discard
        }
    } else {
        if hc != 0 && u16::from(hp) == u16::from(hc) + 1 {
            // C14-13:1: back at the responder's side.
            let hp = hp - 1;
            smp.set_hop_ptr(hp);
            if path_entry(smp.return_path(), usize::from(hp)) != Some(port) {
                return DrArrival::Discard;
            }
            if hp >= 2 {
                let out = path_entry(smp.return_path(), usize::from(hp) - 1).unwrap_or(0);
                return forward(smp, out, hp - 1);
            }
            // hp = 1: sent on toward the SM's side (DrSLID not
            // permissive: LID-routed from here, which is no local SMP) or
            // handed up as a returning SMP with hp 1: neither is kept.
            if !slid_perm {
                smp.set_hop_ptr(0);
            }
            return DrArrival::Discard;
        }
        if (2..=hc).contains(&hp) {
            // C14-13:2, then forward out of ReturnPath[hp − 1].
            if !is_switch {
                return DrArrival::Discard;
            }
            let out = path_entry(smp.return_path(), usize::from(hp) - 1).unwrap_or(u8::MAX);
            if out > phys_port_cnt {
                return DrArrival::Discard;
            }
            return forward(smp, out, hp - 1);
        }
        if hp == 1 {
            // C14-13:3 (a switch with a real DrSLID runs the send rules,
            // which move HopPointer to 0, before the SMP is dropped).
            if slid_perm || is_switch {
                smp.set_hop_ptr(0);
            }
            return if slid_perm {
                DrArrival::Requester
            } else {
                DrArrival::Discard
            };
        }
        // C14-13:4 / C14-13:5
        if hp == 0 {
            DrArrival::Requester
        } else {
            DrArrival::Discard
        }
    }
}

/// Turns a received directed-route request into its response, in place:
/// method GetResp (a Get or a Set is answered with GetResp), D = 1, and
/// HopPointer = HopCount + 1 as libibmad's `mad_encode` writes it for a
/// response (it is already hc + 1 after the kernel's send step at the
/// responder). Paths, TID, attribute, status and data are kept; set the
/// status with [`Smp::set_dr_status`] and the data with [`Smp::data_mut`].
///
/// # Errors
/// [`Error::Invalid`] if the SMP is not of class 0x81, is already a
/// response or returning, has HopCount > 63, or its method is not Get or
/// Set; [`Error::Truncated`] if the buffer lacks the paths.
pub fn dr_make_response<T: AsRef<[u8]> + AsMut<[u8]>>(smp: &mut Smp<T>) -> Result<(), Error> {
    let invalid = |field, value: u64, reason| Error::Invalid {
        what: "DrSMP",
        field,
        value,
        reason,
    };
    if !smp.has_paths() {
        return Err(Error::Truncated {
            what: "DrSMP",
            need: MAD_LEN,
            got: smp.as_bytes().len(),
        });
    }
    if !smp.is_directed_route() {
        return Err(invalid(
            "mgmt_class",
            u64::from(smp.mgmt_class().0),
            "not a directed-route SMP",
        ));
    }
    if smp.response_bit() {
        return Err(invalid(
            "method",
            u64::from(smp.mad().raw_method()),
            "already a response",
        ));
    }
    if smp.direction() {
        return Err(invalid("direction", 1, "already a returning SMP"));
    }
    let hc = smp.hop_cnt();
    if hc > DR_MAX_HOPS {
        return Err(invalid("hop_cnt", u64::from(hc), "more than 63 hops"));
    }
    let m = smp.method();
    if m != Method::GET && m != Method::SET {
        return Err(invalid(
            "method",
            u64::from(m.0),
            "only Get and Set have a GetResp",
        ));
    }
    smp.mad_mut().set_method(Method::GET, true);
    smp.set_direction(true);
    smp.set_hop_ptr(hc + 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::MgmtClass;

    /// [`dr_arrive`] as the separate rules it folds together, in the
    /// order the kernel (and the fabric before) runs them.
    fn reference<T: AsRef<[u8]> + AsMut<[u8]>>(
        smp: &mut Smp<T>,
        is_switch: bool,
        port: u8,
        nports: u8,
    ) -> DrArrival {
        if dr_handle_recv(smp, is_switch, port, nports) == DrVerdict::Discard {
            return DrArrival::Discard;
        }
        match dr_check_forward(smp) {
            DrForward::Forward => {
                let out = dr_fwd_port(smp);
                if !is_switch || out == 0 || out > nports {
                    return DrArrival::RelayError;
                }
                if dr_handle_send(smp, true, out) == DrVerdict::Discard {
                    return DrArrival::Discard;
                }
                DrArrival::Forward(out)
            }
            DrForward::Send => {
                if dr_handle_send(smp, is_switch, port) == DrVerdict::Discard || !is_local_smp(smp)
                {
                    return DrArrival::Discard;
                }
                DrArrival::Sma
            }
            DrForward::Local => {
                if is_local_returning_smp(smp) {
                    DrArrival::Requester
                } else {
                    DrArrival::Discard
                }
            }
        }
    }

    #[test]
    fn dr_arrive_decides_and_writes_as_the_separate_rules_for_every_header() {
        let mut cases = 0u32;
        for hc in [0u8, 1, 2, 3, 5, 62, 63, 64] {
            for hp in 0..=66u8 {
                for dir in [false, true] {
                    for (slid, dlid) in [(true, true), (true, false), (false, true)] {
                        for is_switch in [false, true] {
                            for (port, nports) in [(1u8, 1u8), (3, 8), (7, 36), (0, 4)] {
                                let mut b = [0u8; MAD_LEN];
                                b[1] = MgmtClass::SUBN_DIRECTED_ROUTE.0;
                                let mut s = Smp::new_unchecked(b);
                                s.set_hop_cnt(hc);
                                s.set_hop_ptr(hp);
                                s.set_direction(dir);
                                s.set_dr_slid(if slid { PERMISSIVE_LID } else { 5 });
                                s.set_dr_dlid(if dlid { PERMISSIVE_LID } else { 9 });
                                // Path entries: ports in and out of range, the
                                // arrival port, and 0.
                                for i in 0..64 {
                                    s.initial_path_mut()[i] = [0, 3, 7, 40, 1][i % 5];
                                    s.return_path_mut()[i] = [7, 0, 3, 1, 40, 2][i % 6];
                                }
                                let mut want = Smp::new_unchecked(s.into_inner());
                                let expect = reference(&mut want, is_switch, port, nports);
                                let got = dr_arrive(&mut s, is_switch, port, nports);
                                assert_eq!(
                                    got, expect,
                                    "hc {hc} hp {hp} d {dir} slid {slid} dlid {dlid} \
                                     switch {is_switch} port {port}/{nports}"
                                );
                                assert_eq!(
                                    s.as_bytes(),
                                    want.as_bytes(),
                                    "writes: hc {hc} hp {hp} d {dir} slid {slid} dlid {dlid} \
                                     switch {is_switch} port {port}/{nports}"
                                );
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(cases > 10_000);
    }
}
