# FindOnnxRuntime
# ---------------
# Finds the ONNX Runtime prepared by scripts/bootstrap.sh, laid out as
#   <root>/include/onnxruntime_c_api.h, onnxruntime_cxx_api.h, onnxruntime_ep_c_api.h, ...
#   <root>/lib/libonnxruntime.so.1 (+ libonnxruntime.so symlink)
#   <root>/VERSION                 (e.g. "1.30.0")
#
# The root is EPBROKER_ORT_ROOT (cache variable, else environment variable), defaulting
# to $EPBROKER_CACHE/onnxruntime, else $HOME/.cache/epbroker/onnxruntime. Only that root
# is searched: a system-wide ORT of another version is never picked up by accident.
#
# Result variables:
#   OnnxRuntime_FOUND, OnnxRuntime_VERSION, OnnxRuntime_API_VERSION (ORT_API_VERSION of
#   the headers), OnnxRuntime_INCLUDE_DIR, OnnxRuntime_LIBRARY
# Imported target:
#   onnxruntime::onnxruntime  (SHARED; include dir is SYSTEM so our -Werror ignores it)

if(DEFINED ENV{EPBROKER_ORT_ROOT} AND NOT "$ENV{EPBROKER_ORT_ROOT}" STREQUAL "")
  set(_ort_default_root "$ENV{EPBROKER_ORT_ROOT}")
elseif(DEFINED ENV{EPBROKER_CACHE} AND NOT "$ENV{EPBROKER_CACHE}" STREQUAL "")
  set(_ort_default_root "$ENV{EPBROKER_CACHE}/onnxruntime")
else()
  set(_ort_default_root "$ENV{HOME}/.cache/epbroker/onnxruntime")
endif()
set(EPBROKER_ORT_ROOT "${_ort_default_root}"
    CACHE PATH "ONNX Runtime root (include/, lib/, VERSION), see scripts/bootstrap.sh")
unset(_ort_default_root)

find_path(OnnxRuntime_INCLUDE_DIR
  NAMES onnxruntime_cxx_api.h
  PATHS "${EPBROKER_ORT_ROOT}/include"
  NO_DEFAULT_PATH)
find_library(OnnxRuntime_LIBRARY
  NAMES libonnxruntime.so.1 onnxruntime
  PATHS "${EPBROKER_ORT_ROOT}/lib"
  NO_DEFAULT_PATH)
mark_as_advanced(OnnxRuntime_INCLUDE_DIR OnnxRuntime_LIBRARY)

unset(OnnxRuntime_VERSION)
if(EXISTS "${EPBROKER_ORT_ROOT}/VERSION")
  file(STRINGS "${EPBROKER_ORT_ROOT}/VERSION" OnnxRuntime_VERSION LIMIT_COUNT 1)
  string(STRIP "${OnnxRuntime_VERSION}" OnnxRuntime_VERSION)
endif()

unset(OnnxRuntime_API_VERSION)
if(OnnxRuntime_INCLUDE_DIR AND EXISTS "${OnnxRuntime_INCLUDE_DIR}/onnxruntime_c_api.h")
  file(STRINGS "${OnnxRuntime_INCLUDE_DIR}/onnxruntime_c_api.h" _ort_api_line
       REGEX "^#define ORT_API_VERSION [0-9]+")
  string(REGEX REPLACE "^#define ORT_API_VERSION ([0-9]+).*" "\\1"
         OnnxRuntime_API_VERSION "${_ort_api_line}")
  unset(_ort_api_line)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OnnxRuntime
  REQUIRED_VARS OnnxRuntime_LIBRARY OnnxRuntime_INCLUDE_DIR
  VERSION_VAR OnnxRuntime_VERSION
  REASON_FAILURE_MESSAGE "run scripts/bootstrap.sh or set EPBROKER_ORT_ROOT (now: ${EPBROKER_ORT_ROOT})")

if(OnnxRuntime_FOUND AND NOT TARGET onnxruntime::onnxruntime)
  add_library(onnxruntime::onnxruntime SHARED IMPORTED)
  set_target_properties(onnxruntime::onnxruntime PROPERTIES
    IMPORTED_LOCATION "${OnnxRuntime_LIBRARY}"
    IMPORTED_SONAME "libonnxruntime.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}")
endif()
