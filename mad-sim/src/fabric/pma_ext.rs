//! The PMA's attributes beyond PortCounters (perfquery's `-X -S -D -E -T
//! -c` and long options): what a port of the built-in fabric counts and
//! how the PMA answers, resets and sums them.
//!
//! Kept per port ([`PerfExtra`]), from the traffic the fabric carries:
//! - PortXmitDataSL / PortRcvDataSL: words sent / received per SL;
//! - PortOpRcvCounters, PortVLOpPackets, PortVLOpData: packets and words
//!   received per VL with the opcode every MAD has on the wire (UD
//!   SEND_ONLY, [`UD_SEND_ONLY`]); a request naming another opcode gets
//!   zeros;
//! - PortRcvErrorDetails: PortLocalPhysicalErrors (a packet reached a port
//!   whose link is not up) and PortDLIDMappingErrors (a CA port got a
//!   packet for a LID not its own); PortXmitDiscardDetails:
//!   PortInactiveDiscards (a packet left through a port that is not up /
//!   not active). These break down PortRcvErrors and PortXmitDiscards.
//!
//! The fabric has no link-level flow control, congestion or FEC: flow
//! control, wait, congestion and extended-speeds counters are answered
//! and stay 0. PortSamplesControl answers a sampling mechanism that is
//! idle. SwPortVLCongestion exists on switches only.

use std::sync::OnceLock;

use mad_core::wire::attr::{
    pm_attr, PortExtSpeedsCounters, PortFlowCtlCounters, PortOpRcvCounters, PortRcvConCtrl,
    PortRcvDataSl, PortRcvErrorDetails, PortSamplesControl, PortSlRcvBecn, PortSlRcvFecn,
    PortVlOpData, PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors, PortVlXmitTimeCong,
    PortVlXmitWaitCounters, PortXmitConCtrl, PortXmitDataSl, PortXmitDiscardDetails,
    SwPortVlCongestion,
};
use mad_core::wire::field::{get_bits, set_bits, FieldDesc, FieldKind};
use mad_core::wire::Repr;

/// The IBA opcode of a UD SEND_ONLY packet, the only one MADs use.
pub const UD_SEND_ONLY: u8 = 0x64;
/// PerfMgt attribute data length.
const DATA_LEN: usize = 192;

/// A counter attribute: its ID, its field table and where its counters
/// start (the bits before are OpCode / PortSelect / CounterSelect).
struct Layout {
    attr: u16,
    fields: &'static [FieldDesc],
    counters_from: u32,
    switch_only: bool,
}

macro_rules! layouts {
    ($($attr:ident => $t:ty, $from:expr, $sw:expr;)*) => {
        &[$(Layout { attr: pm_attr::$attr, fields: <$t>::FIELDS, counters_from: $from, switch_only: $sw },)*]
    };
}

/// Every counter attribute the PMA answers besides PortCounters(Ext).
const LAYOUTS: &[Layout] = layouts! {
    PORT_RCV_ERROR_DETAILS => PortRcvErrorDetails, 32, false;
    PORT_XMIT_DISCARD_DETAILS => PortXmitDiscardDetails, 32, false;
    PORT_OP_RCV_COUNTERS => PortOpRcvCounters, 32, false;
    PORT_FLOW_CTL_COUNTERS => PortFlowCtlCounters, 32, false;
    PORT_VL_OP_PACKETS => PortVlOpPackets, 32, false;
    PORT_VL_OP_DATA => PortVlOpData, 32, false;
    PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS => PortVlXmitFlowCtlUpdateErrors, 32, false;
    PORT_VL_XMIT_WAIT_COUNTERS => PortVlXmitWaitCounters, 32, false;
    PORT_EXTENDED_SPEEDS_COUNTERS => PortExtSpeedsCounters, 128, false;
    SW_PORT_VL_CONGESTION => SwPortVlCongestion, 32, true;
    PORT_RCV_CON_CTRL => PortRcvConCtrl, 32, false;
    PORT_SL_RCV_FECN => PortSlRcvFecn, 32, false;
    PORT_SL_RCV_BECN => PortSlRcvBecn, 32, false;
    PORT_XMIT_CON_CTRL => PortXmitConCtrl, 32, false;
    PORT_VL_XMIT_TIME_CONG => PortVlXmitTimeCong, 32, false;
    PORT_XMIT_DATA_SL => PortXmitDataSl, 32, false;
    PORT_RCV_DATA_SL => PortRcvDataSl, 32, false;
};

impl Layout {
    /// The counters in wire order: (bit offset, bits) of each integer or
    /// array element; CounterSelect bit `i` names counter `i`.
    fn counters(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.fields
            .iter()
            .filter(|f| f.label.is_some() && f.bit_offset >= self.counters_from)
            .flat_map(|f| {
                let (n, w) = match f.kind {
                    FieldKind::Array { elem_bits, count } => (count, elem_bits),
                    _ => (1, f.bit_len),
                };
                (0..n).map(move |i| ((f.bit_offset + i * w) as usize, w as usize))
            })
    }
}

/// The position of `attr` in [`LAYOUTS`].
const fn layout_index(attr: u16) -> Option<usize> {
    let mut i = 0;
    while i < LAYOUTS.len() {
        if LAYOUTS[i].attr == attr {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The position in [`LAYOUTS`] of an attribute listed there.
const fn listed(attr: u16) -> usize {
    match layout_index(attr) {
        Some(i) => i,
        None => panic!("attribute not in LAYOUTS"),
    }
}

/// Positions of the attributes every packet counts in.
const XMIT_DATA_SL: usize = listed(pm_attr::PORT_XMIT_DATA_SL);
const RCV_DATA_SL: usize = listed(pm_attr::PORT_RCV_DATA_SL);
const OP_RCV: usize = listed(pm_attr::PORT_OP_RCV_COUNTERS);
const VL_OP_PACKETS: usize = listed(pm_attr::PORT_VL_OP_PACKETS);
const VL_OP_DATA: usize = listed(pm_attr::PORT_VL_OP_DATA);

/// The width in bits of every counter of layout `l`, or 0 when they do
/// not all have the same (evaluated at compile time).
const fn uniform_bits(l: usize) -> u32 {
    let fields = LAYOUTS[l].fields;
    let mut bits = 0;
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        i += 1;
        if f.label.is_none() || f.bit_offset < LAYOUTS[l].counters_from {
            continue;
        }
        let w = match f.kind {
            FieldKind::Array { elem_bits, .. } => elem_bits,
            _ => f.bit_len,
        };
        if bits != 0 && w != bits {
            return 0;
        }
        bits = w;
    }
    bits
}

/// The largest value of a counter of each layout every packet counts in
/// (indexed by layout position; 0 for the others, never read).
const PER_PACKET_MAX: [u64; LAYOUTS.len()] = {
    let mut max = [0u64; LAYOUTS.len()];
    let per_packet = [XMIT_DATA_SL, RCV_DATA_SL, OP_RCV, VL_OP_PACKETS, VL_OP_DATA];
    let mut i = 0;
    while i < per_packet.len() {
        let bits = uniform_bits(per_packet[i]);
        assert!(
            bits > 0,
            "a per-packet attribute has counters of different widths"
        );
        max[per_packet[i]] = max_of(bits as usize);
        i += 1;
    }
    max
};

fn layout(attr: u16) -> Option<&'static Layout> {
    LAYOUTS.get(layout_index(attr)?)
}

/// The counters of layout `i` ([`Layout::counters`]), worked out once:
/// every packet a port counts looks them up.
fn slots(i: usize) -> &'static [(usize, usize)] {
    static SLOTS: OnceLock<Vec<Vec<(usize, usize)>>> = OnceLock::new();
    &SLOTS.get_or_init(|| LAYOUTS.iter().map(|l| l.counters().collect()).collect())[i]
}

/// The counters of one port for every attribute of [`LAYOUTS`], kept
/// sparsely: only the counters that are not 0, as (layout position,
/// counter number, value). A port that carried only SMPs has six; every
/// port of a big fabric carries some, so a fixed block per attribute
/// would cost about a kilobyte a port.
#[derive(Debug, Clone, Default)]
pub struct PerfExtra {
    counts: Vec<(u8, u8, u64)>,
}

/// Which way a packet crossed the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Received.
    Rcv,
    /// Sent.
    Xmit,
}

/// Why a port discarded a packet, as the details attributes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    /// Received while the link was not up (PortLocalPhysicalErrors).
    LocalPhysical,
    /// A CA port got a packet for another LID (PortDLIDMappingErrors).
    DlidMapping,
    /// Sent through a port not up / not active (PortInactiveDiscards).
    Inactive,
}

impl PerfExtra {
    fn bump(&mut self, attr: u16, counter: usize, by: u64) {
        if let Some(l) = layout_index(attr) {
            self.bump_at(l, counter, by);
        }
    }

    /// Adds `by` to counter `counter` of layout `l`, saturating at the
    /// counter's width.
    fn bump_at(&mut self, l: usize, counter: usize, by: u64) {
        let Some(&(_, bits)) = slots(l).get(counter) else {
            return;
        };
        let (Ok(l), Ok(c)) = (u8::try_from(l), u8::try_from(counter)) else {
            return;
        };
        let max = max_of(bits);
        match self.counts.iter_mut().find(|e| e.0 == l && e.1 == c) {
            Some(e) => e.2 = e.2.saturating_add(by).min(max),
            None if by > 0 => self.counts.push((l, c, by.min(max))),
            None => {}
        }
    }

    /// Counts a packet of `words` on `sl` / `vl` crossing the port: a
    /// sent packet in PortXmitDataSL, a received one in PortRcvDataSL,
    /// PortOpRcvCounters and PortVLOpPackets/Data.
    pub fn count(&mut self, way: Way, words: u32, sl: u8, vl: u8) {
        let (sl, vl) = (sl & 0xF, vl & 0xF);
        let w = u64::from(words);
        match way {
            Way::Xmit => self.bump_run([(XMIT_DATA_SL, sl, w)]),
            Way::Rcv => {
                // The three runs below, made on first use, lie together:
                // usually one search finds all five.
                let all = [
                    (RCV_DATA_SL, sl, w),
                    (OP_RCV, 0, 1),
                    (OP_RCV, 1, w),
                    (VL_OP_PACKETS, vl, 1),
                    (VL_OP_DATA, vl, w),
                ];
                if self.bump_adjacent(&all) {
                    return;
                }
                self.bump_run([(RCV_DATA_SL, sl, w)]);
                self.bump_run([(OP_RCV, 0, 1), (OP_RCV, 1, w)]);
                self.bump_run([(VL_OP_PACKETS, vl, 1), (VL_OP_DATA, vl, w)]);
            }
        }
    }

    /// Adds to the counters of `run` (as [`Self::bump_run`]) when the
    /// list holds them as adjacent entries in that order; false (nothing
    /// added) otherwise.
    fn bump_adjacent(&mut self, run: &[(usize, u8, u64)]) -> bool {
        let Some(&(l0, c0, _)) = run.first() else {
            return true;
        };
        let first = (l0 as u8, c0);
        let Some(i) = self.counts.iter().position(|e| (e.0, e.1) == first) else {
            return false;
        };
        let Some(group) = self.counts.get_mut(i..i + run.len()) else {
            return false;
        };
        if !group
            .iter()
            .zip(run)
            .all(|(e, &(l, c, _))| (e.0, e.1) == (l as u8, c))
        {
            return false;
        }
        for (e, &(l, _, by)) in group.iter_mut().zip(run) {
            e.2 = e.2.saturating_add(by).min(PER_PACKET_MAX[l]);
        }
        true
    }

    /// Adds to a run of per-packet counters, each `(layout, counter,
    /// by)` with `by > 0`, counters that every packet bumps together: a
    /// run is kept as adjacent entries of the list, so one search finds
    /// them all. When they are not adjacent (first use, or a Set cleared
    /// some of them) they are moved to the end together, values kept.
    fn bump_run<const N: usize>(&mut self, run: [(usize, u8, u64); N]) {
        if self.bump_adjacent(&run) {
            return;
        }
        let key = |&(l, c, _): &(usize, u8, u64)| (l as u8, c);
        let mut values = [0u64; N];
        for (v, r) in values.iter_mut().zip(&run) {
            let k = key(r);
            if let Some(i) = self.counts.iter().position(|e| (e.0, e.1) == k) {
                *v = self.counts.remove(i).2;
            }
        }
        for (v, &(l, c, by)) in values.iter().zip(&run) {
            let total = v.saturating_add(by).min(PER_PACKET_MAX[l]);
            if total > 0 {
                self.counts.push((l as u8, c, total));
            }
        }
    }

    /// Counts a discarded packet.
    pub fn discard(&mut self, why: Discard) {
        let (attr, i) = match why {
            Discard::LocalPhysical => (pm_attr::PORT_RCV_ERROR_DETAILS, 0),
            Discard::DlidMapping => (pm_attr::PORT_RCV_ERROR_DETAILS, 3),
            Discard::Inactive => (pm_attr::PORT_XMIT_DISCARD_DETAILS, 0),
        };
        self.bump(attr, i, 1);
    }

    /// Clears the counters `select` names (bit `i`: counter `i`).
    fn clear(&mut self, l: usize, select: u64) {
        self.counts
            .retain(|&(cl, c, _)| usize::from(cl) != l || c >= 64 || select & (1 << c) == 0);
    }

    /// Adds this port's counters of `l` into `sum`, each saturating.
    fn add_into(&self, l: usize, sum: &mut [u8; DATA_LEN]) {
        for &(cl, c, v) in &self.counts {
            if usize::from(cl) != l {
                continue;
            }
            let Some(&(off, bits)) = slots(l).get(usize::from(c)) else {
                continue;
            };
            let total = get_bits(&sum[..], off, bits)
                .saturating_add(v)
                .min(max_of(bits));
            set_bits(&mut sum[..], off, bits, total);
        }
    }
}

/// The largest value a counter of `bits` holds.
const fn max_of(bits: usize) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// What the PMA answers for `attr`, or `None` when it does not know it.
pub(crate) enum Answer {
    /// A counter attribute: read (and on a Set clear) the counters of the
    /// selected ports.
    Counters,
    /// PortSamplesControl (Get only).
    SamplesControl,
}

/// Whether the PMA of a node (`switch` or not) answers `attr`.
pub(crate) fn answers(attr: u16, switch: bool) -> Option<Answer> {
    if attr == pm_attr::PORT_SAMPLES_CONTROL {
        return Some(Answer::SamplesControl);
    }
    layout(attr)
        .filter(|l| switch || !l.switch_only)
        .map(|_| Answer::Counters)
}

/// The request's PortSelect.
pub(crate) fn port_select(req: &[u8; DATA_LEN]) -> u8 {
    req[1]
}

/// A counter attribute's answer over `ports` (their [`PerfExtra`]): the
/// sum of their counters, cleared first on a Set as CounterSelect says
/// (bytes 8-15 for PortExtendedSpeedsCounters, else bytes 2-3 plus the
/// byte at 18 as libibmad's `performance_reset_via` sends it); the
/// request's header echoed; a per-opcode attribute for another opcode
/// than [`UD_SEND_ONLY`] reads 0.
pub(crate) fn counters<'a>(
    attr: u16,
    set: bool,
    req: &[u8; DATA_LEN],
    ports: impl Iterator<Item = &'a mut PerfExtra>,
) -> [u8; DATA_LEN] {
    let mut out = [0u8; DATA_LEN];
    let Some(i) = layout_index(attr) else {
        return out;
    };
    let l = &LAYOUTS[i];
    let select = if attr == pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS {
        get_bits(&req[..], 64, 64)
    } else {
        get_bits(&req[..], 16, 16)
    };
    for p in ports {
        if set {
            p.clear(i, select);
        }
        p.add_into(i, &mut out);
    }
    let per_opcode = [
        pm_attr::PORT_OP_RCV_COUNTERS,
        pm_attr::PORT_VL_OP_PACKETS,
        pm_attr::PORT_VL_OP_DATA,
    ];
    if per_opcode.contains(&attr) && req[0] != UD_SEND_ONLY {
        out = [0u8; DATA_LEN];
    }
    let header = (l.counters_from / 8) as usize;
    out[..header].copy_from_slice(&req[..header]);
    out
}

/// PortSamplesControl of an idle sampling mechanism for `port_select`.
pub(crate) fn samples_control(port_select: u8) -> [u8; DATA_LEN] {
    let c = PortSamplesControl {
        port_select,
        // 32-bit counters, no sample running (SampleStatus 0: done).
        counter_width: 4,
        ..PortSamplesControl::default()
    };
    let mut out = [0u8; DATA_LEN];
    let _ = c.emit(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_on_the_sl_and_vl_and_sum_saturates() {
        let mut a = PerfExtra::default();
        a.count(Way::Rcv, 70, 3, 15);
        a.count(Way::Xmit, 70, 3, 0);
        a.discard(Discard::DlidMapping);
        let mut b = a.clone();
        let mut req = [0u8; DATA_LEN];
        req[0] = UD_SEND_ONLY;
        req[1] = 0xFF;
        let out = counters(
            pm_attr::PORT_VL_OP_DATA,
            false,
            &req,
            [&mut a, &mut b].into_iter(),
        );
        let d = PortVlOpData::parse(&out).unwrap();
        assert_eq!(
            (d.data[15], d.data[0], d.op_code, d.port_select),
            (140, 0, UD_SEND_ONLY, 0xFF)
        );
        let out = counters(
            pm_attr::PORT_RCV_ERROR_DETAILS,
            false,
            &req,
            [&mut a].into_iter(),
        );
        assert_eq!(
            PortRcvErrorDetails::parse(&out)
                .unwrap()
                .dlid_mapping_errors,
            1
        );
        // Another opcode counts nothing.
        req[0] = 0x04;
        let out = counters(
            pm_attr::PORT_OP_RCV_COUNTERS,
            false,
            &req,
            [&mut a].into_iter(),
        );
        assert_eq!(PortOpRcvCounters::parse(&out).unwrap().op_rcv_pkts, 0);
        // 2-bit counters stop at 3.
        for _ in 0..5 {
            a.bump(pm_attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS, 2, 1);
        }
        let out = counters(
            pm_attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
            false,
            &req,
            [&mut a, &mut b].into_iter(),
        );
        assert_eq!(
            PortVlXmitFlowCtlUpdateErrors::parse(&out).unwrap().errors[2],
            3
        );
    }

    #[test]
    fn a_set_clears_only_the_selected_counters() {
        let mut a = PerfExtra::default();
        a.count(Way::Xmit, 10, 0, 0);
        a.count(Way::Xmit, 10, 1, 0);
        let mut req = [0u8; DATA_LEN];
        req[1] = 1;
        req[2..4].copy_from_slice(&0x0002u16.to_be_bytes());
        let out = counters(pm_attr::PORT_XMIT_DATA_SL, true, &req, [&mut a].into_iter());
        let d = PortXmitDataSl::parse(&out).unwrap();
        assert_eq!((d.data[0], d.data[1], d.counter_select), (10, 0, 2));
    }

    #[test]
    fn runs_split_by_a_set_or_another_vl_keep_counting_each_counter_once() {
        let mut a = PerfExtra::default();
        let mut req = [0u8; DATA_LEN];
        req[0] = UD_SEND_ONLY;
        req[1] = 1;
        let read = |a: &mut PerfExtra, attr, set, req: &[u8; DATA_LEN]| {
            counters(attr, set, req, [a].into_iter())
        };
        for _ in 0..3 {
            a.count(Way::Rcv, 10, 0, 15);
            a.count(Way::Rcv, 20, 0, 0);
        }
        // Clear PortVLOpPackets of VL 15 only: its run with PortVLOpData
        // is split, then counted on.
        req[2..4].copy_from_slice(&0x8000u16.to_be_bytes());
        read(&mut a, pm_attr::PORT_VL_OP_PACKETS, true, &req);
        a.count(Way::Rcv, 10, 0, 15);
        a.count(Way::Rcv, 10, 0, 15);
        let p = PortVlOpPackets::parse(&read(&mut a, pm_attr::PORT_VL_OP_PACKETS, false, &req))
            .unwrap();
        let d = PortVlOpData::parse(&read(&mut a, pm_attr::PORT_VL_OP_DATA, false, &req)).unwrap();
        let o = PortOpRcvCounters::parse(&read(&mut a, pm_attr::PORT_OP_RCV_COUNTERS, false, &req))
            .unwrap();
        let sl =
            PortRcvDataSl::parse(&read(&mut a, pm_attr::PORT_RCV_DATA_SL, false, &req)).unwrap();
        assert_eq!((p.packets[15], p.packets[0]), (2, 3));
        assert_eq!((d.data[15], d.data[0]), (50, 60));
        assert_eq!((o.op_rcv_pkts, o.op_rcv_data), (8, 110));
        assert_eq!(sl.data[0], 110);
        // Each counter is one entry of the list, however often it moved.
        assert_eq!(a.counts.len(), 1 + 2 + 2 + 2);
    }

    #[test]
    fn only_switches_answer_sw_port_vl_congestion() {
        assert!(answers(pm_attr::SW_PORT_VL_CONGESTION, false).is_none());
        assert!(answers(pm_attr::SW_PORT_VL_CONGESTION, true).is_some());
        assert!(answers(pm_attr::PORT_RCV_DATA_SL, false).is_some());
        assert!(answers(0x0011, true).is_none());
    }
}
