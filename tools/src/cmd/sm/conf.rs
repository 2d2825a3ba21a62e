//! `mad sm`'s settings: OpenSM 3.3's command-line options and the
//! opensm.conf keys it honours (`-F FILE` reads them, `-c FILE` writes
//! them with their defaults). A key `mad sm` does not honour is an error
//! naming it and its line, never silently ignored.

use std::path::PathBuf;
use std::time::Duration;

use crate::getopt::{getopt_long, HasArg, LongOpt};

/// Everything `mad sm` was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmOpts {
    /// `-p`, `sm_priority`.
    pub priority: u8,
    /// `-g`, `guid`: the port GUID to run on (0: any).
    pub guid: u64,
    /// `-s`, `sweep_interval`: seconds between light sweeps (0: none).
    pub sweep_interval: u64,
    /// `sminfo_polling_timeout` (ms): how often a standby polls the master.
    pub polling_timeout_ms: u64,
    /// `polling_retry_number`: unanswered polls before a standby takes over.
    pub polling_retries: u32,
    /// `-o`: one sweep, then exit.
    pub once: bool,
    /// `-r`, `reassign_lids`.
    pub reassign_lids: bool,
    /// `-x`, `honor_guid2lid_file`: give the ports the LIDs of OpenSM's
    /// guid2lid file ([`super::guid2lid`]).
    pub honor_guid2lid: bool,
    /// The guid2lid file's entries, read when `honor_guid2lid` is set
    /// (filled by `mad sm` before it starts the SM).
    pub guid2lid: Vec<(u64, u16)>,
    /// `-t`, `transaction_timeout` (ms).
    pub timeout_ms: u64,
    /// `--retries`, `transaction_retries`.
    pub retries: u32,
    /// `-n`, `max_wire_smps`.
    pub max_smps: usize,
    /// `-f`, `log_file` (None: stderr).
    pub log_file: Option<PathBuf>,
    /// `-k`, `sm_key`.
    pub sm_key: u64,
    /// `subnet_prefix`.
    pub subnet_prefix: u64,
    /// `subnet_timeout`.
    pub subnet_timeout: u8,
    /// `--json`: events as JSON lines on stdout.
    pub json: bool,
    /// `-c FILE`: write the honoured keys with their defaults and exit.
    pub create_config: Option<PathBuf>,
    /// `-C`: the CA (umad).
    pub ca: Option<String>,
    /// `-P`: the CA port (umad).
    pub port: Option<u32>,
    /// `-R`, `routing_engine`: the engines to try, in order.
    pub routing_engines: Vec<mad_sm::routing::engines::Engine>,
    /// `-l`, `lmc`: LMC of every CA port, 0-7.
    pub lmc: u8,
    /// `-a`, `root_guid_file`: the file and the root switch GUIDs it
    /// lists (for `updn`).
    pub root_guid_file: Option<(PathBuf, Vec<u64>)>,
    /// `--Pconfig`, `partition_config_file`: the partitions file and
    /// what it says (None: P_Key tables are left as the ports hold them).
    pub partitions: Option<(PathBuf, mad_sm::partitions::PartitionConfig)>,
    /// `-Q`, `qos`, `qos_*`, `max_op_vls`: the QoS tables to program.
    pub qos: mad_sm::qos::QosConfig,
    /// `m_key`: the M_Key programmed into every port and sent in every SMP.
    pub m_key: u64,
    /// `m_key_protection_level`, 0-3.
    pub m_key_protect_bits: u8,
    /// `m_key_lease_period` (seconds).
    pub m_key_lease_period: u16,
    /// `-h`.
    pub help: bool,
}

impl Default for SmOpts {
    fn default() -> Self {
        Self {
            priority: 0,
            guid: 0,
            sweep_interval: 10,
            polling_timeout_ms: 10_000,
            polling_retries: 4,
            once: false,
            reassign_lids: false,
            honor_guid2lid: false,
            guid2lid: Vec::new(),
            timeout_ms: 200,
            retries: 3,
            // OpenSM's default of 4 SMPs on the wire is for hardware; over
            // ibsim and the built-in fabric a wider window is what makes a
            // bring-up fast, so mad sm keeps SM-lite's 64.
            max_smps: 64,
            log_file: None,
            sm_key: 1,
            subnet_prefix: 0xfe80_0000_0000_0000,
            subnet_timeout: 18,
            json: false,
            create_config: None,
            ca: None,
            port: None,
            routing_engines: vec![mad_sm::routing::engines::Engine::MinHop],
            root_guid_file: None,
            lmc: 0,
            partitions: None,
            qos: mad_sm::qos::QosConfig::default(),
            m_key: 0,
            m_key_protect_bits: 0,
            m_key_lease_period: 0,
            help: false,
        }
    }
}

impl SmOpts {
    /// The SM-lite configuration these options ask for.
    #[must_use]
    pub fn sm_config(&self) -> mad_sm::SmConfig {
        mad_sm::SmConfig {
            max_in_flight: self.max_smps,
            timeout: Duration::from_millis(self.timeout_ms),
            retries: self.retries,
            priority: self.priority,
            sm_key: self.sm_key,
            subnet_prefix: self.subnet_prefix,
            subnet_timeout: self.subnet_timeout,
            honor_existing_lids: !self.reassign_lids,
            guid2lid: self.guid2lid.clone(),
            sweep_interval: (self.sweep_interval > 0)
                .then(|| Duration::from_secs(self.sweep_interval)),
            sminfo_polling_timeout: Duration::from_millis(self.polling_timeout_ms),
            polling_retry_number: self.polling_retries,
            lmc: self.lmc,
            routing: mad_sm::routing::engines::RoutingConfig {
                engines: self.routing_engines.clone(),
                root_guids: self
                    .root_guid_file
                    .as_ref()
                    .map(|(_, g)| g.clone())
                    .unwrap_or_default(),
            },
            partitions: self.partitions.as_ref().map(|(_, c)| c.clone()),
            qos: self.qos.clone(),
            m_key: self.m_key,
            m_key_protect_bits: self.m_key_protect_bits,
            m_key_lease_period: self.m_key_lease_period,
            ..mad_sm::SmConfig::default()
        }
    }
}

/// `mad sm`'s usage.
pub const USAGE: &str = "\
Usage: mad --ibsim sm [OPTIONS]
       mad sm -C CA -P PORT [OPTIONS]
       mad --sim[=TOPOLOGY] --no-sm sm [OPTIONS]
Runs SM-lite as the subnet manager of the fabric at this port, with the
SA answering at the same port, until SIGINT / SIGTERM (or one sweep with -o).
On ibsim it attaches as the SM of the node SIM_HOST names (default: the
first node of the topology) and sets IsSM there. With --sim --no-sm it
runs in this process on the built-in fabric left without an SM of its own
(at --sim-node NAME, default the first node).

Options (OpenSM's names):
  -p, --priority N        SMInfo priority, 0-15 (0)
  -g, --guid GUID         only run if this is the port's GUID (umad: the
                          port with this GUID among the CAs' ports)
  -s, --sweep SECONDS     light sweep interval, 0 for none (10)
  -o, --once              one sweep, then exit: status 0 if SUBNET UP was
                          reached, 1 if not
  -r, --reassign_lids     give every port a new LID instead of keeping
                          the one it holds
  -x, --honor_guid2lid    give the ports the LIDs of OpenSM's guid2lid file
                          ($OSM_CACHE_DIR/guid2lid, default
                          /var/cache/opensm/guid2lid) if it exists, at start
                          and on coming out of standby; a bad line is an error
  -t, --timeout MS        SMP timeout (200)
      --retries N         resends of an unanswered SMP (3)
  -n, --maxsmps N         most SMPs outstanding (64)
  -f, --log_file FILE     log to FILE instead of stderr
  -k, --smkey KEY         SM_Key (1)
  -F, --config FILE       read opensm.conf-style KEY VALUE lines
  -c, --create-config FILE  write the keys -F honours with their defaults
  -R, --routing_engine LIST  routing engines to try in order, comma-
                          separated: minhop, updn, ftree (minhop); one that
                          cannot route the fabric logs why and the next is
                          tried, min-hop when none can
  -a, --root_guid_file FILE  root switches' GUIDs for updn, one a line
                          (default: found as OpenSM finds them, else the
                          most central switch)
  -l, --lmc N             LMC of every CA port, 0-7 (0): 2^N LIDs a port,
                          spread over different paths where there are
      --Pconfig FILE      partitions in OpenSM's partitions.conf syntax: P_Key
                          tables on the CA ports and the switch ports facing
                          them (partition enforcement there), PathRecords
                          only within a partition; a bad line is an error
                          naming it (none: P_Key tables are left alone).
                          OpenSM's short -P is the umad port here
  -Q, --qos               program SL2VL and VL arbitration tables from the
                          qos_* keys of -F (OpenSM's defaults otherwise)
  -C CA, -P PORT          a umad port (also under libumad2sim)
      --json              one JSON object per event on stdout
  -h, --help              this text
";

const K_RETRIES: i32 = 1;
const K_JSON: i32 = 2;
const K_PCONFIG: i32 = 3;

const LONG: &[LongOpt<'static>] = &[
    LongOpt::new("priority", HasArg::Required, 'p' as i32),
    LongOpt::new("guid", HasArg::Required, 'g' as i32),
    LongOpt::new("sweep", HasArg::Required, 's' as i32),
    LongOpt::new("once", HasArg::No, 'o' as i32),
    LongOpt::new("reassign_lids", HasArg::No, 'r' as i32),
    LongOpt::new("honor_guid2lid", HasArg::No, 'x' as i32),
    LongOpt::new("timeout", HasArg::Required, 't' as i32),
    LongOpt::new("retries", HasArg::Required, K_RETRIES),
    LongOpt::new("maxsmps", HasArg::Required, 'n' as i32),
    LongOpt::new("log_file", HasArg::Required, 'f' as i32),
    LongOpt::new("smkey", HasArg::Required, 'k' as i32),
    LongOpt::new("config", HasArg::Required, 'F' as i32),
    LongOpt::new("create-config", HasArg::Required, 'c' as i32),
    LongOpt::new("Ca", HasArg::Required, 'C' as i32),
    LongOpt::new("Port", HasArg::Required, 'P' as i32),
    LongOpt::new("json", HasArg::No, K_JSON),
    LongOpt::new("routing_engine", HasArg::Required, 'R' as i32),
    LongOpt::new("root_guid_file", HasArg::Required, 'a' as i32),
    LongOpt::new("lmc", HasArg::Required, 'l' as i32),
    LongOpt::new("Pconfig", HasArg::Required, K_PCONFIG),
    LongOpt::new("qos", HasArg::No, 'Q' as i32),
    LongOpt::new("help", HasArg::No, 'h' as i32),
];

/// A number in decimal or `0x` hexadecimal.
fn num(what: &str, v: &str) -> Result<u64, String> {
    let v = v.trim();
    let r = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse(),
    };
    r.map_err(|_| format!("{what}: {v:?} is not a number"))
}

fn ranged(what: &str, v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n = num(what, v)?;
    if n < lo || n > hi {
        return Err(format!("{what}: {n} is out of range {lo}-{hi}"));
    }
    Ok(n)
}

fn boolean(what: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_uppercase().as_str() {
        "TRUE" => Ok(true),
        "FALSE" => Ok(false),
        _ => Err(format!("{what}: {v:?} is neither TRUE nor FALSE")),
    }
}

/// The engines of `-R` / `routing_engine`.
fn engines(v: &str) -> Result<Vec<mad_sm::routing::engines::Engine>, String> {
    mad_sm::routing::engines::Engine::parse_list(v.trim())
        .map_err(|e| format!("routing_engine: {e}"))
}

/// Reads a `root_guid_file` (`(null)`, as OpenSM writes it: none).
fn root_guids(path: &str) -> Result<Option<(PathBuf, Vec<u64>)>, String> {
    if path == "(null)" || path.is_empty() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("root_guid_file: cannot read {path}: {e}"))?;
    let guids = mad_sm::routing::engines::parse_guid_file(&text)
        .map_err(|e| format!("root_guid_file {path}: {e}"))?;
    Ok(Some((PathBuf::from(path), guids)))
}

/// Reads a partitions file (`(null)`: none).
fn partitions(
    path: &str,
) -> Result<Option<(PathBuf, mad_sm::partitions::PartitionConfig)>, String> {
    if path == "(null)" || path.is_empty() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("partition_config_file: cannot read {path}: {e}"))?;
    let c = mad_sm::partitions::PartitionConfig::parse(&text)
        .map_err(|e| format!("partition_config_file {path}: {e}"))?;
    Ok(Some((PathBuf::from(path), c)))
}

/// Sets the value of opensm.conf key `key`; `Ok(false)` for a key
/// `mad sm` does not honour.
fn set_key(o: &mut SmOpts, key: &str, v: &str) -> Result<bool, String> {
    match key {
        "guid" => o.guid = num(key, v)?,
        "sm_priority" => o.priority = ranged(key, v, 0, 15)? as u8,
        "sm_key" => o.sm_key = num(key, v)?,
        "subnet_prefix" => o.subnet_prefix = num(key, v)?,
        "subnet_timeout" => o.subnet_timeout = ranged(key, v, 0, 31)? as u8,
        "sweep_interval" => o.sweep_interval = num(key, v)?,
        "sminfo_polling_timeout" => o.polling_timeout_ms = ranged(key, v, 1, 3_600_000)?,
        "polling_retry_number" => o.polling_retries = ranged(key, v, 1, 100)? as u32,
        "reassign_lids" => o.reassign_lids = boolean(key, v)?,
        "honor_guid2lid_file" => o.honor_guid2lid = boolean(key, v)?,
        "max_wire_smps" => o.max_smps = ranged(key, v, 1, 256)? as usize,
        "transaction_timeout" => o.timeout_ms = ranged(key, v, 1, 3_600_000)?,
        "transaction_retries" => o.retries = ranged(key, v, 0, 100)? as u32,
        "log_file" => o.log_file = Some(PathBuf::from(v.trim())),
        "routing_engine" => o.routing_engines = engines(v)?,
        "root_guid_file" => o.root_guid_file = root_guids(v.trim())?,
        "lmc" => o.lmc = mad_sm::parse_lmc(v).map_err(|e| format!("{key}: {e}"))?,
        "partition_config_file" => o.partitions = partitions(v.trim())?,
        "qos" => o.qos.enabled = boolean(key, v)?,
        "max_op_vls" => o.qos.max_op_vls = ranged(key, v, 1, 5)? as u8,
        "m_key" => o.m_key = num(key, v)?,
        "m_key_protection_level" => o.m_key_protect_bits = ranged(key, v, 0, 3)? as u8,
        "m_key_lease_period" => o.m_key_lease_period = ranged(key, v, 0, 65535)? as u16,
        _ => return qos_key(o, key, v),
    }
    Ok(true)
}

/// Sets one of OpenSM's `qos_[ca_|sw0_|swe_|rtr_]{max_vls,high_limit,
/// vlarb_high,vlarb_low,sl2vl}` keys; `Ok(false)` for another key.
fn qos_key(o: &mut SmOpts, key: &str, v: &str) -> Result<bool, String> {
    let Some(rest) = key.strip_prefix("qos_") else {
        return Ok(false);
    };
    let q = &mut o.qos;
    let (set, what) = match rest.split_once('_') {
        Some(("ca", w)) => (&mut q.ca, w),
        Some(("sw0", w)) => (&mut q.sw0, w),
        Some(("swe", w)) => (&mut q.swe, w),
        Some(("rtr", w)) => (&mut q.rtr, w),
        _ => (&mut q.default, rest),
    };
    set.set(key, what, v.trim()).map_err(|e| e.to_string())
}

/// Reads opensm.conf-style text (`KEY VALUE` lines, `#` comments).
///
/// # Errors
/// A key not honoured or a bad value, naming the key and its line.
pub fn read_config(o: &mut SmOpts, text: &str, name: &str) -> Result<(), String> {
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let at = format!("{name}:{}", i + 1);
        match set_key(o, key, value) {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "{at}: key \"{key}\" is not supported by mad sm (mad sm -c FILE lists the keys it honours)"
                ))
            }
            Err(e) => return Err(format!("{at}: {e}")),
        }
    }
    Ok(())
}

/// The keys `-F` honours, with the defaults, as `-c` writes them.
#[must_use]
pub fn default_config() -> String {
    let d = SmOpts::default();
    format!(
        "# mad sm configuration: the opensm.conf keys mad sm honours\n\
         # (any other key is an error).\n\n\
         # Port GUID to run on (0: the port the transport opens)\n\
         guid 0x{:016x}\n\n\
         # SM priority, 0 (lowest) to 15 (highest)\n\
         sm_priority {}\n\n\
         # SM_Key\n\
         sm_key 0x{:016x}\n\n\
         # GID prefix programmed into every port\n\
         subnet_prefix 0x{:016x}\n\n\
         # PortInfo SubnetTimeOut programmed into every port\n\
         subnet_timeout {}\n\n\
         # Seconds between light sweeps (0: none)\n\
         sweep_interval {}\n\n\
         # How often (ms) a standby SM polls the master's SMInfo\n\
         sminfo_polling_timeout {}\n\n\
         # Unanswered polls before a standby takes over\n\
         polling_retry_number {}\n\n\
         # Give every port a new LID instead of keeping the one it holds\n\
         reassign_lids {}\n\n\
         # If TRUE give the ports the LIDs of OpenSM's guid2lid file\n\
         # ($OSM_CACHE_DIR/guid2lid) if it exists\n\
         honor_guid2lid_file {}\n\n\
         # Most SMPs outstanding at once\n\
         max_wire_smps {}\n\n\
         # SMP timeout in ms\n\
         transaction_timeout {}\n\n\
         # Resends of an unanswered SMP\n\
         transaction_retries {}\n\n\
         # Log file (none: standard error)\n\
         # log_file /var/log/mad-sm.log\n\n\
         # Routing engines to try in order (minhop, updn, ftree)\n\
         routing_engine minhop\n\n\
         # Root switches' GUIDs for updn, one a line (none: found automatically)\n\
         root_guid_file (null)\n\n\
         # LMC: 2^lmc LIDs for every CA port (0-7)\n\
         lmc {}\n\n\
         # Partitions file in OpenSM's partitions.conf syntax ((null): P_Key\n\
         # tables are left as the ports hold them)\n\
         partition_config_file (null)\n\n\
         # M_Key programmed into every port and sent in every SMP\n\
         m_key 0x{:016x}\n\n\
         # M_KeyProtectBits, 0-3 (2: SMPs without the key are refused)\n\
         m_key_protection_level {}\n\n\
         # Seconds a port keeps its protection after a violation (0: for ever)\n\
         m_key_lease_period {}\n\n\
         # Most OperationalVLs a port is given (1: VL0 ... 5: VL0-14)\n\
         max_op_vls {}\n\n\
         # Program SL2VL and VL arbitration tables (as -Q)\n\
         qos {}\n\n\
         # QoS tables (OpenSM's defaults; qos_ca_, qos_sw0_, qos_swe_ and\n\
         # qos_rtr_ variants of each key override them for one kind of port)\n\
         # qos_max_vls {}\n\
         # qos_high_limit {}\n\
         # qos_vlarb_high {}\n\
         # qos_vlarb_low {}\n\
         # qos_sl2vl {}\n",
        d.guid,
        d.priority,
        d.sm_key,
        d.subnet_prefix,
        d.subnet_timeout,
        d.sweep_interval,
        d.polling_timeout_ms,
        d.polling_retries,
        if d.reassign_lids { "TRUE" } else { "FALSE" },
        if d.honor_guid2lid { "TRUE" } else { "FALSE" },
        d.max_smps,
        d.timeout_ms,
        d.retries,
        d.lmc,
        d.m_key,
        d.m_key_protect_bits,
        d.m_key_lease_period,
        d.qos.max_op_vls,
        if d.qos.enabled { "TRUE" } else { "FALSE" },
        mad_sm::qos::DEFAULT_MAX_VLS,
        mad_sm::qos::DEFAULT_HIGH_LIMIT,
        mad_sm::qos::DEFAULT_VLARB_HIGH,
        mad_sm::qos::DEFAULT_VLARB_LOW,
        mad_sm::qos::DEFAULT_SL2VL,
    )
}

/// Parses `mad sm`'s arguments; `-F` files are read where they stand,
/// so options after one override it.
///
/// # Errors
/// A usage or configuration error, for stderr.
pub fn parse(args: &[String]) -> Result<SmOpts, String> {
    let m = getopt_long("sm", args, "p:g:s:orxt:n:f:k:F:c:C:P:R:a:l:Qh", LONG)?;
    if let Some(extra) = m.operands.first() {
        return Err(format!("sm: unexpected argument {extra:?}"));
    }
    let mut o = SmOpts::default();
    for (key, v) in m.opts {
        let v = v.unwrap_or_default();
        let c = u8::try_from(key).map(char::from).unwrap_or('\0');
        match (key, c) {
            (K_RETRIES, _) => o.retries = ranged("--retries", &v, 0, 100)? as u32,
            (K_JSON, _) => o.json = true,
            (K_PCONFIG, _) => o.partitions = partitions(&v).map_err(|e| format!("sm: {e}"))?,
            (_, 'p') => o.priority = ranged("--priority", &v, 0, 15)? as u8,
            (_, 'g') => o.guid = num("--guid", &v)?,
            (_, 's') => o.sweep_interval = num("--sweep", &v)?,
            (_, 'o') => o.once = true,
            (_, 'r') => o.reassign_lids = true,
            (_, 'x') => o.honor_guid2lid = true,
            (_, 't') => o.timeout_ms = ranged("--timeout", &v, 1, 3_600_000)?,
            (_, 'n') => o.max_smps = ranged("--maxsmps", &v, 1, 256)? as usize,
            (_, 'f') => o.log_file = Some(PathBuf::from(v)),
            (_, 'k') => o.sm_key = num("--smkey", &v)?,
            (_, 'F') => {
                let text = std::fs::read_to_string(&v)
                    .map_err(|e| format!("sm: cannot read config {v}: {e}"))?;
                read_config(&mut o, &text, &v)?;
            }
            (_, 'c') => o.create_config = Some(PathBuf::from(v)),
            (_, 'R') => o.routing_engines = engines(&v).map_err(|e| format!("sm: {e}"))?,
            (_, 'l') => o.lmc = mad_sm::parse_lmc(&v).map_err(|e| format!("--lmc: {e}"))?,
            (_, 'a') => o.root_guid_file = root_guids(&v).map_err(|e| format!("sm: {e}"))?,
            (_, 'Q') => o.qos.enabled = true,
            (_, 'C') => o.ca = Some(v),
            (_, 'P') => o.port = Some(ranged("-P", &v, 0, 255)? as u32),
            _ => o.help = true,
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn opensm_option_names_set_the_sm_config() {
        let o = parse(&args(&[
            "-p",
            "7",
            "--retries",
            "5",
            "-t",
            "50",
            "-n",
            "16",
            "-r",
            "-k",
            "0x42",
            "-o",
        ]))
        .unwrap();
        let c = o.sm_config();
        assert_eq!(c.priority, 7);
        assert_eq!(c.retries, 5);
        assert_eq!(c.timeout, Duration::from_millis(50));
        assert_eq!(c.max_in_flight, 16);
        assert!(!c.honor_existing_lids);
        assert_eq!(c.sm_key, 0x42);
        assert!(o.once);
        assert!(parse(&args(&["-p", "16"])).unwrap_err().contains("0-15"));
    }

    #[test]
    fn routing_engines_and_root_guids_set_the_routing_config() {
        use mad_sm::routing::engines::Engine;
        let dir = std::env::temp_dir().join(format!("mad-sm-roots-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let roots = dir.join("roots");
        std::fs::write(&roots, "0x10\n# x\n0x20\n").unwrap();
        let bad = dir.join("bad");
        std::fs::write(&bad, "0x10\nspine\n").unwrap();
        let r = roots.display().to_string();
        let o = parse(&args(&["-R", "ftree,updn", "-a", &r])).unwrap();
        let c = o.sm_config();
        assert_eq!(c.routing.engines, vec![Engine::FatTree, Engine::UpDown]);
        assert_eq!(c.routing.root_guids, vec![0x10, 0x20]);
        let conf = dir.join("c.conf");
        std::fs::write(&conf, format!("routing_engine updn\nroot_guid_file {r}\n")).unwrap();
        let o = parse(&args(&["-F", &conf.display().to_string()])).unwrap();
        assert_eq!(o.sm_config().routing.engines, vec![Engine::UpDown]);
        assert_eq!(o.sm_config().routing.root_guids, vec![0x10, 0x20]);
        let e = parse(&args(&["--routing_engine", "lash"])).unwrap_err();
        assert!(e.contains("'lash'"), "{e}");
        let e = parse(&args(&["-a", &bad.display().to_string()])).unwrap_err();
        assert!(e.contains("line 2") && e.contains("spine"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn qos_options_and_keys_set_the_qos_config() {
        use mad_sm::qos::PortClass;
        let dir = std::env::temp_dir().join(format!("mad-sm-qos-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let conf = dir.join("q.conf");
        std::fs::write(
            &conf,
            "qos_high_limit 5\nqos_swe_vlarb_low 0:8,1:16\nqos_ca_sl2vl 0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,15\n\
             qos_sw0_max_vls 8\nqos_rtr_vlarb_high 2:1\nmax_op_vls 3\n\
             m_key 0x1234\nm_key_protection_level 2\nm_key_lease_period 60\n",
        )
        .unwrap();
        let o = parse(&args(&["-Q", "-F", &conf.display().to_string()])).unwrap();
        let c = o.sm_config();
        assert!(c.qos.enabled);
        assert_eq!(c.qos.max_op_vls, 3);
        assert_eq!(c.qos.tables(PortClass::Ca).high_limit, 5);
        assert_eq!(c.qos.tables(PortClass::Ca).sl2vl[15], 15);
        assert_eq!(c.qos.swe.vlarb_low, Some(vec![(0, 8), (1, 16)]));
        assert_eq!(c.qos.sw0.max_vls, Some(8));
        assert_eq!(c.qos.rtr.vlarb_high, Some(vec![(2, 1)]));
        assert_eq!(
            (c.m_key, c.m_key_protect_bits, c.m_key_lease_period),
            (0x1234, 2, 60)
        );
        assert!(parse(&args(&["--qos"])).unwrap().qos.enabled);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_malformed_qos_value_is_an_error_naming_the_key_and_line() {
        let mut o = SmOpts::default();
        let e = read_config(&mut o, "qos TRUE\nqos_vlarb_high 0:4,1:x\n", "q.conf").unwrap_err();
        assert!(e.starts_with("q.conf:2: qos_vlarb_high: entry 2"), "{e}");
        let e = read_config(&mut o, "qos_swe_sl2vl 1,2\n", "q.conf").unwrap_err();
        assert!(e.contains("q.conf:1: qos_swe_sl2vl: 2 VLs"), "{e}");
        let e = read_config(&mut o, "qos_ca_bogus 1\n", "q.conf").unwrap_err();
        assert!(e.contains("\"qos_ca_bogus\" is not supported"), "{e}");
        let e = read_config(&mut o, "m_key_protection_level 4\n", "q.conf").unwrap_err();
        assert!(e.contains("0-3"), "{e}");
    }

    #[test]
    fn lmc_is_set_by_l_and_the_lmc_key_and_a_bad_value_is_refused_naming_it() {
        assert_eq!(parse(&args(&["-l", "2"])).unwrap().sm_config().lmc, 2);
        assert_eq!(parse(&args(&["--lmc", "7"])).unwrap().sm_config().lmc, 7);
        let e = parse(&args(&["--lmc", "8"])).unwrap_err();
        assert!(e.contains("--lmc") && e.contains("0-7"), "{e}");
        let e = parse(&args(&["-l", "x"])).unwrap_err();
        assert!(e.contains("--lmc") && e.contains("\"x\""), "{e}");
        let mut o = SmOpts::default();
        read_config(&mut o, "lmc 3\n", "a.conf").unwrap();
        assert_eq!(o.sm_config().lmc, 3);
        let e = read_config(&mut o, "\nlmc 9\n", "a.conf").unwrap_err();
        assert!(
            e.contains("a.conf:2") && e.contains("lmc") && e.contains("0-7"),
            "{e}"
        );
    }

    #[test]
    fn pconfig_reads_partitions_and_a_bad_line_is_named() {
        let dir = std::env::temp_dir().join(format!("mad-sm-parts-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let good = dir.join("partitions.conf");
        std::fs::write(&good, "Default=0x7fff : ALL=full;\nA=0x1 : 0x10=full;\n").unwrap();
        let bad = dir.join("bad.conf");
        std::fs::write(
            &bad,
            "Default=0x7fff : ALL=full;\n\nA=0x1 : 0x10=fulll, spine;\n",
        )
        .unwrap();
        let g = good.display().to_string();
        let o = parse(&args(&["--Pconfig", &g])).unwrap();
        let c = o.sm_config().partitions.unwrap();
        assert_eq!(c.partition(1).unwrap().name, "A");
        let conf = dir.join("c.conf");
        std::fs::write(&conf, format!("partition_config_file {g}\n")).unwrap();
        let o = parse(&args(&["-F", &conf.display().to_string()])).unwrap();
        assert!(o.sm_config().partitions.is_some());
        let b = bad.display().to_string();
        let e = parse(&args(&["--Pconfig", &b])).unwrap_err();
        assert!(
            e.contains(&b) && e.contains("line 3") && e.contains("'spine'"),
            "{e}"
        );
        let e = parse(&args(&["--Pconfig", "/nonexistent/p.conf"])).unwrap_err();
        assert!(e.contains("cannot read /nonexistent/p.conf"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_written_config_reads_back_as_the_defaults() {
        let mut o = SmOpts::default();
        read_config(&mut o, &default_config(), "x.conf").unwrap();
        assert_eq!(o, SmOpts::default());
    }

    #[test]
    fn an_unsupported_key_is_an_error_naming_it_and_its_line() {
        let mut o = SmOpts::default();
        let e = read_config(&mut o, "sm_priority 3\n\nlmc_esp0 TRUE\n", "a.conf").unwrap_err();
        assert!(e.contains("a.conf:3") && e.contains("\"lmc_esp0\""), "{e}");
        let e = read_config(&mut o, "reassign_lids maybe\n", "a.conf").unwrap_err();
        assert!(e.contains("a.conf:1") && e.contains("reassign_lids"), "{e}");
        assert_eq!(o.priority, 3);
    }
}
