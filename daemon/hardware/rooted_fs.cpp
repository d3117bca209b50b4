#include "daemon/hardware/rooted_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <string_view>
#include <system_error>

#include "catalog/unique_fd.hpp"

namespace epbrokerd::hardware {
namespace fs = std::filesystem;

namespace {

// Components of a '/'-separated path, without empty ones and ".".
std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

fs::path join(const std::vector<std::string>& parts) {
  fs::path out;
  for (const auto& part : parts) out /= part;
  return out;
}

// readlink() of `host`, std::nullopt when it fails or the target is too long.
std::optional<std::string> read_link(const fs::path& host) {
  std::string target(RootedFs::kMaxLinkBytes + 1, '\0');
  const ssize_t n = ::readlink(host.c_str(), target.data(), target.size());
  if (n <= 0 || static_cast<std::size_t>(n) > RootedFs::kMaxLinkBytes) return std::nullopt;
  target.resize(static_cast<std::size_t>(n));
  return target;
}

using Fd = catalog::UniqueFd;

}  // namespace

std::optional<fs::path> RootedFs::resolve(const fs::path& rel) const {
  std::vector<std::string> done;
  std::deque<std::string> todo;
  for (auto& part : split(rel.native())) todo.push_back(std::move(part));
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == "..") {
      if (done.empty()) return std::nullopt;  // would leave the root
      done.pop_back();
      continue;
    }
    done.push_back(std::move(part));
    const fs::path host = root_ / join(done);
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) continue;
    if (++links > kMaxLinks) return std::nullopt;
    const auto target = read_link(host);
    if (!target || target->front() == '/') return std::nullopt;
    done.pop_back();
    auto parts = split(*target);
    todo.insert(todo.begin(), std::make_move_iterator(parts.begin()),
                std::make_move_iterator(parts.end()));
  }
  return join(done);
}

std::optional<std::string> RootedFs::read(const fs::path& rel, std::size_t max_bytes,
                                          Oversize oversize) const {
  const auto resolved = resolve(rel);
  if (!resolved) return std::nullopt;
  const fs::path host = root_ / *resolved;
  const Fd fd(::open(host.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;

  // One byte past the bound tells "exactly max_bytes" from "longer".
  const std::size_t limit = oversize == Oversize::fail ? max_bytes + 1 : max_bytes;
  std::string data;
  data.resize(std::min<std::size_t>(limit, 64 * 1024));
  std::size_t got = 0;
  while (got < limit) {
    if (got == data.size()) data.resize(std::min(limit, data.size() * 2));
    const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (oversize == Oversize::fail && got > max_bytes) return std::nullopt;
  data.resize(got);
  return data;
}

std::vector<std::string> RootedFs::list(const fs::path& rel, std::size_t max_entries) const {
  std::vector<std::string> names;
  const auto resolved = resolve(rel);
  if (!resolved) return names;
  std::error_code ec;
  fs::directory_iterator it(root_ / *resolved, ec);
  for (; !ec && it != fs::directory_iterator{} && names.size() < max_entries; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> RootedFs::link_name(const fs::path& rel) const {
  const auto parts = split(rel.native());
  if (parts.empty() || parts.back() == "..") return std::nullopt;
  const auto dir = resolve(join({parts.begin(), parts.end() - 1}));
  if (!dir) return std::nullopt;
  const fs::path host = root_ / *dir / parts.back();
  struct stat st {};
  if (::lstat(host.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return std::nullopt;
  const auto target = read_link(host);
  if (!target || target->front() == '/') return std::nullopt;

  std::vector<std::string> where = split(dir->native());
  const auto target_parts = split(*target);
  if (target_parts.empty() || target_parts.back() == "..") return std::nullopt;
  for (const auto& part : target_parts) {
    if (part == "..") {
      if (where.empty()) return std::nullopt;
      where.pop_back();
    } else {
      where.push_back(part);
    }
  }
  return target_parts.back();
}

}  // namespace epbrokerd::hardware
