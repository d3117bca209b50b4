#include "catalog/package/archive_locale.hpp"

namespace catalog::package {
namespace {

// Created once, never freed (the process keeps using it).
locale_t archive_locale() {
  static const locale_t loc = [] {
    locale_t l = ::newlocale(LC_ALL_MASK, "C.UTF-8", nullptr);
    if (l == nullptr) l = ::newlocale(LC_ALL_MASK, "C", nullptr);
    return l;
  }();
  return loc;
}

}  // namespace

ArchiveLocaleScope::ArchiveLocaleScope() {
  if (const locale_t l = archive_locale(); l != nullptr) previous_ = ::uselocale(l);
}

ArchiveLocaleScope::~ArchiveLocaleScope() {
  if (previous_ != nullptr) ::uselocale(previous_);
}

}  // namespace catalog::package
