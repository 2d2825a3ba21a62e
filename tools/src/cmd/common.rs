//! What infiniband-diags' `ibdiag_common.c` does for every tool, for our
//! commands: option parsing (`getopt_long` with the common options and
//! a tool's own, the same usage text), `IBEXIT`, destination resolution
//! (`resolve_portid_str`: LID, directed route, GUID through the SA,
//! combined route), and opening the session.
//!
//! Every tool also takes `--json` (not listed in the usage text, which
//! stays byte-identical to infiniband-diags').

use std::time::Duration;

use mad_agents::smp::SmpTarget;
use mad_agents::QueryError;
use mad_core::wire::smp::DrPath;
use mad_core::wire::{FieldValue, Fields};

use crate::cli::{CliError, Invocation};
use crate::diags::dump::c_strtol;
use crate::diags::PortIdText;
use crate::json::{Json, JsonExt};
use crate::session::{Session, SessionOpts};

/// Where an option's value goes: a letter, or a small number for
/// long-only options (as `struct ibdiag_opt.letter`).
pub type OptKey = i32;

/// The key `--json` is reported under.
pub const JSON_KEY: OptKey = 1000;

/// One option (`struct ibdiag_opt`).
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// Long name.
    pub name: &'static str,
    /// Letter (as `i32`), or a number below 32 for long-only options.
    pub key: OptKey,
    /// Takes a value.
    pub has_arg: bool,
    /// Value placeholder in the usage text (`<val>` when `None`).
    pub arg_tmpl: Option<&'static str>,
    /// Description in the usage text.
    pub desc: &'static str,
}

impl Opt {
    /// An option with a letter.
    #[must_use]
    pub const fn new(
        name: &'static str,
        letter: char,
        has_arg: bool,
        arg_tmpl: Option<&'static str>,
        desc: &'static str,
    ) -> Self {
        Self {
            name,
            key: letter as i32,
            has_arg,
            arg_tmpl,
            desc,
        }
    }

    /// A long-only option.
    #[must_use]
    pub const fn long(
        name: &'static str,
        key: OptKey,
        has_arg: bool,
        arg_tmpl: Option<&'static str>,
        desc: &'static str,
    ) -> Self {
        Self {
            name,
            key,
            has_arg,
            arg_tmpl,
            desc,
        }
    }

    fn letter(&self) -> Option<char> {
        u8::try_from(self.key)
            .ok()
            .filter(|b| b.is_ascii_graphic())
            .map(char::from)
    }
}

/// The options every tool has (`common_opts`).
pub const COMMON_OPTS: &[Opt] = &[
    Opt::new(
        "config",
        'z',
        true,
        Some("<config>"),
        "use config file, default: /etc/infiniband-diags/ibdiag.conf",
    ),
    Opt::new("Ca", 'C', true, Some("<ca>"), "Ca name to use"),
    Opt::new("Port", 'P', true, Some("<port>"), "Ca port number to use"),
    Opt::new("Direct", 'D', false, None, "use Direct address argument"),
    Opt::new("Lid", 'L', false, None, "use LID address argument"),
    Opt::new("Guid", 'G', false, None, "use GUID address argument"),
    Opt::new("timeout", 't', true, Some("<ms>"), "timeout in ms"),
    Opt::new("sm_port", 's', true, Some("<lid>"), "SM port lid"),
    Opt::new(
        "show_keys",
        'K',
        false,
        None,
        "display security keys in output",
    ),
    Opt::new("m_key", 'y', true, Some("<key>"), "M_Key to use in request"),
    Opt::new("errors", 'e', false, None, "show send and receive errors"),
    Opt::new("verbose", 'v', false, None, "increase verbosity level"),
    Opt::new("debug", 'd', false, None, "raise debug level"),
    Opt::new("help", 'h', false, None, "help message"),
    Opt::new("version", 'V', false, None, "show version"),
];

/// The infiniband-diags release whose tools' options, output and exit
/// statuses the commands reproduce.
pub const DIAGS_VERSION: &str = "44.0";

/// The default config file infiniband-diags reads.
pub const DEFAULT_CONFIG: &str = "/etc/infiniband-diags/ibdiag.conf";

/// A tool's command-line description.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec<'a> {
    /// The tool's own options, listed before the common ones.
    pub opts: &'a [Opt],
    /// Letters of common options the tool leaves out.
    pub exclude: &'a str,
    /// The argument synopsis after `[options]`.
    pub usage_args: &'a str,
    /// Usage examples (printed as `  PROG EXAMPLE`).
    pub examples: &'a [&'a str],
}

/// How the destination argument is read (`enum MAD_DEST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DestType {
    /// A LID (the default).
    #[default]
    Lid,
    /// A directed route `0,1,3`.
    DrPath,
    /// A port GUID, resolved through the SA.
    Guid,
    /// A combined route: `LID PATH` (smpquery `-c`).
    DrSlid,
}

/// The common options' values (`ibd_*` globals).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Common {
    /// `-D` / `-L` / `-G` (or a tool's own).
    pub dest_type: DestType,
    /// `-C`.
    pub ca: Option<String>,
    /// `-P`.
    pub port: Option<u32>,
    /// `-t` in milliseconds.
    pub timeout_ms: Option<u32>,
    /// `-s`: the SM's LID.
    pub sm_lid: Option<u16>,
    /// `-K`.
    pub show_keys: bool,
    /// `-y`.
    pub m_key: u64,
    /// `-v` count.
    pub verbose: u32,
    /// `-d` count.
    pub debug: u32,
    /// `-e`.
    pub errors: bool,
    /// `--json`.
    pub json: bool,
}

/// A parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The common options.
    pub common: Common,
    /// The tool's own options in command-line order, with their values.
    pub custom: Vec<(OptKey, Option<String>)>,
    /// The non-option arguments, in order (options permuted out, as GNU
    /// getopt does).
    pub args: Vec<String>,
}

impl Parsed {
    /// True if the tool's option `key` was given.
    #[must_use]
    pub fn has(&self, key: OptKey) -> bool {
        self.custom.iter().any(|(k, _)| *k == key)
    }
}

/// `pretty_print`: word-wraps `s` from column `start` to `width`.
fn pretty_print(out: &mut String, start: usize, width: usize, s: &str) {
    let len = width.saturating_sub(start) as isize;
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
        let b = rest.as_bytes();
        // Find the last space before `len` (at least one word).
        let mut e: usize;
        let mut p: Option<usize> = Some(0);
        loop {
            e = p.map_or(0, |x| x + 1);
            p = b
                .get(e..)
                .and_then(|t| t.iter().position(|c| *c == b' '))
                .map(|i| i + e);
            match p {
                Some(x) if (x as isize) < len => continue,
                _ => break,
            }
        }
        let Some(pp) = p else {
            out.push_str(rest);
            break;
        };
        if e == 1 {
            e = pp;
        }
        out.push_str(&rest[..e]);
        out.push('\n');
        out.push_str(&" ".repeat(start));
        rest = &rest[e..];
    }
}

fn long_opts<'a>(spec: &ToolSpec<'a>) -> Vec<&'a Opt> {
    let mut v: Vec<&Opt> = spec.opts.iter().collect();
    for o in COMMON_OPTS {
        if o.letter().is_some_and(|c| spec.exclude.contains(c)) {
            continue;
        }
        v.push(o);
    }
    v
}

/// `ibdiag_show_usage`'s text for `prog`.
#[must_use]
pub fn usage_text(prog: &str, spec: &ToolSpec<'_>) -> String {
    let mut s = format!("\nUsage: {prog} [options] {}\n\n", spec.usage_args);
    let opts = long_opts(spec);
    if !opts.is_empty() {
        s.push_str("Options:\n");
    }
    // The first option registered for a key describes it (opts_map).
    let mut seen: Vec<OptKey> = Vec::new();
    for o in &opts {
        let io = opts.iter().find(|x| x.key == o.key).copied().unwrap_or(o);
        let _ = seen.contains(&o.key);
        seen.push(o.key);
        let mut line = format!("  --{}", io.name);
        if let Some(c) = io.letter() {
            line.push_str(&format!(", -{c}"));
        }
        if io.has_arg {
            line.push(' ');
            line.push_str(io.arg_tmpl.unwrap_or("<val>"));
        }
        if !io.desc.is_empty() {
            let n = line.len();
            let pad = 24usize.saturating_sub(n);
            line.push_str(&" ".repeat(pad));
            line.push_str("  ");
            let n = line.len();
            s.push_str(&line);
            pretty_print(&mut s, n, 74, io.desc);
        } else {
            s.push_str(&line);
        }
        s.push('\n');
    }
    if !spec.examples.is_empty() {
        s.push_str("\nExamples:\n");
        for e in spec.examples {
            s.push_str(&format!("  {prog} {e}\n"));
        }
    }
    s.push('\n');
    s
}

/// The usage error: `complaint` (getopt's, may be empty) then the usage.
fn usage_error(prog: &str, spec: &ToolSpec<'_>, complaint: &str) -> CliError {
    CliError::ToolUsage(format!("{complaint}{}", usage_text(prog, spec)))
}

/// C `strtoul(s, NULL, 0)`: like [`c_strtol`], a leading `-` negating
/// modulo 2^64.
#[must_use]
pub fn c_strtoul(s: &str) -> u64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if (body.starts_with("0x") || body.starts_with("0X"))
        && body[2..].starts_with(|c: char| c.is_ascii_hexdigit())
    {
        (16u64, &body[2..])
    } else if body.starts_with('0') {
        (8, body)
    } else {
        (10, body)
    };
    let mut v: u64 = 0;
    let mut overflow = false;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix as u32) else {
            break;
        };
        match v
            .checked_mul(radix)
            .and_then(|x| x.checked_add(u64::from(d)))
        {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        return u64::MAX;
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// C `strtoul` with an end check: the value if all of `s` parsed.
#[must_use]
pub fn c_strtoul_full(s: &str) -> Option<u64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let digits_ok = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit())
    } else if body.starts_with('0') {
        body.chars().all(|c| ('0'..='7').contains(&c))
    } else {
        !body.is_empty() && body.chars().all(|c| c.is_ascii_digit())
    };
    digits_ok.then(|| c_strtoul(s))
}

/// C `atoi`: decimal, leading blanks and sign, stops at the first
/// non-digit, 0 when nothing parses (wrapping like a 32-bit int).
#[must_use]
pub fn c_atoi(s: &str) -> i32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for c in body.chars() {
        let Some(d) = c.to_digit(10) else { break };
        v = v.saturating_mul(10).saturating_add(i64::from(d));
    }
    let v = if neg { -v } else { v };
    v as i32
}

/// `-P` as `strtoul(optarg, NULL, 0)` into an int.
#[must_use]
pub fn parse_port_arg(s: &str) -> u32 {
    c_strtoul(s) as u32
}

fn find_long<'a>(opts: &[&'a Opt], name: &str) -> Result<&'a Opt, (bool, Vec<&'a Opt>)> {
    if let Some(o) = opts.iter().find(|o| o.name == name) {
        return Ok(o);
    }
    let cands: Vec<&Opt> = opts
        .iter()
        .filter(|o| o.name.starts_with(name))
        .copied()
        .collect();
    // Candidates that are the same option (same key) count once.
    let first = cands.first().copied();
    match first {
        Some(f)
            if cands
                .iter()
                .all(|c| c.key == f.key && c.has_arg == f.has_arg) =>
        {
            Ok(f)
        }
        Some(_) => Err((true, cands)),
        None => Err((false, Vec::new())),
    }
}

/// Reads a config file (`read_ibdiag_config`): `CA=`, `Port=`,
/// `timeout=`, `m_key=`; a missing file is ignored.
fn read_config(path: &str, c: &mut Common) {
    let Ok(text) =
        crate::limits::read_text(path, crate::limits::MAX_CONFIG_FILE_LEN, "a config file")
    else {
        return;
    };
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, val)) = line.split_once('=') else {
            continue;
        };
        if name.starts_with("CA") {
            c.ca = Some(val.to_owned());
        } else if name.starts_with("Port") {
            c.port = Some(c_strtoul(val) as u32);
        } else if name.starts_with("timeout") {
            c.timeout_ms = Some(c_strtoul(val) as u32);
        } else if name.starts_with("m_key") {
            c.m_key = c_strtoul(val);
        }
    }
}

/// `getopt_long` over `inv.args` with `spec`'s options and the common
/// ones, then the common options' effects (`process_opt`).
///
/// # Errors
/// A bad option (getopt's complaint and the usage, exit 2), `-h` (the
/// usage), `-V` (the version on stderr, exit 0), a bad `-t` or `-y`
/// (`IBEXIT`).
pub fn parse(inv: &mut Invocation<'_, '_>, spec: &ToolSpec<'_>) -> Result<Parsed, CliError> {
    let prog = inv.prog.clone();
    if inv
        .args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
    {
        // Known before any complaint about the other options, so that
        // a usage error is reported as JSON too.
        inv.session.json = true;
    }
    let mut opts = long_opts(spec);
    let json_opt = Opt::long("json", JSON_KEY, false, None, "");
    opts.push(&json_opt);
    let mut p = Parsed::default();
    read_config(DEFAULT_CONFIG, &mut p.common);
    let mut items: Vec<(OptKey, Option<String>)> = Vec::new();
    let args = inv.args.clone();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            p.args.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, val) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let o = match find_long(&opts, name) {
                Ok(o) => o,
                Err((true, cands)) => {
                    let list: Vec<String> =
                        cands.iter().map(|c| format!("'--{}'", c.name)).collect();
                    return Err(usage_error(
                        &prog,
                        spec,
                        &format!(
                            "{prog}: option '--{name}' is ambiguous; possibilities: {}\n",
                            list.join(" ")
                        ),
                    ));
                }
                Err((false, _)) => {
                    return Err(usage_error(
                        &prog,
                        spec,
                        &format!("{prog}: unrecognized option '--{name}'\n"),
                    ))
                }
            };
            if o.has_arg {
                let v = match val {
                    Some(v) => v,
                    None => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            v.clone()
                        }
                        None => {
                            return Err(usage_error(
                                &prog,
                                spec,
                                &format!("{prog}: option '--{}' requires an argument\n", o.name),
                            ))
                        }
                    },
                };
                items.push((o.key, Some(v)));
            } else {
                if val.is_some() {
                    return Err(usage_error(
                        &prog,
                        spec,
                        &format!("{prog}: option '--{}' doesn't allow an argument\n", o.name),
                    ));
                }
                items.push((o.key, None));
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(o) = opts.iter().find(|o| o.letter() == Some(c)) else {
                    return Err(usage_error(
                        &prog,
                        spec,
                        &format!("{prog}: invalid option -- '{c}'\n"),
                    ));
                };
                if o.has_arg {
                    let v: String = if k < chars.len() {
                        let v = chars[k..].iter().collect();
                        k = chars.len();
                        v
                    } else {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            None => {
                                return Err(usage_error(
                                    &prog,
                                    spec,
                                    &format!("{prog}: option requires an argument -- '{c}'\n"),
                                ))
                            }
                        }
                    };
                    items.push((o.key, Some(v)));
                } else {
                    items.push((o.key, None));
                }
            }
            continue;
        }
        p.args.push(a.clone());
    }
    let own: Vec<OptKey> = spec.opts.iter().map(|o| o.key).collect();
    for (key, val) in items {
        if own.contains(&key) {
            p.custom.push((key, val));
            continue;
        }
        common_opt(&prog, spec, &mut p.common, key, val.as_deref())?;
    }
    p.common.json |= inv.session.json;
    inv.session.json = p.common.json;
    Ok(p)
}

fn common_opt(
    prog: &str,
    spec: &ToolSpec<'_>,
    c: &mut Common,
    key: OptKey,
    val: Option<&str>,
) -> Result<(), CliError> {
    let v = val.unwrap_or("");
    match u8::try_from(key).map(char::from).unwrap_or('\0') {
        'z' => read_config(v, c),
        'h' => return Err(usage_error(prog, spec, "")),
        'V' => {
            return Err(CliError::Stderr(
                format!(
                "{prog} BUILD VERSION: madstack {} (matches infiniband-diags {DIAGS_VERSION})\n",
                crate::json::VERSION
            ),
                0,
            ))
        }
        'e' => c.errors = true,
        'v' => c.verbose += 1,
        'd' => c.debug += 1,
        'C' => c.ca = Some(v.to_owned()),
        'P' => c.port = Some(parse_port_arg(v)),
        'D' => c.dest_type = DestType::DrPath,
        'L' => c.dest_type = DestType::Lid,
        'G' => c.dest_type = DestType::Guid,
        't' => {
            let ok = c_strtoul_full(v)
                .filter(|_| !v.trim_start().starts_with('-'))
                .filter(|n| *n > 0 && *n <= i32::MAX as u64);
            match ok {
                Some(n) => c.timeout_ms = Some(n as u32),
                None => {
                    return Err(CliError::IbExit(format!(
                        "Invalid timeout \"{v}\".  Timeout requires a positive integer value < {}.",
                        i32::MAX
                    )))
                }
            }
        }
        's' => {
            let lid = c_strtol(v);
            if !(1..=0xBFFF).contains(&lid) {
                return Err(CliError::IbExit(format!(
                    "cannot resolve SM destination port {v}"
                )));
            }
            c.sm_lid = Some(lid as u16);
        }
        'K' => c.show_keys = true,
        'y' => match c_strtoul_full(v) {
            Some(k) => c.m_key = k,
            None => return Err(CliError::IbExit("Bad M_Key".into())),
        },
        _ if key == JSON_KEY => c.json = true,
        _ => return Err(usage_error(prog, spec, "")),
    }
    Ok(())
}

/// Opens the session for a tool: the global options with the tool's
/// `-C` / `-P`, `-t` and `-y` applied.
///
/// # Errors
/// `IBEXIT("Failed to open ...")` after a message saying why on stderr
/// (for no device at all: which flags to use).
pub fn open_session(inv: &mut Invocation<'_, '_>, common: &Common) -> Result<Session, CliError> {
    let mut opts: SessionOpts = inv.session.clone();
    if common.ca.is_some() {
        opts.ca.clone_from(&common.ca);
    }
    if common.port.is_some() {
        opts.port = common.port;
    }
    match Session::open(&opts) {
        Ok(mut s) => {
            if let Some(ms) = common.timeout_ms {
                s.set_timeout(Duration::from_millis(u64::from(ms)));
            }
            s.set_m_key(common.m_key);
            if common.verbose > 0 {
                inv.io.err(&format!("# {}\n", s.describe()));
            }
            Ok(s)
        }
        // A real port the user named: libibmad's words (after ours on
        // stderr saying why). Otherwise the reason itself is the error:
        // no "(null)" CA that nobody named.
        Err(e) if opts.ca.is_some() => {
            inv.io.err(&format!("{}: {}\n", inv.prog, e.message));
            Err(CliError::IbExit(format!(
                "Failed to open '{}' port '{}'",
                opts.ca.as_deref().unwrap_or("(null)"),
                opts.port.unwrap_or(0)
            )))
        }
        Err(e) => Err(CliError::IbExit(format!(
            "Failed to open a port: {}",
            e.message
        ))),
    }
}

/// A resolved destination (`ib_portid_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    /// As `portid2str` prints it.
    pub text: PortIdText,
    /// Where SMPs go.
    pub target: SmpTarget,
    /// The LID (0 for a directed route).
    pub lid: u16,
}

impl Dest {
    /// A LID-routed destination.
    #[must_use]
    pub fn lid(lid: u16) -> Self {
        Self {
            text: PortIdText::lid(lid),
            target: SmpTarget::Lid(lid),
            lid,
        }
    }

    /// A directed route given as libibmad's `p[0..=cnt]` (p[0] is not a
    /// hop); `None` beyond 63 hops.
    #[must_use]
    pub fn dr(path: &[u8]) -> Option<Self> {
        let hops = path.get(1..).unwrap_or(&[]);
        let dr = DrPath::from_hops(hops).ok()?;
        Some(Self {
            text: PortIdText::dr(path),
            target: SmpTarget::Dr(dr),
            lid: 0,
        })
    }

    /// The directed route one hop further, out of `port`
    /// (`drpath.cnt++; p[cnt] = port`); from a LID, a route starting
    /// LID-routed at our own LID is not supported by the transports, so
    /// the result is `None` there.
    #[must_use]
    pub fn extend(&self, port: u8) -> Option<Self> {
        if self.lid != 0 {
            return None;
        }
        let mut p = self.text.path.clone();
        if p.is_empty() {
            p.push(0);
        }
        p.push(port);
        Self::dr(&p)
    }
}

/// libibmad's `str2drpath`: comma-separated `atoi` values; `None` for an
/// empty string (count -1) or a path too long for an SMP.
#[must_use]
pub fn str2drpath(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() {
        return None;
    }
    let mut v = Vec::new();
    let mut rest = s;
    loop {
        let (head, tail) = match rest.split_once(',') {
            Some((h, t)) => (h, Some(t)),
            None => (rest, None),
        };
        v.push(c_atoi(head) as u8);
        match tail {
            Some(t) if !t.is_empty() => rest = t,
            _ => break,
        }
    }
    (v.len() <= 64).then_some(v)
}

/// `resolve_portid_str`: the destination `addr` read as `dest_type`.
/// `None` where the C function returns -1 ("can't resolve destination
/// port").
pub fn resolve_dest(
    session: &mut Session,
    common: &Common,
    addr: &str,
    dest_type: DestType,
) -> Option<Dest> {
    match dest_type {
        DestType::Lid => {
            let lid = c_strtol(addr);
            (1..=0xBFFF).contains(&lid).then(|| Dest::lid(lid as u16))
        }
        DestType::DrPath => Dest::dr(&str2drpath(addr)?),
        DestType::Guid => {
            let guid = c_strtoul(addr);
            if guid == 0 {
                return None;
            }
            resolve_guid(session, common, guid).map(Dest::lid)
        }
        DestType::DrSlid => {
            let lid = c_strtol(addr);
            if !(1..=0xBFFF).contains(&lid) {
                return None;
            }
            // The route part follows the LID after one separator.
            let digits = addr
                .trim_start()
                .trim_start_matches(['+', '-'])
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(addr.len());
            let route = addr.get(digits + 1..).unwrap_or("");
            let path = str2drpath(route)?;
            let self_lid = session.port_attrs().lid;
            let hops = path.get(1..).unwrap_or(&[]);
            let dr = DrPath::from_hops(hops).ok()?.with_lids(self_lid, 0xFFFF);
            Some(Dest {
                text: PortIdText {
                    lid: lid as u16,
                    gid: None,
                    drslid: self_lid,
                    drdlid: 0xFFFF,
                    path,
                },
                target: SmpTarget::Dr(dr),
                lid: lid as u16,
            })
        }
    }
}

/// The LID of the port with GUID `guid`, from a PathRecord the SA gives
/// for our GID to its GID (`resolve_guid`).
pub fn resolve_guid(session: &mut Session, _common: &Common, guid: u64) -> Option<u16> {
    let a = session.port_attrs();
    let prefix = if a.gid_prefix != 0 {
        a.gid_prefix
    } else {
        0xfe80_0000_0000_0000
    };
    let gid = |g: u64| {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&prefix.to_be_bytes());
        b[8..].copy_from_slice(&g.to_be_bytes());
        b
    };
    let sgid = gid(a.port_guid);
    let dgid = gid(guid);
    let sa = session.sa().ok()?;
    // ib_path_query_via: a PathRecord Get by SGID and DGID.
    let t = mad_core::wire::sa_records::PathRecord {
        sgid,
        dgid,
        ..Default::default()
    };
    let mask = mad_core::wire::sa_records::PathRecord::COMP_SGID
        | mad_core::wire::sa_records::PathRecord::COMP_DGID;
    let pr = match sa.get(&t, mask) {
        Ok(pr) => pr,
        Err(e) => {
            if std::env::var_os("MAD_DEBUG").is_some() {
                eprintln!("resolve_guid: {e}");
            }
            return None;
        }
    };
    (pr.dlid != 0).then_some(pr.dlid)
}

/// A Get of an SMP attribute at `d`. A combined route (a LID with a
/// directed-route part) goes LID-routed to `d.lid`, where the directed
/// part starts, as libibmad sends it.
///
/// # Errors
/// See [`QueryError`].
pub fn smp_get<R: mad_core::wire::Repr>(
    s: &Session,
    d: &Dest,
    attr: mad_core::wire::AttributeId,
    attr_mod: u32,
) -> Result<R, QueryError> {
    match &d.target {
        SmpTarget::Dr(path) if d.lid != 0 => {
            let c = s.smp();
            let mut req = mad_agents::smp::request(
                &d.target,
                mad_core::wire::Method::GET,
                attr,
                attr_mod,
                &[],
                c.m_key,
            )
            .expect_response(c.timeout, c.retries);
            req.dest.lid = d.lid;
            let _ = path;
            let done = c.agent().send_and_wait(req)?;
            mad_agents::smp::parse(&done, attr)
        }
        t => s.smp().get(t, attr, attr_mod),
    }
}

/// The `ibwarn` line libibmad prints on stderr when a query gets no
/// answer (`_do_madrpc failed; dport (...)`).
#[must_use]
pub fn rpc_failed_warning(dest: &PortIdText) -> String {
    format!(
        "ibwarn: [{}] mad_rpc: _do_madrpc failed; dport ({dest})\n",
        std::process::id()
    )
}

/// Prints libibmad's warning for a failed query (a timeout or transport
/// failure; a status answer prints nothing there).
pub fn warn_failed(inv: &mut Invocation<'_, '_>, dest: &PortIdText, e: &QueryError) {
    match e {
        QueryError::Status { .. } | QueryError::Malformed(_) => {}
        _ => inv.io.err(&rpc_failed_warning(dest)),
    }
}

/// The JSON object of an attribute: its fields by their snake-case
/// names, in wire order, reserved fields left out; integers up to 32 bits
/// as numbers, wider ones (GUIDs, keys, 64-bit counters) as `"0x…"`
/// strings ([`crate::json::uint_field`]), text fields (descriptions,
/// names) as text, other byte strings as hex text, arrays as arrays.
#[must_use]
pub fn attr_json(f: &dyn Fields) -> Json {
    let mut o = Json::obj();
    for (i, desc) in f.field_descs().iter().enumerate() {
        if desc.is_reserved() {
            continue;
        }
        let Some(value) = f.field_value(i) else {
            continue;
        };
        let j = match value {
            FieldValue::Uint(v) => crate::json::uint_field(desc.bit_len, v),
            FieldValue::Bytes(b) if desc.name.contains("desc") || desc.name.ends_with("name") => {
                // Text (a node description, a service name): up to the
                // first NUL, other bytes as the replacement character.
                let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
                Json::String(String::from_utf8_lossy(&b[..end]).into_owned())
            }
            FieldValue::Bytes(b) => Json::String(b.iter().map(|x| format!("{x:02x}")).collect()),
            FieldValue::Array(a) => {
                let bits = match desc.kind {
                    mad_core::wire::FieldKind::Array { elem_bits, .. } => elem_bits,
                    _ => 64,
                };
                Json::Array(
                    a.into_iter()
                        .map(|x| crate::json::uint_field(bits, x))
                        .collect(),
                )
            }
            FieldValue::Nested(n) => attr_json(n),
        };
        o.push(desc.name, j);
    }
    o
}

/// [`attr_json`] of a PortInfo, the M_Key left out unless `show_keys`
/// (as the text does).
#[must_use]
pub fn portinfo_json(pi: &mad_core::wire::attr::PortInfo, show_keys: bool) -> Json {
    let j = attr_json(pi);
    match j {
        Json::Object(mut v) if !show_keys => {
            v.shift_remove("m_key");
            Json::Object(v)
        }
        other => other,
    }
}

/// Sets the command's JSON result: the dispatcher prints it in the
/// envelope of [`crate::json::Envelope`] (`command`, `version`,
/// `complete`, the error if the command fails) once the command returns.
pub fn print_json(inv: &mut Invocation<'_, '_>, json: &Json) {
    inv.session.json = true;
    inv.json_body = Some(json.clone());
}

/// Marks the command's JSON result incomplete (`complete: false`, and
/// `missing: [{"what", "count", "items"}]`) and returns the error that
/// says so on stderr and exits with [`crate::cli::EXIT_INCOMPLETE`].
/// Call after [`print_json`] (without `--json` only the error matters).
pub fn incomplete(
    inv: &mut Invocation<'_, '_>,
    what: &str,
    count: Option<u64>,
    items: Vec<String>,
    message: String,
) -> CliError {
    if let Some(Json::Object(body)) = &mut inv.json_body {
        let m = crate::json::Missing {
            what: what.to_owned(),
            count,
            items,
        };
        body.insert("complete".into(), Json::Bool(false));
        body.insert(
            "missing".into(),
            Json::Array(vec![serde_json::to_value(m).unwrap_or(Json::Null)]),
        );
    }
    CliError::Incomplete(message)
}

/// A duration as a person reads it: `0.479 ms`, `15.204 s`.
#[must_use]
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.3} ms", s * 1000.0)
    } else {
        format!("{s:.3} s")
    }
}

/// A hex string `0x...` of `v` with `digits` digits (the JSON form of
/// GUIDs and masks).
#[must_use]
pub fn hex(v: u64, digits: usize) -> Json {
    Json::String(format!("0x{v:0digits$x}"))
}

/// The JSON form of a destination: `{"lid":N}` or `{"dr_path":[...]}`.
#[must_use]
pub fn dest_json(d: &Dest) -> Json {
    let mut j = Json::obj();
    if d.text.lid != 0 {
        j.push("lid", Json::from(u64::from(d.text.lid)));
    }
    if !d.text.path.is_empty() {
        j.push(
            "dr_path",
            Json::Array(
                d.text
                    .path
                    .iter()
                    .map(|p| Json::from(u64::from(*p)))
                    .collect(),
            ),
        );
    }
    j.push("text", Json::String(d.text.to_string()));
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strto_helpers_follow_c() {
        assert_eq!(c_strtoul("0x10"), 16);
        assert_eq!(c_strtoul("010"), 8);
        assert_eq!(c_strtoul("12abc"), 12);
        assert_eq!(c_strtoul("-1"), u64::MAX);
        assert_eq!(c_strtoul("zz"), 0);
        assert_eq!(c_strtoul_full("12abc"), None);
        assert_eq!(c_strtoul_full("0x1f"), Some(31));
        assert_eq!(c_atoi("0x5"), 0);
        assert_eq!(c_atoi(" 7,"), 7);
        assert_eq!(c_atoi("300") as u8, 44);
    }

    #[test]
    fn drpath_parsing_is_str2drpath() {
        assert_eq!(str2drpath("0,1,3"), Some(vec![0, 1, 3]));
        assert_eq!(str2drpath("0,"), Some(vec![0]));
        assert_eq!(str2drpath("0,x"), Some(vec![0, 0]));
        assert_eq!(str2drpath(""), None);
        let long = vec!["1"; 65].join(",");
        assert_eq!(str2drpath(&long), None);
    }

    #[test]
    fn usage_text_matches_ibdiag_show_usage_layout() {
        let spec = ToolSpec {
            opts: &[Opt::new(
                "extended",
                'x',
                false,
                None,
                "use extended speeds",
            )],
            exclude: "",
            usage_args: "<op>",
            examples: &["-x 1\t# example"],
        };
        let u = usage_text("smpquery", &spec);
        assert!(u.starts_with("\nUsage: smpquery [options] <op>\n\nOptions:\n"));
        assert!(u.contains("  --extended, -x          use extended speeds\n"));
        assert!(u.contains(
            "  --config, -z <config>   use config file, default: /etc/infiniband-diags/ibdiag.conf\n"
        ));
        assert!(u.ends_with("\nExamples:\n  smpquery -x 1\t# example\n\n"));
    }

    #[test]
    fn pretty_print_wraps_at_column_74() {
        let mut s = String::new();
        pretty_print(
            &mut s,
            26,
            74,
            "one two three four five six seven eight nine ten eleven twelve thirteen",
        );
        assert_eq!(
            s,
            format!(
                "one two three four five six seven eight nine \n{}ten eleven twelve thirteen",
                " ".repeat(26)
            )
        );
    }
}
