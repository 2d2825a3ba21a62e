//! A directed-route sweep through a `SimPort` attached where ibsim
//! attaches by default (the first node) reaches every node of every
//! shared topology and finds the GUIDs, port counts, descriptions and
//! links the topology file says.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::collections::BTreeSet;

use common::support::sweep::{dr_sweep, Link};
use mad_core::wire::attr::NodeType;
use mad_sim::{Fabric, Topology};

#[test]
fn dr_sweep_from_the_first_node_finds_every_node_and_link_of_each_topology() {
    for path in common::topo_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let topo = Topology::load(&path).unwrap();
        let fabric = Fabric::new(&topo);
        let mut port = fabric.attach_default().unwrap();
        let (swept, stats) = dr_sweep(&mut port, 1, |_| Err("an SMP got no answer".into()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(swept.nodes.len(), topo.nodes().len(), "{name}: node count");
        for n in topo.nodes() {
            let s = swept
                .nodes
                .get(&n.node_guid)
                .unwrap_or_else(|| panic!("{name}: {} not reached", n.id));
            assert_eq!(s.info.num_ports, n.num_ports, "{name} {}", n.id);
            assert_eq!(s.info.node_type, n.kind.node_type(), "{name} {}", n.id);
            assert_eq!(s.info.system_image_guid, n.system_image_guid);
            assert_eq!(s.desc, n.description, "{name}");
            let ports = if n.is_switch() {
                n.num_ports as usize + 1
            } else {
                n.num_ports as usize
            };
            assert_eq!(
                s.ports.len(),
                ports,
                "{name} {}: PortInfo of every port",
                n.id
            );
            for (&p, &g) in &s.port_guids {
                let want = if s.info.node_type == NodeType::SWITCH {
                    n.node_guid
                } else {
                    n.node_guid + u64::from(p)
                };
                assert_eq!(g, want, "{name} {} port {p} GUID", n.id);
            }
        }
        let want: BTreeSet<Link> = topo
            .links()
            .iter()
            .map(|l| {
                let g = |r: mad_sim::topology::PortRef| (topo.nodes()[r.node].node_guid, r.port);
                Link::new(g(l.a), g(l.b))
            })
            .collect();
        assert_eq!(swept.links, want, "{name}: links");
        // Every SMP was answered, none dropped.
        assert_eq!(stats.sent, stats.received, "{name}");
        assert_eq!(
            fabric.stats().total_dropped(),
            0,
            "{name}: {:?}",
            fabric.stats().recent_drops().collect::<Vec<_>>()
        );
    }
}
