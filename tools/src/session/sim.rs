//! The built-in fabric behind `--sim`: a [`mad_sim::Subnet`] — the
//! fabric of a topology file, or mad-sim's built-in default topology,
//! brought up by SM-lite (which keeps running in the fabric, in virtual
//! time) with the SA answering at the SM's port — and the place a
//! command's port is attached.

use mad_sim::topology::NodeKind;
use mad_sim::{Fabric, SimPort, Subnet, SubnetOptions, Topology};

/// The name the default topology goes by in messages.
pub use mad_sim::DEFAULT_TOPOLOGY_NAME;

/// A fabric that SM-lite has brought up.
pub struct SimFabric {
    /// The subnet (fabric, SM-lite, SA).
    pub subnet: Subnet,
    /// The fabric (another handle to `subnet`'s).
    pub fabric: Fabric,
}

impl std::fmt::Debug for SimFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFabric")
            .field("name", &self.subnet.name())
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
    let subnet = Subnet::load(topology.map(std::path::Path::new), SubnetOptions::default())
        .map_err(|e| match topology {
            Some(t) => format!("topology {t}: {e}"),
            None => format!("{DEFAULT_TOPOLOGY_NAME} topology: {e}"),
        })?;
    let fabric = subnet.fabric().clone();
    Ok(SimFabric { subnet, fabric })
}

impl SimFabric {
    /// The topology's name (its file, or [`DEFAULT_TOPOLOGY_NAME`]).
    #[must_use]
    pub fn name(&self) -> &str {
        self.subnet.name()
    }

    /// Where a command's port goes: node `name` (by id or description;
    /// its first cabled end port, port 0 of a switch), or the first CA
    /// port that is not the SM's.
    ///
    /// # Errors
    /// No such node, or no free CA port.
    pub fn endpoint_at(&self, name: Option<&str>) -> Result<(usize, u8), String> {
        let fabric = self.subnet.fabric();
        let nodes = fabric.nodes();
        match name {
            Some(want) => {
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
            None => self
                .subnet
                .free_endpoint()
                .ok_or_else(|| format!("{}: no CA port free for the command", self.name())),
        }
    }

    /// Attaches an endpoint at `at`.
    ///
    /// # Errors
    /// The fabric's refusal (the SM's own port is taken), as text.
    pub fn attach(&self, at: (usize, u8)) -> Result<SimPort, String> {
        self.subnet.attach(at.0, at.1).map_err(|e| {
            let sm = self.subnet.sm_port();
            if (sm.node, sm.port) == at {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_topology_comes_up_and_commands_attach_beside_the_sm() {
        let s = bring_up(None).unwrap();
        assert_eq!(s.name(), DEFAULT_TOPOLOGY_NAME);
        let sm_lid = s.subnet.sm_lid();
        assert_ne!(sm_lid, 0);
        let (n, p) = s.endpoint_at(None).unwrap();
        let f = s.subnet.fabric();
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
