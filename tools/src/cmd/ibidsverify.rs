//! `ibidsverify` (infiniband-diags' `ibidsverify.pl`): checks the LIDs
//! and GUIDs of the fabric for zeros and duplicates, reading the
//! topology `ibnetdiscover -g` wrote to
//! `/var/cache/infiniband-diags/ibnetdiscover-CA-PORT.topology` (made
//! first when it is missing or `-R` is given; the real script and this
//! one share the file). Options as the script: `-h`, `-R`, `-C CA`,
//! `-P PORT` (Perl's `Getopt::Std`: bundled letters, the option
//! argument attached or next, options end at the first other word).
//! Prints what the script prints, line by line as its regular
//! expressions match, and exits 1 when it found a problem, else 0.
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "ibidsverify", "version": "0.1.0", "complete": true,
//!  "topology": "/var/cache/...", "problems": ["LID 0 found for ..."]}
//! ```
//! `problems` holds the lines the text prints.

use std::collections::HashMap;

use crate::command::{CliError, Invocation};
use crate::ibdiag;
use crate::ibdiag::getopt_std::{script_options, Script};
use crate::ibdiag::perl_cache::topology_file;
use crate::json::{Json, JsonExt};

/// The script's usage text (on stdout, exit status 2).
fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-Rh]\n   Validate LIDs and GUIDs (check for zero and duplicates) in the local subnet\n   -h This help message\n   -R Recalculate ibnetdiscover information (Default is to reuse ibnetdiscover output)\n   -C <ca_name> use selected Channel Adaptor name for queries\n   -P <ca_port> use selected channel adaptor port for queries\n"
    )
}

/// The options the script reads.
struct Args {
    regenerate: bool,
    ca: String,
    port: String,
}

/// The checks of the script over its topology file.
#[derive(Default)]
struct Verify {
    out: Vec<String>,
    bad: bool,
    lids: HashMap<String, String>,
    nodeguids: HashMap<String, String>,
    portguids: HashMap<String, String>,
}

impl Verify {
    /// `insert_lid`.
    fn lid(&mut self, lid: &str, nodeguid: &str, nodetype: &str) {
        if lid == "0" {
            self.out
                .push(format!("LID 0 found for {nodetype} NodeGUID {nodeguid}"));
            self.bad = true;
        } else if let Some(first) = self.lids.get(lid) {
            self.out
                .push(format!("LID {lid} already defined for NodeGUID {first}"));
            self.bad = true;
        } else {
            self.lids.insert(lid.to_owned(), nodeguid.to_owned());
        }
    }

    /// `insert_nodeguid` (the script's zero check compares the text with
    /// "0", which a `0x...` GUID never is).
    fn nodeguid(&mut self, lid: &str, nodeguid: &str) {
        if let Some(first) = self.nodeguids.get(nodeguid) {
            self.out.push(format!(
                "NodeGUID {nodeguid} already defined for LID {first}"
            ));
            self.bad = true;
        } else {
            self.nodeguids.insert(nodeguid.to_owned(), lid.to_owned());
        }
    }

    /// `insert_portguid` and `validate_portguid`.
    fn portguid(&mut self, lid: &str, portguid: &str, nodeguid: &str) {
        if let Some(first) = self.portguids.get(portguid) {
            self.out.push(format!(
                "PortGUID {portguid} already defined for LID {first}"
            ));
            self.bad = true;
            return;
        }
        self.portguids.insert(portguid.to_owned(), lid.to_owned());
        if nodeguid != portguid && self.nodeguids.contains_key(portguid) {
            self.out.push(format!(
                "PortGUID {portguid} is an invalid duplicate of a NodeGUID"
            ));
            self.bad = true;
        }
    }
}

/// The digits of the last `# lid N ` (or, `hash` false, ` lid N `) at
/// or after byte `from` of `line`: what a greedy `(.*)` before
/// `lid (\d+) .*` captures.
fn last_lid(line: &str, from: usize, tag: &str) -> Option<String> {
    let mut found = None;
    let mut at = from;
    while let Some(p) = line.get(at..).and_then(|s| s.find(tag)) {
        let start = at + p + tag.len();
        let digits: String = line[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() && line[start + digits.len()..].starts_with(' ') {
            found = Some(digits);
        }
        at += p + 1;
    }
    found
}

/// Runs the script's loop over the topology text.
fn verify(text: &str) -> Verify {
    let mut v = Verify::default();
    let (mut nodetype, mut nodeguid, mut portguid, mut lid) =
        (String::new(), String::new(), String::new(), String::new());
    let mut firstport = false;
    for line in text.lines() {
        if let Some(g) = line
            .strip_prefix("caguid=")
            .or_else(|| line.strip_prefix("rtguid="))
        {
            nodeguid = g.to_owned();
            nodetype.clear();
        }
        if let Some(g) = line.strip_prefix("switchguid=") {
            nodeguid = g.to_owned();
            portguid.clear();
            nodetype.clear();
            // `^switchguid=(.*)\((.*)\)`: up to the last `(` that a `)`
            // follows, and from there to the last `)`.
            if let Some(close) = g.rfind(')') {
                if let Some(open) = g[..close].rfind('(') {
                    nodeguid = g[..open].to_owned();
                    portguid = format!("0x{}", &g[open + 1..close]);
                }
            }
        }
        if line.starts_with("Switch") {
            if let Some(s) = line.find("\"S-") {
                let quoted = line[s + 3..].contains("\"\t") || line[s + 3..].contains("\" ");
                if let (true, Some(l)) =
                    (quoted && line.contains(" port"), last_lid(line, s, " lid "))
                {
                    nodetype = "switch".into();
                    firstport = true;
                    lid = l;
                    v.lid(&lid, &nodeguid, &nodetype);
                    v.nodeguid(&lid, &nodeguid);
                    if !portguid.is_empty() {
                        let pg = portguid.clone();
                        v.portguid(&lid, &pg, &nodeguid);
                    }
                }
            }
        }
        if line.starts_with("Ca") {
            nodetype = "ca".into();
            firstport = true;
        }
        if line.starts_with("Rt") {
            nodetype = "router".into();
            firstport = true;
        }
        if nodetype == "ca" || nodetype == "router" {
            for tag in ["\"S-", "\"H-", "\"R-"] {
                let Some(s) = line.find(tag) else { continue };
                if let Some(l) = last_lid(line, s + 3, "# lid ") {
                    lid = l;
                    v.lid(&lid, &nodeguid, &nodetype);
                    if firstport {
                        v.nodeguid(&lid, &nodeguid);
                        firstport = false;
                    }
                }
            }
            // `^\[(\d+)\]\((.*)\)`: from the `(` to the last `)`.
            if let Some(rest) = line.strip_prefix('[') {
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                if digits > 0 && rest[digits..].starts_with("](") {
                    let inner = &rest[digits + 2..];
                    if let Some(close) = inner.rfind(')') {
                        portguid = format!("0x{}", &inner[..close]);
                        let pg = portguid.clone();
                        v.portguid(&lid, &pg, &nodeguid);
                    }
                }
            }
        }
    }
    v
}

/// Runs `ibidsverify`.
///
/// # Errors
/// Usage (exit 2), no port or a failed discovery when the topology must
/// be made (`IBEXIT`), an unreadable or unwritable topology file
/// (exit 2, as Perl's `die`); exit 1 when a problem was found.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let Script {
        prog: _,
        json,
        opts: g,
    } = script_options(inv, "hRC:P:", usage)?;
    let a = Args {
        regenerate: g.has('R'),
        ca: g.value('C').unwrap_or_default().to_owned(),
        port: g.value('P').unwrap_or_default().to_owned(),
    };
    let file = topology_file(inv, &a.ca, &a.port, a.regenerate)?;
    let text = std::fs::read(&file)
        .map_err(|e| CliError::Stderr(format!("Failed to open ibnet topology: {e}\n"), 2))?;
    let v = verify(&String::from_utf8_lossy(&text));
    if json {
        ibdiag::print_json(
            inv,
            &Json::obj()
                .with("topology", Json::from(file.as_str()))
                .with(
                    "problems",
                    Json::Array(v.out.iter().map(|l| Json::from(l.as_str())).collect()),
                ),
        );
    } else {
        let mut o = String::new();
        for l in &v.out {
            o.push_str(l);
            o.push('\n');
        }
        inv.io.out(&o);
    }
    if v.bad {
        Err(CliError::Exit(1))
    } else {
        Ok(())
    }
}
