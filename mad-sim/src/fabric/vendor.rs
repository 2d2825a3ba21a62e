//! The OpenIB vendor-class servers (OUI 0x001405) that every CA of the
//! built-in fabric runs, as infiniband-diags' `ibping -S` and
//! `ibsysstat -S` would: class 0x32 answers a Get with the host's name,
//! class 0x33 answers ping (the request's data back), host (the host's
//! name) and cpu (no CPU lines: the simulated hosts have none). The host
//! is the node description's first word (node descriptions name the host
//! first, `host HCA-1`). Switches run no server.

use mad_core::wire::openib::{c_text, is_openib_ping, is_openib_sysstat, sysstat_attr, text_data};
use mad_core::wire::{Mad, MadStatus, Method, VENDOR_DATA_OFFSET};

use super::engine::{Core, Packet};

impl Core {
    /// Answers `pkt` as a CA's OpenIB server would, when it is a request
    /// of one of the two classes and `node` is a CA (false otherwise: the
    /// packet is someone else's).
    pub(crate) fn openib_vendor(&mut self, node: u32, in_port: u8, pkt: &Packet) -> bool {
        let (ping, sysstat) = (
            is_openib_ping(&pkt.mad[..]),
            is_openib_sysstat(&pkt.mad[..]),
        );
        if !ping && !sysstat {
            return false;
        }
        let Some(n) = self.node(node) else {
            return false;
        };
        if n.is_switch() {
            return false;
        }
        let host = host_of(&c_text(&n.desc));
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let mut echo = [0u8; 216];
        echo.copy_from_slice(&pkt.mad[VENDOR_DATA_OFFSET..]);
        let (status, data) = if ping {
            if mad.method() == Method::GET {
                (MadStatus::SUCCESS.0, text_data(&host))
            } else {
                (MadStatus::METHOD_UNSUPPORTED.0, echo)
            }
        } else {
            // ibsysstat's server answers every request, unknown
            // attributes with the request's data.
            match mad.attr_id().0 {
                sysstat_attr::HOST_INFO => (MadStatus::SUCCESS.0, text_data(&host)),
                sysstat_attr::CPU_INFO => (MadStatus::SUCCESS.0, text_data("")),
                _ => (MadStatus::SUCCESS.0, echo),
            }
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
