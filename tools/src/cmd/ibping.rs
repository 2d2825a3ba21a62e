//! `ibping` (infiniband-diags `ibping.c`): pings a port with the OpenIB
//! vendor class (0x32, OUI 0x001405 or `-o`), printing `Pong from HOST
//! (DEST): time T ms` per answer and ping's statistics at the end; `-S`
//! serves the class, answering every Get with this host's
//! `hostname.domainname`.
//!
//! Times are libibmad's `time_stamp` units (its nanoseconds are divided
//! by 10 000, printed as `units / 1000 . units % 1000 ms`), so ours read
//! as the C tool's do. The run exits 0 once its count is done, lost pings
//! included, as ibping's `report` does. SIGINT or SIGTERM ends a run
//! (without `-c` it runs until one comes) with the same statistics and
//! status 0, as ibping's handler does; a ping in flight then counts as
//! transmitted, neither received nor lost.
//!
//! `--json` prints `{"command":"ibping","dest":{...},"host":TEXT,
//! "pongs":[{"host":TEXT,"rtt":UNITS}|null...],"transmitted":N,
//! "received":N,"loss_percent":N,"time":UNITS,"rtt_min":UNITS,
//! "rtt_avg":UNITS,"rtt_max":UNITS}` (`null`: a lost ping).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mad_agents::QueryError;
use mad_core::wire::openib::{c_text, ping_request, text_data};
use mad_core::wire::vendor::{IB_OPENIB_OUI, IB_VENDOR_OPENIB_PING_CLASS};
use mad_core::wire::VENDOR_DATA_OFFSET;

use crate::command::{CliError, Invocation};
use crate::diags::openib;
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::Session;

const KEY_COUNT: i32 = 'c' as i32;
const KEY_FLOOD: i32 = 'f' as i32;
const KEY_OUI: i32 = 'o' as i32;
const KEY_SERVER: i32 = 'S' as i32;

const OPTS: &[Opt] = &[
    Opt::new(
        "count",
        'c',
        true,
        Some("<num>"),
        "stop after count packets",
    ),
    Opt::new("flood", 'f', false, None, "flood destination"),
    Opt::new("oui", 'o', true, None, "use specified OUI number"),
    Opt::new("Server", 'S', false, None, "start in server mode"),
];

/// libibmad's `time_stamp` of an elapsed time: microseconds of whole
/// seconds plus the nanoseconds divided by 10 000.
fn stamp(d: Duration) -> u64 {
    d.as_secs() * 1_000_000 + u64::from(d.subsec_nanos()) / 10_000
}

/// `T.FFF` of a time in stamp units.
fn ms(units: u64) -> String {
    format!("{}.{:03}", units / 1000, units % 1000)
}

/// The statistics of a run.
#[derive(Default)]
struct Stats {
    ntrans: u64,
    replied: u64,
    lost: u64,
    min: Option<u64>,
    max: u64,
    total: u64,
    last_host: String,
}

impl Stats {
    fn report(&self, dest: &str, total_time: u64) -> String {
        let loss = if self.lost == 0 {
            0
        } else {
            self.lost * 100 / self.ntrans
        };
        let avg = self.total.checked_div(self.replied).unwrap_or(0);
        format!(
            "\n--- {} ({dest}) ibping statistics ---\n\
             {} packets transmitted, {} received, {loss}% packet loss, time {} ms\n\
             rtt min/avg/max = {}/{}/{} ms\n",
            self.last_host,
            self.ntrans,
            self.replied,
            total_time / 1000,
            ms(self.min.unwrap_or(0)),
            ms(avg),
            ms(self.max)
        )
    }
}

/// SIGINT and SIGTERM, caught while a client runs (ibping's `report`
/// handler): a thread forwards them to a channel the run waits on.
struct Interrupt {
    rx: mpsc::Receiver<i32>,
    handle: signal_hook::iterator::Handle,
    fired: bool,
}

impl Interrupt {
    /// Catches SIGINT and SIGTERM from now on.
    fn catch() -> std::io::Result<Self> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let handle = signals.handle();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("ibping-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if tx.send(sig).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self {
            rx,
            handle,
            fired: false,
        })
    }

    /// True once a signal came.
    fn fired(&mut self) -> bool {
        self.fired = self.fired || self.rx.try_recv().is_ok();
        self.fired
    }

    /// Sleeps `d`, or less when a signal comes: true if one came.
    fn sleep(&mut self, d: Duration) -> bool {
        if !self.fired {
            self.fired = self.rx.recv_timeout(d).is_ok();
        }
        self.fired
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.handle.close();
    }
}

/// One ping: the answer's host text, or the failure.
fn ping(s: &Session, lid: u16, oui: u32) -> Result<String, QueryError> {
    let req = ping_request(oui).map_err(|e| QueryError::Malformed(e.to_string()))?;
    let b = s.gsi_rpc(lid, req)?;
    Ok(c_text(b.get(VENDOR_DATA_OFFSET..).unwrap_or_default()))
}

/// Runs `ibping`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DKy",
        usage_args: "<dest lid|guid>",
        examples: &[],
    };
    let p = ibdiag::parse(inv, &spec)?;
    let server = p.has(KEY_SERVER);
    if p.args.is_empty() && !server {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    }
    // strtoul: whatever number the text starts with; `count` is unsigned.
    let count = p.value(KEY_COUNT).map_or(u64::from(u32::MAX), |v| {
        u64::from(crate::cnum::c_strtoul(v) as u32)
    });
    let flood = p.has(KEY_FLOOD);
    let oui = p
        .value(KEY_OUI)
        .map_or(IB_OPENIB_OUI, |v| crate::cnum::c_strtoul(v) as u32);
    let session = ibdiag::open_session(inv, &p.common)?;
    if server {
        let data = text_data(&openib::this_host());
        let r = openib::serve(
            &session,
            (IB_VENDOR_OPENIB_PING_CLASS, oui),
            format!(
                "can't serve class {} on this port",
                IB_VENDOR_OPENIB_PING_CLASS.0
            ),
            |_| Some(data.to_vec()),
        );
        let _ = session.close();
        return r;
    }
    let (session, dest) = openib::dest(inv, session, &p.common, &p.args[0])?;
    let r = client(inv, &session, &dest, (count, flood, oui, p.common.json));
    session
        .close()
        .map_err(|e| CliError::Failed(format!("pcap: {e}")))?;
    r
}

fn client(
    inv: &mut Invocation<'_, '_>,
    s: &Session,
    dest: &Dest,
    (count, flood, oui, json): (u64, bool, u32, bool),
) -> Result<(), CliError> {
    let text = dest.text.to_string();
    let mut st = Stats::default();
    let mut pongs = Vec::new();
    let mut interrupt = Interrupt::catch()
        .map_err(|e| CliError::Failed(format!("can't catch SIGINT/SIGTERM: {e}")))?;
    let start = Instant::now();
    for _ in 0..count {
        if interrupt.fired() {
            break;
        }
        st.ntrans += 1;
        let t0 = Instant::now();
        let answer = ping(s, dest.lid, oui);
        if interrupt.fired() {
            // ibping's handler reports while this ping is in flight.
            break;
        }
        match answer {
            Ok(host) => {
                let rtt = stamp(t0.elapsed());
                if st.last_host.is_empty() {
                    st.last_host.clone_from(&host);
                }
                if !flood && !json {
                    inv.io
                        .out(&format!("Pong from {host} ({text}): time {} ms\n", ms(rtt)));
                }
                st.min = Some(st.min.map_or(rtt, |m| m.min(rtt)));
                st.max = st.max.max(rtt);
                st.total += rtt;
                st.replied += 1;
                pongs.push(
                    Json::obj()
                        .with("host", Json::String(host))
                        .with("rtt", Json::from(rtt)),
                );
            }
            Err(e) => {
                openib::warn_vendor_failed(inv, &text, &e);
                st.lost += 1;
                pongs.push(Json::Null);
            }
        }
        if !flood && interrupt.sleep(Duration::from_secs(1)) {
            break;
        }
    }
    drop(interrupt);
    let total_time = stamp(start.elapsed());
    if json {
        let avg = st.total.checked_div(st.replied).unwrap_or(0);
        let j = Json::obj()
            .with("command", Json::String("ibping".into()))
            .with("dest", ibdiag::dest_json(dest))
            .with("host", Json::String(st.last_host.clone()))
            .with("pongs", Json::Array(pongs))
            .with("transmitted", Json::from(st.ntrans))
            .with("received", Json::from(st.replied))
            .with(
                "loss_percent",
                Json::from(if st.lost == 0 {
                    0
                } else {
                    st.lost * 100 / st.ntrans
                }),
            )
            .with("time", Json::from(total_time))
            .with("rtt_min", Json::from(st.min.unwrap_or(0)))
            .with("rtt_avg", Json::from(avg))
            .with("rtt_max", Json::from(st.max));
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&st.report(&text, total_time));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_and_times_read_as_libibmads() {
        assert_eq!(stamp(Duration::from_micros(1500)), 150);
        assert_eq!(stamp(Duration::from_secs(2)), 2_000_000);
        assert_eq!(ms(150), "0.150");
        assert_eq!(ms(2_000_123), "2000.123");
    }

    #[test]
    fn statistics_of_lost_and_answered_pings() {
        let st = Stats {
            ntrans: 3,
            replied: 2,
            lost: 1,
            min: Some(10),
            max: 30,
            total: 40,
            last_host: "h.d".into(),
        };
        assert_eq!(
            st.report("Lid 5", 2500),
            "\n--- h.d (Lid 5) ibping statistics ---\n\
             3 packets transmitted, 2 received, 33% packet loss, time 2 ms\n\
             rtt min/avg/max = 0.010/0.020/0.030 ms\n"
        );
        let none = Stats {
            ntrans: 2,
            lost: 2,
            ..Stats::default()
        };
        assert!(none
            .report("Lid 9", 0)
            .ends_with("2 packets transmitted, 0 received, 100% packet loss, time 0 ms\nrtt min/avg/max = 0.000/0.000/0.000 ms\n"));
    }
}
