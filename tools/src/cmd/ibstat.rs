//! `ibstat` (infiniband-diags `ibstat.c`) and `ibstatus` (its shell
//! script): the local CAs and their ports.
//!
//! On a real port (and under libumad2sim) the facts come from libibumad
//! and sysfs, as the C tools read them. On `--sim` and `--ibsim` the
//! local port is asked by SMP (NodeInfo, PortInfo over a directed route
//! of no hops) and presented the way libumad2sim presents an ibsim
//! port: CA type `simulator`, firmware version 1, hardware version the
//! NodeInfo revision, link layer `IB`, the CA numbered with only the
//! attached port; with `--ibsim` the CA is also named `ibsim0`, as
//! libumad2sim names it (with `--sim` it is the node's name).
//!
//! `--json` prints `{"command":"ibstat","cas":[{"name":..,"node_type":N,
//! "ca_type":..,"num_ports":N,"firmware_version":..,"hardware_version":..,
//! "node_guid":"0x..","system_image_guid":"0x..","ports":[{"port":N,
//! "state":N,"phys_state":N,"rate":N,"base_lid":N,"lmc":N,"sm_lid":N,
//! "capability_mask":N,"port_guid":"0x..","gid":"..","link_layer":..}]}]}`
//! (the same for `ibstatus`, with `"command":"ibstatus"`).

use std::path::PathBuf;

use mad_agents::smp::SmpTarget;
use mad_core::transport::umad;
use mad_core::wire::attr::{port_cap, NodeInfo, PortInfo};

use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::{Backend, Session, TransportChoice};

/// One local port.
#[derive(Debug, Clone, Default)]
struct LocalPort {
    num: u8,
    state: u8,
    phys_state: u8,
    rate: u32,
    fdr10: bool,
    base_lid: u16,
    lmc: u8,
    sm_lid: u16,
    cap_mask: u32,
    port_guid: u64,
    gid_prefix: u64,
    link_layer: String,
    /// sysfs texts where they exist (ibstatus prints them as they are).
    sys: Option<SysTexts>,
}

#[derive(Debug, Clone, Default)]
struct SysTexts {
    gid: Option<String>,
    lid: Option<String>,
    sm_lid: Option<String>,
    state: Option<String>,
    phys_state: Option<String>,
    rate: Option<String>,
    link_layer: Option<String>,
}

/// One local CA.
#[derive(Debug, Clone, Default)]
struct LocalCa {
    name: String,
    node_type: u32,
    ca_type: String,
    num_ports: u32,
    fw_ver: String,
    hw_ver: String,
    node_guid: u64,
    system_guid: u64,
    ports: Vec<LocalPort>,
}

impl LocalCa {
    fn port(&self, n: i64) -> Option<&LocalPort> {
        self.ports.iter().find(|p| i64::from(p.num) == n)
    }
}

const NODE_TYPE_STR: [&str; 5] = ["???", "CA", "Switch", "Router", "iWARP RNIC"];
const PORT_STATE_STR: [&str; 5] = ["???", "Down", "Initializing", "Armed", "Active"];
const PHYS_STATE_STR: [&str; 8] = [
    "No state change",
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "PhyTest",
];

fn node_type_str(t: u32) -> &'static str {
    NODE_TYPE_STR.get(t as usize).copied().unwrap_or("???")
}

/// The sysfs directory of CA `ca`: the real one, or the one
/// libumad2sim keeps under `./sys-PID` for this process.
fn sysfs_dir(ca: &str) -> Option<PathBuf> {
    let real = PathBuf::from("/sys/class/infiniband").join(ca);
    if real.is_dir() {
        return Some(real);
    }
    let sim = PathBuf::from(format!("./sys-{}", std::process::id()))
        .join("sys/class/infiniband")
        .join(ca);
    sim.is_dir().then_some(sim)
}

fn read_sys(dir: Option<&PathBuf>, file: &str) -> Option<String> {
    let t = std::fs::read_to_string(dir?.join(file)).ok()?;
    Some(t.strip_suffix('\n').unwrap_or(&t).to_owned())
}

/// The CAs libibumad lists, sorted by name, with the sysfs facts
/// libibumad does not hand out.
fn umad_cas() -> Result<Vec<LocalCa>, String> {
    let mut cas = umad::list_cas().map_err(|e| e.to_string())?;
    cas.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cas
        .into_iter()
        .map(|c| {
            let dir = sysfs_dir(&c.name);
            let ports: Vec<LocalPort> = c
                .ports
                .iter()
                .map(|p| {
                    let pdir = dir
                        .as_ref()
                        .map(|d| d.join("ports").join(p.port_num.to_string()));
                    let rate_text = read_sys(pdir.as_ref(), "rate");
                    let fdr10 = rate_text.as_deref().is_some_and(|r| {
                        r.find(')')
                            .and_then(|i| r.get(i.saturating_sub(5)..i))
                            .is_some_and(|s| s.eq_ignore_ascii_case("fdr10"))
                    });
                    LocalPort {
                        num: p.port_num,
                        state: p.state,
                        phys_state: p.phys_state,
                        rate: p.rate,
                        fdr10,
                        base_lid: p.lid,
                        lmc: p.lmc,
                        sm_lid: p.sm_lid,
                        cap_mask: p.capability_mask,
                        port_guid: p.port_guid,
                        gid_prefix: p.gid_prefix,
                        link_layer: p.link_layer.clone(),
                        sys: Some(SysTexts {
                            gid: read_sys(pdir.as_ref(), "gids/0"),
                            lid: read_sys(pdir.as_ref(), "lid"),
                            sm_lid: read_sys(pdir.as_ref(), "sm_lid"),
                            state: read_sys(pdir.as_ref(), "state"),
                            phys_state: read_sys(pdir.as_ref(), "phys_state"),
                            rate: rate_text,
                            link_layer: read_sys(pdir.as_ref(), "link_layer"),
                        }),
                    }
                })
                .collect();
            let num_ports = ports.iter().map(|p| u32::from(p.num)).max().unwrap_or(0);
            LocalCa {
                name: c.name.clone(),
                node_type: c.node_type,
                ca_type: read_sys(dir.as_ref(), "hca_type").unwrap_or_default(),
                num_ports,
                fw_ver: c.fw_ver.clone(),
                hw_ver: read_sys(dir.as_ref(), "hw_rev").unwrap_or_default(),
                node_guid: c.node_guid,
                system_guid: c.system_guid,
                ports,
            }
        })
        .collect())
}

/// libumad2sim's `rate` value for a PortInfo (the number before "Gb/sec").
fn sim_rate(pi: &PortInfo) -> (u32, String) {
    let speed_ext = if pi.capability_mask & port_cap::HAS_EXT_SPEEDS != 0 {
        u32::from(pi.link_speed_ext_active)
    } else {
        0
    };
    let w = match pi.link_width_active {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        _ => 0,
    };
    if speed_ext == 0 {
        let speed = u32::from(pi.link_speed_active);
        let name = match speed {
            2 => " DDR",
            4 => " QDR",
            _ => "",
        };
        let x = w * speed * 25;
        let text = format!(
            "{}{} Gb/sec ({w}X{name})",
            x / 10,
            if x % 10 != 0 { ".5" } else { "" }
        );
        (x / 10, text)
    } else {
        let name = match speed_ext {
            1 => " FDR",
            2 => " EDR",
            4 => " HDR",
            _ => "",
        };
        let r = if speed_ext == 1 { 14 * w } else { 26 * w };
        (r, format!("{r} Gb/sec ({w}X{name})"))
    }
}

fn guid_groups(v: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (v >> 48) & 0xffff,
        (v >> 32) & 0xffff,
        (v >> 16) & 0xffff,
        v & 0xffff
    )
}

/// The local port of a `--sim` / `--ibsim` session, as libumad2sim
/// presents an ibsim port.
fn session_ca(s: &Session) -> Result<LocalCa, String> {
    let local = SmpTarget::dr(&[]).map_err(|e| e.to_string())?;
    let ni: NodeInfo = s
        .smp()
        .node_info(&local)
        .map_err(|e| format!("NodeInfo of the local port: {e}"))?;
    let pi: PortInfo = s
        .smp()
        .port_info(&local, ni.local_port_num)
        .map_err(|e| format!("PortInfo of the local port: {e}"))?;
    let a = s.port_attrs();
    let name = match s.backend() {
        Backend::IbSim => "ibsim0".to_owned(),
        _ => a.ca_name.clone(),
    };
    let (rate, rate_text) = sim_rate(&pi);
    let state_name = match pi.port_state.0 {
        0 => "NOP",
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "<unknown>",
    };
    let phys_name = match pi.port_phys_state.0 {
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "Phy Test",
        _ => "<unknown>",
    };
    let port_guid = ni.node_guid.wrapping_add(u64::from(ni.local_port_num));
    let port = LocalPort {
        num: ni.local_port_num,
        state: pi.port_state.0,
        phys_state: pi.port_phys_state.0,
        rate,
        fdr10: false,
        base_lid: pi.lid,
        lmc: pi.lmc,
        sm_lid: pi.master_sm_lid,
        cap_mask: pi.capability_mask,
        port_guid,
        gid_prefix: pi.gid_prefix,
        link_layer: "IB".into(),
        sys: Some(SysTexts {
            gid: Some(format!(
                "{}:{}",
                guid_groups(pi.gid_prefix),
                guid_groups(port_guid)
            )),
            lid: Some(format!("0x{:x}", pi.lid)),
            sm_lid: Some(format!("0x{:x}", pi.master_sm_lid)),
            state: Some(format!("{}: {state_name}", pi.port_state.0)),
            phys_state: Some(format!("{}: {phys_name}", pi.port_phys_state.0)),
            rate: Some(rate_text),
            link_layer: None,
        }),
    };
    Ok(LocalCa {
        name,
        node_type: u32::from(ni.node_type.0),
        ca_type: "simulator".into(),
        num_ports: u32::from(ni.local_port_num),
        fw_ver: "1".into(),
        hw_ver: format!("{:x}", ni.revision),
        node_guid: ni.node_guid,
        system_guid: ni.system_image_guid,
        ports: vec![port],
    })
}

/// The local CAs for this invocation (no MAD is sent on a real port).
fn local_cas(inv: &mut Invocation<'_, '_>) -> Result<Vec<LocalCa>, CliError> {
    match inv.session.transport {
        TransportChoice::Sim(_) | TransportChoice::IbSim => {
            let c = ibdiag::Common::default();
            let s = ibdiag::open_session(inv, &c)?;
            let r = session_ca(&s);
            let _ = s.close();
            r.map(|c| vec![c]).map_err(|e| {
                inv.io.err(&format!("{}: {e}\n", inv.prog));
                CliError::Exit(255)
            })
        }
        _ => {
            if !umad::is_available() || umad::list_cas().map_or(true, |c| c.is_empty()) {
                return Err(CliError::Stderr(
                    format!("{}: {}\n", inv.prog, crate::session::NO_DEVICE),
                    255,
                ));
            }
            umad_cas().map_err(|e| {
                inv.io.err(&format!(
                    "ibpanic: [{}] main: can't list IB device names: {e}\n",
                    std::process::id()
                ));
                CliError::Exit(255)
            })
        }
    }
}

fn port_dump(p: &LocalPort, alone: bool) -> String {
    let (pre, hdrpre) = if alone { ("", "") } else { ("\t\t", "\t") };
    let mut s = format!("{hdrpre}Port {}:\n", p.num);
    s.push_str(&format!(
        "{pre}State: {}\n",
        PORT_STATE_STR.get(usize::from(p.state)).unwrap_or(&"???")
    ));
    s.push_str(&format!(
        "{pre}Physical state: {}\n",
        PHYS_STATE_STR
            .get(usize::from(p.phys_state))
            .unwrap_or(&"???")
    ));
    if p.fdr10 {
        s.push_str(&format!("{pre}Rate: {} (FDR10)\n", p.rate));
    } else if p.rate != 2 {
        s.push_str(&format!("{pre}Rate: {}\n", p.rate));
    } else {
        s.push_str(&format!("{pre}Rate: 2.5\n"));
    }
    s.push_str(&format!("{pre}Base lid: {}\n", p.base_lid));
    s.push_str(&format!("{pre}LMC: {}\n", p.lmc));
    s.push_str(&format!("{pre}SM lid: {}\n", p.sm_lid));
    s.push_str(&format!("{pre}Capability mask: 0x{:08x}\n", p.cap_mask));
    s.push_str(&format!("{pre}Port GUID: 0x{:016x}\n", p.port_guid));
    s.push_str(&format!("{pre}Link layer: {}\n", p.link_layer));
    s
}

fn ca_dump(c: &LocalCa) -> String {
    if c.node_type == 0 {
        return String::new();
    }
    let t = node_type_str(c.node_type);
    format!(
        "{t} '{}'\n\t{t} type: {}\n\tNumber of ports: {}\n\tFirmware version: {}\n\tHardware version: {}\n\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n",
        c.name, c.ca_type, c.num_ports, c.fw_ver, c.hw_ver, c.node_guid, c.system_guid
    )
}

fn ca_json(c: &LocalCa) -> Json {
    let ports: Vec<Json> = c
        .ports
        .iter()
        .map(|p| {
            let mut gid = [0u8; 16];
            gid[..8].copy_from_slice(&p.gid_prefix.to_be_bytes());
            gid[8..].copy_from_slice(&p.port_guid.to_be_bytes());
            Json::obj()
                .with("port", Json::from(u64::from(p.num)))
                .with("state", Json::from(u64::from(p.state)))
                .with("phys_state", Json::from(u64::from(p.phys_state)))
                .with("rate", Json::from(u64::from(p.rate)))
                .with("base_lid", Json::from(u64::from(p.base_lid)))
                .with("lmc", Json::from(u64::from(p.lmc)))
                .with("sm_lid", Json::from(u64::from(p.sm_lid)))
                .with("capability_mask", Json::from(u64::from(p.cap_mask)))
                .with("port_guid", ibdiag::hex(p.port_guid, 16))
                .with("gid", Json::String(crate::diags::dump::inet_ntop6(&gid)))
                .with("link_layer", Json::String(p.link_layer.clone()))
        })
        .collect();
    Json::obj()
        .with("name", Json::String(c.name.clone()))
        .with("node_type", Json::from(u64::from(c.node_type)))
        .with("ca_type", Json::String(c.ca_type.clone()))
        .with("num_ports", Json::from(u64::from(c.num_ports)))
        .with("firmware_version", Json::String(c.fw_ver.clone()))
        .with("hardware_version", Json::String(c.hw_ver.clone()))
        .with("node_guid", ibdiag::hex(c.node_guid, 16))
        .with("system_image_guid", ibdiag::hex(c.system_guid, 16))
        .with("ports", Json::Array(ports))
}

fn ibpanic(inv: &mut Invocation<'_, '_>, msg: &str) -> CliError {
    inv.io
        .err(&format!("ibpanic: [{}] main: {msg}\n", std::process::id()));
    CliError::Exit(255)
}

/// Runs `ibstat`.
///
/// # Errors
/// Usage errors (exit 2), failures as `ibpanic` (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: &[
            Opt::new("list_of_cas", 'l', false, None, "list all IB devices"),
            Opt::new("short", 's', false, None, "short output"),
            Opt::new("port_list", 'p', false, None, "show port list"),
        ],
        exclude: "CDeGKLPsty",
        usage_args: "<ca_name> [portnum]",
        examples: &[
            "-l       # list all IB devices",
            "mthca0 2 # stat port 2 of 'mthca0'",
        ],
    };
    let p = ibdiag::parse(inv, &spec)?;
    let (list_only, short, list_ports) = (p.has('l' as i32), p.has('s' as i32), p.has('p' as i32));
    let dev_port: i64 = p.args.get(1).map_or(-1, |a| crate::cnum::c_strtol(a));
    let cas = local_cas(inv)?;
    let selected: Vec<&LocalCa> = match p.args.first() {
        Some(name) => match cas.iter().find(|c| &c.name == name) {
            Some(c) => vec![c],
            None => {
                return Err(ibpanic(
                    inv,
                    &format!("'{name}' IB device can't be found: Success"),
                ))
            }
        },
        None => cas.iter().collect(),
    };
    if p.common.json {
        let j = Json::obj()
            .with("command", Json::String("ibstat".into()))
            .with(
                "cas",
                Json::Array(selected.iter().map(|c| ca_json(c)).collect()),
            );
        ibdiag::print_json(inv, &j);
        return Ok(());
    }
    let mut out = String::new();
    if list_ports {
        for c in &selected {
            for port in &c.ports {
                if port.port_guid != 0 {
                    out.push_str(&format!("0x{:016x}\n", port.port_guid));
                }
            }
        }
        inv.io.out(&out);
        return Ok(());
    }
    for c in selected {
        if list_only {
            out.push_str(&format!("{}\n", c.name));
            continue;
        }
        if c.node_type == 0 {
            continue;
        }
        if !short && dev_port >= 0 {
            match c.port(dev_port) {
                Some(port) if dev_port <= i64::from(c.num_ports) => {
                    out.push_str(&format!("{}: '{}'\n", node_type_str(c.node_type), c.name));
                    out.push_str(&port_dump(port, true));
                }
                _ => {
                    inv.io.out(&out);
                    inv.io.err(&format!(
                        "ibwarn: [{}] ca_stat: {}: '{}' has no port number {dev_port} - max ({})\n",
                        std::process::id(),
                        node_type_str(c.node_type),
                        c.name,
                        c.num_ports
                    ));
                    return Err(ibpanic(
                        inv,
                        &format!(
                            "stat of IB device '{}' failed: No such file or directory",
                            c.name
                        ),
                    ));
                }
            }
            continue;
        }
        out.push_str(&ca_dump(c));
        if short {
            continue;
        }
        for port in &c.ports {
            out.push_str(&port_dump(port, false));
        }
    }
    inv.io.out(&out);
    Ok(())
}

fn ibstatus_usage(prog: &str) -> String {
    let prog = prog.rsplit('/').next().unwrap_or(prog);
    format!(
        "Usage:  {prog}  [-h] [devname[:portnum]]\n\t-h:\tthis help screen\n\tExamples:\n\t\t{prog} mthca1\t\t# shows status of all ports of 'mthca1'\n\t\t{prog} mthca0:2\t# shows status port number 2 of 'mthca0'\n\t\t{prog}\t\t# default: shows status of all 'mthca0' ports\n"
    )
}

fn port_status(ca: &LocalCa, p: &LocalPort) -> String {
    let sys = p.sys.clone().unwrap_or_default();
    let un = |v: Option<String>| {
        v.map_or_else(
            || "unknown".to_owned(),
            |s| s.split_whitespace().collect::<Vec<_>>().join(" "),
        )
    };
    format!(
        "Infiniband device '{}' port {} status:\n\tdefault gid:\t {}\n\tbase lid:\t {}\n\tsm lid:\t\t {}\n\tstate:\t\t {}\n\tphys state:\t {}\n\trate:\t\t {}\n\tlink_layer:\t {}\n\n",
        ca.name,
        p.num,
        un(sys.gid),
        un(sys.lid),
        un(sys.sm_lid),
        un(sys.state),
        un(sys.phys_state),
        un(sys.rate),
        sys.link_layer
            .map_or_else(|| "IB".to_owned(), |s| s.split_whitespace().collect::<Vec<_>>().join(" "))
    )
}

/// Runs `ibstatus` (`[-h] [devname[:portnum]]...`, plus `--json`).
///
/// # Errors
/// `Fatal error: ...` on stdout with exit 255, as the script does.
pub fn run_ibstatus(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let mut json = inv.session.json;
    let mut args: Vec<String> = Vec::new();
    for a in &inv.args {
        if a == "--json" {
            json = true;
        } else {
            args.push(a.clone());
        }
    }
    if args.first().map(String::as_str) == Some("-h") {
        let u = ibstatus_usage(&inv.prog);
        inv.io.out(&u);
        return Err(CliError::Exit(255));
    }
    let cas = local_cas(inv)?;
    let mut out = String::new();
    let mut chosen: Vec<Json> = Vec::new();
    let fatal = |inv: &mut Invocation<'_, '_>, out: &str, m: &str| {
        inv.io.out(out);
        inv.io.out(&format!("Fatal error:  {m}\n"));
        Err(CliError::Exit(255))
    };
    if args.is_empty() {
        if cas.is_empty() {
            return fatal(inv, &out, "No devices");
        }
        for c in &cas {
            for p in &c.ports {
                out.push_str(&port_status(c, p));
            }
            chosen.push(ca_json(c));
        }
    } else {
        for a in &args {
            let (dev, port) = match a.split_once(':') {
                Some((d, _)) => (d.to_owned(), a.rsplit(':').next().unwrap_or("").to_owned()),
                None => (a.clone(), "+".to_owned()),
            };
            let Some(c) = cas.iter().find(|c| c.name == dev) else {
                return fatal(
                    inv,
                    &out,
                    &format!(
                        "device '{dev}': sys files not found (/sys/class/infiniband/{dev}/ports)"
                    ),
                );
            };
            if port == "+" {
                for p in &c.ports {
                    out.push_str(&port_status(c, p));
                }
            } else {
                let n = port.parse::<i64>().unwrap_or(-1);
                match c.port(n) {
                    Some(p) => out.push_str(&port_status(c, p)),
                    None => {
                        let unknown = LocalPort {
                            num: 0,
                            ..LocalPort::default()
                        };
                        let s = port_status(c, &unknown).replacen(
                            " port 0 status",
                            &format!(" port {port} status"),
                            1,
                        );
                        out.push_str(&s);
                    }
                }
            }
            chosen.push(ca_json(c));
        }
    }
    if json {
        let j = Json::obj()
            .with("command", Json::String("ibstatus".into()))
            .with("cas", Json::Array(chosen));
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_libumad2sim() {
        let mut pi = PortInfo {
            link_width_active: 2,
            link_speed_active: 1,
            ..PortInfo::default()
        };
        assert_eq!(sim_rate(&pi), (10, "10 Gb/sec (4X)".into()));
        pi.link_width_active = 1;
        assert_eq!(sim_rate(&pi), (2, "2.5 Gb/sec (1X)".into()));
        pi.link_speed_active = 4;
        pi.link_width_active = 2;
        assert_eq!(sim_rate(&pi), (40, "40 Gb/sec (4X QDR)".into()));
    }

    #[test]
    fn port_dump_indents_unless_alone() {
        let p = LocalPort {
            num: 1,
            state: 4,
            phys_state: 5,
            rate: 2,
            link_layer: "IB".into(),
            ..LocalPort::default()
        };
        let s = port_dump(&p, false);
        assert!(s.starts_with(
            "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 2.5\n"
        ));
        assert!(port_dump(&p, true).starts_with("Port 1:\nState: Active\n"));
    }
}
