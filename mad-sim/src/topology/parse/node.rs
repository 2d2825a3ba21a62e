//! Node records: a `Switch` / `Ca` / `Rt` header line and its port lines.

use super::scan::*;
use super::*;

impl Parser {
    /// Parses a node header at `lines[at]` and its port lines; returns the
    /// index of the next line to read at the top level.
    pub(super) fn parse_node(
        &mut self,
        lines: &[&str],
        at: usize,
        kind: NodeKind,
        file: &str,
    ) -> PResult<usize> {
        let header = lines[at];
        let n = at + 1;
        let num_ports = self.header_port_count(header, kind, file, n)?;
        let Some((raw_id, after_id)) = quoted(header) else {
            return Err(self.err(file, n, ErrorKind::NoNodeId));
        };
        let id = self.node_id(raw_id, file, n)?;
        if let Some(&other) = self.by_id.get(&id) {
            return Err(self.err(
                file,
                n,
                ErrorKind::DuplicateNodeId {
                    id,
                    first: self.nodes[other].location.clone(),
                },
            ));
        }
        let (desc, rest) = parse_node_desc(after_id);
        let k = kind.index();
        let node_guid = self.guids[k];
        if let Some(&other) = self.node_guids.get(&node_guid) {
            return Err(self.err(
                file,
                n,
                ErrorKind::DuplicateGuid {
                    guid: node_guid,
                    what: format!("node {id:?}"),
                    other: format!("node {:?}", self.nodes[other].id),
                    first: self.nodes[other].location.clone(),
                },
            ));
        }
        self.guids[k] = if kind == NodeKind::Switch {
            node_guid.wrapping_add(1)
        } else {
            node_guid.wrapping_add(u64::from(num_ports) + 1)
        };
        let description = match desc {
            Some(d) if !d.is_empty() => truncate(d, MAX_DESC_LEN),
            _ => truncate(&id, MAX_DESC_LEN),
        };
        let location = self.loc(file, n);
        let mut ports = Vec::with_capacity(usize::from(num_ports) + 1);
        for p in 0..=num_ports {
            let guid = if kind == NodeKind::Switch || p == 0 {
                node_guid
            } else {
                node_guid.wrapping_add(u64::from(p))
            };
            ports.push(TopoPort {
                num: p,
                guid,
                width_enabled: self.width,
                speed_enabled: self.speed,
                speed_ext_enabled: self.speed_ext,
                fdr10_enabled: false,
                lid: 0,
                lmc: 0,
                remote: None,
                width_active: width::W4X,
                speed_active: speed::SDR,
                speed_ext_active: 0,
                fdr10_active: false,
                location: location.clone(),
            });
        }
        let mut node = TopoNode {
            kind,
            id: id.clone(),
            description,
            num_ports,
            node_guid,
            system_image_guid: if self.sysimgguid != 0 {
                self.sysimgguid
            } else {
                node_guid
            },
            vendor_id: self.vendid,
            device_id: self.devid,
            enhanced_port0: None,
            ports,
            location,
        };
        self.vendid = 0;
        self.sysimgguid = 0;
        if kind == NodeKind::Switch {
            if let Some(rest) = rest {
                if rest.contains("enhanced port 0") {
                    node.enhanced_port0 = Some(true);
                } else if rest.contains("base port 0") {
                    node.enhanced_port0 = Some(false);
                }
                let (lid, lmc) = self.lid_and_lmc(rest, file, n)?;
                node.ports[0].lid = lid.unwrap_or(0);
                node.ports[0].lmc = lmc.unwrap_or(0);
            }
        }
        let mut pending: Vec<Option<PendingLink>> = vec![None; usize::from(num_ports) + 1];
        let mut seen: Vec<Option<Location>> = vec![None; usize::from(num_ports) + 1];
        // Port lines: at most `num_ports` of them, as ibsim reads them.
        let mut j = at + 1;
        let mut count = 0u16;
        while count < u16::from(num_ports) {
            let Some(&line) = lines.get(j) else { break };
            j += 1;
            let ln = j;
            if line.starts_with('#') {
                continue;
            }
            if !line.starts_with('[') && !line.starts_with('@') {
                if DIRECTIVES.iter().any(|d| line.starts_with(d)) {
                    return Err(self.err(
                        file,
                        ln,
                        ErrorKind::SwallowedLine {
                            text: line.to_owned(),
                        },
                    ));
                }
                break;
            }
            let (port, link) = self.parse_port(line, &mut node, file, ln)?;
            let idx = usize::from(port);
            if let Some(first) = &seen[idx] {
                return Err(self.err(
                    file,
                    ln,
                    ErrorKind::DuplicatePort {
                        port,
                        node: id,
                        first: first.clone(),
                    },
                ));
            }
            let here = self.loc(file, ln);
            node.ports[idx].location = here.clone();
            seen[idx] = Some(here);
            pending[idx] = Some(link);
            count += 1;
        }
        let index = self.nodes.len();
        self.by_id.insert(id, index);
        self.node_guids.insert(node_guid, index);
        self.nodes.push(node);
        self.pending.push(pending);
        Ok(j)
    }

    /// The port count of a header, read as ibsim reads it (first digit
    /// after the keyword's first 3 or 6 characters, C `strtoul` base 0).
    fn header_port_count(&self, header: &str, kind: NodeKind, file: &str, n: usize) -> PResult<u8> {
        let (ibsim_off, keyword) = match kind {
            NodeKind::Switch => (6, "Switch"),
            NodeKind::Ca if header.starts_with("Hca") => (3, "Hca"),
            NodeKind::Ca => (3, "Ca"),
            NodeKind::Router => (3, "Rt"),
        };
        let ibsim = header.get(ibsim_off..).map(parse_node_ports);
        let written = parse_node_ports(&header[keyword.len()..]);
        let text = || {
            header[keyword.len()..]
                .trim_start()
                .chars()
                .take_while(|c| *c != '"')
                .collect::<String>()
                .trim_end()
                .to_owned()
        };
        let Some(ibsim) = ibsim else {
            return Err(self.err(file, n, ErrorKind::BadPortCount { text: text() }));
        };
        if ibsim.value != written.value {
            return Err(self.err(
                file,
                n,
                ErrorKind::MisreadPortCount {
                    keyword,
                    written: written.value,
                    ibsim: ibsim.value,
                },
            ));
        }
        if !written.digits || written.value == 0 || written.value > 255 {
            return Err(self.err(file, n, ErrorKind::BadPortCount { text: text() }));
        }
        Ok(written.value as u8)
    }

    fn node_id(&self, raw: &str, file: &str, n: usize) -> PResult<String> {
        let bad = |reason| {
            self.err(
                file,
                n,
                ErrorKind::BadNodeId {
                    id: raw.to_owned(),
                    reason,
                },
            )
        };
        if raw.is_empty() {
            return Err(bad("empty"));
        }
        if raw.contains('#') || raw.contains('@') {
            return Err(bad("'#' and '@' are reserved"));
        }
        let id = if self.prefix.is_empty() {
            raw.to_owned()
        } else {
            format!("{}#{raw}", self.prefix)
        };
        if id.len() > MAX_NODE_ID_LEN {
            return Err(bad("longer than 64 characters (with its module prefix)"));
        }
        Ok(id)
    }

    /// `lid N` / `lmc N` anywhere in `s` (ibsim's `parse_port_lid_and_lmc`).
    fn lid_and_lmc(&self, s: &str, file: &str, n: usize) -> PResult<(Option<u16>, Option<u8>)> {
        // `key N` in `s`, N at most `max`, else an error saying it is not `what`.
        let field = |key: &'static str, max: u64, what: &str| -> PResult<Option<u64>> {
            let Some(p) = s.find(&format!("{key} ")) else {
                return Ok(None);
            };
            let rest = &s[p + key.len() + 1..];
            let v = strtoul(rest, true);
            if v.negative || v.value > max {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::BadAssignment {
                        key,
                        reason: format!("{} is not {what}", rest.trim()),
                    },
                ));
            }
            Ok(Some(v.value))
        };
        let lid = field("lid", 0xFFFF, "a LID")?.map(|v| v as u16);
        let lmc = field("lmc", 7, "an LMC (0-7)")?.map(|v| v as u8);
        Ok((lid, lmc))
    }

    /// One `[port] "remote"[rport] ...` line (ibsim's `parse_port`).
    fn parse_port(
        &self,
        line: &str,
        node: &mut TopoNode,
        file: &str,
        n: usize,
    ) -> PResult<(u8, PendingLink)> {
        if line.starts_with('@') {
            return Err(self.err(file, n, ErrorKind::Unsupported("a port alias ('@[port]')")));
        }
        let portnum = atoi(&line[1..]);
        if portnum < 0 || portnum > i64::from(node.num_ports) {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadPortNumber {
                    port: portnum,
                    node: node.id.clone(),
                    max: node.num_ports,
                },
            ));
        }
        if portnum == 0 {
            return Err(self.err(file, n, ErrorKind::PortZero));
        }
        let port = portnum as u8;
        let Some((raw_remote, rest)) = quoted(line) else {
            return Err(self.err(file, n, ErrorKind::NoNodeId));
        };
        if raw_remote.contains('@') {
            return Err(self.err(
                file,
                n,
                ErrorKind::Unsupported("a remote port alias ('name@alias')"),
            ));
        }
        let remote = if !self.prefix.is_empty() && !raw_remote.contains('#') {
            format!("{}#{raw_remote}", self.prefix)
        } else {
            raw_remote.to_owned()
        };
        let remote_port = if let Some(after) = rest.strip_prefix('[') {
            let rp = atoi(after);
            if rp <= 0 {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::BadRemotePort {
                        text: after.chars().take_while(|c| *c != ']').collect(),
                    },
                ));
            }
            rp
        } else {
            1
        };
        let p = &mut node.ports[usize::from(port)];
        // Options: every '=' after the remote id, named by the nearest
        // letter before it (ibsim scans the rest of the line, comments
        // included).
        let rest_off = line.len() - rest.len();
        let bytes = line.as_bytes();
        let mut search = rest_off + 1;
        while let Some(rel) = line.get(search..).and_then(|s| s.find('=')) {
            let eq = search + rel;
            search = eq + 1;
            let Some(opt) = bytes[..eq].iter().rposition(u8::is_ascii_alphabetic) else {
                continue;
            };
            let value = strtoul(&line[eq + 1..], true);
            match bytes[opt] {
                b'w' => {
                    p.width_enabled = self.link_value(value, "link width (w=)", 1, 31, file, n)?
                }
                b's' => {
                    p.speed_enabled = self.link_value(value, "link speed (s=)", 1, 7, file, n)?
                }
                b'e' => {
                    p.speed_ext_enabled =
                        self.link_value(value, "extended link speed (e=)", 0, 7, file, n)?;
                }
                _ => {}
            }
        }
        if node.kind != NodeKind::Router {
            self.connection_data(rest, node.kind, p, file, n)?;
        }
        Ok((
            port,
            PendingLink {
                remote,
                remote_port,
            },
        ))
    }

    /// ibnetdiscover's `lid N WxSPEED` tail (ibsim's
    /// `parse_port_connection_data`).
    fn connection_data(
        &self,
        rest: &str,
        kind: NodeKind,
        p: &mut TopoPort,
        file: &str,
        n: usize,
    ) -> PResult<()> {
        // The regex "lid[^\"]*$": the first "lid" after the last quote.
        let tail_start = rest.rfind('"').map_or(0, |q| q + 1);
        let Some(m) = rest[tail_start..].find("lid") else {
            return Ok(());
        };
        let tail = &rest[tail_start + m..];
        if kind == NodeKind::Ca {
            let (lid, lmc) = self.lid_and_lmc(rest, file, n)?;
            if let Some(l) = lid {
                p.lid = l;
            }
            if let Some(l) = lmc {
                p.lmc = l;
            }
        }
        // sscanf(tail, "lid %d %dx%9s"); a tail that does not match is
        // ignored, as ibsim only warns.
        let Some((w, sp)) = scan_lid_width_speed(tail) else {
            return Ok(());
        };
        match w {
            12 => p.width_enabled = width::W1X | width::W4X | width::W12X,
            8 => p.width_enabled = width::W8X,
            4 => p.width_enabled = width::W1X | width::W4X,
            1 => p.width_enabled = width::W1X,
            2 => p.width_enabled = width::W2X,
            _ => {}
        }
        let is = |kw: &str| kw.starts_with(sp);
        if is("SDR") {
            p.speed_enabled = speed::SDR;
        } else if is("DDR") {
            p.speed_enabled = speed::SDR | speed::DDR;
        } else if is("QDR") {
            p.speed_enabled = speed::ALL;
        } else if is("FDR") {
            p.speed_ext_enabled = speed::EXT_FDR;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("EDR") {
            p.speed_ext_enabled = speed::EXT_FDR | speed::EXT_EDR;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("HDR") {
            p.speed_ext_enabled = speed::EXT_ALL;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("FDR10") {
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        }
        Ok(())
    }
}
