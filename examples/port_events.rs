//! Prints the port's asynchronous events. On the built-in fabric it makes
//! some: it pulls the port's cable (PortError), plugs it back, and raises
//! a client reregister. `cargo run --example port_events -- --sim`.

use std::time::Duration;

use madstack::core::transport::AsyncEvent;
use madstack::events::event_name;
use madstack::sim::EndpointFault;
use madstack::{open, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = open(&Options::from_args(std::env::args().skip(1))?)?;
    let events = port.events()?;
    let a = port.attrs();
    if let Some(sim) = port.sim() {
        let f = sim.fabric();
        f.link_down(a.ca_name.as_str(), a.port_num)?;
        f.link_up(a.ca_name.as_str(), a.port_num)?;
        f.inject(
            a.ca_name.as_str(),
            a.port_num,
            EndpointFault::Event(AsyncEvent::ClientReregister),
        )?;
    }
    let mut n = 0;
    while let Some(e) = events.next(Duration::from_secs(2)) {
        n += 1;
        println!("event {}", event_name(&e));
    }
    println!("{n} events");
    port.close()?;
    Ok(())
}
