//! An answer MAD as an [`Exchange`](super::pipeline::Exchange) hands it
//! over: a buffer of its own (a bare transport's), or the agent layer's
//! received message itself, not copied.

use std::ops::Deref;

use mad_agents::Message;
use mad_core::MadBuf;

/// The bytes of an answer MAD (see the module documentation); derefs to
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A buffer of its own.
    Buf(MadBuf),
    /// The message the agent layer received (shared, not copied).
    Message(Message),
}

impl Deref for Answer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Buf(b) => b,
            Self::Message(m) => m.bytes(),
        }
    }
}

impl From<MadBuf> for Answer {
    fn from(b: MadBuf) -> Self {
        Self::Buf(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::transport::{Address, Qp};

    #[test]
    fn both_forms_deref_to_the_answer_bytes() {
        let bytes = vec![1u8, 0x81, 2, 3];
        let buf = Answer::from(MadBuf::from_slice(&bytes));
        let msg = Answer::Message(Message::from_parts(Qp::Qp0, Address::smi(1), bytes.clone()));
        assert_eq!(&buf[..], &bytes[..]);
        assert_eq!(&msg[..], &bytes[..]);
        assert_ne!(buf, msg);
    }
}
