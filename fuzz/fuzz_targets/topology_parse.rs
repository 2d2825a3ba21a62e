//! The topology parser (`mad_sim::topology`) never panics on any input;
//! what it accepts is consistent (every link is listed at both ends, node
//! GUIDs are unique) and what it refuses names a line of the input.
//! Needs `mad-sim = { path = "../mad-sim" }` in fuzz/Cargo.toml.
#![no_main]

use mad_sim::topology::Topology;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    match Topology::parse_bytes(data) {
        Ok(t) => {
            for l in t.links() {
                assert_eq!(t.port(l.a).and_then(|p| p.remote), Some(l.b));
                assert_eq!(t.port(l.b).and_then(|p| p.remote), Some(l.a));
            }
            let mut guids = std::collections::HashSet::new();
            for n in t.nodes() {
                assert!(guids.insert(n.node_guid));
                assert!(n.description.len() <= 63);
            }
        }
        Err(e) => {
            let lines = data.split(|b| *b == b'\n').count();
            assert!(e.location.line <= lines, "{e}");
            let _ = e.to_string();
        }
    }
});
