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

/// The per-packet counters nearly every packet of the fabric bumps (SL 0;
/// VL 0 for MADs on QP1, VL 15 for SMPs), as (layout position, counter):
/// kept as plain integers in [`PerfExtra::hot`], never in its list.
const HOT: [(usize, u8); 8] = [
    (XMIT_DATA_SL, 0),
    (RCV_DATA_SL, 0),
    (OP_RCV, 0),
    (OP_RCV, 1),
    (VL_OP_PACKETS, 0),
    (VL_OP_DATA, 0),
    (VL_OP_PACKETS, 15),
    (VL_OP_DATA, 15),
];
/// Positions in [`HOT`]: PortXmitDataSL\[0\], PortRcvDataSL\[0\],
/// PortOpRcvPkts, PortOpRcvData, then PortVLOpPackets / PortVLOpData of
/// VL 0 and of VL 15 (packets at the position, data right after).
const H_XMIT_SL0: usize = 0;
const H_RCV_SL0: usize = 1;
const H_OP_PKTS: usize = 2;
const H_OP_DATA: usize = 3;
const H_VL0: usize = 4;
const H_VL15: usize = 6;

// The positions above name the counters they say.
const _: () = {
    assert!(HOT[H_XMIT_SL0].0 == XMIT_DATA_SL && HOT[H_XMIT_SL0].1 == 0);
    assert!(HOT[H_RCV_SL0].0 == RCV_DATA_SL && HOT[H_RCV_SL0].1 == 0);
    assert!(HOT[H_OP_PKTS].0 == OP_RCV && HOT[H_OP_PKTS].1 == 0);
    assert!(HOT[H_OP_DATA].0 == OP_RCV && HOT[H_OP_DATA].1 == 1);
    assert!(HOT[H_VL0].0 == VL_OP_PACKETS && HOT[H_VL0].1 == 0);
    assert!(HOT[H_VL0 + 1].0 == VL_OP_DATA && HOT[H_VL0 + 1].1 == 0);
    assert!(HOT[H_VL15].0 == VL_OP_PACKETS && HOT[H_VL15].1 == 15);
    assert!(HOT[H_VL15 + 1].0 == VL_OP_DATA && HOT[H_VL15 + 1].1 == 15);
};

/// The largest value of each [`HOT`] counter (its width's).
const HOT_MAX: [u64; HOT.len()] = {
    let mut max = [0u64; HOT.len()];
    let mut i = 0;
    while i < HOT.len() {
        max[i] = PER_PACKET_MAX[HOT[i].0];
        assert!(max[i] > 0 && max[i] <= u32::MAX as u64);
        i += 1;
    }
    max
};

/// The position in [`HOT`] of counter `c` of layout `l`, if it is one.
fn hot_index(l: usize, c: u8) -> Option<usize> {
    HOT.iter().position(|&h| h == (l, c))
}

/// The counters of one port for every attribute of [`LAYOUTS`]: the few
/// every packet bumps ([`HOT`]) as plain integers, the others sparsely,
/// only those that are not 0, as (layout position, counter number,
/// value). A port that carried only SMPs on SL 0 has an empty list; a
/// fixed block per attribute would cost about a kilobyte a port.
#[derive(Debug, Clone, Default)]
pub struct PerfExtra {
    hot: [u32; HOT.len()],
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
        let Ok(c) = u8::try_from(counter) else {
            return;
        };
        match hot_index(l, c) {
            Some(h) => self.add_hot(h, by),
            None => self.add_listed(l, c, by, max_of(bits)),
        }
    }

    /// Adds `by` to hot counter `h`, saturating at its width.
    #[inline]
    fn add_hot(&mut self, h: usize, by: u64) {
        let v = &mut self.hot[h];
        // HOT_MAX fits in u32, so does the minimum.
        *v = u64::from(*v).saturating_add(by).min(HOT_MAX[h]) as u32;
    }

    /// Adds `by` to a counter of the list (not a [`HOT`] one), saturating
    /// at `max`; a counter that stays 0 takes no entry.
    fn add_listed(&mut self, l: usize, c: u8, by: u64, max: u64) {
        let Ok(l) = u8::try_from(l) else {
            return;
        };
        match self.counts.iter_mut().find(|e| e.0 == l && e.1 == c) {
            Some(e) => e.2 = e.2.saturating_add(by).min(max),
            None if by > 0 => self.counts.push((l, c, by.min(max))),
            None => {}
        }
    }

    /// Adds `by` to counter `c` of per-packet layout `l`, whose hot
    /// counter (if `c` is the hot one) is `hot`.
    #[inline]
    fn add_per_packet(&mut self, l: usize, c: u8, hot: Option<usize>, by: u64) {
        match hot {
            Some(h) => self.add_hot(h, by),
            None => self.add_listed(l, c, by, PER_PACKET_MAX[l]),
        }
    }

    /// Counts `n` packets of `words` each on `sl` / `vl` crossing the
    /// port: sent packets in PortXmitDataSL, received ones in
    /// PortRcvDataSL, PortOpRcvCounters and PortVLOpPackets/Data (the
    /// same as `n` packets counted one at a time, saturation included).
    pub fn count_n(&mut self, way: Way, words: u32, sl: u8, vl: u8, n: u64) {
        let (sl, vl) = (sl & 0xF, vl & 0xF);
        let w = u64::from(words).saturating_mul(n);
        let sl0 = |h| (sl == 0).then_some(h);
        match way {
            Way::Xmit => self.add_per_packet(XMIT_DATA_SL, sl, sl0(H_XMIT_SL0), w),
            Way::Rcv => {
                self.add_per_packet(RCV_DATA_SL, sl, sl0(H_RCV_SL0), w);
                self.add_hot(H_OP_PKTS, n);
                self.add_hot(H_OP_DATA, w);
                let h = match vl {
                    0 => Some(H_VL0),
                    15 => Some(H_VL15),
                    _ => None,
                };
                self.add_per_packet(VL_OP_PACKETS, vl, h, n);
                self.add_per_packet(VL_OP_DATA, vl, h.map(|h| h + 1), w);
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

    /// The hot counters of layout `l`: (position in [`HOT`], counter).
    fn hot_of(l: usize) -> impl Iterator<Item = (usize, u8)> {
        HOT.iter()
            .enumerate()
            .filter(move |(_, &(hl, _))| hl == l)
            .map(|(h, &(_, c))| (h, c))
    }

    /// Clears the counters `select` names (bit `i`: counter `i`).
    fn clear(&mut self, l: usize, select: u64) {
        let named = |c: u8| c < 64 && select & (1 << c) != 0;
        self.counts
            .retain(|&(cl, c, _)| usize::from(cl) != l || !named(c));
        for (h, c) in Self::hot_of(l) {
            if named(c) {
                self.hot[h] = 0;
            }
        }
    }

    /// Adds this port's counters of `l` into `sum`, each saturating.
    fn add_into(&self, l: usize, sum: &mut [u8; DATA_LEN]) {
        let listed = self
            .counts
            .iter()
            .filter(|&&(cl, _, _)| usize::from(cl) == l)
            .map(|&(_, c, v)| (c, v));
        let hot = Self::hot_of(l).map(|(h, c)| (c, u64::from(self.hot[h])));
        for (c, v) in listed.chain(hot) {
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
        a.count_n(Way::Rcv, 70, 3, 15, 1);
        a.count_n(Way::Xmit, 70, 3, 0, 1);
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
        a.count_n(Way::Xmit, 10, 0, 0, 1);
        a.count_n(Way::Xmit, 10, 1, 0, 1);
        let mut req = [0u8; DATA_LEN];
        req[1] = 1;
        req[2..4].copy_from_slice(&0x0002u16.to_be_bytes());
        let out = counters(pm_attr::PORT_XMIT_DATA_SL, true, &req, [&mut a].into_iter());
        let d = PortXmitDataSl::parse(&out).unwrap();
        assert_eq!((d.data[0], d.data[1], d.counter_select), (10, 0, 2));
    }

    #[test]
    fn a_set_or_another_sl_and_vl_keep_counting_each_counter_once() {
        let mut a = PerfExtra::default();
        let mut req = [0u8; DATA_LEN];
        req[0] = UD_SEND_ONLY;
        req[1] = 1;
        let read = |a: &mut PerfExtra, attr, set, req: &[u8; DATA_LEN]| {
            counters(attr, set, req, [a].into_iter())
        };
        for _ in 0..3 {
            a.count_n(Way::Rcv, 10, 0, 15, 1);
            a.count_n(Way::Rcv, 20, 0, 0, 1);
            a.count_n(Way::Rcv, 5, 2, 3, 1);
        }
        // Clear PortVLOpPackets of VL 15 and VL 3 only, then count on.
        req[2..4].copy_from_slice(&0x8008u16.to_be_bytes());
        read(&mut a, pm_attr::PORT_VL_OP_PACKETS, true, &req);
        a.count_n(Way::Rcv, 10, 0, 15, 1);
        a.count_n(Way::Rcv, 10, 0, 15, 1);
        a.count_n(Way::Rcv, 5, 2, 3, 1);
        let p = PortVlOpPackets::parse(&read(&mut a, pm_attr::PORT_VL_OP_PACKETS, false, &req))
            .unwrap();
        let d = PortVlOpData::parse(&read(&mut a, pm_attr::PORT_VL_OP_DATA, false, &req)).unwrap();
        let o = PortOpRcvCounters::parse(&read(&mut a, pm_attr::PORT_OP_RCV_COUNTERS, false, &req))
            .unwrap();
        let sl =
            PortRcvDataSl::parse(&read(&mut a, pm_attr::PORT_RCV_DATA_SL, false, &req)).unwrap();
        assert_eq!((p.packets[15], p.packets[0], p.packets[3]), (2, 3, 1));
        assert_eq!((d.data[15], d.data[0], d.data[3]), (50, 60, 20));
        assert_eq!((o.op_rcv_pkts, o.op_rcv_data), (12, 130));
        assert_eq!((sl.data[0], sl.data[2]), (110, 20));
        // SL 0 and VL 0 / 15 are plain integers; the list holds SL 2 and
        // VL 3's counters, each once however often they were cleared.
        assert_eq!(a.counts.len(), 3);
    }

    #[test]
    fn hot_counters_saturate_at_their_width() {
        let mut a = PerfExtra::default();
        for _ in 0..70_000 {
            a.count_n(Way::Rcv, 0, 0, 15, 1);
        }
        a.count_n(Way::Xmit, u32::MAX, 0, 0, 1);
        a.count_n(Way::Xmit, 7, 0, 0, 1);
        let mut req = [0u8; DATA_LEN];
        req[0] = UD_SEND_ONLY;
        let mut read = |attr| counters(attr, false, &req, [&mut a].into_iter());
        let p = PortVlOpPackets::parse(&read(pm_attr::PORT_VL_OP_PACKETS)).unwrap();
        assert_eq!(p.packets[15], 0xFFFF, "16-bit PortVLOpPackets stops");
        let x = PortXmitDataSl::parse(&read(pm_attr::PORT_XMIT_DATA_SL)).unwrap();
        assert_eq!(x.data[0], u32::MAX);
    }

    /// The plain model of what the PMA keeps: every counter of every
    /// layout in full, bumped and cleared one by one.
    #[derive(Default)]
    struct Dense(std::collections::HashMap<(usize, usize), u64>);

    impl Dense {
        fn bump(&mut self, l: usize, c: usize, by: u64) {
            let bits = slots(l)[c].1;
            let v = self.0.entry((l, c)).or_default();
            *v = v.saturating_add(by).min(max_of(bits));
        }
        fn count(&mut self, way: Way, words: u32, sl: u8, vl: u8) {
            let (sl, vl, w) = (
                usize::from(sl & 0xF),
                usize::from(vl & 0xF),
                u64::from(words),
            );
            match way {
                Way::Xmit => self.bump(XMIT_DATA_SL, sl, w),
                Way::Rcv => {
                    self.bump(RCV_DATA_SL, sl, w);
                    self.bump(OP_RCV, 0, 1);
                    self.bump(OP_RCV, 1, w);
                    self.bump(VL_OP_PACKETS, vl, 1);
                    self.bump(VL_OP_DATA, vl, w);
                }
            }
        }
        fn answer(&mut self, l: usize, set: bool, select: u64) -> [u8; DATA_LEN] {
            let mut out = [0u8; DATA_LEN];
            for (c, &(off, bits)) in slots(l).iter().enumerate() {
                if set && c < 64 && select & (1 << c) != 0 {
                    self.0.remove(&(l, c));
                }
                set_bits(
                    &mut out[..],
                    off,
                    bits,
                    self.0.get(&(l, c)).copied().unwrap_or(0),
                );
            }
            out
        }
    }

    #[test]
    fn every_counter_reads_as_a_plain_model_of_the_same_traffic() {
        let mut rng = mad_testkit::Rng::new(0x5eed_0018);
        let (mut a, mut model) = (PerfExtra::default(), Dense::default());
        for round in 0..4000 {
            // Mostly SL 0 on VL 0 / 15 (the hot counters), some others,
            // huge sizes now and then to reach saturation.
            let sl = if rng.chance(0.8) { 0 } else { rng.byte() };
            let vl = [0, 15, 0, 15, rng.byte()][rng.index(5)];
            let words = if rng.chance(0.01) {
                u32::MAX / 2
            } else {
                rng.below(400) as u32
            };
            let way = if rng.chance(0.5) { Way::Rcv } else { Way::Xmit };
            a.count_n(way, words, sl, vl, 1);
            model.count(way, words, sl, vl);
            if rng.chance(0.02) {
                let why = [
                    Discard::LocalPhysical,
                    Discard::DlidMapping,
                    Discard::Inactive,
                ][rng.index(3)];
                a.discard(why);
                let (l, c) = match why {
                    Discard::LocalPhysical => (listed(pm_attr::PORT_RCV_ERROR_DETAILS), 0),
                    Discard::DlidMapping => (listed(pm_attr::PORT_RCV_ERROR_DETAILS), 3),
                    Discard::Inactive => (listed(pm_attr::PORT_XMIT_DISCARD_DETAILS), 0),
                };
                model.bump(l, c, 1);
            }
            if round % 50 == 49 {
                let l = rng.index(LAYOUTS.len());
                let set = rng.chance(0.5);
                let select = rng.next_u64() & if rng.chance(0.5) { 0x8001 } else { u64::MAX };
                let mut req = [0u8; DATA_LEN];
                req[0] = UD_SEND_ONLY;
                let attr = LAYOUTS[l].attr;
                if attr == pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS {
                    req[8..16].copy_from_slice(&select.to_be_bytes());
                } else {
                    req[2..4].copy_from_slice(&(select as u16).to_be_bytes());
                }
                let select = get_bits(
                    &req[..],
                    if attr == pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS {
                        64
                    } else {
                        16
                    },
                    if attr == pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS {
                        64
                    } else {
                        16
                    },
                );
                let got = counters(attr, set, &req, [&mut a].into_iter());
                let mut want = model.answer(l, set, select);
                let header = (LAYOUTS[l].counters_from / 8) as usize;
                want[..header].copy_from_slice(&req[..header]);
                assert_eq!(got, want, "round {round}: attribute {attr:#06x}");
            }
        }
        for (l, layout) in LAYOUTS.iter().enumerate() {
            let mut req = [0u8; DATA_LEN];
            req[0] = UD_SEND_ONLY;
            let got = counters(layout.attr, false, &req, [&mut a].into_iter());
            let mut want = model.answer(l, false, 0);
            let header = (layout.counters_from / 8) as usize;
            want[..header].copy_from_slice(&req[..header]);
            assert_eq!(got, want, "attribute {:#06x}", layout.attr);
        }
    }

    #[test]
    fn only_switches_answer_sw_port_vl_congestion() {
        assert!(answers(pm_attr::SW_PORT_VL_CONGESTION, false).is_none());
        assert!(answers(pm_attr::SW_PORT_VL_CONGESTION, true).is_some());
        assert!(answers(pm_attr::PORT_RCV_DATA_SL, false).is_some());
        assert!(answers(0x0011, true).is_none());
    }
}
