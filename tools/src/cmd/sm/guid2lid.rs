//! OpenSM's guid2lid file, for `mad sm -x` (`--honor_guid2lid`,
//! opensm.conf `honor_guid2lid_file TRUE`): the LIDs OpenSM gave, one
//! `0xGUID 0xMIN_LID 0xMAX_LID` line per port, kept in `$OSM_CACHE_DIR`
//! (default `/var/cache/opensm`). Numbers are read as OpenSM reads them
//! (`strtoul(s, NULL, 0)`: `0x` hex, leading-`0` octal, else decimal).
//!
//! OpenSM drops an entry it finds invalid (ERR 0312: LID 0, MIN above
//! MAX, a LID past the unicast range or GUID 0; ERR 0314: a LID another
//! GUID has) and goes on; `mad sm` refuses the file instead, naming the
//! line, so that a LID someone counts on is never silently given away.
//! With LMC 0 a port gets MIN_LID.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::cnum::c_strtoul_full;

/// The highest unicast LID.
const MAX_UNICAST_LID: u64 = 0xBFFF;

/// Largest guid2lid file read (a 0xBFFF-LID subnet's is under 3 MB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Where OpenSM keeps its guid2lid file: `$OSM_CACHE_DIR/guid2lid`
/// (default `/var/cache/opensm/guid2lid`).
#[must_use]
pub fn default_path() -> PathBuf {
    let dir = std::env::var_os("OSM_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/var/cache/opensm"), PathBuf::from);
    dir.join("guid2lid")
}

/// Parses guid2lid text (`name` for messages): (port GUID, LID) in file
/// order. Blank lines and lines starting with `#` are skipped.
///
/// # Errors
/// The first bad line, as `NAME:LINE: what is wrong`.
pub fn parse(text: &str, name: &str) -> Result<Vec<(u64, u16)>, String> {
    let mut out = Vec::new();
    let mut guid_line: HashMap<u64, usize> = HashMap::new();
    let mut lid_line: HashMap<u64, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", i + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first().is_none_or(|w| w.starts_with('#')) {
            continue;
        }
        let [g, lo, hi] = words[..] else {
            return Err(format!(
                "{at}: {} words where a guid2lid line has 3 (0xGUID MIN_LID MAX_LID): {:?}",
                words.len(),
                shown(line)
            ));
        };
        let number = |w: &str, what: &str| {
            c_strtoul_full(w).ok_or_else(|| format!("{at}: {what} {w:?} is not a number"))
        };
        let guid = number(g, "GUID")?;
        let (min, max) = (number(lo, "LID")?, number(hi, "LID")?);
        if guid == 0 {
            return Err(format!("{at}: GUID 0 is no port's"));
        }
        if min == 0 || min > max || max > MAX_UNICAST_LID {
            return Err(format!(
                "{at}: illegal LID range [{min}:{max}] for GUID {guid:#018x} (LIDs are 1-{MAX_UNICAST_LID}, MIN_LID first)"
            ));
        }
        if let Some(first) = guid_line.insert(guid, i + 1) {
            return Err(format!(
                "{at}: GUID {guid:#018x} is given a LID on line {first} already"
            ));
        }
        for lid in min..=max {
            if let Some(first) = lid_line.insert(lid, i + 1) {
                return Err(format!(
                    "{at}: LID {lid} (GUID {guid:#018x}) is another GUID's on line {first}"
                ));
            }
        }
        // Checked above: 1..=0xBFFF.
        out.push((guid, u16::try_from(min).unwrap_or(0)));
    }
    Ok(out)
}

/// Reads and parses the file at `path`; `Ok(None)` when there is none
/// (OpenSM honours the file "if such file exists").
///
/// # Errors
/// An unreadable file, or its first bad line.
pub fn read(path: &Path) -> Result<Option<Vec<(u64, u16)>>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let name = path.display().to_string();
    let bytes = crate::limits::read_file(path, MAX_FILE_BYTES, "a guid2lid file")
        .map_err(|e| format!("cannot read the guid2lid file {name}: {e}"))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| format!("{name}: not text (byte {} is not UTF-8)", e.valid_up_to()))?;
    parse(text, &name).map(Some)
}

fn shown(line: &str) -> String {
    line.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opensm_lines_give_each_guid_its_min_lid() {
        let t = "# comment\n0x0000000000100001 0x0001 0x0001\n\n0x200001 0x000a 0x000a\n0x200002 12 12\n";
        assert_eq!(
            parse(t, "g").unwrap(),
            vec![(0x10_0001, 1), (0x20_0001, 10), (0x20_0002, 12)]
        );
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        for (t, want) in [
            ("0x1 0x1\n", "g:1: 2 words"),
            ("0x1 0x1 0x1\n0x2 0x2 0x2 x\n", "g:2: 4 words"),
            ("0x1 0x1 0x1\nzz 0x2 0x2\n", "g:2: GUID \"zz\""),
            ("0x1 0x1z 0x1\n", "g:1: LID \"0x1z\""),
            ("0x0 0x1 0x1\n", "g:1: GUID 0"),
            ("0x1 0 0\n", "g:1: illegal LID range [0:0]"),
            ("0x1 0x5 0x4\n", "g:1: illegal LID range [5:4]"),
            (
                "0x1 0xc000 0xc000\n",
                "g:1: illegal LID range [49152:49152]",
            ),
            (
                "0x1 1 1\n0x1 2 2\n",
                "g:2: GUID 0x0000000000000001 is given a LID on line 1",
            ),
            (
                "0x1 1 1\n\n0x2 1 1\n",
                "g:3: LID 1 (GUID 0x0000000000000002) is another GUID's on line 1",
            ),
        ] {
            let e = parse(t, "g").unwrap_err();
            assert!(e.starts_with(want), "{t:?}: {e}");
        }
    }

    #[test]
    fn a_missing_file_is_none_and_a_bad_one_names_itself() {
        let dir = std::env::temp_dir().join(format!("mad-g2l-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir.join("none")).unwrap(), None);
        let p = dir.join("guid2lid");
        std::fs::write(&p, "0x1 1\n").unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.contains(&format!("{}:1:", p.display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
