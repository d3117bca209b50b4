#!/usr/bin/env python3
"""Interop: epbroker-tuf-client reads a repository shaped as RSTUF (Repository
Service for TUF) publishes it, made with python-tuf, the library RSTUF uses.

RSTUF's shape (repository-service-tuf-worker, repository.py, and the CLI's
ceremony; the worker is a service with a database and a message broker, not a
PyPI package, so its output is rebuilt here step by step):
  - root: offline keys named by "x-rstuf-key-name" (here 2 of 2: ed25519 and
    RSA), consistent snapshots; one online key ("x-rstuf-online-key-uri") for
    timestamp, snapshot and targets;
  - targets (online key) lists no target; its delegations are
    succinct_roles {keyids [online key], threshold 1, bit_length
    log2(number_of_delegated_bins) = 8 by default, name_prefix "bins"}, the
    online key also in delegations.keys;
  - 256 bins "bins-00".."bins-ff", each a Targets role signed by the online
    key, all published at bootstrap ("1.bins-xx.json", empty); adding
    artifacts bumps the bin holding each path (get_role_for_target);
  - snapshot and timestamp pin versions only (MetaFile(version)), no hashes or
    lengths; all metadata written by JSONSerializer() as N.<role>.json, except
    timestamp.json.
Artifact hashes are sha256 here: RSTUF stores what the uploader sends, and its
CLI's "artifact add" sends blake2b-256 only, which epbroker does not verify
(an unsupported algorithm fails like a mismatch).

Run once with an ed25519 online key (RSTUF's file key) and once with an ECDSA
P-256 one (its AWS/GCP/Azure KMS keys). Checks: python-tuf's ngclient (the
control) downloads the artifacts; epbroker-tuf-client init/refresh/download
of artifacts in several bins asks for exactly those bins, each once; a path in
no bin is not found after one bin; an artifact listed by a bin other than its
own is not found; a bin re-signed by another key is refused (bad_signature)
while other bins still serve; `epbroker-publish verify` lists every artifact
through all 256 bins.

Usage: epbroker_client_reads_rstuf_repo.py [--client PATH] [--publish PATH]
       (defaults: $EPBROKER_TUF_CLIENT, $EPBROKER_PUBLISH)
Exit status: 0 all checks passed, 1 a check failed, 77 python-tuf missing.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import traceback

try:
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import (Delegations, Metadata, Root, SuccinctRoles, TargetFile,
                                  Targets)
    from tuf.ngclient import Updater

    import interop_support as sup
except ImportError as e:  # pragma: no cover - environment problem
    print(f"SKIP: python-tuf is not importable by {sys.executable}: {e}")
    sys.exit(77)

NUMBER_OF_DELEGATED_BINS = 256  # RSTUF's default (ServiceSettings)
ARTIFACTS = [
    "test-ep/test-ep-1.0.0.tar.gz",
    "vendor-ep/vendor-ep-0.3.0.tar.gz",
    "file1.tar.gz",
    "dir/sub/file2.bin",
    "releases/v2/app-2.0.whl",
]
MISSING = "not/published.bin"
MISPLACED = "misplaced/evil.bin"


class RstufRepo:
    def __init__(self, online_signer):
        self.files = {}
        self.online = online_signer
        key = self.online.public_key
        key.unrecognized_fields["x-rstuf-key-name"] = "online"
        key.unrecognized_fields["x-rstuf-online-key-uri"] = f"fn:{key.keyid}"
        # 1. Ceremony: root with offline keys and the online key.
        self.root_signers = [CryptoSigner.generate_ed25519(),
                             CryptoSigner.generate_rsa(scheme="rsassa-pss-sha256")]
        root = Root(expires=sup.expiry(365))
        for i, s in enumerate(self.root_signers):
            s.public_key.unrecognized_fields["x-rstuf-key-name"] = f"root-{i}"
            root.add_key(s.public_key, "root")
        root.roles["root"].threshold = 2
        for role in ("timestamp", "snapshot", "targets"):
            root.add_key(key, role)
        self.root_bytes = sup.signed_bytes(Metadata(root), self.root_signers)
        # 2. Bootstrap: targets with succinct hash bins, every bin empty at v1.
        bit_length = NUMBER_OF_DELEGATED_BINS.bit_length() - 1
        self.succinct = SuccinctRoles([], 1, bit_length, "bins")
        targets = Targets(expires=sup.expiry(365))
        targets.delegations = Delegations(keys={}, succinct_roles=self.succinct)
        self.bins = {}
        for name in self.succinct.get_roles():
            targets.add_key(key, name)
            self.bins[name] = Metadata(Targets(expires=sup.expiry(1)))
        self.targets = Metadata(targets)
        self.signer_of = {}  # bin -> signer, when not the online key
        self.contents = {}
        self.snapshot_version = 0
        self.publish()

    def bin_of(self, path):
        return self.succinct.get_role_for_target(path)

    def add_artifact(self, path, in_bin=None):
        """Adds `path` to its bin (or to `in_bin`), bumping that bin's version."""
        data = f"artifact {path}\n".encode() * 40
        info = TargetFile.from_data(path, data, ["sha256"])
        info.unrecognized_fields["custom"] = {"task_id": f"task-{len(self.contents)}"}
        sup.add_target_file(self.files, info, data)
        self.contents[path] = data
        name = in_bin or self.bin_of(path)
        self.bins[name].signed.targets[path] = info
        self.bins[name].signed.version += 1
        return name

    def publish(self):
        """Snapshot and timestamp (versions only) over the current roles."""
        self.snapshot_version += 1
        roles = [("targets", self.targets, [self.online])]
        roles += [(n, md, [self.signer_of.get(n, self.online)]) for n, md in self.bins.items()]
        sup.publish(self.files, self.root_bytes, roles, [self.online], [self.online], pin=False,
                    snapshot_version=self.snapshot_version,
                    timestamp_version=self.snapshot_version)


def bin_urls(requests):
    return [u for u in requests if u.startswith("/metadata/") and ".bins-" in u]


def verify(publish, repo_dir, count):
    p = subprocess.run([publish, "verify", "--repo", repo_dir], capture_output=True, text=True,
                       timeout=300)
    print(f"$ epbroker-publish verify --repo REPO  -> exit {p.returncode}")
    for line in (p.stdout + p.stderr).splitlines()[:12]:
        print(f"    {line}")
    sup.check(p.returncode == 0 and f"{count} target(s), 0 problem(s)" in p.stdout,
              f"epbroker-publish verify lists all {count} artifacts through the 256 bins")


def scenario(client_exe, publish, work, label, online_signer):
    print(f"== RSTUF-shaped repository, online key {label}")
    repo = RstufRepo(online_signer)
    bins = {repo.add_artifact(p) for p in ARTIFACTS}
    repo.publish()
    print(f"    artifacts in bins {sorted(bins)}")
    sup.check(len(bins) >= 3, f"{label}: the artifacts fall into {len(bins)} different bins")
    root_path = os.path.join(work, f"{label}.1.root.json")
    sup.write_file(root_path, repo.root_bytes)
    server = sup.DictServer(repo.files)
    try:
        print("-- control: python-tuf's ngclient")
        pydir = os.path.join(work, f"{label}-python")
        os.makedirs(pydir)
        updater = Updater(pydir, f"{server.base}/metadata/", os.path.join(work, f"{label}-py-t"),
                          f"{server.base}/targets/", bootstrap=repo.root_bytes)
        updater.refresh()
        for path in ARTIFACTS:
            info = updater.get_targetinfo(path)
            sup.check(info is not None and
                      sup.read_file(updater.download_target(info)) == repo.contents[path],
                      f"{label}: python-tuf downloads {path}")

        print("-- epbroker-tuf-client")
        client = sup.TufClient(client_exe, work, server, label)
        sup.check(client.init(root_path).returncode == 0, f"{label}: init exits 0")
        p = client.refresh()
        sup.check(p.returncode == 0, f"{label}: refresh exits 0")
        sup.check("256 delegated role(s) (succinct hash bins)" in p.stdout,
                  f"{label}: refresh reports the 256 hash bins")
        mark = server.mark()
        p = client.download(*ARTIFACTS)
        sup.check(p.returncode == 0, f"{label}: download of {len(ARTIFACTS)} artifacts exits 0")
        for path in ARTIFACTS:
            sup.check(sup.read_file(client.local_target(path)) == repo.contents[path],
                      f"{label}: {path} ({repo.bin_of(path)}) downloaded with its bytes")
        asked = bin_urls(server.since(mark))
        want = sorted(f"/metadata/{repo.bins[b].signed.version}.{b}.json" for b in bins)
        sup.check(sorted(asked) == want, f"{label}: exactly the artifacts' bins asked, once: {asked}")
        for b in bins:
            sup.check(os.path.isfile(os.path.join(client.metadata_dir, f"{b}.json")),
                      f"{label}: {b}.json persisted")

        print("-- a path that no bin lists")
        mark = server.mark()
        p = client.download(MISSING)
        sup.check(p.returncode == 1 and "not_found" in p.stderr, f"{label}: {MISSING} not found")
        asked = bin_urls(server.since(mark))
        sup.check(len(asked) <= 1 and all(repo.bin_of(MISSING) in u for u in asked),
                  f"{label}: only its own bin {repo.bin_of(MISSING)} asked: {asked}")

        print("-- an artifact listed by another bin than its own")
        own = repo.bin_of(MISPLACED)
        other = next(b for b in repo.bins if b != own)
        repo.add_artifact(MISPLACED, in_bin=other)
        repo.publish()
        p = client.download(MISPLACED)
        sup.check(p.returncode == 1 and "not_found" in p.stderr,
                  f"{label}: {MISPLACED} (bin {own}) listed by {other} is not found")
        del repo.bins[other].signed.targets[MISPLACED]
        repo.bins[other].signed.version += 1

        print("-- a bin signed by another key than the online key")
        victim = ARTIFACTS[0]
        victim_bin = repo.bin_of(victim)
        repo.signer_of[victim_bin] = CryptoSigner.generate_ed25519()
        repo.bins[victim_bin].signed.version += 1
        repo.publish()
        p = client.download(victim)
        sup.check(p.returncode == 1 and "bad_signature" in p.stderr,
                  f"{label}: {victim} refused: {victim_bin} is not signed by the online key")
        rest = [a for a in ARTIFACTS if repo.bin_of(a) != victim_bin]
        p = client.download(*rest)
        sup.check(p.returncode == 0, f"{label}: artifacts of the other bins still download")
        del repo.signer_of[victim_bin]
        repo.bins[victim_bin].signed.version += 1
        repo.publish()

        if publish:
            print("-- epbroker-publish verify over the repository on disk")
            repo_dir = os.path.join(work, f"{label}-repo")
            for rel, data in repo.files.items():
                sup.write_file(os.path.join(repo_dir, rel), data)
            verify(publish, repo_dir, len(ARTIFACTS))
    finally:
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default=os.environ.get("EPBROKER_TUF_CLIENT"))
    ap.add_argument("--publish", default=os.environ.get("EPBROKER_PUBLISH"))
    args = ap.parse_args()
    if not args.client:
        print("error: --client (or EPBROKER_TUF_CLIENT) is required", file=sys.stderr)
        return 1
    failed = []
    with tempfile.TemporaryDirectory(prefix="epbroker-rstuf-") as work:
        for label, make in (("ed25519", CryptoSigner.generate_ed25519),
                            ("ecdsa", CryptoSigner.generate_ecdsa)):
            try:
                scenario(args.client, args.publish, work, label, make())
            except sup.Failure as e:
                print(f"FAIL: {e}")
                failed.append(label)
            except Exception:
                traceback.print_exc()
                print(f"FAIL: {label}: unexpected exception (see traceback above)")
                failed.append(label)
    if failed:
        print(f"FAILED scenarios: {', '.join(failed)} ({sup.Checks.count} checks run)")
        return 1
    print(f"PASS: {sup.Checks.count} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
