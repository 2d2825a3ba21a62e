"""Type stubs of madstack._native, the pyo3 extension (use the
``madstack`` package's API; this module is its engine)."""

from typing import Any, Dict, List, Optional, Tuple, Union

class MadError(Exception):
    """Any failure of madstack."""

    cause: str
    """The Rust error's text."""
    status: Optional[int]
    """The MAD status of the answer, when it carried one."""

class OpenError(MadError):
    """The port could not be opened (no topology file, no ibsim, no device)."""

class RegistrationError(MadError):
    """An agent registration was refused."""

class MadTimeout(MadError):
    """No answer within the timeout and retries."""

class StatusError(MadError):
    """The answer carried a non-zero MAD status (``status``)."""

class ClosedError(MadError):
    """The Port (or event stream) was closed."""

class InputError(MadError):
    """Bad input: an unknown attribute or field, a value that does not fit."""

class Attribute:
    """One structure read from the fabric: its fields are attributes
    (``ni.node_guid``: integers, text, bytes, lists, nested Attributes)."""

    @property
    def name(self) -> str:
        """The structure's name (``"NodeInfo"``)."""
    @property
    def fields(self) -> List[str]:
        """The field names in wire order (reserved fields left out)."""
    @property
    def labels(self) -> List[Tuple[str, str]]:
        """(field name, label as smpquery / perfquery print it) pairs."""
    @property
    def raw(self) -> bytes:
        """The structure's bytes on the wire."""
    def to_dict(self) -> Dict[str, Any]:
        """The fields as ``mad --json`` prints them (64-bit values as
        ``"0x"`` + 16 hex digits)."""
    def __getattr__(self, name: str) -> Any: ...
    def __getitem__(self, name: str) -> Any: ...

class Events:
    """The port's event stream."""

    def next(self, timeout: Optional[float] = None) -> Optional[str]:
        """The next event's name, or None after ``timeout`` seconds."""
    def close(self) -> None:
        """Stops listening."""

class Fabric:
    """A discovered fabric: the Rust model, read a node at a time by its
    position in ``mad ibnetdiscover --json``'s ``nodes``; see
    ``madstack.Fabric``."""

    def __len__(self) -> int: ...
    def node_info(self, k: int) -> Tuple[int, str, str, int, int]:
        """Node ``k``'s ``(guid, type, description, num_ports, lid)``."""
    def node_dict(self, k: int) -> Dict[str, Any]:
        """Node ``k`` as ``mad ibnetdiscover --json`` writes it."""
    def find(self, name: str) -> Optional[int]:
        """The position of the first node described ``name``."""
    def links(self) -> List[Tuple[int, int, int, int]]:
        """Every cable once: ``(position, port, position, port)``."""
    def summary(self) -> Dict[str, Any]:
        """The ``summary`` object of ``mad ibnetdiscover --json``."""
    def to_json(self) -> str:
        """The whole ``mad ibnetdiscover --json`` object as JSON text."""

class Port:
    """The native port; see ``madstack.Port``."""

    @property
    def closed(self) -> bool: ...
    def attrs(self) -> Dict[str, Any]: ...
    def describe(self) -> str: ...
    def smp_get(
        self,
        name: str,
        lid: Optional[int] = None,
        dr: Optional[List[int]] = None,
        guid: Optional[int] = None,
        attr_mod: int = 0,
    ) -> Attribute: ...
    def smp_get_many(
        self,
        name: str,
        lids: Optional[List[int]] = None,
        drs: Optional[List[List[int]]] = None,
        attr_mod: int = 0,
    ) -> List[Union[Attribute, MadError]]: ...
    def smp_set(
        self,
        name: str,
        fields: Dict[str, Union[int, bytes, str]],
        lid: Optional[int] = None,
        dr: Optional[List[int]] = None,
        guid: Optional[int] = None,
        attr_mod: int = 0,
    ) -> Attribute: ...
    def counters(self, lid: int, port: int, extended: bool) -> Attribute: ...
    def reset_counters(self, lid: int, port: int, extended: bool) -> Attribute: ...
    def sa_get(self, name: str, fields: Optional[Dict[str, Union[int, bytes, str]]] = None) -> Attribute: ...
    def sa_get_table(
        self, name: str, fields: Optional[Dict[str, Union[int, bytes, str]]] = None
    ) -> Tuple[List[Attribute], bool]: ...
    def subscribe(self, trap: int) -> int: ...
    def next_report(self, timeout: float) -> Optional[Attribute]: ...
    def discover(
        self, window: Optional[int] = None, per_node: Optional[int] = None, timeout: Optional[float] = None
    ) -> Fabric:
        """A fresh discovery: the Rust model."""
    def sweep(
        self, window: Optional[int] = None, per_node: Optional[int] = None, timeout: Optional[float] = None
    ) -> str:
        """``mad sweep --json``'s object, as JSON text."""
    def route_to(self, lid: int) -> Optional[List[int]]: ...
    def events(self) -> Events: ...
    def sim_cable(self, node: str, port: int, up: bool) -> None:
        """Built-in fabric only: pulls (``up=False``) or plugs back a cable."""
    def sim_event(self, name: str) -> None:
        """Built-in fabric only: raises event ``name`` at this port."""
    def close(self) -> None: ...

def open(
    sim: Union[bool, str, None] = None,
    ibsim: bool = False,
    ca: Optional[str] = None,
    port: Optional[int] = None,
    sim_node: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Port: ...
def known_attributes(class_: str) -> List[str]: ...
def _panic_for_test() -> None: ...
