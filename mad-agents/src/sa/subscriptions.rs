//! The InformInfo subscriptions an [`SaResponder`](super::SaResponder)
//! holds, bounded per port and in total.
//!
//! A subscription is the requesting port's LID and the InformInfo's
//! traps and QPN (everything but Subscribe, RespTimeValue and the
//! reserved bits: [`InformInfo::same_traps`] plus the QPN). Repeating one
//! that is held is accepted and keeps one copy; finding it is a hash
//! lookup, not a scan. A new one beyond [`SubscriptionLimits::per_port`]
//! subscriptions of its port, or beyond [`SubscriptionLimits::total`] in
//! all, is refused with SA status 0x0100 (`ERR_NO_RESOURCES`), the status
//! OpenSM answers an InformInfo Set with when it cannot allocate the
//! subscription. Subscriptions are listed in the order they were made.

use std::collections::{BTreeMap, HashMap};

use mad_core::wire::sa_records::InformInfo;
use mad_core::wire::MadStatus;

/// How many subscriptions a responder holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionLimits {
    /// Subscriptions of one port (one source LID). Default 256: a port
    /// needs one per trap it follows, one for all of them.
    pub per_port: usize,
    /// Subscriptions of all ports together. Default 65,536 (about 10 MB
    /// held at most).
    pub total: usize,
}

impl Default for SubscriptionLimits {
    fn default() -> Self {
        Self {
            per_port: 256,
            total: 65_536,
        }
    }
}

/// One subscription kept by the responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriber {
    /// The subscriber's LID (the request's source).
    pub lid: u16,
    /// The subscription (QPN: where Reports go).
    pub info: InformInfo,
}

/// What a subscribe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscribed {
    /// A new subscription is held.
    Added,
    /// The same subscription was held already (nothing changed).
    AlreadyHeld,
}

/// Why a subscribe or unsubscribe was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The port holds [`SubscriptionLimits::per_port`] subscriptions.
    PortFull,
    /// [`SubscriptionLimits::total`] subscriptions are held.
    TableFull,
    /// Unsubscribe of a subscription that is not held.
    NotHeld,
    /// The request's data is no InformInfo.
    Invalid,
}

impl Refused {
    /// The SA status answered: 0x0100 (`ERR_NO_RESOURCES`) for a full
    /// table, 0x0200 (`ERR_REQ_INVALID`) for an unknown unsubscribe or
    /// data that is no InformInfo.
    #[must_use]
    pub fn status(self) -> MadStatus {
        match self {
            Self::PortFull | Self::TableFull => MadStatus::SA_NO_RESOURCES,
            Self::NotHeld | Self::Invalid => MadStatus::SA_REQ_INVALID,
        }
    }
}

/// What identifies a subscription: the port's LID, the traps and the QPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    lid: u16,
    gid: [u8; 16],
    lid_range: (u16, u16),
    is_generic: u8,
    trap_type: u16,
    trap_number: u16,
    producer: u32,
    qpn: u32,
}

impl Key {
    fn of(lid: u16, i: &InformInfo) -> Self {
        Self {
            lid,
            gid: i.gid,
            lid_range: (i.lid_range_begin, i.lid_range_end),
            is_generic: i.is_generic,
            trap_type: i.trap_type,
            trap_number: i.trap_number_or_device_id,
            producer: i.producer_type_or_vendor_id,
            qpn: i.qpn,
        }
    }
}

/// The subscriptions, bounded by [`SubscriptionLimits`]; see the [module
/// documentation](self).
#[derive(Debug, Default)]
pub struct Subscriptions {
    limits: SubscriptionLimits,
    /// In the order they were made (by a sequence number).
    held: BTreeMap<u64, Subscriber>,
    /// Each held subscription's sequence number.
    index: HashMap<Key, u64>,
    /// Subscriptions held per LID (no entry for a LID with none).
    per_port: HashMap<u16, usize>,
    next: u64,
}

impl Subscriptions {
    /// An empty table with `limits`.
    #[must_use]
    pub fn new(limits: SubscriptionLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> SubscriptionLimits {
        self.limits
    }

    /// Subscribes the port at `lid` to `info`.
    ///
    /// # Errors
    /// [`Refused::PortFull`] / [`Refused::TableFull`] for a new
    /// subscription beyond a limit.
    pub fn subscribe(&mut self, lid: u16, info: &InformInfo) -> Result<Subscribed, Refused> {
        let key = Key::of(lid, info);
        if self.index.contains_key(&key) {
            return Ok(Subscribed::AlreadyHeld);
        }
        let of_port = self.of_port(lid);
        if of_port >= self.limits.per_port {
            return Err(Refused::PortFull);
        }
        if self.held.len() >= self.limits.total {
            return Err(Refused::TableFull);
        }
        let seq = self.next;
        self.next += 1;
        self.index.insert(key, seq);
        self.per_port.insert(lid, of_port + 1);
        self.held.insert(
            seq,
            Subscriber {
                lid,
                info: info.clone(),
            },
        );
        Ok(Subscribed::Added)
    }

    /// Removes the port at `lid`'s subscription to `info` and returns it.
    ///
    /// # Errors
    /// [`Refused::NotHeld`] when there is none.
    pub fn unsubscribe(&mut self, lid: u16, info: &InformInfo) -> Result<Subscriber, Refused> {
        let seq = self
            .index
            .remove(&Key::of(lid, info))
            .ok_or(Refused::NotHeld)?;
        match self.per_port.get_mut(&lid) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                self.per_port.remove(&lid);
            }
        }
        self.held.remove(&seq).ok_or(Refused::NotHeld)
    }

    /// A SubnAdmSet(InformInfo) from the port at `lid` whose SA data is
    /// `template`: subscribes (Subscribe = 1) or unsubscribes (any other
    /// value); returns the InformInfo to answer with.
    ///
    /// # Errors
    /// [`Refused::Invalid`] when `template` holds no InformInfo, else as
    /// [`Subscriptions::subscribe`] / [`Subscriptions::unsubscribe`].
    pub fn set(&mut self, lid: u16, template: &[u8]) -> Result<InformInfo, Refused> {
        use mad_core::wire::Repr;
        let info = InformInfo::parse(template).map_err(|_| Refused::Invalid)?;
        if info.subscribe == 1 {
            self.subscribe(lid, &info)?;
        } else {
            self.unsubscribe(lid, &info)?;
        }
        Ok(info)
    }

    /// How many subscriptions the port at `lid` holds.
    #[must_use]
    pub fn of_port(&self, lid: u16) -> usize {
        self.per_port.get(&lid).copied().unwrap_or(0)
    }

    /// How many subscriptions are held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// No subscription is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The subscriptions, in the order they were made.
    pub fn iter(&self) -> impl Iterator<Item = &Subscriber> {
        self.held.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trap(n: u16, qpn: u32) -> InformInfo {
        InformInfo {
            lid_range_begin: InformInfo::LID_RANGE_ALL,
            is_generic: 1,
            subscribe: 1,
            trap_type: InformInfo::TYPE_ALL,
            trap_number_or_device_id: n,
            qpn,
            producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
            ..InformInfo::default()
        }
    }

    #[test]
    fn the_total_limit_refuses_a_new_subscription_of_any_port() {
        let mut s = Subscriptions::new(SubscriptionLimits {
            per_port: 4,
            total: 6,
        });
        for n in 0..4 {
            assert_eq!(s.subscribe(2, &trap(n, 1)), Ok(Subscribed::Added));
        }
        assert_eq!(s.subscribe(2, &trap(9, 1)), Err(Refused::PortFull));
        for n in 0..2 {
            assert_eq!(s.subscribe(3, &trap(n, 1)), Ok(Subscribed::Added));
        }
        assert_eq!(s.subscribe(4, &trap(0, 1)), Err(Refused::TableFull));
        assert_eq!(Refused::TableFull.status(), MadStatus::SA_NO_RESOURCES);
        // A held one is still accepted when full; a removal frees a slot.
        assert_eq!(s.subscribe(3, &trap(1, 1)), Ok(Subscribed::AlreadyHeld));
        s.unsubscribe(2, &trap(0, 1)).unwrap();
        assert_eq!(s.of_port(2), 3);
        assert_eq!(s.subscribe(4, &trap(0, 1)), Ok(Subscribed::Added));
        let order: Vec<(u16, u16)> = s
            .iter()
            .map(|x| (x.lid, x.info.trap_number_or_device_id))
            .collect();
        assert_eq!(order, [(2, 1), (2, 2), (2, 3), (3, 0), (3, 1), (4, 0)]);
    }

    #[test]
    fn subscribe_and_qpn_differences_make_different_subscriptions_but_subscribe_bit_does_not() {
        let mut s = Subscriptions::new(SubscriptionLimits::default());
        s.subscribe(2, &trap(64, 1)).unwrap();
        assert_eq!(s.subscribe(2, &trap(64, 2)), Ok(Subscribed::Added));
        let mut off = trap(64, 1);
        off.subscribe = 0;
        off.resp_time_value = 19;
        assert_eq!(s.unsubscribe(2, &off).unwrap().info, trap(64, 1));
        assert_eq!(s.unsubscribe(2, &off), Err(Refused::NotHeld));
        assert_eq!(s.unsubscribe(3, &trap(64, 2)), Err(Refused::NotHeld));
        assert_eq!(s.len(), 1);
    }
}
