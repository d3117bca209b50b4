"""libepbroker.so.0's C API (<epbroker/epbroker.h>) through ctypes.

The library is opened on first use (lib()), not at import: `import epbroker` works
on a machine without it, and the first Client() raises LibraryNotFound (an
ImportError and an epbroker.Unavailable) saying what to install. Every function of
epbroker.h is declared here with its argument and result types; opaque handles are
c_void_p. Calls through ctypes.CDLL release the GIL while the C function runs.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import (CFUNCTYPE, POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint16, c_uint32,
                    c_uint64, c_void_p)
from typing import Dict, List, Optional, Sequence, Tuple

from ._errors import LibraryNotFound, error_for

SONAME = "libepbroker.so.0"

#: void (*epbroker_progress_fn)(const epbroker_progress*, void* user)
PROGRESS_FN = CFUNCTYPE(None, c_void_p, c_void_p)

_P, _S, _Z, _I = c_void_p, c_char_p, c_size_t, c_int
_PP = POINTER(c_void_p)  # T** out (also char** out: freed with epbroker_string_free)
_N = None  # void

# name -> (restype, argtypes): the whole of epbroker.h, in its order.
_SIGNATURES: Dict[str, Tuple[object, List[object]]] = {
    # status codes, messages, memory
    "epbroker_status_name": (_S, [_I]),
    "epbroker_last_error_message": (_S, []),
    "epbroker_last_error_bus_name": (_S, []),
    "epbroker_string_free": (_N, [_P]),
    "epbroker_version": (_S, []),
    # enumerations
    "epbroker_policy_name": (_S, [_I]),
    "epbroker_policy_parse": (_I, [_S, POINTER(c_int)]),
    # cancellation
    "epbroker_cancel_new": (_P, []),
    "epbroker_cancel_trigger": (_N, [_P]),
    "epbroker_cancel_is_triggered": (_I, [_P]),
    "epbroker_cancel_free": (_N, [_P]),
    # progress
    "epbroker_progress_job": (_S, [_P]),
    "epbroker_progress_kind": (_S, [_P]),
    "epbroker_progress_target": (_S, [_P]),
    "epbroker_progress_state": (_I, [_P]),
    "epbroker_progress_state_name": (_S, [_P]),
    "epbroker_progress_bytes_done": (c_uint64, [_P]),
    "epbroker_progress_bytes_total": (c_uint64, [_P]),
    # the client
    "epbroker_client_new": (_I, [_S, _PP]),
    "epbroker_client_free": (_N, [_P]),
    # devices
    "epbroker_devices": (_I, [_P, _PP]),
    "epbroker_device_list_size": (_Z, [_P]),
    "epbroker_device_list_get": (_P, [_P, _Z]),
    "epbroker_device_list_free": (_N, [_P]),
    "epbroker_device_id": (_S, [_P]),
    "epbroker_device_type": (_S, [_P]),
    "epbroker_device_vendor_id": (c_uint16, [_P]),
    "epbroker_device_device_id": (c_uint16, [_P]),
    "epbroker_device_vendor": (_S, [_P]),
    "epbroker_device_name": (_S, [_P]),
    "epbroker_device_driver": (_S, [_P]),
    "epbroker_device_driver_version": (_S, [_P]),
    "epbroker_device_bus_path": (_S, [_P]),
    "epbroker_device_discrete": (_I, [_P]),
    "epbroker_device_node": (_S, [_P]),
    "epbroker_device_isa_count": (_Z, [_P]),
    "epbroker_device_isa": (_S, [_P, _Z]),
    "epbroker_device_cores": (c_uint32, [_P]),
    "epbroker_device_threads": (c_uint32, [_P]),
    "epbroker_device_arch": (_S, [_P]),
    # providers
    "epbroker_providers": (_I, [_P, _PP]),
    "epbroker_provider_list_size": (_Z, [_P]),
    "epbroker_provider_list_get": (_P, [_P, _Z]),
    "epbroker_provider_list_free": (_N, [_P]),
    "epbroker_provider_free": (_N, [_P]),
    "epbroker_provider_name": (_S, [_P]),
    "epbroker_provider_kind": (_S, [_P]),
    "epbroker_provider_ep_name_count": (_Z, [_P]),
    "epbroker_provider_ep_name": (_S, [_P, _Z]),
    "epbroker_provider_version": (_S, [_P]),
    "epbroker_provider_vendor": (_S, [_P]),
    "epbroker_provider_state_of": (_I, [_P]),
    "epbroker_provider_state_name": (_S, [_P]),
    "epbroker_provider_device_count": (_Z, [_P]),
    "epbroker_provider_device": (_S, [_P, _Z]),
    "epbroker_provider_size": (c_uint64, [_P]),
    "epbroker_provider_library_path": (_S, [_P]),
    "epbroker_provider_reason": (_S, [_P]),
    "epbroker_provider_remote": (_S, [_P]),
    "epbroker_provider_job": (_S, [_P]),
    "epbroker_provider_ort_min": (_S, [_P]),
    "epbroker_provider_version_count": (_Z, [_P]),
    "epbroker_provider_version_info": (_P, [_P, _Z]),
    "epbroker_provider_update_available": (_S, [_P]),
    "epbroker_provider_held": (_I, [_P]),
    "epbroker_provider_hold_reason": (_S, [_P]),
    "epbroker_version_info_version": (_S, [_P]),
    "epbroker_version_info_role": (_S, [_P]),
    "epbroker_version_info_reason": (_S, [_P]),
    "epbroker_version_info_leases": (c_uint32, [_P]),
    # the daemon's status
    "epbroker_status_get": (_I, [_P, _PP]),
    "epbroker_daemon_status_free": (_N, [_P]),
    "epbroker_daemon_status_version": (_S, [_P]),
    "epbroker_daemon_status_state": (_S, [_P]),
    "epbroker_daemon_status_catalog_revision": (c_uint64, [_P]),
    "epbroker_daemon_status_catalog_expires": (_S, [_P]),
    "epbroker_daemon_status_sessions": (_Z, [_P]),
    "epbroker_daemon_status_job_count": (_Z, [_P]),
    "epbroker_daemon_status_job": (_P, [_P, _Z]),
    "epbroker_job_info_progress": (_P, [_P]),
    "epbroker_job_info_error": (_S, [_P]),
    "epbroker_job_info_error_message": (_S, [_P]),
    # jobs
    "epbroker_ensure_ready": (_I, [_P, _S, PROGRESS_FN, _P, _P, _PP]),
    "epbroker_install": (_I, [_P, _S, _S, _I, PROGRESS_FN, _P, _P, _PP]),
    "epbroker_refresh": (_I, [_P, PROGRESS_FN, _P, _P, POINTER(c_uint64)]),
    # lifecycle
    "epbroker_update": (_I, [_P, POINTER(c_char_p), _Z, _I, PROGRESS_FN, _P, _P, _PP]),
    "epbroker_update_list_size": (_Z, [_P]),
    "epbroker_update_list_get": (_P, [_P, _Z]),
    "epbroker_update_list_free": (_N, [_P]),
    "epbroker_update_change_name": (_S, [_P]),
    "epbroker_update_change_from": (_S, [_P]),
    "epbroker_update_change_to": (_S, [_P]),
    "epbroker_update_change_reason": (_S, [_P]),
    "epbroker_update_change_job": (_S, [_P]),
    "epbroker_hold": (_I, [_P, _S]),
    "epbroker_unhold": (_I, [_P, _S]),
    "epbroker_rollback": (_I, [_P, _S, _PP, _PP]),
    "epbroker_history": (_I, [_P, _S, _PP]),
    "epbroker_history_list_size": (_Z, [_P]),
    "epbroker_history_list_get": (_P, [_P, _Z]),
    "epbroker_history_list_free": (_N, [_P]),
    "epbroker_history_entry_time": (c_int64, [_P]),
    "epbroker_history_entry_uid": (c_uint32, [_P]),
    "epbroker_history_entry_action": (_S, [_P]),
    "epbroker_history_entry_name": (_S, [_P]),
    "epbroker_history_entry_from": (_S, [_P]),
    "epbroker_history_entry_to": (_S, [_P]),
    "epbroker_history_entry_result": (_S, [_P]),
    "epbroker_history_entry_reason": (_S, [_P]),
    "epbroker_gc": (_I, [_P, _PP]),
    "epbroker_removed_list_size": (_Z, [_P]),
    "epbroker_removed_list_get": (_P, [_P, _Z]),
    "epbroker_removed_list_free": (_N, [_P]),
    "epbroker_removed_name": (_S, [_P]),
    "epbroker_removed_version": (_S, [_P]),
    "epbroker_remove": (_I, [_P, _S, _I]),
    "epbroker_reset_remote": (_I, [_P, _S]),
    "epbroker_verify": (_I, [_P, PROGRESS_FN, _P, _P, _PP, POINTER(c_int64)]),
    "epbroker_verify_list_size": (_Z, [_P]),
    "epbroker_verify_list_get": (_P, [_P, _Z]),
    "epbroker_verify_list_free": (_N, [_P]),
    "epbroker_verify_result_name": (_S, [_P]),
    "epbroker_verify_result_version": (_S, [_P]),
    "epbroker_verify_result_ok": (_I, [_P]),
    "epbroker_verify_result_problem": (_S, [_P]),
    # sessions
    "epbroker_session_options_new": (_P, []),
    "epbroker_session_options_free": (_N, [_P]),
    "epbroker_session_options_set_policy": (_N, [_P, _I]),
    "epbroker_session_options_set_ort_version": (_I, [_P, _S]),
    "epbroker_session_options_add_provider": (_I, [_P, _S]),
    "epbroker_session_options_set_download": (_N, [_P, _I]),
    "epbroker_request_session": (_I, [_P, _P, _PP]),
    "epbroker_session_path": (_S, [_P]),
    "epbroker_session_provider_count": (_Z, [_P]),
    "epbroker_session_provider": (_P, [_P, _Z]),
    "epbroker_session_release": (_I, [_P]),
    "epbroker_session_free": (_N, [_P]),
    # models (libepbroker 0.2)
    "epbroker_models": (_I, [_P, _I, _S, _PP]),
    "epbroker_model_list_size": (_Z, [_P]),
    "epbroker_model_list_get": (_P, [_P, _Z]),
    "epbroker_model_list_free": (_N, [_P]),
    "epbroker_model_name": (_S, [_P]),
    "epbroker_model_version": (_S, [_P]),
    "epbroker_model_publisher": (_S, [_P]),
    "epbroker_model_license": (_S, [_P]),
    "epbroker_model_license_url": (_S, [_P]),
    "epbroker_model_description": (_S, [_P]),
    "epbroker_model_task": (_S, [_P]),
    "epbroker_model_state": (_S, [_P]),
    "epbroker_model_reason": (_S, [_P]),
    "epbroker_model_remote": (_S, [_P]),
    "epbroker_model_variant_count": (_Z, [_P]),
    "epbroker_model_variant_info": (_P, [_P, _Z]),
    "epbroker_model_planned": (_S, [_P]),
    "epbroker_model_plan_device": (_S, [_P]),
    "epbroker_model_plan_ep": (_S, [_P]),
    "epbroker_model_plan_reason": (_S, [_P]),
    "epbroker_variant_info_id": (_S, [_P]),
    "epbroker_variant_info_device_count": (_Z, [_P]),
    "epbroker_variant_info_device": (_S, [_P, _Z]),
    "epbroker_variant_info_ep_count": (_Z, [_P]),
    "epbroker_variant_info_ep": (_S, [_P, _Z]),
    "epbroker_variant_info_ort_min": (_S, [_P]),
    "epbroker_variant_info_opset": (c_uint32, [_P]),
    "epbroker_variant_info_size": (c_uint64, [_P]),
    "epbroker_variant_info_installed": (_I, [_P]),
    "epbroker_model_options_new": (_P, []),
    "epbroker_model_options_free": (_N, [_P]),
    "epbroker_model_options_set_variant": (_I, [_P, _S]),
    "epbroker_model_options_set_version": (_I, [_P, _S]),
    "epbroker_model_options_set_policy": (_N, [_P, _I]),
    "epbroker_model_options_set_ort_version": (_I, [_P, _S]),
    "epbroker_model_options_set_download": (_N, [_P, _I]),
    "epbroker_ensure_model": (_I, [_P, _S, _P, PROGRESS_FN, _P, _P, _PP]),
    "epbroker_model_lease_name": (_S, [_P]),
    "epbroker_model_lease_version": (_S, [_P]),
    "epbroker_model_lease_variant": (_S, [_P]),
    "epbroker_model_lease_path": (_S, [_P]),
    "epbroker_model_lease_main": (_S, [_P]),
    "epbroker_model_lease_file_count": (_Z, [_P]),
    "epbroker_model_lease_file": (_S, [_P, _Z]),
    "epbroker_model_lease_device_count": (_Z, [_P]),
    "epbroker_model_lease_device": (_S, [_P, _Z]),
    "epbroker_model_lease_ep_count": (_Z, [_P]),
    "epbroker_model_lease_ep": (_S, [_P, _Z]),
    "epbroker_model_lease_session_path": (_S, [_P]),
    "epbroker_model_lease_active": (_I, [_P]),
    "epbroker_model_lease_release": (_I, [_P]),
    "epbroker_model_lease_free": (_N, [_P]),
    "epbroker_remove_model": (_I, [_P, _S, _S, _S, _I, _PP]),
    "epbroker_removed_model_list_size": (_Z, [_P]),
    "epbroker_removed_model_list_get": (_P, [_P, _Z]),
    "epbroker_removed_model_list_free": (_N, [_P]),
    "epbroker_removed_model_name": (_S, [_P]),
    "epbroker_removed_model_version": (_S, [_P]),
    "epbroker_removed_model_variant": (_S, [_P]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """libepbroker.so.0, opened and declared on first use.

    Raises LibraryNotFound when it cannot be opened or lacks a function.
    """
    global _lib
    # Without the lock once loaded: Ctrl-C's handler (Cancel.cancel) may run on this
    # thread while it holds _lock, and the lock is not reentrant.
    loaded = _lib
    if loaded is not None:
        return loaded
    with _lock:
        if _lib is not None:
            return _lib
        try:
            handle = ctypes.CDLL(SONAME)
        except OSError as e:
            raise LibraryNotFound(
                "cannot load %s (%s): install epbroker's client library (the Debian package "
                "libepbroker0), or point LD_LIBRARY_PATH at a build's client/ folder" % (SONAME, e)
            ) from None
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(handle, name)
            except AttributeError:
                raise LibraryNotFound(
                    "%s has no %s: it is older than this Python package (epbroker's C API); "
                    "install a matching libepbroker0" % (SONAME, name)) from None
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = handle
        return handle


def text(value: Optional[bytes]) -> str:
    """A borrowed C string as str ("" for NULL); undecodable bytes are escaped."""
    return value.decode("utf-8", "backslashreplace") if value else ""


def arg(value: Optional[str]) -> Optional[bytes]:
    """A str argument as a C string (None stays NULL)."""
    return None if value is None else value.encode("utf-8")


def check(status: int) -> None:
    """Raises the exception for `status` (with this thread's last message) unless OK."""
    if status != 0:
        handle = lib()
        raise error_for(status, text(handle.epbroker_last_error_message()),
                        text(handle.epbroker_last_error_bus_name()))


def take_string(ptr: Optional[int]) -> str:
    """A `char **out` string as str, freed with epbroker_string_free ("" for NULL)."""
    if not ptr:
        return ""
    try:
        return text(ctypes.string_at(ptr))
    finally:
        lib().epbroker_string_free(ptr)


def names_array(names: Sequence[str]):
    """A `const char* const*` array of `names` (kept alive by the caller)."""
    array = (c_char_p * max(len(names), 1))()
    for i, name in enumerate(names):
        array[i] = name.encode("utf-8")
    return array
