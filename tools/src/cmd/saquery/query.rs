//! saquery's SA queries (`sa_query`, `get_any_records`) and what its
//! record types' arguments are read with (`get_lid`,
//! `parse_lid_and_ports`, `CHECK_AND_SET_VAL`).

use mad_agents::sa::{SaClient, SaError, TableMode};
use mad_core::wire::attr::NodeDescription;
use mad_core::wire::sa::SaMad;
use mad_core::wire::sa_records::{NodeRecord, PathRecord, SaRecord};
use mad_core::wire::{AttributeId, Fields, Mad, Method, Repr, SA_DATA_OFFSET};

use crate::diags::{dump, sa};
use crate::ibdiag;
use crate::json::Json;
use crate::namemap::NameMap;
use crate::session::Session;

/// An SA answer as `sa_query` keeps it.
#[derive(Default)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) bytes: Vec<u8>,
    pub(super) get_table: bool,
}

impl Answer {
    pub(super) fn attr_offset(&self) -> u16 {
        SaMad::new_unchecked(&self.bytes[..]).attr_offset()
    }

    pub(super) fn count(&self) -> usize {
        sa::result_count(
            self.bytes.len(),
            self.status,
            self.get_table,
            self.attr_offset(),
        )
    }

    /// The records `sa_get_query_rec` hands out.
    pub(super) fn records<R: SaRecord>(&self) -> Vec<R> {
        let stride = usize::from(self.attr_offset()) * 8;
        (0..self.count())
            .map_while(|i| {
                let at = SA_DATA_OFFSET + i * stride;
                self.bytes.get(at..).and_then(|d| R::parse(d).ok())
            })
            .collect()
    }
}

/// How a query ended when it printed no records.
pub(super) struct Fail {
    pub(super) stderr: String,
    pub(super) code: i32,
}

pub(super) struct Ctx<'a> {
    pub(super) sa: &'a SaClient,
    pub(super) names: &'a NameMap,
    pub(super) show_keys: bool,
    pub(super) out: String,
    pub(super) json_records: Vec<Json>,
    pub(super) attribute: &'static str,
    pub(super) truncated: bool,
    /// Why the answer is short (for the message), when it is.
    pub(super) truncated_why: Option<String>,
    /// The record name of an SA attribute, for the messages (the
    /// record-type table's).
    pub(super) attr_name: fn(u16) -> String,
    /// The answers come from the built-in SA (which caps all-pairs
    /// PathRecord tables).
    pub(super) built_in_sa: bool,
}

pub(super) fn pid() -> u32 {
    std::process::id()
}

impl Ctx<'_> {
    /// `sa_query`.
    pub(super) fn query(
        &mut self,
        method: Method,
        attr: u16,
        attr_mod: u32,
        mask: u64,
        rec: &[u8],
    ) -> Result<Answer, Fail> {
        match self
            .sa
            .request(method, AttributeId(attr), attr_mod, mask, rec)
        {
            Ok(m) => {
                let bytes = m.bytes().to_vec();
                let status = Mad::new_unchecked(&bytes[..]).status().0;
                let get_table = method == Method::GET_TABLE;
                let a = Answer {
                    status,
                    bytes,
                    get_table,
                };
                if get_table && a.bytes.len() == 256 {
                    // An RMPP answer cut to one MAD (ibsim, libumad2sim):
                    // RMPPFlags (the low 3 bits of byte 26) say Active but
                    // not First and Last together — OpenSM's answers through
                    // ibsim carry Active alone, the built-in SA's
                    // Active|First. (Byte 25, RMPPType, was read here
                    // before: DATA (1) from the built-in SA passed for
                    // Active, OpenSM's 0 hid every cut table.)
                    let flags = a.bytes.get(26).copied().unwrap_or(0) & 0x07;
                    if flags & 1 != 0 && flags & 6 != 6 {
                        self.truncated = true;
                        self.truncated_why = Some(format!(
                            "the SA's answer to the {} query arrived cut to its first MAD ({} \
                             records; the transport does no RMPP here: ibsim, or libumad2sim), \
                             so the table above is incomplete. Query the built-in fabric \
                             (--sim) or a real port for the whole table",
                            (self.attr_name)(attr),
                            a.count()
                        ));
                    }
                }
                if get_table
                    && attr == 0x0035
                    && self.built_in_sa
                    && mask
                        & (PathRecord::COMP_SLID
                            | PathRecord::COMP_DLID
                            | PathRecord::COMP_SGID
                            | PathRecord::COMP_DGID)
                        == 0
                    && a.count() >= mad_sm::sa::MAX_ALL_PAIRS_PATHS
                {
                    self.truncated = true;
                    self.truncated_why = Some(format!(
                        "the built-in SA answers at most {} PathRecords to a query that names \
                         neither end, so the table above is cut short; query per source \
                         (saquery PR --slid LID, or -p --slid LID) for the rest",
                        mad_sm::sa::MAX_ALL_PAIRS_PATHS
                    ));
                }
                Ok(a)
            }
            Err(SaError::Timeout { .. }) => Err(Fail {
                stderr: format!(
                    "ibwarn: [{}] sa_query: umad_recv failed: attr 0x{attr:x}: Connection timed out\n\nQuery SA failed: Connection timed out\n",
                    pid()
                ),
                code: 110,
            }),
            Err(e) => Err(Fail {
                stderr: format!("Query SA failed: {e}\n"),
                code: 5,
            }),
        }
    }

    /// `get_any_records`: a GetTable; an error status is reported.
    pub(super) fn get_any(
        &mut self,
        attr: u16,
        attr_mod: u32,
        mask: u64,
        rec: &[u8],
    ) -> Result<Answer, Fail> {
        let a = self.query(Method::GET_TABLE, attr, attr_mod, mask, rec)?;
        if a.status != 0 {
            return Err(Fail {
                stderr: sa::format_sa_report_err(a.status),
                code: 5,
            });
        }
        Ok(a)
    }

    pub(super) fn get_all(&mut self, attr: u16) -> Result<Answer, Fail> {
        self.get_any(attr, 0, 0, &[])
    }

    /// Dumps records with `f`, and keeps them for JSON.
    pub(super) fn dump<R: SaRecord + Fields>(&mut self, a: &Answer, f: impl Fn(&R) -> String) {
        for r in a.records::<R>() {
            self.out.push_str(&f(&r));
            self.json_records.push(ibdiag::attr_json(&r));
        }
    }

    /// A node record with its description replaced by the node name
    /// map's name, if it has one (`remap_node_name`).
    pub(super) fn remap(&self, nr: &NodeRecord) -> NodeRecord {
        let mut n = nr.clone();
        let name = self.names.remap(nr.node_info.node_guid, &nr.node_desc);
        if name != dump::clean_nodedesc(&nr.node_desc) {
            n.node_desc = NodeDescription::from_text(&name);
        }
        n
    }
}

/// `get_lid`: a LID, or the LID of the node named so.
pub(super) fn get_lid(c: &mut Ctx<'_>, name: &str) -> Result<u16, Fail> {
    if name.is_empty() {
        return Ok(0);
    }
    if name.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        let a = match c.get_all(0x0011) {
            Ok(a) => a,
            Err(f) => {
                return Err(Fail {
                    stderr: format!(
                        "{}Failed to find lid for \"{name}\": {}\n",
                        f.stderr,
                        strerror(f.code)
                    ),
                    code: f.code,
                })
            }
        };
        for nr in a.records::<NodeRecord>() {
            if desc_eq(name, &nr.node_desc) {
                return Ok(nr.lid);
            }
        }
        return Err(Fail {
            stderr: format!("Failed to find lid for \"{name}\": Machine is not on the network\n"),
            code: 64,
        });
    }
    let v = crate::cnum::c_strtol(name);
    if v <= 0 || v > i64::from(u16::MAX) {
        return Err(Fail {
            stderr: format!("Invalid lid specified: \"{name}\"\n"),
            code: 22,
        });
    }
    Ok(v as u16)
}

pub(super) fn strerror(code: i32) -> &'static str {
    match code {
        5 => "Input/output error",
        110 => "Connection timed out",
        22 => "Invalid argument",
        64 => "Machine is not on the network",
        _ => "Unknown error",
    }
}

/// `strncmp(name, desc, 64) == 0`.
pub(super) fn desc_eq(name: &str, desc: &NodeDescription) -> bool {
    let d = desc.to_vec().unwrap_or_default();
    let dend = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    let n = name.as_bytes();
    let n = &n[..n.len().min(64)];
    let d = &d[..dend.min(64)];
    if n.len() >= 64 || d.len() >= 64 {
        n[..n.len().min(64)] == d[..d.len().min(64)]
    } else {
        n == d
    }
}

/// `parse_lid_and_ports`: `lid[/port1[/port2]]` (-1: not given).
pub(super) fn parse_lid_and_ports(c: &mut Ctx<'_>, s: &str) -> Result<(u16, i64, i64), Fail> {
    let mut parts = s.splitn(3, '/');
    let lid = get_lid(c, parts.next().unwrap_or(""))?;
    // strtoul(str, &e, 0) into an int; nothing parsed (e == str): -1.
    let num = |p: Option<&str>| -> i64 {
        let Some(t) = p else { return -1 };
        let body = t.trim_start().trim_start_matches(['+', '-']);
        if body.starts_with(|ch: char| ch.is_ascii_digit()) {
            i64::from(crate::cnum::c_strtoul(t) as u32 as i32)
        } else {
            -1
        }
    };
    let p1 = num(parts.next());
    let p2 = num(parts.next());
    Ok((lid, p1, p2))
}

/// `CHECK_AND_SET_VAL` with an 8-bit compare: -1 (or 255) means unset.
pub(super) fn set8(v: i64) -> Option<u8> {
    ((v as i8) != -1).then_some(v as u8)
}

pub(super) fn set16(v: i64) -> Option<u16> {
    ((v as i16) != -1).then_some(v as u16)
}

/// Parses an IPv6 address as `inet_pton(AF_INET6)` does.
pub(super) fn pton6(s: &str) -> Option<[u8; 16]> {
    s.parse::<std::net::Ipv6Addr>().ok().map(|a| a.octets())
}

/// RMPP tables, except where the SA's answers come cut to one MAD
/// ([`Session::sa_table_mode`]).
pub(super) fn table_mode(s: &Session) -> TableMode {
    s.sa_table_mode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eight_bit_port_of_255_counts_as_unset() {
        assert_eq!(set8(-1), None);
        assert_eq!(set8(255), None);
        assert_eq!(set8(3), Some(3));
        assert_eq!(set16(0xFFFF), None);
    }
}
