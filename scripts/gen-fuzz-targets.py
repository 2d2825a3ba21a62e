#!/usr/bin/env python3
"""Writes fuzz/Cargo.toml and one file per fuzz target under fuzz/fuzz_targets/.

The target bodies live in fuzz/src/lib.rs; each target file is a one-line
wrapper. To fuzz a new wire_struct type, add it to REPRS and run this script.
A hand-written target file must be listed in HANDWRITTEN (or it is deleted).
"""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (target name, Rust path) for every wire_struct Repr: parse -> emit -> compare.
REPRS = [
    ("mad_header", "mad_wire::wire::MadHeader"),
    ("smp_repr", "mad_wire::wire::smp::SmpRepr"),
    ("dr_smp_repr", "mad_wire::wire::smp::DrSmpRepr"),
    ("rmpp_header", "mad_wire::wire::rmpp::RmppHeader"),
    ("sa_header", "mad_wire::wire::sa::SaHeader"),
    ("vendor_header", "mad_wire::wire::vendor::VendorHeader"),
    ("node_info", "mad_wire::wire::attr::NodeInfo"),
    ("node_description", "mad_wire::wire::attr::NodeDescription"),
    ("port_info", "mad_wire::wire::attr::PortInfo"),
    ("switch_info", "mad_wire::wire::attr::SwitchInfo"),
    ("guid_info", "mad_wire::wire::attr::GuidInfo"),
    ("pkey_table", "mad_wire::wire::attr::PKeyTable"),
    ("sl_to_vl_table", "mad_wire::wire::attr::SlToVlTable"),
    ("vl_arb_table", "mad_wire::wire::attr::VlArbTable"),
    ("linear_fwd_table", "mad_wire::wire::attr::LinearFwdTable"),
    ("multicast_fwd_table", "mad_wire::wire::attr::MulticastFwdTable"),
    ("sm_info", "mad_wire::wire::attr::SmInfo"),
    ("notice", "mad_wire::wire::attr::Notice"),
    ("class_port_info", "mad_wire::wire::attr::ClassPortInfo"),
    ("port_counters", "mad_wire::wire::attr::PortCounters"),
    ("port_counters_ext", "mad_wire::wire::attr::PortCountersExt"),
    ("port_samples_control", "mad_wire::wire::attr::PortSamplesControl"),
    ("port_rcv_error_details", "mad_wire::wire::attr::PortRcvErrorDetails"),
    ("port_xmit_discard_details", "mad_wire::wire::attr::PortXmitDiscardDetails"),
    ("port_op_rcv_counters", "mad_wire::wire::attr::PortOpRcvCounters"),
    ("port_flow_ctl_counters", "mad_wire::wire::attr::PortFlowCtlCounters"),
    ("port_vl_op_packets", "mad_wire::wire::attr::PortVlOpPackets"),
    ("port_vl_op_data", "mad_wire::wire::attr::PortVlOpData"),
    ("port_vl_xmit_flow_ctl_update_errors", "mad_wire::wire::attr::PortVlXmitFlowCtlUpdateErrors"),
    ("port_vl_xmit_wait_counters", "mad_wire::wire::attr::PortVlXmitWaitCounters"),
    ("port_ext_speeds_counters", "mad_wire::wire::attr::PortExtSpeedsCounters"),
    ("port_ext_speeds_counters_rsfec", "mad_wire::wire::attr::PortExtSpeedsCountersRsfec"),
    ("sw_port_vl_congestion", "mad_wire::wire::attr::SwPortVlCongestion"),
    ("port_rcv_con_ctrl", "mad_wire::wire::attr::PortRcvConCtrl"),
    ("port_sl_rcv_fecn", "mad_wire::wire::attr::PortSlRcvFecn"),
    ("port_sl_rcv_becn", "mad_wire::wire::attr::PortSlRcvBecn"),
    ("port_xmit_con_ctrl", "mad_wire::wire::attr::PortXmitConCtrl"),
    ("port_vl_xmit_time_cong", "mad_wire::wire::attr::PortVlXmitTimeCong"),
    ("port_xmit_data_sl", "mad_wire::wire::attr::PortXmitDataSl"),
    ("port_rcv_data_sl", "mad_wire::wire::attr::PortRcvDataSl"),
    ("cc_congestion_info", "mad_wire::wire::cc::CongestionInfo"),
    ("cc_congestion_key_info", "mad_wire::wire::cc::CongestionKeyInfo"),
    ("cc_congestion_log_switch", "mad_wire::wire::cc::CongestionLogSwitch"),
    ("cc_congestion_log_event_switch", "mad_wire::wire::cc::CongestionLogEventSwitch"),
    ("cc_congestion_log_ca", "mad_wire::wire::cc::CongestionLogCa"),
    ("cc_congestion_log_event_ca", "mad_wire::wire::cc::CongestionLogEventCa"),
    ("cc_switch_congestion_setting", "mad_wire::wire::cc::SwitchCongestionSetting"),
    ("cc_switch_port_congestion_element", "mad_wire::wire::cc::SwitchPortCongestionElement"),
    ("cc_ca_congestion_setting", "mad_wire::wire::cc::CaCongestionSetting"),
    ("cc_ca_congestion_entry", "mad_wire::wire::cc::CaCongestionEntry"),
    ("cc_congestion_control_table", "mad_wire::wire::cc::CongestionControlTable"),
    ("cc_cct_entry", "mad_wire::wire::cc::CctEntry"),
    ("cc_timestamp", "mad_wire::wire::cc::CcTimestamp"),
    ("cc_key", "mad_wire::wire::cc::CcKey"),
    ("port_samples_result", "mad_wire::wire::attr::PortSamplesResult"),
    ("openib_text", "mad_wire::wire::openib::OpenIbText"),
    ("node_record", "mad_wire::wire::sa_records::NodeRecord"),
    ("port_info_record", "mad_wire::wire::sa_records::PortInfoRecord"),
    ("switch_info_record", "mad_wire::wire::sa_records::SwitchInfoRecord"),
    ("link_record", "mad_wire::wire::sa_records::LinkRecord"),
    ("path_record", "mad_wire::wire::sa_records::PathRecord"),
    ("mc_member_record", "mad_wire::wire::sa_records::McMemberRecord"),
    ("service_record", "mad_wire::wire::sa_records::ServiceRecord"),
    ("inform_info", "mad_wire::wire::sa_records::InformInfo"),
    ("inform_info_record", "mad_wire::wire::sa_records::InformInfoRecord"),
    ("guid_info_record", "mad_wire::wire::sa_records::GuidInfoRecord"),
    ("pkey_table_record", "mad_wire::wire::sa_records::PKeyTableRecord"),
    ("lft_record", "mad_wire::wire::sa_records::LftRecord"),
    ("mft_record", "mad_wire::wire::sa_records::MftRecord"),
    ("sm_info_record", "mad_wire::wire::sa_records::SmInfoRecord"),
    ("sl2vl_record", "mad_wire::wire::sa_records::Sl2VlRecord"),
    ("vl_arb_record", "mad_wire::wire::sa_records::VlArbRecord"),
    ("multi_path_record", "mad_wire::wire::sa_records::MultiPathRecord"),
    ("trace_record", "mad_wire::wire::sa_records::TraceRecord"),
    ("cm_req", "mad_wire::wire::cm::CmReq"),
    ("cm_mra", "mad_wire::wire::cm::CmMra"),
    ("cm_rej", "mad_wire::wire::cm::CmRej"),
    ("cm_rep", "mad_wire::wire::cm::CmRep"),
    ("cm_rtu", "mad_wire::wire::cm::CmRtu"),
    ("cm_dreq", "mad_wire::wire::cm::CmDreq"),
    ("cm_drep", "mad_wire::wire::cm::CmDrep"),
    ("cm_lap", "mad_wire::wire::cm::CmLap"),
    ("cm_apr", "mad_wire::wire::cm::CmApr"),
    ("cm_sidr_req", "mad_wire::wire::cm::CmSidrReq"),
    ("cm_sidr_rep", "mad_wire::wire::cm::CmSidrRep"),
    ("cma_header", "mad_wire::wire::cm::cma::CmaHeader"),
]

# (target name, function in fuzz/src/lib.rs) for views, whole parsers and
# operation sequences on the state machines.
OTHERS = [
    ("view_mad", "mad_view"),
    ("view_smp", "smp_view"),
    ("view_sa", "sa_view"),
    ("view_rmpp", "rmpp_view"),
    ("view_perf_vendor", "perf_vendor_view"),
    ("view_openib", "openib_view"),
    ("decode_mad", "decode"),
    ("pcap_reader", "pcap"),
    ("hex_parser", "hex"),
    ("ibnetdisc_cache", "ibnetdisc_cache"),
    ("lft_balance", "lft_balance"),
    ("routing_check", "routing_check"),
    ("perl_topology", "perl_topology"),
    ("mad_debug_line", "mad_debug_line"),
    ("sm_guid2lid", "sm_guid2lid"),
    # Stateful: operation sequences (fuzz/src/rmpp_sender.rs, rmpp_receiver.rs, engine.rs).
    ("rmpp_sender_ops", "rmpp_sender_ops"),
    ("rmpp_receiver_ops", "rmpp_receiver_ops"),
    ("engine_ops", "engine_ops"),
    # fuzz/src/cm.rs: two connection managers over a lossy wire.
    ("cm_ops", "cm::run"),
    # fuzz/src/cm_peers.rs: one port's CM under attack from many peers.
    ("cm_peers_ops", "cm_peers::run"),
    # fuzz/src/cm_service.rs: CmService itself on the built-in fabric, under attack.
    ("cm_service_ops", "cm_service::run"),
    # fuzz/src/sm_lite.rs: SM-lite on the built-in fabric, multicast included.
    ("sm_lite_ops", "sm_lite::run"),
    # fuzz/src/sa_subscriptions.rs: the SA responder's InformInfo subscriptions.
    ("sa_subscriptions_ops", "sa_subscriptions::run"),
]

# Hand-written target files (owned by the crates they fuzz), kept as they are
# and registered as bins.
HANDWRITTEN = [
    "topology_parse",  # mad_sim::topology
]

HEADER = """\
[package]
name = "madstack-fuzz"
version = "0.0.0"
publish = false
edition = "2021"
description = "cargo-fuzz targets for every madstack parser and the RMPP / engine state machines (generated by scripts/gen-fuzz-targets.py)"

[package.metadata]
cargo-fuzz = true

[lib]
path = "src/lib.rs"

[dependencies]
libfuzzer-sys = "0.4"
arbitrary = { version = "1", features = ["derive"] }
mad-wire = { path = "../mad-wire" }
mad-core = { path = "../mad-core" }
mad-rmpp = { path = "../mad-rmpp" }
mad-agents = { path = "../mad-agents" }
mad-tools = { path = "../tools" }
mad-sm = { path = "../mad-sm" }
mad-sim = { path = "../mad-sim" }
mad-cm = { path = "../mad-cm" }
mad-testkit = { path = "../mad-testkit" }

# Not part of the main workspace (the root Cargo.toml excludes fuzz/).
[workspace]
members = ["."]

[profile.release]
debug = 1
"""


def main():
    targets_dir = os.path.join(ROOT, "fuzz", "fuzz_targets")
    os.makedirs(targets_dir, exist_ok=True)
    names = []
    for name, path in REPRS:
        name = "repr_" + name
        names.append(name)
        body = (
            "//! parse -> emit -> compare for `%s`.\n#![no_main]\n"
            "libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::repr_roundtrip::<%s>(data));\n"
            % (path.split("::")[-1], path)
        )
        with open(os.path.join(targets_dir, name + ".rs"), "w") as f:
            f.write(body)
    for name, func in OTHERS:
        names.append(name)
        body = (
            "//! See `madstack_fuzz::%s`.\n#![no_main]\n"
            "libfuzzer_sys::fuzz_target!(|data: &[u8]| madstack_fuzz::%s(data));\n" % (func, func)
        )
        with open(os.path.join(targets_dir, name + ".rs"), "w") as f:
            f.write(body)
    names += HANDWRITTEN
    wanted = {n + ".rs" for n in names}
    for old in os.listdir(targets_dir):
        if old.endswith(".rs") and old not in wanted:
            os.remove(os.path.join(targets_dir, old))
    toml = HEADER
    for n in names:
        toml += '\n[[bin]]\nname = "%s"\npath = "fuzz_targets/%s.rs"\ntest = false\ndoc = false\nbench = false\n' % (n, n)
    with open(os.path.join(ROOT, "fuzz", "Cargo.toml"), "w") as f:
        f.write(toml)
    files = [os.path.join(targets_dir, n + ".rs") for n in names if n not in HANDWRITTEN]
    subprocess.run(["rustfmt", "--edition", "2021", *files], check=True)
    print("%d fuzz targets" % len(names))


if __name__ == "__main__":
    main()
