//! QoS from `mad sm -Q -F FILE` (OpenSM's `qos_*` keys) against OpenSM
//! 3.3 given the same file, each on a fresh fabric of the same topology
//! (`net.2sw2path4hca`): a real ibsim, and the built-in fabric served over
//! ibsim's protocol with no SM of its own (`mad sim --serve NAME
//! --no-sm`). The real `smpquery sl2vl` / `smpquery vlarb` under
//! libumad2sim read every switch output port's SL2VL tables (every input
//! port), every switch port's and CA port's VL arbitration tables and
//! every CA's SL2VL table; the two SMs' fabrics must read the same, and
//! differ from what the ports held before. On the built-in fabric (which
//! keeps PortInfo VLHighLimit; ibsim drops it) mad sm's CA ports hold
//! `qos_high_limit`. Every process is stopped by its PID. Outside CI a
//! missing ibsim / OpenSM / infiniband-diags / libumad2sim makes these
//! tests print "NOT RUN"; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::diags::{field, ibnetdiscover_lids};
use support::opensm::{require_sbin, sbin, OpenSm, NEEDS_OPENSM};
use support::served::Served;
use support::IbSim;

const MAD: &str = env!("CARGO_BIN_EXE_mad");
const TOPOLOGY: &str = "net.2sw2path4hca";

/// QoS options far from the defaults: VLs above 7 (masked to the ports'
/// OperationalVLs VL0-7), VL 15 in an SL2VL, per-class overrides.
const QOS_CONF: &str = "qos TRUE\n\
qos_high_limit 3\n\
qos_vlarb_high 0:2,1:3,9:5\n\
qos_vlarb_low 0:1,1:8,2:16,3:32,4:64,12:7\n\
qos_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,15\n\
qos_ca_sl2vl 1,1,2,2,3,3,4,4,5,5,6,6,7,7,14,15\n\
qos_ca_vlarb_high 3:33\n\
qos_swe_vlarb_low 0:9,1:9,2:9,3:9,4:9,5:9,6:9,7:9,8:9\n";

fn needs() -> bool {
    require_sbin(NEEDS_OPENSM)
        && require_sbin(&[
            ("smpquery", "infiniband-diags"),
            ("ibnetdiscover", "infiniband-diags"),
        ])
}

fn topology() -> PathBuf {
    support::topologies_dir().join(TOPOLOGY)
}

/// A fabric both SMs and the real diags can attach to.
enum Fabric {
    Ibsim(IbSim),
    Served(Served),
}

impl Fabric {
    fn new(builtin: bool, tag: &str) -> Self {
        if builtin {
            let t = topology();
            Fabric::Served(Served::start_with(
                Path::new(MAD),
                tag,
                &[t.to_str().unwrap(), "--no-sm"],
            ))
        } else {
            Fabric::Ibsim(IbSim::start(topology()))
        }
    }

    /// `program` (from /usr/sbin too) under libumad2sim on this fabric.
    fn umad2sim(&self, program: &str) -> Command {
        let p = sbin(program);
        let p = p.to_str().unwrap();
        match self {
            Fabric::Ibsim(s) => s.umad2sim_command(p),
            Fabric::Served(s) => s.umad2sim_command(p),
        }
    }

    /// A real diag's standard output (it must succeed).
    fn diag(&self, program: &str, args: &[&str]) -> String {
        let out = support::output_attached(program, || {
            let mut c = self.umad2sim(program);
            c.args(args).stdin(Stdio::null());
            c
        });
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{program} {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// `mad --ibsim ARGS` on this fabric, run to its end.
    fn mad(&self, args: &[&str]) -> Output {
        match self {
            Fabric::Ibsim(s) => Command::new(MAD)
                .arg("--ibsim")
                .args(args)
                .env("IBSIM_SOCKNAME", s.sockname())
                .stdin(Stdio::null())
                .output()
                .unwrap(),
            Fabric::Served(s) => s.mad(args),
        }
    }

    fn opensm(&self, conf: &str) -> OpenSm {
        OpenSm::start_cmd(self.umad2sim("opensm"), conf, Duration::from_secs(60))
    }
}

/// A header line with its LID blanked (the two SMs may number ports
/// differently).
fn without_lid(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once("Lid ") {
            Some((a, b)) if l.starts_with('#') => {
                let rest = b.split_once(' ').map_or("", |(_, r)| r);
                format!("{a}Lid * {rest}")
            }
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// QoS tables as smpquery prints them, by (port GUID, what).
type Tables = BTreeMap<(u64, String), String>;

/// Every QoS table of the fabric as the real smpquery prints it, by
/// (port GUID, what).
fn qos_tables(f: &Fabric) -> Tables {
    let lids = ibnetdiscover_lids(&f.diag("ibnetdiscover", &[]));
    assert_eq!(lids.len(), 6, "{lids:?}");
    let mut out = BTreeMap::new();
    for (&guid, &lid) in &lids {
        assert_ne!(lid, 0, "GUID {guid:#x} has no LID");
        let l = lid.to_string();
        let ni = f.diag("smpquery", &["nodeinfo", &l]);
        let nports: u8 = field(&ni, "NumPorts").unwrap().trim().parse().unwrap();
        if field(&ni, "NodeType").unwrap().contains("Switch") {
            for p in 0..=nports {
                let p = p.to_string();
                for what in ["sl2vl", "vlarb"] {
                    let t = f.diag("smpquery", &[what, &l, &p]);
                    out.insert((guid, format!("{what} {p}")), without_lid(&t));
                }
            }
        } else {
            for what in ["sl2vl", "vlarb"] {
                let t = f.diag("smpquery", &[what, &l]);
                out.insert((guid, what.to_owned()), without_lid(&t));
            }
        }
    }
    out
}

/// The tables before any SM, with LIDs from a plain bring-up (QoS off)
/// by `mad sm`, then mad sm with QoS; OpenSM with QoS on another fresh
/// fabric. Returns (before, mad sm, OpenSM) and the mad sm fabric.
fn both_sms(builtin: bool, tag: &str) -> (Tables, Tables, Tables, Fabric) {
    let dir = std::env::temp_dir().join(format!("mad-sm-qos-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("qos.conf");
    std::fs::write(&conf, QOS_CONF).unwrap();

    let a = Fabric::new(builtin, &format!("{tag}a"));
    let o = a.mad(&["sm", "-o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = qos_tables(&a);
    let o = a.mad(&["sm", "-o", "-Q", "-F", conf.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("SUBNET UP"), "{err}");
    let mad = qos_tables(&a);

    let b = Fabric::new(builtin, &format!("{tag}b"));
    let osm = b.opensm(QOS_CONF);
    let opensm = qos_tables(&b);
    drop(osm);
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
    (before, mad, opensm, a)
}

fn check_same(
    before: &BTreeMap<(u64, String), String>,
    mad: &BTreeMap<(u64, String), String>,
    osm: &BTreeMap<(u64, String), String>,
) {
    assert_eq!(mad.len(), osm.len());
    let mut changed = 0;
    for (k, v) in osm {
        assert_eq!(mad.get(k), Some(v), "{k:?}: mad sm differs from OpenSM");
        changed += usize::from(before.get(k) != Some(v));
    }
    // Every CA table and every connected switch port's tables changed.
    assert!(changed >= 4 * 2 + 8 * 2, "only {changed} tables changed");
}

#[test]
fn mad_sm_programs_the_qos_tables_opensm_programs_on_ibsim() {
    if !needs() {
        return;
    }
    let (before, mad, osm, _f) = both_sms(false, "ibsim");
    check_same(&before, &mad, &osm);
}

#[test]
fn mad_sm_programs_the_qos_tables_opensm_programs_on_the_builtin_fabric() {
    if !needs() {
        return;
    }
    let (before, mad, osm, f) = both_sms(true, "sim");
    check_same(&before, &mad, &osm);
    // The CA ports hold qos_high_limit (the built-in fabric keeps it).
    let lids = ibnetdiscover_lids(&f.diag("ibnetdiscover", &[]));
    for (guid, lid) in lids {
        let l = lid.to_string();
        let ni = f.diag("smpquery", &["nodeinfo", &l]);
        if field(&ni, "NodeType").unwrap().contains("Switch") {
            continue;
        }
        let pi = f.diag("smpquery", &["portinfo", &l]);
        let hl = field(&pi, "VLHighLimit").unwrap().trim();
        assert_eq!(hl, "3", "GUID {guid:#x}:\n{pi}");
    }
}

/// The SLs of the PathRecords in `saquery PR` output (records with a
/// DLID).
fn pr_sls(text: &str) -> Vec<u8> {
    text.split("PathRecord dump:")
        .filter_map(|rec| {
            let dlid = field(rec.trim_start(), "dlid").or_else(|| {
                rec.lines()
                    .find_map(|l| l.trim().strip_prefix("dlid"))
                    .map(|v| v.trim_start_matches('.'))
            })?;
            if dlid.trim() == "0" {
                return None;
            }
            let sl = rec
                .lines()
                .find_map(|l| l.trim().strip_prefix("sl."))?
                .trim_start_matches('.')
                .trim();
            u8::from_str_radix(sl.trim_start_matches("0x"), 16).ok()
        })
        .collect()
}

/// `saquery PR` from Hca1 to Hca2 (by their GUIDs' LIDs) with each SL
/// option, on a fabric whose SM runs `QOS_CONF` with the switches
/// dropping SL 0: the SLs of the records each query gets.
fn path_sls(sim: &IbSim) -> Vec<(String, Vec<u8>)> {
    let lids = ibnetdiscover_lids(&support::diags::diag(sim, "ibnetdiscover", &[]));
    // Hca1 and Hca2 (port GUIDs of net.2sw2path4hca): across both switches.
    let (a, b) = (lids[&0x10_0001].to_string(), lids[&0x10_0004].to_string());
    let mut out = Vec::new();
    for sl in [None, Some("0"), Some("4"), Some("15")] {
        let mut args = vec!["PR", "--slid", &a, "--dlid", &b];
        if let Some(s) = sl {
            args.extend(["--sl", s]);
        }
        let o = sim.umad2sim_output(sbin("saquery").to_str().unwrap(), &args);
        out.push((
            format!("{sl:?}"),
            pr_sls(&String::from_utf8_lossy(&o.stdout)),
        ));
    }
    out
}

/// `saquery SL2VL` for Hca1's LID, every record, LID lines dropped (the
/// two SMs number ports differently). Every record: the answer's length
/// says how many there are (an answer padded to a whole segment would
/// show its zeros as records).
fn sa_sl2vl(sim: &IbSim) -> String {
    let lids = ibnetdiscover_lids(&support::diags::diag(sim, "ibnetdiscover", &[]));
    let a = lids[&0x10_0001].to_string();
    let o = sim.umad2sim_output(sbin("saquery").to_str().unwrap(), ["SL2VL", a.as_str()]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.to_ascii_lowercase().contains("lid"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn path_records_per_sl_are_opensms_with_qos_on_ibsim() {
    if !needs() {
        return;
    }
    let conf_text = format!("{QOS_CONF}qos_swe_sl2vl 15,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n");
    let dir = std::env::temp_dir().join(format!("mad-sm-qos-pr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("qos.conf");
    std::fs::write(&conf, &conf_text).unwrap();

    let sim = IbSim::start(topology());
    let mut sm = sm_child::MadSm::start(&sim, &["-Q", "-F", conf.to_str().unwrap()]);
    sm.wait("subnet_up", Duration::from_secs(60));
    let mad = path_sls(&sim);
    let mad_sa = sa_sl2vl(&sim);
    sm.stop();
    drop(sim);

    let sim = IbSim::start(topology());
    let osm = OpenSm::start(&sim, &conf_text, Duration::from_secs(60));
    let opensm = path_sls(&sim);
    let opensm_sa = sa_sl2vl(&sim);
    drop(osm);
    let _ = std::fs::remove_dir_all(&dir);

    // SL 0 and 15 go to VL 15 on the switches: refused; not asking is
    // asking for the default partition's SL 0.
    let want = vec![
        ("None".to_owned(), vec![]),
        ("Some(\"0\")".to_owned(), vec![]),
        ("Some(\"4\")".to_owned(), vec![4]),
        ("Some(\"15\")".to_owned(), vec![]),
    ];
    assert_eq!(opensm, want, "OpenSM");
    assert_eq!(mad, want, "mad sm");
    // The SA's SL2VL record of a CA: the table programmed (qos_ca_sl2vl
    // masked to VL0-7), as OpenSM's SA gives it.
    assert!(opensm_sa.contains("VL: 1| 1| 2| 2|"), "{opensm_sa}");
    assert_eq!(mad_sa, opensm_sa);
}
