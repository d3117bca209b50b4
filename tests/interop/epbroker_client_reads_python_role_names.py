#!/usr/bin/env python3
"""Interop: role names are data. epbroker-tuf-client reads delegated roles that
python-tuf names "vendor/../x y%z é", "..", ".", "a/b", "a%2Fb" and "%2e%2e".

python-tuf's Metadata API writes the repository; top-level targets delegates
each role its own directory (terminating), and each role lists one target
there. A loopback HTTP server holds the files in a dict keyed by the metadata
file name built from the *unquoted* role name ("metadata/1.a/b.json") and maps
each request's path, percent-decoded once, to it. So a client finds a role only
by quoting its name as python-tuf does (urllib.parse.quote(name, "")): an
unquoted ".." and "%2e%2e" would both reach "1...json", and a doubly quoted name
nothing. Checks, with epbroker-tuf-client:
  - every role's target downloads and matches, each role's metadata asked for
    exactly once under python-tuf's URL "/metadata/1.<quote(name, "")>.json";
  - python-tuf's own ngclient (the control) asks for the same metadata URLs;
  - the client's metadata directory holds one file per role, named
    "<quote(name, "")>.json", and nothing outside it; no two roles share one;
  - a second download trusts those files (no metadata asked again);
  - a role is trusted only for its own paths: ".." listing "ab/evil" (a path
    delegated to "a/b") does not make it downloadable.

Usage: epbroker_client_reads_python_role_names.py [--client PATH]
       (default: $EPBROKER_TUF_CLIENT)
Exit status: 0 all checks passed, 1 a check failed, 77 python-tuf missing.
"""

import argparse
import os
import sys
import tempfile
import traceback
from urllib.parse import quote

try:
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import DelegatedRole, Delegations, Metadata, Root, TargetFile, Targets
    from tuf.ngclient import Updater

    import interop_support as sup
except ImportError as e:  # pragma: no cover - environment problem
    print(f"SKIP: python-tuf is not importable by {sys.executable}: {e}")
    sys.exit(77)

# (role name, its directory, the target it lists there)
ROLES = [
    ("vendor/../x y%z \u00e9", "odd", "odd/x y \u00e9.txt"),
    ("..", "dotdot", "dotdot/file.bin"),
    (".", "dot", "dot/file.bin"),
    ("a/b", "ab", "ab/file.bin"),
    ("a%2Fb", "a2fb", "a2fb/file.bin"),
    ("%2e%2e", "pct", "pct/file.bin"),
]


def build(files, evil=False):
    """The repository in `files`; returns the root bytes and {path: bytes}."""
    signers = {r: CryptoSigner.generate_ed25519() for r in
               ("root", "timestamp", "snapshot", "targets", "delegated")}
    root = Root(expires=sup.expiry(365), consistent_snapshot=True)
    for role in ("root", "timestamp", "snapshot", "targets"):
        root.add_key(signers[role].public_key, role)
    root_md = Metadata(root)
    root_bytes = sup.signed_bytes(root_md, [signers["root"]])
    dkey = signers["delegated"].public_key
    roles, contents, delegated = {}, {}, []
    for name, directory, path in ROLES:
        roles[name] = DelegatedRole(name, [dkey.keyid], 1, True, paths=[f"{directory}/*"])
        data = f"bytes of {path} from role {name!r}\n".encode()
        info = TargetFile.from_data(path, data, ["sha256"])
        sup.add_target_file(files, info, data)
        contents[path] = data
        t = Targets(expires=sup.expiry(30), targets={path: info})
        if evil and name == "..":
            # ".." lists a path of "a/b"'s directory: no client may take it from ".."
            evil_data = b"evil\n"
            evil_info = TargetFile.from_data("ab/evil", evil_data, ["sha256"])
            sup.add_target_file(files, evil_info, evil_data)
            t.targets["ab/evil"] = evil_info
        delegated.append((name, Metadata(t), [signers["delegated"]]))
    top = Targets(expires=sup.expiry(30),
                  delegations=Delegations(keys={dkey.keyid: dkey}, roles=roles))
    sup.publish(files, root_bytes, [("targets", Metadata(top), [signers["targets"]]), *delegated],
                [signers["snapshot"]], [signers["timestamp"]])
    return root_bytes, contents


def scenario(client_exe):
    with tempfile.TemporaryDirectory(prefix="epbroker-names-") as work:
        files = {}
        root_bytes, contents = build(files, evil=True)
        root_path = os.path.join(work, "1.root.json")
        sup.write_file(root_path, root_bytes)
        print("repository files (dict keys, unquoted role names):")
        for k in sorted(files):
            if k.startswith("metadata/"):
                print(f"    {k}")
        server = sup.DictServer(files)
        try:
            expected_urls = {f"/metadata/1.{quote(name, safe='')}.json" for name, _, _ in ROLES}

            print("-- control: python-tuf's ngclient over the same server")
            mark = server.mark()
            pydir = os.path.join(work, "python-client")
            os.makedirs(pydir)
            updater = Updater(pydir, f"{server.base}/metadata/", os.path.join(work, "py-t"),
                              f"{server.base}/targets/", bootstrap=root_bytes)
            updater.refresh()
            for _, _, path in ROLES:
                check_info = updater.get_targetinfo(path)
                sup.check(check_info is not None, f"python-tuf finds {path!r}")
            python_urls = {u for u in server.since(mark) if u.startswith("/metadata/1.")
                           and u not in ("/metadata/1.snapshot.json", "/metadata/1.targets.json")}
            sup.check(python_urls == expected_urls,
                      f"python-tuf asked for exactly the quoted role URLs {sorted(python_urls)}")

            print("-- epbroker-tuf-client: init, download every role's target")
            client = sup.TufClient(client_exe, work, server, "epbroker")
            p = client.init(root_path)
            sup.check(p.returncode == 0, "init exits 0")
            mark = server.mark()
            p = client.download(*[path for _, _, path in ROLES])
            sup.check(p.returncode == 0, "download of the six roles' targets exits 0")
            asked = server.since(mark)
            for name, _, path in ROLES:
                url = f"/metadata/1.{quote(name, safe='')}.json"
                sup.check(asked.count(url) == 1, f"role {name!r} asked for once, as {url}")
                local = client.local_target(path)
                sup.check(os.path.isfile(local) and sup.read_file(local) == contents[path],
                          f"{path!r} saved as {os.path.basename(local)} with its bytes")
            role_urls = {u for u in asked if u.startswith("/metadata/1.")
                         and u not in ("/metadata/1.snapshot.json", "/metadata/1.targets.json")}
            sup.check(role_urls == python_urls,
                      "epbroker asked for the same role URLs as python-tuf")
            odd_target = [u for u in asked if u.startswith("/targets/odd/")]
            sup.check(len(odd_target) == 1 and odd_target[0].endswith(".x%20y%20%C3%A9.txt"),
                      f"target path quoted once in its URL: {odd_target}")

            print("-- the client's metadata directory")
            listing = sorted(os.listdir(client.metadata_dir))
            print(f"    {listing}")
            want = {"root.json", "timestamp.json", "snapshot.json", "targets.json"}
            want |= {f"{quote(name, safe='')}.json" for name, _, _ in ROLES}
            sup.check(set(listing) == want,
                      "one file per role, named quote(name, '') + '.json', nothing else")
            sup.check(all(os.path.isfile(os.path.join(client.metadata_dir, f)) for f in listing),
                      "all plain files directly in the metadata directory")
            outside = sorted(set(os.listdir(work)) - {"1.root.json", "python-client", "py-t",
                                                      "epbroker-metadata", "epbroker-targets"})
            sup.check(not outside, f"nothing written beside the client's directories: {outside}")
            sup.check(sup.read_file(os.path.join(client.metadata_dir, "a%2Fb.json")) !=
                      sup.read_file(os.path.join(client.metadata_dir, "a%252Fb.json")),
                      '"a/b" and "a%2Fb" kept apart')
            sup.check(sup.read_file(os.path.join(client.metadata_dir, "...json")) !=
                      sup.read_file(os.path.join(client.metadata_dir, "%252e%252e.json")),
                      '".." and "%2e%2e" kept apart')

            print("-- a second download trusts the persisted copies")
            mark = server.mark()
            p = client.download(*[path for _, _, path in ROLES])
            sup.check(p.returncode == 0, "second download exits 0")
            again = [u for u in server.since(mark) if u in expected_urls]
            sup.check(not again, f"no role metadata asked again: {again}")

            print("-- a role is trusted for its own paths only")
            p = client.download("ab/evil")
            sup.check(p.returncode == 1 and "not_found" in p.stderr,
                      '"ab/evil", listed only by "..", is not found (a/b is terminating for ab/*)')
        finally:
            server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default=os.environ.get("EPBROKER_TUF_CLIENT"))
    args = ap.parse_args()
    if not args.client:
        print("error: --client (or EPBROKER_TUF_CLIENT) is required", file=sys.stderr)
        return 1
    try:
        scenario(args.client)
    except sup.Failure as e:
        print(f"FAIL: {e}")
        print(f"FAILED after {sup.Checks.count} checks")
        return 1
    except Exception:
        traceback.print_exc()
        print("FAIL: unexpected exception (see traceback above)")
        return 1
    print(f"PASS: {sup.Checks.count} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
