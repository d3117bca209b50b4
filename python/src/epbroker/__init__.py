"""epbroker: ONNX Runtime plugin execution providers from epbrokerd, for Python.

A pure-Python client of libepbroker.so.0 (its C API, through ctypes):

    import epbroker
    with epbroker.Client() as client:
        provider = client.ensure_ready("openvino")      # installs if missing
        with client.request_session(policy="max_performance") as session:
            for p in session.ready_providers: print(p.name, p.library_path)
        with client.ensure_model("tiny-net") as model:  # a catalog's model, leased
            print(model.main)

For ONNX Runtime itself see epbroker.onnxruntime (ensure_and_register) and the
sample app `python -m epbroker.run`. Documentation: docs/python.md.
"""

from ._client import POLICIES, Cancel, Client, ProgressCallback, library_version
from ._session import ModelLease, Session
from ._errors import (STATUS_CLASSES, Busy, Cancelled, DiskFull, Error, Incompatible, Internal,
                      InvalidArgument, LibraryNotFound, Network, NoMemory, NotAuthorized, NotFound,
                      Protocol, Timeout, Unavailable, VerificationFailed)
from ._progress import ProgressBar, default_progress
from ._values import (Device, HistoryEntry, JobInfo, ModelInfo, ModelVariant, Progress, Provider,
                      RemovedModel, RemovedVersion, Status, UpdateChange, VerifyReport,
                      VerifyResult, VersionInfo)

__version__ = "0.1.0"

__all__ = [
    "__version__", "Client", "Session", "ModelLease", "Cancel", "ProgressCallback", "POLICIES",
    "library_version", "ProgressBar", "default_progress",
    # errors
    "Error", "NotFound", "NotAuthorized", "InvalidArgument", "Incompatible",
    "VerificationFailed", "Network", "Busy", "Cancelled", "Unavailable", "Timeout", "Protocol",
    "DiskFull", "Internal", "NoMemory", "LibraryNotFound", "STATUS_CLASSES",
    # values
    "Device", "Provider", "VersionInfo", "Progress", "Status", "JobInfo", "UpdateChange",
    "HistoryEntry", "RemovedVersion", "VerifyResult", "VerifyReport", "ModelInfo", "ModelVariant",
    "RemovedModel",
]
