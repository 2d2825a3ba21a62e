//! The parser: ibsim's reading of a topology file, line by line, with its
//! directives (`switchguid`, `module`, `include`, ...) and size limits.
//! Node records are read in [`node`], the connect pass is in [`connect`],
//! and ibsim's C-style number and text scanning in [`scan`].

mod connect;
mod node;
pub(super) mod scan;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::cnum::{self, atoi, strtoul};
use super::*;
use scan::{quoted, range_text, signed};

/// A port line waiting for the connect pass.
#[derive(Debug, Clone)]
struct PendingLink {
    remote: String,
    remote_port: i64,
}

pub(super) struct Parser {
    nodes: Vec<TopoNode>,
    pending: Vec<Vec<Option<PendingLink>>>,
    by_id: HashMap<String, usize>,
    node_guids: HashMap<u64, usize>,
    prefix: String,
    guids: [u64; 3],
    absguids: [u64; 3],
    vendid: u32,
    devid: u16,
    sysimgguid: u64,
    width: u8,
    speed: u8,
    speed_ext: u8,
    /// `(file, line)` of the includes being parsed, outermost first.
    stack: Vec<(String, usize)>,
    includes: HashSet<PathBuf>,
    limits: TopologyLimits,
    /// Bytes and lines of every file read so far.
    bytes_read: u64,
    lines_read: usize,
}

/// Line keywords ibsim acts on at the top level (a line starting with one
/// of these is not ignored): the node keywords, then the directives.
pub const DIRECTIVES: &[&str] = &[
    "Switch",
    "Hca",
    "Ca",
    "Rt",
    "switchguid",
    "hcaguids",
    "caguid",
    "rtguid",
    "vendid",
    "devid",
    "sysimgguid",
    "width",
    "speed",
    "extspeed",
    "module",
    "include",
    "pdebug",
    "do",
];

type PResult<T> = Result<T, TopologyError>;

impl Parser {
    pub(super) fn new(limits: TopologyLimits) -> Self {
        Self {
            limits,
            bytes_read: 0,
            lines_read: 0,
            nodes: Vec::new(),
            pending: Vec::new(),
            by_id: HashMap::new(),
            node_guids: HashMap::new(),
            prefix: String::new(),
            guids: [GUID_BASE_CA, GUID_BASE_SWITCH, GUID_BASE_ROUTER],
            absguids: [GUID_BASE_CA, GUID_BASE_SWITCH, GUID_BASE_ROUTER],
            vendid: 0,
            devid: 0,
            sysimgguid: 0,
            width: width::W4X,
            speed: speed::SDR,
            speed_ext: 0,
            stack: Vec::new(),
            includes: HashSet::new(),
        }
    }

    fn loc(&self, file: &str, line: usize) -> Location {
        Location {
            file: file.to_owned(),
            line,
            included_from: self.stack.clone(),
        }
    }

    fn err(&self, file: &str, line: usize, kind: ErrorKind) -> TopologyError {
        TopologyError {
            location: Box::new(self.loc(file, line)),
            kind,
        }
    }

    /// Counts `n` more bytes against [`TopologyLimits::max_bytes`].
    pub(super) fn take_bytes(&mut self, n: u64, file: &str) -> PResult<()> {
        self.bytes_read = self.bytes_read.saturating_add(n);
        if self.bytes_read > self.limits.max_bytes {
            return Err(self.err(
                file,
                0,
                ErrorKind::TooLarge {
                    file: file.to_owned(),
                    what: "bytes",
                    limit: self.limits.max_bytes,
                },
            ));
        }
        Ok(())
    }

    /// Reads `path` with what is left of the byte limit, and counts it.
    pub(super) fn read_file(&mut self, path: &Path, label: &str) -> Result<Vec<u8>, ErrorKind> {
        let left = self.limits.max_bytes.saturating_sub(self.bytes_read);
        let mut bytes = Vec::new();
        let file = std::fs::File::open(path).map_err(|e| ErrorKind::Io(e.to_string()))?;
        match mad_core::limits::read_to_end_limited(file, left, "a topology", &mut bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(ErrorKind::TooLarge {
                    file: label.to_owned(),
                    what: "bytes",
                    limit: self.limits.max_bytes,
                })
            }
            Err(e) => return Err(ErrorKind::Io(e.to_string())),
        }
        self.bytes_read += bytes.len() as u64;
        Ok(bytes)
    }

    /// Splits `bytes` into lines (a final newline does not start another
    /// line; one trailing `\r` per line is dropped), checking each and
    /// counting them against [`TopologyLimits::max_lines`].
    fn split_lines<'a>(&mut self, bytes: &'a [u8], file: &str) -> PResult<Vec<&'a str>> {
        let mut out = Vec::new();
        if bytes.is_empty() {
            return Ok(out);
        }
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        for (i, raw) in body.split(|b| *b == b'\n').enumerate() {
            self.lines_read += 1;
            if self.lines_read > self.limits.max_lines {
                return Err(self.err(
                    file,
                    i + 1,
                    ErrorKind::TooLarge {
                        file: file.to_owned(),
                        what: "lines",
                        limit: self.limits.max_lines as u64,
                    },
                ));
            }
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let line =
                std::str::from_utf8(raw).map_err(|_| self.err(file, i + 1, ErrorKind::NotUtf8))?;
            if line.contains('\0') {
                return Err(self.err(file, i + 1, ErrorKind::NulByte));
            }
            let len = line.chars().count();
            if raw.len() > MAX_LINE_LEN {
                return Err(self.err(file, i + 1, ErrorKind::LineTooLong { len }));
            }
            out.push(line);
        }
        Ok(out)
    }

    pub(super) fn parse_file_bytes(
        &mut self,
        bytes: &[u8],
        file: &str,
        path: Option<PathBuf>,
    ) -> PResult<()> {
        let lines = self.split_lines(bytes, file)?;
        let dir = path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let n = i + 1;
            i += 1;
            if line.starts_with("Switch") {
                i = self.parse_node(&lines, i - 1, NodeKind::Switch, file)?;
            } else if line.starts_with("Hca") || line.starts_with("Ca") {
                i = self.parse_node(&lines, i - 1, NodeKind::Ca, file)?;
            } else if line.starts_with("Rt") {
                i = self.parse_node(&lines, i - 1, NodeKind::Router, file)?;
            } else if line.starts_with("switchguid") {
                self.parse_guidbase(line, NodeKind::Switch, file, n)?;
            } else if line.starts_with("hcaguids") || line.starts_with("caguid") {
                self.parse_guidbase(line, NodeKind::Ca, file, n)?;
            } else if line.starts_with("rtguid") {
                self.parse_guidbase(line, NodeKind::Router, file, n)?;
            } else if line.starts_with("vendid") {
                let v = self.assignment(line, "vendid", file, n)?;
                self.vendid = self.in_range(v, 0xFF_FFFF, "vendid", file, n)? as u32;
            } else if line.starts_with("devid") {
                let v = self.assignment(line, "devid", file, n)?;
                self.devid = self.in_range(v, 0xFFFF, "devid", file, n)? as u16;
            } else if line.starts_with("sysimgguid") {
                let v = self.assignment(line, "sysimgguid", file, n)?;
                self.sysimgguid = v.value;
            } else if line.starts_with("width") {
                let v = self.assignment(line, "width", file, n)?;
                self.width = self.link_value(v, "width", 1, 31, file, n)?;
            } else if line.starts_with("speed") {
                let v = self.assignment(line, "speed", file, n)?;
                self.speed = self.link_value(v, "speed", 1, 7, file, n)?;
            } else if line.starts_with("extspeed") {
                let v = self.assignment(line, "extspeed", file, n)?;
                self.speed_ext = self.link_value(v, "extspeed", 0, 7, file, n)?;
            } else if line.starts_with("module") {
                self.parse_module(line, file, n)?;
            } else if line.starts_with("include") {
                self.parse_include(line, file, n, dir.as_deref())?;
            } else if line.starts_with("pdebug") {
                if !line.contains('=') {
                    return Err(self.err(
                        file,
                        n,
                        ErrorKind::BadAssignment {
                            key: "pdebug",
                            reason: "missing '='".into(),
                        },
                    ));
                }
            } else if line.starts_with("do") {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::Unsupported("an ibsim console command ('do ...')"),
                ));
            } else if line.starts_with('[') || line.starts_with('@') {
                return Err(self.err(file, n, ErrorKind::PortLineOutsideRecord));
            }
            // Anything else (comments, blank lines, unknown text) is
            // ignored, as ibsim ignores it.
        }
        Ok(())
    }

    /// `key=value` with a C number after the `=`.
    fn assignment(
        &self,
        line: &str,
        key: &'static str,
        file: &str,
        n: usize,
    ) -> PResult<cnum::CNum> {
        let Some(eq) = line.find('=') else {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: "missing '='".into(),
                },
            ));
        };
        let v = strtoul(&line[eq + 1..], true);
        if !v.digits {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!("no number after '=' in {line:?}"),
                },
            ));
        }
        if v.overflow {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: "number does not fit in 64 bits".into(),
                },
            ));
        }
        Ok(v)
    }

    fn in_range(
        &self,
        v: cnum::CNum,
        max: u64,
        key: &'static str,
        file: &str,
        n: usize,
    ) -> PResult<u64> {
        if v.negative || v.value > max {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!(
                        "{}{:#x} is out of range 0-{max:#x}",
                        if v.negative { "-" } else { "" },
                        v.value
                    ),
                },
            ));
        }
        Ok(v.value)
    }

    fn link_value(
        &self,
        v: cnum::CNum,
        what: &'static str,
        lo: i64,
        hi: i64,
        file: &str,
        n: usize,
    ) -> PResult<u8> {
        let value = signed(v);
        if value < lo || value > hi {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadLinkValue {
                    what,
                    value,
                    range: range_text(lo, hi),
                },
            ));
        }
        Ok(value as u8)
    }

    fn parse_guidbase(&mut self, line: &str, kind: NodeKind, file: &str, n: usize) -> PResult<()> {
        let key = match kind {
            NodeKind::Ca => "caguid",
            NodeKind::Switch => "switchguid",
            NodeKind::Router => "rtguid",
        };
        let (pos, relative) = match line.find('=') {
            Some(p) => (p, false),
            None => match line.find('+') {
                Some(p) => (p, true),
                None => {
                    return Err(self.err(
                        file,
                        n,
                        ErrorKind::BadAssignment {
                            key,
                            reason: "missing '=' or '+'".into(),
                        },
                    ))
                }
            },
        };
        let v = strtoul(&line[pos + 1..], true);
        if !v.digits || v.overflow {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!("no 64-bit GUID after '{}'", &line[pos..=pos]),
                },
            ));
        }
        // strtoull of "-N" is 2^64 - N.
        let value = if v.negative {
            v.value.wrapping_neg()
        } else {
            v.value
        };
        let k = kind.index();
        if relative {
            self.guids[k] = self.absguids[k].wrapping_add(value);
        } else {
            self.absguids[k] = value;
            self.guids[k] = value;
        }
        Ok(())
    }

    fn parse_module(&mut self, line: &str, file: &str, n: usize) -> PResult<()> {
        let bad = |reason: &str| {
            self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key: "module",
                    reason: reason.into(),
                },
            )
        };
        let Some(eq) = line.find('=') else {
            return Err(bad("missing '='"));
        };
        let Some((name, _)) = quoted(&line[eq + 1..]) else {
            return Err(bad("no \"quoted\" prefix"));
        };
        if name.len() > MAX_PREFIX_LEN {
            return Err(bad("prefix longer than 20 characters"));
        }
        self.prefix = name.to_owned();
        Ok(())
    }

    fn parse_include(
        &mut self,
        line: &str,
        file: &str,
        n: usize,
        dir: Option<&Path>,
    ) -> PResult<()> {
        let Some((name, _)) = quoted(line) else {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include("no \"quoted\" file name".into()),
            ));
        };
        let Some(dir) = dir else {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(
                    "a topology parsed from memory cannot include files (use Topology::load)"
                        .into(),
                ),
            ));
        };
        if self.stack.len() + 1 >= MAX_INCLUDE_DEPTH {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(format!("more than {MAX_INCLUDE_DEPTH} nested files")),
            ));
        }
        let path = dir.join(name);
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !self.includes.insert(key.clone()) {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(format!("{} includes itself", path.display())),
            ));
        }
        let label = path.display().to_string();
        let bytes = match self.read_file(&path, &label) {
            Ok(b) => b,
            Err(ErrorKind::Io(e)) => {
                self.includes.remove(&key);
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::Include(format!("cannot read {}: {e}", path.display())),
                ));
            }
            Err(kind) => {
                self.includes.remove(&key);
                return Err(self.err(file, n, kind));
            }
        };
        self.stack.push((file.to_owned(), n));
        let r = self.parse_file_bytes(&bytes, &label, Some(path));
        self.stack.pop();
        self.includes.remove(&key);
        r
    }
}
