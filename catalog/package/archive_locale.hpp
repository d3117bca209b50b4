// Internal to catalog/package: runs libarchive calls in a fixed locale.
//
// libarchive converts pathnames between the archive's charset and the current
// locale's. Within this scope the calling thread uses C.UTF-8 (or C where that is
// missing), so names are read as their stored bytes and UTF-8 names are written
// as standard pax UTF-8, whatever locale the process has set.
#pragma once

#include <locale.h>

namespace catalog::package {

class ArchiveLocaleScope {
 public:
  ArchiveLocaleScope();
  ~ArchiveLocaleScope();
  ArchiveLocaleScope(const ArchiveLocaleScope&) = delete;
  ArchiveLocaleScope& operator=(const ArchiveLocaleScope&) = delete;

 private:
  locale_t previous_ = nullptr;
};

}  // namespace catalog::package
