"""madstack: InfiniBand management datagrams from Python.

Open a port on the built-in simulated fabric, a running ibsim or a real
HCA port, then query it::

    import madstack
    with madstack.open(sim=True) as port:
        ni = port.smp.get("NodeInfo", lid=port.lid)
        print(hex(ni.node_guid), ni.to_dict())
        for p in port.sa.get_table("PathRecord", slid=port.lid):
            print(p.dlid, p.sl, p.mtu)

Every call that waits on the fabric releases the GIL. Failures raise
:class:`MadError` (or a subclass: :class:`MadTimeout`,
:class:`StatusError`, :class:`OpenError`, :class:`RegistrationError`,
:class:`ClosedError`, :class:`InputError`), whose ``cause`` is the Rust
error's text and ``status`` the MAD status when there was one.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from typing import Any, Dict, Iterator, List, Optional, Union

from . import _native
from ._native import (
    Attribute,
    ClosedError,
    InputError,
    MadError,
    MadTimeout,
    OpenError,
    RegistrationError,
    StatusError,
)

__all__ = [
    "open",
    "Port",
    "Attribute",
    "Fabric",
    "Table",
    "Node",
    "Link",
    "known_attributes",
    "MadError",
    "MadTimeout",
    "StatusError",
    "OpenError",
    "RegistrationError",
    "ClosedError",
    "InputError",
]

__version__ = "0.1.0"


def _hex(v: Any) -> Any:
    """A ``"0x…"`` string of the JSON contract as an int; other values as they are."""
    if isinstance(v, str) and v.startswith("0x"):
        return int(v, 16)
    return v


def known_attributes(cls: str) -> List[str]:
    """The attribute names known for class ``"smp"``, ``"perf"`` or ``"sa"``."""
    return _native.known_attributes(cls)


class Smp:
    """Subnet management (``port.smp``): Get and Set of SMP attributes by
    LID (``lid=``), directed route (``dr=[1, 3]``) or port GUID (``guid=``,
    resolved through the SA); no destination: the local port."""

    def __init__(self, port: "Port") -> None:
        self._p = port

    def get(
        self,
        name: str,
        *,
        lid: Optional[int] = None,
        dr: Optional[Sequence[int]] = None,
        guid: Optional[int] = None,
        mod: int = 0,
    ) -> Attribute:
        """SubnGet of attribute ``name`` (``"NodeInfo"``, ``"PortInfo"``,
        ``"SwitchInfo"``, ``"P_KeyTable"``, ``"LFT"``, ...: as ``mad decode``
        names them or smpquery's ops; :func:`known_attributes` ``("smp")``
        lists them) with attribute modifier ``mod`` (e.g. the port number
        of PortInfo). No destination: the local port."""
        return self._p._native.smp_get(
            name, lid=lid, dr=None if dr is None else list(dr), guid=guid, attr_mod=mod
        )

    def get_many(
        self,
        name: str,
        *,
        lids: Optional[Sequence[int]] = None,
        drs: Optional[Sequence[Sequence[int]]] = None,
        mod: int = 0,
    ) -> List[Union[Attribute, MadError]]:
        """SubnGet of ``name`` at every LID of ``lids`` (or directed route
        of ``drs``), all in flight at once: one entry per target, in order,
        a failed target's entry being its exception (not raised)."""
        # The native call takes any sequence of routes (lists, tuples):
        # no per-route copy here.
        return self._p._native.smp_get_many(
            name,
            lids=lids if lids is None or isinstance(lids, list) else list(lids),
            drs=drs if drs is None or isinstance(drs, list) else list(drs),
            attr_mod=mod,
        )

    def set(
        self,
        name: str,
        *,
        lid: Optional[int] = None,
        dr: Optional[Sequence[int]] = None,
        guid: Optional[int] = None,
        mod: int = 0,
        **fields: Union[int, bytes, str],
    ) -> Attribute:
        """SubnSet of attribute ``name``: the current value is read, the
        keyword arguments change its fields, and it is written back.
        Returns what the node answered."""
        return self._p._native.smp_set(
            name, fields, lid=lid, dr=None if dr is None else list(dr), guid=guid, attr_mod=mod
        )


class Perf:
    """Performance management (``port.perf``)."""

    def __init__(self, port: "Port") -> None:
        self._p = port

    def counters(self, lid: int, port_num: int, extended: bool = False) -> Attribute:
        """PortCounters (``extended=True``: PortCountersExtended) of port
        ``port_num`` of the node at ``lid``."""
        return self._p._native.counters(lid, port_num, extended)

    def reset(self, lid: int, port_num: int, extended: bool = False) -> Attribute:
        """Clears every counter of PortCounters (or PortCountersExtended);
        returns what the PMA answered."""
        return self._p._native.reset_counters(lid, port_num, extended)


class Sa:
    """Subnet administration (``port.sa``): keyword arguments are record
    fields; the ComponentMask is made of the ones given."""

    def __init__(self, port: "Port") -> None:
        self._p = port

    def get(self, name: str, **fields: Union[int, bytes, str]) -> Attribute:
        """SubnAdmGet of the one record ``name`` matching ``fields``
        (:class:`StatusError` when none or several match)."""
        return self._p._native.sa_get(name, fields)

    def get_table(self, name: str, **fields: Union[int, bytes, str]) -> "Table":
        """SubnAdmGetTable of every record ``name`` matching ``fields``: a
        :class:`Table` (a list) whose ``truncated`` says the answer came
        cut to its first MAD (ibsim and libumad2sim do no RMPP)."""
        records, truncated = self._p._native.sa_get_table(name, fields)
        return Table(records, truncated)

    def subscribe(self, trap: int, timeout: Optional[float] = None) -> Iterator[Attribute]:
        """Subscribes to trap ``trap`` (64: GID in service, 65: out of
        service, ...) and yields the Notice of every Report. The iteration
        ends after ``timeout`` seconds without a Report (``None``: never)."""
        self._p._native.subscribe(trap)
        return self._reports(timeout)

    def _reports(self, timeout: Optional[float]) -> Iterator[Attribute]:
        while True:
            r = self._p._native.next_report(0.2 if timeout is None else timeout)
            if r is None:
                if timeout is None:
                    continue
                return
            yield r


class Table(list):
    """The records of a GetTable; ``truncated`` is True when the SA's
    answer arrived cut to its first MAD (on ibsim, under libumad2sim)."""

    def __init__(self, records: List[Attribute], truncated: bool = False) -> None:
        super().__init__(records)
        self.truncated = truncated


class Node:
    """A node of a discovered :class:`Fabric`: ``guid``, ``type``
    (``"Switch"``, ``"Ca"``, ``"Router"``), ``description``, ``lid``,
    ``num_ports`` and ``ports`` (dicts as ``mad ibnetdiscover --json``
    writes them, made when first read)."""

    def __init__(self, native: Any, position: int) -> None:
        self._f = native
        self._k = position
        self._d: Optional[Dict[str, Any]] = None
        self.guid: int
        self.type: str
        self.description: str
        self.num_ports: int
        self.lid: int
        self.guid, self.type, self.description, self.num_ports, self.lid = native.node_info(position)

    @property
    def ports(self) -> List[Dict[str, Any]]:
        """The node's ports as ``mad ibnetdiscover --json`` writes them
        (``port``, ``guid``, ``lid``, ``width``, ``speed``, ``state``,
        ``remote``, ...)."""
        return self.to_dict()["ports"]

    def port_lid(self, num: int) -> int:
        """The LID of port ``num`` (a switch's ports: the switch's LID)."""
        for p in self.ports:
            if p["port"] == num:
                return p["lid"]
        raise KeyError(num)

    def to_dict(self) -> Dict[str, Any]:
        """The node as ``mad ibnetdiscover --json`` writes it."""
        if self._d is None:
            self._d = self._f.node_dict(self._k)
        return self._d

    def __repr__(self) -> str:
        return f"<Node {self.type} {self.guid:#018x} {self.description!r} lid {self.lid}>"


class Link:
    """A cable: ``a`` and ``b`` are ``(Node, port number)``."""

    def __init__(self, a: "tuple[Node, int]", b: "tuple[Node, int]") -> None:
        self.a = a
        self.b = b

    def __repr__(self) -> str:
        return f"<Link {self.a[0].description}[{self.a[1]}] - {self.b[0].description}[{self.b[1]}]>"


class _Nodes(Sequence):  # type: ignore[type-arg]
    """The nodes of a :class:`Fabric` as a read-only sequence: a
    :class:`Node` is made when it is first indexed or iterated over, and
    kept (the same object every time)."""

    def __init__(self, native: Any) -> None:
        self._f = native
        self._made: List[Optional[Node]] = [None] * len(native)

    def __len__(self) -> int:
        return len(self._made)

    def _at(self, k: int) -> Node:
        n = self._made[k]
        if n is None:
            n = self._made[k] = Node(self._f, k)
        return n

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self._at(i) for i in range(*k.indices(len(self._made)))]
        k = operator.index(k)
        if k < 0:
            k += len(self._made)
        if not 0 <= k < len(self._made):
            raise IndexError(f"node index {k} out of range ({len(self._made)} nodes)")
        return self._at(k)

    def __iter__(self) -> Iterator[Node]:
        for k in range(len(self._made)):
            yield self._at(k)

    def __repr__(self) -> str:
        return f"<{len(self._made)} nodes>"


class Fabric:
    """The fabric as ``ibnetdiscover`` models it: :attr:`nodes` (switches,
    CAs, routers in its output order), :attr:`links`, :attr:`summary` and
    :meth:`to_networkx`. The model stays in Rust: Python objects are made
    of the nodes, ports and links that are read, when they are read."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._nodes = _Nodes(native)
        self._summary: Optional[Dict[str, Any]] = None
        self._links: Optional[List[Link]] = None
        self._d: Optional[Dict[str, Any]] = None

    @property
    def nodes(self) -> Sequence[Node]:
        """The nodes in ``ibnetdiscover``'s order: a sequence that makes
        each :class:`Node` when it is first indexed or iterated over."""
        return self._nodes

    @property
    def summary(self) -> Dict[str, Any]:
        """``mad ibnetdiscover --json``'s ``summary``: ``nodes``,
        ``switches``, ``cas``, ``routers``, ``links``, ``smps``,
        ``elapsed_us``."""
        if self._summary is None:
            self._summary = self._native.summary()
        return self._summary

    @property
    def links(self) -> List[Link]:
        """Every cable once, in the order of its first end in
        :attr:`nodes` (made on first use)."""
        if self._links is None:
            at = self._nodes._at
            self._links = [Link((at(i), p), (at(j), q)) for i, p, j, q in self._native.links()]
        return self._links

    def node(self, name: str) -> Node:
        """The node whose description is ``name`` (:class:`KeyError` if none)."""
        k = self._native.find(name)
        if k is None:
            raise KeyError(name)
        return self._nodes._at(k)

    def to_dict(self) -> Dict[str, Any]:
        """The object ``mad ibnetdiscover --json`` writes (envelope aside),
        made on first use."""
        if self._d is None:
            self._d = json.loads(self._native.to_json())
        return self._d

    def to_networkx(self) -> Any:
        """A ``networkx.MultiGraph``: a vertex per node GUID (attributes
        ``type``, ``description``, ``lid``), an edge per link (``ports``:
        the port numbers at each end). Needs networkx."""
        try:
            import networkx as nx
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError("to_networkx() needs networkx: pip install networkx") from e
        g = nx.MultiGraph()
        for n in self.nodes:
            g.add_node(n.guid, type=n.type, description=n.description, lid=n.lid)
        for l in self.links:
            g.add_edge(l.a[0].guid, l.b[0].guid, ports={l.a[0].guid: l.a[1], l.b[0].guid: l.b[1]})
        return g

    def __repr__(self) -> str:
        return f"<Fabric {len(self.nodes)} nodes, {self.summary['links']} links>"


class Port:
    """An open port (from :func:`open`); a context manager that closes it.

    ``port.smp``, ``port.perf`` and ``port.sa`` are the clients;
    :meth:`discover`, :meth:`sweep`, :meth:`events` the rest. A closed
    port raises :class:`ClosedError`."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self.smp = Smp(self)
        self.perf = Perf(self)
        self.sa = Sa(self)

    def __enter__(self) -> "Port":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def attrs(self) -> Dict[str, Any]:
        """The port's attributes (``lid``, ``sm_lid``, ``port_guid``, ...)."""
        return self._native.attrs()

    @property
    def lid(self) -> int:
        """The port's LID."""
        return self._native.attrs()["lid"]

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._native.closed

    def describe(self) -> str:
        """One line saying where the port is."""
        return self._native.describe()

    def discover(
        self, *, window: Optional[int] = None, per_node: Optional[int] = None, timeout: Optional[float] = None
    ) -> Fabric:
        """Discovers the fabric (``mad ibnetdiscover``'s parallel discovery;
        ``window`` MADs in flight, ``per_node`` per node, ``timeout`` in
        seconds). Ctrl-C stops it with :class:`KeyboardInterrupt`."""
        return Fabric(self._native.discover(window=window, per_node=per_node, timeout=timeout))

    def sweep(
        self, *, window: Optional[int] = None, per_node: Optional[int] = None, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Discovers the fabric and reads the counters of every port, as
        ``mad sweep --json`` prints them (``nodes`` → ``ports`` →
        ``counters`` / ``extended`` / ``error``, and a ``summary``)."""
        return json.loads(self._native.sweep(window=window, per_node=per_node, timeout=timeout))

    def route_to(self, lid: int) -> Optional[List[int]]:
        """The directed route (egress ports) to ``lid`` through the
        switches' forwarding tables, as ibtracert walks it."""
        return self._native.route_to(lid)

    def events(self, timeout: Optional[float] = None) -> Iterator[str]:
        """Yields the port's events (``"port_active"``, ``"port_error"``,
        ``"lid_change"``, ``"sm_change"``, ``"client_reregister"``, ...).
        Ends after ``timeout`` seconds without one (``None``: never).
        Listening starts when this is called."""
        ev = self._native.events()

        def gen() -> Iterator[str]:
            try:
                while True:
                    e = ev.next(timeout)
                    if e is None:
                        return
                    yield e
            finally:
                ev.close()

        return gen()

    def close(self) -> None:
        """Stops the port's threads. Closing twice does nothing."""
        self._native.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<madstack.Port closed>"
        return f"<madstack.Port {self.describe()}>"


def open(
    sim: Union[bool, str, None] = None,
    *,
    ibsim: bool = False,
    ca: Optional[str] = None,
    port: Optional[int] = None,
    sim_node: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Port:
    """Opens a port and starts the stack on it.

    - ``sim=True``: the built-in fabric (default topology), ``sim="FILE"``
      one of your own (ibsim / ibnetdiscover format); ``sim_node`` names
      the node to attach at;
    - ``ibsim=True``: a running ibsim (``IBSIM_SERVER_NAME`` /
      ``IBSIM_SERVER_PORT`` or ``IBSIM_SOCKNAME``);
    - ``ca="mlx5_0", port=1``: a real port (libibumad);

    ``timeout`` is each query's response timeout in seconds (default 1;
    two resends after it). Raises :class:`OpenError`."""
    return Port(
        _native.open(sim=sim, ibsim=ibsim, ca=ca, port=port, sim_node=sim_node, timeout=timeout)
    )
