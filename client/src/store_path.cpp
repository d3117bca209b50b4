#include "client/src/store_path.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace epbroker::detail {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string trusted_store_dir() {
  const char* dir = ::secure_getenv("EPBROKER_STORE_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) : std::string(kSystemStoreDir);
}

std::string refuse_library_path(const std::string& library_path, const std::string& store_dir) {
  std::error_code ec;
  const fs::path root = fs::canonical(store_dir, ec);
  if (ec) return "the store " + store_dir + " cannot be resolved: " + ec.message();
  const fs::path file = fs::canonical(library_path, ec);
  if (ec) return library_path + " cannot be resolved: " + ec.message();
  // 1. Strictly inside the store, once every symlink is resolved.
  const fs::path rel = file.lexically_relative(root);
  if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || rel == ".") {
    return library_path + " is outside the store " + root.string();
  }
  // 2. The store's owner owns it all, and no one else may write any of it.
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) return "the store " + root.string() + " cannot be read";
  const uid_t owner = st.st_uid;
  if (root == fs::path(kSystemStoreDir) && owner != 0) {
    return "the store " + root.string() + " does not belong to root";
  }
  fs::path at = root;
  for (const auto& part : rel) {
    at /= part;
    if (::lstat(at.c_str(), &st) != 0) return at.string() + " cannot be read";
    if (st.st_uid != owner) return at.string() + " does not belong to the store's owner";
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return at.string() + " is writable by others";
  }
  if (!S_ISREG(st.st_mode)) return library_path + " is not a regular file";
  return "";
}

}  // namespace epbroker::detail
