//! The quick start: the NodeInfo of this port's node and the PathRecords
//! from it. `cargo run --example quick_start -- --sim` (or `--ibsim`,
//! `-C CA -P PORT`).

use madstack::{open, Input, Options, Target};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = open(&Options::from_args(std::env::args().skip(1))?)?;
    let lid = port.attrs().lid;
    let ni = port.smp_get("NodeInfo", &Target::Lid(lid), 0)?;
    println!("{}", ni.to_json());
    let paths = port.sa_get_table("PathRecord", &[("slid".into(), Input::Uint(lid.into()))])?;
    for p in &paths {
        let (d, sl, mtu) = (p.uint("dlid"), p.uint("sl"), p.uint("mtu"));
        println!(
            "path {lid} -> {} sl {} mtu {}",
            d.unwrap_or(0),
            sl.unwrap_or(0),
            mtu.unwrap_or(0)
        );
    }
    println!("{} paths", paths.len());
    port.close()?;
    Ok(())
}
