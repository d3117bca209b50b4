#include "catalog/tuf/dir_fetcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace catalog::tuf {
namespace {

// Percent-decoding; `ok` is false on a truncated or non-hex escape.
std::string percent_decode(std::string_view s, bool& ok) {
  std::string out;
  ok = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    auto hexval = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (i + 2 >= s.size()) {
      ok = false;
      return {};
    }
    int hi = hexval(s[i + 1]);
    int lo = hexval(s[i + 2]);
    if (hi < 0 || lo < 0) {
      ok = false;
      return {};
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

}  // namespace

DirFetcher::DirFetcher(std::string url_prefix, std::filesystem::path root)
    : prefix_(std::move(url_prefix)), root_(std::move(root)) {}

Result<void> DirFetcher::fetch(const std::string& url, std::uint64_t max_bytes,
                               const ChunkSink& sink) {
  if (!url.starts_with(prefix_)) return fail(Errc::invalid_argument, url + ": outside " + prefix_);
  bool ok = false;
  const std::string rel = percent_decode(std::string_view(url).substr(prefix_.size()), ok);
  if (!ok || rel.empty() || rel.find('\0') != std::string::npos) {
    return fail(Errc::invalid_argument, url + ": bad path");
  }
  for (const auto& part : std::filesystem::path(rel)) {
    if (part == ".." || part == "." || part == "/") {
      return fail(Errc::invalid_argument, url + ": bad path segment");
    }
  }
  const auto path = root_ / rel;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno == ENOENT ? Errc::not_found : Errc::network,
                url + ": " + std::strerror(errno));
  }
  std::vector<std::byte> buf(1 << 20);
  std::uint64_t total = 0;
  Result<void> result;
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result = fail(Errc::network, url + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    total += static_cast<std::uint64_t>(n);
    if (total > max_bytes) {
      result =
          fail(Errc::length_mismatch, url + ": more than " + std::to_string(max_bytes) + " bytes");
      break;
    }
    result = sink(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    if (!result) break;
  }
  ::close(fd);
  return result;
}

}  // namespace catalog::tuf
