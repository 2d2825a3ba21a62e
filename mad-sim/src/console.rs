//! The fault console of `mad sim`: line commands that pull cables, set
//! link faults, hit endpoints with device faults and print what the
//! fabric and SM-lite did.
//!
//! [`run`] reads commands from any `BufRead` until `quit` or end of input
//! and writes answers to any `Write`; [`Console::execute`] runs one line.
//! A node is named by its id (`host-3`), its index (`#3`) or its node
//! GUID (`0x100009`). Type `help` for the list:
//!
//! ```text
//! summary                          nodes, switches, CAs, links, LIDs, SM
//! nodes                            every node: index, kind, id, GUID, LIDs
//! port NODE PORT                   a port: state, LID, link, counters, faults
//! link down|up NODE PORT           pull / plug back the cable at a port
//! drop NODE PORT RATE              drop probability on that link (0 clears)
//! faults NODE PORT [drop=P] [dup=P] [reorder=P] [delay=P@MS]
//! clear                            remove every link fault
//! sma NODE mute|status S|ok        the node's SMA never answers / answers status S
//! seed N                           re-seed the link-fault RNGs
//! fatal|reset|cqerror NODE PORT    device fatal / soft reset / CQ overflow
//! wrerror NODE PORT [STATUS]       the next send fails (IBV_WC_GENERAL_ERR)
//! qpfatal NODE PORT 0|1            QP fatal on QP0 or QP1
//! event NODE PORT NAME             any async event (port_active, lid_change, ...)
//! advance MS                       move virtual time on (delays, SM timers)
//! sweep                            ask SM-lite for a sweep
//! stats                            packets, drops by reason, traps, SM, SA
//! quit                             end
//! ```
//!
//! Answers start with `ok`, a table, or `error: ` (the command is
//! ignored); blank lines and `#` comments do nothing. A line longer than
//! [`MAX_COMMAND_LINE`] bytes ends the session with an error (an input
//! such as `/dev/zero`, one endless line, is not read into memory).

use std::io::{self, BufRead, Write};
use std::time::Duration;

use mad_core::transport::{AsyncEvent, Qp, WcStatus};
use mad_core::wire::attr::PhysPortState;

use crate::fabric::{DropReason, Fabric, LinkFaultStats, LinkFaults, NodeSel, SmaFault};
use crate::faulty::EndpointFault;
use crate::subnet::{Subnet, Summary};
use crate::topology::NodeKind;

/// The command list `help` prints.
pub const HELP: &str = "\
commands:
  summary                          nodes, switches, CAs, links, LIDs, SM
  nodes                            every node: index, kind, id, GUID, LIDs
  port NODE PORT                   a port: state, LID, link, counters, faults
  link down|up NODE PORT           pull / plug back the cable at a port
  drop NODE PORT RATE              drop probability on that link (0 clears)
  faults NODE PORT [drop=P] [dup=P] [reorder=P] [delay=P@MS]
  clear                            remove every link fault
  sma NODE mute|status S|ok        the node's SMA never answers, answers every
                                   request with MAD status S (e.g. 0x1c), or
                                   is itself again
  seed N                           re-seed the link-fault RNGs
  fatal NODE PORT                  device fatal at the endpoint there
  reset NODE PORT                  soft reset at the endpoint there
  cqerror NODE PORT                CQ overflow at the endpoint there
  wrerror NODE PORT [STATUS]       its next send fails (IBV_WC_GENERAL_ERR)
  qpfatal NODE PORT 0|1            QP fatal on QP0 or QP1
  event NODE PORT NAME             any async event (port_active, port_error,
                                   lid_change, pkey_change, gid_change,
                                   sm_change, client_reregister, cq_error,
                                   device_fatal, soft_reset_request,
                                   soft_reset_end)
  advance MS                       move virtual time on (delays, SM timers)
  sweep                            ask SM-lite for a sweep
  stats                            packets, drops by reason, traps, SM, SA
  quit                             end
NODE is an id (host-3), an index (#3) or a node GUID (0x100009).
";

/// Every work completion status, for `wrerror`.
const WC: [WcStatus; 22] = [
    WcStatus::Success,
    WcStatus::LocLenErr,
    WcStatus::LocQpOpErr,
    WcStatus::LocEecOpErr,
    WcStatus::LocProtErr,
    WcStatus::WrFlushErr,
    WcStatus::MwBindErr,
    WcStatus::BadRespErr,
    WcStatus::LocAccessErr,
    WcStatus::RemInvReqErr,
    WcStatus::RemAccessErr,
    WcStatus::RemOpErr,
    WcStatus::RetryExcErr,
    WcStatus::RnrRetryExcErr,
    WcStatus::LocRddViolErr,
    WcStatus::RemInvRdReqErr,
    WcStatus::RemAbortErr,
    WcStatus::InvEecnErr,
    WcStatus::InvEecStateErr,
    WcStatus::FatalErr,
    WcStatus::RespTimeoutErr,
    WcStatus::GeneralErr,
];

/// Async events by console name.
const EVENTS: [(&str, AsyncEvent); 13] = [
    ("port_active", AsyncEvent::PortActive),
    ("port_error", AsyncEvent::PortError),
    ("lid_change", AsyncEvent::LidChange),
    ("pkey_change", AsyncEvent::PkeyChange),
    ("gid_change", AsyncEvent::GidChange),
    ("sm_change", AsyncEvent::SmChange),
    ("client_reregister", AsyncEvent::ClientReregister),
    ("cq_error", AsyncEvent::CqError),
    ("qp_fatal0", AsyncEvent::QpFatal(Qp::Qp0)),
    ("qp_fatal1", AsyncEvent::QpFatal(Qp::Qp1)),
    ("device_fatal", AsyncEvent::DeviceFatal),
    ("soft_reset_request", AsyncEvent::SoftResetRequest),
    ("soft_reset_end", AsyncEvent::SoftResetEnd),
];

/// What a line asked for besides its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on reading.
    Continue,
    /// `quit`.
    Quit,
}

/// How [`run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `quit` (or `exit`).
    Quit,
    /// End of input.
    Eof,
}

/// The console over a fabric (and the subnet running on it, if any).
#[derive(Debug)]
pub struct Console<'a> {
    fabric: &'a Fabric,
    subnet: Option<&'a Subnet>,
}

/// Runs the console until `quit` or end of input; see the [module
/// documentation](self).
///
/// # Errors
/// Reading `input` or writing `output` failed; a line longer than
/// [`MAX_COMMAND_LINE`] or not UTF-8 ([`io::ErrorKind::InvalidData`]).
pub fn run(
    fabric: &Fabric,
    subnet: Option<&Subnet>,
    mut input: impl BufRead,
    mut output: impl Write,
) -> io::Result<End> {
    let c = Console::new(fabric, subnet);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let limit = MAX_COMMAND_LINE as u64 + 1;
        if io::Read::take(&mut input, limit).read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() > MAX_COMMAND_LINE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a console line longer than {MAX_COMMAND_LINE} bytes"),
            ));
        }
        let line = std::str::from_utf8(&buf).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })?;
        let (text, flow) = c.execute(line);
        output.write_all(text.as_bytes())?;
        output.flush()?;
        if flow == Flow::Quit {
            return Ok(End::Quit);
        }
    }
    Ok(End::Eof)
}

/// The longest console line [`run`] reads.
pub const MAX_COMMAND_LINE: usize = 4096;

type Answer = Result<String, String>;

impl<'a> Console<'a> {
    /// A console over `fabric` (with `subnet`'s SM and SA when given).
    #[must_use]
    pub fn new(fabric: &'a Fabric, subnet: Option<&'a Subnet>) -> Self {
        Self { fabric, subnet }
    }

    /// Runs one command line; returns its answer (each line ending in a
    /// newline; `error: ...` for a refused command) and whether to go on.
    #[must_use]
    pub fn execute(&self, line: &str) -> (String, Flow) {
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&cmd, args)) = words.split_first() else {
            return (String::new(), Flow::Continue);
        };
        if matches!(cmd, "quit" | "exit" | "q") {
            return ("ok: bye\n".to_owned(), Flow::Quit);
        }
        let r = match cmd {
            "help" | "?" => Ok(HELP.to_owned()),
            "summary" => Ok(self.summary()),
            "nodes" => Ok(self.nodes()),
            "port" => self.port(args),
            "link" => self.link(args),
            "drop" => self.drop_rate(args),
            "faults" => self.faults(args),
            "sma" => self.sma(args),
            "clear" => {
                self.fabric.clear_link_faults();
                Ok("ok: every link fault removed\n".to_owned())
            }
            "seed" => self.seed(args),
            "fatal" => self.endpoint(args, 2, |_| Ok(EndpointFault::DeviceFatal)),
            "reset" => self.endpoint(args, 2, |_| Ok(EndpointFault::SoftReset)),
            "cqerror" => self.endpoint(args, 2, |_| Ok(EndpointFault::CqOverflow)),
            "wrerror" => self.endpoint(args, 2, |rest| {
                let s = match rest.first() {
                    None => WcStatus::GeneralErr,
                    Some(w) => parse_wc(w)?,
                };
                Ok(EndpointFault::WrError(s))
            }),
            "qpfatal" => self.endpoint(args, 3, |rest| match rest.first().copied() {
                Some("0") => Ok(EndpointFault::QpFatal(Qp::Qp0)),
                Some("1") => Ok(EndpointFault::QpFatal(Qp::Qp1)),
                _ => Err("qpfatal NODE PORT 0|1".to_owned()),
            }),
            "event" => self.endpoint(args, 3, |rest| {
                let name = rest.first().copied().unwrap_or("");
                EVENTS
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, e)| EndpointFault::Event(*e))
                    .ok_or_else(|| {
                        let names: Vec<&str> = EVENTS.iter().map(|(n, _)| *n).collect();
                        format!("unknown event {name:?} (one of {})", names.join(", "))
                    })
            }),
            "advance" => self.advance(args),
            "sweep" => self.sweep(),
            "stats" => Ok(self.stats()),
            _ => Err(format!("unknown command {cmd:?} (try help)")),
        };
        let text = match r {
            Ok(t) => t,
            Err(e) => format!("error: {e}\n"),
        };
        (text, Flow::Continue)
    }

    fn node(&self, w: &str) -> Result<usize, String> {
        let sel = if let Some(i) = w.strip_prefix('#') {
            NodeSel::Index(i.parse().map_err(|_| format!("bad node index {w:?}"))?)
        } else if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
            NodeSel::Guid(u64::from_str_radix(h, 16).map_err(|_| format!("bad GUID {w:?}"))?)
        } else {
            NodeSel::Id(w.to_owned())
        };
        self.fabric
            .find(sel.clone())
            .ok_or_else(|| format!("{sel}: no such node"))
    }

    fn node_port(&self, args: &[&str], usage: &str) -> Result<(usize, u8), String> {
        let (Some(n), Some(p)) = (args.first(), args.get(1)) else {
            return Err(format!("usage: {usage}"));
        };
        let node = self.node(n)?;
        let port = p.parse().map_err(|_| format!("bad port {p:?}"))?;
        Ok((node, port))
    }

    fn name(&self, node: usize) -> String {
        self.fabric
            .node(node)
            .map_or_else(|| format!("#{node}"), |n| n.id)
    }

    fn summary(&self) -> String {
        let mut out = match self.subnet {
            Some(s) => s.summary().to_string(),
            None => Summary::of(self.fabric).to_string(),
        };
        if let Some(s) = self.subnet {
            let st = s.sm_status();
            out.push_str(&format!(
                "SM-lite: {}, {} sweeps, {} traps, {} errors{}\n",
                if st.up { "subnet up" } else { "subnet not up" },
                st.sweeps,
                st.traps,
                st.errors,
                if st.sweeping { ", sweeping" } else { "" }
            ));
        }
        out
    }

    fn nodes(&self) -> String {
        let mut out = String::from(
            "index kind   id                  node GUID           LIDs  description\n",
        );
        for n in self.fabric.nodes() {
            let (kind, ports): (&str, Vec<u8>) = match n.kind {
                NodeKind::Switch => ("switch", vec![0]),
                NodeKind::Ca => ("CA", (1..=n.num_ports).collect()),
                NodeKind::Router => ("router", (1..=n.num_ports).collect()),
            };
            let lids: Vec<String> = ports
                .iter()
                .filter_map(|p| self.fabric.port_info(n.index, *p))
                .filter(|pi| pi.lid != 0)
                .map(|pi| pi.lid.to_string())
                .collect();
            out.push_str(&format!(
                "#{:<4} {:<6} {:<19} {:#018x}  {:<5} {}\n",
                n.index,
                kind,
                n.id,
                n.node_guid,
                if lids.is_empty() {
                    "-".to_owned()
                } else {
                    lids.join(",")
                },
                n.description
            ));
        }
        out
    }

    fn port(&self, args: &[&str]) -> Answer {
        let (n, p) = self.node_port(args, "port NODE PORT")?;
        let pi = self
            .fabric
            .port_info(n, p)
            .ok_or_else(|| format!("{} has no port {p}", self.name(n)))?;
        let mut out = format!(
            "{}[{p}]: {} / {}, LID {}, SM LID {}\n",
            self.name(n),
            pi.port_state,
            pi.port_phys_state,
            pi.lid,
            pi.master_sm_lid
        );
        match self.fabric.remote(n, p) {
            Some(r) => out.push_str(&format!(
                "  cable to {}[{}]{}\n",
                self.name(r.node),
                r.port,
                if self.fabric.is_unplugged(n, p) {
                    " (pulled)"
                } else {
                    ""
                }
            )),
            None if p != 0 => out.push_str("  no cable\n"),
            None => {}
        }
        if let Some(c) = self.fabric.counters_ext(n, p) {
            out.push_str(&format!(
                "  xmit {} pkts / {} words, rcv {} pkts / {} words, LinkDowned {}, RcvErrors {}, XmitDiscards {}\n",
                c.port_xmit_pkts,
                c.port_xmit_data,
                c.port_rcv_pkts,
                c.port_rcv_data,
                c.link_downed_counter,
                c.port_rcv_errors,
                c.port_xmit_discards
            ));
        }
        if let Some((f, s)) = self.fabric.link_faults(n, p) {
            out.push_str(&format!(
                "  faults out of this port: {} ({} packets: {})\n",
                fmt_faults(&f),
                s.packets,
                fmt_fault_stats(&s)
            ));
        }
        Ok(out)
    }

    fn link(&self, args: &[&str]) -> Answer {
        let usage = "link down|up NODE PORT";
        let Some((&dir, rest)) = args.split_first() else {
            return Err(format!("usage: {usage}"));
        };
        let (n, p) = self.node_port(rest, usage)?;
        let before = self.subnet.map(Subnet::sm_status);
        let traps = self.fabric.traps_sent();
        match dir {
            "down" => self.fabric.link_down(n, p),
            "up" => self.fabric.link_up(n, p),
            _ => return Err(format!("usage: {usage}")),
        }
        .map_err(|e| e.to_string())?;
        let r = self.fabric.remote(n, p);
        let pi = self.fabric.port_info(n, p);
        let mut out = format!(
            "ok: cable {}[{p}] - {} {}; {}[{p}] now {}\n",
            self.name(n),
            r.map_or_else(String::new, |r| format!(
                "{}[{}]",
                self.name(r.node),
                r.port
            )),
            if dir == "down" {
                "pulled"
            } else {
                "plugged in"
            },
            self.name(n),
            pi.map_or_else(String::new, |pi| format!(
                "{} / {}",
                pi.port_state, pi.port_phys_state
            )),
        );
        let sent = self.fabric.traps_sent() - traps;
        if sent > 0 {
            out.push_str(&format!("  {sent} Trap 128 sent by the switch(es)\n"));
        }
        if let (Some(s), Some(b)) = (self.subnet, before) {
            let a = s.sm_status();
            out.push_str(&format!(
                "  SM-lite: {} trap(s) received, {} re-sweep(s), {} LIDs, subnet {}\n",
                a.traps - b.traps,
                a.sweeps - b.sweeps,
                a.lids,
                if a.up { "up" } else { "not up" }
            ));
        }
        Ok(out)
    }

    fn drop_rate(&self, args: &[&str]) -> Answer {
        let (n, p) = self.node_port(args, "drop NODE PORT RATE")?;
        let rate = parse_prob(args.get(2).copied().unwrap_or(""))?;
        let mut f = self
            .fabric
            .link_faults(n, p)
            .map(|x| x.0)
            .unwrap_or_default();
        f.drop = rate;
        self.set_faults(n, p, &f)
    }

    /// Sets the faults of the link direction leaving `n`/`p` and says so.
    fn set_faults(&self, n: usize, p: u8, f: &LinkFaults) -> Answer {
        self.fabric
            .set_link_faults(n, p, *f)
            .map_err(|e| e.to_string())?;
        Ok(format!(
            "ok: link at {}[{p}]: {}\n",
            self.name(n),
            fmt_faults(f)
        ))
    }

    fn faults(&self, args: &[&str]) -> Answer {
        let usage = "faults NODE PORT [drop=P] [dup=P] [reorder=P] [delay=P@MS]";
        let (n, p) = self.node_port(args, usage)?;
        let mut f = LinkFaults::default();
        for kv in args.iter().skip(2) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("{kv:?}: expected KEY=VALUE ({usage})"))?;
            match k {
                "drop" => f.drop = parse_prob(v)?,
                "dup" | "duplicate" => f.duplicate = parse_prob(v)?,
                "reorder" => f.reorder = parse_prob(v)?,
                "delay" => {
                    let (pr, ms) = v
                        .split_once('@')
                        .ok_or_else(|| format!("delay={v}: expected P@MS"))?;
                    f.delay_probability = parse_prob(pr)?;
                    f.delay = Duration::from_micros(parse_ms(ms)?);
                }
                _ => return Err(format!("unknown fault {k:?} ({usage})")),
            }
        }
        self.set_faults(n, p, &f)
    }

    fn sma(&self, args: &[&str]) -> Answer {
        let usage = "usage: sma NODE mute|status S|ok";
        let n = self.node(args.first().copied().ok_or(usage)?)?;
        let (fault, said) = match args.get(1..) {
            Some(["mute"]) => (Some(SmaFault::Mute), "never answers".to_owned()),
            Some(["status", v]) => {
                let st = parse_u64(v)
                    .filter(|x| *x > 0 && *x <= 0x7FFF)
                    .ok_or_else(|| format!("bad status {v:?} (1 to 0x7fff)"))?;
                let st = u16::try_from(st).unwrap_or(0x7FFF);
                (
                    Some(SmaFault::Status(st)),
                    format!("answers status {st:#06x}"),
                )
            }
            Some(["ok"]) => (None, "answers again".to_owned()),
            _ => return Err(usage.to_owned()),
        };
        self.fabric
            .set_sma_fault(n, fault)
            .map_err(|e| e.to_string())?;
        Ok(format!("ok: {}'s SMA {said}\n", self.name(n)))
    }

    fn seed(&self, args: &[&str]) -> Answer {
        let s = args
            .first()
            .and_then(|w| parse_u64(w))
            .ok_or("usage: seed N")?;
        self.fabric.set_fault_seed(s);
        Ok(format!("ok: link-fault seed {s}\n"))
    }

    fn endpoint(
        &self,
        args: &[&str],
        min: usize,
        fault: impl FnOnce(&[&str]) -> Result<EndpointFault, String>,
    ) -> Answer {
        if args.len() < min {
            return Err("usage: see help".to_owned());
        }
        let (n, p) = self.node_port(args, "COMMAND NODE PORT ...")?;
        let f = fault(&args[2..])?;
        let text = f.to_string();
        self.fabric.inject(n, p, f).map_err(|e| e.to_string())?;
        Ok(format!("ok: {text} at {}[{p}]\n", self.name(n)))
    }

    fn advance(&self, args: &[&str]) -> Answer {
        let us = parse_ms(args.first().copied().unwrap_or(""))?;
        self.fabric.advance(Duration::from_micros(us));
        Ok(format!(
            "ok: virtual time {:.3} ms, {} packets held on links\n",
            self.fabric.now().as_secs_f64() * 1000.0,
            self.fabric.held()
        ))
    }

    fn sweep(&self) -> Answer {
        let s = self.subnet.ok_or("no SM runs on this fabric")?;
        let b = s.sm_status();
        s.resweep();
        let a = s.sm_status();
        Ok(format!(
            "ok: {} sweep(s) done, {} LIDs, subnet {}\n",
            a.sweeps - b.sweeps,
            a.lids,
            if a.up { "up" } else { "not up" }
        ))
    }

    fn stats(&self) -> String {
        let st = self.fabric.stats();
        let mut out = format!(
            "fabric: {} packets, {} to SMAs, {} to PMAs, {} to SMs, {} to endpoints, {} dropped, {} traps sent, {} held, virtual time {:.3} ms\n",
            st.packets,
            st.to_sma,
            st.to_pma,
            st.to_sm,
            st.to_endpoints,
            st.total_dropped(),
            self.fabric.traps_sent(),
            self.fabric.held(),
            self.fabric.now().as_secs_f64() * 1000.0
        );
        for r in DropReason::ALL {
            let n = st.dropped(*r);
            if n > 0 {
                out.push_str(&format!("  dropped {r:?}: {n}\n"));
            }
        }
        for (at, f, s) in self.fabric.all_link_faults() {
            out.push_str(&format!(
                "  link out of {}[{}]: {}; {} packets, {}\n",
                self.name(at.node),
                at.port,
                fmt_faults(&f),
                s.packets,
                fmt_fault_stats(&s)
            ));
        }
        if let Some(s) = self.subnet {
            let m = s.sm_status();
            out.push_str(&format!(
                "SM-lite: LID {}, {} sweeps ({} up), {} traps, {} errors, {} SMPs sent{}\n",
                m.sm_lid,
                m.sweeps,
                m.subnet_ups,
                m.traps,
                m.errors,
                m.smps_sent,
                m.failed
                    .as_ref()
                    .map_or_else(String::new, |f| format!(", stopped: {f}"))
            ));
            if let Some(sa) = s.sa_stats() {
                out.push_str(&format!(
                    "SA: {} requests ({} ok, {} no records, {} other), {} multi-MAD tables, {} reports sent\n",
                    sa.requests,
                    sa.ok,
                    sa.no_records,
                    sa.too_many + sa.other_status,
                    sa.multi_segment,
                    sa.reports_sent
                ));
            }
        }
        let up = self
            .fabric
            .nodes()
            .iter()
            .flat_map(|n| (1..=n.num_ports).map(move |p| (n.index, p)))
            .filter(|&(n, p)| {
                self.fabric
                    .port_info(n, p)
                    .is_some_and(|pi| pi.port_phys_state == PhysPortState::LINK_UP)
            })
            .count();
        out.push_str(&format!("ports physically up: {up}\n"));
        out
    }
}

/// What the faults of a link direction did: `D dropped, U duplicated,
/// R reordered, L delayed`.
fn fmt_fault_stats(s: &LinkFaultStats) -> String {
    format!(
        "{} dropped, {} duplicated, {} reordered, {} delayed",
        s.dropped, s.duplicated, s.reordered, s.delayed
    )
}

fn fmt_faults(f: &LinkFaults) -> String {
    if f.is_none() {
        return "no faults".to_owned();
    }
    let mut v = Vec::new();
    if f.drop > 0.0 {
        v.push(format!("drop {}", f.drop));
    }
    if f.duplicate > 0.0 {
        v.push(format!("duplicate {}", f.duplicate));
    }
    if f.reorder > 0.0 {
        v.push(format!("reorder {}", f.reorder));
    }
    if f.delay_probability > 0.0 && !f.delay.is_zero() {
        v.push(format!(
            "delay {} by {} ms",
            f.delay_probability,
            f.delay.as_secs_f64() * 1000.0
        ));
    }
    v.join(", ")
}

fn parse_prob(w: &str) -> Result<f64, String> {
    match w.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("bad probability {w:?} (0 to 1)")),
    }
}

/// Milliseconds (fractions allowed) to microseconds.
fn parse_ms(w: &str) -> Result<u64, String> {
    match w.parse::<f64>() {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(ms) if (0.0..1e12).contains(&ms) => Ok((ms * 1000.0).round() as u64),
        _ => Err(format!("bad time {w:?} (milliseconds)")),
    }
}

fn parse_u64(w: &str) -> Option<u64> {
    match w.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => w.parse().ok(),
    }
}

fn parse_wc(w: &str) -> Result<WcStatus, String> {
    let up = w.to_ascii_uppercase();
    if let Ok(n) = w.parse::<usize>() {
        return WC
            .get(n)
            .copied()
            .ok_or_else(|| format!("bad status {w:?}"));
    }
    WC.iter()
        .find(|s| {
            let name = s.name();
            name == up || name.strip_prefix("IBV_WC_") == Some(up.as_str())
        })
        .copied()
        .ok_or_else(|| format!("unknown work completion status {w:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(c: &Console<'_>, line: &str) -> String {
        c.execute(line).0
    }

    #[test]
    fn parses_probabilities_times_statuses_and_node_names() {
        assert_eq!(parse_prob("0.25"), Ok(0.25));
        assert!(parse_prob("1.5").is_err());
        assert!(parse_prob("x").is_err());
        assert_eq!(parse_ms("1.5"), Ok(1500));
        assert!(parse_ms("-1").is_err());
        assert_eq!(parse_wc("loc_prot_err"), Ok(WcStatus::LocProtErr));
        assert_eq!(parse_wc("IBV_WC_FATAL_ERR"), Ok(WcStatus::FatalErr));
        assert_eq!(parse_wc("21"), Ok(WcStatus::GeneralErr));
        assert!(parse_wc("nope").is_err());
        let f = Fabric::builtin();
        let c = Console::new(&f, None);
        assert_eq!(c.node("host-1"), Ok(0));
        assert_eq!(c.node("#11"), Ok(11));
        assert_eq!(c.node("0x100000"), Ok(0));
        assert!(c.node("#99").unwrap_err().contains("no such node"));
    }

    #[test]
    fn sma_sets_and_clears_a_nodes_sma_fault() {
        let f = Fabric::builtin();
        let c = Console::new(&f, None);
        let leaf = c.node("leaf-1").unwrap();
        assert!(exec(&c, "sma leaf-1 mute").starts_with("ok: leaf-1's SMA never answers"));
        assert_eq!(f.sma_faults(), vec![(leaf, SmaFault::Mute)]);
        assert!(exec(&c, "sma leaf-1 status 0x1c").contains("answers status 0x001c"));
        assert_eq!(f.sma_faults(), vec![(leaf, SmaFault::Status(0x1c))]);
        assert!(exec(&c, "sma leaf-1 ok").starts_with("ok: "));
        assert!(f.sma_faults().is_empty());
    }

    #[test]
    fn bad_commands_answer_an_error_and_change_nothing() {
        let f = Fabric::builtin();
        let c = Console::new(&f, None);
        for l in [
            "frobnicate",
            "link sideways host-1 1",
            "link down host-1",
            "link down nowhere 1",
            "link down host-1 2",
            "drop host-1 1 2.0",
            "faults host-1 1 delay=0.5",
            "event host-1 1 nonsense",
            "fatal host-1 1",
            "sweep",
            "advance soon",
            "sma",
            "sma nowhere mute",
            "sma host-1 loud",
            "sma host-1 status 0",
            "sma host-1 status 0x8000",
            "sma host-1 status",
        ] {
            assert!(exec(&c, l).starts_with("error: "), "{l}: {}", exec(&c, l));
        }
        assert_eq!(f.traps_sent(), 0);
        assert!(f.all_link_faults().is_empty());
        assert!(f.sma_faults().is_empty());
        assert_eq!(exec(&c, "   # a comment"), "");
        assert_eq!(c.execute("quit").1, Flow::Quit);
    }
}
