//! The resets of `ibqueryerrors -k` / `-K` (`clear_port`), in one
//! parallel round after the report was read.

use mad_core::wire::attr::{pm_attr, pm_cap, pm_cap2};
use mad_core::wire::AttributeId;

use super::settings::Settings;
use super::{all_has_errors, round, NodeWork, ALL_PORTS};
use crate::command::CliError;
use crate::diags::PortIdText;
use crate::discover::agent::AgentExchange;
use crate::discover::pma::PmaQuery;
use crate::discover::Limits;

/// The resets `-k` / `-K` ask for (`clear_port`); returns the
/// complaints about those that failed.
pub(super) fn clear(
    ex: &mut AgentExchange<'_>,
    lim: Limits,
    st: &Settings,
    work: &[NodeWork],
) -> Result<String, CliError> {
    let mut plan: Vec<(String, PmaQuery)> = Vec::new();
    for nw in work {
        let targets: Vec<(u8, u16)> = if nw.all_port_sup() {
            // The C tool resets at the LID it last read: the last port's
            // after a per-port loop, else the node's.
            let lid = if st.counters_only || all_has_errors(nw, st) {
                nw.ports.last().map_or(nw.lid, |p| p.1)
            } else {
                nw.lid
            };
            vec![(ALL_PORTS, lid)]
        } else {
            nw.ports.iter().map(|(p, l, _)| (*p, *l)).collect()
        };
        for (port, lid) in targets {
            let mut mask: u32 = 0;
            if st.clear_errors {
                mask |= 0xFFF;
                if nw.cap_mask & pm_cap::PC_XMIT_WAIT_SUP != 0 {
                    mask |= 0x10000;
                }
            }
            if st.clear_counts {
                mask |= 0xF000;
            }
            // -k with --details also clears both details attributes
            // (failures not reported).
            if st.clear_errors && st.details {
                for (attr, m) in [
                    (pm_attr::PORT_XMIT_DISCARD_DETAILS, 0x0fu16),
                    (pm_attr::PORT_RCV_ERROR_DETAILS, 0x3f),
                ] {
                    let mut d = vec![0u8; 4];
                    d[2..4].copy_from_slice(&m.to_be_bytes());
                    plan.push((
                        String::new(),
                        PmaQuery {
                            lid,
                            attr: AttributeId(attr),
                            port: Some(port),
                            set: Some(d),
                        },
                    ));
                }
            }
            if mask != 0 {
                let mut d = vec![0u8; 19];
                d[2..4].copy_from_slice(&((mask & 0xFFFF) as u16).to_be_bytes());
                d[18] = ((mask >> 16) & 0xFF) as u8;
                plan.push((
                    format!("Failed to reset errors {} port {port}\n", nw.name),
                    PmaQuery {
                        lid,
                        attr: AttributeId::PM_PORT_COUNTERS,
                        port: Some(port),
                        set: Some(d),
                    },
                ));
            }
            if nw.ext() {
                let mut mask: u32 = 0;
                if st.clear_counts {
                    mask = if nw.cap_mask & pm_cap::EXT_WIDTH_SUPPORTED != 0 {
                        0xFF
                    } else {
                        0x0F
                    };
                }
                if st.clear_errors && nw.cap_mask2 & pm_cap2::ADDL_PORT_CTRS_EXT_SUP != 0 {
                    mask |= 0xfff_0000;
                    if nw.cap_mask & pm_cap::PC_XMIT_WAIT_SUP != 0 {
                        mask |= 1 << 28;
                    }
                }
                if mask != 0 {
                    let mut d = vec![0u8; 8];
                    d[2..4].copy_from_slice(&((mask & 0xFFFF) as u16).to_be_bytes());
                    d[4..8].copy_from_slice(&(mask >> 16).to_be_bytes());
                    plan.push((
                        format!(
                            "Failed to reset extended data counters {}, {} port {port}\n",
                            nw.name,
                            PortIdText::lid(lid)
                        ),
                        PmaQuery {
                            lid,
                            attr: AttributeId::PM_PORT_COUNTERS_EXT,
                            port: Some(port),
                            set: Some(d),
                        },
                    ));
                }
            }
        }
    }
    let mut fails = String::new();
    for (msg, r) in round(ex, lim, plan)? {
        if r.is_err() {
            fails.push_str(&msg);
        }
    }
    Ok(fails)
}
