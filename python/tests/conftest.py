"""Fixtures of the madstack Python tests.

``sim_port``: a port on the built-in fabric. ``ibsim_sm``: a real ibsim
on a small topology with OpenSM 3.3 (under libumad2sim) as its SM, the
way the Rust interop tests start them (tests/support/mod.rs,
tests/support/opensm.rs): a unique ``IBSIM_SOCKNAME``, OpenSM in its own
temporary directory with ``force_log_flush TRUE`` until "SUBNET UP", both
stopped by their PIDs. With ``CI=true`` a missing piece (ibsim, OpenSM,
infiniband-diags, libumad2sim) fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

import madstack

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "tests" / "fixtures" / "topologies"
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
NEEDS = {
    "ibsim": "ibsim-utils",
    "opensm": "opensm",
    "smpquery": "infiniband-diags",
    "perfquery": "infiniband-diags",
    "saquery": "infiniband-diags",
}


def sbin(program: str) -> Optional[str]:
    """The path of ``program``, /usr/sbin and /sbin included."""
    found = shutil.which(program)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin"):
        p = Path(d) / program
        if p.is_file():
            return str(p)
    return None


def require_tools() -> None:
    """Skips (fails with CI=true) when a program or library is missing."""
    missing = [f"{p} ({pkg})" for p, pkg in NEEDS.items() if sbin(p) is None]
    if not Path(UMAD2SIM).is_file():
        missing.append(f"{UMAD2SIM} (libumad2sim0)")
    if missing:
        msg = "missing: " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def _socket_listed(name: str) -> bool:
    want = f"@{name}@"
    try:
        with open("/proc/net/unix") as f:
            return any(line.split()[-1:] == [want] for line in f)
    except OSError:
        return False


def _stop(p: subprocess.Popen) -> None:
    """Stops one process we started, by its PID."""
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


class IbSimSm:
    """ibsim plus OpenSM; :meth:`run` runs an infiniband-diags program
    under libumad2sim against them."""

    def __init__(self, topology: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"madstack-py-{os.getpid()}-"))
        self.sockname = f"madstack-py-{os.getpid()}-{id(self) & 0xFFFF}"
        while _socket_listed(f"{self.sockname}:ctl"):
            self.sockname += "x"
        env = dict(os.environ, IBSIM_SOCKNAME=self.sockname)
        log = open(self.dir / "ibsim.log", "w")
        self._files = [log]
        self.ibsim = subprocess.Popen(
            [sbin("ibsim") or "ibsim", "-s", "--no-console", str(TOPOLOGIES / topology)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        self.opensm: Optional[subprocess.Popen] = None
        end = time.monotonic() + 30
        while not _socket_listed(f"{self.sockname}:ctl"):
            if self.ibsim.poll() is not None or time.monotonic() > end:
                raise RuntimeError("ibsim did not start: " + (self.dir / "ibsim.log").read_text())
            time.sleep(0.01)
        conf = self.dir / "opensm.conf"
        conf.write_text("force_log_flush TRUE\n")
        self.osm_log = self.dir / "osm.log"
        out = open(self.dir / "opensm.out", "w")
        self._files.append(out)
        self.opensm = subprocess.Popen(
            [sbin("opensm") or "opensm", "-F", str(conf), "-f", str(self.osm_log)],
            env=self.env(OSM_TMP_DIR=str(self.dir), OSM_CACHE_DIR=str(self.dir)),
            cwd=self.dir, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
        )
        end = time.monotonic() + 60
        while "SUBNET UP" not in (self.osm_log.read_text() if self.osm_log.exists() else ""):
            if self.opensm.poll() is not None or time.monotonic() > end:
                self.close()
                raise RuntimeError("OpenSM did not bring the subnet up")
            time.sleep(0.02)

    def env(self, **extra: str) -> Dict[str, str]:
        e = dict(os.environ, LD_PRELOAD=UMAD2SIM, IBSIM_SOCKNAME=self.sockname, **extra)
        for k in ("SIM_HOST", "SIM_SET_ISSM", "IBSIM_SERVER_NAME"):
            e.pop(k, None)
        return e

    def run(self, program: str, *args: str) -> str:
        """The standard output of ``program args`` (run again, twice at
        most, when libumad2sim failed to attach it)."""
        for _ in range(3):
            p = subprocess.run(
                [sbin(program) or program, *args], env=self.env(), cwd=self.dir,
                capture_output=True, text=True, timeout=60,
            )
            both = p.stdout + p.stderr
            if "(null)" in both or "port 0 (-22)" in both:
                continue
            assert p.returncode == 0, f"{program} {args}: {p.returncode}\n{both}"
            return p.stdout
        raise AssertionError(f"{program}: libumad2sim failed to attach it three times")

    def open(self) -> madstack.Port:
        """A madstack port on this ibsim."""
        os.environ["IBSIM_SOCKNAME"] = self.sockname
        os.environ.pop("IBSIM_SERVER_NAME", None)
        return madstack.open(ibsim=True)

    def close(self) -> None:
        if self.opensm is not None:
            _stop(self.opensm)
        _stop(self.ibsim)
        for f in self._files:
            f.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def sim_port() -> Iterator[madstack.Port]:
    """A port on the built-in fabric (default topology)."""
    with madstack.open(sim=True) as p:
        yield p


@pytest.fixture(scope="module")
def ibsim_sm() -> Iterator[IbSimSm]:
    """ibsim on tests/fixtures/topologies/net with OpenSM as its SM."""
    require_tools()
    f = IbSimSm("net")
    try:
        yield f
    finally:
        f.close()


def parse_dots(text: str) -> Dict[str, str]:
    """``Label:......value`` lines (libibmad's dump format) as a dict."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line or line.startswith("#"):
            continue
        k, _, v = line.partition(":")
        out[k.strip()] = v.lstrip(".").strip()
    return out


def as_int(v: str) -> Optional[int]:
    """A dump value as an int (decimal or 0x hex), or None."""
    try:
        return int(v, 0)
    except ValueError:
        return None


def lines(text: str) -> List[str]:
    return [l for l in text.splitlines() if l.strip()]
