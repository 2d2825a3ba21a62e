//! `perfquery` (infiniband-diags `perfquery.c`): PortCounters (basic),
//! PortCountersExtended (`-x`), all ports aggregated (`-a`) or one by one
//! (`-l`), port lists and ranges, reset after reading (`-r`) or reset
//! only (`-R`) with an optional counter mask.
//!
//! The per-SL / per-VL / details / congestion / samples-control queries
//! (`-X`, `-S`, `-D`, `-E`, `-T`, `-c` and the long-only ones) decode the
//! attribute as libibmad's `mad_dump_perfcounters_*` do, reset it after
//! reading (`-r`) or only reset it (`-R`, with the optional mask as
//! CounterSelect), and fail as perfquery does when the PMA does not
//! answer. When several are given, perfquery's fixed order picks the one
//! that runs (`-X` before `-S` ... before `-c`).
//!
//! `--json` prints `{"command":"perfquery","dest":{...},"cap_mask":N,
//! "cap_mask2":N,"extended":B,"ports":[{"port":N,"counters":{...}}],
//! "aggregate":{...}|null,"reset":{"mask":N,"ports":[...]}|null}`; an
//! attribute query adds `"attribute":"NAME","counters":{...}` (the
//! decoded fields) instead of `ports`.

use mad_agents::QueryError;
use mad_core::wire::attr::{
    pm_attr, pm_cap, ClassPortInfo, NodeInfo, NodeType, PortCounters, PortCountersExt,
    PortSamplesControl, SwitchInfo,
};
use mad_core::wire::{AttributeId, Method, Repr};

use crate::command::{CliError, Invocation};
use crate::diags::perf;
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::Session;

mod special;
use special::{special, SPECIAL};

const ALL_PORTS: u32 = 0xFF;

const OPTS: &[Opt] = &[
    Opt::new("extended", 'x', false, None, "show extended port counters"),
    Opt::new("xmtsl", 'X', false, None, "show Xmt SL port counters"),
    Opt::new("rcvsl", 'S', false, None, "show Rcv SL port counters"),
    Opt::new("xmtdisc", 'D', false, None, "show Xmt Discard Details"),
    Opt::new("rcverr", 'E', false, None, "show Rcv Error Details"),
    Opt::new(
        "extended_speeds",
        'T',
        false,
        None,
        "show port extended speeds counters",
    ),
    Opt::long(
        "oprcvcounters",
        1,
        false,
        None,
        "show Rcv Counters per Op code",
    ),
    Opt::long(
        "flowctlcounters",
        2,
        false,
        None,
        "show flow control counters",
    ),
    Opt::long(
        "vloppackets",
        3,
        false,
        None,
        "show packets received per Op code per VL",
    ),
    Opt::long(
        "vlopdata",
        4,
        false,
        None,
        "show data received per Op code per VL",
    ),
    Opt::long(
        "vlxmitflowctlerrors",
        5,
        false,
        None,
        "show flow control update errors per VL",
    ),
    Opt::long(
        "vlxmitcounters",
        6,
        false,
        None,
        "show ticks waiting to transmit counters per VL",
    ),
    Opt::long("swportvlcong", 7, false, None, "show sw port VL congestion"),
    Opt::long(
        "rcvcc",
        8,
        false,
        None,
        "show Rcv congestion control counters",
    ),
    Opt::long("slrcvfecn", 9, false, None, "show SL Rcv FECN counters"),
    Opt::long("slrcvbecn", 10, false, None, "show SL Rcv BECN counters"),
    Opt::long(
        "xmitcc",
        11,
        false,
        None,
        "show Xmit congestion control counters",
    ),
    Opt::long(
        "vlxmittimecc",
        12,
        false,
        None,
        "show VL Xmit Time congestion control counters",
    ),
    Opt::new("smplctl", 'c', false, None, "show samples control"),
    Opt::new("all_ports", 'a', false, None, "show aggregated counters"),
    Opt::new("loop_ports", 'l', false, None, "iterate through each port"),
    Opt::new(
        "reset_after_read",
        'r',
        false,
        None,
        "reset counters after read",
    ),
    Opt::new("Reset_only", 'R', false, None, "only reset counters"),
];

const EXAMPLES: &[&str] = &[
    "\t\t# read local port's performance counters",
    "32 1\t\t# read performance counters from lid 32, port 1",
    "-x 32 1\t# read extended performance counters from lid 32, port 1",
    "-a 32\t\t# read performance counters from lid 32, all ports",
    "-r 32 1\t# read performance counters and reset",
    "-x -r 32 1\t# read extended performance counters and reset",
    "-R 0x20 1\t# reset performance counters of port 1 only",
    "-x -R 0x20 1\t# reset extended performance counters of port 1 only",
    "-R -a 32\t# reset performance counters of all ports",
    "-R 32 2 0x0fff\t# reset only error counters of port 2",
    "-R 32 2 0xf000\t# reset only non-error counters of port 2",
    "-a 32 1-10\t# read performance counters from lid 32, port 1-10, aggregate output",
    "-l 32 1-10\t# read performance counters from lid 32, port 1-10, output each port",
    "-a 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, aggregate output",
    "-l 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, output each port",
];

#[derive(Debug, Default)]
struct Info {
    reset: bool,
    reset_only: bool,
    all_ports: bool,
    loop_ports: bool,
    extended: bool,
    smpl_ctl: bool,
    /// The attribute-query options given.
    specials: Vec<i32>,
    port: u32,
    ports: Vec<u32>,
}

struct Run<'s> {
    s: &'s Session,
    dest: Dest,
    cap: u16,
    cap2: u32,
    out: String,
    ports_json: Vec<Json>,
    warnings: Vec<String>,
    failed: Option<QueryError>,
}

impl Run<'_> {
    fn pma<R: Repr>(&mut self, method: Method, attr: u16, data: &[u8]) -> Option<R> {
        match self
            .s
            .perf()
            .rpc(self.dest.lid, method, AttributeId(attr), data)
        {
            Ok(r) => Some(r),
            Err(e) => {
                self.failed.get_or_insert(e);
                None
            }
        }
    }

    /// `dump_perfcounters`: reads one port; prints it, or returns it for
    /// the aggregate.
    fn dump(
        &mut self,
        extended: bool,
        port: u32,
        aggregate: bool,
        agg: &mut (Vec<PortCounters>, Vec<PortCountersExt>),
    ) -> Result<(), String> {
        let sel = [0u8, port as u8];
        if extended {
            if self.cap & (pm_cap::EXT_WIDTH_SUPPORTED | pm_cap::EXT_WIDTH_NOIETF_SUP) == 0 {
                self.warnings.push(format!(
                    "PerfMgt ClassPortInfo CapMask 0x{:02X}; No extended counter support indicated\n",
                    self.cap
                ));
            }
            let pc: PortCountersExt = self.pma(Method::GET, 0x001D, &sel).ok_or("perfextquery")?;
            if aggregate {
                agg.1.push(pc);
                return Ok(());
            }
            let text = perf::format_perfcounters_ext(
                &self.dest.text,
                port as i32,
                self.cap,
                self.cap2,
                &pc,
            );
            self.print_port(port, text, ibdiag::attr_json(&pc));
        } else {
            let mut pc: PortCounters = self.pma(Method::GET, 0x0012, &sel).ok_or("perfquery")?;
            if self.cap & pm_cap::PC_XMIT_WAIT_SUP == 0 {
                pc.port_xmit_wait = 0;
            }
            if aggregate {
                agg.0.push(pc);
                return Ok(());
            }
            let text = perf::format_perfcounters(&self.dest.text, port as i32, self.cap, &pc);
            self.print_port(port, text, ibdiag::attr_json(&pc));
        }
        Ok(())
    }

    /// One port's counters: `text` to standard output, `json` to the
    /// JSON result.
    fn print_port(&mut self, port: u32, text: String, json: Json) {
        self.out.push_str(&text);
        self.ports_json.push(
            Json::obj()
                .with("port", Json::from(u64::from(port)))
                .with("counters", json),
        );
    }

    /// `reset_counters` of one port with `mask` (CounterSelect is its low
    /// 16 bits, CounterSelect2 the rest).
    fn reset(&mut self, extended: bool, port: u32, mask: u32) -> Result<(), String> {
        let mask = if mask == 0 { u32::MAX } else { mask };
        if extended {
            let pc = PortCountersExt {
                port_select: port as u8,
                counter_select: mask as u16,
                counter_select2: mask >> 16,
                ..PortCountersExt::default()
            };
            let data = pc.to_vec().map_err(|e| e.to_string())?;
            self.pma::<PortCountersExt>(Method::SET, 0x001D, &data)
                .ok_or("perf ext reset")?;
        } else {
            let pc = PortCounters {
                port_select: port as u8,
                counter_select: mask as u16,
                counter_select2: (mask >> 16) as u8,
                ..PortCounters::default()
            };
            let data = pc.to_vec().map_err(|e| e.to_string())?;
            self.pma::<PortCounters>(Method::SET, 0x0012, &data)
                .ok_or("perf reset")?;
        }
        Ok(())
    }
}

/// Parses the port argument: a list `1,4,8`, a range `1-10`, or one
/// port.
fn parse_ports(arg: &str, info: &mut Info) -> Result<(), CliError> {
    if arg.contains(',') {
        for t in arg.split(',').filter(|t| !t.is_empty()) {
            info.ports.push(crate::cnum::c_strtoul(t) as u32);
        }
        info.port = info.ports.first().copied().unwrap_or(0);
    } else if let Some((a, b)) = arg.split_once('-') {
        let (pmin, pmax) = (
            crate::cnum::c_strtoul(a) as u32,
            crate::cnum::c_strtoul(b) as u32,
        );
        if pmin >= pmax {
            return Err(CliError::IbExit(
                "max port must be greater than min port in range".into(),
            ));
        }
        info.ports = (pmin..=pmax).take(256).collect();
        info.port = pmin;
    } else {
        info.port = crate::cnum::c_strtoul(arg) as u32;
    }
    Ok(())
}

/// Runs `perfquery`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
#[allow(clippy::too_many_lines)]
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DK",
        usage_args: " [<lid|guid> [[port(s)] [reset_mask]]]",
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    let mut info = Info::default();
    for (k, _) in &p.custom {
        match u8::try_from(*k).map(char::from).unwrap_or('\0') {
            'x' => info.extended = true,
            'c' => info.smpl_ctl = true,
            'a' => {
                info.all_ports = true;
                info.port = ALL_PORTS;
            }
            'l' => info.loop_ports = true,
            'r' => info.reset = true,
            'R' => info.reset_only = true,
            _ => info.specials.push(*k),
        }
    }
    let args = p.args.clone();
    if let Some(a) = args.get(1) {
        parse_ports(a, &mut info)?;
    }
    let mut mask: u32 = 0xffff;
    let mut ext_mask: u64 = u64::MAX;
    let mut mask_given = false;
    if let Some(a) = args.get(2) {
        // perfquery takes whatever strtoul makes of it ("0xzzz" is 0:
        // every counter); a mask that is not a number is refused here,
        // since a typo would reset counters nobody meant to reset.
        // `-T` takes the whole 64-bit mask; the others its low 32 bits
        // (perfquery's `int mask = ext_mask`), refused here when wider.
        let wide = info.specials.contains(&('T' as i32));
        (mask, ext_mask) = match crate::cnum::c_strtoul_full(a)
            .filter(|_| !a.trim_start().starts_with('-'))
            .filter(|m| wide || u32::try_from(*m).is_ok())
        {
            Some(m) => (m as u32, m),
            None => {
                return Err(CliError::IbExit(format!(
                    "bad reset mask \"{a}\": give the counters to reset as a number \
                     (e.g. 0x1000 for PortXmitData, 0xffff for all)"
                )))
            }
        };
        mask_given = true;
    }
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = if let Some(a) = args.first() {
        ibdiag::dest_arg(session, &p.common, a)?
    } else {
        let a = session.port_attrs();
        info.port = u32::from(a.port_num);
        let d = Dest::lid(a.lid);
        (session, d)
    };
    let json = p.common.json;
    let r = query(
        inv,
        &session,
        &dest,
        &mut info,
        (mask, ext_mask),
        mask_given,
        json,
    );
    let close = session.close();
    r?;
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

#[allow(clippy::too_many_lines, clippy::fn_params_excessive_bools)]
fn query(
    inv: &mut Invocation<'_, '_>,
    session: &Session,
    dest: &Dest,
    info: &mut Info,
    (mut mask, ext_mask): (u32, u64),
    mask_given: bool,
    json: bool,
) -> Result<(), CliError> {
    let mut r = Run {
        s: session,
        dest: dest.clone(),
        cap: 0,
        cap2: 0,
        out: String::new(),
        ports_json: Vec::new(),
        warnings: Vec::new(),
        failed: None,
    };
    // Every exit prints what was gathered, then fails as perfquery does.
    let finish = |inv: &mut Invocation<'_, '_>,
                  r: &Run<'_>,
                  extra: Vec<(&str, Json)>,
                  err: Option<String>|
     -> Result<(), CliError> {
        for w in &r.warnings {
            inv.io.err(&format!(
                "ibwarn: [{}] perfquery: {w}\n",
                std::process::id()
            ));
        }
        if let Some(e) = &r.failed {
            ibdiag::warn_failed(inv, &r.dest.text, e);
        }
        if json {
            let mut j = Json::obj()
                .with("command", Json::String("perfquery".into()))
                .with("dest", ibdiag::dest_json(&r.dest))
                .with("cap_mask", Json::from(u64::from(r.cap)))
                .with("cap_mask2", Json::from(u64::from(r.cap2)))
                .with("ports", Json::Array(r.ports_json.clone()));
            for (k, v) in extra {
                j.push(k, v);
            }
            if let Some(e) = &err {
                j.push("error", Json::String(e.clone()));
            }
            ibdiag::print_json(inv, &j);
            return match err {
                Some(_) => Err(CliError::Exit(255)),
                None => Ok(()),
            };
        }
        inv.io.out(&r.out);
        match err {
            Some(e) => Err(CliError::IbExit(e)),
            None => Ok(()),
        }
    };

    let cpi: Option<ClassPortInfo> = r.pma(Method::GET, 0x0001, &[0, info.port as u8]);
    let Some(cpi) = cpi else {
        return finish(inv, &r, vec![], Some("classportinfo query".into()));
    };
    r.cap = cpi.capability_mask;
    r.cap2 = cpi.capability_mask2;
    let mut all_ports_loop = false;
    if r.cap & pm_cap::ALL_PORT_SELECT == 0 {
        if !info.all_ports && info.port == ALL_PORTS {
            return finish(inv, &r, vec![], Some("AllPortSelect not supported".into()));
        }
        if info.all_ports && info.port == ALL_PORTS {
            all_ports_loop = true;
        }
    }
    if let Some(sp) = SPECIAL.iter().find(|sp| info.specials.contains(&sp.key)) {
        let mask = if sp.key == 'T' as i32 {
            ext_mask
        } else {
            u64::from(mask)
        };
        return special(inv, &mut r, info, *sp, mask, finish);
    }
    if info.smpl_ctl {
        let c: Option<PortSamplesControl> = r.pma(
            Method::GET,
            pm_attr::PORT_SAMPLES_CONTROL,
            &[0, info.port as u8],
        );
        let Some(c) = c else {
            return finish(inv, &r, vec![], Some("sampctlquery".into()));
        };
        r.out.push_str(&perf::format_samples_control(
            &r.dest.text,
            info.port as i32,
            &c,
        ));
        let extra = vec![
            ("attribute", Json::String("PortSamplesControl".into())),
            ("counters", ibdiag::attr_json(&c)),
        ];
        return finish(inv, &r, extra, None);
    }
    let looping = all_ports_loop || (info.loop_ports && (info.all_ports || info.port == ALL_PORTS));
    let mut start_port = 1u32;
    let mut num_ports = 0u32;
    if looping {
        let ni: Result<NodeInfo, _> = session.smp().node_info(&r.dest.target);
        let Ok(ni) = ni else {
            return finish(inv, &r, vec![], Some("smp query nodeinfo failed".into()));
        };
        num_ports = ni.num_ports.into();
        if num_ports == 0 {
            return finish(
                inv,
                &r,
                vec![],
                Some("smp query nodeinfo: num ports invalid".into()),
            );
        }
        if ni.node_type == NodeType::SWITCH {
            let si: Result<SwitchInfo, _> = session.smp().switch_info(&r.dest.target);
            let Ok(si) = si else {
                return finish(inv, &r, vec![], Some("smp query nodeinfo failed".into()));
            };
            if si.enhanced_port0 {
                start_port = 0;
            }
        }
        if all_ports_loop && !info.loop_ports {
            r.warnings
                .push("Emulating AllPortSelect by iterating through all ports".into());
        }
    }
    let mut agg = (Vec::new(), Vec::new());
    let mut aggregate_json = Json::Null;
    if !info.reset_only {
        let aggregate_out = |r: &mut Run<'_>, agg: &(Vec<PortCounters>, Vec<PortCountersExt>)| {
            if info.extended {
                r.out.push_str(&perf::format_perfcounters_ext_aggregate(
                    &r.dest.text,
                    r.cap,
                    r.cap2,
                    &agg.1,
                ));
                ibdiag::attr_json(&perf::aggregate_perfcounters_ext(&agg.1))
            } else {
                r.out.push_str(&perf::format_perfcounters_aggregate(
                    &r.dest.text,
                    r.cap,
                    &agg.0,
                ));
                ibdiag::attr_json(&perf::aggregate_perfcounters(&agg.0, r.cap))
            }
        };
        if looping {
            let aggregate = all_ports_loop && !info.loop_ports;
            for i in start_port..=num_ports {
                if let Err(e) = r.dump(info.extended, i, aggregate, &mut agg) {
                    return finish(inv, &r, vec![], Some(e));
                }
            }
            if aggregate {
                aggregate_json = aggregate_out(&mut r, &agg);
            }
        } else if info.ports.len() > 1 {
            let aggregate = info.all_ports && !info.loop_ports;
            for i in info.ports.clone() {
                if let Err(e) = r.dump(info.extended, i, aggregate, &mut agg) {
                    return finish(inv, &r, vec![], Some(e));
                }
            }
            if aggregate {
                aggregate_json = aggregate_out(&mut r, &agg);
            }
        } else if let Err(e) = r.dump(info.extended, info.port, false, &mut agg) {
            return finish(inv, &r, vec![], Some(e));
        }
        if !info.reset {
            return finish(inv, &r, vec![("aggregate", aggregate_json)], None);
        }
    }
    // do_reset:
    if !mask_given && !info.extended {
        if r.cap & pm_cap::PC_XMIT_WAIT_SUP != 0 {
            mask |= 1 << 16;
        }
        if r.cap & pm_cap::IS_QP1_DROP_SUP != 0 {
            mask |= 1 << 17;
        }
    }
    if info.extended {
        mask |= 0xfff_0000;
        if r.cap & pm_cap::PC_XMIT_WAIT_SUP != 0 {
            mask |= 1 << 28;
        }
        if r.cap & pm_cap::IS_QP1_DROP_SUP != 0 {
            mask |= 1 << 29;
        }
    }
    let ports: Vec<u32> = if looping {
        (start_port..=num_ports).collect()
    } else if info.ports.len() > 1 {
        info.ports.clone()
    } else {
        vec![info.port]
    };
    for port in &ports {
        if let Err(e) = r.reset(info.extended, *port, mask) {
            return finish(inv, &r, vec![("aggregate", aggregate_json)], Some(e));
        }
    }
    let reset = Json::obj().with("mask", Json::from(u64::from(mask))).with(
        "ports",
        Json::Array(ports.iter().map(|p| Json::from(u64::from(*p))).collect()),
    );
    finish(
        inv,
        &r,
        vec![("aggregate", aggregate_json), ("reset", reset)],
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_lists_and_ranges() {
        let mut i = Info::default();
        parse_ports("1,4,,8", &mut i).unwrap();
        assert_eq!(i.ports, [1, 4, 8]);
        assert_eq!(i.port, 1);
        let mut i = Info::default();
        parse_ports("2-4", &mut i).unwrap();
        assert_eq!(i.ports, [2, 3, 4]);
        let mut i = Info::default();
        assert!(matches!(
            parse_ports("4-2", &mut i),
            Err(CliError::IbExit(_))
        ));
        let mut i = Info::default();
        parse_ports("0x3", &mut i).unwrap();
        assert_eq!((i.port, i.ports.len()), (3, 0));
    }
}
