//! Lists the CAs and ports libibumad sees, then sends one SMP Get NodeInfo
//! (directed route, zero hops) through the umad transport and prints the
//! node GUID from the answer. Run under libumad2sim to talk to ibsim:
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so cargo run --example umad_ports`.
use mad_core::transport::umad::{list_cas, UmadTransport};
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for ca in list_cas()? {
        println!(
            "CA {} node_guid {:#018x} type {}",
            ca.name, ca.node_guid, ca.node_type
        );
        for p in &ca.ports {
            println!(
                "  port {} lid {} state {} guid {:#018x} pkeys {:?}",
                p.port_num, p.lid, p.state, p.port_guid, p.pkeys
            );
        }
    }
    let mut t = UmadTransport::open(None, 0)?;
    let mut mad = [0u8; 256];
    mad[0] = 1;
    mad[1] = 0x81;
    mad[2] = 1;
    mad[3] = 0x01;
    mad[8..16].copy_from_slice(&0x0000_1234_0000_0042u64.to_be_bytes());
    mad[16..18].copy_from_slice(&0x0011u16.to_be_bytes());
    mad[32..36].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Some(r) = t.poll_recv()? {
            let guid = u64::from_be_bytes(r.mad[64 + 12..64 + 20].try_into()?);
            let tid = u64::from_be_bytes(r.mad[8..16].try_into()?);
            println!(
                "NodeInfo answer from lid {}: node guid {guid:#018x}, tid {tid:#018x}",
                r.src.lid
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err("no answer within 2 s".into())
}
