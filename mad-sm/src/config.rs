//! SM-lite's settings.

use std::time::Duration;

/// SM-lite's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmConfig {
    /// Most SMPs outstanding at once (default 64; keep ≤ 256 on ibsim).
    pub max_in_flight: usize,
    /// How long to wait for each answer before resending (default 200 ms).
    pub timeout: Duration,
    /// Resends of an unanswered SMP before it counts as failed (default 3).
    pub retries: u32,
    /// SMInfo priority, 0–15 (default 0).
    pub priority: u8,
    /// SM_Key, returned in SMInfo (see [`SmConfig::hide_sm_key`]).
    pub sm_key: u64,
    /// Answer SMInfo Get with SM_Key 0 unless the requester presents
    /// the key or says it is Master (IBTA 14.4.2). Default false, as
    /// OpenSM 3.3.23 does: it returns its key to every requester and
    /// ignores an SM whose answer carries another key, 0 included
    /// ("ERR 2F18 ... Ignoring SMInfo"); its own requests carry no key.
    pub hide_sm_key: bool,
    /// M_Key sent in every SMP and programmed into every port (default 0;
    /// OpenSM's `m_key`).
    pub m_key: u64,
    /// M_KeyProtectBits programmed with [`SmConfig::m_key`], 0-3 (OpenSM's
    /// `m_key_protection_level`, default 0): 1 hides the key from Gets
    /// without it, 2 also refuses those Gets, 3 as 2 (IBA 14.2.4.1).
    pub m_key_protect_bits: u8,
    /// M_KeyLeasePeriod programmed with the key, in seconds (OpenSM's
    /// `m_key_lease_period`, default 0: the protection never lapses).
    /// After a violation a port drops its protection when this long
    /// passes without an SMP carrying the key; the next heavy sweep
    /// programs it again.
    pub m_key_lease_period: u16,
    /// QoS: the SL2VL and VLArbitration tables to program (OpenSM's
    /// `qos` and `qos_*` options) and `max_op_vls`.
    pub qos: crate::qos::QosConfig,
    /// GID prefix programmed into every port (default 0xfe80::).
    pub subnet_prefix: u64,
    /// PortInfo SubnetTimeOut programmed into every port (default 18,
    /// about 1.07 s; 4.096 µs × 2^value).
    pub subnet_timeout: u8,
    /// Lowest LID given out (default 1).
    pub first_lid: u16,
    /// Keep a LID a port already holds when nobody else has it (default
    /// true, as OpenSM does); LIDs are stable across SM restarts then.
    pub honor_existing_lids: bool,
    /// LIDs to give these port GUIDs whatever the ports hold, at every
    /// sweep as master (the first one, and on coming out of standby):
    /// OpenSM's guid2lid file, honoured as `honor_guid2lid_file` does. A
    /// LID is kept for its GUID even while that port is absent. An entry
    /// whose LID is not unicast (1–0xBFFF) or is listed twice is skipped
    /// (`mad sm -x` refuses such a file, naming the line). Default empty.
    pub guid2lid: Vec<(u64, u16)>,
    /// After a sweep with errors, sweep again after this long (default
    /// 1 s; `None`: only when told). Not after a sweep that found more
    /// ports than unicast LIDs or a switch table too small for the
    /// highest LID: sweeping again would find the same.
    pub error_resweep_delay: Option<Duration>,
    /// While Standby, how often to poll the master's SMInfo (OpenSM's
    /// `sminfo_polling_timeout`, default 10 s).
    pub sminfo_polling_timeout: Duration,
    /// Polls in a row the master may leave unanswered before SM-lite
    /// takes over (OpenSM's `polling_retry_number`, default 4). Each
    /// poll waits [`SmConfig::timeout`] for its answer; a dead master is
    /// noticed within `sminfo_polling_timeout` × `polling_retry_number`
    /// plus that one timeout.
    pub polling_retry_number: u32,
    /// While Master, a light sweep (SwitchInfo of every switch: did a
    /// port change state?) this often; a change found starts a heavy
    /// sweep (OpenSM's `sweep_interval`, 10 s there; default here
    /// `None`: no light sweeps, as before, for embedders that drive
    /// re-sweeps themselves).
    pub sweep_interval: Option<Duration>,
    /// LMC of every CA port, 0–7 (OpenSM's `lmc`, `-l`; default 0): a CA
    /// port gets 2^lmc LIDs, the range aligned, and the routes spread the
    /// LIDs of one port over different paths where the fabric has them.
    /// A switch's port 0 keeps LMC 0, as OpenSM gives it unless
    /// `lmc_esp0` is set. A value over 7 is taken as 7.
    pub lmc: u8,
    /// The routing engines to try and their settings (OpenSM's
    /// `routing_engine`, `root_guid_file`); default min-hop alone.
    pub routing: crate::routing::engines::RoutingConfig,
    /// The partitions to program (OpenSM's `partitions.conf`, `-P`):
    /// P_Key tables on every end port and on the switch ports facing
    /// them, with partition enforcement there ([`crate::partitions`]).
    /// Default `None`: P_Key tables are left as the ports hold them.
    pub partitions: Option<crate::partitions::PartitionConfig>,
}

impl Default for SmConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 64,
            timeout: Duration::from_millis(200),
            retries: 3,
            priority: 0,
            sm_key: 0,
            hide_sm_key: false,
            m_key: 0,
            m_key_protect_bits: 0,
            m_key_lease_period: 0,
            qos: crate::qos::QosConfig::default(),
            subnet_prefix: 0xfe80_0000_0000_0000,
            subnet_timeout: 18,
            first_lid: 1,
            honor_existing_lids: true,
            guid2lid: Vec::new(),
            error_resweep_delay: Some(Duration::from_secs(1)),
            sminfo_polling_timeout: Duration::from_secs(10),
            polling_retry_number: 4,
            sweep_interval: None,
            lmc: 0,
            routing: crate::routing::engines::RoutingConfig::default(),
            partitions: None,
        }
    }
}

/// The highest LMC (IBA: 2^7 LIDs a port).
pub const MAX_LMC: u8 = 7;

/// An LMC as a command line or a config file gives it, 0-[`MAX_LMC`].
///
/// # Errors
/// A message naming the value when it is not an LMC.
pub fn parse_lmc(v: &str) -> Result<u8, String> {
    match v.trim().parse::<u8>() {
        Ok(n) if n <= MAX_LMC => Ok(n),
        _ => Err(format!("{v:?} is not an LMC (0-{MAX_LMC})")),
    }
}
