//! The OpenIB ping server (infiniband-diags' `ibping -S`: vendor class
//! 0x32, OUI 0x001405) that every CA of the built-in fabric runs: a Get
//! is answered with the host's name, the node description's first word
//! (node descriptions name the host first, `host HCA-1`).

use mad_core::wire::openib::{c_text, text_data};
use mad_core::wire::{Mad, MadStatus, Method, VENDOR_DATA_OFFSET};

use super::engine::{Core, Packet};

impl Core {
    /// Answers `pkt` as a CA's ping server would, when `node` is a CA
    /// (false for a switch: it runs no server).
    pub(crate) fn openib_ping(&mut self, node: u32, in_port: u8, pkt: &Packet) -> bool {
        let Some(n) = self.node(node) else {
            return false;
        };
        if n.is_switch() {
            return false;
        }
        let host = host_of(&c_text(&n.desc));
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let (status, data) = if mad.method() == Method::GET {
            (MadStatus::SUCCESS.0, text_data(&host))
        } else {
            let mut d = [0u8; 216];
            d.copy_from_slice(&pkt.mad[VENDOR_DATA_OFFSET..]);
            (MadStatus::METHOD_UNSUPPORTED.0, d)
        };
        self.respond_gsi(node, in_port, pkt, status, &data, VENDOR_DATA_OFFSET);
        true
    }
}

/// The host a node description names: its first word (the whole
/// description when it has no space).
fn host_of(desc: &str) -> String {
    desc.split_whitespace().next().unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_is_the_descriptions_first_word() {
        assert_eq!(host_of("host-6 HCA-1"), "host-6");
        assert_eq!(host_of("Hca2"), "Hca2");
        assert_eq!(host_of(""), "");
    }
}
