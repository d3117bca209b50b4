#!/usr/bin/env python3
"""Interop: python-tuf's ngclient reads a repository written by epbroker-publish.

Builds a repository with `epbroker-publish` (init, add x2, delegate vendor-ep/* + add to it, rotate root,
timestamp, snapshot and targets, timestamp, remove), serves it over loopback
HTTP, and after every publishing step checks that python-tuf's Updater
refreshes, finds every present target with its custom["epbroker"] EP metadata
intact, downloads the right bytes, and no longer finds a removed target. Also checks that a tampered target file
makes python-tuf's download fail. Every package is published at a target path
whose first segment is its name ("NAME/...", the name binding of
catalog/name_binding.hpp); the delegated role is trusted for "vendor-ep/*".

Runs five times: with the default 1-of-1 Ed25519 root key, with --root-keys 3
--root-threshold 2, with --no-consistent-snapshot, with ECDSA P-256 keys
(--key-type ecdsa) and with RSA keys 2 of 3 (--key-type rsa).

Usage: python_client_reads_epbroker_repo.py [--publish PATH]
       (default: $EPBROKER_PUBLISH)
Exit status: 0 all checks passed, 1 a check failed, 77 python-tuf missing (skip).
"""

import argparse
import copy
import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

try:
    from securesystemslib.formats import encode_canonical
    from tuf.ngclient import Updater
    from tuf.api import exceptions as tuf_exceptions
except ImportError as e:  # pragma: no cover - environment problem, not a test failure
    print(f"SKIP: python-tuf is not importable by {sys.executable}: {e}")
    sys.exit(77)

EP_METADATA = {
    "epbroker": {
        "schema": 1,
        "name": "test-ep",
        "version": "1.0.0",
        "ep_names": ["EpbrokerTestEp"],
        "vendor": "epbroker",
        "arch": "x86_64",
        "ort_min": "1.23.0",
        "library": "lib/libtest_ep.so",
        "supports": [{"type": "cpu", "vendor_ids": [32902]}],
    }
}


def other_ep_metadata():
    m = copy.deepcopy(EP_METADATA)
    e = m["epbroker"]
    e["name"] = "other-ep"
    e["version"] = "2.1.0"
    e["ep_names"] = ["EpbrokerOtherEp", "EpbrokerOtherEpFast"]
    e["library"] = "lib/libother_ep.so"
    # Non-ASCII, quotes, backslashes, newline and tab: both sides must produce
    # the same canonical JSON for the signature to verify.
    e["vendor"] = 'Épbroker Ünïcode ✓ "quoted" \\ back\\slash'
    e["description"] = "line one\n\ttabbed ключ 🚀 \"q\" \\ end"
    e["requires"] = ["libfoo.so.1", "libbar+baz.so"]
    e["supports"] = [
        {"type": "gpu", "vendor_ids": [4318], "device_ids": [8708, 8709]},
        {"type": "cpu"},
    ]
    return m


def vendor_ep_metadata():
    # other-ep's canonical-JSON probes, under the delegated package's own name.
    m = other_ep_metadata()
    e = m["epbroker"]
    e["name"] = "vendor-ep"
    e["version"] = "0.3.0"
    e["ep_names"] = ["EpbrokerVendorEp"]
    e["library"] = "lib/libvendor_ep.so"
    return m


class Failure(Exception):
    pass


CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise Failure(what)
    print(f"  ok: {what}")


# ---- loopback HTTP ------------------------------------------------------------


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):  # keep the test output readable
        pass


class Server:
    def __init__(self, directory):
        handler = functools.partial(QuietHandler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        host, port = self.httpd.server_address[:2]
        self.base = f"http://{host}:{port}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


# ---- the repository under test ------------------------------------------------


class Repo:
    def __init__(self, publish, work, init_args):
        self.publish = publish
        self.dir = os.path.join(work, "repo")
        self.keys = os.path.join(work, "keys")
        self.work = work
        self.present = {}  # target path -> (bytes, custom)
        self.removed = set()
        self.consistent = "--no-consistent-snapshot" not in init_args
        self.run("init", *init_args)

    def served_file(self, path, data):
        """Where the repository serves target `path`: <dir>/<sha256>.<basename>
        with consistent snapshots, else the plain path."""
        if not self.consistent:
            return os.path.join(self.dir, "targets", path)
        d, _, base = path.rpartition("/")
        return os.path.join(self.dir, "targets", d, f"{hashlib.sha256(data).hexdigest()}.{base}")

    def run(self, cmd, *args):
        argv = [self.publish, cmd, "--repo", self.dir, "--keys", self.keys, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        print(f"$ epbroker-publish {cmd} {' '.join(args)}".rstrip())
        for line in (p.stdout + p.stderr).splitlines():
            print(f"    {line}")
        if p.returncode != 0:
            raise Failure(f"epbroker-publish {cmd} exited {p.returncode}")
        return p.stdout

    def add(self, name, data, meta, role=None, target_path=None):
        pkg = os.path.join(self.work, name)
        with open(pkg, "wb") as f:
            f.write(data)
        meta_file = pkg + ".ep.json"
        with open(meta_file, "w") as f:
            json.dump(meta, f)
        extra = []
        if role:
            extra += ["--role", role]
        if target_path:
            extra += ["--target-path", target_path]
        self.run("add", "--metadata", meta_file, *extra, pkg)
        # the default target path is NAME/BASENAME
        path = target_path or f"{meta['epbroker']['name']}/{name}"
        self.present[path] = (data, meta)
        self.removed.discard(path)
        return path

    def remove(self, path):
        self.run("remove", path)
        del self.present[path]
        self.removed.add(path)


# ---- python-tuf client checks -------------------------------------------------


def python_client_check(repo, server, client_dir, label, bootstrap=None):
    """One python-tuf Updater run over client_dir (persisted between calls).

    bootstrap None: trust the cached metadata_dir/root.json (python-tuf 7
    requires the keyword); else the given root bytes."""
    metadata_dir = os.path.join(client_dir, "metadata")
    target_dir = os.path.join(client_dir, "targets")
    os.makedirs(target_dir, exist_ok=True)
    updater = Updater(
        metadata_dir=metadata_dir,
        metadata_base_url=f"{server.base}/metadata/",
        target_dir=target_dir,
        target_base_url=f"{server.base}/targets/",
        bootstrap=bootstrap,
    )
    updater.refresh()
    with open(os.path.join(repo.dir, "metadata", "timestamp.json"), "rb") as f:
        served_ts = json.load(f)["signed"]["version"]
    with open(os.path.join(metadata_dir, "timestamp.json"), "rb") as f:
        trusted_ts = json.load(f)["signed"]["version"]
    check(trusted_ts == served_ts, f"{label}: refresh() trusts timestamp v{served_ts}")
    for path, (data, meta) in sorted(repo.present.items()):
        info = updater.get_targetinfo(path)
        check(info is not None, f"{label}: get_targetinfo({path!r}) finds the target")
        check(info.length == len(data), f"{label}: {path} length {len(data)}")
        sha = hashlib.sha256(data).hexdigest()
        check(info.hashes.get("sha256") == sha, f"{label}: {path} sha256 {sha[:16]}...")
        check(
            info.custom == meta,
            f"{label}: {path} custom round-trips (custom['epbroker']['name'] == "
            f"{info.custom.get('epbroker', {}).get('name')!r}, "
            f"ep_names {info.custom.get('epbroker', {}).get('ep_names')})",
        )
        served = os.path.relpath(repo.served_file(path, data), repo.dir)
        check(
            os.path.isfile(os.path.join(repo.dir, served)),
            f"{label}: {path} published as {served.replace(sha, '<sha256>')}",
        )
        dest = os.path.join(target_dir, f"fresh-{hashlib.sha256(path.encode()).hexdigest()[:8]}")
        if os.path.exists(dest):
            os.remove(dest)
        got = updater.download_target(info, filepath=dest)
        with open(got, "rb") as f:
            check(f.read() == data, f"{label}: download_target({path!r}) gives the published bytes")
        cached = updater.find_cached_target(info, filepath=dest)
        check(cached == dest, f"{label}: find_cached_target() accepts the downloaded {path}")
    for path in sorted(repo.removed):
        check(
            updater.get_targetinfo(path) is None,
            f"{label}: removed {path!r} -> get_targetinfo() is None",
        )
    return updater


def check_keyids(repo, step):
    """Every key id epbroker-publish wrote is sha256(canonical JSON of the key),
    as securesystemslib computes it (python-tuf itself does not recompute)."""
    meta = os.path.join(repo.dir, "metadata")
    n = 0
    for name in sorted(os.listdir(meta)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(meta, name), "rb") as f:
            signed = json.load(f)["signed"]
        keys = dict(signed.get("keys", {}))
        keys.update(signed.get("delegations", {}).get("keys", {}))
        for keyid, key in keys.items():
            want = hashlib.sha256(
                encode_canonical(
                    {"keytype": key["keytype"], "scheme": key["scheme"], "keyval": key["keyval"]}
                ).encode()
            ).hexdigest()
            if keyid != want:
                raise Failure(f"{step}: {name}: keyid {keyid} != securesystemslib's {want}")
            n += 1
    check(n > 0, f"{step}: all {n} key ids in metadata/*.json match securesystemslib's keyid")


def check_step(repo, server, persistent_client, step):
    print(f"-- after {step}")
    check_keyids(repo, step)
    # A client that kept its metadata from the previous steps...
    python_client_check(repo, server, persistent_client, f"{step} [persistent client]")
    # ...and one that starts from 1.root.json and walks the whole root chain.
    # It gets 1.root.json as python-tuf 7's `bootstrap` argument.
    fresh = tempfile.mkdtemp(prefix="fresh-", dir=repo.work)
    os.makedirs(os.path.join(fresh, "metadata"))
    with open(os.path.join(repo.dir, "metadata", "1.root.json"), "rb") as f:
        root_v1 = f.read()
    python_client_check(repo, server, fresh, f"{step} [fresh client]", bootstrap=root_v1)
    shutil.rmtree(fresh)


def check_tampered_target(repo, server, client_dir, path):
    print(f"-- tampered target {path}")
    data, _ = repo.present[path]
    served = repo.served_file(path, data)
    with open(served, "rb") as f:
        original = f.read()
    tampered = bytearray(original)
    tampered[len(tampered) // 2] ^= 0x01
    with open(served, "wb") as f:
        f.write(tampered)
    try:
        updater = Updater(
            metadata_dir=os.path.join(client_dir, "metadata"),
            metadata_base_url=f"{server.base}/metadata/",
            target_dir=os.path.join(client_dir, "targets"),
            target_base_url=f"{server.base}/targets/",
            bootstrap=None,
        )
        updater.refresh()
        info = updater.get_targetinfo(path)
        check(info is not None, f"tamper: {path} still listed")
        dest = os.path.join(client_dir, "targets", "tampered")
        try:
            updater.download_target(info, filepath=dest)
        except tuf_exceptions.LengthOrHashMismatchError as e:
            check(True, f"tamper: download_target raises LengthOrHashMismatchError ({e})")
        else:
            raise Failure("tamper: download_target accepted a file with a flipped byte")
        check(not os.path.exists(dest), "tamper: nothing written at the destination")
    finally:
        with open(served, "wb") as f:
            f.write(original)


def scenario(publish, init_args, label):
    print(f"==== scenario {label}: epbroker-publish init {' '.join(init_args)}".rstrip())
    with tempfile.TemporaryDirectory(prefix="epbroker-interop-") as work:
        repo = Repo(publish, work, init_args)
        server = Server(repo.dir)
        try:
            client = os.path.join(work, "client")
            os.makedirs(os.path.join(client, "metadata"))
            shutil.copy(
                os.path.join(repo.dir, "metadata", "1.root.json"),
                os.path.join(client, "metadata", "root.json"),
            )
            check_step(repo, server, client, "init")

            pkg_a = repo.add("test-ep-1.0.0.bin", os.urandom(70_000) + b"test-ep", EP_METADATA)
            check_step(repo, server, client, "add test-ep")
            pkg_b = repo.add("other-ep-2.1.0.bin", b"other-ep\n" * 1000, other_ep_metadata())
            check_step(repo, server, client, "add other-ep")

            # A delegated role with its own key, trusted for vendor-ep/* only:
            # the package vendor-ep's namespace (name binding).
            repo.run("delegate", "vendor", "--paths", "vendor-ep/*")
            check_step(repo, server, client, "delegate vendor-ep/*")
            pkg_v = repo.add("vendor-ep-0.3.0.bin", b"vendor-ep\n" * 300, vendor_ep_metadata(),
                             role="vendor", target_path="vendor-ep/vendor-ep-0.3.0.bin")
            check_step(repo, server, client, f"add {pkg_v} to role vendor")

            repo.run("rotate", "root")
            check_step(repo, server, client, "rotate root")
            repo.run("rotate", "timestamp")
            check_step(repo, server, client, "rotate timestamp")
            repo.run("rotate", "snapshot")
            check_step(repo, server, client, "rotate snapshot")
            repo.run("rotate", "targets")
            check_step(repo, server, client, "rotate targets")
            repo.run("timestamp")
            check_step(repo, server, client, "timestamp")
            repo.remove(pkg_b)
            check_step(repo, server, client, f"remove {pkg_b}")

            check_tampered_target(repo, server, client, pkg_a)
            # The untampered file downloads again afterwards.
            check_step(repo, server, client, "restoring the tampered file")
        finally:
            server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--publish", default=os.environ.get("EPBROKER_PUBLISH"))
    args = ap.parse_args()
    if not args.publish:
        print("error: --publish PATH (or EPBROKER_PUBLISH) is required", file=sys.stderr)
        return 1
    import tuf

    print(f"python-tuf {tuf.__version__} ({sys.executable}); publisher {args.publish}")
    try:
        scenario(args.publish, [], "1 of 1")
        scenario(args.publish, ["--root-keys", "3", "--root-threshold", "2"], "2 of 3")
        scenario(args.publish, ["--no-consistent-snapshot"], "no consistent snapshots")
        # Keys of the other types securesystemslib verifies (issue 19).
        scenario(args.publish, ["--key-type", "ecdsa"], "ECDSA P-256 keys")
        scenario(args.publish, ["--key-type", "rsa", "--root-keys", "3", "--root-threshold", "2"],
                 "RSA (rsassa-pss-sha256) keys, 2 of 3")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    except Exception:  # a python-tuf exception is an interop failure too
        traceback.print_exc()
        print("FAIL: unexpected exception (see traceback above)")
        return 1
    print(f"PASS: {CHECKS} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
