#!/usr/bin/env python3
"""Interop: epbroker-tuf-client (and epbroker-publish verify) read a python-tuf repository.

Builds a TUF repository with python-tuf's Metadata API (Ed25519 keys from
securesystemslib's CryptoSigner, consistent snapshots): a top-level target whose
custom field carries EP metadata, a top-level plain file without EP metadata, and
a delegated role "vendor" (paths ["vendor-ep/*"]) with its own EP package listed
with sha256 and sha512. Every EP package lives under its name's directory
("NAME/...", the name binding of catalog/name_binding.hpp); the plain file, not
a package, has no directory. Serves it over loopback HTTP and checks, with
epbroker-tuf-client:
  - init / refresh / download of all three targets, bytes compared, each from
    its consistent-snapshot URL <dir>/<hash>.<name>;
  - a second download fetches no target again (GETs counted by the server);
  - root v2 rotating the root and timestamp keys (signed by old and new root
    keys) with a new timestamp and snapshot: refresh still succeeds;
  - a validly signed timestamp with a lower version (rollback): exit 1 and the
    client's trusted timestamp.json is unchanged.
Also runs `epbroker-publish verify --repo DIR` over the python-made repository,
and finally checks that when the vendor role (trusted for "vendor-ep/*" only)
signs a package claiming the name "test-ep", verify reports it as refused by
clients (the name binding), although it is valid TUF.

Usage: epbroker_client_reads_python_repo.py [--client PATH] [--publish PATH]
       (defaults: $EPBROKER_TUF_CLIENT, $EPBROKER_PUBLISH)
Exit status: 0 all checks passed, 1 a check failed, 77 python-tuf missing (skip).
"""

import argparse
import collections
import copy
import functools
import hashlib
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

try:
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import (
        DelegatedRole,
        Delegations,
        MetaFile,
        Metadata,
        Root,
        Snapshot,
        TargetFile,
        Targets,
        Timestamp,
    )
    from tuf.api.serialization.json import JSONSerializer
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


def vendor_ep_metadata():
    m = copy.deepcopy(EP_METADATA)
    m["epbroker"].update(name="vendor-ep", version="0.3.0", ep_names=["EpbrokerVendorEp"],
                         vendor="vendor", library="lib/libvendor_ep.so")
    return m


# EP packages: the first path segment is the package name (name binding).
TOP_TARGET = "test-ep/test-ep-1.0.0.tar.gz"  # targets/test-ep/<sha256>.<name>
VENDOR_TARGET = "vendor-ep/vendor-ep-0.3.0.tar.gz"  # targets/vendor-ep/<hash>.<name>
# Not a package (no custom.epbroker), so not bound to a name: no directory,
# served as targets/<sha256>.<name>.
PLAIN_TARGET = "NOTICE.txt"
# The attack: signed by the vendor role (trusted for "vendor-ep/*"), but its
# EP metadata claims the name "test-ep".
MISBOUND_TARGET = "vendor-ep/test-ep-9.9.9.tar.gz"


class Failure(Exception):
    pass


CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise Failure(what)
    print(f"  ok: {what}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ---- loopback HTTP that counts GETs --------------------------------------------


class CountingHandler(http.server.SimpleHTTPRequestHandler):
    counter = None  # set per server
    lock = None

    def do_GET(self):
        with self.lock:
            self.counter[self.path] += 1
        super().do_GET()

    def log_message(self, fmt, *args):
        pass


class Server:
    def __init__(self, directory):
        self.gets = collections.Counter()
        handler_cls = type(
            "Handler", (CountingHandler,), {"counter": self.gets, "lock": threading.Lock()}
        )
        handler = functools.partial(handler_cls, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        host, port = self.httpd.server_address[:2]
        self.base = f"http://{host}:{port}"

    def count(self, url_path):
        return self.gets[url_path]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


# ---- the python-tuf repository --------------------------------------------------


def expiry(days):
    return datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=days)


class PyRepo:
    """A TUF repository written with python-tuf's Metadata API only."""

    def __init__(self, directory):
        self.dir = directory
        self.meta_dir = os.path.join(directory, "metadata")
        self.serializer = JSONSerializer(compact=False)
        self.signers = {r: CryptoSigner.generate_ed25519() for r in
                        ("root", "timestamp", "snapshot", "targets", "vendor")}
        self.files = {}  # target path -> bytes

        # root v1
        root = Root(expires=expiry(365), consistent_snapshot=True)
        for role in ("root", "timestamp", "snapshot", "targets"):
            root.add_key(self.signers[role].public_key, role)
        self.root = Metadata(root)
        self.root.sign(self.signers["root"])
        self.write_root()

        # target files, each published under every one of its hashes
        top_bytes = b"test-ep package bytes\n" * 3000 + os.urandom(257)
        vendor_bytes = os.urandom(40_000)
        plain_bytes = b"python-made repository, not a package\n"
        top = TargetFile.from_data(TOP_TARGET, top_bytes, ["sha256"])
        custom = copy.deepcopy(EP_METADATA)
        # Probes for canonical JSON agreement (python-tuf signs
        # securesystemslib's encoding; JSONSerializer writes \u escapes):
        # non-ASCII, escapes and non-BMP text, and non-ASCII keys whose order
        # differs between byte-wise and UTF-16 sorting.
        custom["epbroker"]["vendor"] = 'Vëndor ✓ "q" \\ x'
        custom["epbroker"]["description"] = "two\nlines\ttab 🚀 ключ"
        custom["x-other-tool"] = {"z": [1, -5, 0, 2**63], "é": True, "e": None,
                                  "\uff5e": "fullwidth", "😀": "astral"}
        top = TargetFile(top.length, top.hashes, top.path,
                         unrecognized_fields={"custom": custom})
        vendor = TargetFile.from_data(VENDOR_TARGET, vendor_bytes, ["sha256", "sha512"])
        vendor.unrecognized_fields["custom"] = vendor_ep_metadata()
        plain = TargetFile.from_data(PLAIN_TARGET, plain_bytes, ["sha256"])
        self.target_infos = {}
        for info, data in ((top, top_bytes), (vendor, vendor_bytes), (plain, plain_bytes)):
            self.publish_target(info, data)
            self.files[info.path] = data

        # vendor (delegated) v1, signed by the vendor key
        self.vendor = Metadata(Targets(expires=expiry(90), targets={vendor.path: vendor}))
        self.vendor.sign(self.signers["vendor"])
        self.write_versioned("vendor", self.vendor)

        # targets v1, delegating vendor-ep/* to "vendor"
        vkey = self.signers["vendor"].public_key
        delegations = Delegations(
            keys={vkey.keyid: vkey},
            roles={"vendor": DelegatedRole("vendor", [vkey.keyid], 1, True,
                                           paths=["vendor-ep/*"])},
        )
        self.targets = Metadata(
            Targets(expires=expiry(90), targets={top.path: top, plain.path: plain},
                    delegations=delegations,
                    unrecognized_fields={"x-python-made": {"tool": "python-tuf", "ü": 1}})
        )
        self.targets.sign(self.signers["targets"])
        targets_bytes = self.write_versioned("targets", self.targets)

        # snapshot v1: targets.json pinned by length and hash, vendor.json by version only
        self.snapshot = Metadata(Snapshot(expires=expiry(7), meta={
            "targets.json": MetaFile(1, len(targets_bytes),
                                     {"sha256": hashlib.sha256(targets_bytes).hexdigest()}),
            "vendor.json": MetaFile(1),
        }))
        self.snapshot.sign(self.signers["snapshot"])
        self.timestamp = None
        self.publish_snapshot_and_timestamp(bump=False)

    def publish_target(self, info, data):
        """Writes `data` under every one of its hashes: <dir>/<hash>.<name>."""
        d, sep, base = info.path.rpartition("/")
        for h in info.hashes.values():
            write(os.path.join(self.dir, "targets", f"{d}{sep}{h}.{base}"), data)
        self.target_infos[info.path] = info

    def add_vendor_target(self, info, data):
        """vendor v+1 with `info` added, then snapshot (pinning the new
        vendor.json version) and timestamp."""
        self.publish_target(info, data)
        v = self.vendor.signed
        v.targets[info.path] = info
        v.version += 1
        v.expires = expiry(90)
        self.vendor.signatures.clear()
        self.vendor.sign(self.signers["vendor"])
        self.write_versioned("vendor", self.vendor)
        self.snapshot.signed.meta["vendor.json"] = MetaFile(v.version)
        return self.publish_snapshot_and_timestamp(bump=True)

    def to_bytes(self, md):
        return md.to_bytes(self.serializer)

    def write_versioned(self, role, md):
        data = self.to_bytes(md)
        write(os.path.join(self.meta_dir, f"{md.signed.version}.{role}.json"), data)
        return data

    def write_root(self):
        data = self.write_versioned("root", self.root)
        write(os.path.join(self.meta_dir, "root.json"), data)
        return data

    def timestamp_for(self, version, snapshot_bytes, signer):
        ts = Metadata(Timestamp(
            version=version,
            expires=expiry(1),
            snapshot_meta=MetaFile(self.snapshot.signed.version, len(snapshot_bytes),
                                   {"sha256": hashlib.sha256(snapshot_bytes).hexdigest()}),
        ))
        ts.sign(signer)
        return ts

    def publish_snapshot_and_timestamp(self, bump=True, timestamp_version=None):
        if bump:
            self.snapshot.signed.version += 1
            self.snapshot.signed.expires = expiry(7)
            self.snapshot.signatures.clear()
            self.snapshot.sign(self.signers["snapshot"])
        snapshot_bytes = self.write_versioned("snapshot", self.snapshot)
        if timestamp_version is None:
            timestamp_version = self.timestamp.signed.version + 1 if self.timestamp else 1
        self.timestamp = self.timestamp_for(timestamp_version, snapshot_bytes,
                                            self.signers["timestamp"])
        self.snapshot_bytes = snapshot_bytes
        return self.write_timestamp(self.timestamp)

    def write_timestamp(self, ts):
        data = self.to_bytes(ts)
        write(os.path.join(self.meta_dir, "timestamp.json"), data)
        return data

    def rotate_root_and_timestamp_keys(self):
        """Root v2: new root key and new timestamp key; signed by old and new root keys."""
        old_root_signer = self.signers["root"]
        new_root_signer = CryptoSigner.generate_ed25519()
        new_ts_signer = CryptoSigner.generate_ed25519()
        root = self.root.signed
        root.revoke_key(old_root_signer.public_key.keyid, "root")
        root.add_key(new_root_signer.public_key, "root")
        root.revoke_key(self.signers["timestamp"].public_key.keyid, "timestamp")
        root.add_key(new_ts_signer.public_key, "timestamp")
        root.version += 1
        root.expires = expiry(365)
        self.root.signatures.clear()
        self.root.sign(old_root_signer, append=True)
        self.root.sign(new_root_signer, append=True)
        self.signers["root"] = new_root_signer
        self.signers["timestamp"] = new_ts_signer
        return self.write_root()


# ---- epbroker-tuf-client runs ---------------------------------------------------


class Client:
    def __init__(self, exe, work, server):
        self.exe = exe
        self.metadata_dir = os.path.join(work, "client-metadata")
        self.target_dir = os.path.join(work, "client-targets")
        self.server = server

    def run(self, *args):
        argv = [self.exe, "--metadata-dir", self.metadata_dir, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        shown = " ".join(a.replace(self.server.base, "http://HOST") for a in args)
        print(f"$ epbroker-tuf-client {shown}  -> exit {p.returncode}")
        for line in (p.stdout + p.stderr).splitlines():
            print(f"    {line}")
        return p

    def refresh(self):
        return self.run("--metadata-url", f"{self.server.base}/metadata/", "refresh")

    def download(self, *names):
        args = ["--metadata-url", f"{self.server.base}/metadata/",
                "--target-base-url", f"{self.server.base}/targets/",
                "--target-dir", self.target_dir]
        for n in names:
            args += ["--target-name", n]
        return self.run(*args, "download")

    def trusted(self, role):
        return read(os.path.join(self.metadata_dir, f"{role}.json"))


def target_url_paths(repo, path):
    """URL paths under which the server publishes `path` (one per hash)."""
    d, sep, base = path.rpartition("/")
    return [f"/targets/{d}{sep}{h}.{base}" for h in repo.target_infos[path].hashes.values()]


def verify(publish, repo_dir):
    p = subprocess.run([publish, "verify", "--repo", repo_dir], capture_output=True, text=True,
                       timeout=120)
    print(f"$ epbroker-publish verify --repo REPO  -> exit {p.returncode}")
    for line in (p.stdout + p.stderr).splitlines():
        print(f"    {line}")
    return p


def run_verify(publish, repo_dir, label):
    p = verify(publish, repo_dir)
    check(p.returncode == 0, f"{label}: epbroker-publish verify passes on the python-tuf repo")
    check("3 target(s), 0 problem(s)" in p.stdout,
          f"{label}: verify saw all three targets (two top-level, one delegated) with no problem")
    for path in (TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET):
        check(any(line.strip().startswith(f"{path} (") and line.endswith(": OK")
                  for line in p.stdout.splitlines()),
              f"{label}: verify reports {path} OK")


def scenario(client_exe, publish):
    with tempfile.TemporaryDirectory(prefix="epbroker-interop-") as work:
        repo_dir = os.path.join(work, "repo")
        repo = PyRepo(repo_dir)
        print("python-tuf repository written:")
        for dirpath, _, names in sorted(os.walk(repo_dir)):
            for n in sorted(names):
                print(f"    {os.path.relpath(os.path.join(dirpath, n), repo_dir)}")
        server = Server(repo_dir)
        try:
            client = Client(client_exe, work, server)

            print("-- epbroker-publish verify over the python-tuf repository")
            run_verify(publish, repo_dir, "initial")

            print("-- init + refresh")
            p = client.run("init", os.path.join(repo_dir, "metadata", "1.root.json"))
            check(p.returncode == 0, "init with python-tuf's 1.root.json exits 0")
            p = client.refresh()
            check(p.returncode == 0, "refresh exits 0")
            for role in ("root", "timestamp", "snapshot", "targets"):
                check(os.path.isfile(os.path.join(client.metadata_dir, f"{role}.json")),
                      f"refresh persisted {role}.json")
            check(client.trusted("timestamp") == read(os.path.join(repo_dir, "metadata",
                                                                   "timestamp.json")),
                  "trusted timestamp.json is byte-identical to the served one")
            check(server.count("/metadata/1.snapshot.json") == 1,
                  "snapshot fetched by version (consistent snapshot URL 1.snapshot.json)")
            check(server.count("/metadata/1.targets.json") == 1,
                  "targets fetched by version (1.targets.json)")

            print("-- download all three targets")
            p = client.download(TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET)
            check(p.returncode == 0, "download of top-level and delegated targets exits 0")
            check(server.count("/metadata/1.vendor.json") == 1,
                  "delegated role fetched as 1.vendor.json")
            check(os.path.isfile(os.path.join(client.metadata_dir, "vendor.json")),
                  "delegated vendor.json persisted")
            for name, data in repo.files.items():
                local = os.path.join(client.target_dir, quote(name, safe=""))
                check(os.path.isfile(local),
                      f"{name} saved as {quote(name, safe='')} (python-tuf's local naming)")
                check(read(local) == data, f"{name}: downloaded bytes match")
            top_gets = {u: server.count(u) for u in target_url_paths(repo, TOP_TARGET)}
            check(list(top_gets.values()) == [1], f"{TOP_TARGET} fetched once from {top_gets}")
            check(all(u.startswith("/targets/test-ep/") for u in top_gets),
                  f"{TOP_TARGET} served from its package directory /targets/test-ep/")
            vendor_gets = {u: server.count(u) for u in target_url_paths(repo, VENDOR_TARGET)}
            check(sum(vendor_gets.values()) == 1,
                  f"{VENDOR_TARGET} fetched once from one of its hash names {vendor_gets}")
            check(all(u.startswith("/targets/vendor-ep/") for u in vendor_gets),
                  f"{VENDOR_TARGET} served from its package directory /targets/vendor-ep/")
            plain_gets = {u: server.count(u) for u in target_url_paths(repo, PLAIN_TARGET)}
            check(list(plain_gets.values()) == [1]
                  and all(u.count("/") == 2 for u in plain_gets),
                  f"{PLAIN_TARGET} (no directory) fetched once from {plain_gets}")
            check(all(server.count(f"/targets/{t}") == 0
                      for t in (TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET)),
                  "no target fetched by its plain (unprefixed) name")

            print("-- download again: nothing re-fetched")
            before = dict(server.gets)
            p = client.download(TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET)
            check(p.returncode == 0, "second download exits 0")
            refetched = {u: server.gets[u] - before.get(u, 0) for u in server.gets
                         if u.startswith("/targets/") and server.gets[u] != before.get(u, 0)}
            check(not refetched, f"no target GET on the second download (new GETs: {refetched})")
            check(p.stdout.count("already present") == 3,
                  "client reports all three as already present")

            print("-- root v2 rotating the root and timestamp keys")
            old_ts_bytes = client.trusted("timestamp")
            root_v2 = repo.rotate_root_and_timestamp_keys()
            # New timestamp (v3, new key) and new snapshot (v2).
            ts_v3 = repo.publish_snapshot_and_timestamp(bump=True, timestamp_version=3)
            p = client.refresh()
            check(p.returncode == 0, "refresh after rotation exits 0")
            check(client.trusted("root") == root_v2, "trusted root.json is now python's 2.root.json")
            check(server.count("/metadata/2.root.json") >= 1
                  and server.count("/metadata/3.root.json") >= 1,
                  "root chain walked: 2.root.json fetched, 3.root.json probed (404)")
            check(client.trusted("timestamp") == ts_v3,
                  "trusted timestamp is v3, signed by the new timestamp key")
            check(client.trusted("timestamp") != old_ts_bytes, "old timestamp replaced")
            check(server.count("/metadata/2.snapshot.json") == 1, "snapshot v2 fetched")
            p = client.download(TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET)
            check(p.returncode == 0, "download after rotation exits 0 (targets still verified)")

            print("-- rollback: a validly signed timestamp v2 < trusted v3")
            trusted_before = client.trusted("timestamp")
            rollback = repo.timestamp_for(2, repo.snapshot_bytes, repo.signers["timestamp"])
            repo.write_timestamp(rollback)
            p = client.refresh()
            check(p.returncode == 1, "refresh refuses the rollback with exit 1")
            check(client.trusted("timestamp") == trusted_before,
                  "client's timestamp.json is unchanged (still v3)")
            err = p.stderr.lower()
            check("version" in err or "rollback" in err,
                  f"error names the version problem: {p.stderr.strip()!r}")
            p = client.download(TOP_TARGET)
            check(p.returncode == 1, "download refuses too while the rollback is served")

            print("-- the good timestamp again")
            repo.write_timestamp(repo.timestamp)
            p = client.refresh()
            check(p.returncode == 0, "refresh exits 0 once the v3 timestamp is served again")

            print("-- epbroker-publish verify after the rotation (root chain 1 -> 2)")
            run_verify(publish, repo_dir, "after rotation")

            print(f"-- name binding: vendor (trusted for vendor-ep/*) signs {MISBOUND_TARGET}"
                  " claiming the name test-ep")
            evil_bytes = b"not really test-ep\n" * 100
            evil = TargetFile.from_data(MISBOUND_TARGET, evil_bytes, ["sha256"])
            evil.unrecognized_fields["custom"] = copy.deepcopy(EP_METADATA)  # name "test-ep"
            evil.unrecognized_fields["custom"]["epbroker"]["version"] = "9.9.9"
            repo.add_vendor_target(evil, evil_bytes)
            p = client.download(MISBOUND_TARGET)
            check(p.returncode == 0,
                  "plain TUF accepts it (the vendor role is trusted for vendor-ep/*): the name "
                  "binding is epbroker's rule on top of TUF")
            p = verify(publish, repo_dir)
            check(p.returncode == 1, "epbroker-publish verify fails on the misbound package")
            check("4 target(s), 1 problem(s)" in p.stdout,
                  "verify: exactly one problem among the four targets")
            flagged = [line.strip() for line in p.stdout.splitlines()
                       if line.strip().startswith(f"{MISBOUND_TARGET} (")]
            check(len(flagged) == 1 and ": refused by clients: " in flagged[0]
                  and "test-ep" in flagged[0],
                  f"verify reports {MISBOUND_TARGET} as refused by clients: {flagged}")
            check(all(any(line.strip().startswith(f"{t} (") and line.endswith(": OK")
                          for line in p.stdout.splitlines())
                      for t in (TOP_TARGET, VENDOR_TARGET, PLAIN_TARGET)),
                  "verify still reports the correctly bound targets OK")
        finally:
            server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default=os.environ.get("EPBROKER_TUF_CLIENT"))
    ap.add_argument("--publish", default=os.environ.get("EPBROKER_PUBLISH"))
    args = ap.parse_args()
    if not args.client or not args.publish:
        print("error: --client and --publish (or EPBROKER_TUF_CLIENT / EPBROKER_PUBLISH) "
              "are required", file=sys.stderr)
        return 1
    import securesystemslib
    import tuf

    print(f"python-tuf {tuf.__version__}, securesystemslib {securesystemslib.__version__} "
          f"({sys.executable})")
    try:
        scenario(args.client, args.publish)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    except Exception:
        traceback.print_exc()
        print("FAIL: unexpected exception (see traceback above)")
        return 1
    print(f"PASS: {CHECKS} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
