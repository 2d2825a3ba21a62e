//! Why a MAD is refused before it is posted: [`Unsendable`], the cause
//! carried by `TransportError::BadSend`, `PortError::BadSend` and
//! `mad_agents::SendError::BadSend`.
//!
//! And what a MAD that passed is: [`OutMad`] (borrowed) and
//! [`OutMadBuf`] (owned), made only by [`Unsendable::check_post`], the one
//! check a single MAD passes before it is posted. The port and every
//! transport take an `OutMad` and check nothing of the MAD again.

use mad_wire::wire::{MgmtClass, MAD_HEADER_LEN, MAD_LEN};

use super::Qp;

/// Why a MAD cannot be sent, found before anything reached the wire: a
/// cause to match on, not a string. Sending the same MAD to the same
/// place again fails the same way.
///
/// Two kinds, as rustls tells a malformed message from API misuse:
/// - the MAD itself is wrong for any carrier ([`Unsendable::Truncated`],
///   [`Unsendable::TooLong`], [`Unsendable::WrongQp`],
///   [`Unsendable::NotRmppClass`], [`Unsendable::NeedsRmpp`],
///   [`Unsendable::InvalidRoute`]);
/// - the port or its transport cannot carry it
///   ([`Unsendable::GrhUnsupported`], [`Unsendable::DrLidRouted`],
///   [`Unsendable::QpNotOwned`], [`Unsendable::NoPKey`]);
///   [`Unsendable::is_carrier_limit`] tells them apart.
///
/// ```
/// use mad_core::transport::{Qp, Unsendable};
/// use mad_core::wire::MgmtClass;
///
/// let e = Unsendable::WrongQp { class: MgmtClass::SUBN_ADM, qp: Qp::Qp0 };
/// assert_eq!(e.to_string(), "class 0x03 does not belong on Qp0");
/// assert!(!e.is_carrier_limit());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unsendable {
    /// Shorter than the 24-byte common header.
    #[error("a MAD of {len} bytes is shorter than its {MAD_HEADER_LEN}-byte common header")]
    Truncated {
        /// Its length.
        len: usize,
    },
    /// Longer than one post carries.
    #[error("a MAD of {len} bytes is longer than the {max} bytes one post carries")]
    TooLong {
        /// Its length.
        len: usize,
        /// The most this layer posts at once.
        max: usize,
    },
    /// An SMP class on QP1 or a GSI class on QP0.
    #[error("class {:#04x} does not belong on {qp:?}", class.0)]
    WrongQp {
        /// The management class of the MAD.
        class: MgmtClass,
        /// The QP it was to be sent on.
        qp: Qp,
    },
    /// An RMPP agent's send of a class that does not use RMPP.
    #[error("an RMPP agent cannot send class {:#04x}, which does not use RMPP", class.0)]
    NotRmppClass {
        /// The management class of the MAD.
        class: MgmtClass,
    },
    /// More than one MAD's worth of bytes from an agent registered
    /// without RMPP.
    #[error("{len} bytes do not fit one MAD; register the agent with RMPP")]
    NeedsRmpp {
        /// The message's length.
        len: usize,
    },
    /// A directed-route SMP whose route cannot leave this port (the hop
    /// pointer, hop count and direction do not make a valid first hop).
    #[error(
        "invalid directed route for a send from port {port} (hop pointer {hop_ptr}, \
         hop count {hop_cnt}, direction {direction})"
    )]
    InvalidRoute {
        /// The sending port.
        port: u8,
        /// The SMP's hop pointer.
        hop_ptr: u8,
        /// The SMP's hop count.
        hop_cnt: u8,
        /// The SMP's direction bit (0 outbound, 1 returning).
        direction: u8,
    },
    /// A destination with a GRH on a transport whose protocol carries
    /// none (ibsim).
    #[error("this transport (ibsim) carries no GRH")]
    GrhUnsupported,
    /// A directed-route SMP with LID-routed parts, which the simulated
    /// fabric does not route.
    #[error(
        "directed-route SMPs with LID-routed parts (DrSLID/DrDLID not 0xFFFF) are not \
         supported by the simulated fabric"
    )]
    DrLidRouted,
    /// The QP of this port belongs to another endpoint.
    #[error("{qp:?} of this port belongs to another endpoint (attach_qp)")]
    QpNotOwned {
        /// The QP.
        qp: Qp,
    },
    /// The destination's P_Key index names no P_Key of this port.
    #[error("P_Key index {index} names no P_Key of this port")]
    NoPKey {
        /// The index.
        index: u16,
    },
}

impl Unsendable {
    /// True when the MAD could be well formed but this port or transport
    /// cannot carry it (another transport might); false when the MAD is
    /// wrong wherever it is sent.
    pub fn is_carrier_limit(&self) -> bool {
        matches!(
            self,
            Unsendable::GrhUnsupported
                | Unsendable::DrLidRouted
                | Unsendable::QpNotOwned { .. }
                | Unsendable::NoPKey { .. }
        )
    }

    /// The one check a single MAD passes before it may be posted, once:
    /// at least its common header, at most [`MAD_LEN`] bytes, and a
    /// class that belongs on `qp` (SMP classes on QP0, every other on
    /// QP1). What was checked comes back as an [`OutMad`], the only
    /// thing [`Transport::post`](super::Transport::post) takes, so no
    /// layer below checks again.
    ///
    /// # Errors
    /// [`Unsendable::Truncated`], [`Unsendable::TooLong`] or
    /// [`Unsendable::WrongQp`].
    #[inline]
    pub fn check_post(mad: &[u8], qp: Qp) -> Result<OutMad<'_>, Unsendable> {
        if mad.len() < MAD_HEADER_LEN {
            return Err(Unsendable::Truncated { len: mad.len() });
        }
        if mad.len() > MAD_LEN {
            return Err(Unsendable::TooLong {
                len: mad.len(),
                max: MAD_LEN,
            });
        }
        let class = mad_wire::wire::Mad::new_unchecked(mad).mgmt_class();
        if class.is_smp() != (qp == Qp::Qp0) {
            return Err(Unsendable::WrongQp { class, qp });
        }
        Ok(OutMad { mad, qp, class })
    }
}

/// A single MAD that passed [`Unsendable::check_post`]: between its
/// common header and [`MAD_LEN`] bytes long, of a class that belongs on
/// its QP. Only that check makes one (outside this crate), so a
/// transport handed an `OutMad` posts it without looking again; it keeps
/// only the checks of what it alone knows (its carrier limits,
/// [`Unsendable::is_carrier_limit`]).
///
/// ```
/// use mad_core::transport::{Qp, Unsendable};
/// use mad_core::wire::MgmtClass;
///
/// let mut mad = [0u8; 256];
/// mad[1] = MgmtClass::SUBN_ADM.0;
/// let out = Unsendable::check_post(&mad, Qp::Qp1).unwrap();
/// assert_eq!((out.qp(), out.class(), out.bytes().len()), (Qp::Qp1, MgmtClass::SUBN_ADM, 256));
/// assert_eq!(
///     Unsendable::check_post(&mad, Qp::Qp0).unwrap_err(),
///     Unsendable::WrongQp { class: MgmtClass::SUBN_ADM, qp: Qp::Qp0 }
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutMad<'a> {
    mad: &'a [u8],
    qp: Qp,
    class: MgmtClass,
}

impl<'a> OutMad<'a> {
    /// The MAD's bytes (24 to 256 of them).
    #[must_use]
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.mad
    }

    /// The QP it goes out on.
    #[must_use]
    #[inline]
    pub fn qp(&self) -> Qp {
        self.qp
    }

    /// Its management class (read once, by the check).
    #[must_use]
    #[inline]
    pub fn class(&self) -> MgmtClass {
        self.class
    }

    /// A copy of the bytes of a MAD that came as an `OutMad`, kept to
    /// post later (the port's overflow queue, the fault injector's
    /// delayed sends): not checked again.
    pub(crate) fn requeued(mad: &'a [u8], qp: Qp) -> Self {
        debug_assert!(Unsendable::check_post(mad, qp).is_ok());
        Self {
            mad,
            qp,
            class: mad_wire::wire::Mad::new_unchecked(mad).mgmt_class(),
        }
    }
}

/// An owned [`OutMad`]: a MAD buffer that passed
/// [`Unsendable::check_post`], kept with what was checked, for a sender
/// that posts the same MAD more than once (the engine's send: its first
/// post and every retry) without checking it again.
///
/// ```
/// use mad_core::transport::{OutMadBuf, Qp, Unsendable};
/// use mad_core::MadBuf;
///
/// let mut bytes = [0u8; 256];
/// bytes[1] = 0x81; // directed-route SMP
/// let mut m = OutMadBuf::check(MadBuf::from_slice(&bytes), Qp::Qp0).unwrap();
/// m.set_tid(7);
/// assert_eq!(m.as_out().qp(), Qp::Qp0);
/// assert_eq!(
///     OutMadBuf::check(MadBuf::from_slice(&bytes), Qp::Qp1).unwrap_err(),
///     Unsendable::WrongQp { class: m.as_out().class(), qp: Qp::Qp1 }
/// );
/// ```
#[derive(Debug)]
pub struct OutMadBuf {
    mad: crate::MadBuf,
    qp: Qp,
    class: MgmtClass,
}

impl OutMadBuf {
    /// Checks `mad` for `qp` ([`Unsendable::check_post`]) and keeps it.
    ///
    /// # Errors
    /// As [`Unsendable::check_post`] (the buffer is dropped).
    #[inline]
    pub fn check(mad: crate::MadBuf, qp: Qp) -> Result<Self, Unsendable> {
        let class = Unsendable::check_post(&mad, qp)?.class;
        Ok(Self { mad, qp, class })
    }

    /// Its management class (read once, by the check).
    #[must_use]
    #[inline]
    pub fn class(&self) -> MgmtClass {
        self.class
    }

    /// The checked MAD, to post.
    #[must_use]
    #[inline]
    pub fn as_out(&self) -> OutMad<'_> {
        OutMad {
            mad: &self.mad,
            qp: self.qp,
            class: self.class,
        }
    }

    /// Sets the transaction ID (the one header field a sender sets after
    /// the check; it changes nothing the check looked at).
    #[inline]
    pub fn set_tid(&mut self, tid: u64) {
        mad_wire::wire::Mad::new_unchecked(&mut self.mad[..]).set_tid(tid);
    }

    /// The buffer back (to hand a message to the RMPP sender).
    #[must_use]
    #[inline]
    pub fn into_buf(self) -> crate::MadBuf {
        self.mad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` bytes of a MAD of `class` (cut short, or padded with zeros).
    fn mad(class: u8, len: usize) -> Vec<u8> {
        use mad_testkit_wire::MadBuilder;
        use mad_wire::wire::{AttributeId, Method, MgmtClass};
        let mut m = MadBuilder::new(MgmtClass(class), 1, Method::GET, AttributeId(0)).to_vec();
        m.resize(len, 0);
        m
    }

    #[test]
    fn check_post_names_each_cause() {
        assert_eq!(
            Unsendable::check_post(&mad(0x03, 10), Qp::Qp1),
            Err(Unsendable::Truncated { len: 10 })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, 300), Qp::Qp1),
            Err(Unsendable::TooLong {
                len: 300,
                max: MAD_LEN
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x81, MAD_LEN), Qp::Qp1),
            Err(Unsendable::WrongQp {
                class: MgmtClass::SUBN_DIRECTED_ROUTE,
                qp: Qp::Qp1
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, MAD_LEN), Qp::Qp0),
            Err(Unsendable::WrongQp {
                class: MgmtClass::SUBN_ADM,
                qp: Qp::Qp0
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, MAD_LEN), Qp::Qp1).map(|m| m.class()),
            Ok(MgmtClass::SUBN_ADM)
        );
        // The bounds themselves pass: a bare header, and 256 bytes.
        let header = mad(0x81, MAD_HEADER_LEN);
        let out = Unsendable::check_post(&header, Qp::Qp0).unwrap();
        assert_eq!((out.qp(), out.bytes().len()), (Qp::Qp0, MAD_HEADER_LEN));
        assert!(Unsendable::check_post(&mad(0x01, MAD_LEN), Qp::Qp0).is_ok());
        assert_eq!(
            Unsendable::check_post(&mad(0x03, MAD_LEN + 1), Qp::Qp1),
            Err(Unsendable::TooLong {
                len: MAD_LEN + 1,
                max: MAD_LEN
            })
        );
    }

    #[test]
    fn messages_say_what_was_wrong() {
        assert_eq!(
            Unsendable::Truncated { len: 10 }.to_string(),
            "a MAD of 10 bytes is shorter than its 24-byte common header"
        );
        assert_eq!(
            Unsendable::TooLong { len: 300, max: 256 }.to_string(),
            "a MAD of 300 bytes is longer than the 256 bytes one post carries"
        );
        assert_eq!(
            Unsendable::NotRmppClass {
                class: MgmtClass(0x81)
            }
            .to_string(),
            "an RMPP agent cannot send class 0x81, which does not use RMPP"
        );
        assert_eq!(
            Unsendable::InvalidRoute {
                port: 1,
                hop_ptr: 3,
                hop_cnt: 2,
                direction: 0
            }
            .to_string(),
            "invalid directed route for a send from port 1 (hop pointer 3, hop count 2, direction 0)"
        );
        assert_eq!(
            Unsendable::NoPKey { index: 5 }.to_string(),
            "P_Key index 5 names no P_Key of this port"
        );
    }

    #[test]
    fn carrier_limits_are_told_from_bad_mads() {
        assert!(Unsendable::GrhUnsupported.is_carrier_limit());
        assert!(Unsendable::NoPKey { index: 1 }.is_carrier_limit());
        assert!(!Unsendable::NeedsRmpp { len: 300 }.is_carrier_limit());
        assert!(!Unsendable::Truncated { len: 1 }.is_carrier_limit());
    }
}
