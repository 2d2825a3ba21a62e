//! Why a MAD is refused before it is posted: [`Unsendable`], the cause
//! carried by `TransportError::BadSend`, `PortError::BadSend` and
//! `mad_agents::SendError::BadSend`.

use mad_wire::wire::{MgmtClass, MAD_HEADER_LEN};

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

    /// Checks what every layer checks before a single MAD is posted: at
    /// least a common header, at most `max` bytes, and a class that
    /// belongs on `qp`.
    ///
    /// # Errors
    /// [`Unsendable::Truncated`], [`Unsendable::TooLong`] or
    /// A MAD of `mad.len()` bytes is at least its common header and at
    /// most `max` bytes.
    ///
    /// # Errors
    /// [`Unsendable::Truncated`] or [`Unsendable::TooLong`].
    pub fn check_len(mad: &[u8], max: usize) -> Result<(), Unsendable> {
        if mad.len() < MAD_HEADER_LEN {
            return Err(Unsendable::Truncated { len: mad.len() });
        }
        if mad.len() > max {
            return Err(Unsendable::TooLong {
                len: mad.len(),
                max,
            });
        }
        Ok(())
    }

    /// [`Unsendable::WrongQp`].
    pub fn check_post(mad: &[u8], qp: Qp, max: usize) -> Result<MgmtClass, Unsendable> {
        Self::check_len(mad, max)?;
        let class = mad_wire::wire::Mad::new_unchecked(mad).mgmt_class();
        if class.is_smp() != (qp == Qp::Qp0) {
            return Err(Unsendable::WrongQp { class, qp });
        }
        Ok(class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_wire::wire::MAD_LEN;

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
            Unsendable::check_post(&mad(0x03, 10), Qp::Qp1, MAD_LEN),
            Err(Unsendable::Truncated { len: 10 })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, 300), Qp::Qp1, MAD_LEN),
            Err(Unsendable::TooLong {
                len: 300,
                max: MAD_LEN
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x81, MAD_LEN), Qp::Qp1, MAD_LEN),
            Err(Unsendable::WrongQp {
                class: MgmtClass::SUBN_DIRECTED_ROUTE,
                qp: Qp::Qp1
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, MAD_LEN), Qp::Qp0, MAD_LEN),
            Err(Unsendable::WrongQp {
                class: MgmtClass::SUBN_ADM,
                qp: Qp::Qp0
            })
        );
        assert_eq!(
            Unsendable::check_post(&mad(0x03, MAD_LEN), Qp::Qp1, MAD_LEN),
            Ok(MgmtClass::SUBN_ADM)
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
