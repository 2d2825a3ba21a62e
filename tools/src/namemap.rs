//! infiniband-diags' node name map (`--node-name-map FILE`, default
//! `/etc/infiniband-diags/ib-node-name-map` when it exists): lines of
//! `GUID "name"`, read the way rdma-core's `util/node_name_map.c` reads
//! them.

use std::collections::HashMap;
use std::path::Path;

use mad_core::wire::attr::NodeDescription;

/// The default map file infiniband-diags reads when none is given.
pub const DEFAULT_NODE_NAME_MAP: &str = "/etc/infiniband-diags/ib-node-name-map";

/// GUID → name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    names: HashMap<u64, String>,
}

impl NameMap {
    /// Parses map text. A malformed line makes the whole map unusable,
    /// as in rdma-core: the error names it.
    ///
    /// # Errors
    /// The first line that does not start with a number followed by a
    /// blank, `#` or the end of the line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut names = HashMap::new();
        for line in text.split_inclusive('\n') {
            let p = line.trim_start_matches(|c: char| c.is_ascii_whitespace());
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            let bad = || line.trim_end_matches('\n').to_owned();
            let Some((guid, rest)) = crate::cnum::c_strtoull_rest(p) else {
                return Err(bad());
            };
            if !(rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_whitespace() || c == '#'))
            {
                return Err(bad());
            }
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
            let rest = rest.split('\n').next().unwrap_or("");
            // strtok(p, "\"#"): the first run of characters that are
            // neither quote nor '#'.
            let name = rest.split(['"', '#']).find(|s| !s.is_empty());
            if let Some(name) = name {
                names.entry(guid).or_insert_with(|| name.to_owned());
            }
        }
        Ok(Self { names })
    }

    /// Reads `path`.
    ///
    /// # Errors
    /// The file cannot be read or is longer than
    /// [`MAX_NODE_NAME_MAP_LEN`](crate::limits::MAX_NODE_NAME_MAP_LEN), or
    /// a line is malformed (the warning infiniband-diags prints, which
    /// then goes on without a map).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = crate::limits::read_file(
            path,
            crate::limits::MAX_NODE_NAME_MAP_LEN,
            "a node name map",
        )
        .map_err(|e| {
            format!(
                "WARNING failed to open node name map \"{}\" ({e})",
                path.display()
            )
        })?;
        Self::parse(&String::from_utf8_lossy(&text)).map_err(|line| {
            format!(
                "WARNING failed to parse node name map \"{}\"\nWARNING failed line: \"{line}\"",
                path.display()
            )
        })
    }

    /// The map infiniband-diags would use: `path` if given, else the
    /// default file when it exists. Warnings (unreadable or malformed
    /// map) are returned beside `None`.
    #[must_use]
    pub fn open(path: Option<&Path>) -> (Option<Self>, Option<String>) {
        let p = match path {
            Some(p) => p,
            None => {
                let d = Path::new(DEFAULT_NODE_NAME_MAP);
                if !d.exists() {
                    return (None, None);
                }
                d
            }
        };
        match Self::load(p) {
            Ok(m) => (Some(m), None),
            Err(w) => (None, Some(w)),
        }
    }

    /// `remap_node_name`: the map's name of `guid`, else the node
    /// description cleaned as infiniband-diags prints it.
    #[must_use]
    pub fn remap(&self, guid: u64, desc: &NodeDescription) -> String {
        self.get(guid)
            .map_or_else(|| crate::diags::dump::clean_nodedesc(desc), str::to_owned)
    }

    /// The name of `guid`, if mapped.
    #[must_use]
    pub fn get(&self, guid: u64) -> Option<&str> {
        self.names.get(&guid).map(String::as_str)
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_unquoted_comments_and_bases() {
        let m = NameMap::parse(
            "# comment\n\n0x200000 \"Spine 1\" # trailing\n  0x100000   host-a # c\n012 octal\n42\tdecimal\n",
        )
        .unwrap_or_default();
        assert_eq!(m.get(0x200000), Some("Spine 1"));
        assert_eq!(m.get(0x100000), Some("host-a "));
        assert_eq!(m.get(0o12), Some("octal"));
        assert_eq!(m.get(42), Some("decimal"));
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn first_entry_of_a_guid_wins() {
        let map = NameMap::parse("1 \"a\"\n1 \"b\"\n").unwrap_or_default();
        assert_eq!(map.get(1), Some("a"));
    }

    #[test]
    fn malformed_line_rejects_the_map() {
        assert_eq!(NameMap::parse("0x1 a\nzz b\n"), Err("zz b".to_owned()));
        assert_eq!(NameMap::parse("0x1x a\n"), Err("0x1x a".to_owned()));
    }

    #[test]
    fn guid_without_name_is_skipped() {
        let m = NameMap::parse("0x5\n0x6 \"\"\n").unwrap_or_default();
        assert!(m.is_empty());
    }

    #[test]
    fn remap_takes_quoted_and_bare_names_else_the_description() {
        let m = NameMap::parse("# c\n0x10 \"sw one\"\n0x20 host2\n").unwrap();
        let nd = NodeDescription::from_text("orig");
        assert_eq!(m.remap(0x10, &nd), "sw one");
        assert_eq!(m.remap(0x20, &nd), "host2");
        assert_eq!(m.remap(0x30, &nd), "orig");
    }
}
