//! perfquery's attribute queries (`-X`, `-S`, `-D`, `-E`, `-T` and the
//! long-only options): the table in perfquery's order and `common_func`.

use mad_core::wire::attr::{
    pm_attr, PortExtSpeedsCounters, PortFlowCtlCounters, PortOpRcvCounters, PortRcvConCtrl,
    PortRcvDataSl, PortRcvErrorDetails, PortSlRcvBecn, PortSlRcvFecn, PortVlOpData,
    PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors, PortVlXmitTimeCong, PortVlXmitWaitCounters,
    PortXmitConCtrl, PortXmitDataSl, PortXmitDiscardDetails, SwPortVlCongestion,
};
use mad_core::wire::{Fields, Method, Repr};

use super::{Info, Run};
use crate::command::{CliError, Invocation};
use crate::diags::perf;
use crate::ibdiag::{self, RawSmpData};
use crate::json::{Json, JsonExt};

/// Reads one attribute of `port` and returns it decoded.
type Getter = fn(&mut Run<'_>, u16, u32) -> Option<Box<dyn Fields>>;

fn get<R: Repr + Fields + 'static>(
    r: &mut Run<'_>,
    attr: u16,
    port: u32,
) -> Option<Box<dyn Fields>> {
    r.pma::<R>(Method::GET, attr, &[0, port as u8])
        .map(|v| Box::new(v) as Box<dyn Fields>)
}

/// One attribute query of perfquery.
#[derive(Clone, Copy)]
pub(super) struct Special {
    /// The option's key (`'X'`, ... or the long option's number).
    pub(super) key: i32,
    /// The name perfquery prints.
    name: &'static str,
    /// The PerfMgt attribute.
    attr: u16,
    /// Reads and decodes it.
    get: Getter,
}

impl Special {
    /// The query of attribute `R` (PerfMgt attribute `attr`) under option
    /// `key`, printed by its name.
    const fn of<R: Repr + Fields + 'static>(key: i32, attr: u16) -> Self {
        Self {
            key,
            name: R::NAME,
            attr,
            get: get::<R>,
        }
    }
}

impl std::fmt::Debug for Special {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The attribute queries in the order perfquery tries them.
pub(super) const SPECIAL: &[Special] = &[
    Special::of::<PortXmitDataSl>('X' as i32, pm_attr::PORT_XMIT_DATA_SL),
    Special::of::<PortRcvDataSl>('S' as i32, pm_attr::PORT_RCV_DATA_SL),
    Special::of::<PortXmitDiscardDetails>('D' as i32, pm_attr::PORT_XMIT_DISCARD_DETAILS),
    Special::of::<PortRcvErrorDetails>('E' as i32, pm_attr::PORT_RCV_ERROR_DETAILS),
    Special::of::<PortExtSpeedsCounters>('T' as i32, pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS),
    Special::of::<PortOpRcvCounters>(1, pm_attr::PORT_OP_RCV_COUNTERS),
    Special::of::<PortFlowCtlCounters>(2, pm_attr::PORT_FLOW_CTL_COUNTERS),
    Special::of::<PortVlOpPackets>(3, pm_attr::PORT_VL_OP_PACKETS),
    Special::of::<PortVlOpData>(4, pm_attr::PORT_VL_OP_DATA),
    Special::of::<PortVlXmitFlowCtlUpdateErrors>(5, pm_attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS),
    Special::of::<PortVlXmitWaitCounters>(6, pm_attr::PORT_VL_XMIT_WAIT_COUNTERS),
    Special::of::<SwPortVlCongestion>(7, pm_attr::SW_PORT_VL_CONGESTION),
    Special::of::<PortRcvConCtrl>(8, pm_attr::PORT_RCV_CON_CTRL),
    Special::of::<PortSlRcvFecn>(9, pm_attr::PORT_SL_RCV_FECN),
    Special::of::<PortSlRcvBecn>(10, pm_attr::PORT_SL_RCV_BECN),
    Special::of::<PortXmitConCtrl>(11, pm_attr::PORT_XMIT_CON_CTRL),
    Special::of::<PortVlXmitTimeCong>(12, pm_attr::PORT_VL_XMIT_TIME_CONG),
];

/// perfquery's `common_func` (and `extended_speeds_query` for `-T`):
/// reads and prints the attribute unless `-R`, then resets it with `-r`
/// or `-R` (PortSelect, CounterSelect = the low 16 bits of `mask` and the
/// byte at 18 = the next 8, as libibmad's `performance_reset_via`; `-T`
/// puts the 64-bit mask at bytes 8-15 as `ext_speeds_reset_via`; a zero
/// mask means every counter).
pub(super) fn special<F>(
    inv: &mut Invocation<'_, '_>,
    r: &mut Run<'_>,
    info: &Info,
    sp: Special,
    mask: u64,
    finish: F,
) -> Result<(), CliError>
where
    F: Fn(
        &mut Invocation<'_, '_>,
        &Run<'_>,
        Vec<(&str, Json)>,
        Option<String>,
    ) -> Result<(), CliError>,
{
    let port = info.port;
    let mut extra = Vec::new();
    if !info.reset_only {
        let Some(d) = (sp.get)(r, sp.attr, port) else {
            return finish(inv, r, vec![], Some(format!("cannot query {}", sp.name)));
        };
        r.out.push_str(&perf::format_special(
            sp.name,
            &r.dest.text,
            port as i32,
            &*d,
        ));
        extra.push(("attribute", Json::String(sp.name.into())));
        extra.push(("counters", ibdiag::attr_json(&*d)));
    }
    if info.reset_only || info.reset {
        let mut data = [0u8; 192];
        data[1] = port as u8;
        let mask = if mask == 0 { u64::MAX } else { mask };
        if sp.key == 'T' as i32 {
            data[8..16].copy_from_slice(&mask.to_be_bytes());
        } else {
            let m = mask as u32;
            data[2..4].copy_from_slice(&(m as u16).to_be_bytes());
            data[18] = (m >> 16) as u8;
        }
        let d: Option<RawSmpData> = r.pma(Method::SET, sp.attr, &data);
        if d.is_none() {
            return finish(inv, r, extra, Some(format!("cannot reset {}", sp.name)));
        }
        extra.push((
            "reset",
            Json::obj()
                .with("mask", Json::from(mask))
                .with("ports", Json::Array(vec![Json::from(u64::from(port))])),
        ));
    }
    finish(inv, r, extra, None)
}
