"""Shared pieces of the python-tuf interop scripts in this directory.

- check(): counts and prints each check; a failed one raises Failure.
- DictServer: loopback HTTP serving a dict {unquoted relative path: bytes}. The
  request path is percent-decoded exactly once (as a web server maps a URL to a
  file name), so a role "a/b" is found under its metadata file name
  "metadata/1.a/b.json" only if the client asked for "/metadata/1.a%2Fb.json"
  (or, wrongly, the unquoted name). Every raw request path is logged.
- sign_raw(): signs a `signed` dict the way python-tuf does (securesystemslib's
  canonical JSON), for metadata python-tuf's own classes refuse to build (keys
  of unknown types).
- publish(): a consistent-snapshot repository from python-tuf Metadata objects.
- TufClient: runs epbroker-tuf-client.
"""

import hashlib
import http.server
import json
import os
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, unquote

from securesystemslib.formats import encode_canonical
from tuf.api.metadata import MetaFile, Metadata, Snapshot, Timestamp
from tuf.api.serialization.json import JSONSerializer


class Failure(Exception):
    pass


class Checks:
    count = 0


def check(cond, what):
    Checks.count += 1
    if not cond:
        raise Failure(what)
    print(f"  ok: {what}")


def expiry(days):
    return datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=days)


# ---- loopback HTTP over a dict ---------------------------------------------------------


class DictServer:
    def __init__(self, files):
        self.files = files  # unquoted path relative to the root -> bytes
        self.requests = []  # raw request paths, in order
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                raw = self.path
                with server.lock:
                    server.requests.append(raw)
                name = unquote(raw.split("?", 1)[0], errors="strict").lstrip("/")
                data = server.files.get(name)
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, fmt, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        host, port = self.httpd.server_address[:2]
        self.base = f"http://{host}:{port}"

    def count(self, raw_path):
        with self.lock:
            return self.requests.count(raw_path)

    def since(self, mark):
        with self.lock:
            return self.requests[mark:]

    def mark(self):
        with self.lock:
            return len(self.requests)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


# ---- signing and publishing -------------------------------------------------------------


def sign_raw(signed, signers):
    """The envelope bytes of `signed` (a dict) signed by each of `signers`
    (securesystemslib Signers, or (keyid, sig_hex) pairs for made-up ones)."""
    payload = encode_canonical(signed).encode()
    sigs = []
    for s in signers:
        if isinstance(s, tuple):
            sigs.append({"keyid": s[0], "sig": s[1]})
        else:
            sig = s.sign(payload)
            sigs.append({"keyid": sig.keyid, "sig": sig.signature})
    return json.dumps({"signatures": sigs, "signed": signed}, indent=1).encode()


def signed_bytes(md, signers):
    md.signatures.clear()
    for s in signers:
        md.sign(s, append=True)
    return md.to_bytes(JSONSerializer(compact=False))


def add_target_file(files, info, data):
    """Publishes a target's bytes under every one of its hashes, <dir>/<hash>.<name>."""
    d, sep, base = info.path.rpartition("/")
    for h in info.hashes.values():
        files[f"targets/{d}{sep}{h}.{base}"] = data


def publish(files, root_bytes, targets_roles, snapshot_signers, timestamp_signers, pin=True,
            snapshot_version=1, timestamp_version=1):
    """Writes a consistent-snapshot repository into `files`:
    root_bytes as metadata/<v>.root.json (v read from it), each of
    `targets_roles` [(name, Metadata[Targets], signers)] as
    metadata/<version>.<name>.json (the name unquoted: DictServer's one
    decoding finds it), then snapshot (pinning each by length and sha256 when
    `pin`, else by version only, as RSTUF does) and timestamp."""
    root_version = json.loads(root_bytes)["signed"]["version"]
    files[f"metadata/{root_version}.root.json"] = root_bytes
    meta = {}
    for name, md, signers in targets_roles:
        data = signed_bytes(md, signers)
        files[f"metadata/{md.signed.version}.{name}.json"] = data
        meta[f"{name}.json"] = (MetaFile(md.signed.version, len(data),
                                         {"sha256": hashlib.sha256(data).hexdigest()})
                                if pin else MetaFile(md.signed.version))
    snapshot = Metadata(Snapshot(version=snapshot_version, expires=expiry(7), meta=meta))
    snapshot_data = signed_bytes(snapshot, snapshot_signers)
    files[f"metadata/{snapshot_version}.snapshot.json"] = snapshot_data
    snap_meta = (MetaFile(snapshot_version, len(snapshot_data),
                          {"sha256": hashlib.sha256(snapshot_data).hexdigest()})
                 if pin else MetaFile(snapshot_version))
    timestamp = Metadata(Timestamp(version=timestamp_version, expires=expiry(1),
                                   snapshot_meta=snap_meta))
    files["metadata/timestamp.json"] = signed_bytes(timestamp, timestamp_signers)


# ---- epbroker-tuf-client ---------------------------------------------------------------


class TufClient:
    def __init__(self, exe, work, server, label):
        self.exe = exe
        self.metadata_dir = os.path.join(work, f"{label}-metadata")
        self.target_dir = os.path.join(work, f"{label}-targets")
        self.server = server

    def run(self, *args):
        argv = [self.exe, "--metadata-dir", self.metadata_dir, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        shown = " ".join(a.replace(self.server.base, "http://HOST") for a in args)
        print(f"$ epbroker-tuf-client {shown}  -> exit {p.returncode}")
        for line in (p.stdout + p.stderr).splitlines()[:20]:
            print(f"    {line}")
        return p

    def init(self, root_path):
        return self.run("init", root_path)

    def refresh(self):
        return self.run("--metadata-url", f"{self.server.base}/metadata/", "refresh")

    def download(self, *names):
        args = ["--metadata-url", f"{self.server.base}/metadata/",
                "--target-base-url", f"{self.server.base}/targets/",
                "--target-dir", self.target_dir]
        for n in names:
            args += ["--target-name", n]
        return self.run(*args, "download")

    def local_target(self, path):
        """Where the client saves `path` (python-tuf's naming: quote(path, ""))."""
        return os.path.join(self.target_dir, quote(path, safe=""))


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()
