//! The built-in fabric behind `--sim`: a [`mad_sim::Subnet`] — the
//! fabric of a topology file, or mad-sim's built-in default topology,
//! brought up by SM-lite (which keeps running in the fabric, in virtual
//! time) with the SA answering at the SM's port — and the place a
//! command's port is attached. With `--no-sm` ([`load_bare`]) the fabric
//! has no SM and no SA: every port waits in Initialize with LID 0, for
//! `mad --sim --no-sm sm` to bring it up, and other commands see it as a
//! fabric without an SM (directed routes work, LID routes do not).

use mad_sim::topology::NodeKind;
use mad_sim::{Fabric, SimPort, Subnet, SubnetOptions, Topology};

/// The name the default topology goes by in messages.
pub use mad_sim::DEFAULT_TOPOLOGY_NAME;

/// The built-in fabric of a session: brought up by SM-lite, or (with
/// `--no-sm`) left without an SM.
pub struct SimFabric {
    /// The subnet (fabric, SM-lite, SA); `None` under `--no-sm`.
    pub subnet: Option<Subnet>,
    /// The fabric (another handle to `subnet`'s when there is one).
    pub fabric: Fabric,
    name: String,
}

impl std::fmt::Debug for SimFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFabric")
            .field("name", &self.name)
            .field("sm", &self.subnet.is_some())
            .finish_non_exhaustive()
    }
}

/// Loads `topology` (a file path; `None`: mad-sim's built-in default)
/// with the name it goes by.
///
/// # Errors
/// The file's parse or read error, as text.
pub fn load_topology(topology: Option<&str>) -> Result<(Topology, String), String> {
    match topology {
        None => Ok((
            mad_sim::default_topology(),
            DEFAULT_TOPOLOGY_NAME.to_owned(),
        )),
        Some(path) => Topology::load(path)
            .map(|t| (t, path.to_owned()))
            .map_err(|e| format!("topology {path}: {e}")),
    }
}

/// Builds the fabric of `topology` (a file; `None`: the built-in
/// default) and brings it up.
///
/// # Errors
/// An unreadable topology, or a fabric that does not come up.
pub fn bring_up(topology: Option<&str>) -> Result<SimFabric, String> {
    bring_up_routed(
        topology,
        &mad_sm::routing::engines::RoutingConfig::default(),
        0,
    )
}

/// [`bring_up`] with SM-lite routing by `routing`'s engines and giving
/// CA ports LMC `lmc`.
///
/// # Errors
/// As [`bring_up`].
pub fn bring_up_routed(
    topology: Option<&str>,
    routing: &mad_sm::routing::engines::RoutingConfig,
    lmc: u8,
) -> Result<SimFabric, String> {
    if let Some(path) = topology {
        for w in check_topology_file(std::path::Path::new(path))? {
            eprintln!("mad: warning: {w}");
        }
    }
    let _spinner = crate::discover::progress::Spinner::start(&format!(
        "SM-lite: bringing up {}",
        topology.unwrap_or(DEFAULT_TOPOLOGY_NAME)
    ));
    let mut opts = SubnetOptions::default();
    opts.sm.routing = routing.clone();
    opts.sm.lmc = lmc;
    let subnet =
        Subnet::load(topology.map(std::path::Path::new), opts).map_err(|e| match topology {
            Some(t) => format!("topology {t}: {e}"),
            None => format!("{DEFAULT_TOPOLOGY_NAME} topology: {e}"),
        })?;
    if *routing != mad_sm::routing::engines::RoutingConfig::default() {
        // What the engines said (a fallback, the root updn chose).
        for e in subnet.take_sm_events() {
            if let mad_sm::SmEvent::Routed { engine, notes } = e {
                for n in notes {
                    eprintln!("mad: built-in SM: {n}");
                }
                eprintln!(
                    "mad: built-in SM: routing engine {} routed the fabric",
                    engine.name()
                );
            }
        }
    }
    let fabric = subnet.fabric().clone();
    let name = subnet.name().to_owned();
    Ok(SimFabric {
        subnet: Some(subnet),
        fabric,
        name,
    })
}

/// Builds the fabric of `topology` (a file; `None`: the built-in
/// default) with no SM and no SA (`--no-sm`): every port in Initialize
/// with LID 0, as a fabric is before an SM sweeps it.
///
/// # Errors
/// An unreadable topology.
pub fn load_bare(topology: Option<&str>) -> Result<SimFabric, String> {
    if let Some(path) = topology {
        for w in check_topology_file(std::path::Path::new(path))? {
            eprintln!("mad: warning: {w}");
        }
    }
    let (topo, name) = load_topology(topology)?;
    let fabric = Fabric::with_config(&topo, mad_sim::FabricConfig::default());
    crate::session::drop_or_leave(topo);
    Ok(SimFabric {
        subnet: None,
        fabric,
        name,
    })
}

/// Checks a topology file before the loader reads it, for what the
/// loader (following ibsim) does not say: a file that cannot be read
/// (named as such, not as "line 0"), a file with no node at all, and
/// lines that are neither a node, a port of a node, a directive, a
/// comment nor blank — which ibsim, and so the loader, skip. Returns
/// those lines as warnings (`FILE:LINE: ...`).
///
/// # Errors
/// An unreadable file, or one without a node line, with what to do.
pub fn check_topology_file(path: &std::path::Path) -> Result<Vec<String>, String> {
    let name = path.display();
    let bytes = crate::limits::read_file(path, mad_sim::topology::MAX_TOPOLOGY_BYTES, "a topology")
        .map_err(|e| {
            format!(
            "cannot read the topology file {name}: {e}; --sim=FILE takes an ibnetdiscover / ibsim \
             topology file (--sim alone uses the built-in fabric)"
        )
        })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut warnings = Vec::new();
    let mut in_record = false;
    let mut nodes = 0usize;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end_matches('\r');
        if t.trim().is_empty() {
            in_record = false;
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if ["Switch", "Hca", "Ca", "Rt"]
            .iter()
            .any(|k| t.starts_with(k))
        {
            in_record = true;
            nodes += 1;
            continue;
        }
        if in_record && (t.starts_with('[') || t.starts_with('@')) {
            continue;
        }
        in_record = false;
        if mad_sim::topology::DIRECTIVES
            .iter()
            .any(|d| t.starts_with(d))
        {
            continue;
        }
        let shown: String = t.chars().take(60).collect();
        warnings.push(format!(
            "{name}:{}: line ignored (not a node, a port line, a directive or a comment): {shown:?}",
            i + 1
        ));
    }
    if nodes == 0 && !text.lines().any(|l| l.starts_with("include")) {
        return Err(format!(
            "the topology file {name} has no nodes (no Switch / Ca / Rt line{}); \
             --sim=FILE takes an ibnetdiscover / ibsim topology file",
            if text.trim().is_empty() {
                ": it is empty"
            } else {
                ""
            }
        ));
    }
    Ok(warnings)
}

impl SimFabric {
    /// The topology's name (its file, or [`DEFAULT_TOPOLOGY_NAME`]).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the fabric runs SM-lite (not `--no-sm`).
    #[must_use]
    pub fn has_sm(&self) -> bool {
        self.subnet.is_some()
    }

    /// Where the SM goes on a fabric without one (`mad --sim --no-sm
    /// sm`): node `name` as [`SimFabric::endpoint_at`] picks it, else
    /// the first node's first end port (where SM-lite runs otherwise).
    ///
    /// # Errors
    /// No such node, or an empty fabric.
    pub fn sm_endpoint(&self, name: Option<&str>) -> Result<(usize, u8), String> {
        if name.is_some() {
            return self.endpoint_at(name);
        }
        match self.fabric.node(0) {
            Some(n) => Ok((0, u8::from(n.kind != NodeKind::Switch))),
            None => Err(format!("{}: the fabric has no nodes", self.name())),
        }
    }

    /// Where a command's port goes: node `name` (by id or description;
    /// its first cabled end port, port 0 of a switch), or the first CA
    /// port that is not the SM's.
    ///
    /// # Errors
    /// No such node, or no free CA port.
    pub fn endpoint_at(&self, name: Option<&str>) -> Result<(usize, u8), String> {
        let fabric = &self.fabric;
        match name {
            Some(want) => {
                let nodes = fabric.nodes();
                let Some(n) = nodes.iter().find(|n| n.id == want || n.description == want) else {
                    let some: Vec<&str> = nodes.iter().take(8).map(|n| n.id.as_str()).collect();
                    return Err(format!(
                        "{}: no node named {want:?} (nodes: {}{})",
                        self.name(),
                        some.join(", "),
                        if nodes.len() > some.len() {
                            ", ..."
                        } else {
                            ""
                        }
                    ));
                };
                if n.kind == NodeKind::Switch {
                    return Ok((n.index, 0));
                }
                let linked = (1..=n.num_ports).find(|p| {
                    fabric.port_info(n.index, *p).is_some_and(|pi| {
                        pi.port_phys_state == mad_core::wire::attr::PhysPortState::LINK_UP
                    })
                });
                Ok((n.index, linked.unwrap_or(1)))
            }
            None => match &self.subnet {
                Some(s) => s.free_endpoint(),
                None => first_ca_port(fabric),
            }
            .ok_or_else(|| format!("{}: no CA port free for the command", self.name())),
        }
    }

    /// Attaches an endpoint at `at`.
    ///
    /// # Errors
    /// The fabric's refusal (the SM's own port is taken), as text.
    pub fn attach(&self, at: (usize, u8)) -> Result<SimPort, String> {
        self.fabric.attach(at.0, at.1).map_err(|e| {
            let sm = self.subnet.as_ref().map(Subnet::sm_port);
            if sm.is_some_and(|sm| (sm.node, sm.port) == at) {
                format!(
                    "{}: {e} (SM-lite and the SA run there; choose another --sim-node)",
                    self.name()
                )
            } else {
                format!("{}: {e}", self.name())
            }
        })
    }
}

/// The first CA port with its link up (on a fabric without an SM, no
/// port is the SM's yet).
fn first_ca_port(f: &Fabric) -> Option<(usize, u8)> {
    f.nodes().iter().find_map(|n| {
        if n.kind == NodeKind::Switch {
            return None;
        }
        (1..=n.num_ports)
            .find(|p| {
                f.port_info(n.index, *p).is_some_and(|pi| {
                    pi.port_phys_state == mad_core::wire::attr::PhysPortState::LINK_UP
                })
            })
            .map(|p| (n.index, p))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_topology_comes_up_and_commands_attach_beside_the_sm() {
        let s = bring_up(None).unwrap();
        assert_eq!(s.name(), DEFAULT_TOPOLOGY_NAME);
        let sm_lid = s.subnet.as_ref().unwrap().sm_lid();
        assert_ne!(sm_lid, 0);
        let (n, p) = s.endpoint_at(None).unwrap();
        let f = &s.fabric;
        assert_eq!(f.node(n).unwrap().id, "host-2");
        assert_eq!(p, 1);
        let pi = f.port_info(n, p).unwrap();
        assert_ne!(pi.lid, 0);
        assert_eq!(pi.master_sm_lid, sm_lid);
        assert!(s.endpoint_at(Some("nope")).unwrap_err().contains("no node"));
        let sm = s.endpoint_at(Some("host-1")).unwrap();
        assert!(s
            .attach(sm)
            .unwrap_err()
            .contains("SM-lite and the SA run there"));
    }

    #[test]
    fn a_missing_topology_file_is_an_error_naming_it() {
        let e = bring_up(Some("/nonexistent/topo.net")).unwrap_err();
        assert!(e.contains("/nonexistent/topo.net"), "{e}");
    }
}
