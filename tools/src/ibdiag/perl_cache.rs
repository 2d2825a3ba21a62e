//! The topology file infiniband-diags' Perl scripts share
//! (`IBswcountlimits.pm`: `get_cache_file`,
//! `generate_ibnetdiscover_topology`): what `ibnetdiscover -g` prints,
//! kept in `/var/cache/infiniband-diags/ibnetdiscover-CA-PORT.topology`
//! and made again when missing or asked to (`-R`). The real scripts and
//! ours share the file.

use crate::command::{CliError, Invocation};
use crate::discover::format::{self, TopologyOptions};
use crate::ibdiag::{self, limits, open_name_map, run_discovery, Common};

/// Where infiniband-diags' Perl scripts keep their topology files.
pub const CACHE_DIR: &str = "/var/cache/infiniband-diags";

/// The topology file for `-C ca -P port` (either may be empty), made
/// first when `regenerate` or missing; returns its path.
///
/// # Errors
/// No port or a failed discovery (`IBEXIT`), a directory or file that
/// cannot be made (exit 2, as Perl's `die`).
pub fn topology_file(
    inv: &mut Invocation<'_, '_>,
    ca: &str,
    port: &str,
    regenerate: bool,
) -> Result<String, CliError> {
    if !std::path::Path::new(CACHE_DIR).is_dir() {
        std::fs::create_dir_all(CACHE_DIR)
            .map_err(|e| CliError::Stderr(format!("cannot create {CACHE_DIR}: {e}\n"), 2))?;
    }
    let file = format!("{CACHE_DIR}/ibnetdiscover-{ca}-{port}.topology");
    if regenerate || !std::path::Path::new(&file).is_file() {
        let c = Common {
            ca: (!ca.is_empty()).then(|| ca.to_owned()),
            port: (!port.is_empty()).then(|| crate::cnum::parse_port_arg(port)),
            ..Common::default()
        };
        let session = ibdiag::open_session(inv, &c)?;
        let d = run_discovery(inv, &session, limits(None, None), 0, false)?;
        let _ = session.close();
        let map = open_name_map(inv, None);
        let text = format::topology(
            &d.fabric,
            &TopologyOptions {
                group: true,
                name_map: map.as_ref(),
                ctime: crate::discover::ctime::ctime_now(),
                ..TopologyOptions::default()
            },
        );
        std::fs::write(&file, text)
            .map_err(|e| CliError::Stderr(format!("Failed to open ibnet topology: {e}\n"), 2))?;
    }
    Ok(file)
}
