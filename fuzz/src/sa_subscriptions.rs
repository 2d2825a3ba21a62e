//! Operation sequences on the SA responder's InformInfo subscriptions
//! ([`mad_agents::sa::Subscriptions`], the table behind
//! `SaResponder`'s InformInfo Set), checked against a plain list kept
//! the obvious way (a linear scan, as the responder did before the table
//! was hashed and bounded): subscribes and unsubscribes from a few ports
//! with small limits, as structured InformInfos or raw SA data. After
//! every step: the outcome is the model's (added, already held, refused
//! for the port or the table, not held, invalid) with the matching SA
//! status, the table lists the model's subscriptions in the model's
//! order, no port holds more than its limit and the table no more than
//! its total.

use crate::ops::Ops;
use arbitrary::{Arbitrary, Unstructured};
use mad_agents::sa::{Refused, Subscriber, SubscriptionLimits, Subscriptions};
use mad_wire::wire::sa_records::InformInfo;
use mad_wire::wire::{MadStatus, Repr};

#[derive(Arbitrary, Debug)]
enum Op {
    /// A Set of a subscription built from a few values (so that repeats
    /// and unsubscribes of held ones are frequent).
    Set { lid: u8, subscribe: u8, trap: u8, qpn: u8, generic: bool, gid: bool, range: u8 },
    /// A Set whose SA data is raw bytes.
    Raw { lid: u8, bytes: Vec<u8> },
}

fn lid_of(b: u8) -> u16 {
    1 + u16::from(b % 5)
}

fn info_of(subscribe: u8, trap: u8, qpn: u8, generic: bool, gid: bool, range: u8) -> InformInfo {
    let mut i = InformInfo {
        subscribe: subscribe % 3,
        is_generic: u8::from(generic),
        trap_type: InformInfo::TYPE_ALL,
        trap_number_or_device_id: u16::from(trap % 8),
        qpn: u32::from(qpn % 3),
        producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
        resp_time_value: subscribe >> 3,
        ..InformInfo::default()
    };
    if gid {
        i.gid[15] = range;
    } else if range % 2 == 0 {
        i.lid_range_begin = InformInfo::LID_RANGE_ALL;
    } else {
        i.lid_range_begin = u16::from(range);
        i.lid_range_end = u16::from(range) + 4;
    }
    i
}

/// The same subscription, as the responder compared them before.
fn same(a: &Subscriber, lid: u16, i: &InformInfo) -> bool {
    a.lid == lid && a.info.same_traps(i) && a.info.qpn == i.qpn
}

/// The reference: the outcome of a Set on `model` (changed in place).
fn model_set(model: &mut Vec<Subscriber>, limits: SubscriptionLimits, lid: u16, data: &[u8]) -> Result<InformInfo, Refused> {
    let info = InformInfo::parse(data).map_err(|_| Refused::Invalid)?;
    let held = model.iter().position(|s| same(s, lid, &info));
    if info.subscribe == 1 {
        if held.is_none() {
            if model.iter().filter(|s| s.lid == lid).count() >= limits.per_port {
                return Err(Refused::PortFull);
            }
            if model.len() >= limits.total {
                return Err(Refused::TableFull);
            }
            model.push(Subscriber { lid, info: info.clone() });
        }
    } else {
        model.remove(held.ok_or(Refused::NotHeld)?);
    }
    Ok(info)
}

/// Runs the operations `data` encodes.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(per_port), Ok(total)) = (u.int_in_range(0..=6usize), u.int_in_range(0..=12usize)) else {
        return;
    };
    let limits = SubscriptionLimits { per_port, total };
    let mut table = Subscriptions::new(limits);
    let mut model: Vec<Subscriber> = Vec::new();
    for op in Ops::<Op>::new(&mut u, 256) {
        let (lid, bytes) = match op {
            Op::Set { lid, subscribe, trap, qpn, generic, gid, range } => {
                (lid_of(lid), info_of(subscribe, trap, qpn, generic, gid, range).to_vec().unwrap())
            }
            Op::Raw { lid, bytes } => (lid_of(lid), bytes),
        };
        let got = table.set(lid, &bytes);
        let want = model_set(&mut model, limits, lid, &bytes);
        assert_eq!(got, want, "lid {lid}, data {bytes:02x?}");
        if let Err(r) = got {
            let status = r.status();
            let full = matches!(r, Refused::PortFull | Refused::TableFull);
            assert_eq!(status == MadStatus::SA_NO_RESOURCES, full);
            assert!(full || status == MadStatus::SA_REQ_INVALID);
        }
        assert_eq!(table.len(), model.len());
        assert!(table.len() <= limits.total);
        assert!(table.iter().eq(model.iter()), "the table lists the model's subscriptions in order");
        for l in 1..=5 {
            let n = model.iter().filter(|s| s.lid == l).count();
            assert_eq!(table.of_port(l), n);
            assert!(n <= limits.per_port);
        }
    }
}
