#!/usr/bin/env bash
# Repackage Microsoft's official WebGPU plugin EP wheel as an epbroker EP package.
#
# Usage: recipe.sh [--pack PUBLISH_BINARY OUTPUT]
#
#   1. fetch:  pip download the pinned wheel into $CACHE/dl/ and check its SHA-256
#              (skipped when the file is already there with the right hash);
#   2. stage:  unpack it into $CACHE/ep-packages/webgpu/stage/ as a self-contained
#              tree (lib/ + share/licenses/), the EP library with RPATH $ORIGIN
#              (skipped when stage.stamp matches);
#   3. --pack: PUBLISH_BINARY pack --dir stage --metadata ep.json --output OUTPUT.
#
# $CACHE is ${EPBROKER_CACHE:-$HOME/.cache/epbroker}. Safe to run again and
# concurrently (a lock per recipe); a second run downloads and rewrites nothing.
#
# At run time the EP dlopen()s the system Vulkan loader (libvulkan.so.1), which needs
# a Vulkan driver (ICD) for the GPU; neither is part of the package (ep.json
# "requires" says so).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
START=$SECONDS

# --- Pinned input ----------------------------------------------------------------
PYPI_NAME=onnxruntime-ep-webgpu
PYPI_VERSION=0.4.0
WHEEL=onnxruntime_ep_webgpu-0.4.0-py3-none-manylinux_2_28_x86_64.whl
WHEEL_PLATFORM=manylinux_2_28_x86_64
WHEEL_SHA256=5d8c961eda91a88961cad1fb7621f389f006b18497d6ea9ecf96f729f066cbfb
WHEEL_PKG_DIR=onnxruntime_ep_webgpu # the wheel's top-level (Python) package dir

# Bump when the staged layout changes, so existing stages get rebuilt.
RECIPE_VERSION=1

# The plugin EP (the library ORT is given). It has no SONAME and needs only the
# C/C++ runtime: Dawn and its Vulkan backend are linked in statically.
EP_LIBRARY=libonnxruntime_providers_webgpu.so
LIBS=()
DATA=()
# Files of the wheel's package dir that are deliberately left out.
DROP=(
  __init__.py # Python helper
  README.md   # the wheel's description (Python usage)
)
LICENSE_FILES=(
  "onnxruntime_ep_webgpu-0.4.0.dist-info/licenses/LICENSE"
  "onnxruntime_ep_webgpu-0.4.0.dist-info/licenses/ThirdPartyNotices.txt"
)
LICENSE_DIR=share/licenses/onnxruntime-ep-webgpu
# Shared libraries that may come from the system: the C/C++ runtime every Linux
# process has. Anything else must resolve inside lib/ (see OPTIONAL_SYSTEM).
BASE_SYSTEM_LIBS=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1 "
# NEEDED entries that device drivers provide (none: libvulkan.so.1 is dlopen()ed).
declare -A OPTIONAL_SYSTEM=()

NAME=webgpu
# The generic fetch/stage/check/pack steps.
# shellcheck source=ep-packages/wheel_recipe.sh
source "$HERE/../wheel_recipe.sh" "$@"
