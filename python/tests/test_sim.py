"""Every call of the madstack API against the built-in fabric (default
topology: 2 spines, 2 leaves, 8 hosts; SM-lite at host-1, LID 1; the
port at host-2, LID 3)."""

from __future__ import annotations

import os
import threading

import pytest

import madstack
from conftest import TOPOLOGIES


def test_open_sim_gives_a_port_with_a_lid_and_the_sm_lid(sim_port):
    a = sim_port.attrs
    assert a["lid"] == sim_port.lid == 3
    assert a["sm_lid"] == 1
    assert a["ca"] == "host-2"
    assert "built-in fabric" in sim_port.describe()
    assert "built-in fabric" in repr(sim_port)


def test_open_sim_with_a_topology_file_and_a_node():
    with madstack.open(sim=str(TOPOLOGIES / "net"), sim_node="Hca2") as p:
        ni = p.smp.get("NodeInfo", lid=p.lid)
        assert ni.node_type == 1
        assert "Hca2" in p.describe()


def test_open_refuses_a_missing_topology_with_the_rust_cause():
    with pytest.raises(madstack.OpenError) as e:
        madstack.open(sim="/nonexistent/topo.net")
    assert "/nonexistent/topo.net" in e.value.cause
    assert isinstance(e.value, madstack.MadError)


def test_open_refuses_two_fabrics_at_once():
    with pytest.raises(madstack.InputError, match="one of"):
        madstack.open(sim=True, ibsim=True)


def test_open_ibsim_without_ibsim_running_says_where_it_looked(monkeypatch):
    monkeypatch.setenv("IBSIM_SOCKNAME", f"madstack-py-nobody-{os.getpid()}")
    monkeypatch.delenv("IBSIM_SERVER_NAME", raising=False)
    with pytest.raises(madstack.OpenError, match="ibsim"):
        madstack.open(ibsim=True)


def test_smp_get_by_lid_directed_route_and_guid_reach_the_same_node(sim_port):
    by_lid = sim_port.smp.get("NodeInfo", lid=3)
    by_dr = sim_port.smp.get("NodeInfo", dr=[])
    by_guid = sim_port.smp.get("NI", guid=by_lid.port_guid)
    assert by_lid == by_dr == by_guid
    assert by_lid.name == "NodeInfo"
    assert by_lid.node_guid == 0x100003
    assert by_lid["num_ports"] == 2
    assert ("node_guid", "Guid") in by_lid.labels
    assert len(by_lid.raw) == 40


def test_smp_get_port_info_through_a_switch_by_directed_route(sim_port):
    pi = sim_port.smp.get("PortInfo", dr=[1], mod=1)
    assert pi.port_state == 4  # Active
    assert pi.local_port_num >= 1  # the port the SMP came in on
    sw = sim_port.smp.get("SwitchInfo", dr=[1])
    assert sw.linear_fdb_top > 0
    nd = sim_port.smp.get("NodeDescription", dr=[1])
    assert "switch" in nd.desc


def test_to_dict_writes_64_bit_values_as_the_json_contract(sim_port):
    d = sim_port.smp.get("NodeInfo", lid=3).to_dict()
    assert d["node_guid"] == "0x0000000000100003"
    assert d["num_ports"] == 2


def test_an_unknown_attribute_or_field_is_an_error_naming_the_known_ones(sim_port):
    with pytest.raises(madstack.InputError, match="NodeInfo"):
        sim_port.smp.get("Bogus", lid=3)
    ni = sim_port.smp.get("NodeInfo", lid=3)
    with pytest.raises(AttributeError, match="node_guid"):
        ni.no_such_field
    with pytest.raises(madstack.InputError, match="lid=, dr= or guid="):
        sim_port._native.smp_get("NodeInfo", lid=3, dr=[1])
    assert "PathRecord" in madstack.known_attributes("sa")


def test_a_query_to_a_lid_nobody_has_times_out_with_the_cause():
    with madstack.open(sim=True, timeout=0.05) as p:
        with pytest.raises(madstack.MadTimeout) as e:
            p.smp.get("NodeInfo", lid=999)
        assert "timeout" in e.value.cause


def test_smp_set_changes_a_field_and_returns_the_answer(sim_port):
    before = sim_port.smp.get("PortInfo", lid=3, mod=1)
    after = sim_port.smp.set("PortInfo", lid=3, mod=1, m_key_lease_period=7)
    assert after.m_key_lease_period == 7
    assert sim_port.smp.get("PortInfo", lid=3, mod=1).m_key_lease_period == 7
    assert before.lid == after.lid
    with pytest.raises(madstack.InputError, match="4 bits"):
        sim_port.smp.set("PortInfo", lid=3, mod=1, port_state=99)


def test_a_mad_status_is_a_status_error_carrying_it(sim_port):
    # A CA has no SwitchInfo: its SMA answers "attribute not supported".
    with pytest.raises(madstack.StatusError) as e:
        sim_port.smp.get("SwitchInfo", lid=3)
    assert e.value.status is not None and e.value.status != 0


def test_perf_counters_and_reset(sim_port):
    c = sim_port.perf.counters(1, 1)
    assert c.name == "PortCounters"
    assert c.port_xmit_pkts > 0
    x = sim_port.perf.counters(1, 1, extended=True)
    assert x.port_xmit_data >= c.port_xmit_data
    sim_port.perf.reset(1, 1)
    assert sim_port.perf.counters(1, 1).symbol_error_counter == 0
    assert sim_port.perf.counters(1, 1).port_xmit_pkts < c.port_xmit_pkts + 10
    sim_port.perf.reset(1, 1, extended=True)


def test_sa_get_and_get_table_with_component_masks_from_keywords(sim_port):
    nr = sim_port.sa.get("NodeRecord", lid=3)
    assert nr.lid == 3 and nr.node_guid == 0x100003
    assert nr.node_info.node_guid == 0x100003
    assert nr.desc == "host-2 HCA-1"
    every = sim_port.sa.get_table("NodeRecord")
    assert len(every) == 12
    paths = sim_port.sa.get_table("PathRecord", slid=3)
    assert {p.dlid for p in paths} >= {1, 3, 12}
    one = sim_port.sa.get_table("PathRecord", slid=3, dlid=12)
    assert len(one) == 1 and one[0].dlid == 12
    assert sim_port.sa.get_table("NodeRecord", lid=999) == []
    with pytest.raises(madstack.StatusError):
        sim_port.sa.get("NodeRecord", lid=999)
    with pytest.raises(madstack.InputError, match="no field"):
        sim_port.sa.get_table("PathRecord", nope=1)


def test_sa_subscribe_yields_reports_and_ends_on_timeout(sim_port):
    # Trap 128 (link state change): pulling a host's cable makes its leaf
    # switch send it to SM-lite, whose SA reports it to subscribers.
    reports = sim_port.sa.subscribe(128, timeout=1.0)
    sim_port._native.sim_cable("host-8", 1, False)
    got = list(reports)
    assert len(got) >= 1
    n = got[0]
    assert n.name == "Notice"
    assert n.trap_number_or_device_id == 128
    assert n.issuer_lid == 8  # leaf-2
    assert n.to_dict()["issuer_gid"] == "fe800000000000000000000000200001"


def test_discover_gives_the_ibnetdiscover_model(sim_port):
    f = sim_port.discover()
    assert len(f.nodes) == 12
    assert len(f.links) == 12
    assert sum(n.type == "Switch" for n in f.nodes) == 4
    h = f.node("host-8 HCA-1")
    assert h.type == "Ca" and h.port_lid(1) == 12
    assert f.to_dict()["summary"]["nodes"] == 12
    with pytest.raises(KeyError):
        f.node("nobody")


def test_fabric_read_from_the_rust_model_equals_its_json_form(sim_port):
    f = sim_port.discover()
    d = f.to_dict()
    assert len(f.nodes) == len(d["nodes"]) == 12
    assert [n.to_dict() for n in f.nodes] == d["nodes"]
    for n, j in zip(f.nodes, d["nodes"]):
        assert (n.guid, n.type, n.description, n.num_ports, n.lid) == (
            int(j["guid"], 16), j["type"], j["description"], j["num_ports"], j["lid"])
        assert n.ports == j["ports"]
    assert f.summary == d["summary"]
    # The links: every cable once, at its first end in the nodes' order,
    # as the JSON's remote ends say.
    at = {j["guid"]: i for i, j in enumerate(d["nodes"])}
    want = [(i, p["port"], at[p["remote"]["guid"]], p["remote"]["port"])
            for i, j in enumerate(d["nodes"]) for p in j["ports"]
            if p["remote"] and (at[p["remote"]["guid"]], p["remote"]["port"]) >= (i, p["port"])]
    pos = {id(n): i for i, n in enumerate(f.nodes)}
    assert [(pos[id(l.a[0])], l.a[1], pos[id(l.b[0])], l.b[1]) for l in f.links] == want
    assert len(want) == f.summary["links"]


def test_fabric_nodes_are_a_sequence_made_on_demand_and_kept(sim_port):
    f = sim_port.discover()
    assert f.nodes[0] is f.nodes[0] and f.nodes[-1] is f.nodes[11]
    assert f.nodes[2:4] == [f.nodes[2], f.nodes[3]]
    assert f.node("host-8 HCA-1") is next(n for n in f.nodes if n.description == "host-8 HCA-1")
    assert f.links[0].a[0] is f.nodes[0]
    with pytest.raises(IndexError):
        f.nodes[12]
    with pytest.raises(IndexError):
        f.nodes[-13]
    with pytest.raises(TypeError):
        f.nodes["host-8 HCA-1"]


def test_to_networkx_builds_the_graph_when_networkx_is_there(sim_port):
    if os.environ.get("CI") == "true":
        import networkx as nx  # installed by scripts/test.sh: missing fails
    else:
        nx = pytest.importorskip("networkx")
    g = sim_port.discover().to_networkx()
    assert g.number_of_nodes() == 12 and g.number_of_edges() == 12
    assert nx.is_connected(g)


def test_sweep_reads_every_port(sim_port):
    s = sim_port.sweep(window=16, per_node=2, timeout=0.5)
    assert s["summary"]["ports_read"] == s["summary"]["ports"] == 40
    p = s["nodes"][0]["ports"][0]
    assert p["error"] is None and "port_xmit_data" in p["counters"]


def test_route_to_walks_the_forwarding_tables(sim_port):
    r = sim_port.route_to(12)
    assert r is not None and len(r) == 4
    end = sim_port.smp.get("NodeDescription", dr=r)
    assert end.desc == "host-8 HCA-1"


def test_events_come_as_an_iterator(sim_port):
    ev = sim_port.events(timeout=1.0)
    sim_port._native.sim_event("lid_change")
    sim_port._native.sim_event("sm_change")
    sim_port._native.sim_event("client_reregister")
    got = list(ev)
    assert {"lid_change", "sm_change", "client_reregister"} <= set(got)


def test_pulling_the_cable_gives_port_error_then_port_active(sim_port):
    ev = sim_port.events(timeout=1.0)
    sim_port._native.sim_cable("host-2", 1, False)
    sim_port._native.sim_cable("host-2", 1, True)
    got = list(ev)
    assert got[:2] == ["port_error", "port_active"]


def test_an_events_iterator_abandoned_midway_is_closed_cleanly(sim_port):
    ev = sim_port.events(timeout=1.0)
    sim_port._native.sim_event("lid_change")
    assert next(ev) == "lid_change"
    ev.close()  # the generator's finally deregisters
    # The port goes on working.
    assert sim_port.smp.get("NodeInfo", lid=3).num_ports == 2


def test_a_port_used_after_close_raises_closed_error():
    p = madstack.open(sim=True)
    p.close()
    p.close()  # twice is fine
    assert p.closed
    assert "closed" in repr(p)
    with pytest.raises(madstack.ClosedError):
        p.smp.get("NodeInfo", lid=3)
    with pytest.raises(madstack.ClosedError):
        p.discover()


def test_an_event_stream_outliving_its_port_ends_cleanly():
    p = madstack.open(sim=True)
    ev = p._native.events()
    p.close()
    assert ev.next(0.1) is None
    ev.close()
    with pytest.raises(madstack.ClosedError):
        ev.next(0.1)


def test_threads_calling_one_port_at_once_all_get_answers(sim_port):
    results, errors = [], []

    def work(i):
        try:
            for _ in range(20):
                results.append(sim_port.smp.get("NodeInfo", lid=[1, 3, 12][i % 3]).node_guid)
        except Exception as e:  # pragma: no cover - the assertion says
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not errors and len(results) == 120


def test_a_rust_panic_becomes_a_mad_error():
    with pytest.raises(madstack.MadError, match="Rust panic"):
        madstack._native._panic_for_test()


def test_help_reads_well():
    assert "SubnGet" in madstack.Smp.get.__doc__
    assert "ComponentMask" in madstack.Sa.__doc__
    assert madstack.open.__doc__ and "ibsim" in madstack.open.__doc__


def test_get_many_sends_a_batch_and_answers_in_order(sim_port):
    lids = [1, 3, 12, 999, 3]
    with madstack.open(sim=True, timeout=0.05) as p:
        got = p.smp.get_many("NodeInfo", lids=lids)
    assert [g.node_guid for g in got if isinstance(g, madstack.Attribute)] == [
        sim_port.smp.get("NodeInfo", lid=l).node_guid for l in (1, 3, 12, 3)
    ]
    assert isinstance(got[3], madstack.MadTimeout)
    drs = sim_port.smp.get_many("NodeDescription", drs=[[], [1], [1, 1]])
    assert drs[0].desc == "host-2 HCA-1" and "switch" in drs[1].desc


def test_ctrl_c_during_a_long_discover_raises_keyboard_interrupt_promptly():
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import madstack, sys\n"
        f"p = madstack.open(sim={str(TOPOLOGIES / 'net.large')!r})\n"
        "print('discovering', flush=True)\n"
        "for _ in range(200):\n"
        "    p.discover()\n"
        "print('done', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "discovering"
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    # Inside the fabric wait the Rust side sees the signal and raises
    # KeyboardInterrupt("interrupted"); between waits (the model's replay,
    # the conversion to Python) Python raises its own. Either way the
    # process stops at once, without "done".
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err, err[-2000:]


def test_every_public_call_has_a_docstring_and_a_line_in_the_readme():
    import inspect
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for cls in (madstack.Port, madstack.Smp, madstack.Perf, madstack.Sa, madstack.Fabric):
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
                continue
            assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name} has no docstring"
            if cls in (madstack.Smp, madstack.Perf, madstack.Sa):
                assert f"port.{cls.__name__.lower()}.{name}(" in readme, f"README lacks {cls.__name__}.{name}"
