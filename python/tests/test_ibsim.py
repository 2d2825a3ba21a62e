"""The Python API on a real ibsim with OpenSM 3.3 as the SM, compared
field by field with what infiniband-diags' smpquery, perfquery and
saquery print for the same queries against the same fabric
(tests/fixtures/topologies/net: two switches, two HCAs)."""

from __future__ import annotations

import ipaddress
from typing import Dict, List

import pytest

import madstack
from conftest import as_int, parse_dots

# Printed as a rendering of the code (2048 for MTU code 4), not the code.
RENDERED = {"NeighborMTU", "MtuCap"}
NODE_TYPES = {"Channel Adapter": 1, "Switch": 2, "Router": 3}


def node_lids(port: madstack.Port) -> List[int]:
    """A LID of every node: a switch's, a CA's first port's."""
    return sorted({n.lid or next(p["lid"] for p in n.ports if p["lid"]) for n in port.discover().nodes})


def compare_dump(attr: madstack.Attribute, text: str) -> int:
    """Compares every numeric line of a libibmad dump with the field of
    the same label; returns how many were compared."""
    shown = parse_dots(text)
    n = 0
    for name, label in attr.labels:
        if label not in shown or label in RENDERED:
            continue
        want = as_int(shown[label])
        if want is None:
            continue
        assert getattr(attr, name) == want, f"{attr.name}.{name} ({label}): {getattr(attr, name)} != {want}"
        n += 1
    return n


@pytest.fixture(scope="module")
def port(ibsim_sm):
    with ibsim_sm.open() as p:
        yield p


def test_the_port_on_ibsim_knows_opensm_as_its_sm(port):
    a = port.attrs
    assert a["lid"] != 0 and a["sm_lid"] != 0


def test_smp_nodeinfo_and_portinfo_equal_smpquery(ibsim_sm, port):
    lids = node_lids(port)
    assert len(lids) == 4
    for lid in lids:
        ni = port.smp.get("NodeInfo", lid=lid)
        assert compare_dump(ni, ibsim_sm.run("smpquery", "nodeinfo", str(lid))) >= 10
        assert compare_dump(
            port.smp.get("NodeDescription", lid=lid), ""
        ) == 0  # text only: compared below
        nd = ibsim_sm.run("smpquery", "nodedesc", str(lid))
        assert port.smp.get("NodeDescription", lid=lid).desc == parse_dots(nd)["Node Description"]
    pi = port.smp.get("PortInfo", lid=2, mod=1)
    assert compare_dump(pi, ibsim_sm.run("smpquery", "portinfo", "2", "1")) >= 30


def test_smp_by_directed_route_equals_smpquery_dr(ibsim_sm, port):
    ni = port.smp.get("NodeInfo", dr=[1])
    assert compare_dump(ni, ibsim_sm.run("smpquery", "-D", "nodeinfo", "0,1")) >= 10


def _between(ours: madstack.Attribute, before: str, after: str) -> int:
    """Every counter perfquery prints lies between its two readings."""
    b, a = parse_dots(before), parse_dots(after)
    n = 0
    for name, label in ours.labels:
        if label not in b:
            continue
        lo, hi = as_int(b[label]), as_int(a[label])
        assert lo is not None and hi is not None
        v = getattr(ours, name)
        assert lo <= v <= hi, f"{name} ({label}): {v} not in [{lo}, {hi}]"
        n += 1
    return n


def test_perf_counters_equal_perfquery(ibsim_sm, port):
    before = ibsim_sm.run("perfquery", "2", "1")
    ours = port.perf.counters(2, 1)
    after = ibsim_sm.run("perfquery", "2", "1")
    assert _between(ours, before, after) >= 20
    before = ibsim_sm.run("perfquery", "-x", "2", "1")
    ours = port.perf.counters(2, 1, extended=True)
    after = ibsim_sm.run("perfquery", "-x", "2", "1")
    assert _between(ours, before, after) >= 6


def _sa_dumps(text: str, title: str) -> List[Dict[str, str]]:
    """saquery's ``TITLE dump:`` blocks as dicts."""
    out: List[Dict[str, str]] = []
    for line in text.splitlines():
        if line.strip() == f"{title} dump:":
            out.append({})
        elif out and "..." in line:
            k, _, v = line.strip().partition(".")
            out[-1][k] = v.lstrip(".").strip()
    return out


def test_sa_node_records_equal_saquery(ibsim_sm, port):
    names = {"base_version": "base_version", "class_version": "class_version",
             "num_ports": "num_ports", "sys_guid": "system_image_guid", "node_guid": "node_guid",
             "port_guid": "port_guid", "partition_cap": "partition_cap", "device_id": "device_id",
             "revision": "revision", "port_num": "local_port_num", "vendor_id": "vendor_id"}
    lids = node_lids(port)
    for lid in lids:
        (d,) = _sa_dumps(ibsim_sm.run("saquery", "NodeRecord", str(lid)), "NodeRecord")
        r = port.sa.get("NodeRecord", lid=lid)
        assert r.lid == int(d["lid"], 0) == lid
        for k, f in names.items():
            assert getattr(r, f) == int(d[k], 0), (lid, k)
        assert r.node_type == NODE_TYPES[d["node_type"]]
        assert r.desc == d["NodeDescription"]


def test_a_table_cut_to_one_mad_on_ibsim_says_so(port):
    # OpenSM under libumad2sim answers a GetTable with its first MAD only
    # (four NodeRecords of 112 bytes do not fit in one).
    t = port.sa.get_table("NodeRecord")
    assert t.truncated
    assert 1 <= len(t) < 4


def test_sa_path_record_equals_saquery(ibsim_sm, port):
    (d,) = _sa_dumps(ibsim_sm.run("saquery", "-p", "--slid", "2", "--dlid", "3"), "PathRecord")
    (r,) = port.sa.get_table("PathRecord", slid=2, dlid=3)
    assert r.service_id == int(d["service_id"], 0)
    assert r.dgid == ipaddress.IPv6Address(d["dgid"]).packed
    assert r.sgid == ipaddress.IPv6Address(d["sgid"]).packed
    assert (r.dlid, r.slid) == (int(d["dlid"]), int(d["slid"]))
    assert (r.raw_traffic << 31 | r.flow_label << 8 | r.hop_limit) == int(d["hop_flow_raw"], 0)
    assert r.tclass == int(d["tclass"], 0)
    assert (r.reversible << 7 | r.numb_path) == int(d["num_path_revers"], 0)
    assert r.pkey == int(d["pkey"], 0)
    assert (r.qos_class, r.sl) == (int(d["qos_class"], 0), int(d["sl"], 0))
    assert (r.mtu_selector << 6 | r.mtu) == int(d["mtu"], 0)
    assert (r.rate_selector << 6 | r.rate) == int(d["rate"], 0)
    assert (r.packet_life_time_selector << 6 | r.packet_life_time) == int(d["pkt_life"], 0)
    assert r.preference == int(d["preference"], 0)


def test_discover_on_ibsim_finds_the_topology(port):
    f = port.discover()
    assert sorted(n.type for n in f.nodes) == ["Ca", "Ca", "Switch", "Switch"]
    s = port.sweep()
    assert s["summary"]["ports_failed"] == 0 and s["summary"]["ports_read"] > 0
