#!/usr/bin/env python3
"""Interop: epbroker-tuf-client reads python-tuf repositories signed with every
key type securesystemslib makes, and with keys it cannot use.

Each scenario is a fresh consistent-snapshot repository (python-tuf 7's
Metadata API, keys from securesystemslib's CryptoSigner) with a top-level
target and a target of a delegated role "vendor" (paths vendor/*), served over
loopback HTTP; epbroker-tuf-client runs init, refresh and download of both.
  ecdsa          every role ECDSA P-256 (ecdsa-sha2-nistp256)
  rsa-pss        every role RSA rsassa-pss-sha256
  rsa-pkcs1v15   every role RSA rsa-pkcs1v15-sha256
  mixed          root 2 of 3 keys (ed25519, ecdsa, rsa-pss), signed by the
                 ecdsa and RSA keys only; timestamp ecdsa, snapshot
                 rsa-pkcs1v15, targets rsa-pss, vendor 2 of 2 (ecdsa, RSA)
  mixed-short    the same root signed by its RSA key alone: init refuses it
  unknown-type   root 2 of 3 keys: ed25519, ecdsa and one of a type no client
                 knows ("x-unknown-type"), which "signs" too; the two known keys
                 meet the threshold: everything verifies
  unknown-short  the same root signed by ed25519 and the unknown key only:
                 1 of 2, refused
  unknown-scheme root 2 of 3: ed25519, ecdsa, and an ECDSA P-384 key
                 (ecdsa-sha2-nistp384: securesystemslib signs with it, issue 19
                 does not ask epbroker to verify it), all
                 three signing
  unknown-scheme-short  root signed by ed25519 and the P-384 key: refused
  sigstore-key   vendor 1 of 2: ed25519 and a sigstore-oidc/Fulcio key as
                 RSTUF's CLI writes it (keyval {identity, issuer}, no "public")
python-tuf itself refuses metadata naming a key of unknown type (its Key
parser has no fallback), so those repositories are signed here with
securesystemslib's canonical JSON directly.

Usage: epbroker_client_reads_python_key_types.py [--client PATH] [--only NAME]
       (default: $EPBROKER_TUF_CLIENT)
Exit status: 0 all checks passed, 1 a check failed, 77 python-tuf missing.
"""

import argparse
import hashlib
import os
import sys
import tempfile
import traceback

try:
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import (DelegatedRole, MetaFile, Root, Snapshot, TargetFile, Targets,
                                  Timestamp)

    import interop_support as sup
except ImportError as e:  # pragma: no cover - environment problem
    print(f"SKIP: python-tuf is not importable by {sys.executable}: {e}")
    sys.exit(77)

TOP = "top/file.bin"
VENDOR = "vendor/pkg.bin"


def ed25519():
    return CryptoSigner.generate_ed25519()


def ecdsa():
    return CryptoSigner.generate_ecdsa()


def rsa_pss():
    return CryptoSigner.generate_rsa(scheme="rsassa-pss-sha256")


def rsa_pkcs1v15():
    return CryptoSigner.generate_rsa(scheme="rsa-pkcs1v15-sha256")


def ecdsa_p384():
    from cryptography.hazmat.primitives.asymmetric import ec
    from securesystemslib.signer import SSlibKey

    private = ec.generate_private_key(ec.SECP384R1())
    public = SSlibKey.from_crypto(private.public_key(), scheme="ecdsa-sha2-nistp384")
    return CryptoSigner(private, public)


# A key of a type no client implements, and RSTUF's Sigstore identity key.
UNKNOWN_KEY = {"keytype": "x-unknown-type", "scheme": "x-unknown-scheme",
               "keyval": {"public": "00" * 32}}
UNKNOWN_ID = "f" * 64
SIGSTORE_KEY = {"keytype": "sigstore-oidc", "scheme": "Fulcio",
                "keyval": {"identity": "vendor@example.com",
                           "issuer": "https://github.com/login/oauth"},
                "x-rstuf-key-name": "vendor@example.com"}
SIGSTORE_ID = "e" * 64


def pubdict(signer):
    return signer.public_key.to_dict()


class Scenario:
    """Roles -> (keys: [(keyid, key dict)], threshold, signers: [signer or
    (keyid, sig_hex)]). Written as raw dicts so that any key may appear."""

    def __init__(self, root, timestamp, snapshot, targets, vendor):
        self.roles = {"root": root, "timestamp": timestamp, "snapshot": snapshot,
                      "targets": targets}
        self.vendor = vendor

    def build(self, files):
        contents = {}
        root = Root(expires=sup.expiry(365), consistent_snapshot=True).to_dict()
        root["keys"], root["roles"] = {}, {}
        for name, (keys, threshold, _) in self.roles.items():
            for keyid, key in keys:
                root["keys"][keyid] = key
            root["roles"][name] = {"keyids": [k for k, _ in keys], "threshold": threshold}
        root_bytes = sup.sign_raw(root, self.roles["root"][2])
        files["metadata/1.root.json"] = root_bytes

        def target(path):
            data = f"{path} bytes\n".encode() * 50
            info = TargetFile.from_data(path, data, ["sha256"])
            sup.add_target_file(files, info, data)
            contents[path] = data
            return info

        vkeys, vthreshold, vsigners = self.vendor
        top = Targets(expires=sup.expiry(30), targets={TOP: target(TOP)}).to_dict()
        top["delegations"] = {
            "keys": dict(vkeys),
            "roles": [DelegatedRole("vendor", [k for k, _ in vkeys], vthreshold, False,
                                    paths=["vendor/*"]).to_dict()]}
        vendor = Targets(expires=sup.expiry(30), targets={VENDOR: target(VENDOR)}).to_dict()
        meta = {}
        for name, signed, signers in (("targets", top, self.roles["targets"][2]),
                                      ("vendor", vendor, vsigners)):
            data = sup.sign_raw(signed, signers)
            files[f"metadata/1.{name}.json"] = data
            meta[f"{name}.json"] = MetaFile(1, len(data),
                                            {"sha256": hashlib.sha256(data).hexdigest()})
        snapshot = Snapshot(expires=sup.expiry(7), meta=meta).to_dict()
        sdata = sup.sign_raw(snapshot, self.roles["snapshot"][2])
        files["metadata/1.snapshot.json"] = sdata
        ts = Timestamp(expires=sup.expiry(1), snapshot_meta=MetaFile(
            1, len(sdata), {"sha256": hashlib.sha256(sdata).hexdigest()})).to_dict()
        files["metadata/timestamp.json"] = sup.sign_raw(ts, self.roles["timestamp"][2])
        return root_bytes, contents


def one_type(make):
    """Every role (and vendor) one fresh key of the kind `make` makes."""
    def role():
        s = make()
        return ([(s.public_key.keyid, pubdict(s))], 1, [s])
    return Scenario(role(), role(), role(), role(), role())


def mixed(root_signing):
    ed, ec, rsa = ed25519(), ecdsa(), rsa_pss()
    keys = [(s.public_key.keyid, pubdict(s)) for s in (ed, ec, rsa)]
    by = {"ed25519": ed, "ecdsa": ec, "rsa": rsa}
    ts, sn, tg = ecdsa(), rsa_pkcs1v15(), rsa_pss()
    v1, v2 = ecdsa(), rsa_pkcs1v15()
    return Scenario(
        (keys, 2, [by[n] for n in root_signing]),
        ([(ts.public_key.keyid, pubdict(ts))], 1, [ts]),
        ([(sn.public_key.keyid, pubdict(sn))], 1, [sn]),
        ([(tg.public_key.keyid, pubdict(tg))], 1, [tg]),
        ([(v1.public_key.keyid, pubdict(v1)), (v2.public_key.keyid, pubdict(v2))], 2, [v1, v2]))


def plain_role():
    s = ed25519()
    return ([(s.public_key.keyid, pubdict(s))], 1, [s])


def unknown_type(known_signing):
    ed, ec = ed25519(), ecdsa()
    keys = [(ed.public_key.keyid, pubdict(ed)), (ec.public_key.keyid, pubdict(ec)),
            (UNKNOWN_ID, UNKNOWN_KEY)]
    signers = [(UNKNOWN_ID, "ab" * 64)] + [s for s, on in ((ed, True), (ec, known_signing)) if on]
    return Scenario((keys, 2, signers), plain_role(), plain_role(), plain_role(), plain_role())


def unknown_scheme(ecdsa_signing):
    ed, ec, p384 = ed25519(), ecdsa(), ecdsa_p384()
    keys = [(s.public_key.keyid, pubdict(s)) for s in (ed, ec, p384)]
    signers = [ed, p384] + ([ec] if ecdsa_signing else [])
    return Scenario((keys, 2, signers), plain_role(), plain_role(), plain_role(), plain_role())


def sigstore_key():
    v = ed25519()
    vendor = ([(v.public_key.keyid, pubdict(v)), (SIGSTORE_ID, SIGSTORE_KEY)], 1, [v])
    return Scenario(plain_role(), plain_role(), plain_role(), plain_role(), vendor)


SCENARIOS = {
    "ecdsa": (lambda: one_type(ecdsa), True),
    "rsa-pss": (lambda: one_type(rsa_pss), True),
    "rsa-pkcs1v15": (lambda: one_type(rsa_pkcs1v15), True),
    "mixed": (lambda: mixed(["ecdsa", "rsa"]), True),
    "mixed-short": (lambda: mixed(["rsa"]), False),
    "unknown-type": (lambda: unknown_type(True), True),
    "unknown-short": (lambda: unknown_type(False), False),
    "unknown-scheme": (lambda: unknown_scheme(True), True),
    "unknown-scheme-short": (lambda: unknown_scheme(False), False),
    "sigstore-key": (sigstore_key, True),
}


def run_scenario(client_exe, work, name, make, good):
    print(f"== {name}")
    files = {}
    root_bytes, contents = make().build(files)
    root_path = os.path.join(work, f"{name}.1.root.json")
    sup.write_file(root_path, root_bytes)
    server = sup.DictServer(files)
    try:
        client = sup.TufClient(client_exe, work, server, name)
        p = client.init(root_path)
        if not good:
            sup.check(p.returncode == 1 and "1 of 2 required signatures" in p.stderr,
                      f"{name}: init refuses the root (1 of 2 known keys signed)")
            return
        sup.check(p.returncode == 0, f"{name}: init exits 0")
        p = client.refresh()
        sup.check(p.returncode == 0, f"{name}: refresh exits 0")
        p = client.download(TOP, VENDOR)
        sup.check(p.returncode == 0, f"{name}: download of the top-level and vendor targets exits 0")
        for path, data in contents.items():
            local = client.local_target(path)
            sup.check(os.path.isfile(local) and sup.read_file(local) == data,
                      f"{name}: {path} downloaded with its bytes")
    finally:
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default=os.environ.get("EPBROKER_TUF_CLIENT"))
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    if not args.client:
        print("error: --client (or EPBROKER_TUF_CLIENT) is required", file=sys.stderr)
        return 1
    failed = []
    with tempfile.TemporaryDirectory(prefix="epbroker-keys-") as work:
        for name, (make, good) in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            try:
                run_scenario(args.client, work, name, make, good)
            except sup.Failure as e:
                print(f"FAIL: {e}")
                failed.append(name)
            except Exception:
                traceback.print_exc()
                print(f"FAIL: {name}: unexpected exception (see traceback above)")
                failed.append(name)
    if failed:
        print(f"FAILED scenarios: {', '.join(failed)} ({sup.Checks.count} checks run)")
        return 1
    print(f"PASS: {sup.Checks.count} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
