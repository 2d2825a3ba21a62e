//! The performance management agent (class 0x04) of every node:
//! ClassPortInfo, PortCounters and PortCountersExtended, and the
//! attributes of [`super::pma_ext`] (per SL / VL, details, congestion,
//! PortSamplesControl). The counters are the ones the fabric keeps as
//! packets cross links (see [`crate::fabric`]); a Set clears those
//! CounterSelect names.

use mad_core::wire::attr::{pm_cap, ClassPortInfo, PortCounters, PortCountersExt};
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, Repr};

use super::engine::{Core, Packet};
use super::pma_ext;

const OK: u16 = MadStatus::SUCCESS.0;
const BAD_VERSION: u16 = MadStatus::BAD_VERSION.0;
const UNSUP_METHOD: u16 = MadStatus::METHOD_UNSUPPORTED.0;
const UNSUP_METH_ATTR: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

/// Where PerfMgt attribute data starts in the MAD.
const DATA: usize = 64;
/// PerfMgt attribute data length.
const DATA_LEN: usize = 192;
/// ClassPortInfo RespTimeValue the PMA reports (as ibsim).
pub const PMA_RESP_TIME_VALUE: u8 = 18;

impl Core {
    /// Runs the PMA of `node` on a PerfMgt request received on `in_port`.
    pub(crate) fn pma(&mut self, node: u32, in_port: u8, pkt: &Packet) {
        self.stats.to_pma += 1;
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let mut data = [0u8; DATA_LEN];
        data.copy_from_slice(&pkt.mad[DATA..DATA + DATA_LEN]);
        let method = mad.method();
        let (status, out) = if mad.class_version() != 1 {
            (BAD_VERSION, data)
        } else if method != Method::GET && method != Method::SET {
            (UNSUP_METHOD, data)
        } else {
            let set = method == Method::SET;
            match mad.attr_id() {
                AttributeId::CLASS_PORT_INFO => self.pma_class_port_info(node, set, data),
                AttributeId::PM_PORT_COUNTERS => {
                    self.counters::<PortCounters>(node, in_port, set, data)
                }
                AttributeId::PM_PORT_COUNTERS_EXT => {
                    self.counters::<PortCountersExt>(node, in_port, set, data)
                }
                other => self.pma_ext(node, in_port, set, other.0, data),
            }
        };
        self.respond_gsi(node, in_port, pkt, status, &out, DATA);
    }

    /// The attributes of [`super::pma_ext`], or "unsupported".
    fn pma_ext(
        &mut self,
        node: u32,
        in_port: u8,
        set: bool,
        attr: u16,
        data: [u8; DATA_LEN],
    ) -> (u16, [u8; DATA_LEN]) {
        let is_switch = self.node(node).is_some_and(super::node::Node::is_switch);
        let select = pma_ext::port_select(&data);
        match pma_ext::answers(attr, is_switch) {
            None => (UNSUP_METH_ATTR, data),
            Some(pma_ext::Answer::SamplesControl) if set => (UNSUP_METH_ATTR, data),
            Some(pma_ext::Answer::SamplesControl) => (OK, pma_ext::samples_control(select)),
            Some(pma_ext::Answer::Counters) => {
                let Some(ports) = self.selected_ports(node, in_port, select) else {
                    return (INVALID, data);
                };
                let Some(n) = self.node_mut(node) else {
                    return (INVALID, data);
                };
                let first = usize::from(n.first_port());
                let kept = n
                    .ports
                    .iter_mut()
                    .enumerate()
                    .filter(|(i, _)| ports.iter().any(|s| usize::from(*s) == first + i))
                    .map(|(_, p)| {
                        p.settle();
                        &mut p.perf
                    });
                (OK, pma_ext::counters(attr, set, &data, kept))
            }
        }
    }

    fn pma_class_port_info(
        &self,
        node: u32,
        set: bool,
        data: [u8; DATA_LEN],
    ) -> (u16, [u8; DATA_LEN]) {
        if set {
            return (UNSUP_METH_ATTR, data);
        }
        let is_switch = self.node(node).is_some_and(super::node::Node::is_switch);
        let mut cap = pm_cap::EXT_WIDTH_SUPPORTED | pm_cap::PC_XMIT_WAIT_SUP;
        if is_switch {
            cap |= pm_cap::ALL_PORT_SELECT;
        }
        let cpi = ClassPortInfo {
            base_version: 1,
            class_version: 1,
            capability_mask: cap,
            resp_time_value: PMA_RESP_TIME_VALUE,
            ..ClassPortInfo::default()
        };
        let mut out = [0u8; DATA_LEN];
        let _ = cpi.emit(&mut out);
        (OK, out)
    }

    /// The ports a PortSelect names: this port on a CA (only), one port or
    /// all (0xFF) on a switch.
    fn selected_ports(&self, node: u32, in_port: u8, select: u8) -> Option<Vec<u8>> {
        let n = self.node(node)?;
        if !n.is_switch() {
            return (select == in_port).then(|| vec![select]);
        }
        if select == 0xFF {
            return Some((0..=n.num_ports()).collect());
        }
        (select <= n.num_ports()).then(|| vec![select])
    }

    /// PortCounters or PortCountersExtended (`C`): the counters of the
    /// selected ports summed, cleared first on a Set as CounterSelect
    /// says; the select fields of the request echoed.
    fn counters<C: Counters>(
        &mut self,
        node: u32,
        in_port: u8,
        set: bool,
        data: [u8; DATA_LEN],
    ) -> (u16, [u8; DATA_LEN]) {
        let Ok(req) = C::parse(&data) else {
            return (INVALID, data);
        };
        let Some(ports) = self.selected_ports(node, in_port, req.port_select()) else {
            return (INVALID, data);
        };
        let mut sum = C::default();
        for pn in ports {
            let Some(p) = self.port_mut(node, pn) else {
                continue;
            };
            let kept = C::of_port(p);
            if set {
                kept.clear_selected(&req);
            }
            sum.add(kept);
        }
        sum.echo_selects(&req);
        let mut out = data;
        let _ = sum.emit(&mut out);
        (OK, out)
    }
}

/// A counter attribute the PMA keeps per port and sums over PortSelect.
trait Counters: Repr + Default {
    /// The request's PortSelect.
    fn port_select(&self) -> u8;
    /// The copy the fabric keeps for a port.
    fn of_port(p: &mut super::node::Port) -> &mut Self;
    /// Clears what the request's CounterSelect names.
    fn clear_selected(&mut self, req: &Self);
    /// Adds `c` into this sum.
    fn add(&mut self, c: &Self);
    /// Copies the request's select fields (and reserved bits) into the
    /// answer.
    fn echo_selects(&mut self, req: &Self);
}

impl Counters for PortCounters {
    fn port_select(&self) -> u8 {
        self.port_select
    }
    fn of_port(p: &mut super::node::Port) -> &mut Self {
        p.settle();
        &mut p.counters
    }
    fn clear_selected(&mut self, req: &Self) {
        reset(self, req.counter_select, req.counter_select2);
    }
    fn add(&mut self, c: &Self) {
        add(self, c);
    }
    fn echo_selects(&mut self, req: &Self) {
        self.reserved = req.reserved;
        self.port_select = req.port_select;
        self.counter_select = req.counter_select;
        self.counter_select2 = req.counter_select2;
    }
}

impl Counters for PortCountersExt {
    fn port_select(&self) -> u8 {
        self.port_select
    }
    fn of_port(p: &mut super::node::Port) -> &mut Self {
        p.settle();
        &mut p.counters_ext
    }
    fn clear_selected(&mut self, req: &Self) {
        reset_ext(self, req.counter_select);
    }
    fn add(&mut self, c: &Self) {
        add_ext(self, c);
    }
    fn echo_selects(&mut self, req: &Self) {
        self.reserved = req.reserved;
        self.port_select = req.port_select;
        self.counter_select = req.counter_select;
        self.counter_select2 = req.counter_select2;
    }
}

/// Clears the PortCounters named by CounterSelect (bits 0–15 in the order
/// of the attribute: SymbolError … PortRcvPkts); a non-zero
/// CounterSelect2 also clears PortXmitWait (as ibsim).
pub(crate) fn reset(c: &mut PortCounters, sel: u16, sel2: u8) {
    let b = |n: u16| sel & (1 << n) != 0;
    if b(0) {
        c.symbol_error_counter = 0;
    }
    if b(1) {
        c.link_error_recovery_counter = 0;
    }
    if b(2) {
        c.link_downed_counter = 0;
    }
    if b(3) {
        c.port_rcv_errors = 0;
    }
    if b(4) {
        c.port_rcv_remote_physical_errors = 0;
    }
    if b(5) {
        c.port_rcv_switch_relay_errors = 0;
    }
    if b(6) {
        c.port_xmit_discards = 0;
    }
    if b(7) {
        c.port_xmit_constraint_errors = 0;
    }
    if b(8) {
        c.port_rcv_constraint_errors = 0;
    }
    if b(9) {
        c.local_link_integrity_errors = 0;
    }
    if b(10) {
        c.excessive_buffer_overrun_errors = 0;
    }
    if b(11) {
        c.vl15_dropped = 0;
    }
    if b(12) {
        c.port_xmit_data = 0;
    }
    if b(13) {
        c.port_rcv_data = 0;
    }
    if b(14) {
        c.port_xmit_pkts = 0;
    }
    if b(15) {
        c.port_rcv_pkts = 0;
    }
    if sel2 != 0 {
        c.port_xmit_wait = 0;
    }
}

/// Clears the PortCountersExtended named by CounterSelect: bit 0
/// PortXmitData, 1 PortRcvData, 2 PortXmitPkts, 3 PortRcvPkts, 4–5
/// unicast Xmit/Rcv, 6–7 multicast Xmit/Rcv.
pub(crate) fn reset_ext(c: &mut PortCountersExt, sel: u16) {
    let b = |n: u16| sel & (1 << n) != 0;
    if b(0) {
        c.port_xmit_data = 0;
    }
    if b(1) {
        c.port_rcv_data = 0;
    }
    if b(2) {
        c.port_xmit_pkts = 0;
    }
    if b(3) {
        c.port_rcv_pkts = 0;
    }
    if b(4) {
        c.port_unicast_xmit_pkts = 0;
    }
    if b(5) {
        c.port_unicast_rcv_pkts = 0;
    }
    if b(6) {
        c.port_multicast_xmit_pkts = 0;
    }
    if b(7) {
        c.port_multicast_rcv_pkts = 0;
    }
}

fn sat4(a: u8, b: u8) -> u8 {
    a.saturating_add(b).min(15)
}

/// `sum += c` for every field named, each saturating at its width.
macro_rules! saturating_sum {
    ($sum:ident, $c:ident; $($f:ident),* $(,)?) => {
        $( $sum.$f = $sum.$f.saturating_add($c.$f); )*
    };
}

/// `sum += c` for the counters PortCounters and PortCountersExtended
/// both have, then for the fields named after them.
macro_rules! saturating_sum_shared {
    ($sum:ident, $c:ident; $($f:ident),* $(,)?) => {
        saturating_sum!($sum, $c;
            symbol_error_counter,
            link_error_recovery_counter,
            link_downed_counter,
            port_rcv_errors,
            port_rcv_remote_physical_errors,
            port_rcv_switch_relay_errors,
            port_xmit_discards,
            port_xmit_constraint_errors,
            port_rcv_constraint_errors,
            qp1_dropped,
            vl15_dropped,
            port_xmit_data,
            port_rcv_data,
            port_xmit_pkts,
            port_rcv_pkts,
            port_xmit_wait,
            $($f),*
        );
    };
}

/// `sum += c`, each counter saturating at its width (the two 4-bit
/// counters at 15).
fn add(sum: &mut PortCounters, c: &PortCounters) {
    saturating_sum_shared!(sum, c;);
    sum.local_link_integrity_errors = sat4(
        sum.local_link_integrity_errors,
        c.local_link_integrity_errors,
    );
    sum.excessive_buffer_overrun_errors = sat4(
        sum.excessive_buffer_overrun_errors,
        c.excessive_buffer_overrun_errors,
    );
}

/// `sum += c` for the 64-bit counters, each saturating.
fn add_ext(sum: &mut PortCountersExt, c: &PortCountersExt) {
    saturating_sum_shared!(sum, c;
        port_unicast_xmit_pkts,
        port_unicast_rcv_pkts,
        port_multicast_xmit_pkts,
        port_multicast_rcv_pkts,
        local_link_integrity_errors,
        excessive_buffer_overrun_errors,
    );
}
