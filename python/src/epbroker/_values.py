"""What the daemon reports, as frozen dataclasses copied out of the C handles.

Each from_c() copies every field from a borrowed C pointer; the caller frees the
handle (or its list) right after, so no value here refers to C memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ._lib import lib, text

#: epbroker_provider_state values, in order.
PROVIDER_STATES = ("ready", "available", "installing", "incompatible", "revoked", "refused",
                   "unknown")
#: epbroker_job_state values, in order.
JOB_STATES = ("queued", "downloading", "verifying", "installing", "done", "failed", "cancelled",
              "unknown")
#: Job states after which nothing changes.
FINAL_JOB_STATES = frozenset(("done", "failed", "cancelled"))


def _word(table: Tuple[str, ...], value: int) -> str:
    return table[value] if 0 <= value < len(table) else table[-1]


def _strings(count_fn, item_fn, handle) -> Tuple[str, ...]:
    return tuple(text(item_fn(handle, i)) for i in range(count_fn(handle)))


@dataclass(frozen=True)
class Device:
    """One device of this machine (Broker1.ListDevices)."""

    id: str  #: stable within a boot: "cpu0", "gpu0"
    type: str  #: "cpu" | "gpu" | "npu"
    vendor_id: int
    device_id: int
    vendor: str
    name: str
    driver: str
    driver_version: str
    bus_path: str  #: PCI address as ORT's pci_bus_id reports it; "" for CPUs
    discrete: bool
    node: str  #: e.g. "/dev/dri/renderD128"; "" if none
    isa: Tuple[str, ...]  #: CPUs only: "avx2", "avx512f", ...
    cores: int  #: CPUs only
    threads: int  #: CPUs only
    arch: str  #: CPUs only: "x86_64"

    @classmethod
    def from_c(cls, d: int) -> "Device":
        L = lib()
        return cls(
            text(L.epbroker_device_id(d)), text(L.epbroker_device_type(d)),
            int(L.epbroker_device_vendor_id(d)), int(L.epbroker_device_device_id(d)),
            text(L.epbroker_device_vendor(d)), text(L.epbroker_device_name(d)),
            text(L.epbroker_device_driver(d)), text(L.epbroker_device_driver_version(d)),
            text(L.epbroker_device_bus_path(d)), bool(L.epbroker_device_discrete(d)),
            text(L.epbroker_device_node(d)),
            _strings(L.epbroker_device_isa_count, L.epbroker_device_isa, d),
            int(L.epbroker_device_cores(d)), int(L.epbroker_device_threads(d)),
            text(L.epbroker_device_arch(d)))


@dataclass(frozen=True)
class VersionInfo:
    """One installed version of a package (Provider.versions)."""

    version: str
    #: why it is kept: "current", "rollback", "older_ort", "staged", "leased",
    #: "revoked", "removing", "unused" (a newer daemon may send other words)
    role: str
    reason: str
    leases: int  #: sessions leasing it now

    @classmethod
    def from_c(cls, v: int) -> "VersionInfo":
        L = lib()
        return cls(text(L.epbroker_version_info_version(v)), text(L.epbroker_version_info_role(v)),
                   text(L.epbroker_version_info_reason(v)),
                   int(L.epbroker_version_info_leases(v)))


@dataclass(frozen=True)
class Provider:
    """One execution-provider package (ListProviders, or one a session considered)."""

    name: str  #: package name, e.g. "openvino"
    kind: str  #: "execution_provider" (a plugin EP library) or "runtime" (ONNX Runtime)
    ep_names: Tuple[str, ...]  #: ORT registration names, e.g. "OpenVINOExecutionProvider"
    version: str
    vendor: str
    #: "ready", "available", "installing", "incompatible", "revoked", "refused", "unknown"
    state: str
    state_name: str  #: the daemon's word for the state, as received
    devices: Tuple[str, ...]  #: ids of the devices it serves (Device.id)
    size: int  #: bytes: installed size when ready, else download size
    library_path: str  #: the EP library to register; ready only
    reason: str  #: why it is unusable (incompatible, or a failed start)
    remote: str  #: the catalog it comes from
    job: str  #: D-Bus path of its install job; installing only
    ort_min: str  #: minimum ONNX Runtime version, when the daemon says
    versions: Tuple[VersionInfo, ...]  #: installed versions, newest first (ListProviders)
    update_available: str  #: a newer compatible version a catalog offers; ""
    held: bool  #: updates skip it
    hold_reason: str

    @property
    def ready(self) -> bool:
        """Installed, with a library to register."""
        return self.state == "ready" and bool(self.library_path)

    @classmethod
    def from_c(cls, p: int) -> "Provider":
        L = lib()
        return cls(
            text(L.epbroker_provider_name(p)), text(L.epbroker_provider_kind(p)),
            _strings(L.epbroker_provider_ep_name_count, L.epbroker_provider_ep_name, p),
            text(L.epbroker_provider_version(p)), text(L.epbroker_provider_vendor(p)),
            _word(PROVIDER_STATES, L.epbroker_provider_state_of(p)),
            text(L.epbroker_provider_state_name(p)),
            _strings(L.epbroker_provider_device_count, L.epbroker_provider_device, p),
            int(L.epbroker_provider_size(p)), text(L.epbroker_provider_library_path(p)),
            text(L.epbroker_provider_reason(p)), text(L.epbroker_provider_remote(p)),
            text(L.epbroker_provider_job(p)), text(L.epbroker_provider_ort_min(p)),
            tuple(VersionInfo.from_c(L.epbroker_provider_version_info(p, i))
                  for i in range(L.epbroker_provider_version_count(p))),
            text(L.epbroker_provider_update_available(p)), bool(L.epbroker_provider_held(p)),
            text(L.epbroker_provider_hold_reason(p)))


@dataclass(frozen=True)
class Progress:
    """A job's progress as a progress callback receives it."""

    job: str  #: D-Bus path of the job
    kind: str  #: "install" | "refresh" | "verify" | "model"
    #: package name (install), "NAME/VARIANT" (model) or "" (refresh, verify)
    target: str
    #: "queued", "downloading", "verifying", "installing", "done", "failed",
    #: "cancelled", "unknown"
    state: str
    state_name: str  #: the daemon's word, as received
    bytes_done: int  #: never goes down within one job
    bytes_total: int  #: 0 until the download starts

    @property
    def final(self) -> bool:
        """done, failed or cancelled."""
        return self.state in FINAL_JOB_STATES

    @property
    def fraction(self) -> float:
        """bytes_done / bytes_total (0.0 while the total is unknown)."""
        return self.bytes_done / self.bytes_total if self.bytes_total else 0.0

    @classmethod
    def from_c(cls, p: int) -> "Progress":
        L = lib()
        return cls(text(L.epbroker_progress_job(p)), text(L.epbroker_progress_kind(p)),
                   text(L.epbroker_progress_target(p)),
                   _word(JOB_STATES, L.epbroker_progress_state(p)),
                   text(L.epbroker_progress_state_name(p)), int(L.epbroker_progress_bytes_done(p)),
                   int(L.epbroker_progress_bytes_total(p)))


@dataclass(frozen=True)
class JobInfo:
    """A job as Status lists it."""

    progress: Progress
    error: str  #: org.epbroker.Error.* name when failed or cancelled
    error_message: str

    @classmethod
    def from_c(cls, j: int) -> "JobInfo":
        L = lib()
        return cls(Progress.from_c(L.epbroker_job_info_progress(j)),
                   text(L.epbroker_job_info_error(j)), text(L.epbroker_job_info_error_message(j)))


@dataclass(frozen=True)
class Status:
    """The daemon's own state."""

    version: str  #: epbrokerd's version
    daemon_state: str  #: "idle" | "busy" | "stopping"
    catalog_revision: int  #: highest trusted snapshot version; 0 before a refresh
    catalog_expires: str  #: "YYYY-MM-DDTHH:MM:SSZ", or ""
    sessions: int  #: live sessions of every client
    jobs: Tuple[JobInfo, ...]  #: running jobs and the most recent finished ones

    @classmethod
    def from_c(cls, s: int) -> "Status":
        L = lib()
        return cls(text(L.epbroker_daemon_status_version(s)),
                   text(L.epbroker_daemon_status_state(s)),
                   int(L.epbroker_daemon_status_catalog_revision(s)),
                   text(L.epbroker_daemon_status_catalog_expires(s)),
                   int(L.epbroker_daemon_status_sessions(s)),
                   tuple(JobInfo.from_c(L.epbroker_daemon_status_job(s, i))
                         for i in range(L.epbroker_daemon_status_job_count(s))))


@dataclass(frozen=True)
class UpdateChange:
    """One package Client.update() considered."""

    name: str
    from_version: str  #: the current version before
    to_version: str  #: the version it moves to; equal to from_version when left alone
    reason: str
    job: str  #: D-Bus path of the install job; "" when none was started

    @classmethod
    def from_c(cls, u: int) -> "UpdateChange":
        L = lib()
        return cls(text(L.epbroker_update_change_name(u)), text(L.epbroker_update_change_from(u)),
                   text(L.epbroker_update_change_to(u)), text(L.epbroker_update_change_reason(u)),
                   text(L.epbroker_update_change_job(u)))


@dataclass(frozen=True)
class HistoryEntry:
    """One entry of the lifecycle history."""

    time: int  #: unix seconds (UTC)
    uid: int  #: the caller's uid; 0 also for the daemon's own work
    action: str  #: "install", "update", "rollback", "remove", "gc", "hold", ...
    name: str
    from_version: str
    to_version: str
    result: str  #: "ok", or the error's short name ("Network", ...)
    reason: str

    @classmethod
    def from_c(cls, h: int) -> "HistoryEntry":
        L = lib()
        return cls(int(L.epbroker_history_entry_time(h)), int(L.epbroker_history_entry_uid(h)),
                   text(L.epbroker_history_entry_action(h)), text(L.epbroker_history_entry_name(h)),
                   text(L.epbroker_history_entry_from(h)), text(L.epbroker_history_entry_to(h)),
                   text(L.epbroker_history_entry_result(h)),
                   text(L.epbroker_history_entry_reason(h)))


@dataclass(frozen=True)
class RemovedVersion:
    """One version Client.gc() deleted."""

    name: str
    version: str

    @classmethod
    def from_c(cls, r: int) -> "RemovedVersion":
        L = lib()
        return cls(text(L.epbroker_removed_name(r)), text(L.epbroker_removed_version(r)))


@dataclass(frozen=True)
class VerifyResult:
    """One installed version, as Client.verify() found it."""

    name: str
    version: str
    ok: bool
    problem: str  #: what is wrong when not ok

    @classmethod
    def from_c(cls, v: int) -> "VerifyResult":
        L = lib()
        return cls(text(L.epbroker_verify_result_name(v)),
                   text(L.epbroker_verify_result_version(v)),
                   bool(L.epbroker_verify_result_ok(v)), text(L.epbroker_verify_result_problem(v)))


@dataclass(frozen=True)
class VerifyReport:
    """One verification of the store (Client.verify())."""

    results: Tuple[VerifyResult, ...]
    #: when that verification ended (unix seconds): earlier than the call when the
    #: daemon answered with its latest result
    finished: int


@dataclass(frozen=True)
class ModelVariant:
    """One variant of a model (ModelInfo.variants): files built for some devices or
    EPs, or for any (devices and eps empty)."""

    id: str  #: e.g. "fp32", "int8-npu"
    devices: Tuple[str, ...]  #: device types it is built for ("npu"); empty = any
    eps: Tuple[str, ...]  #: EP names it is built for; empty = any
    ort_min: str  #: minimum ONNX Runtime version
    opset: int  #: the ONNX opset of its main file
    size: int  #: bytes: the sum of its files
    installed: bool  #: the store has it (of this version)

    @classmethod
    def from_c(cls, v: int) -> "ModelVariant":
        L = lib()
        return cls(text(L.epbroker_variant_info_id(v)),
                   _strings(L.epbroker_variant_info_device_count, L.epbroker_variant_info_device,
                            v),
                   _strings(L.epbroker_variant_info_ep_count, L.epbroker_variant_info_ep, v),
                   text(L.epbroker_variant_info_ort_min(v)), int(L.epbroker_variant_info_opset(v)),
                   int(L.epbroker_variant_info_size(v)), bool(L.epbroker_variant_info_installed(v)))


@dataclass(frozen=True)
class ModelInfo:
    """One model version the trusted catalogs list (Client.models()), with the
    variant this machine gets under the policy and ONNX Runtime version asked."""

    name: str
    version: str
    publisher: str
    license: str  #: an SPDX id, e.g. "Apache-2.0"
    license_url: str
    description: str
    task: str  #: e.g. "image-classification"
    #: "available", or "refused" (never installable: see reason); a newer daemon may
    #: send other words
    state: str
    reason: str  #: refused only
    remote: str  #: the catalog it comes from
    variants: Tuple[ModelVariant, ...]
    planned: str  #: the variant this machine gets; "" when none fits
    plan_device: str  #: on which device (Device.id)
    plan_ep: str  #: through which EP
    plan_reason: str  #: why (or why none fits)

    @classmethod
    def from_c(cls, m: int) -> "ModelInfo":
        L = lib()
        return cls(
            text(L.epbroker_model_name(m)), text(L.epbroker_model_version(m)),
            text(L.epbroker_model_publisher(m)), text(L.epbroker_model_license(m)),
            text(L.epbroker_model_license_url(m)), text(L.epbroker_model_description(m)),
            text(L.epbroker_model_task(m)), text(L.epbroker_model_state(m)),
            text(L.epbroker_model_reason(m)), text(L.epbroker_model_remote(m)),
            tuple(ModelVariant.from_c(L.epbroker_model_variant_info(m, i))
                  for i in range(L.epbroker_model_variant_count(m))),
            text(L.epbroker_model_planned(m)), text(L.epbroker_model_plan_device(m)),
            text(L.epbroker_model_plan_ep(m)), text(L.epbroker_model_plan_reason(m)))


@dataclass(frozen=True)
class RemovedModel:
    """One installed model variant Client.remove_model() removed."""

    name: str
    version: str
    variant: str

    @classmethod
    def from_c(cls, r: int) -> "RemovedModel":
        L = lib()
        return cls(text(L.epbroker_removed_model_name(r)),
                   text(L.epbroker_removed_model_version(r)),
                   text(L.epbroker_removed_model_variant(r)))
