//! SMP Get rate over ibsim: madstack's umad transport with W outstanding
//! against the libibmad anchor (bench-anchor/anchor.c, `smp_query_via` as
//! infiniband-diags issues it), both over libumad2sim on the same ibsim
//! fabric in the same run.
//!
//! ```text
//! cargo bench --bench ibsim_umad                       # defaults
//! cargo bench --bench ibsim_umad -- --net tests/fixtures/topologies/net.medium \
//!     --w 1,16,256 --queries 100000 --seconds 5 --rounds 5 --json out.json
//! ```
//!
//! For each topology: starts ibsim, builds the anchor (bench-anchor/build.sh
//! into a temporary directory), then runs `--rounds` rounds of {anchor,
//! ours with each W}, each a separate process under libumad2sim attached
//! to the topology's first node. Reports the median rate of the rounds
//! (with the latency percentiles of that round) and ours/libibmad from the
//! medians, and the best round of each and their ratio (on a shared
//! machine the best round is the least disturbed one). When ibsim,
//! libumad2sim, a C compiler or libibmad is missing it says so and exits 0
//! (plain `cargo bench` must not fail on a machine without them).
//!
//! Options: `--net FILE` (repeatable; default the shared `net` and
//! `net.medium`), `--w LIST`, `--queries N`, `--seconds S` (per run),
//! `--warmup N`, `--rounds R`, `--targets "0;0,1"` (directed routes,
//! `;`-separated), `--attrs nodeinfo|portinfo|both`, `--stacks umad,agents`
//! (ours: the umad transport driven directly, and/or the agent layer
//! `Engine` over it), `--spin` (busy-poll instead of poll(2)), `--json
//! FILE`.
#![allow(missing_docs)]

mod sim;
mod worker;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const WORKER_ENV: &str = "MADSTACK_BENCH_WORKER";

#[derive(Debug, Clone)]
struct Opts {
    nets: Vec<PathBuf>,
    windows: Vec<usize>,
    queries: u64,
    seconds: f64,
    warmup: u64,
    rounds: usize,
    targets: Vec<String>,
    attrs: String,
    spin: bool,
    stacks: Vec<String>,
    json: Option<PathBuf>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn parse_args() -> Result<Opts, String> {
    let topo = repo().join("tests/fixtures/topologies");
    let mut o = Opts {
        nets: Vec::new(),
        windows: vec![1, 16, 256],
        queries: 50_000,
        seconds: 3.0,
        warmup: 2_000,
        rounds: 3,
        targets: vec!["0".into(), "0,1".into()],
        attrs: "nodeinfo".into(),
        spin: false,
        stacks: vec!["umad".into(), "agents".into()],
        json: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--bench" => {}
            "--net" => o.nets.push(PathBuf::from(val("--net")?)),
            "--w" => {
                o.windows = val("--w")?
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("bad W {s:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--queries" => o.queries = val("--queries")?.parse().map_err(|e| format!("{e}"))?,
            "--seconds" => o.seconds = val("--seconds")?.parse().map_err(|e| format!("{e}"))?,
            "--warmup" => o.warmup = val("--warmup")?.parse().map_err(|e| format!("{e}"))?,
            "--rounds" => o.rounds = val("--rounds")?.parse().map_err(|e| format!("{e}"))?,
            "--targets" => {
                o.targets = val("--targets")?.split(';').map(str::to_owned).collect();
            }
            "--attrs" => o.attrs = val("--attrs")?,
            "--spin" => o.spin = true,
            "--stacks" => {
                o.stacks = val("--stacks")?.split(',').map(str::to_owned).collect();
                if let Some(bad) = o
                    .stacks
                    .iter()
                    .find(|s| !matches!(s.as_str(), "umad" | "agents"))
                {
                    return Err(format!("unknown stack {bad:?} (umad, agents)"));
                }
            }
            "--json" => o.json = Some(PathBuf::from(val("--json")?)),
            // Filters and flags cargo/criterion pass to every bench.
            s if !s.starts_with("--") => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.nets.is_empty() {
        o.nets = ["net", "net.medium"]
            .iter()
            .map(|n| topo.join(n))
            .filter(|p| p.is_file())
            .collect();
    }
    o.rounds = o.rounds.max(1);
    Ok(o)
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// What is missing to run, as "thing (Debian package)".
fn missing() -> Vec<String> {
    let mut m = Vec::new();
    if which("ibsim").is_none() {
        m.push("ibsim (ibsim-utils)".to_owned());
    }
    if !Path::new(sim::UMAD2SIM).exists() {
        m.push(format!("{} (libumad2sim0)", sim::UMAD2SIM));
    }
    if which("cc").is_none() {
        m.push("cc (gcc)".to_owned());
    }
    if !Path::new("/usr/include/infiniband/mad.h").exists() {
        m.push("infiniband/mad.h (libibmad-dev)".to_owned());
    }
    m
}

fn build_anchor() -> Result<PathBuf, String> {
    let out = std::env::temp_dir().join(format!("madstack-anchor-{}", std::process::id()));
    let st = Command::new("bash")
        .arg(repo().join("bench-anchor/build.sh"))
        .arg(&out)
        .status()
        .map_err(|e| format!("bench-anchor/build.sh: {e}"))?;
    if !st.success() {
        return Err(format!("bench-anchor/build.sh failed ({st})"));
    }
    Ok(out)
}

/// Runs `cmd` (at most `limit`; killed by its PID after that) and parses
/// the last JSON line it printed.
fn run_json(mut cmd: Command, limit: Duration) -> Result<Value, String> {
    let run = mad_tools::child::run_with_deadline(&mut cmd, limit)
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    let Some(status) = run.status else {
        return Err(format!(
            "{cmd:?} did not finish in {limit:?} (killed):\n{stdout}{stderr}"
        ));
    };
    let line = run
        .last_json_line()
        .ok_or_else(|| format!("{cmd:?} printed no result ({status}):\n{stdout}{stderr}"))?;
    serde_json::from_str(line).map_err(|e| format!("bad JSON {line:?}: {e}"))
}

fn anchor_cmd(s: &sim::IbSim, anchor: &Path, o: &Opts) -> Command {
    let mut c = s.command(anchor);
    for t in &o.targets {
        c.arg("-D").arg(t);
    }
    c.arg("-a")
        .arg(&o.attrs)
        .arg("-n")
        .arg(o.queries.to_string())
        .arg("-t")
        .arg(o.seconds.to_string())
        .arg("-w")
        .arg(o.warmup.to_string());
    c
}

fn ours_cmd(s: &sim::IbSim, o: &Opts, stack: &str, w: usize) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut c = s.command(&exe);
    c.env(WORKER_ENV, stack)
        .env("MADSTACK_BENCH_W", w.to_string())
        .env("MADSTACK_BENCH_QUERIES", o.queries.to_string())
        .env("MADSTACK_BENCH_SECONDS", o.seconds.to_string())
        .env("MADSTACK_BENCH_WARMUP", o.warmup.to_string())
        .env("MADSTACK_BENCH_TARGETS", o.targets.join(";"))
        .env("MADSTACK_BENCH_ATTRS", &o.attrs)
        .env("MADSTACK_BENCH_WAIT", if o.spin { "spin" } else { "poll" });
    Ok(c)
}

fn qps(v: &Value) -> f64 {
    v["qps"].as_f64().unwrap_or(0.0)
}

/// The run with the median rate.
fn median(runs: &[Value]) -> Option<Value> {
    let mut v: Vec<&Value> = runs.iter().collect();
    v.sort_by(|a, b| qps(a).total_cmp(&qps(b)));
    v.get(v.len() / 2).map(|x| (*x).clone())
}

fn lat(v: &Value, p: &str) -> f64 {
    v["lat_us"][p].as_f64().unwrap_or(f64::NAN)
}

fn measure(net: &Path, o: &Opts, anchor: &Path) -> Result<Vec<Value>, String> {
    let tag = net
        .file_name()
        .map(|n| n.to_string_lossy().replace('.', "_"))
        .unwrap_or_default();
    let mut s = sim::IbSim::start(net, &tag)?;
    // A run takes `seconds` plus warm-up and start-up; anything far longer
    // is a hang (libumad2sim can deadlock at exit).
    let limit = Duration::from_secs_f64(o.seconds * 3.0 + 30.0);
    let mut anchor_runs = Vec::new();
    let configs: Vec<(&str, usize)> = o
        .stacks
        .iter()
        .flat_map(|st| o.windows.iter().map(move |&w| (st.as_str(), w)))
        .collect();
    let mut ours_runs: Vec<Vec<Value>> = vec![Vec::new(); configs.len()];
    for r in 0..o.rounds {
        // Alternate the order so neither side always runs first.
        let anchor_first = r % 2 == 0;
        if anchor_first {
            anchor_runs.push(run_json(anchor_cmd(&s, anchor, o), limit)?);
        }
        for (i, &(stack, w)) in configs.iter().enumerate() {
            ours_runs[i].push(run_json(ours_cmd(&s, o, stack, w)?, limit)?);
        }
        if !anchor_first {
            anchor_runs.push(run_json(anchor_cmd(&s, anchor, o), limit)?);
        }
        if !s.is_running() {
            return Err(format!("ibsim died:\n{}", s.output()));
        }
    }
    let net_name = net.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut out = Vec::new();
    let base = median(&anchor_runs).ok_or("no anchor run")?;
    let base_qps = qps(&base);
    let best = |all: &[Value]| all.iter().map(qps).fold(0.0, f64::max);
    let base_best = best(&anchor_runs);
    let mut row = |v: Value, all: &[Value]| {
        let mut v = v;
        v["net"] = Value::from(net_name.clone());
        v["rounds_qps"] = Value::from(all.iter().map(qps).collect::<Vec<_>>());
        v["best_qps"] = Value::from(best(all));
        v["ratio_vs_libibmad"] = Value::from(qps(&v) / base_qps);
        v["best_ratio_vs_libibmad"] = Value::from(best(all) / base_best);
        out.push(v);
    };
    row(base.clone(), &anchor_runs);
    for runs in &ours_runs {
        if let Some(m) = median(runs) {
            row(m, runs);
        }
    }
    Ok(out)
}

fn print_table(rows: &[Value]) {
    println!(
        "{:<12} {:<16} {:>4} {:>11} {:>9} {:>9} {:>9} {:>10} {:>11} {:>10}  rounds (q/s)",
        "net",
        "impl",
        "W",
        "median q/s",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "ours/ibmad",
        "best q/s",
        "best ratio"
    );
    for v in rows {
        let rounds: Vec<String> = v["rounds_qps"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| format!("{:.0}", x.as_f64().unwrap_or(0.0)))
                    .collect()
            })
            .unwrap_or_default();
        println!(
            "{:<12} {:<16} {:>4} {:>11.0} {:>9.1} {:>9.1} {:>9.1} {:>9.2}x {:>11.0} {:>9.2}x  {}",
            v["net"].as_str().unwrap_or("?"),
            v["impl"].as_str().unwrap_or("?"),
            v["outstanding"].as_u64().unwrap_or(0),
            qps(v),
            lat(v, "p50"),
            lat(v, "p99"),
            lat(v, "p99.9"),
            v["ratio_vs_libibmad"].as_f64().unwrap_or(f64::NAN),
            v["best_qps"].as_f64().unwrap_or(f64::NAN),
            v["best_ratio_vs_libibmad"].as_f64().unwrap_or(f64::NAN),
            rounds.join(" "),
        );
    }
}

fn worker_main() -> i32 {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let p = worker::Params {
        window: env("MADSTACK_BENCH_W", "1").parse().unwrap_or(1),
        queries: env("MADSTACK_BENCH_QUERIES", "50000")
            .parse()
            .unwrap_or(50_000),
        seconds: env("MADSTACK_BENCH_SECONDS", "3").parse().unwrap_or(3.0),
        warmup: env("MADSTACK_BENCH_WARMUP", "2000")
            .parse()
            .unwrap_or(2_000),
        targets: env("MADSTACK_BENCH_TARGETS", "0")
            .split(';')
            .map(str::to_owned)
            .collect(),
        attrs: env("MADSTACK_BENCH_ATTRS", "nodeinfo"),
        spin: env("MADSTACK_BENCH_WAIT", "poll") == "spin",
    };
    let stack = std::env::var(WORKER_ENV).unwrap_or_default();
    let result = if stack == "agents" {
        worker::run_agents(&p)
    } else {
        worker::run(&p)
    };
    match result {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(e) => {
            eprintln!("worker: {e}");
            1
        }
    }
}

fn main() {
    if std::env::var_os(WORKER_ENV).is_some() {
        std::process::exit(worker_main());
    }
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ibsim_umad: {e}");
            std::process::exit(2);
        }
    };
    let miss = missing();
    if !miss.is_empty() {
        println!("ibsim_umad: not run, missing: {}", miss.join(", "));
        return;
    }
    if o.nets.is_empty() {
        println!("ibsim_umad: not run, no topology file (pass --net FILE)");
        return;
    }
    let anchor = match build_anchor() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ibsim_umad: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "SMP Get {} over ibsim, targets {:?}, {} queries or {} s per run, median of {} rounds",
        o.attrs, o.targets, o.queries, o.seconds, o.rounds
    );
    let mut rows = Vec::new();
    let mut failed = false;
    for net in &o.nets {
        match measure(net, &o, &anchor) {
            Ok(r) => {
                print_table(&r);
                rows.extend(r);
            }
            Err(e) => {
                eprintln!("ibsim_umad: {}: {e}", net.display());
                failed = true;
            }
        }
    }
    let _ = std::fs::remove_file(&anchor);
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&Value::from(rows)).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("ibsim_umad: {}: {e}", path.display());
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
