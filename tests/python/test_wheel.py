"""The wheel (h): built with pip wheel --no-build-isolation, py3-none-any with
py.typed, installed offline into a plain venv beside the pinned onnxruntime wheel,
where docs/python.md's quick-start example runs as written against the broker."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support import CACHE, ONNX_NODE_DIR

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


def quick_start() -> str:
    """The first python block under docs/python.md's "## Quick start"."""
    doc = (ROOT / "docs/python.md").read_text()
    section = doc.split("\n## Quick start\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_package_readme_shows_the_same_example():
    readme = (ROOT / "python/README.md").read_text()
    assert "```python\n%s```" % quick_start() in readme
    assert len([l for l in quick_start().splitlines() if l.strip()]) == 5


def _ok(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=400, **kw)
    assert r.returncode == 0, "%s:\n%s%s" % (" ".join(map(str, cmd)), r.stdout, r.stderr)
    return r


def _builder() -> str:
    """The Python that builds the wheel offline, without build isolation: the test's
    own venv ($EPBROKER_PYTHON), where scripts/bootstrap.sh installs wheel beside
    the venv's setuptools (scripts/requirements-python.txt)."""
    probe = "import setuptools, wheel, pip; assert int(setuptools.__version__.split('.')[0]) >= 61"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert r.returncode == 0, ("%s cannot build the wheel offline (pip, setuptools >= 61, "
                               "wheel; run scripts/bootstrap.sh):\n%s" % (sys.executable, r.stderr))
    return sys.executable


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT / "python", work / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _ok([_builder(), "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "--disable-pip-version-check", work / "python", "-w", work / "dist"])
    wheels = list((work / "dist").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_is_pure_and_typed(wheel):
    assert wheel.name == "epbroker-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read("epbroker-0.1.0.dist-info/WHEEL").decode()
        metadata = z.read("epbroker-0.1.0.dist-info/METADATA").decode()
    for module in ("__init__", "_lib", "_errors", "_values", "_client", "_session", "_wait",
                   "_progress", "onnxruntime", "run"):
        assert "epbroker/%s.py" % module in names, names
    assert "epbroker/py.typed" in names, names
    assert not any(n.endswith((".so", ".pyd", ".c")) for n in names), names
    assert "Root-Is-Purelib: true" in meta and "Tag: py3-none-any" in meta, meta
    assert "Requires-Python: >=3.9" in metadata
    assert "Provides-Extra: onnxruntime" in metadata
    assert not [l for l in metadata.splitlines()
                if l.startswith("Requires-Dist:") and "extra ==" not in l], metadata


def test_quick_start_in_a_plain_venv(broker, wheel, tmp_path):
    wheels = CACHE / "wheels"
    if not list(wheels.glob("onnxruntime-*.whl")):
        pytest.skip("no onnxruntime wheel in %s (scripts/bootstrap.sh downloads it)" % wheels)
    venv = tmp_path / "venv"
    _ok([SYSTEM_PYTHON, "-m", "venv", venv])
    python = venv / "bin/python"
    _ok([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--find-links", wheels, "onnxruntime", wheel])
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(ONNX_NODE_DIR / "test_add/model.onnx", app / "model.onnx")
    script = ("import numpy as np\n"
              "rng = np.random.default_rng(0)\n"
              "inputs = {n: rng.random((3, 4, 5), dtype=np.float32) for n in ('x', 'y')}\n"
              + quick_start() +
              "import json, epbroker\n"
              "np.testing.assert_array_equal(outputs[0], inputs['x'] + inputs['y'])\n"
              "print(json.dumps({'file': epbroker.__file__, 'session': lease.session.path,\n"
              "    'results': [[r.name, r.outcome, r.code, r.reason] for r in lease.results]}))\n")
    (app / "app.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    r = _ok([python, "app.py"], cwd=app, env=env)
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(venv)), report  # the installed wheel, not the tree
    outcomes = {name: (outcome, code) for name, outcome, code, _ in report["results"]}
    assert outcomes.get("test-ep") == ("registered", ""), report
    # future-ep is in the catalog: the session reports it, skipped for this ORT.
    assert outcomes.get("future-ep") == ("skipped", "ort_too_old"), report
    # The with block ended the lease.
    assert report["session"] == "", report
