//! The built-in fabric behind `--sim`: a [`Fabric`] from a topology file
//! (or the default one built into the binary), brought up by SM-lite in
//! virtual time, with the SM's SMInfo left answering at the SM's port.

use std::time::Instant;

use mad_core::transport::Transport;
use mad_core::wire::attr::PhysPortState;
use mad_sim::sm::{SmConfig, SmDriver, SmEvent, SubnetManager};
use mad_sim::topology::NodeKind;
use mad_sim::{Fabric, SimPort, Topology};

/// The default topology (`--sim` without a file).
pub const DEFAULT_TOPOLOGY: &str = include_str!("default.net");

/// The name the default topology goes by in messages.
pub const DEFAULT_TOPOLOGY_NAME: &str = "built-in default";

/// A fabric that SM-lite has brought up.
#[derive(Debug)]
pub struct SimFabric {
    /// The fabric.
    pub fabric: Fabric,
    /// The topology's name (its file, or [`DEFAULT_TOPOLOGY_NAME`]).
    pub name: String,
    /// The SM's node and port.
    pub sm_at: (usize, u8),
    /// The SM's LID.
    pub sm_lid: u16,
    /// SM-lite after SubnetUp (the subnet it configured).
    pub sm: SubnetManager,
    /// SMPs SM-lite sent to bring the fabric up.
    pub sm_smps: u64,
}

/// Most pump rounds SM-lite may take (a stall guard, not a time limit).
const MAX_ROUNDS: usize = 50_000_000;

/// Loads `topology` (a file path; `None`: the built-in default).
///
/// # Errors
/// The file's parse or read error, as text.
pub fn load_topology(topology: Option<&str>) -> Result<(Topology, String), String> {
    match topology {
        None => Topology::parse_str(DEFAULT_TOPOLOGY)
            .map(|t| (t, DEFAULT_TOPOLOGY_NAME.to_owned()))
            .map_err(|e| format!("built-in topology: {e}")),
        Some(path) => Topology::load(path)
            .map(|t| (t, path.to_owned()))
            .map_err(|e| format!("topology {path}: {e}")),
    }
}

/// Builds the fabric of `topology` and runs SM-lite at its first node
/// (where ibsim puts the SM) until SubnetUp, in virtual time.
///
/// # Errors
/// An unreadable topology, a fabric without nodes, or an SM that fails.
pub fn bring_up(topology: Option<&str>) -> Result<SimFabric, String> {
    let (topo, name) = load_topology(topology)?;
    let fabric = Fabric::new(&topo);
    let mut port = fabric
        .attach_default()
        .map_err(|e| format!("{name}: cannot attach the SM: {e}"))?;
    port.set_is_sm(true);
    let sm_at = (port.node(), port.port());
    let mut sm = SubnetManager::new(SmConfig::default(), port.port_attrs());
    let mut now = Instant::now();
    sm.start(now);
    let mut drv = SmDriver::new();
    let mut up = false;
    let mut errors = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let busy = drv
            .pump(&mut sm, &mut port, now)
            .map_err(|e| format!("{name}: SM-lite transport: {e}"))?;
        while let Some(e) = sm.poll_event() {
            match e {
                SmEvent::SubnetUp => up = true,
                SmEvent::Error(err) => errors.push(format!("{err:?}")),
                _ => {}
            }
        }
        if up {
            break;
        }
        if !busy {
            match sm.poll_timeout() {
                Some(t) => now = now.max(t),
                None => break,
            }
        }
    }
    if !up {
        return Err(format!(
            "{name}: SM-lite did not bring the fabric up{}",
            if errors.is_empty() {
                String::new()
            } else {
                format!(": {}", errors.join("; "))
            }
        ));
    }
    let sm_lid = sm.sm_lid();
    let info = sm.sm_info();
    let sm_smps = drv.sent();
    // The SM's port keeps answering SMInfo (and IsSM) without an endpoint.
    drop(port);
    fabric.set_sm_info(sm_at.0, sm_at.1, Some(info));
    Ok(SimFabric {
        fabric,
        name,
        sm_at,
        sm_lid,
        sm,
        sm_smps,
    })
}

impl SimFabric {
    /// Where a command's port goes: node `name` (its first cabled end
    /// port; port 0 of a switch), or the first CA with a cabled port.
    ///
    /// # Errors
    /// No such node, or no CA at all.
    pub fn endpoint_at(&self, name: Option<&str>) -> Result<(usize, u8), String> {
        let nodes = self.fabric.nodes();
        let linked = |n: usize, p: u8| {
            self.fabric
                .port_info(n, p)
                .is_some_and(|pi| pi.port_phys_state == PhysPortState::LINK_UP)
        };
        let pick = |n: &mad_sim::fabric::NodeSummary| -> (usize, u8) {
            if n.kind == NodeKind::Switch {
                return (n.index, 0);
            }
            let p = (1..=n.num_ports).find(|p| linked(n.index, *p)).unwrap_or(1);
            (n.index, p)
        };
        match name {
            Some(want) => nodes
                .iter()
                .find(|n| n.id == want || n.description == want)
                .map(pick)
                .ok_or_else(|| {
                    let some: Vec<&str> = nodes.iter().take(8).map(|n| n.id.as_str()).collect();
                    format!(
                        "{}: no node named {want:?} (nodes: {}{})",
                        self.name,
                        some.join(", "),
                        if nodes.len() > some.len() {
                            ", ..."
                        } else {
                            ""
                        }
                    )
                }),
            None => nodes
                .iter()
                .find(|n| n.kind == NodeKind::Ca)
                .map(pick)
                .ok_or_else(|| format!("{}: the fabric has no CA", self.name)),
        }
    }

    /// Attaches an endpoint at `at`.
    ///
    /// # Errors
    /// The fabric's refusal, as text.
    pub fn attach(&self, at: (usize, u8)) -> Result<SimPort, String> {
        self.fabric
            .attach(at.0, at.1)
            .map_err(|e| format!("{}: {e}", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_topology_comes_up_with_a_lid_on_every_linked_port() {
        let s = bring_up(None).unwrap();
        assert_eq!(s.name, DEFAULT_TOPOLOGY_NAME);
        assert_eq!(s.fabric.node_count(), 6);
        assert_ne!(s.sm_lid, 0);
        let (n, p) = s.endpoint_at(None).unwrap();
        assert_eq!(s.fabric.node(n).unwrap().id, "host-1");
        assert_eq!(p, 1);
        let pi = s.fabric.port_info(n, p).unwrap();
        assert_ne!(pi.lid, 0);
        assert_eq!(pi.master_sm_lid, s.sm_lid);
        assert_eq!(s.endpoint_at(Some("sw-b")).unwrap().1, 0);
        assert!(s.endpoint_at(Some("nope")).unwrap_err().contains("no node"));
    }

    #[test]
    fn a_missing_topology_file_is_an_error_naming_it() {
        let e = bring_up(Some("/nonexistent/topo.net")).unwrap_err();
        assert!(e.contains("/nonexistent/topo.net"), "{e}");
    }
}
