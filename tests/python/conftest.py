"""A live broker for the Python package's tests (as tests/client-ort/broker_fixture.cpp
and scripts/demo.sh do it): signed catalogs served on loopback by
tests/support/http_server.py, and a private dbus-daemon that activates the built
epbrokerd. The catalog "test" holds

  test-ep      the real test-ep package (ort_min 1.29.0)
  future-ep    test-ep's library repacked with ort_min 99.0.0: no ORT can register it
  onnxruntime  the shared-runtime package (kind runtime), when the build has it
  openvino     the OpenVINO EP package, on Intel CPUs only (when the build has it)

and one model, node-matmul 1.0 (ONNX's test_matmul_2d node model as variants
"fp32", for any device, and "fp32-cpu", for CPUs and CPUExecutionProvider: both
the same model.onnx, published once), packed and added with epbroker-publish
pack-model and add-model.

The `slow_broker` fixture is a second broker (its own bus, daemon and store) whose
catalog "slow" holds only slow-ep (test-ep again) and node-matmul, with its
targets URL pointing at the server's /__slow__/ (1 byte per second): a download
that lasts, for cancelling. It is separate so that "every compatible provider"
never means slow-ep.

The build is $EPBROKER_BUILD_DIR (tests/python/run sets it). Installing needs root
(the daemon's policy without polkit): the fixture skips otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from support import MODEL, MODEL_SOURCE, MODEL_VARIANTS, is_intel_cpu, wait_until

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("EPBROKER_BUILD_DIR", SOURCE_ROOT / "build")).resolve()


def _one(pattern: str, what: str) -> Path:
    found = sorted(build_dir().glob(pattern))
    if not found:
        pytest.fail("%s not found (%s under %s): build it first" % (what, pattern, build_dir()))
    return found[-1]


def _run(*cmd: object, cwd: Optional[Path] = None) -> str:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        pytest.fail("%s failed (%d):\n%s%s" % (" ".join(map(str, cmd)), r.returncode, r.stdout,
                                               r.stderr))
    return r.stdout


def _pids_with(needle: str) -> List[int]:
    """Processes whose command line contains `needle` as one argument."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle.encode() in args:
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Broker:
    """The running fixture: paths, the bus address, and what the catalog offers."""

    def __init__(self, work: Path, catalog: str = "repo") -> None:
        self.work = work
        self.catalog = catalog  # "repo" (the main catalog) or "slow"
        self.build = build_dir()
        self.www = work / "www"
        self.state = work / "state"
        self.store = self.state / "store"
        self.address = "unix:path=%s" % (work / "bus.sock")
        self.bus_log = work / "bus.log"
        self.url = ""
        self.packages: Dict[str, Path] = {}  # catalog name -> package file
        self.model_card: Dict = {}  # MODEL's card as pack-model wrote it
        self.procs: List[subprocess.Popen] = []

    def publish(self) -> None:
        """The signed catalog (www/repo or www/slow)."""
        publish = self.build / "tools/epbroker-publish"
        stage = self.build / "ep-packages/test-ep/stage"
        test_meta = SOURCE_ROOT / "ep-packages/test-ep/ep.json"
        test_ep = _one("ep-packages/test-ep/test-ep-*.tar.zst", "test-ep package")
        entries = [("repo", test_meta, test_ep)]
        # future-ep and slow-ep: test-ep's staged library packed again under another name.
        for name, catalog, ort_min in (("future-ep", "repo", "99.0.0"), ("slow-ep", "slow", None)):
            meta = json.loads(test_meta.read_text())
            meta["epbroker"]["name"] = name
            if ort_min:
                meta["epbroker"]["ort_min"] = ort_min
            meta_path = self.work / ("%s.json" % name)
            meta_path.write_text(json.dumps(meta))
            package = self.work / ("%s-0.1.0.tar.zst" % name)
            _run(publish, "pack", "--dir", stage, "--metadata", meta_path, "--output", package)
            entries.append((catalog, meta_path, package))
        runtime = sorted(self.build.glob("ep-packages/onnxruntime/onnxruntime-*.tar.zst"))
        if runtime:
            entries.append(("repo", SOURCE_ROOT / "ep-packages/onnxruntime/ep.json", runtime[-1]))
        openvino = sorted(self.build.glob("ep-packages/openvino/openvino-*.tar.zst"))
        if openvino and is_intel_cpu():
            entries.append(("repo", SOURCE_ROOT / "ep-packages/openvino/ep.json", openvino[-1]))
        repo, keys = self.www / self.catalog, self.work / "keys"
        _run(publish, "init", "--repo", repo, "--keys", keys)
        for catalog, meta_path, package in entries:
            if catalog == self.catalog:
                _run(publish, "add", "--repo", repo, "--keys", keys, "--metadata", meta_path,
                     package)
                self.packages[json.loads(meta_path.read_text())["epbroker"]["name"]] = package
        self.publish_model(publish, repo, keys)

    def publish_model(self, publish: Path, repo: Path, keys: Path) -> None:
        """MODEL 1.0: each variant's directory holds MODEL_SOURCE as model.onnx;
        pack-model fills in the card's files (sizes, hashes), add-model signs it."""
        files = self.work / "model"
        for variant in MODEL_VARIANTS:
            (files / variant).mkdir(parents=True)
            shutil.copy(MODEL_SOURCE, files / variant / "model.onnx")
        variant = {"ort_min": "1.16", "opset": 13, "precision": "fp32", "main": "model.onnx"}
        card = {"epbroker": {
            "schema": 2, "kind": "model", "name": MODEL, "version": "1.0",
            "publisher": "epbroker tests", "license": "Apache-2.0",
            "license_url": "https://www.apache.org/licenses/LICENSE-2.0",
            "description": "ONNX's test_matmul_2d node model: c = a @ b",
            "task": "matrix-multiplication",
            "inputs": [{"name": "a", "type": "float", "shape": [3, 4]},
                       {"name": "b", "type": "float", "shape": [4, 3]}],
            "outputs": [{"name": "c", "type": "float", "shape": [3, 3]}],
            "variants": [dict(variant, id="fp32"),
                         dict(variant, id="fp32-cpu", devices=["cpu"],
                              eps=["CPUExecutionProvider"])]}}
        draft, packed = self.work / "model-draft.json", self.work / ("%s.model.json" % MODEL)
        draft.write_text(json.dumps(card))
        _run(publish, "pack-model", "--dir", files, "--metadata", draft, "--output", packed)
        _run(publish, "add-model", "--repo", repo, "--keys", keys, "--model", packed, "--dir",
             files)
        self.model_card = json.loads(packed.read_text())

    def serve(self) -> None:
        port_file = self.work / "http.port"
        self.procs.append(subprocess.Popen(
            [sys.executable, str(SOURCE_ROOT / "tests/support/http_server.py"), "--root",
             str(self.www), "--port-file", str(port_file)], stdout=subprocess.DEVNULL))
        wait_until(lambda: port_file.exists() and port_file.read_text().strip(), 10,
                   "the HTTP server's port file")
        self.url = "http://127.0.0.1:%s" % port_file.read_text().strip()

    def configure(self) -> None:
        """remotes.d, the service file and the bus configuration (as scripts/demo.sh)."""
        remotes = self.work / "etc/remotes.d"
        remotes.mkdir(parents=True)
        targets = {"repo": "/repo/targets", "slow": "/__slow__/slow/targets"}
        for catalog in (self.catalog,):
            root = self.work / "etc" / ("%s-root.json" % catalog)
            shutil.copy(self.www / catalog / "metadata/1.root.json", root)
            (remotes / ("%s.conf" % catalog)).write_text(
                "[remote]\nname = %s\nmetadata_url = %s/%s/metadata\ntargets_url = %s%s\n"
                "trusted_root = %s\n# Loopback only.\nallow_http = true\n"
                % ("test" if catalog == "repo" else catalog, self.url, catalog, self.url,
                   targets[catalog], root))
        for d in ("state", "cache", "services"):
            (self.work / d).mkdir()
        (self.work / "services/org.epbroker.Broker1.service").write_text(
            "[D-BUS Service]\nName=org.epbroker.Broker1\nExec=%s --bus-address %s --config-dir %s "
            "--state-dir %s --cache-dir %s --idle-timeout 30\n"
            % (self.build / "daemon/epbrokerd", self.address, self.work / "etc", self.state,
               self.work / "cache"))
        (self.work / "bus.conf").write_text("""<!DOCTYPE busconfig PUBLIC
 "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>%s</listen>
  <auth>EXTERNAL</auth>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
""" % (self.address, self.work / "services"))

    def start_bus(self) -> None:
        address_file = self.work / "bus.address"
        with open(address_file, "w") as out, open(self.bus_log, "w") as log:
            self.procs.append(subprocess.Popen(
                ["dbus-daemon", "--nofork", "--nopidfile",
                 "--config-file=%s" % (self.work / "bus.conf"), "--print-address=1"],
                stdout=out, stderr=log))
        wait_until(lambda: address_file.read_text().strip(), 10, "dbus-daemon's address")
        # The uid-65534 test connects too: the socket must be reachable by anyone.
        os.chmod(self.work / "bus.sock", 0o777)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.bus_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        # epbrokerd leaves with its bus; make sure (found by its own --state-dir).
        pids = _pids_with(str(self.state))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


_ACTIVE: List[Broker] = []


def _start(catalog: str, export: bool):
    """A running Broker of `catalog`, refreshed (a generator: stops it afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("only root may refresh and install (no polkit on the test bus)")
    import epbroker
    work = Path(tempfile.mkdtemp(prefix="epbroker-py-"))
    os.chmod(work, 0o755)  # the uid-65534 test reaches the bus socket through it
    b = Broker(work, catalog)
    saved = {k: os.environ.get(k) for k in ("EPBROKER_BUS_ADDRESS", "EPBROKER_STORE_DIR")}
    try:
        b.publish()
        b.serve()
        b.configure()
        b.start_bus()
        if export:
            os.environ["EPBROKER_BUS_ADDRESS"] = b.address
            os.environ["EPBROKER_STORE_DIR"] = str(b.store)
        _ACTIVE.append(b)
        with epbroker.Client(b.address) as client:
            client.refresh()
        yield b
    finally:
        if b in _ACTIVE:
            _ACTIVE.remove(b)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        b.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def broker():
    """The main broker, its catalog refreshed; EPBROKER_BUS_ADDRESS and
    EPBROKER_STORE_DIR point at it while it lives."""
    yield from _start("repo", export=True)


@pytest.fixture(scope="module")
def slow_broker():
    """A second broker whose only package, slow-ep, downloads at 1 byte/s (use its
    .address explicitly; the environment keeps naming the main broker)."""
    yield from _start("slow", export=False)


@pytest.fixture
def client(broker):
    """A Client of the broker's bus, closed after the test."""
    import epbroker
    with epbroker.Client(broker.address) as c:
        yield c


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test shows the end of the bus's log (epbrokerd logs there)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for b in _ACTIVE:
            report.sections.append(("%s bus.log (last lines)" % b.catalog, b.log_tail()))
