// libcurl's functions that epbrokerd calls, loaded on first use (lazy_library.hpp).
#define CURL_DISABLE_TYPECHECK  // curl.h would make curl_easy_setopt/getinfo macros
#include <curl/curl.h>

#include <cstdarg>

#include "daemon/lazylib/lazy_library.hpp"

namespace {

using epbrokerd::lazylib::LazyLibrary;
using epbrokerd::lazylib::resolve;

LazyLibrary& curl() {
  static LazyLibrary lib(EPBROKERD_SONAME_CURL);
  return lib;
}

#define EPBROKERD_REAL(fn) static const auto real = resolve<decltype(&::fn)>(curl(), #fn)

}  // namespace

extern "C" {

CURLcode curl_global_init(long flags) {
  EPBROKERD_REAL(curl_global_init);
  return real(flags);
}

CURL* curl_easy_init(void) {
  EPBROKERD_REAL(curl_easy_init);
  return real();
}

// The one variadic argument has the type the option's number range says
// (CURLOPTTYPE_* in curl.h): long, object pointer, function pointer, curl_off_t,
// or a struct curl_blob pointer.
CURLcode curl_easy_setopt(CURL* handle, CURLoption option, ...) {
  EPBROKERD_REAL(curl_easy_setopt);
  va_list args;
  va_start(args, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = real(handle, option, va_arg(args, long));
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    rc = real(handle, option, va_arg(args, void*));
  } else if (option < CURLOPTTYPE_OFF_T) {
    rc = real(handle, option, va_arg(args, void (*)()));
  } else if (option < CURLOPTTYPE_BLOB) {
    rc = real(handle, option, va_arg(args, curl_off_t));
  } else {
    rc = real(handle, option, va_arg(args, void*));
  }
  va_end(args);
  return rc;
}

CURLcode curl_easy_perform(CURL* handle) {
  EPBROKERD_REAL(curl_easy_perform);
  return real(handle);
}

void curl_easy_cleanup(CURL* handle) {
  EPBROKERD_REAL(curl_easy_cleanup);
  real(handle);
}

// Every CURLINFO takes one pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL* handle, CURLINFO info, ...) {
  EPBROKERD_REAL(curl_easy_getinfo);
  va_list args;
  va_start(args, info);
  void* out = va_arg(args, void*);
  va_end(args);
  return real(handle, info, out);
}

const char* curl_easy_strerror(CURLcode code) {
  EPBROKERD_REAL(curl_easy_strerror);
  return real(code);
}

}  // extern "C"
