//! The Congestion Control agent's MAD handling (see [`super::cc`] for
//! what it answers): the CC_Key guard, the class version and method
//! checks, the answer at the attribute's offset.

use mad_core::wire::cc::{
    cc_attr, CC_CLASS_VERSION, CC_DATA_OFFSET, CC_KEY_OFFSET, CC_LOG_DATA_OFFSET,
};
use mad_core::wire::{Mad, MadStatus, Method};

use super::cc;
use super::engine::{Core, Packet};
use super::pma::PMA_RESP_TIME_VALUE;

const OK: u16 = MadStatus::SUCCESS.0;
const BAD_VERSION: u16 = MadStatus::BAD_VERSION.0;
const UNSUP_METHOD: u16 = MadStatus::METHOD_UNSUPPORTED.0;

impl Core {
    /// Runs the Congestion Control agent of `node` on a request received
    /// on `in_port`.
    pub(crate) fn cca(&mut self, node: u32, in_port: u8, pkt: &Packet) {
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let (method, attr, amod) = (mad.method(), mad.attr_id().0, mad.attr_mod());
        let mut key = [0u8; 8];
        key.copy_from_slice(&pkt.mad[CC_KEY_OFFSET..CC_KEY_OFFSET + 8]);
        let key = u64::from_be_bytes(key);
        let now = self.now;
        let version = mad.class_version();
        let Some(n) = self.node_mut(node) else { return };
        let is_switch = n.is_switch();
        let nports = n.num_ports();
        let cc =
            n.cc.get_or_insert_with(|| Box::new(super::cc::CcState::new(nports)));
        if cc.key.cc_key != 0 && key != cc.key.cc_key {
            cc.key.cc_key_violations = cc.key.cc_key_violations.saturating_add(1);
            return;
        }
        let log = attr == cc_attr::CONGESTION_LOG;
        let offset = if log {
            CC_LOG_DATA_OFFSET
        } else {
            CC_DATA_OFFSET
        };
        let mut data = [0u8; 224];
        let len = 256 - offset;
        data[..len].copy_from_slice(&pkt.mad[offset..]);
        let set = method == Method::SET;
        let (status, out) = if version != CC_CLASS_VERSION {
            (BAD_VERSION, data)
        } else if method != Method::GET && !set {
            (UNSUP_METHOD, data)
        } else {
            match cc::answer(
                cc,
                is_switch,
                attr,
                amod,
                set,
                &data,
                now,
                PMA_RESP_TIME_VALUE,
            ) {
                Ok(out) => (OK, out),
                Err(s) => (s, data),
            }
        };
        self.respond_gsi(node, in_port, pkt, status, &out[..len], offset);
    }
}
