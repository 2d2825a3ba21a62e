//! The OpenIB vendor-class servers (OUI 0x001405) that every CA of the
//! built-in fabric runs, as infiniband-diags' `ibping -S` and
//! `ibsysstat -S` would: class 0x32 answers a Get with the host's name,
//! class 0x33 answers ping (the request's data back), host (the host's
//! name) and cpu (no CPU lines: the simulated hosts have none). The host
//! is the node description's first word (node descriptions name the host
//! first, `host HCA-1`). Switches run no server.
//!
//! Every node also answers the Mellanox vendor class 0x0A (vendor range
//! 1, data from byte 24) as infiniband-diags' `vendstat -N` reads it:
//! ClassPortInfo and GeneralInfo (a Switch-IB device ID on switches, a
//! ConnectX-5 one on CAs, firmware 1.0.0 in the extended layout, PSID
//! `MADSTACK_SIM`); other attributes are unsupported. Only Gets and
//! Sets are answered; other methods go the way of any class's.

use mad_core::wire::openib::{c_text, is_openib_ping, is_openib_sysstat, sysstat_attr, text_data};
use mad_core::wire::{Mad, MadStatus, Method, VENDOR_DATA_OFFSET};

use super::engine::{Core, Packet};

impl Core {
    /// Answers `pkt` as a CA's OpenIB server would, when it is a request
    /// of one of the two classes and `node` is a CA (false otherwise: the
    /// packet is someone else's).
    pub(crate) fn openib_vendor(&mut self, node: u32, in_port: u8, pkt: &Packet) -> bool {
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        // Only Gets and Sets are answered (as a kernel agent would); other
        // methods go the way of any class's.
        if mad.method() != Method::GET && mad.method() != Method::SET {
            return false;
        }
        if mad.mgmt_class().0 == MLX_VENDOR_CLASS {
            return self.mlx_vendor(node, in_port, pkt);
        }
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

/// The Mellanox vendor class (`IB_MLX_VENDOR_CLASS`).
const MLX_VENDOR_CLASS: u8 = 0x0a;
/// Its data offset (vendor range 1).
const MLX_DATA_OFFSET: usize = 24;

impl Core {
    /// The Mellanox vendor class agent of `node` (see the module text).
    fn mlx_vendor(&mut self, node: u32, in_port: u8, pkt: &Packet) -> bool {
        let Some(n) = self.node(node) else {
            return false;
        };
        let switch = n.is_switch();
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let mut d = [0u8; 232];
        let status = match (mad.method(), mad.attr_id().0) {
            (Method::GET, 0x01) => {
                // ClassPortInfo: base and class version 1.
                d[0] = 1;
                d[1] = 1;
                MadStatus::SUCCESS.0
            }
            (Method::GET, 0x17) => {
                general_info(&mut d, switch);
                MadStatus::SUCCESS.0
            }
            _ => MadStatus::METHOD_ATTR_UNSUPPORTED.0,
        };
        self.respond_gsi(node, in_port, pkt, status, &d, MLX_DATA_OFFSET);
        true
    }
}

/// GeneralInfo (vendstat's `is4_general_info_t` layout, offsets in the
/// data area).
fn general_info(d: &mut [u8; 232], switch: bool) {
    let dev: u16 = if switch { 0xcb20 } else { 0x1017 };
    d[10..12].copy_from_slice(&dev.to_be_bytes());
    d[41] = 1;
    d[48] = 0x01; // month (BCD as the firmware reports it)
    d[49] = 0x01; // day
    d[50..52].copy_from_slice(&0x2026u16.to_be_bytes());
    d[56..68].copy_from_slice(b"MADSTACK_SIM");
    d[76..80].copy_from_slice(&1u32.to_be_bytes());
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
