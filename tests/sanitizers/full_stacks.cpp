// SPDX-License-Identifier: Apache-2.0
// Linked, in a build with -DEPBROKER_SANITIZE=address..., into every program that
// loads ONNX Runtime (epbroker-run and the executables of tests/ort and
// tests/client-ort; CMakeLists.txt): full allocation stacks in those processes only.
//
// ORT 1.30 (stripped, no frame pointers) leaks 14 bytes per OrtEnv (lsan.supp says
// where). ASan's fast unwinder stops at the first ORT frame, so that leak's stack
// would hold no name a suppression could match but the whole library, and a leak in
// our own code that ORT calls (test-ep, libepbroker_ep.so's factories) has an ORT
// frame on its stack too: `leak:libonnxruntime.so.1` would hide it. The slow
// unwinder (.eh_frame) reaches the named frame above ORT (Ort::Env::Env), so the
// suppression stays exact. It costs about 4x in these processes; every other process
// keeps the fast unwinder (scripts/test-asan.sh sets neither option, so that these
// defaults are what each program gets).
#include <sanitizer/asan_interface.h>

extern "C" const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0:malloc_context_size=64";
}
