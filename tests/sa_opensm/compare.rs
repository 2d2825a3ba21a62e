//! saquery's output parsed and compared with ours; one case, how it runs,
//! and the fixture files.

use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};

use crate::fields::*;
use crate::support::opensm::sbin;
use crate::support::IbSim;
use mad_agents::sa::{SaClient, SaError};
use mad_core::wire::sa_records::{NodeRecord, SaRecord};
use mad_core::wire::{AttributeId, Method};

/// What saquery printed, as records of (label, value), or the status of
/// its "ERROR: Query result returned 0x0200, ..." line.
pub(crate) fn parse_saquery(out: &str) -> Answer {
    for l in out.lines() {
        if let Some(rest) = l.strip_prefix("ERROR: Query result returned ") {
            let hex = rest.split(',').next().unwrap_or("").trim();
            let v = u16::from_str_radix(hex.trim_start_matches("0x"), 16)
                .unwrap_or_else(|_| panic!("saquery status in {l:?}"));
            return Answer::Status(v);
        }
    }
    let mut records: Vec<Fields> = Vec::new();
    for l in out.lines() {
        if l.trim().is_empty() || l.starts_with("ibwarn") {
            continue;
        }
        if !l.starts_with('\t') {
            records.push(Vec::new()); // a title line: a new record
            continue;
        }
        let Some(cur) = records.last_mut() else {
            continue;
        };
        let t = l.trim();
        // "Label:....value" (libibmad's PortInfo dump: the colon ends the
        // label, then at least one dot) or "label.....value".
        let split = t
            .find(":.")
            .map(|i| (i, i + 1))
            .or_else(|| t.find("..").map(|i| (i, i)));
        if let Some((i, v)) = split {
            let label = t[..i].trim().to_owned();
            let value = t[v..].trim_start_matches('.').trim().to_owned();
            cur.push((label, value));
        } else if let Some(i) = t.find("..") {
            let label = t[..i].trim().trim_end_matches(':').to_owned();
            let value = t[i..].trim_start_matches('.').trim().to_owned();
            cur.push((label, value));
        } else if let Some((a, b)) = t.split_once('\t') {
            // An LFT line: "LID<tab>port".
            if let (Ok(lid), Ok(port)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                cur.push((format!("LFT[{lid}]"), port.to_string()));
            }
        }
    }
    Answer::Records(records, false)
}

pub(crate) fn number(s: &str) -> Option<u128> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u128::from_str_radix(h, 16).ok();
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    None
}

/// Same value, whatever the radix or GID spelling.
pub(crate) fn same(theirs: &str, ours: &str) -> bool {
    if let (Some(a), Some(b)) = (number(theirs), number(ours)) {
        return a == b;
    }
    if let (Ok(a), Ok(b)) = (theirs.parse::<Ipv6Addr>(), ours.parse::<Ipv6Addr>()) {
        return a == b;
    }
    theirs == ours
}

/// How many leading records of a one-MAD table saquery prints whole.
/// saquery under libumad2sim shows bytes from MAD offset 224 on as
/// garbage (they vary from run to run), so a record is compared only if
/// it ends by then; complete answers are compared record for record.
pub(crate) fn reliable_records(attr: AttributeId, truncated: bool, n: usize) -> usize {
    if !truncated {
        return n;
    }
    let stride = mad_core::wire::sa_records::record_info(attr)
        .map(|r| r.padded_len)
        .unwrap_or(usize::MAX);
    n.min((224 - 56) / stride)
}

/// Compares our decoded answer with saquery's; returns the fields
/// compared, or what differs.
/// Which query went to OpenSM first (OpenSM's SMInfo ActCount only grows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    SaqueryFirst,
    OursFirst,
}

pub(crate) fn compare(
    attr: AttributeId,
    ours: &Answer,
    theirs: &Answer,
    order: Order,
) -> Result<usize, String> {
    match (ours, theirs) {
        (Answer::Status(a), Answer::Status(b)) if a == b => Ok(1),
        (Answer::Records(o, truncated), Answer::Records(t, _)) => {
            let n = reliable_records(attr, *truncated, o.len());
            if !truncated && o.len() != t.len() {
                return Err(format!(
                    "{} records from our client, {} printed by saquery",
                    o.len(),
                    t.len()
                ));
            }
            if t.len() < n {
                return Err(format!(
                    "saquery printed {} records, we compare {n}",
                    t.len()
                ));
            }
            let mut fields = 0;
            for (i, (orec, trec)) in o.iter().zip(t).take(n).enumerate() {
                for (label, ov) in orec {
                    let tv = trec
                        .iter()
                        .find(|(l, _)| l == label)
                        .map(|(_, v)| v)
                        .ok_or_else(|| {
                            format!("record {i}: saquery printed no {label:?}: {trec:?}")
                        })?;
                    let ok = if label == "ActCount" {
                        // OpenSM's ActCount counts its SMPs and may move
                        // between the two queries.
                        match order {
                            Order::SaqueryFirst => number(ov) >= number(tv),
                            Order::OursFirst => number(ov) <= number(tv),
                        }
                    } else {
                        same(tv, ov)
                    };
                    if !ok {
                        return Err(format!("record {i} {label}: saquery {tv:?}, ours {ov:?}"));
                    }
                    fields += 1;
                }
            }
            Ok(fields)
        }
        (o, t) => Err(format!("ours {o:?}\nsaquery {t:?}")),
    }
}

/// One query, asked of saquery and of our client.
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) saquery: Vec<String>,
    pub(crate) method: Method,
    pub(crate) attr: AttributeId,
    pub(crate) comp_mask: u64,
    pub(crate) template: Vec<u8>,
}

pub(crate) fn case<R: SaRecord>(
    name: &str,
    saquery: &[&str],
    method: Method,
    template: &R,
    comp_mask: u64,
) -> Case {
    Case {
        name: name.to_owned(),
        saquery: saquery.iter().map(|s| (*s).to_owned()).collect(),
        method,
        attr: R::ATTR_ID,
        comp_mask,
        template: template.to_vec().expect("template"),
    }
}

pub(crate) fn run_saquery(sim: &IbSim, args: &[String]) -> String {
    let out = sim.umad2sim_output(sbin("saquery").to_str().expect("path"), args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // An SA error status is printed on stderr and saquery exits non-zero.
    if let Some(err) = stderr
        .lines()
        .find(|l| l.starts_with("ERROR: Query result returned"))
    {
        return format!("{stdout}{err}\n");
    }
    assert!(
        out.status.success(),
        "saquery {args:?} failed ({}): {stdout}\n{stderr}",
        out.status,
    );
    stdout
}

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opensm")
}

pub(crate) fn to_hex(mad: &[u8]) -> String {
    let mut s = String::new();
    for line in mad.chunks(16) {
        let l: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        s.push_str(&l.join(" "));
        s.push('\n');
    }
    s
}

pub(crate) fn from_hex(text: &str) -> Vec<u8> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|h| u8::from_str_radix(h, 16).expect("hex byte"))
        .collect()
}

pub(crate) fn attr_name(a: AttributeId) -> &'static str {
    a.name_in(mad_core::wire::MgmtClass::SUBN_ADM)
        .unwrap_or("?")
}

pub(crate) fn attr_by_name(name: &str) -> AttributeId {
    (0..=0xFFu16)
        .map(AttributeId)
        .find(|a| attr_name(*a) == name)
        .unwrap_or_else(|| panic!("unknown attribute {name}"))
}

/// The LIDs OpenSM assigned (Get NodeRecord by LID until NO_RECORDS
/// has been seen a few times in a row), with each node's type.
pub(crate) fn lids(client: &SaClient) -> Vec<(u16, NodeRecord)> {
    let mut v = Vec::new();
    let mut misses = 0;
    for lid in 1u16.. {
        match client.node_record(lid) {
            Ok(n) => {
                assert_eq!(n.lid, lid);
                v.push((lid, n));
                misses = 0;
            }
            Err(SaError::NoRecords) => {
                misses += 1;
                if misses == 4 {
                    break;
                }
            }
            Err(e) => panic!("Get NodeRecord of LID {lid}: {e}"),
        }
    }
    v
}
