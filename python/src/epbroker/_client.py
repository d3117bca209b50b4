"""Client and Cancel: epbrokerd's client over libepbroker's C API."""

from __future__ import annotations

import os
from ctypes import byref, c_int, c_int64, c_uint64, c_void_p
from typing import Iterable, List, Optional, Sequence, Tuple

from ._errors import InvalidArgument, NoMemory
from ._lib import arg, check, lib, names_array, take_string
from ._session import ModelLease, Session, _Connection
from ._wait import Cancel, ProgressCallback, _ProgressCall
from ._values import (Device, HistoryEntry, ModelInfo, Provider, RemovedModel, RemovedVersion,
                      Status, UpdateChange, VerifyReport, VerifyResult)

POLICIES = ("default", "prefer_cpu", "prefer_gpu", "prefer_npu", "max_performance",
            "max_efficiency", "min_overall_power")


class Client:
    """A client of epbrokerd (org.epbroker.Broker1).

    Connects to `bus_address` ("unix:path=..."), else $EPBROKER_BUS_ADDRESS, else
    the system bus; raises Unavailable if the bus cannot be reached. Does not
    contact the daemon yet. Every method is a synchronous D-Bus round trip; the
    waiting ones (ensure_ready, install, update, refresh, verify, ensure_model)
    block until their jobs end, with the GIL released. One call at a time per Client (calls
    from several threads are serialized); use one Client per thread to overlap.
    """

    def __init__(self, bus_address: Optional[str] = None) -> None:
        L = lib()
        out = c_void_p()
        check(L.epbroker_client_new(arg(bus_address or None), byref(out)))
        self._handle: Optional[int] = out.value
        self._conn = _Connection()
        #: The address asked for ("" = $EPBROKER_BUS_ADDRESS or the system bus).
        self.bus_address = bus_address or os.environ.get("EPBROKER_BUS_ADDRESS", "")

    # ---- plumbing -------------------------------------------------------------

    def _call(self, name: str, *args: object, progress: Optional[_ProgressCall] = None) -> None:
        with self._conn.held():
            if not self._handle:
                raise InvalidArgument(3, "this epbroker.Client is closed")
            if progress is None:
                check(getattr(lib(), name)(self._handle, *args))
            else:
                with progress.sigint():
                    status = getattr(lib(), name)(self._handle, *args)
                progress.finish(status)

    def _list(self, name: str, prefix: str, cls, *args: object) -> list:
        L = lib()
        out = c_void_p()
        try:  # freed also when the call succeeded but its progress callback raised
            self._call(name, *args, byref(out))
            get = getattr(L, prefix + "_get")
            return [cls.from_c(get(out, i)) for i in range(getattr(L, prefix + "_size")(out))]
        finally:
            if out.value:
                getattr(L, prefix + "_free")(out)

    @staticmethod
    def _policy(policy: str) -> int:
        """The epbroker_policy value of `policy` (InvalidArgument for an unknown word)."""
        value = c_int()
        check(lib().epbroker_policy_parse(arg(policy), byref(value)))
        return value.value

    def _provider(self, name: str, *args: object, progress: _ProgressCall) -> Provider:
        out = c_void_p()
        try:  # freed also when the call succeeded but its progress callback raised
            self._call(name, *args, byref(out), progress=progress)
            return Provider.from_c(out.value)
        finally:
            if out.value:
                lib().epbroker_provider_free(out)

    # ---- reading ----------------------------------------------------------------

    def devices(self) -> List[Device]:
        """The devices of this machine, as the daemon sees them."""
        return self._list("epbroker_devices", "epbroker_device_list", Device)

    def providers(self) -> List[Provider]:
        """Every package the catalogs offer or the store holds, with its state."""
        return self._list("epbroker_providers", "epbroker_provider_list", Provider)

    def status(self) -> Status:
        """The daemon's own state (version, catalog, sessions, jobs)."""
        out = c_void_p()
        self._call("epbroker_status_get", byref(out))
        try:
            return Status.from_c(out.value)
        finally:
            lib().epbroker_daemon_status_free(out)

    def history(self, name: Optional[str] = None) -> List[HistoryEntry]:
        """The lifecycle history, oldest first; only package `name`'s if given."""
        return self._list("epbroker_history", "epbroker_history_list", HistoryEntry, arg(name))

    # ---- jobs ------------------------------------------------------------------

    def refresh(self, progress: Optional[ProgressCallback] = None,
                cancel: Optional[Cancel] = None) -> int:
        """Refreshes every catalog and waits; returns the catalog revision."""
        pc = _ProgressCall(progress, cancel)
        revision = c_uint64()
        self._call("epbroker_refresh", pc.fn, None, pc.cancel._handle, byref(revision),
                   progress=pc)
        return int(revision.value)

    def ensure_ready(self, name: str, progress: Optional[ProgressCallback] = None,
                     cancel: Optional[Cancel] = None) -> Provider:
        """Installs package `name` unless ready, waits for its job, and returns the
        provider. `progress` gets the job's state first, every change, and the final
        state. Raises the job's error (Network, VerificationFailed...), the call's
        (NotFound, NotAuthorized, Incompatible...), or Cancelled."""
        pc = _ProgressCall(progress, cancel)
        return self._provider("epbroker_ensure_ready", arg(name), pc.fn, None, pc.cancel._handle,
                              progress=pc)

    def install(self, name: str, version: Optional[str] = None, allow_older: bool = False,
                progress: Optional[ProgressCallback] = None,
                cancel: Optional[Cancel] = None) -> Provider:
        """Installs a version of `name` (None: the newest compatible one) and makes
        it current, waiting like ensure_ready(). An older version than the current
        one needs allow_older."""
        pc = _ProgressCall(progress, cancel)
        return self._provider("epbroker_install", arg(name), arg(version), int(bool(allow_older)),
                              pc.fn, None, pc.cancel._handle, progress=pc)

    def update(self, names: Iterable[str] = (), dry_run: bool = False,
               progress: Optional[ProgressCallback] = None,
               cancel: Optional[Cancel] = None) -> List[UpdateChange]:
        """Moves the named packages (none: every installed one) to their newest
        compatible version, waiting for each job; with dry_run only lists."""
        names = list(names)
        array = names_array(names)
        pc = _ProgressCall(progress, cancel)
        out = c_void_p()
        L = lib()
        try:  # freed also when the call succeeded but its progress callback raised
            self._call("epbroker_update", array, len(names), int(bool(dry_run)), pc.fn, None,
                       pc.cancel._handle, byref(out), progress=pc)
            return [UpdateChange.from_c(L.epbroker_update_list_get(out, i))
                    for i in range(L.epbroker_update_list_size(out))]
        finally:
            if out.value:
                L.epbroker_update_list_free(out)

    def verify(self, progress: Optional[ProgressCallback] = None,
               cancel: Optional[Cancel] = None) -> VerifyReport:
        """Re-hashes every installed version against its manifest (a daemon job)."""
        pc = _ProgressCall(progress, cancel)
        out = c_void_p()
        finished = c_int64()
        L = lib()
        try:  # freed also when the call succeeded but its progress callback raised
            self._call("epbroker_verify", pc.fn, None, pc.cancel._handle, byref(out),
                       byref(finished), progress=pc)
            results = tuple(VerifyResult.from_c(L.epbroker_verify_list_get(out, i))
                            for i in range(L.epbroker_verify_list_size(out)))
        finally:
            if out.value:
                L.epbroker_verify_list_free(out)
        return VerifyReport(results, int(finished.value))

    # ---- lifecycle (admins) ---------------------------------------------------

    def hold(self, name: str) -> None:
        """Updates (manual and automatic) skip `name` until unhold()."""
        self._call("epbroker_hold", arg(name))

    def unhold(self, name: str) -> None:
        """Ends hold()."""
        self._call("epbroker_unhold", arg(name))

    def rollback(self, name: str) -> Tuple[str, str]:
        """Makes the previously current version current again (and holds the
        package); returns (from_version, to_version)."""
        from_v, to_v = c_void_p(), c_void_p()
        self._call("epbroker_rollback", arg(name), byref(from_v), byref(to_v))
        return take_string(from_v.value), take_string(to_v.value)

    def gc(self) -> List[RemovedVersion]:
        """Deletes every version that is neither current nor kept nor leased."""
        return self._list("epbroker_gc", "epbroker_removed_list", RemovedVersion)

    def remove(self, name: str, now: bool = False) -> None:
        """Removes package `name`: leased versions go when their last lease ends;
        with `now`, every version is deleted at once."""
        self._call("epbroker_remove", arg(name), int(bool(now)))

    def reset_remote(self, remote: str) -> None:
        """Drops remote `remote`'s trusted metadata (next refresh starts again)."""
        self._call("epbroker_reset_remote", arg(remote))

    # ---- sessions --------------------------------------------------------------

    def request_session(self, policy: str = "default", providers: Optional[Sequence[str]] = None,
                        ort_version: Optional[str] = None, download: bool = False) -> Session:
        """A lease on the providers selected: `providers` (package names; None =
        every compatible one), ordered by `policy` ("default", "prefer_cpu",
        "prefer_gpu", "prefer_npu", "max_performance", "max_efficiency",
        "min_overall_power"). With `ort_version` each package is granted its newest
        installed version that ONNX Runtime can load. `download` starts installs of
        compatible providers not installed yet (not leased by this session)."""
        L = lib()
        value = self._policy(policy)
        options = L.epbroker_session_options_new()
        if not options:
            raise NoMemory(14, "epbroker_session_options_new: out of memory")
        try:
            L.epbroker_session_options_set_policy(options, value)
            if ort_version:
                check(L.epbroker_session_options_set_ort_version(options, arg(ort_version)))
            for name in providers or ():
                check(L.epbroker_session_options_add_provider(options, arg(name)))
            L.epbroker_session_options_set_download(options, int(bool(download)))
            out = c_void_p()
            self._call("epbroker_request_session", options, byref(out))
            # The Session owns the handle from here (and frees it when collected).
            return Session(out.value, self._conn)
        finally:
            L.epbroker_session_options_free(options)

    # ---- models (libepbroker 0.2) ----------------------------------------------

    def models(self, policy: str = "default", ort_version: str = "") -> List[ModelInfo]:
        """Every model version the trusted catalogs list, newest first per name,
        with the variant a session with `policy` and `ort_version` (the app's ONNX
        Runtime, e.g. onnxruntime.__version__; "" = not checked) gets on this
        machine (ModelInfo.planned). Raises InvalidArgument for an unknown policy
        or a malformed ort_version."""
        return self._list("epbroker_models", "epbroker_model_list", ModelInfo,
                          self._policy(policy), arg(ort_version))

    def ensure_model(self, name: str, variant: str = "", version: str = "",
                     policy: str = "default", ort_version: str = "", download: bool = True,
                     progress: Optional[ProgressCallback] = None,
                     cancel: Optional[Cancel] = None) -> ModelLease:
        """Installs a variant of model `name` unless installed, waiting for its job
        as ensure_ready() does (progress with kind "model", target "NAME/VARIANT";
        Ctrl-C and `cancel` cancel it), then leases it. The variant is `variant`
        (installed whatever this machine has), or the one planned for this machine
        under `policy` and `ort_version`; the version `version`, or the newest
        valid one. Without `download` only an installed variant is leased. Keep
        the ModelLease while onnxruntime uses its files. Raises NotFound (no such
        model, version or variant; without download: not installed),
        Incompatible (no variant fits), VerificationFailed, Busy (installing for
        another caller), NotAuthorized, Cancelled."""
        L = lib()
        value = self._policy(policy)
        options = L.epbroker_model_options_new()
        if not options:
            raise NoMemory(14, "epbroker_model_options_new: out of memory")
        out = c_void_p()
        try:
            check(L.epbroker_model_options_set_variant(options, arg(variant)))
            check(L.epbroker_model_options_set_version(options, arg(version)))
            L.epbroker_model_options_set_policy(options, value)
            check(L.epbroker_model_options_set_ort_version(options, arg(ort_version)))
            L.epbroker_model_options_set_download(options, int(bool(download)))
            pc = _ProgressCall(progress, cancel)
            self._call("epbroker_ensure_model", arg(name), options, pc.fn, None, pc.cancel._handle,
                       byref(out), progress=pc)
        except BaseException:
            if out.value:  # leased, but the progress callback (or Ctrl-C) raised
                self._conn.deferred.append(("epbroker_model_lease_free", out.value))
                self._conn.free_deferred()
            raise
        finally:
            L.epbroker_model_options_free(options)
        # The ModelLease owns the handle from here (and frees it when collected).
        return ModelLease(out.value, self._conn)

    def remove_model(self, name: str, version: str = "", variant: str = "",
                     now: bool = False) -> List[RemovedModel]:
        """Removes the installed variants of model `name` of `version` and
        `variant` ("" = every installed one) and returns them. A leased variant is
        refused with Busy and nothing is removed, unless `now` (apps that opened
        the files keep them open). Files shared with a variant that stays are
        kept. Raises NotFound unless something matches; NotAuthorized."""
        return self._list("epbroker_remove_model", "epbroker_removed_model_list", RemovedModel,
                          arg(name), arg(version), arg(variant), int(bool(now)))

    # ---- lifetime ----------------------------------------------------------------

    def close(self) -> None:
        """Closes the client; its Sessions and ModelLeases keep their leases (and the
        connection)."""
        with self._conn.held():  # also frees the sessions dropped during a call
            handle, self._handle = self._handle, None
            if handle:
                lib().epbroker_client_free(handle)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            try:
                self.close()
            except Exception:  # interpreter shutdown
                pass


def library_version() -> str:
    """libepbroker's version ("0.1.0")."""
    return lib().epbroker_version().decode()
