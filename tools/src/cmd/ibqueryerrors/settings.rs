//! The options that shape what `ibqueryerrors` reports: the error
//! counters it checks, the `-s` suppression list and the threshold file.

use std::collections::HashMap;

use mad_core::wire::attr::PortCounters;

/// The error counters `print_results` checks, in its order (PortCounters
/// fields from SymbolErrorCounter to VL15Dropped, CounterSelect2 left
/// out), then PortXmitWait.
pub(super) const ERROR_FIELDS: [&str; 13] = [
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
];

/// Every PortCounters field name `-s` may name (`IB_PC_FIRST_F` to
/// `IB_PC_LAST_F`): PortCounters' labelled fields in wire order but
/// QP1Dropped, which libibmad numbers after them.
fn suppressible() -> impl Iterator<Item = &'static str> {
    PortCounters::FIELDS
        .iter()
        .filter_map(|d| d.label)
        .filter(|l| *l != "QP1Dropped")
}

/// `SUP_MAX`.
const SUP_MAX: usize = 64;

/// The options that shape the report.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Suppressed field names, in the order given.
    pub suppressed: Vec<&'static str>,
    /// Thresholds by field name, and the `Thresholds: ...` text (`None`
    /// without a threshold file: the C tool prints `(null)`).
    pub thresholds: (HashMap<String, u64>, Option<String>),
    /// `--data`.
    pub data: bool,
    /// `--counters`.
    pub counters_only: bool,
    /// `-r`.
    pub port_config: bool,
    /// `-k`.
    pub clear_errors: bool,
    /// `-K`.
    pub clear_counts: bool,
    /// `--details`.
    pub details: bool,
}

impl Settings {
    /// Suppresses `name` if it is a PortCounters field name.
    pub fn suppress(&mut self, name: &str) {
        if let Some(n) = suppressible().find(|n| *n == name) {
            if self.suppressed.len() < SUP_MAX {
                self.suppressed.push(n);
            }
        }
    }

    /// `-s a,b,c`.
    pub fn suppress_list(&mut self, list: &str) {
        for v in list.split(',').filter(|v| !v.is_empty()) {
            self.suppress(v);
        }
    }

    pub(super) fn is_suppressed(&self, name: &str) -> bool {
        self.suppressed.contains(&name)
    }

    pub(super) fn threshold(&self, name: &str) -> u64 {
        self.thresholds.0.get(name).copied().unwrap_or(0)
    }
}

/// Reads a threshold file (`NAME=VALUE` lines, `#` comments); a missing
/// file gives no thresholds and no `Thresholds:` text.
#[must_use]
pub fn read_thresholds(path: &str) -> (HashMap<String, u64>, Option<String>) {
    let mut m = HashMap::new();
    let Ok(text) = std::fs::read(path) else {
        return (m, None);
    };
    let text = String::from_utf8_lossy(&text);
    let mut s = String::from("Thresholds: ");
    for line in text.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.trim_start_matches('=');
        let (name, val) = match line.split_once('=') {
            Some((n, v)) => (n, v.trim_start_matches('=')),
            None => (line, ""),
        };
        let val = crate::cnum::c_strtoul(val);
        if ERROR_FIELDS.contains(&name) {
            m.insert(name.to_owned(), val);
            s.push_str(&format!("[{name} = {val}]"));
        }
    }
    (m, Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppression_takes_only_port_counters_names_in_order() {
        let mut s = Settings::default();
        s.suppress_list("PortXmitWait,Bogus,,SymbolErrorCounter,PortXmitWait");
        assert_eq!(
            s.suppressed,
            ["PortXmitWait", "SymbolErrorCounter", "PortXmitWait"]
        );
    }

    #[test]
    fn suppressible_names_are_libibmads_port_counters_fields() {
        // IB_PC_FIRST_F .. IB_PC_LAST_F of libibmad's fields.c: 20 names,
        // QP1Dropped (numbered after them) not among them.
        let names: Vec<_> = suppressible().collect();
        assert_eq!(names.len(), 20);
        assert_eq!(
            (names[0], names[11], names[14], names[19]),
            (
                "PortSelect",
                "CounterSelect2",
                "VL15Dropped",
                "PortXmitWait"
            )
        );
        assert!(!names.contains(&"QP1Dropped"));
    }
}
