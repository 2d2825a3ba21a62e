"""The port's events through the Python API against the real Linux
kernel: one boot of madstack's kernel VM (tests/kvm: Debian's stock
kernel under qemu, soft-RoCE rxe0 / rxe1 on a veth pair, ib_umad), with
this CPython and the installed madstack package shipped into it.

Inside the VM, kvm/events_probe.py opens rxe0 with ``madstack.open(ca=
"rxe0", port=1)`` (libibumad, the kernel's MAD layer; events from the
device's verbs async events) and prints what ``port.events()`` yields
while kvm/events.sh takes the port's netdev down and up and changes its
MAC. The VM boots under TCG (slow): every test of this module reads the
one run.

The interpreter is this process's own (``sys.executable``, with the
libraries ``ldd`` finds); its standard library goes in as a zip of its
``.py`` files (stored: the zip importer cannot inflate before zlib is
imported; the initramfs is gzipped anyway) and the ``lib-dynload`` modules that need no library beyond
libc; the madstack package is the installed one, extension included.
``MADSTACK_SKIP_KVM=1`` skips (never under ``CI=true``); a missing qemu
skips, and fails under ``CI=true``, as the other components do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

import madstack

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "kvm"
RUN = ROOT / "tests" / "kvm" / "run.sh"
# Parts of the standard library the probe can do without (tests, GUIs,
# installers): they only make the VM's initramfs bigger.
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
               "__pycache__", "pydoc_data", "config-3", "distutils", "unittest", "venv"}
BASE_LIBS = ("libc.so", "libm.so", "libpthread.so", "libdl.so", "ld-linux", "linux-vdso", "libgcc_s.so")


def needed(msg: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


def ldd(path: Path) -> List[str]:
    """The absolute paths of the libraries ``path`` links to."""
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > 2 and parts[2].startswith("/"):
            libs.append(parts[2])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def add_with_libs(tree: Path, src: Path, dst: str) -> None:
    """Copies ``src`` to ``dst`` in ``tree`` with the libraries it links to
    (at their own paths)."""
    d = tree / dst.lstrip("/")
    d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, d)
    for lib in ldd(src):
        t = tree / lib.lstrip("/")
        if not t.exists():
            t.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(lib, t)


def python_tree(tree: Path) -> None:
    """This interpreter's library and the madstack package under
    ``tree/kvm/py`` (PYTHONHOME ``/kvm/py/home``), ``python3`` in
    ``/kvm/bin`` (run.sh adds the interpreter itself as a PROGRAM)."""
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    home = tree / "kvm" / "py" / "home" / "lib"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    home.mkdir(parents=True)
    with zipfile.ZipFile(home / f"python{sys.version_info.major}{sys.version_info.minor}.zip", "w",
                         zipfile.ZIP_STORED) as z:  # zlib is a module of its own
        for p in sorted(stdlib.rglob("*.py")):
            rel = p.relative_to(stdlib)
            if any(part in SKIP_STDLIB or part.startswith("config-") for part in rel.parts):
                continue
            z.write(p, rel.as_posix())
    dyn = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    dst = home / f"python{ver}" / "lib-dynload"
    dst.mkdir(parents=True)
    for so in sorted(dyn.glob("*.so")):
        if so.name.startswith(("_test", "_xx", "_ctypes_test")):
            continue
        if all(any(b in lib for b in BASE_LIBS) or "libpython" in lib for lib in ldd(so)):
            shutil.copy2(so, dst / so.name)
    pkg = Path(madstack.__file__).resolve().parent
    for f in pkg.iterdir():
        if f.suffix == ".so":
            add_with_libs(tree, f, f"/kvm/py/madstack/{f.name}")
        elif f.suffix in (".py", ".pyi") or f.name == "py.typed":
            (tree / "kvm" / "py" / "madstack").mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tree / "kvm" / "py" / "madstack" / f.name)
    shutil.copy2(HERE / "events_probe.py", tree / "kvm" / "py" / "events_probe.py")
    (tree / "kvm" / "bin").mkdir(parents=True, exist_ok=True)
    os.symlink(Path(sys.executable).resolve().name, tree / "kvm" / "bin" / "python3")


@pytest.fixture(scope="module")
def vm(tmp_path_factory) -> Dict[str, List[str]]:
    """The VM run's cases: name → the console lines between its markers
    (the last one, ``KVM_CASE name rc1 rc2``, included)."""
    ci = os.environ.get("CI") == "true"
    if not ci and os.environ.get("MADSTACK_SKIP_KVM") == "1":
        pytest.skip("MADSTACK_SKIP_KVM=1: kernel VM test skipped")
    if shutil.which("qemu-system-x86_64") is None:
        needed("qemu-system-x86_64 is missing (Debian package qemu-system-x86)")
    tree = tmp_path_factory.mktemp("kvm-tree")
    python_tree(tree)
    log = tmp_path_factory.mktemp("kvm-log") / "console.log"
    env = dict(os.environ, KVM_TREE=str(tree), KVM_LOG=str(log))
    r = subprocess.run(
        ["bash", str(RUN), str(HERE / "events.sh"), str(Path(sys.executable).resolve()),
         str(ROOT / "tests" / "kvm" / "lib.sh")],
        env=env, capture_output=True, text=True, timeout=900,
    )
    console = r.stdout.replace("\r", "")
    assert r.returncode == 0, f"the VM run failed ({r.returncode}):\n{r.stderr[-3000:]}\n{console[-6000:]}"
    cases: Dict[str, List[str]] = {}
    cur = None
    for line in console.splitlines():
        if line.startswith("KVM_BEGIN "):
            cur = line.split()[1]
            cases[cur] = []
        elif cur is not None:
            cases[cur].append(line)
            if line.startswith("KVM_CASE "):
                cur = None
    assert "py_port_events" in cases, f"the case did not run:\n{console[-6000:]}"
    return cases


def probe(vm: Dict[str, List[str]]) -> List[str]:
    lines = vm["py_port_events"]
    rcs = lines[-1].split()[2:]
    text = "\n".join(lines)
    assert rcs == ["0", "0"], f"the probe failed:\n{text}"
    return [l[len("events: "):] for l in lines if l.startswith("events: ")]


def events(vm: Dict[str, List[str]]) -> List[str]:
    return [l.split()[2] for l in probe(vm) if l.startswith("PY event ")]


def test_python_opens_a_kernel_port_and_closes_it(vm):
    out = probe(vm)
    assert out[0] == "PY opened rxe0 port 1 state 4", out
    assert out[-1] == "PY closed", out
    assert "PY state after 4" in out, out


def test_link_down_and_up_reach_the_python_events_iterator_in_order(vm):
    got = [e for e in events(vm) if e in ("port_error", "port_active")]
    assert got == ["port_error", "port_active"], "\n".join(probe(vm))


def test_a_new_mac_reaches_python_as_a_gid_change_after_the_link_came_back(vm):
    got = events(vm)
    assert "gid_change" in got, "\n".join(probe(vm))
    assert got.index("gid_change") > got.index("port_active"), got
