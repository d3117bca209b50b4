#!/usr/bin/env bash
# Repackage Intel's official OpenVINO plugin EP wheel as an epbroker EP package.
#
# Usage: recipe.sh [--pack PUBLISH_BINARY OUTPUT]
#
#   1. fetch:  pip download the pinned wheel into $CACHE/dl/ and check its SHA-256
#              (skipped when the file is already there with the right hash);
#   2. stage:  unpack it into $CACHE/ep-packages/openvino/stage/ as a self-contained
#              tree (lib/ + share/licenses/), every ELF with RPATH $ORIGIN and each
#              library once, named by its SONAME (skipped when stage.stamp matches);
#   3. --pack: PUBLISH_BINARY pack --dir stage --metadata ep.json --output OUTPUT.
#
# $CACHE is ${EPBROKER_CACHE:-$HOME/.cache/epbroker}. Safe to run again and
# concurrently (a lock per recipe); a second run downloads and rewrites nothing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
START=$SECONDS

# --- Pinned input ----------------------------------------------------------------
PYPI_NAME=onnxruntime-ep-openvino
PYPI_VERSION=1.8.1
WHEEL=onnxruntime_ep_openvino-1.8.1-py3-none-manylinux_2_28_x86_64.whl
WHEEL_PLATFORM=manylinux_2_28_x86_64
WHEEL_SHA256=3832643158c8c187fcab6db661cde2a8c06a2b3559d95d0f2411ac0e51c5e924
WHEEL_PKG_DIR=onnxruntime_ep_openvino # the wheel's top-level (Python) package dir

# Bump when the staged layout changes, so existing stages get rebuilt.
RECIPE_VERSION=1

# The plugin EP (the library ORT is given); kept under this, its upstream file name.
EP_LIBRARY=libonnxruntime_providers_openvino_plugin.so
# Libraries staged under their file name = SONAME (what dependents' NEEDED asks for)
# or, for the OpenVINO device plugins that have no SONAME, under the name OpenVINO's
# built-in plugin registry dlopen()s from libopenvino's own directory.
LIBS=(
  libopenvino.so.2641                # OpenVINO runtime (core)
  libopenvino_onnx_frontend.so.2641  # NEEDED by the EP; reads the ONNX subgraphs
  libopenvino_ir_frontend.so.2641    # dlopen()ed by the frontend manager (IR / cached blobs)
  libopenvino_intel_cpu_plugin.so    # device "CPU"
  libopenvino_intel_gpu_plugin.so    # device "GPU" (needs the system OpenCL ICD loader)
  libopenvino_intel_npu_plugin.so    # device "NPU" (needs the system Level Zero loader)
  libopenvino_auto_plugin.so         # virtual devices AUTO / MULTI
  libopenvino_hetero_plugin.so       # virtual device HETERO
  libopenvino_auto_batch_plugin.so   # virtual device BATCH
  libtbb.so.12                       # oneTBB, NEEDED by OpenVINO
  libtbbmalloc.so.2                  # dlopen()ed by libtbb (scalable allocator)
  libtbbbind_2_5.so.3                # dlopen()ed by libtbb (NUMA / hybrid-core topology)
  libhwloc.so.15                     # NEEDED by libtbbbind_2_5
)
# Data files the libraries look for next to themselves.
DATA=(
  cache.json # GPU plugin kernel-tuning cache, read from the GPU plugin's directory
)
# Files of the wheel's package dir that are deliberately left out.
DROP=(
  __init__.py                                        # Python helper
  libonnxruntime_providers_openvino_plugin.so.1      # byte-identical copy of EP_LIBRARY
  libonnxruntime_providers_openvino_plugin.so.1.8.1  # byte-identical copy of EP_LIBRARY
  libtbbmalloc_proxy.so.2                            # malloc replacement for LD_PRELOAD; unused
  third-party-programs.txt                           # -> share/licenses/
)
LICENSE_FILES=(
  "$WHEEL_PKG_DIR/third-party-programs.txt"
  "onnxruntime_ep_openvino-1.8.1.dist-info/METADATA" # carries "License: MIT" + copyright
)
LICENSE_DIR=share/licenses/onnxruntime-ep-openvino
# Shared libraries that may come from the system: the C/C++ runtime every Linux
# process has. Anything else must resolve inside lib/ (see OPTIONAL_SYSTEM).
BASE_SYSTEM_LIBS=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1 "
# Libraries that device drivers provide; only the plugin of that device needs them
# and OpenVINO skips the device when they are missing.
declare -A OPTIONAL_SYSTEM=(
  [libopenvino_intel_gpu_plugin.so]="libOpenCL.so.1"
)

NAME=openvino
# The generic fetch/stage/check/pack steps.
# shellcheck source=ep-packages/wheel_recipe.sh
source "$HERE/../wheel_recipe.sh" "$@"
