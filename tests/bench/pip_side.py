#!/usr/bin/env python3
"""The pip side of bench_vs_pip: what a Python user does to get the OpenVINO EP.

  pip_side.py fetch [--requirements R] --dir DIR [--seed DIR ...]
      Makes DIR hold every wheel pinned in R (default: requirements-bench-pip.txt
      beside this script), each checked by SHA-256: a wheel already in DIR or in a
      seed directory (e.g. $EPBROKER_CACHE/dl, where bootstrap put the OpenVINO
      wheel) is used as it is; the others come from
      `pip download --no-deps --require-hashes`. Run by tests/bench/run.sh, never by
      a test.

  pip_side.py run --wheels DIR --model MODEL --work WORK [--python PY]
      Times, as separate processes: (1) `PY -m venv WORK/venv`; (2) `pip install
      --no-index --find-links DIR onnxruntime onnxruntime-ep-openvino` in it; (3)
      `python -c` that imports onnxruntime, registers the OpenVINO plugin library
      (onnxruntime.register_execution_provider_library), creates a session on MODEL
      (with the OpenVINO devices ORT offers, else the CPU EP) and runs it once. Then
      measures the venv's disk use. Prints one JSON object on stdout.

Only the standard library (it runs before any venv exists).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The first inference, run by the venv's interpreter: argv[1] = model path. Prints
# its own breakdown as JSON; the caller times the whole process.
FIRST_INFERENCE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import onnxruntime as ort
import onnxruntime_ep_openvino as ov
t1 = time.perf_counter()
ort.register_execution_provider_library("openvino", ov.get_library_path())
t2 = time.perf_counter()
options = ort.SessionOptions()
devices = [d for d in ort.get_ep_devices() if d.ep_name == ov.get_ep_name()]
if devices:
    options.add_provider_for_devices(devices, {})
session = ort.InferenceSession(sys.argv[1], sess_options=options)
t3 = time.perf_counter()
shape = [d if isinstance(d, int) else 1 for d in session.get_inputs()[0].shape]
x = np.random.default_rng(11).random(shape, dtype=np.float32)
session.run(None, {session.get_inputs()[0].name: x})
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "register_s": t2 - t1, "session_s": t3 - t2,
                  "run_s": t4 - t3, "ort_version": ort.__version__,
                  "openvino_devices": len(devices), "providers": session.get_providers()}))
"""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_requirements(path):
    """[(name, version, {hashes})] from `name==version --hash=sha256:H ...` lines."""
    text = re.sub(r"\\\n", " ", Path(path).read_text())
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line)
        hashes = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
        if not m or not hashes:
            sys.exit(f"pip_side: {path}: not pinned by version and hash: {line}")
        out.append((m.group(1), m.group(2), hashes))
    return out


def wheel_prefix(name, version):
    # Wheel file names use the normalized name with '_' (PEP 427).
    return re.sub(r"[-_.]+", "_", name).lower() + "-" + version + "-"


def find_pinned(dirs, name, version, hashes):
    prefix = wheel_prefix(name, version)
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.name.lower().startswith(prefix) and f.suffix == ".whl" and sha256(f) in hashes:
                return f
    return None


def fetch(args):
    dest = Path(args.dir)
    dest.mkdir(parents=True, exist_ok=True)
    pins = parse_requirements(args.requirements)
    missing = []
    for name, version, hashes in pins:
        if find_pinned([dest], name, version, hashes):
            continue
        seeded = find_pinned([Path(s) for s in args.seed], name, version, hashes)
        if seeded:
            shutil.copy2(seeded, dest / seeded.name)
        else:
            missing.append(name)
    if missing:
        print(f"pip_side: downloading {', '.join(missing)} into {dest}", file=sys.stderr)
        # The pinned wheels are for CPython 3.11 on manylinux x86_64, whatever
        # interpreter runs this.
        target = ["--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                  "--abi", "abi3", "--abi", "none"]
        for platform in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
                         "manylinux2014_x86_64", "any"):
            target += ["--platform", platform]
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--require-hashes", "--only-binary=:all:", *target, "--dest", str(dest),
                        "-r", str(args.requirements)], check=True, env=pip_env())
    bad = [n for n, v, h in pins if not find_pinned([dest], n, v, h)]
    if bad:
        sys.exit(f"pip_side: {dest} lacks the pinned wheels of {', '.join(bad)}")
    print(f"pip_side: {len(pins)} pinned wheels in {dest}")


def pip_env():
    # No user or site pip configuration (e.g. an extra find-links): the run sees
    # exactly the wheel directory it is given.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def timed(argv, label=None):
    t0 = time.perf_counter()
    done = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=pip_env())
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"pip_side: {label or ' '.join(map(str, argv))} failed ({done.returncode}):\n"
                 f"{done.stdout}{done.stderr}")
    return elapsed, done.stdout


def disk_use(path):
    """Bytes allocated on disk under `path` (du: st_blocks, each inode once)."""
    seen, total = set(), 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total + os.lstat(path).st_blocks * 512


def distribution_paths(site, dist_name):
    """Top-level entries of site-packages that RECORD says `dist_name` installed."""
    prefix = re.sub(r"[-_.]+", "_", dist_name).lower() + "-"
    infos = [d for d in site.iterdir()
             if d.name.lower().startswith(prefix) and d.name.endswith(".dist-info")]
    if not infos:
        sys.exit(f"pip_side: {dist_name} is not installed in {site}")
    tops = set()
    for line in (infos[0] / "RECORD").read_text().splitlines():
        first = line.split(",", 1)[0].split("/", 1)[0]
        if first and first != ".." and (site / first).exists():
            tops.add(first)
    return sorted(tops)


def run(args):
    work = Path(args.work)
    venv = work / "venv"
    if venv.exists():
        sys.exit(f"pip_side: {venv} exists; give an empty work directory")
    work.mkdir(parents=True, exist_ok=True)
    result = {}
    result["venv_s"], _ = timed([args.python, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    result["pip_install_s"], _ = timed(
        [str(py), "-m", "pip", "install", "--quiet", "--no-index", "--no-cache-dir",
         "--find-links", str(args.wheels), "onnxruntime", "onnxruntime-ep-openvino"])
    result["first_inference_s"], out = timed([str(py), "-c", FIRST_INFERENCE, str(args.model)],
                                                    "the first inference")
    result["first_inference"] = json.loads(out.strip().splitlines()[-1])
    site = next((venv / "lib").glob("python3*/site-packages"))
    packages = {}
    for dist in ("onnxruntime", "onnxruntime-ep-openvino"):
        packages[dist] = sum(disk_use(site / top) for top in distribution_paths(site, dist))
    result["packages_bytes"] = packages
    result["site_packages_bytes"] = disk_use(site)
    result["venv_bytes"] = disk_use(venv)
    result["python"] = subprocess.run([str(py), "-c", "import sys; print(sys.version.split()[0])"],
                                      check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="fill the wheel directory (pinned, hashed)")
    f.add_argument("--requirements", default=HERE / "requirements-bench-pip.txt")
    f.add_argument("--dir", required=True)
    f.add_argument("--seed", action="append", default=[], help="a directory to take wheels from")
    r = sub.add_parser("run", help="time venv, pip install and the first inference")
    r.add_argument("--wheels", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--work", required=True, help="an empty directory for the venv")
    default_python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    r.add_argument("--python", default=default_python, help="interpreter to make the venv from")
    args = parser.parse_args()
    fetch(args) if args.command == "fetch" else run(args)


if __name__ == "__main__":
    main()
