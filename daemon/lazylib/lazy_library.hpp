// Shared libraries that epbrokerd loads on first use instead of at start-up.
//
// An idle epbrokerd answers ListDevices, ListProviders and RequestSession from
// what it read at start-up; only refreshes, installs and verification fetch,
// extract or hash. libcurl, libarchive and OpenSSL's libcrypto (with the ~30
// libraries they pull in: TLS, Kerberos, LDAP, ICU, ...) are about 6.5 MB of
// the idle daemon's resident memory, so epbrokerd does not link them: the
// stubs beside this file define each of their functions that the daemon calls,
// with its exact prototype, and forward to the real one, which they look up on
// the first call (dlopen by SONAME, dlsym). The build checks that epbrokerd
// has no DT_NEEDED entry for them (check_not_needed.cmake), so a function used
// without a stub fails the build rather than loading the library at start-up.
//
// A library that cannot be loaded is fatal (message on stderr, abort()): the
// package depends on these libraries, so this is a broken installation, and
// the store keeps every install atomic across the crash.
#pragma once

#include <mutex>

namespace epbrokerd::lazylib {

class LazyLibrary {
 public:
  // `soname`, e.g. "libcurl.so.4"; nothing is loaded until symbol().
  explicit constexpr LazyLibrary(const char* soname) : soname_(soname) {}

  // The address of `name` in the library, loading it on first use. Never null:
  // a missing library or symbol is fatal (see above). Thread-safe.
  void* symbol(const char* name);

 private:
  const char* soname_;
  std::once_flag once_;
  void* handle_ = nullptr;
};

// The function `name` of `lib` as a pointer of type F, looked up once per stub:
//   static const auto real = resolve<decltype(&curl_easy_init)>(curl(), "curl_easy_init");
template <typename F>
F resolve(LazyLibrary& lib, const char* name) {
  return reinterpret_cast<F>(lib.symbol(name));
}

}  // namespace epbrokerd::lazylib
