//! What `ibqueryerrors` prints from what was read: the per-node walk of
//! `print_node` (errors above thresholds, data counters, link info), the
//! summary, the `ibwarn` lines of failed queries.

use mad_core::wire::attr::{
    pm_cap, pm_cap2, PortCounters, PortCountersExt, PortRcvErrorDetails, PortXmitDiscardDetails,
};
use mad_core::wire::{Fields, Repr};

use super::settings::{Settings, ERROR_FIELDS};
use super::PortRead;
use crate::diags::PortIdText;
use crate::discover::model::Fabric;
use crate::discover::pma::PmaResult;
use crate::ibdiag::{hex, rpc_failed_warning};
use crate::ibdiag::{link_str, max_msg, remap};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;

/// `conv_cnt_human_readable`: the value scaled to its unit, in `float`
/// as the C tool computes it, and the unit (data counters count 4-byte
/// words).
fn human(v: u64, data: bool) -> (f32, &'static str) {
    let mut tmp = v / 1024;
    let mut ui = 0usize;
    let mut div: u64 = 1;
    while tmp != 0 {
        ui += 1;
        tmp /= 1024;
        div = div.wrapping_mul(1024);
    }
    let mut val = v as f32;
    if data {
        val *= 4.0;
        if val / div as f32 > 1024.0 {
            ui += 1;
            div = div.wrapping_mul(1024);
        }
    }
    val /= div as f32;
    let units: [&str; 7] = if data {
        ["B", "KB", "MB", "GB", "TB", "PB", "EB"]
    } else {
        ["", "K", "M", "G", "T", "P", "E"]
    };
    (val, units.get(ui).copied().unwrap_or(""))
}

fn counter_with_human(name: &str, v: u64, data: bool) -> String {
    let (val, unit) = human(v, data);
    format!(" [{name} == {v} ({:5.3}{unit})]", f64::from(val))
}

fn pc_value(pc: &PortCounters, name: &str) -> u64 {
    field_value(pc, name)
}

fn field_value(r: &dyn Fields, name: &str) -> u64 {
    r.field_descs()
        .iter()
        .position(|d| d.label == Some(name))
        .and_then(|i| r.field_value(i))
        .and_then(|v| match v {
            mad_core::wire::FieldValue::Uint(u) => Some(u),
            _ => None,
        })
        .unwrap_or(0)
}

/// The errors above threshold, as `print_results` lists them: (name,
/// value, text).
#[must_use]
pub fn error_fields(
    pc: &PortCounters,
    pce: Option<&PortCountersExt>,
    cap_mask2: u32,
    st: &Settings,
) -> Vec<(&'static str, u64, String)> {
    let mut v = Vec::new();
    let zero = PortCountersExt::default();
    let pce = pce.unwrap_or(&zero);
    for name in ERROR_FIELDS {
        if st.is_suppressed(name) {
            continue;
        }
        let thres = st.threshold(name);
        if cap_mask2 & pm_cap2::ADDL_PORT_CTRS_EXT_SUP != 0 {
            let val = field_value(pce, name);
            if val > thres {
                v.push((name, val, counter_with_human(name, val, false)));
            }
        } else {
            let val = pc_value(pc, name);
            if val > thres {
                v.push((name, val, format!(" [{name} == {val}]")));
            }
        }
    }
    v
}

/// The data counters `--data` and `--counters` show: (name, value).
fn data_fields(
    pc: &PortCounters,
    pce: Option<&PortCountersExt>,
    cap_mask: u16,
) -> Vec<(&'static str, u64)> {
    const BASE: [&str; 4] = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"];
    const EXT: [&str; 4] = [
        "PortUnicastXmitPkts",
        "PortUnicastRcvPkts",
        "PortMulticastXmitPkts",
        "PortMulticastRcvPkts",
    ];
    match pce {
        Some(e) => {
            let mut v: Vec<(&str, u64)> = BASE.iter().map(|n| (*n, field_value(e, n))).collect();
            if cap_mask & pm_cap::EXT_WIDTH_SUPPORTED != 0 {
                v.extend(EXT.iter().map(|n| (*n, field_value(e, n))));
            }
            v
        }
        None => BASE.iter().map(|n| (*n, pc_value(pc, n))).collect(),
    }
}

fn is_data(name: &str) -> bool {
    name == "PortXmitData" || name == "PortRcvData"
}

/// The counters of a details attribute's data read with the layout of
/// PortRcvErrorDetails (`rcv`) or PortXmitDiscardDetails: (name, value).
fn detail_counters(data: &[u8], rcv: bool) -> Vec<(&'static str, u64)> {
    let f: Option<Box<dyn Fields>> = if rcv {
        PortRcvErrorDetails::parse(data)
            .ok()
            .map(|v| Box::new(v) as Box<dyn Fields>)
    } else {
        PortXmitDiscardDetails::parse(data)
            .ok()
            .map(|v| Box::new(v) as Box<dyn Fields>)
    };
    let Some(f) = f else {
        return Vec::new();
    };
    f.field_descs()
        .iter()
        .filter_map(|d| d.label)
        .filter(|l| l.starts_with("Port") && *l != "PortSelect")
        .map(|l| (l, field_value(&*f, l)))
        .collect()
}

/// One read as the report sees it.
#[derive(Debug, Clone, Copy)]
pub struct ReadView<'a> {
    /// PortCounters.
    pub pc: Option<&'a PmaResult>,
    /// PortCountersExtended.
    pub pce: Option<&'a PmaResult>,
    /// `--details`: PortXmitDiscardDetails, PortRcvErrorDetails (`None`
    /// where not read).
    pub details: [Option<&'a PmaResult>; 2],
}

impl<'a> ReadView<'a> {
    /// The view of a read.
    pub(super) fn of(r: &'a PortRead) -> Self {
        Self {
            pc: r.pc.as_ref(),
            pce: r.pce.as_ref(),
            details: [r.details[0].as_ref(), r.details[1].as_ref()],
        }
    }
}

/// One node as the report sees it.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    /// Index in the fabric.
    pub node: usize,
    /// Its name (mapped or description).
    pub name: &'a str,
    /// The LID of its PMA (ClassPortInfo, AllPortSelect).
    pub lid: u16,
    /// The port number of the ClassPortInfo warning.
    pub cpi_port: u8,
    /// ClassPortInfo was not answered.
    pub cpi_failed: bool,
    /// What the ClassPortInfo query got.
    pub cpi: Option<&'a PmaResult>,
    /// The PMA has AllPortSelect.
    pub all_port_sup: bool,
    /// The PMA has PortCountersExtended.
    pub ext: bool,
    /// ClassPortInfo CapabilityMask.
    pub cap_mask: u16,
    /// ClassPortInfo CapabilityMask2.
    pub cap_mask2: u32,
    /// The AllPortSelect read.
    pub all: ReadView<'a>,
    /// The per-port reads: (port, LID, read).
    pub ports: Vec<(u8, u16, ReadView<'a>)>,
}

/// What the report produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// Standard output.
    pub stdout: String,
    /// Warnings for standard error.
    pub stderr: String,
    /// The `--json` object (without `command`).
    pub json: Json,
    /// Ports with errors (the exit status is 1 when not 0).
    pub bad_ports: usize,
}

#[derive(Default)]
struct Summary {
    nodes_checked: usize,
    bad_nodes: usize,
    ports_checked: usize,
    bad_ports: usize,
    pma_failures: usize,
}

struct Walk<'a> {
    f: &'a Fabric,
    st: &'a Settings,
    map: Option<&'a NameMap>,
    pid: u32,
    out: String,
    err: String,
    sum: Summary,
    json_nodes: Vec<Json>,
}

/// One port's read as the walk reports it: its node, what was read, and
/// the LID and port number it was read at.
#[derive(Clone, Copy)]
struct PortAt<'v, 'a> {
    nv: &'v NodeView<'a>,
    r: &'v ReadView<'a>,
    lid: u16,
    portnum: u8,
}

fn parsed<R: Repr>(r: Option<&PmaResult>) -> Option<R> {
    match r {
        Some(Ok(d)) => R::parse(d).ok(),
        _ => None,
    }
}

impl Walk<'_> {
    /// The attribute `R` read for port `p` as `r`, or, when it could not
    /// be read, `None` after libibmad's warning that `what` (the C
    /// function, the attribute) failed.
    fn parsed_or_warn<R: Repr>(
        &mut self,
        (func, attr): (&str, &str),
        p: PortAt<'_, '_>,
        r: Option<&PmaResult>,
    ) -> Option<R> {
        let v = parsed::<R>(r);
        if v.is_none() {
            self.warn_failed(func, attr, p.nv.name, p.lid, p.portnum, r);
        }
        v
    }

    /// The counters of port `p`: PortCounters (when `pc_always`, or when
    /// the PMA has no PortCountersExtended; zeros otherwise) and
    /// PortCountersExtended (when the PMA has them), read in that order;
    /// `None` after the warning of the first that could not be read, for
    /// the C function `func`.
    fn counters(
        &mut self,
        func: &str,
        p: PortAt<'_, '_>,
        pc_always: bool,
    ) -> Option<(PortCounters, Option<PortCountersExt>)> {
        let pc = if pc_always || !p.nv.ext {
            self.parsed_or_warn::<PortCounters>((func, "IB_GSI_PORT_COUNTERS"), p, p.r.pc)?
        } else {
            PortCounters::default()
        };
        let pce = if p.nv.ext {
            let what = (func, "IB_GSI_PORT_COUNTERS_EXT");
            Some(self.parsed_or_warn::<PortCountersExt>(what, p, p.r.pce)?)
        } else {
            None
        };
        Some((pc, pce))
    }

    fn warn_failed(
        &mut self,
        func: &str,
        what: &str,
        name: &str,
        lid: u16,
        port: u8,
        r: Option<&PmaResult>,
    ) {
        let dest = PortIdText::lid(lid);
        if matches!(r, Some(Err(e)) if !e.starts_with("MAD status")) {
            self.err.push_str(&rpc_failed_warning(&dest));
        }
        self.err.push_str(&format!(
            "ibwarn: [{}] {func}: {what} query failed on {name}, {dest} port {port}\n",
            self.pid
        ));
        self.sum.pma_failures += 1;
    }

    fn port_config(&mut self, idx: usize, portnum: u8) {
        let node = &self.f.nodes[idx];
        let Some(port) = node.port(portnum) else {
            return;
        };
        let (link, _) = link_str(node, port, false);
        let remote = match port.remote.and_then(|r| Some((r, self.f.port(r)?))) {
            Some((r, rp)) => {
                let rnode = &self.f.nodes[r.node];
                let (wm, sm) = max_msg(node, port, rp, rnode);
                let lid = rnode.far_lid(rp);
                format!(
                    "0x{:016x} {lid:6} {:4}[  ] \"{}\" ({wm} {sm})\n",
                    rp.guid,
                    rp.num,
                    remap(rnode, self.map)
                )
            }
            None => "           [  ] \"\" ( )\n".to_owned(),
        };
        let lid = if node.is_switch() {
            node.smalid
        } else {
            port.base_lid
        };
        self.out.push_str(&format!(
            "       Link info: {lid:6}{:4}[  ] =={link}==>  {remote}",
            port.num
        ));
    }

    /// `print_errors` + `print_results`; returns n (0: nothing printed
    /// or the query failed).
    fn errors(&mut self, p: PortAt<'_, '_>, header: &mut bool, jports: &mut Vec<Json>) -> usize {
        let PortAt { nv, portnum, .. } = p;
        let Some((mut pc, pce)) = self.counters("print_errors", p, true) else {
            return 0;
        };
        if nv.cap_mask & pm_cap::PC_XMIT_WAIT_SUP == 0 {
            pc.port_xmit_wait = 0;
        }
        let errs = error_fields(&pc, pce.as_ref(), nv.cap_mask2, self.st);
        if errs.is_empty() {
            return 0;
        }
        let mut s = String::new();
        let mut details = Json::obj();
        for (name, _, text) in &errs {
            s.push_str(text);
            if self.st.details {
                s.push_str(&self.details(p, name, &mut details));
            }
        }
        if self.st.data {
            for (name, v) in data_fields(&pc, pce.as_ref(), nv.cap_mask) {
                if v != 0 {
                    s.push_str(&counter_with_human(name, v, is_data(name)));
                }
            }
        }
        let node = &self.f.nodes[nv.node];
        let p0 = node.port(0).map_or(node.info.port_guid, |p| p.guid);
        if !*header {
            if node.is_switch() {
                self.out
                    .push_str(&format!("Errors for 0x{p0:x} \"{}\"\n", nv.name));
            } else {
                self.out.push_str(&format!("Errors for \"{}\"\n", nv.name));
            }
            *header = true;
            self.sum.bad_nodes += 1;
        }
        let mut errors = Json::obj();
        for (name, v, _) in &errs {
            errors.push(name, crate::json::u64_hex(*v));
        }
        if portnum == 0xFF {
            if node.is_switch() {
                self.out
                    .push_str(&format!("   GUID 0x{p0:x} port ALL:{s}\n"));
                jports.push(
                    Json::obj()
                        .with("port", Json::from("ALL"))
                        .with("guid", hex(p0, 16))
                        .with("errors", errors),
                );
            }
        } else {
            let g = node.port(portnum).map_or(0, |p| p.guid);
            self.out
                .push_str(&format!("   GUID 0x{g:x} port {portnum}:{s}\n"));
            let mut jp = Json::obj()
                .with("port", Json::from(u64::from(portnum)))
                .with("guid", hex(g, 16))
                .with("errors", errors);
            if self.st.details {
                jp.push("details", details);
            }
            jports.push(jp);
            if self.st.port_config {
                self.port_config(nv.node, portnum);
            }
            self.sum.bad_ports += 1;
        }
        s.len()
    }

    /// `query_and_dump` after `name`'s count: the non-zero counters of
    /// its details attribute, named and laid out as the *other* details
    /// attribute (infiniband-diags 44 passes PortRcvErrorDetails' field
    /// range for PortXmitDiscardDetails and the reverse). The JSON gets
    /// them under their own names.
    fn details(&mut self, p: PortAt<'_, '_>, name: &str, json: &mut Json) -> String {
        let PortAt {
            nv,
            r,
            lid,
            portnum,
        } = p;
        let (k, attr) = match name {
            "PortXmitDiscards" => (0, "PortXmitDiscardDetails"),
            "PortRcvErrors" => (1, "PortRcvErrorDetails"),
            _ => return String::new(),
        };
        let Some(Ok(data)) = r.details[k] else {
            self.warn_failed("query_and_dump", attr, nv.name, lid, portnum, r.details[k]);
            return String::new();
        };
        let mut own_json = Json::obj();
        for (l, v) in detail_counters(data, k == 1) {
            own_json.push(l, Json::from(v));
        }
        json.push(attr, own_json);
        detail_counters(data, k == 0)
            .into_iter()
            .filter(|(_, v)| *v != 0)
            .map(|(l, v)| format!(" [{l} == {v}]"))
            .collect()
    }

    /// `print_data_cnts`.
    fn data_counts(&mut self, p: PortAt<'_, '_>, header: &mut bool) {
        let PortAt { nv, portnum, .. } = p;
        let Some((pc, pce)) = self.counters("print_data_cnts", p, false) else {
            return;
        };
        let node = &self.f.nodes[nv.node];
        let g = node.guid();
        if !*header {
            self.out
                .push_str(&format!("Data Counters for 0x{g:x} \"{}\"\n", nv.name));
            *header = true;
        }
        self.out
            .push_str(&format!("   GUID 0x{g:x} port {portnum}:"));
        for (name, v) in data_fields(&pc, pce.as_ref(), nv.cap_mask) {
            self.out
                .push_str(&counter_with_human(name, v, is_data(name)));
        }
        self.out.push('\n');
        if self.st.port_config {
            self.port_config(nv.node, portnum);
        }
    }

    /// `print_node`.
    fn node(&mut self, nv: &NodeView<'_>) {
        let mut header = false;
        let mut jports = Vec::new();
        if nv.cpi_failed {
            self.warn_failed(
                "query_cap_mask",
                "classportinfo",
                nv.name,
                nv.lid,
                nv.cpi_port,
                nv.cpi,
            );
        }
        let numports = usize::from(self.f.nodes[nv.node].num_ports());
        if self.st.counters_only {
            for (p, lid, r) in &nv.ports {
                let at = PortAt {
                    nv,
                    r,
                    lid: *lid,
                    portnum: *p,
                };
                self.data_counts(at, &mut header);
                self.sum.ports_checked += 1;
            }
        } else {
            let mut done = false;
            if nv.all_port_sup {
                let all = nv.all;
                let at = PortAt {
                    nv,
                    r: &all,
                    lid: nv.lid,
                    portnum: 0xFF,
                };
                if self.errors(at, &mut header, &mut jports) == 0 {
                    self.sum.ports_checked += numports;
                    done = true;
                }
            }
            if !done {
                for (p, lid, r) in &nv.ports {
                    let at = PortAt {
                        nv,
                        r,
                        lid: *lid,
                        portnum: *p,
                    };
                    self.errors(at, &mut header, &mut jports);
                    self.sum.ports_checked += 1;
                }
            }
        }
        self.sum.nodes_checked += 1;
        if !jports.is_empty() {
            let node = &self.f.nodes[nv.node];
            self.json_nodes.push(
                Json::obj()
                    .with("guid", hex(node.guid(), 16))
                    .with("description", Json::from(nv.name.to_owned()))
                    .with("ports", Json::Array(jports)),
            );
        }
    }
}

/// The whole report: every node in order, then the summary.
#[must_use]
pub fn report(
    f: &Fabric,
    nodes: &[NodeView<'_>],
    st: &Settings,
    map: Option<&NameMap>,
    pid: u32,
) -> Report {
    let mut w = Walk {
        f,
        st,
        map,
        pid,
        out: String::new(),
        err: String::new(),
        sum: Summary::default(),
        json_nodes: Vec::new(),
    };
    for nv in nodes {
        w.node(nv);
    }
    let s = &w.sum;
    let mut out = std::mem::take(&mut w.out);
    out.push_str(&format!(
        "\n## Summary: {} nodes checked, {} bad nodes found\n",
        s.nodes_checked, s.bad_nodes
    ));
    out.push_str(&format!(
        "##          {} ports checked, {} ports have errors beyond threshold\n",
        s.ports_checked, s.bad_ports
    ));
    out.push_str(&format!(
        "## {}\n",
        st.thresholds.1.as_deref().unwrap_or("(null)")
    ));
    if s.pma_failures > 0 {
        out.push_str(&format!(
            "##          {} PMA query failures\n",
            s.pma_failures
        ));
    }
    out.push_str("## Suppressed:");
    for n in &st.suppressed {
        out.push(' ');
        out.push_str(n);
    }
    out.push('\n');
    let json = Json::obj()
        .with("nodes", Json::Array(std::mem::take(&mut w.json_nodes)))
        .with(
            "summary",
            Json::obj()
                .with("nodes_checked", Json::from(s.nodes_checked as u64))
                .with("bad_nodes", Json::from(s.bad_nodes as u64))
                .with("ports_checked", Json::from(s.ports_checked as u64))
                .with("bad_ports", Json::from(s.bad_ports as u64))
                .with("pma_query_failures", Json::from(s.pma_failures as u64)),
        );
    Report {
        stdout: out,
        stderr: w.err,
        json,
        bad_ports: s.bad_ports,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_readable_counts_match_the_c_rounding() {
        for (name, value, bytes, want) in [
            (
                "PortXmitData",
                13680,
                true,
                " [PortXmitData == 13680 (53.438KB)]",
            ),
            (
                "PortXmitPkts",
                1709,
                false,
                " [PortXmitPkts == 1709 (1.669K)]",
            ),
            (
                "PortXmitPkts",
                190,
                false,
                " [PortXmitPkts == 190 (190.000)]",
            ),
            ("PortXmitData", 0, true, " [PortXmitData == 0 (0.000B)]"),
            (
                "PortRcvData",
                123048,
                true,
                " [PortRcvData == 123048 (480.656KB)]",
            ),
        ] {
            assert_eq!(counter_with_human(name, value, bytes), want);
        }
    }
}
