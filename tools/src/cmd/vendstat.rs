//! `vendstat` (infiniband-diags `vendstat.c`): Mellanox vendor-specific
//! MADs (class 0x0A, vendor range 1: data from byte 24): `-N` general
//! information (after the class's ClassPortInfo), `-w` IS3 port xmit
//! wait counters (config space reads), `-i` / `-c` IS4 counter groups,
//! `-R` / `-W` config space records. Failures print the C tool's
//! `vendstat: method M, attribute A failure` and its message; `-N` / `-w`
//! then exit through `IBEXIT`, the others exit 0 as the C tool does.
//!
//! `--json` prints `{"command":"vendstat","dest":{...},"lines":[TEXT]}`:
//! the lines the text output has.

use mad_core::wire::field::{be_u16, be_u32};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass};

use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::Session;

/// `IB_MLX_VENDOR_CLASS`.
const MLX_VENDOR_CLASS: u8 = 0x0a;
/// Vendor range 1 data offset (`IB_VENDOR_RANGE1_DATA_OFFS`).
const DATA_OFFSET: usize = 24;
const CLASS_PORT_INFO: u16 = 0x01;
const GENERAL_INFO: u16 = 0x17;
const CONFIG_SPACE_ACCESS: u16 = 0x50;
const COUNTER_GROUP_INFO: u16 = 0x90;
const CONFIG_COUNTER_GROUP: u16 = 0x91;
const PORT_XMIT_WAIT: u32 = 0x0010_013C;
const IS3_DEVICE_ID: u16 = 47396;
const MAX_RECORDS: usize = 18;

/// Device-ID ranges whose general info carries the extended firmware
/// version (`ext_fw_info_device`).
const EXT_FW_INFO_DEVICES: &[(u16, u16)] = &[
    (0x0245, 0x0245),
    (0xc738, 0xc73b),
    (0xcb20, 0xcb20),
    (0xcf08, 0xcf08),
    (0xd2f0, 0xd2f0),
    (0x01b3, 0x01b3),
    (0x1003, 0x101b),
    (0xa2d2, 0xa2d2),
    (0x1b02, 0x1b02),
    (0x1b50, 0x1b50),
    (0x1ba0, 0x1ba0),
    (0x1bd0, 0x1bd5),
    (0x1bf0, 0x1bf0),
    (0x1b33, 0x1b33),
    (0x1b73, 0x1b73),
    (0x1b40, 0x1b41),
    (0x1b60, 0x1b61),
    (0x1b83, 0x1b83),
    (0x1b93, 0x1b94),
    (0x1bb4, 0x1bb5),
    (0x1bc4, 0x1bc6),
];

const OPTS: &[Opt] = &[
    Opt::new("N", 'N', false, None, "show IS3 or IS4 general information"),
    Opt::new("w", 'w', false, None, "show IS3 port xmit wait counters"),
    Opt::new("i", 'i', false, None, "show IS4 counter group info"),
    Opt::new(
        "c",
        'c',
        true,
        Some("<num,num>"),
        "configure IS4 counter groups",
    ),
    Opt::new(
        "Read",
        'R',
        true,
        Some("<addr,mask>"),
        "Read configuration space record at addr",
    ),
    Opt::new(
        "Write",
        'W',
        true,
        Some("<addr,val,mask>"),
        "Write configuration space record at addr",
    ),
];

const EXAMPLES: &[&str] = &[
    "-N 6\t\t# read IS3 or IS4 general information",
    "-w 6\t\t# read IS3 port xmit wait counters",
    "-i 6 12\t# read IS4 port 12 counter group info",
    "-c 0,1 6 12\t# configure IS4 port 12 counter groups for PortXmitDataSL",
    "-c 2,8 6 12\t# configure IS4 port 12 counter groups for PortRcvDataSL",
];

/// `sscanf(s, "%d,%d...")` / `"%x,%x..."`: the values read before the
/// first that does not parse (each cut to 32 bits as C stores them).
fn scan_list(s: &str, hex: bool) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let t = rest.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let (neg, t) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let t = if hex {
            let lower = t.get(..2).map(str::to_ascii_lowercase);
            if lower.as_deref() == Some("0x") && t[2..].starts_with(|c: char| c.is_ascii_hexdigit())
            {
                &t[2..]
            } else {
                t
            }
        } else {
            t
        };
        let radix = if hex { 16 } else { 10 };
        let n = t.find(|c: char| !c.is_digit(radix)).unwrap_or(t.len());
        if n == 0 {
            return out;
        }
        let mut v = 0u32;
        for c in t[..n].chars() {
            v = v
                .wrapping_mul(radix)
                .wrapping_add(c.to_digit(radix).unwrap_or(0));
        }
        out.push(if neg { v.wrapping_neg() } else { v });
        match t[n..].strip_prefix(',') {
            Some(r) => rest = r,
            None => return out,
        }
    }
}

/// A config space record (`struct is3_record`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Record {
    address: u32,
    data: u32,
    mask: u32,
}

fn byte(d: &[u8], at: usize) -> u8 {
    d.get(at).copied().unwrap_or(0)
}

/// The records' data area (`is3_config_space_t`).
fn records_data(records: &[Record]) -> Vec<u8> {
    let mut d = vec![0u8; 8 + MAX_RECORDS * 12];
    for (i, r) in records.iter().take(MAX_RECORDS).enumerate() {
        let at = 8 + i * 12;
        d[at..at + 4].copy_from_slice(&r.address.to_be_bytes());
        d[at + 4..at + 8].copy_from_slice(&r.data.to_be_bytes());
        d[at + 8..at + 12].copy_from_slice(&r.mask.to_be_bytes());
    }
    d
}

fn record_at(d: &[u8], i: usize) -> Record {
    let at = 8 + i * 12;
    Record {
        address: be_u32(d, at),
        data: be_u32(d, at + 4),
        mask: be_u32(d, at + 8),
    }
}

/// The general information lines (`-N`).
fn general_info_lines(d: &[u8]) -> Vec<String> {
    let dev = be_u16(d, 10);
    let ext = EXT_FW_INFO_DEVICES
        .iter()
        .any(|(lo, hi)| (*lo..=*hi).contains(&dev));
    let (fw, sw) = if ext {
        (
            (be_u32(d, 76), be_u32(d, 80), be_u32(d, 84)),
            (byte(d, 105), byte(d, 106), byte(d, 107)),
        )
    } else {
        (
            (
                u32::from(byte(d, 41)),
                u32::from(byte(d, 42)),
                u32::from(byte(d, 43)),
            ),
            (byte(d, 77), byte(d, 78), byte(d, 79)),
        )
    };
    let psid = d.get(56..72).unwrap_or_default();
    // printf("%s") of a 16-byte array: up to its NUL (the next field's
    // bytes when it has none, as C reads on).
    let psid_end = d
        .get(56..)
        .unwrap_or_default()
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(psid.len());
    let psid = String::from_utf8_lossy(d.get(56..56 + psid_end).unwrap_or_default());
    vec![
        format!("hw_dev_rev:  0x{:04x}", be_u16(d, 8)),
        format!("hw_dev_id:   0x{dev:04x}"),
        format!("hw_uptime:   0x{:08x}", be_u32(d, 36)),
        format!(
            "fw_version:  {:02}.{:02}.{:02}",
            fw.0 as i32, fw.1 as i32, fw.2 as i32
        ),
        format!("fw_build_id: 0x{:04x}", be_u32(d, 44)),
        format!(
            "fw_date:     {:02x}/{:02x}/{:04x}",
            byte(d, 48),
            byte(d, 49),
            be_u16(d, 50)
        ),
        format!("fw_psid:     '{psid}'"),
        format!("fw_ini_ver:  {}", be_u32(d, 72) as i32),
        format!("sw_version:  {:02}.{:02}.{:02}", sw.0, sw.1, sw.2),
    ]
}

struct Ctx<'a, 'b, 'c> {
    inv: &'a mut Invocation<'b, 'c>,
    s: &'a Session,
    dest: &'a Dest,
    lines: Vec<String>,
}

impl Ctx<'_, '_, '_> {
    /// `do_vendor`: the answer's data area, or the failure said.
    fn vendor(&mut self, method: Method, attr: u16, amod: u32, data: &[u8]) -> Option<Vec<u8>> {
        let mut mad = [0u8; 256];
        Mad::new_unchecked(&mut mad[..]).set_request(
            MgmtClass(MLX_VENDOR_CLASS),
            1,
            method,
            AttributeId(attr),
            amod,
        );
        let n = data.len().min(256 - DATA_OFFSET);
        mad[DATA_OFFSET..DATA_OFFSET + n].copy_from_slice(&data[..n]);
        match self.s.gsi_rpc(self.dest.lid, mad) {
            Ok(b) => Some(b.get(DATA_OFFSET..).unwrap_or_default().to_vec()),
            Err(e) => {
                crate::diags::openib::warn_vendor_failed(self.inv, &self.dest.text.to_string(), &e);
                self.inv.io.err(&format!(
                    "vendstat: method {}, attribute {attr} failure\n",
                    method.0
                ));
                None
            }
        }
    }

    fn line(&mut self, l: String) {
        self.lines.push(l);
    }
}

/// The run's work once the destination is known; `Err` an `IBEXIT`.
fn work(c: &mut Ctx<'_, '_, '_>, o: &Options, port: u32) -> Result<(), String> {
    if o.counter_group_info {
        match c.vendor(Method::GET, COUNTER_GROUP_INFO, port, &[]) {
            Some(d) => {
                let n = byte(&d, 11);
                c.line("counter_group_info:".into());
                c.line(format!("{n} counter groups"));
                for i in 0..usize::from(n) {
                    let m = be_u32(&d, 12 + i * 4);
                    c.line(if m == 0 {
                        format!("group{i} mask 0")
                    } else {
                        format!("group{i} mask {m:#x}")
                    });
                }
            }
            None => c.inv.io.err("counter group info query failure\n"),
        }
        return Ok(());
    }
    if let Some((g0, g1)) = o.config_counter_group {
        c.line(format!(
            "counter_groups_config: configuring group0 {g0} group1 {g1}"
        ));
        let mut d = vec![0u8; 20];
        d[15] = g0 as u8;
        d[19] = g1 as u8;
        if c.vendor(Method::SET, CONFIG_COUNTER_GROUP, port, &d)
            .is_none()
        {
            c.inv.io.err("config counter group set failure\n");
        } else if c
            .vendor(Method::GET, CONFIG_COUNTER_GROUP, port, &[])
            .is_none()
        {
            c.inv.io.err("config counter group query failure\n");
        }
        return Ok(());
    }
    if !o.read.is_empty() || !o.write.is_empty() {
        for (set, recs) in [(false, &o.read), (true, &o.write)] {
            if recs.is_empty() {
                continue;
            }
            let method = if set { Method::SET } else { Method::GET };
            let amod = 2 << 22 | (recs.len() as u32) << 16;
            match c.vendor(method, CONFIG_SPACE_ACCESS, amod, &records_data(recs)) {
                Some(d) => {
                    for i in 0..recs.len() {
                        let r = record_at(&d, i);
                        c.line(format!(
                            "Config space record at 0x{:x}: 0x{:x}",
                            r.address,
                            r.data & r.mask
                        ));
                    }
                }
                None => c.inv.io.err(&format!(
                    "cannot {} config space records\n",
                    if set { "set" } else { "get" }
                )),
            }
        }
        return Ok(());
    }
    if !o.general_info && !o.xmit_wait {
        return Err("at least one of -N and -w must be specified".into());
    }
    c.vendor(Method::GET, CLASS_PORT_INFO, 0, &[])
        .ok_or("classportinfo query")?;
    let gi = c
        .vendor(Method::GET, GENERAL_INFO, 0, &[])
        .ok_or("generalinfo query")?;
    if o.general_info {
        for l in general_info_lines(&gi) {
            c.line(l);
        }
    }
    if o.xmit_wait {
        let dev = be_u16(&gi, 10);
        if dev != IS3_DEVICE_ID {
            return Err(format!("Unsupported device ID 0x{dev:x}"));
        }
        for (first, count) in [(1u32, 16usize), (17, 8)] {
            let recs: Vec<Record> = (0..count as u32)
                .map(|i| Record {
                    address: PORT_XMIT_WAIT + ((i + first) << 12),
                    ..Record::default()
                })
                .collect();
            let d = c
                .vendor(
                    Method::GET,
                    CONFIG_SPACE_ACCESS,
                    2 << 22 | (count as u32) << 16,
                    &records_data(&recs),
                )
                .ok_or("vendstat")?;
            for i in 0..count {
                let v = record_at(&d, i).data;
                if v != 0 {
                    let p = if first == 1 {
                        i + 4
                    } else if i < 4 {
                        i + 21
                    } else {
                        i - 3
                    };
                    c.line(format!("Port {p}: PortXmitWait 0x{v:x}"));
                }
            }
        }
    }
    Ok(())
}

/// What the options asked for.
#[derive(Default)]
struct Options {
    general_info: bool,
    xmit_wait: bool,
    counter_group_info: bool,
    config_counter_group: Option<(i32, i32)>,
    read: Vec<Record>,
    write: Vec<Record>,
}

/// `process_opt`: the options in order; `None` where the C tool shows
/// the usage.
fn options(p: &ibdiag::Parsed) -> Option<Options> {
    let mut o = Options::default();
    for (key, val) in &p.custom {
        let v = val.as_deref().unwrap_or("");
        match char::from_u32(*key as u32)? {
            'N' => o.general_info = true,
            'w' => o.xmit_wait = true,
            'i' => o.counter_group_info = true,
            'c' => match scan_list(v, false)[..] {
                [a, b, ..] => o.config_counter_group = Some((a as i32, b as i32)),
                _ => return None,
            },
            'R' if o.read.len() >= MAX_RECORDS => {}
            'R' => match scan_list(v, true)[..] {
                [] => return None,
                [a] => o.read.push(Record {
                    address: a,
                    data: 0,
                    mask: u32::MAX,
                }),
                [a, m, ..] => o.read.push(Record {
                    address: a,
                    data: 0,
                    mask: m,
                }),
            },
            'W' if o.write.len() >= MAX_RECORDS => {}
            'W' => match scan_list(v, true)[..] {
                [] | [_] => return None,
                [a, d] => o.write.push(Record {
                    address: a,
                    data: d,
                    mask: u32::MAX,
                }),
                [a, d, m, ..] => o.write.push(Record {
                    address: a,
                    data: d,
                    mask: m,
                }),
            },
            _ => {}
        }
    }
    Some(o)
}

/// Runs `vendstat`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DKy",
        usage_args: "<lid|guid> [port]",
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    let Some(o) = options(&p) else {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    };
    let mut port = p
        .args
        .get(1)
        .map_or(0, |a| crate::cnum::c_strtoul(a) as u32);
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = match p.args.first() {
        Some(a) => crate::diags::openib::dest(inv, session, &p.common, a)?,
        None => {
            let a = session.port_attrs();
            port = u32::from(a.port_num);
            (session, Dest::lid(a.lid))
        }
    };
    let mut c = Ctx {
        inv,
        s: &session,
        dest: &dest,
        lines: Vec::new(),
    };
    let r = work(&mut c, &o, port);
    let lines = std::mem::take(&mut c.lines);
    let close = session.close();
    if p.common.json {
        let mut j = Json::obj()
            .with("command", Json::String("vendstat".into()))
            .with("dest", ibdiag::dest_json(&dest))
            .with(
                "lines",
                Json::Array(lines.into_iter().map(Json::String).collect()),
            );
        if let Err(e) = r {
            j.push("error", Json::String(e));
            ibdiag::print_json(inv, &j);
            return Err(CliError::Exit(255));
        }
        ibdiag::print_json(inv, &j);
    } else {
        let mut out = String::new();
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
        inv.io.out(&out);
        r.map_err(CliError::IbExit)?;
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_scan_as_sscanf_does() {
        assert_eq!(scan_list("0,1", false), vec![0, 1]);
        assert_eq!(scan_list("2", false), vec![2]);
        assert_eq!(scan_list("x", false), Vec::<u32>::new());
        assert_eq!(scan_list("0x10013C,ff", true), vec![0x0010_013c, 0xff]);
        assert_eq!(scan_list("10,zz", true), vec![0x10]);
        assert_eq!(scan_list(" -1,2", false), vec![u32::MAX, 2]);
    }

    #[test]
    fn general_info_reads_is3_and_extended_layouts() {
        let mut d = vec![0u8; 232];
        d[10..12].copy_from_slice(&0xcb20u16.to_be_bytes());
        d[76..80].copy_from_slice(&11u32.to_be_bytes());
        d[80..84].copy_from_slice(&2000u32.to_be_bytes());
        d[84..88].copy_from_slice(&1010u32.to_be_bytes());
        d[56..60].copy_from_slice(b"MT_1");
        let l = general_info_lines(&d);
        assert_eq!(l[1], "hw_dev_id:   0xcb20");
        assert_eq!(l[3], "fw_version:  11.2000.1010");
        assert_eq!(l[6], "fw_psid:     'MT_1'");
        d[10..12].copy_from_slice(&IS3_DEVICE_ID.to_be_bytes());
        d[41] = 7;
        assert_eq!(general_info_lines(&d)[3], "fw_version:  07.00.00");
    }
}
