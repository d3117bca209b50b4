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

namespace {

std::string refuse_store_path(const std::string& target, const std::string& store_dir,
                              bool directory) {
  std::error_code ec;
  const fs::path root = fs::canonical(store_dir, ec);
  if (ec) return "the store " + store_dir + " cannot be resolved: " + ec.message();
  const fs::path file = fs::canonical(target, ec);
  if (ec) return target + " cannot be resolved: " + ec.message();
  // 1. Strictly inside the store, once every symlink is resolved.
  const fs::path rel = file.lexically_relative(root);
  if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || rel == ".") {
    return target + " is outside the store " + root.string();
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
  if (directory) {
    if (!S_ISDIR(st.st_mode)) return target + " is not a directory";
  } else if (!S_ISREG(st.st_mode)) {
    return target + " is not a regular file";
  }
  return "";
}

}  // namespace

std::string refuse_library_path(const std::string& library_path, const std::string& store_dir) {
  return refuse_store_path(library_path, store_dir, false);
}

std::string refuse_store_dir(const std::string& dir, const std::string& store_dir) {
  return refuse_store_path(dir, store_dir, true);
}

}  // namespace epbroker::detail
