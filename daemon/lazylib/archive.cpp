// libarchive's functions that epbrokerd calls (package extraction), loaded on
// first use (lazy_library.hpp). Each definition must match archive.h and
// archive_entry.h exactly, which the compiler checks.
#include <archive.h>
#include <archive_entry.h>

#include "daemon/lazylib/lazy_library.hpp"

namespace {

epbrokerd::lazylib::LazyLibrary& archive_lib() {
  static epbrokerd::lazylib::LazyLibrary lib(EPBROKERD_SONAME_ARCHIVE);
  return lib;
}

}  // namespace

#define EPBROKERD_REAL(fn) \
  static const auto real = epbrokerd::lazylib::resolve<decltype(&::fn)>(archive_lib(), #fn)
#include "daemon/lazylib/stub_macros.hpp"  // after EPBROKERD_REAL

extern "C" {

EPBROKERD_STUB0(struct archive*, archive_read_new)
EPBROKERD_STUB1(int, archive_read_free, struct archive*)
EPBROKERD_STUB1(int, archive_read_support_filter_none, struct archive*)
EPBROKERD_STUB1(int, archive_read_support_filter_gzip, struct archive*)
EPBROKERD_STUB1(int, archive_read_support_filter_zstd, struct archive*)
EPBROKERD_STUB1(int, archive_read_support_format_tar, struct archive*)
EPBROKERD_STUB3(int, archive_read_open_fd, struct archive*, int, size_t)
EPBROKERD_STUB2(int, archive_read_next_header, struct archive*, struct archive_entry**)
EPBROKERD_STUB3(la_ssize_t, archive_read_data, struct archive*, void*, size_t)
EPBROKERD_STUB1(int, archive_errno, struct archive*)
EPBROKERD_STUB1(const char*, archive_error_string, struct archive*)

EPBROKERD_STUB1(const char*, archive_entry_pathname, struct archive_entry*)
EPBROKERD_STUB1(const char*, archive_entry_hardlink, struct archive_entry*)
EPBROKERD_STUB1(const char*, archive_entry_symlink, struct archive_entry*)
EPBROKERD_STUB1(__LA_MODE_T, archive_entry_filetype, struct archive_entry*)
EPBROKERD_STUB1(__LA_MODE_T, archive_entry_perm, struct archive_entry*)
EPBROKERD_STUB1(la_int64_t, archive_entry_size, struct archive_entry*)
EPBROKERD_STUB1(int, archive_entry_sparse_count, struct archive_entry*)

}  // extern "C"
