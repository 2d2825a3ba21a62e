//! The shared layer of the infiniband-diags-compatible commands (what
//! infiniband-diags' `ibdiag_common.c` and libibmad do for every tool):
//!
//! - [`options`]: the common options and a tool's own, parsed with
//!   [`crate::getopt`], the usage text, the config file;
//! - [`dest`]: destinations (LID, directed route, GUID, combined route),
//!   the tool's session, the SMP Get every tool makes;
//! - [`report`]: libibmad's warnings and the JSON pieces several tools
//!   print, the JSON result and its incomplete marks;
//! - [`fabric`]: what the fabric-wide tools share (a discovery, its
//!   limits, the node name map, how a link is printed);
//! - [`ibdebug`]: libibmad's debug and error lines (`-d`, `-e`);
//! - [`trace`]: ibtracert's route walk, also used by ibportstate;
//! - [`fts`]: a switch's forwarding tables as ibroute and dump_fts print them.
//!
//! Commands import from here and from [`crate::command`], never from
//! the dispatcher or from each other.

pub mod dest;
pub mod fabric;
pub mod fts;
pub mod getopt_std;
pub mod ibdebug;
pub mod ops;
pub mod options;
pub mod perl_cache;
pub mod report;
pub mod trace;

pub use dest::{
    dest_arg, dr_node_info, open_session, resolve_dest, resolve_guid, resolve_guid_or_warn,
    resolve_guid_warned, smp_get, str2drpath, Dest, RawSmpData,
};
pub use fabric::{
    cached_discovery, check_complete, limits, link_str, load_cache, max_msg, open_name_map, remap,
    route_start, run_discovery, run_scan, scan_depth, scan_of, ScanStart,
};
pub use options::{
    diff_opts, load_cache_opt, node_name_map_opt, parse, usage_text, Common, DestType, Opt, OptKey,
    Parsed, ToolSpec, COMMON_OPTS, DEFAULT_CONFIG, DIAGS_VERSION, JSON_KEY, OPT_PER_NODE,
    OUTSTANDING_SMPS_OPT, SWEEP_WINDOW_OPTS,
};
pub use report::{
    attr_json, dest_json, hex, human_duration, incomplete, portinfo_json, print_json,
    rpc_failed_warning, warn_failed,
};
pub use trace::dr_route_to;
