//! The front door: [`open`] a port on the built-in fabric, a running
//! ibsim or a real umad port, and query it by attribute name.
//!
//! A [`Port`] is the `mad` commands' session ([`mad_tools::session`]):
//! an agent [`Runtime`](mad_agents::Runtime) over the transport, with the
//! SMP, PerfMgt and SA clients of `mad-agents` on top. Discovery and the
//! counter sweep are those of `mad ibnetdiscover` and `mad sweep`
//! ([`crate::fabric`]); port events come through [`Port::events`].
//!
//! The port is shared ([`Port::shared_port`]): services opened on it
//! ([`Port::open_sa`], [`Port::open_cm`], [`Port::open_reader`],
//! [`Port::register`]) keep it running after the [`Port`] is closed; the
//! last of them stops it (see [Services on one
//! port](crate#services-on-one-port)).

use std::sync::{Mutex, TryLockError};
use std::time::Duration;

use mad_agents::perf::PerfClient;
use mad_agents::sa::SaClientConfig;
use mad_agents::sa::{SaClient, SaError};
use mad_agents::smp::{self, SmpClient, SmpTarget};
use mad_agents::{query, AgentEvent, AgentReceiver, AgentSpec, PortAgent, QueryError, SharedPort};
use mad_cm::service::CmService;
use mad_cm::CmConfig;
use mad_core::transport::PortAttrs;
use mad_core::transport::Qp;
use mad_core::wire::sa_records::NodeRecord;
use mad_core::wire::{Method, MAD_LEN, SMP_DATA_LEN, SMP_DATA_OFFSET};
use mad_tools::discover::agent::AgentExchange;
use mad_tools::session::{Backend as SessionBackend, Session, SessionOpts, TransportChoice};

use crate::attr::{Answer, Attribute, Class, Input, Kind};
use crate::Error;

/// Where to open a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The built-in fabric: this topology file (ibsim / ibnetdiscover
    /// format), or `None` for the default one. SM-lite brings it up and
    /// answers SA queries.
    Sim(Option<String>),
    /// A running ibsim, found through its environment variables
    /// (`IBSIM_SERVER_NAME`, `IBSIM_SERVER_PORT`, `IBSIM_SOCKNAME`).
    IbSim,
    /// A real port through libibumad: this CA (`None`: the first) and
    /// port (0: the first active one).
    Umad {
        /// CA name (`mlx5_0`).
        ca: Option<String>,
        /// Port number.
        port: u8,
    },
}

/// How to open a port: [`open`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Which fabric.
    pub fabric: Backend,
    /// On the built-in fabric: the node to attach at (its id or
    /// description; default: the first free CA port).
    pub sim_node: Option<String>,
    /// Response timeout of each query (resent twice more after it).
    pub timeout: Duration,
}

impl Options {
    /// The built-in fabric with its default topology.
    #[must_use]
    pub fn sim() -> Self {
        Self::on(Backend::Sim(None))
    }

    /// Options for `fabric` with the default timeout (1 s, libibmad's).
    #[must_use]
    pub fn on(fabric: Backend) -> Self {
        Self {
            fabric,
            sim_node: None,
            timeout: mad_tools::session::DEFAULT_TIMEOUT,
        }
    }

    /// Reads `--sim[=TOPOLOGY]`, `--ibsim` and `-C CA -P PORT` from a
    /// command line (the examples' convention); the built-in fabric when
    /// none is given.
    ///
    /// # Errors
    /// [`Error::Input`] for an unknown argument or a bad port number.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, Error> {
        let mut o = Self::sim();
        let mut ca = None;
        let mut port = None;
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--sim" => o.fabric = Backend::Sim(None),
                "--ibsim" => o.fabric = Backend::IbSim,
                "-C" => ca = it.next(),
                "-P" => {
                    let v = it.next().unwrap_or_default();
                    port = Some(v.parse::<u8>().map_err(|_| {
                        Error::Input(format!("-P takes a port number (0-255), not {v:?}"))
                    })?);
                }
                s if s.starts_with("--sim=") => {
                    o.fabric = Backend::Sim(Some(s["--sim=".len()..].to_owned()));
                }
                s if s.starts_with("--sim-node=") => {
                    o.sim_node = Some(s["--sim-node=".len()..].to_owned());
                }
                other => {
                    return Err(Error::Input(format!(
                        "unknown argument {other:?} (use --sim[=TOPOLOGY], --ibsim, -C CA -P PORT)"
                    )))
                }
            }
        }
        if ca.is_some() || port.is_some() {
            o.fabric = Backend::Umad {
                ca,
                port: port.unwrap_or(0),
            };
        }
        Ok(o)
    }
}

/// Where an SMP goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// LID-routed to this LID.
    Lid(u16),
    /// Directed route through these egress ports (empty: the local port).
    Dr(Vec<u8>),
    /// The port with this GUID: its LID is asked of the SA first.
    Guid(u64),
}

/// An open port with the stack running on it.
pub struct Port {
    /// The agent of [`Port::smp_get_batch`], registered by the first
    /// batch and kept for the next ones (declared first: dropped before
    /// the session stops the runtime).
    batch: Mutex<Option<BatchAgent>>,
    session: Session,
    sa: SaClient,
}

/// The send-only QP0 agent that [`Port::smp_get_batch`] sends through,
/// kept across batches: registering and deregistering an agent per batch
/// cost a hand-over to the runtime's loop thread each time (the
/// deregistration waits for it), which on a loaded machine is most of a
/// batch's wall time.
struct BatchAgent {
    agent: mad_agents::Agent,
    rx: mad_agents::AgentReceiver,
    /// The batch number, in the high 32 bits of every cookie it sends:
    /// a completion of an earlier batch (one that ended early) is
    /// recognised and dropped.
    serial: u32,
}

impl BatchAgent {
    fn register(rt: &mad_agents::Runtime) -> Result<Self, Error> {
        let (agent, rx) = rt
            .register_channel(AgentSpec::send_only("smp-batch", Qp::Qp0))
            .map_err(|e| Error::Register(e.to_string()))?;
        Ok(Self {
            agent,
            rx,
            serial: 0,
        })
    }
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// The attribute a completed SMP query answered, not yet decoded.
fn smp_answer(kind: &'static Kind, done: &mad_agents::Completion) -> Result<Answer, Error> {
    // LID-routed and directed-route SMPs alike carry the attribute at
    // byte 64.
    let bytes = query::response_bytes(done, kind.attr_id.0)?;
    Answer::new(kind, bytes.get(SMP_DATA_OFFSET..).unwrap_or(&[]))
}

/// Opens a port as `opts` says and starts the stack on it.
///
/// # Errors
/// [`Error::Open`]: no such topology, ibsim not running, no such device.
pub fn open(opts: &Options) -> Result<Port, Error> {
    let (transport, ca, port) = match &opts.fabric {
        Backend::Sim(t) => (TransportChoice::Sim(t.clone()), None, None),
        Backend::IbSim => (TransportChoice::IbSim, None, None),
        Backend::Umad { ca, port } => (TransportChoice::Umad, ca.clone(), Some(u32::from(*port))),
    };
    let so = SessionOpts {
        transport,
        sim_node: opts.sim_node.clone(),
        ca,
        port,
        ..SessionOpts::default()
    };
    let mut session = Session::open(&so).map_err(|e| Error::Open(e.message))?;
    session.set_timeout(opts.timeout);
    let cfg = mad_agents::sa::SaClientConfig {
        timeout: opts.timeout,
        retries: mad_tools::session::DEFAULT_RETRIES,
        receive_reports: true,
        table_mode: session.sa_table_mode(),
        ..mad_agents::sa::SaClientConfig::default()
    };
    let sa =
        SaClient::open(session.shared_port(), cfg).map_err(|e| Error::Register(e.to_string()))?;
    Ok(Port {
        batch: Mutex::new(None),
        session,
        sa,
    })
}

impl Port {
    /// The port's attributes as they stand (LID, GUIDs, SM LID, state).
    #[must_use]
    pub fn attrs(&self) -> PortAttrs {
        self.session.port_attrs()
    }

    /// One line saying where the port is.
    #[must_use]
    pub fn describe(&self) -> String {
        self.session.describe()
    }

    /// The SMP client (typed queries: `smp().node_info(...)`).
    #[must_use]
    pub fn smp(&self) -> &SmpClient {
        self.session.smp()
    }

    /// The PerfMgt client.
    #[must_use]
    pub fn perf(&self) -> &PerfClient {
        self.session.perf()
    }

    /// The SA client (queries go to the port's SM LID); it also receives
    /// the Reports of its InformInfo subscriptions.
    #[must_use]
    pub fn sa(&self) -> &SaClient {
        &self.sa
    }

    /// The agent runtime (to register agents of your own).
    #[must_use]
    pub fn runtime(&self) -> &mad_agents::Runtime {
        self.session.runtime()
    }

    /// A handle on the port, shared with every service opened on it: the
    /// port (and the built-in fabric under it) lives while any handle
    /// does, after this `Port` is closed too.
    #[must_use]
    pub fn shared_port(&self) -> SharedPort {
        self.session.shared_port().clone()
    }

    /// Opens another SA client on the port, holding it. Only one client
    /// per port receives Reports, and this `Port`'s own ([`Port::sa`])
    /// does: `cfg.receive_reports` must be off.
    ///
    /// # Errors
    /// [`Error::Register`] (Reports asked for, or the agent refused).
    pub fn open_sa(&self, cfg: SaClientConfig) -> Result<SaClient, Error> {
        SaClient::open(self.session.shared_port(), cfg).map_err(|e| Error::Register(e.to_string()))
    }

    /// Opens the connection manager on the port, holding it.
    ///
    /// # Errors
    /// [`Error::Register`]: another CM owns the class, or its thread
    /// could not start.
    pub fn open_cm(&self, cfg: CmConfig) -> Result<CmService, Error> {
        CmService::open(self.session.shared_port(), cfg).map_err(|e| Error::Register(e.to_string()))
    }

    /// Opens the exporter's reader (the discovery and counter sweep's
    /// exchange, `mad_tools::discover::agent`) on the port, holding it.
    ///
    /// # Errors
    /// [`Error::Register`].
    pub fn open_reader(&self) -> Result<AgentExchange<'static>, Error> {
        AgentExchange::open(self.session.shared_port()).map_err(Error::Register)
    }

    /// Registers an agent of your own whose events go to `callback`; it
    /// holds the port until dropped.
    ///
    /// # Errors
    /// [`Error::Register`].
    pub fn register(
        &self,
        spec: AgentSpec,
        callback: impl FnMut(AgentEvent) + Send + 'static,
    ) -> Result<PortAgent, Error> {
        self.session
            .shared_port()
            .register(spec, callback)
            .map_err(|e| Error::Register(e.to_string()))
    }

    /// Registers an agent of your own whose events go into a channel; it
    /// holds the port until dropped.
    ///
    /// # Errors
    /// [`Error::Register`].
    pub fn register_channel(&self, spec: AgentSpec) -> Result<(PortAgent, AgentReceiver), Error> {
        self.session
            .shared_port()
            .register_channel(spec)
            .map_err(|e| Error::Register(e.to_string()))
    }

    /// The built-in fabric under this port, if it is on one (to pull
    /// cables, inject events, advance virtual time).
    #[must_use]
    pub fn sim(&self) -> Option<&mad_sim::Subnet> {
        match self.session.backend() {
            SessionBackend::Sim(f) => f.subnet.as_ref(),
            _ => None,
        }
    }

    fn smp_target(&self, target: &Target) -> Result<SmpTarget, Error> {
        Ok(match target {
            Target::Lid(l) => SmpTarget::Lid(*l),
            Target::Dr(hops) => SmpTarget::dr(hops)
                .map_err(|e| Error::Input(format!("directed route {hops:?}: {e}")))?,
            Target::Guid(g) => SmpTarget::Lid(self.lid_of_guid(*g)?),
        })
    }

    /// The LID of the port with GUID `guid`, from the SA's NodeRecords.
    ///
    /// # Errors
    /// No node has it, or the SA's failure.
    pub fn lid_of_guid(&self, guid: u64) -> Result<u16, Error> {
        let mut t = NodeRecord::default();
        t.node_info.port_guid = guid;
        let table = self.sa.get_table(&t, NodeRecord::COMP_PORT_GUID)?;
        table
            .records
            .first()
            .map(|r| r.lid)
            .ok_or_else(|| Error::Input(format!("no port has GUID {guid:#018x}")))
    }

    fn smp_rpc(
        &self,
        kind: &'static Kind,
        method: Method,
        target: &Target,
        attr_mod: u32,
        data: &[u8],
    ) -> Result<Answer, Error> {
        let t = self.smp_target(target)?;
        let c = self.smp();
        let req = smp::request(&t, method, kind.attr_id, attr_mod, data, c.m_key)
            .expect_response(self.session.timeout(), mad_tools::session::DEFAULT_RETRIES);
        let done = c.agent().send_and_wait(req).map_err(QueryError::from)?;
        smp_answer(kind, &done)
    }

    /// SubnGet of the SMP attribute `name` at every target of `targets`,
    /// all sent at once (the engine's flow control bounds what is in
    /// flight); one result per target, in order.
    ///
    /// # Errors
    /// An unknown name, or an agent that cannot be registered; each
    /// target's own failure is in its result.
    pub fn smp_get_many(
        &self,
        name: &str,
        targets: &[Target],
        attr_mod: u32,
    ) -> Result<Vec<Result<Attribute, Error>>, Error> {
        Ok(self
            .smp_get_batch(name, targets, attr_mod)?
            .into_iter()
            .map(|r| r.map(Answer::into_attribute))
            .collect())
    }

    /// [`Port::smp_get_many`] with the answers kept as their bytes, each
    /// decoded when its fields are first read ([`Answer::attribute`]).
    ///
    /// # Errors
    /// As [`Port::smp_get_many`].
    pub fn smp_get_batch(
        &self,
        name: &str,
        targets: &[Target],
        attr_mod: u32,
    ) -> Result<Vec<Result<Answer, Error>>, Error> {
        let kind = Kind::find(Class::Smp, name)?;
        if u32::try_from(targets.len()).is_err() {
            return Err(Error::Input(format!(
                "a batch of {} targets: at most {} at once",
                targets.len(),
                u32::MAX
            )));
        }
        // The Port's own batch agent; a thread that finds it in use by
        // another batch registers one of its own for this batch.
        let mut kept = match self.batch.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => {
                // A batch panicked mid-way: its agent may hold its sends.
                let mut g = p.into_inner();
                *g = None;
                self.batch.clear_poison();
                Some(g)
            }
            Err(TryLockError::WouldBlock) => None,
        };
        let mut own = None;
        let ba: &mut BatchAgent = match kept.as_deref_mut() {
            Some(slot) => match slot {
                Some(b) => b,
                None => slot.insert(BatchAgent::register(self.runtime())?),
            },
            None => own.insert(BatchAgent::register(self.runtime())?),
        };
        ba.serial = ba.serial.wrapping_add(1);
        let tag = u64::from(ba.serial) << 32;
        let (ended, out) = self.run_batch(ba, tag, kind, targets, attr_mod)?;
        if !ended {
            // Sends of this batch may still complete: a fresh agent next
            // time rather than one whose channel they fill.
            if let Some(slot) = kept.as_deref_mut() {
                *slot = None;
            }
        }
        drop(kept);
        Ok(out)
    }

    /// Sends the batch through `ba` (cookies `tag | index`) and collects
    /// its completions, one result per target in place (a target whose
    /// send never completed: a timeout); false with them when the runtime
    /// stopped before every send completed.
    fn run_batch(
        &self,
        ba: &BatchAgent,
        tag: u64,
        kind: &'static Kind,
        targets: &[Target],
        attr_mod: u32,
    ) -> Result<(bool, Vec<Result<Answer, Error>>), Error> {
        let retries = mad_tools::session::DEFAULT_RETRIES;
        let mut out: Vec<Result<Answer, Error>> = Vec::with_capacity(targets.len());
        out.resize_with(targets.len(), || {
            Err(Error::Query(QueryError::Timeout { retries }))
        });
        // Which results are in (each completion is taken once).
        let mut filled = vec![false; targets.len()];
        let timeout = self.session.timeout();
        let m_key = self.smp().m_key;
        let mut reqs = Vec::with_capacity(targets.len());
        for (i, t) in targets.iter().enumerate() {
            match self.smp_target(t) {
                Ok(st) => reqs.push(
                    smp::request(&st, Method::GET, kind.attr_id, attr_mod, &[], m_key)
                        .expect_response(timeout, retries)
                        .cookie(tag | i as u64),
                ),
                Err(e) => {
                    out[i] = Err(e);
                    filled[i] = true;
                }
            }
        }
        let slot_of =
            |cookie: u64| (cookie & !0xffff_ffff == tag).then_some((cookie & 0xffff_ffff) as usize);
        let mut pending = reqs.len();
        ba.agent
            .send_batch(reqs, |cookie, e| {
                if let Some(i) = slot_of(cookie).filter(|&i| i < out.len() && !filled[i]) {
                    out[i] = Err(QueryError::from(e).into());
                    filled[i] = true;
                    pending -= 1;
                }
            })
            .map_err(|e| Error::Query(QueryError::from(e)))?;
        // Every send completes (answer, timeout after its retries, or
        // failure); the guard only covers a runtime that stopped.
        let guard = timeout * (retries + 2) + Duration::from_secs(5);
        while pending > 0 {
            match ba.rx.recv_timeout(guard) {
                Some(mad_agents::AgentEvent::SendDone(c)) => {
                    if let Some(i) = slot_of(c.cookie).filter(|&i| i < out.len() && !filled[i]) {
                        out[i] = smp_answer(kind, &c);
                        filled[i] = true;
                        pending -= 1;
                    }
                }
                Some(_) => {}
                None => break,
            }
        }
        Ok((pending == 0, out))
    }

    /// SubnGet of the SMP attribute `name` (`"NodeInfo"`, `"PortInfo"`,
    /// smpquery's op names too) with modifier `attr_mod`.
    ///
    /// # Errors
    /// An unknown name, a timeout, a non-zero MAD status.
    pub fn smp_get(&self, name: &str, target: &Target, attr_mod: u32) -> Result<Attribute, Error> {
        self.smp_get_answer(name, target, attr_mod)
            .map(Answer::into_attribute)
    }

    /// [`Port::smp_get`] with the answer kept as its bytes, decoded when
    /// its fields are first read.
    ///
    /// # Errors
    /// As [`Port::smp_get`].
    pub fn smp_get_answer(
        &self,
        name: &str,
        target: &Target,
        attr_mod: u32,
    ) -> Result<Answer, Error> {
        let kind = Kind::find(Class::Smp, name)?;
        self.smp_rpc(kind, Method::GET, target, attr_mod, &[])
    }

    /// SubnSet of the SMP attribute `name`: the current value is read,
    /// `fields` are changed in it, and it is written back; returns what
    /// the node answered. PortInfo's PortState and PortPhysicalState are
    /// sent as 0 (no change) unless `fields` set them, as ibportstate
    /// does.
    ///
    /// # Errors
    /// As [`Port::smp_get`], and a field that does not exist or whose
    /// value does not fit.
    pub fn smp_set(
        &self,
        name: &str,
        target: &Target,
        attr_mod: u32,
        fields: &[(String, Input)],
    ) -> Result<Attribute, Error> {
        let kind = Kind::find(Class::Smp, name)?;
        let now = self.smp_rpc(kind, Method::GET, target, attr_mod, &[])?;
        let mut data = [0u8; SMP_DATA_LEN];
        let n = now.bytes().len().min(SMP_DATA_LEN);
        data[..n].copy_from_slice(&now.bytes()[..n]);
        let data_len = kind.len.min(SMP_DATA_LEN);
        if kind.attr_id == mad_core::wire::AttributeId::PORT_INFO {
            // As ibportstate: PortState and PortPhysicalState go as 0
            // (NoChange) unless asked for; writing back "Active" is an
            // invalid transition the SMA refuses.
            kind.write(
                &mut data[..data_len],
                &[
                    ("port_state".to_owned(), Input::Uint(0)),
                    ("port_phys_state".to_owned(), Input::Uint(0)),
                ],
            )?;
        }
        kind.write(&mut data[..data_len], fields)?;
        self.smp_rpc(kind, Method::SET, target, attr_mod, &data)
            .map(Answer::into_attribute)
    }

    /// PortCounters (or, `extended`, PortCountersExtended) of `port` of
    /// the node at `lid`.
    ///
    /// # Errors
    /// A timeout or a MAD status (a PMA without the extended counters
    /// answers 0x0c).
    pub fn counters(&self, lid: u16, port: u8, extended: bool) -> Result<Attribute, Error> {
        Ok(if extended {
            Attribute::of(&self.perf().port_counters_ext(lid, port)?)
        } else {
            Attribute::of(&self.perf().port_counters(lid, port)?)
        })
    }

    /// Clears every counter of PortCounters (or PortCountersExtended) of
    /// `port` at `lid`; returns what the PMA answered.
    ///
    /// # Errors
    /// As [`Port::counters`].
    pub fn reset_counters(&self, lid: u16, port: u8, extended: bool) -> Result<Attribute, Error> {
        Ok(if extended {
            Attribute::of(&self.perf().reset_counters_ext(lid, port, 0xffff)?)
        } else {
            Attribute::of(&self.perf().reset_counters(lid, port, 0xffff)?)
        })
    }

    /// SubnAdmGet of the one SA record `name` whose `fields` have the
    /// given values (the ComponentMask is made of them).
    ///
    /// # Errors
    /// No record or more than one ([`Error::Sa`]), a timeout, an unknown
    /// record or field.
    pub fn sa_get(&self, name: &str, fields: &[(String, Input)]) -> Result<Attribute, Error> {
        let mut v = self.sa_query(name, fields, Method::GET)?;
        v.pop()
            .ok_or_else(|| Error::Malformed(format!("the SA answered no {name}")))
    }

    /// SubnAdmGetTable of the SA records `name` whose `fields` have the
    /// given values (none: every record).
    ///
    /// # Errors
    /// As [`Port::sa_get`]; an empty table is no error.
    pub fn sa_get_table(
        &self,
        name: &str,
        fields: &[(String, Input)],
    ) -> Result<Vec<Attribute>, Error> {
        self.sa_table(name, fields).map(|t| t.records)
    }

    /// [`Port::sa_get_table`], saying whether the table arrived cut to
    /// its first MAD (on ibsim and under libumad2sim the SA's RMPP
    /// answers do: `mad saquery` says the same).
    ///
    /// # Errors
    /// As [`Port::sa_get_table`].
    pub fn sa_table(&self, name: &str, fields: &[(String, Input)]) -> Result<SaTable, Error> {
        let (records, truncated) = self.sa_query_cut(name, fields, Method::GET_TABLE)?;
        Ok(SaTable { records, truncated })
    }

    fn sa_query(
        &self,
        name: &str,
        fields: &[(String, Input)],
        method: Method,
    ) -> Result<Vec<Attribute>, Error> {
        self.sa_query_cut(name, fields, method).map(|(r, _)| r)
    }

    fn sa_query_cut(
        &self,
        name: &str,
        fields: &[(String, Input)],
        method: Method,
    ) -> Result<(Vec<Attribute>, bool), Error> {
        let kind = Kind::find(Class::Sa, name)?;
        let mut rec = vec![0u8; kind.len];
        let mask = kind.write(&mut rec, fields)?;
        let resp = self.sa.request(method, kind.attr_id, 0, mask, &rec)?;
        let m = resp.mad();
        let status = m.status();
        if status == mad_core::wire::MadStatus::SA_NO_RECORDS && method == Method::GET_TABLE {
            return Ok((Vec::new(), false));
        }
        if status.0 != 0 {
            return Err(Error::Sa(SaError::from_status(status.0)));
        }
        kind.sa_records(resp.bytes(), method == Method::GET_TABLE)
    }

    /// The directed route (egress ports, first hop first) from this port
    /// to the port with `lid`, walked as ibtracert walks it: through the
    /// switches' linear forwarding tables. `None` when the walk fails (a
    /// switch without a route, a dead end).
    #[must_use]
    pub fn route_to(&self, lid: u16) -> Option<Vec<u8>> {
        mad_tools::ibdiag::trace::dr_route_to(&self.session, lid)
            .map(|p| p.get(1..).unwrap_or(&[]).to_vec())
    }

    /// Subscribes to the SA's Reports of trap `trap_number` (e.g. 64,
    /// GID in service; 65, out of service); Reports then arrive through
    /// [`Port::next_report`].
    ///
    /// # Errors
    /// The SA refused, or did not answer.
    pub fn subscribe(&self, trap_number: u16) -> Result<mad_agents::sa::InformSubscription, Error> {
        use mad_core::wire::sa_records::InformInfo;
        let info = InformInfo {
            lid_range_begin: InformInfo::LID_RANGE_ALL,
            is_generic: 1,
            trap_type: InformInfo::TYPE_ALL,
            trap_number_or_device_id: trap_number,
            producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
            ..InformInfo::default()
        };
        Ok(self.sa.subscribe(&info)?)
    }

    /// The next Report of a subscription, waiting up to `timeout`.
    #[must_use]
    pub fn next_report(&self, timeout: Duration) -> Option<mad_agents::sa::Report> {
        self.sa.next_report(timeout)
    }

    /// Stops the stack (its threads) and closes the port — unless services
    /// opened on it ([`Port::open_cm`], ...) still hold it: then this
    /// `Port` lets go of its handle and the last of them stops it.
    ///
    /// # Errors
    /// A capture file that could not be written.
    pub fn close(self) -> Result<(), Error> {
        let Port { batch, session, sa } = self;
        drop(batch);
        drop(sa);
        session.close().map_err(Error::Open)
    }
}

/// An SA table and whether it arrived whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaTable {
    /// The records.
    pub records: Vec<Attribute>,
    /// True when the answer was cut to its first MAD (ibsim,
    /// libumad2sim): more records exist than `records` holds.
    pub truncated: bool,
}

/// A MAD's length, for callers that build their own.
pub const MAD_BYTES: usize = MAD_LEN;
