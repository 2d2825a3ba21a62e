//! End-to-end tests of `mad decode`: they run the built binary.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

mod mad_cli;
use mad_cli::text;
use mad_testkit::assert_contains_all;

use mad_core::pcap::{Direction, PacketMeta, PcapWriter, Timestamp};
use mad_core::wire::attr::NodeInfo;
use mad_core::wire::{AttributeId, MadStatus, Method, MgmtClass};
use mad_testkit::MadBuilder;
use std::path::PathBuf;
use std::process::Output;

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/mads.hex");

fn run(args: &[&str], stdin: &[u8]) -> Output {
    mad_cli::mad_with(args, stdin, &[])
}

/// A file in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        let p = std::env::temp_dir().join(format!("mad-decode-{}-{name}", std::process::id()));
        std::fs::write(&p, contents).unwrap();
        Self(p)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A LID-routed SMP GetResp(NodeInfo) with a known NodeGUID.
fn node_info_mad() -> Vec<u8> {
    let info = NodeInfo {
        base_version: 1,
        class_version: 1,
        num_ports: 36,
        node_guid: 0x0008_f105_0020_1234,
        local_port_num: 7,
        ..NodeInfo::default()
    };
    MadBuilder::smp_get(AttributeId::NODE_INFO)
        .response(MadStatus::SUCCESS)
        .tid(0xcafe_0001)
        .data(&info)
        .to_vec()
}

fn hex(m: &[u8]) -> String {
    m.iter().map(|b| format!("{b:02x} ")).collect()
}

#[test]
fn decodes_a_hex_mad_from_stdin_with_libibmad_labels() {
    let out = run(&["decode"], hex(&node_info_mad()).as_bytes());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_contains_all(
        &stdout,
        &[
            "## MAD from stdin line 1: 256 bytes",
            "# NodeInfo (byte 64)",
            "Guid:............................0x0008f10500201234\n",
            "NumPorts:........................36\n",
            "LocalPort:.......................7\n",
            "AttrId:..........................NodeInfo\n",
        ],
    );
}

#[test]
fn decodes_the_shipped_sample_file() {
    let out = run(&["decode", SAMPLE], b"");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(stdout.matches("## MAD from").count(), 3, "{stdout}");
    assert_contains_all(
        &stdout,
        &[
            "# DrSMP (byte 0)",
            "DrSmpRetPath:....................0,3\n",
            "# PathRecord [1] (byte 120)",
            "PathRecDLid:.....................6\n",
            "PortXmitData:....................123456\n",
        ],
    );
}

#[test]
fn decodes_a_pcap_file_written_by_mad_core() {
    let mut file = Vec::new();
    let mut w = PcapWriter::new(&mut file).unwrap();
    let m = node_info_mad();
    let meta = PacketMeta::for_mad(&m, 1, 0x22, Direction::Received);
    w.write_mad(Timestamp::new(1_700_000_000, 0), &m, &meta)
        .unwrap();
    let sa = MadBuilder::new(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET,
        AttributeId::SA_PATH_RECORD,
    )
    .response(MadStatus::SUCCESS)
    .bytes_at(56 + 40, &0x0042u16.to_be_bytes()) // PathRecord DLID
    .build();
    w.write_mad_auto(Timestamp::new(1_700_000_001, 0), &sa, 2, 1, Direction::Sent)
        .unwrap();
    drop(w);
    let f = TempFile::new("two.pcap", &file);

    for args in [vec!["decode", f.path()], vec!["decode", "--pcap", f.path()]] {
        let out = run(&args, b"");
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_contains_all(
            &stdout,
            &[
                &format!("## MAD from {} packet 1", f.path()),
                &format!("## MAD from {} packet 2", f.path()),
            ],
        );
        assert!(stdout.contains("Guid:............................0x0008f10500201234\n"));
        assert_contains_all(
            &stdout,
            &[
                "DLID 0x0022",
                "QP 0 -> 0",
                "QP 1 -> 1",
                "PathRecDLid:.....................66\n",
            ],
        );
        assert!(!stdout.contains("CRC check"), "{stdout}");
    }
}

#[test]
fn json_output_parses_and_holds_the_field_values() {
    let out = run(&["decode", "--json", SAMPLE], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(
        (&v["command"], &v["complete"]),
        (&"decode".into(), &true.into())
    );
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0));
    let mads = v["mads"].as_array().unwrap();
    assert_eq!(mads.len(), 3);

    let dr = &mads[0];
    assert_eq!(dr["length"], 256);
    assert_eq!(dr["header"]["mgmt_class"]["name"], "SubnMgmtDR");
    assert_eq!(dr["header"]["attr_id"]["name"], "NodeInfo");
    assert_eq!(dr["header"]["tid"], "0x0000000012345678");
    assert_eq!(dr["layers"][0]["name"], "DrSMP");
    assert_eq!(dr["layers"][0]["fields"]["hop_cnt"], 1);
    assert!(dr["layers"][0]["fields"].get("data").is_none());
    let ni = &dr["layers"][1];
    assert_eq!(
        (ni["name"].as_str(), ni["offset"].as_u64()),
        (Some("NodeInfo"), Some(64))
    );
    assert_eq!(ni["struct"], "NodeInfo");
    assert_eq!(ni["fields"]["node_guid"], "0x0002c90300a1b2c3");
    assert_eq!(ni["fields"]["node_type"]["name"], "Channel Adapter");
    assert_eq!(ni["index"], serde_json::Value::Null);

    let sa = &mads[1];
    let names: Vec<_> = sa["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["RMPP", "SA", "PathRecord", "PathRecord"]);
    assert_eq!(sa["layers"][1]["fields"]["attr_offset"], 8);
    assert_eq!(sa["layers"][3]["index"], 1);
    assert_eq!(sa["layers"][3]["fields"]["dlid"], 6);
    assert_eq!(
        sa["layers"][2]["fields"]["dgid"],
        "fe800000000000000002c90300a1b2c9"
    );

    let pm = &mads[2];
    assert_eq!(pm["header"]["attr_id"]["name"], "PortCounters");
    assert_eq!(pm["layers"][0]["fields"]["port_xmit_data"], 123_456);
}

#[test]
fn garbage_input_fails_with_a_message_naming_the_problem() {
    // Binary garbage in a file: neither pcap nor text.
    let g = TempFile::new("garbage.bin", &[0xff, 0xfe, 0x00, 0x81, 0x92, 0x13]);
    let out = run(&["decode", g.path()], b"");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("not hex text and not a pcap file"), "{err}");
    assert!(out.stdout.is_empty());

    // --pcap on something that is not a pcap file.
    let h = TempFile::new("text.hex", b"01 02 03\n");
    let out = run(&["decode", "--pcap", h.path()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not a pcap file"),
        "{}",
        text(&out.stderr)
    );

    // Non-hex, odd digits, too short, empty.
    let cases: [(&[u8], &str); 4] = [
        (b"01 02\nzz", "line 2, column 1: 'z' is not a hex digit"),
        (b"01 023", "\"023\" has an odd number of hex digits"),
        (
            b"01 02 03 04 05",
            "MadHeader: truncated: 5 bytes, need at least 24",
        ),
        (b"\n\n", "no hex bytes in the input"),
    ];
    for (input, msg) in cases {
        let out = run(&["decode"], input);
        assert_eq!(out.status.code(), Some(1), "{msg}");
        assert!(text(&out.stderr).contains(msg), "{}", text(&out.stderr));
    }

    // A missing file.
    let out = run(&["decode", "/nonexistent/mad-decode-input"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/mad-decode-input"));
}

#[test]
fn a_truncated_pcap_reports_the_bad_packet_and_keeps_the_good_one() {
    let mut file = Vec::new();
    let mut w = PcapWriter::new(&mut file).unwrap();
    let m = node_info_mad();
    w.write_mad_auto(Timestamp::new(1, 0), &m, 1, 2, Direction::Sent)
        .unwrap();
    w.write_mad_auto(Timestamp::new(2, 0), &m, 1, 2, Direction::Sent)
        .unwrap();
    drop(w);
    file.truncate(file.len() - 100);
    let f = TempFile::new("cut.pcap", &file);
    let out = run(&["decode", f.path()], b"");
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("packet 1"), "{stdout}");
    let err = text(&out.stderr);
    assert!(
        err.contains("packet 2") && err.contains("truncated"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_with_status_2() {
    let out = run(&["decode", "--frobnicate"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("decode: unrecognized option '--frobnicate'"));
    let out = run(&["decode", "a", "b"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["nosuchcommand"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown command \"nosuchcommand\""));
    let out = run(&["decode", "--help"], b"");
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("JSON output (stable shape)"));
}

/// A PerfMgt GetResp of `attr` whose data (from byte 64) is `data`.
fn perf_resp(attr: u16, data: &[u8]) -> Vec<u8> {
    MadBuilder::new(MgmtClass::PERF_MGT, 1, Method::GET, AttributeId(attr))
        .response(MadStatus::SUCCESS)
        .bytes_at(64, data)
        .to_vec()
}

/// A Congestion Control GetResp of `attr` with CC_Key `key` and `data`
/// at `at` (32 for CongestionLog, else 64).
fn cc_resp(attr: u16, key: u64, at: usize, data: &[u8]) -> Vec<u8> {
    MadBuilder::new(MgmtClass::CONG_MGT, 2, Method::GET, AttributeId(attr))
        .response(MadStatus::SUCCESS)
        .bytes_at(24, &key.to_be_bytes())
        .bytes_at(at, data)
        .to_vec()
}

/// `mad decode` of the MADs, as hex lines on stdin.
fn decode_text(mads: &[Vec<u8>]) -> String {
    let input: String = mads.iter().map(|m| hex(m) + "\n").collect();
    let out = run(&["decode"], input.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn decodes_the_extended_perfmgt_attributes_field_by_field() {
    use mad_core::wire::attr::pm_attr;
    // PortRcvErrorDetails of port 3: LocalPhysicalErrors 0x0102,
    // MalformedPktErrors 7.
    let details = perf_resp(
        pm_attr::PORT_RCV_ERROR_DETAILS,
        &[0, 3, 0, 0x3f, 0x01, 0x02, 0, 7],
    );
    // PortSamplesResult: Tag 0xabcd, SampleStatus 2, Counter14 0x102.
    let mut result = [0u8; 64];
    result[..4].copy_from_slice(&[0xab, 0xcd, 0, 2]);
    result[60..].copy_from_slice(&[0, 0, 1, 2]);
    let samples = perf_resp(pm_attr::PORT_SAMPLES_RESULT, &result);
    // PortVLXmitWaitCounters: VL1 waited 5.
    let wait = perf_resp(
        pm_attr::PORT_VL_XMIT_WAIT_COUNTERS,
        &[0, 1, 0, 0, 0, 0, 0, 5],
    );
    let out = decode_text(&[details, samples, wait]);
    assert_contains_all(
        &out,
        &[
            "AttrId:..........................PortRcvErrorDetails\n",
            "# PortRcvErrorDetails (byte 64)",
            "PortSelect:......................3\n",
            "PortLocalPhysicalErrors:.........258\n",
            "PortMalformedPktErrors:..........7\n",
            "AttrId:..........................PortSamplesResult\n",
            "# PortSamplesResult (byte 64)",
            "Tag:.............................43981\n",
            "SampleStatus:....................2\n",
            "Counter:.........................0 0 0 0 0 0 0 0 0 0 0 0 0 0 258\n",
            "# PortVLXmitWaitCounters (byte 64)",
            "PortVLXmitWait:..................0 5 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
        ],
    );
    assert!(!out.contains("is not decoded here"), "{out}");
}

#[test]
fn every_perfmgt_and_congestion_attribute_is_decoded_not_shown_raw() {
    use mad_core::wire::attr::pm_attr;
    use mad_core::wire::cc::cc_attr;
    let perf = [
        pm_attr::PORT_SAMPLES_CONTROL,
        pm_attr::PORT_SAMPLES_RESULT,
        pm_attr::PORT_RCV_ERROR_DETAILS,
        pm_attr::PORT_XMIT_DISCARD_DETAILS,
        pm_attr::PORT_OP_RCV_COUNTERS,
        pm_attr::PORT_FLOW_CTL_COUNTERS,
        pm_attr::PORT_VL_OP_PACKETS,
        pm_attr::PORT_VL_OP_DATA,
        pm_attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
        pm_attr::PORT_VL_XMIT_WAIT_COUNTERS,
        pm_attr::PORT_EXTENDED_SPEEDS_COUNTERS,
        pm_attr::SW_PORT_VL_CONGESTION,
        pm_attr::PORT_RCV_CON_CTRL,
        pm_attr::PORT_SL_RCV_FECN,
        pm_attr::PORT_SL_RCV_BECN,
        pm_attr::PORT_XMIT_CON_CTRL,
        pm_attr::PORT_VL_XMIT_TIME_CONG,
        pm_attr::PORT_XMIT_DATA_SL,
        pm_attr::PORT_RCV_DATA_SL,
    ];
    let cc = [
        cc_attr::CLASS_PORT_INFO,
        cc_attr::CONGESTION_INFO,
        cc_attr::CONGESTION_KEY_INFO,
        cc_attr::SWITCH_CONGESTION_SETTING,
        cc_attr::SWITCH_PORT_CONGESTION_SETTING,
        cc_attr::CA_CONGESTION_SETTING,
        cc_attr::CONGESTION_CONTROL_TABLE,
        cc_attr::TIMESTAMP,
    ];
    let mut mads: Vec<Vec<u8>> = perf.iter().map(|a| perf_resp(*a, &[])).collect();
    mads.extend(cc.iter().map(|a| cc_resp(*a, 0, 64, &[])));
    let out = decode_text(&mads);
    assert_eq!(out.matches("## MAD from").count(), perf.len() + cc.len());
    for bad in ["is not decoded here", "unknown attribute", "# Data"] {
        assert!(!out.contains(bad), "{bad:?} in\n{out}");
    }
}

#[test]
fn decodes_congestion_control_mads_with_their_cc_key_and_entries() {
    use mad_core::wire::cc::cc_attr;
    let key = 0x0123_4567_89ab_cdef;
    let info = cc_resp(cc_attr::CONGESTION_INFO, key, 64, &[0, 1, 2, 0]);
    // CACongestionSetting: Port_Control 1, SL 15's CCTI_Timer 0x1234.
    let mut ca = [0u8; 4 + 16 * 8];
    ca[..2].copy_from_slice(&[0, 1]);
    ca[4 + 15 * 8..4 + 15 * 8 + 2].copy_from_slice(&[0x12, 0x34]);
    let ca = cc_resp(cc_attr::CA_CONGESTION_SETTING, key, 64, &ca);
    // A switch's CongestionLog (from byte 32): 3 events counted, the
    // second event from SLID 9 to DLID 10.
    let mut log = [0u8; 40 + 15 * 12];
    log[0] = 1; // LogType: switch
    log[2..4].copy_from_slice(&3u16.to_be_bytes()); // LogEventsCounter
    log[52..56].copy_from_slice(&[0, 9, 0, 10]);
    let log = cc_resp(cc_attr::CONGESTION_LOG, key, 32, &log);
    // A LogType neither switch nor CA.
    let odd = cc_resp(cc_attr::CONGESTION_LOG, 0, 32, &[7]);
    let out = decode_text(&[info, ca, log, odd]);
    assert_contains_all(
        &out,
        &[
            "MgmtClass:.......................CongMgt\n",
            "AttrId:..........................CongestionInfo\n",
            "CC_Key:..........................0x0123456789abcdef\n",
            "# CongestionInfo (byte 64)",
            "ControlTableCap:.................2\n",
            "# CACongestionSetting (byte 64)",
            "Port_Control:....................1\n",
            "# CACongestionEntry [15] (byte 188)",
            "CCTI_Timer:......................4660\n",
            "# CongestionLog (byte 32)",
            "LogType:.........................1\n",
            "# CongestionLogSwitch (byte 32)",
            "LogEventsCounter:................3\n",
            "# CongestionLogEventSwitch [1] (byte 84)",
            "SLID:............................9\n",
            "DLID:............................10\n",
            "LogType:.........................7\n",
            "a LogType neither switch (1) nor CA (2): the log is shown raw",
        ],
    );
    assert_eq!(out.matches("# CACongestionEntry [").count(), 16, "{out}");
    assert_eq!(
        out.matches("# CongestionLogEventSwitch [").count(),
        15,
        "{out}"
    );
    assert!(!out.contains("common:"), "{out}");
}

#[test]
fn decodes_an_ibping_answer_as_its_host_text() {
    use mad_core::wire::openib::{ping_request, text_data};
    let mut pong = ping_request(0x00_1405).unwrap().to_vec();
    pong[3] = 0x81; // GetResp
    pong[40..].copy_from_slice(&text_data("node7.example"));
    let out = decode_text(&[pong]);
    assert_contains_all(
        &out,
        &[
            "# OpenIBText (byte 40)",
            "String:..........................node7.example\n",
        ],
    );
}
