"""Brokered execution providers in this process's ONNX Runtime (the onnxruntime
package): the Python counterpart of <epbroker/ort.hpp>.

    import onnxruntime as ort
    from epbroker.onnxruntime import ensure_and_register, session_options

    with ensure_and_register(policy="max_performance") as lease:
        session = ort.InferenceSession("model.onnx", session_options("max_performance"))
        outputs = session.run(None, inputs)

ensure_and_register() installs every provider compatible with this machine and
this ONNX Runtime that is missing (with progress), takes a lease (a Session) and
registers each leased execution provider with
onnxruntime.register_execution_provider_library(). What cannot be installed or
registered is reported in Lease.results, never raised. Registration is for the
whole process and idempotent: a provider ORT already has (registered by an earlier
call, or by the application itself; by library, or by EP name) is skipped as
"already_registered".
Packages of kind "runtime" (ONNX Runtime itself) are never registered.

Keep the Lease while ORT sessions use its providers: it keeps their files.

model_session() does the same and opens a model from the broker's catalogs
(Client.ensure_model) in an InferenceSession:

    session, lease = model_session("tiny-net", policy="max_performance")
    with lease:
        outputs = session.run(None, inputs)
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ._client import Cancel, Client
from ._session import ModelLease, Session
from ._errors import Cancelled, Error, InvalidArgument
from ._progress import ProgressArg, resolve
from ._values import Provider

if TYPE_CHECKING:  # pragma: no cover
    import onnxruntime as _ort

__all__ = ["ensure_and_register", "register_providers", "session_options", "ep_devices",
           "model_session", "Lease", "ProviderResult", "NEEDS_ORT"]

#: How the daemon's reason starts when no installed version suits the app's ORT.
NEEDS_ORT = "needs ONNX Runtime"

# What this module registered: package name -> canonical library path. One
# onnxruntime environment per process, so one record per process.
_registered: Dict[str, str] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class ProviderResult:
    """What ensure_and_register() did with one provider."""

    name: str  #: package name (also the ORT registration name)
    ep_names: Tuple[str, ...]  #: EPs the library provides, e.g. ("OpenVINOExecutionProvider",)
    library_path: str  #: the library (canonical); "" when there was none
    version: str
    outcome: str  #: "registered" | "skipped"
    #: "" when registered; else "already_registered", "ort_too_old", "incompatible",
    #: "not_ready", "install_failed", "registration_failed", "runtime_package",
    #: "unknown_kind" (the C++ glue's SkipCode names, plus already_registered)
    code: str
    reason: str  #: for people: what happened and what to do


class Lease:
    """The outcome of ensure_and_register(): the Session (lease) and what was
    registered; from model_session() also the ModelLease (`model`). A context
    manager; release() ends the leases (idempotent). The providers stay registered
    in ORT; sessions created before keep working."""

    def __init__(self, session: Session, results: List[ProviderResult], ort_version: str,
                 model: Optional[ModelLease] = None) -> None:
        self.session = session
        self.results = results
        self.ort_version = ort_version  #: the onnxruntime version that was checked
        self.model = model  #: the model's lease (model_session()); None otherwise

    @property
    def registered(self) -> List[ProviderResult]:
        """Providers registered by this call."""
        return [r for r in self.results if r.outcome == "registered"]

    @property
    def skipped(self) -> List[ProviderResult]:
        """Providers not registered by this call, with the reason."""
        return [r for r in self.results if r.outcome == "skipped"]

    @property
    def usable(self) -> List[ProviderResult]:
        """Providers ORT has now: registered by this call or already before."""
        return [r for r in self.results
                if r.outcome == "registered" or r.code == "already_registered"]

    @property
    def ep_names(self) -> List[str]:
        """The EP names of usable(), for SessionOptions.add_provider_for_devices."""
        return [n for r in self.usable for n in r.ep_names]

    def release(self) -> None:
        """Ends the lease (Session.release()), and the model's (ModelLease.release())."""
        try:
            if self.model is not None:
                self.model.release()
        finally:
            self.session.release()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        model = "" if self.model is None else " model=%s/%s" % (self.model.name,
                                                                self.model.variant)
        return "<epbroker.onnxruntime.Lease registered=%s skipped=%s%s>" % (
            [r.name for r in self.registered], [(r.name, r.code) for r in self.skipped], model)


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError("epbroker.onnxruntime needs the onnxruntime package "
                          "(pip install 'epbroker[onnxruntime]'): %s" % e) from e
    return onnxruntime


def parse_version(text: str) -> Optional[Tuple[int, int, int]]:
    """"1.30.0", "1.29", "1.31.0-dev" -> (1, 30, 0); None when unreadable (as the C++ glue)."""
    m = re.fullmatch(r"(\d+(?:\.\d+){0,3})([-+].*)?", text or "")
    if not m:
        return None
    parts = [int(x) for x in m.group(1).split(".")][:3]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def _canonical(path: str) -> str:
    return os.path.realpath(path) if path and os.path.exists(path) else path


def ep_devices(ep_name: Optional[str] = None) -> List["_ort.OrtEpDevice"]:
    """ORT's EP devices (onnxruntime.get_ep_devices()), only `ep_name`'s if given:
    what SessionOptions.add_provider_for_devices(devices, options) takes."""
    devices = _onnxruntime().get_ep_devices()
    return [d for d in devices if ep_name is None or d.ep_name == ep_name]


def _register_one(ort: Any, p: Provider) -> ProviderResult:
    library = _canonical(p.library_path)

    def result(outcome: str, code: str, reason: str) -> ProviderResult:
        return ProviderResult(p.name, p.ep_names, library, p.version, outcome, code, reason)

    already = result("skipped", "already_registered",
                     "already registered in this process's ONNX Runtime (%s)" % library)
    with _lock:
        # Registered by an earlier call (by name or library), or by the app itself.
        if _registered.get(p.name) == library or library in _registered.values():
            return already
        devices = ort.get_ep_devices()
        libraries = [_canonical(dict(d.ep_metadata).get("library_path", "")) for d in devices]
        if library in libraries:
            return already
        # Another library (or ORT itself) offers one of its EPs: a second EP of
        # that name would be ambiguous, so the one ORT has stays.
        for d, other in zip(devices, libraries):
            if d.ep_name in p.ep_names:
                return result("skipped", "already_registered",
                              "ONNX Runtime already has %s (%s): not registered again" % (
                                  d.ep_name, other or "built into ONNX Runtime"))
        try:
            ort.register_execution_provider_library(p.name, p.library_path)
        except Exception as e:  # onnxruntime raises its own Fail/RuntimeException
            if "already registered" in str(e):  # the name is taken: nothing doubled
                return result("skipped", "already_registered",
                              "ONNX Runtime already has a library registered as '%s'" % p.name)
            return result("skipped", "registration_failed",
                          "ONNX Runtime could not load %s: %s" % (p.library_path, e))
        _registered[p.name] = library
    return result("registered", "", "")


def register_providers(session: Session, ort_version: Optional[str] = None) -> List[ProviderResult]:
    """Registers every ready execution provider of `session` in this process's
    ONNX Runtime, after checking `ort_version` (None: onnxruntime.__version__)
    against each one's ort_min. One result per provider the session lists; never
    raises for a provider. Raises InvalidArgument if the version is unreadable."""
    ort = _onnxruntime()
    app = ort_version or ort.__version__
    app_v = parse_version(app)
    if app_v is None:
        raise InvalidArgument(3, "cannot read this application's ONNX Runtime version '%s'" % app)
    out: List[ProviderResult] = []
    for p in session.providers:
        def skip(code: str, reason: str) -> None:
            out.append(ProviderResult(p.name, p.ep_names, p.library_path, p.version, "skipped",
                                      code, reason))

        too_old = ("needs ONNX Runtime >= %s, this app has %s: update the app's ONNX Runtime, "
                   "or use another provider" % (p.ort_min, app))
        need = parse_version(p.ort_min)
        if p.kind == "runtime":
            skip("runtime_package", "ONNX Runtime %s itself (kind runtime), not a plugin EP: "
                 "the onnxruntime package brings its own" % p.version)
        elif p.kind != "execution_provider":
            skip("unknown_kind", "package kind '%s' is not known to this app" % p.kind)
        elif p.state == "incompatible" and NEEDS_ORT in p.reason:
            skip("ort_too_old", too_old if need and app_v < need else
                 p.reason + ": update the app's ONNX Runtime, or use another provider")
        elif p.state == "incompatible":
            skip("incompatible", p.reason or "incompatible")
        elif p.ort_min and need is None:
            skip("ort_too_old", "cannot read its ort_min '%s'" % p.ort_min)
        elif need is not None and app_v < need:
            skip("ort_too_old", too_old)
        elif not p.ready:
            skip("not_ready", p.reason or (
                "still installing (job %s); wait with Client.ensure_ready()" % p.job
                if p.state == "installing" else
                "not installed (%s): install it with Client.ensure_ready(%r) or "
                "`epbrokerctl install %s`" % (p.state_name, p.name, p.name)))
        else:
            out.append(_register_one(ort, p))
    return out


def ensure_and_register(policy: str = "max_performance", providers: Optional[Sequence[str]] = None,
                        install: bool = True, progress: ProgressArg = None,
                        client: Optional[Client] = None,
                        cancel: Optional[Cancel] = None) -> Lease:
    """Makes every execution provider compatible with this machine and this
    onnxruntime ready (installing what is missing when `install`), takes a lease
    ordered by `policy`, and registers the leased providers in onnxruntime.

    providers: package names (None = every compatible one). progress: None = a
    progress bar on stderr if it is a terminal, False = silent, or a callable that
    receives epbroker.Progress. client: a Client to use (None = a new one on
    $EPBROKER_BUS_ADDRESS or the system bus). A provider that cannot be installed
    or registered is reported in Lease.results. Raises epbroker.Error when the
    broker cannot be used at all (Unavailable, NotAuthorized for the session...),
    Cancelled when `cancel` fired, and what the progress callback raised
    (KeyboardInterrupt: the install job is cancelled first)."""
    ort = _onnxruntime()
    app = ort.__version__
    app_v = parse_version(app)
    on_progress = resolve(progress)
    own = client is None
    client = Client() if own else client
    try:
        early: Dict[str, ProviderResult] = {}  # install failures: the better reason
        for p in client.providers():
            if providers and p.name not in providers:
                continue  # an empty list, like None, means every compatible one
            if p.kind != "execution_provider" or p.state in ("incompatible", "refused"):
                continue  # the session says why; a refused name is never installed
            need = parse_version(p.ort_min)
            if app_v and need and app_v < need:
                continue  # register_providers says why; nothing downloaded
            if p.state == "ready" or not install:
                continue
            try:
                client.ensure_ready(p.name, on_progress, cancel)
            except Error as e:
                if isinstance(e, Cancelled) and cancel is not None and cancel.cancelled:
                    raise
                early[p.name] = ProviderResult(
                    p.name, p.ep_names, "", p.version, "skipped", "install_failed",
                    "installing failed (%s): %s" % (e.status_name, e.message))
        session = client.request_session(policy, providers, app if app_v else None)
    finally:
        if own:
            client.close()  # the session keeps the connection (and the lease)
    results = [r if r.outcome == "registered" or r.name not in early else early[r.name]
               for r in register_providers(session, app)]
    listed = {r.name for r in results}
    results += [r for name, r in early.items() if name not in listed]
    return Lease(session, results, app)


def model_session(name: str, policy: str = "max_performance",
                  providers: Optional[Sequence[str]] = None, *, variant: str = "",
                  version: str = "", install: bool = True, progress: ProgressArg = None,
                  client: Optional[Client] = None,
                  cancel: Optional[Cancel] = None) -> Tuple["_ort.InferenceSession", Lease]:
    """Model `name` from the broker's catalogs, in an onnxruntime.InferenceSession
    on the brokered execution providers.

    ensure_and_register(policy, providers, install, progress, client, cancel),
    then Client.ensure_model(name, variant, version, policy, this onnxruntime's
    version, download=install) with the same progress and cancel, then an
    InferenceSession of the leased variant's main file with
    session_options(policy). Returns (session, lease): lease.model is the
    ModelLease; keep the lease while the session runs (release() ends both
    leases). Raises what ensure_and_register() and Client.ensure_model() raise
    (after releasing what was leased), and onnxruntime's error when the file
    cannot be loaded."""
    ort = _onnxruntime()
    own = client is None
    client = Client() if own else client
    try:
        lease = ensure_and_register(policy, providers, install, progress, client, cancel)
        try:
            lease.model = client.ensure_model(name, variant, version, policy, ort.__version__,
                                              install, resolve(progress), cancel)
            session = ort.InferenceSession(lease.model.main, session_options(policy))
        except BaseException:
            try:
                lease.release()
            except Error:
                pass  # the first error is the one to report
            raise
    finally:
        if own:
            client.close()  # the leases keep the connection
    return session, lease


def session_options(policy: str = "max_performance") -> "_ort.SessionOptions":
    """An onnxruntime.SessionOptions on which ORT picks the EP devices by `policy`
    (SessionOptions.set_provider_selection_policy with the
    OrtExecutionProviderDevicePolicy of the same name). For an explicit choice use
    SessionOptions.add_provider_for_devices(ep_devices("EpName"), {}) instead."""
    ort = _onnxruntime()
    try:
        value = ort.OrtExecutionProviderDevicePolicy.__members__[policy.upper()]
    except KeyError:
        raise InvalidArgument(3, "unknown policy '%s' (one of %s)" % (
            policy, ", ".join(m.lower() for m in ort.OrtExecutionProviderDevicePolicy.__members__)))
    options = ort.SessionOptions()
    options.set_provider_selection_policy(value)
    return options
