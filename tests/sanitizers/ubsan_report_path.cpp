// Linked into every target of a GCC build with -DEPBROKER_SANITIZE=...undefined
// (CMakeLists.txt): makes UBSAN_OPTIONS=log_path=... hold when ASan is linked too.
//
// With GCC, -fsanitize=address,undefined loads two runtimes, libasan and libubsan,
// each with its own copy of the report-file code. libubsan applies log_path by calling
// __sanitizer_set_report_path, but that call binds to libasan's copy (loaded first),
// so UBSan's own reports keep going to stderr: for a child process (epbrokerd's
// stderr is the test bus's log) a finding would be seen only as a crash, or not at
// all. This sets libubsan's own report path, found through its handle, before main.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace {

__attribute__((constructor)) void set_ubsan_report_path() {
  const char* options = std::getenv("UBSAN_OPTIONS");
  if (options == nullptr) return;
  // Options are separated by ':' (scripts/test-asan.sh writes them so; a path with
  // ':' in it is not supported here).
  const std::string text = std::string(":") + options;
  const auto at = text.find(":log_path=");
  if (at == std::string::npos) return;
  const auto start = at + 10;
  const std::string path = text.substr(start, text.find(':', start) - start);
  void* ubsan = dlopen("libubsan.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (ubsan == nullptr) return;
  using SetPath = void (*)(const char*);
  // dlsym on the handle: libubsan's own definition, not the one libasan interposes.
  if (auto set = reinterpret_cast<SetPath>(dlsym(ubsan, "__sanitizer_set_report_path"))) {
    set(path.c_str());
  }
  dlclose(ubsan);
}

}  // namespace
