#include "catalog/package/model_pack.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "catalog/crypto/hash.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/text.hpp"

namespace catalog::package {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A variant id as a directory name: one safe path component (the id's own
// rules are parse_model_metadata()'s).
std::optional<std::string> id_problem(std::string_view id) {
  if (auto problem = path_problem(id, kMaxVariantIdLength)) return problem;
  if (id.find('/') != std::string_view::npos) return std::string("'/' in a variant id");
  return std::nullopt;
}

// SHA-256 and size of a regular file opened without following a last symlink.
Result<std::pair<std::string, std::uint64_t>> hash_regular_file(const fs::path& p,
                                                                const std::string& what) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) return fail(Errc::invalid_argument, what + ": symlink refused");
    return fail(e == ENOENT ? Errc::not_found : Errc::io,
                what + ": open " + p.string() + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Errc::invalid_argument, what + ": " + p.string() + " is not a regular file");
  }
  crypto::Hasher hasher(crypto::HashAlgo::sha256);
  std::vector<std::byte> buf(std::size_t{1} << 20);
  std::uint64_t size = 0;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return fail(Errc::io, what + ": read " + p.string() + ": " + std::strerror(e));
    }
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return std::pair{hasher.finish_hex(), size};
}

}  // namespace

Result<ModelMetadata> describe_model_directory(const fs::path& dir, const json& card) {
  json filled = card;
  if (!filled.is_object() || !filled.contains("epbroker") || !filled["epbroker"].is_object()) {
    return fail(Errc::bad_field, "epbroker: expected an object");
  }
  json& variants = filled["epbroker"]["variants"];
  if (!variants.is_array() || variants.empty()) {
    return fail(Errc::bad_field, "epbroker.variants: expected a non-empty array");
  }
  if (variants.size() > kMaxModelVariants) {
    return fail(Errc::bad_field,
                "epbroker.variants: more than " + std::to_string(kMaxModelVariants) + " variants");
  }
  for (std::size_t i = 0; i < variants.size(); ++i) {
    json& v = variants[i];
    const std::string field = "epbroker.variants[" + std::to_string(i) + "]";
    if (!v.is_object()) return fail(Errc::bad_field, field + ": expected an object");
    if (!v.contains("id") || !v["id"].is_string()) {
      return fail(Errc::bad_field, field + ".id: expected a string");
    }
    const std::string id = v["id"].get<std::string>();
    if (auto problem = id_problem(id)) {
      return fail(Errc::bad_field, field + ".id: " + *problem);
    }
    const std::string what = "variant " + quote_for_message(id);
    // 1. Every regular file of DIR/<id>, with pack's refusals.
    const fs::path vdir = dir / id;
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(vdir, ec))) {
      return fail(Errc::invalid_argument,
                  what + ": " + vdir.string() + " is missing or not a directory");
    }
    auto entries = describe_directory(vdir, kMaxModelFiles);
    if (!entries) return fail(entries.error().code, what + ": " + entries.error().message);
    // 2. The files listed, if any.
    if (v.contains("files")) {
      const json& listed = v["files"];
      if (!listed.is_array()) {
        return fail(Errc::bad_field, field + ".files: expected an array of paths");
      }
      std::set<std::string> wanted;
      for (std::size_t j = 0; j < listed.size(); ++j) {
        const std::string f = field + ".files[" + std::to_string(j) + "]";
        if (!listed[j].is_string()) return fail(Errc::bad_field, f + ": expected a path");
        if (!wanted.insert(listed[j].get<std::string>()).second) {
          return fail(Errc::bad_field, f + ": listed twice");
        }
      }
      for (const auto& w : wanted) {
        const bool present = std::any_of(entries->begin(), entries->end(),
                                         [&](const FileEntry& e) { return e.path == w; });
        if (!present) {
          return fail(Errc::invalid_argument,
                      what + ": " + quote_for_message(w) + " is not a file in " + vdir.string());
        }
      }
      std::erase_if(*entries, [&](const FileEntry& e) { return !wanted.contains(e.path); });
    }
    // 3. The main file must be one of them.
    if (v.contains("main") && v["main"].is_string()) {
      const std::string main = v["main"].get<std::string>();
      const bool present = std::any_of(entries->begin(), entries->end(),
                                       [&](const FileEntry& e) { return e.path == main; });
      if (!present) {
        return fail(Errc::invalid_argument, what + ": main " + quote_for_message(main) +
                                                " is not among its files in " + vdir.string());
      }
    }
    json files = json::array();
    for (const FileEntry& e : *entries) {
      files.push_back(json{{"path", e.path}, {"size", e.size}, {"sha256", e.sha256}});
    }
    v["files"] = std::move(files);
  }
  return parse_model_metadata(filled);
}

Result<std::vector<ModelBlob>> check_model_directory(const fs::path& dir, const ModelMetadata& m) {
  std::vector<ModelBlob> blobs;
  std::set<std::string> seen;
  for (const ModelVariant& v : m.variants) {
    for (const ModelFile& f : v.files) {
      const std::string what =
          "variant " + quote_for_message(v.id) + ", file " + quote_for_message(f.path);
      // 1. No symlink and nothing special on the way (the last component is
      //    checked when opened).
      fs::path p = dir / v.id;
      std::error_code ec;
      if (!fs::is_directory(fs::symlink_status(p, ec))) {
        return fail(Errc::invalid_argument,
                    what + ": " + p.string() + " is missing or not a directory");
      }
      const fs::path rel(f.path);
      for (auto it = rel.begin(); it != rel.end(); ++it) {
        p /= *it;
        if (std::next(it) == rel.end()) break;
        const auto st = fs::symlink_status(p, ec);
        if (!fs::is_directory(st)) {
          return fail(fs::exists(st) ? Errc::invalid_argument : Errc::not_found,
                      what + ": " + p.string() + " is not a directory");
        }
      }
      // 2. The bytes, against the card.
      auto hashed = hash_regular_file(p, what);
      if (!hashed) return std::unexpected(std::move(hashed.error()));
      if (hashed->second != f.size) {
        return fail(Errc::length_mismatch, what + ": " + p.string() + " has " +
                                               std::to_string(hashed->second) +
                                               " bytes, the card says " + std::to_string(f.size));
      }
      if (hashed->first != f.sha256) {
        return fail(Errc::hash_mismatch, what + ": " + p.string() + " has sha256 " + hashed->first +
                                             ", the card says " + f.sha256);
      }
      if (seen.insert(f.sha256).second) blobs.push_back(ModelBlob{f.sha256, f.size, p});
    }
  }
  return blobs;
}

}  // namespace catalog::package
