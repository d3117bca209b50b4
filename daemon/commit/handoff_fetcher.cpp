#include "daemon/commit/handoff_fetcher.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <span>

#include "catalog/unique_fd.hpp"

namespace epbrokerd::commit {
namespace {

using catalog::Errc;
using catalog::fail;

// The directory entry `url` stands for, or "" when it names none.
std::string entry_name(std::string_view url) {
  const std::string_view prefix = kHandoffBaseUrl;
  if (!url.starts_with(prefix)) return "";
  std::string_view file = url.substr(prefix.size());
  if (file.empty() || file.find('/') != std::string_view::npos || file == "." || file == "..") {
    return "";
  }
  // "<digits>.<rest>": roots keep their version; other roles drop it.
  std::size_t digits = 0;
  while (digits < file.size() && std::isdigit(static_cast<unsigned char>(file[digits]))) ++digits;
  if (digits > 0 && digits < file.size() && file[digits] == '.' &&
      file.substr(digits + 1) != "root.json") {
    file.remove_prefix(digits + 1);
  }
  return std::string(file);
}

}  // namespace

catalog::Result<void> HandoffFetcher::fetch(const std::string& url, std::uint64_t max_bytes,
                                            const catalog::tuf::ChunkSink& sink) {
  const std::string name = entry_name(url);
  if (name.empty()) return fail(Errc::invalid_argument, "not a handoff URL: " + url);
  catalog::UniqueFd fd(
      ::openat(dir_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return fail(Errc::not_found, name + ": not handed over");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail(Errc::not_found, name + ": not a regular file");
  }
  std::array<std::byte, 65536> buf{};
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io, name + ": read failed");
    if (n == 0) return {};
    total += static_cast<std::uint64_t>(n);
    if (total > max_bytes) {
      return fail(Errc::length_mismatch,
                  name + ": more than " + std::to_string(max_bytes) + " bytes");
    }
    if (auto ok = sink(std::span(buf.data(), static_cast<std::size_t>(n))); !ok) return ok;
  }
}

}  // namespace epbrokerd::commit
