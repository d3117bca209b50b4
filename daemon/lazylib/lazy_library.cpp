#include "daemon/lazylib/lazy_library.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace epbrokerd::lazylib {
namespace {

[[noreturn]] void fatal(const char* what, const char* soname, const char* name) {
  const char* why = dlerror();
  std::fprintf(stderr, "epbrokerd: cannot %s %s%s%s: %s\n", what, name ? name : "",
               name ? " in " : "", soname, why ? why : "unknown error");
  std::abort();
}

}  // namespace

void* LazyLibrary::symbol(const char* name) {
  std::call_once(once_, [this] {
    // RTLD_NOW: every symbol bound at once, so nothing fails later mid-install.
    handle_ = dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) fatal("load", soname_, nullptr);
  });
  void* address = dlsym(handle_, name);
  if (address == nullptr) fatal("find", soname_, name);
  return address;
}

}  // namespace epbrokerd::lazylib
