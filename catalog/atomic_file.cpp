#include "catalog/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace catalog {
namespace {

std::unexpected<Error> io_error(const std::string& what, const std::filesystem::path& p) {
  int e = errno;
  return fail(e == ENOENT ? Errc::not_found : errno_code(e),
              what + " " + p.string() + ": " + std::strerror(e));
}

}  // namespace

Result<void> fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return io_error("fsync", dir);
  return {};
}

Result<void> atomic_write_file(const std::filesystem::path& path, std::string_view bytes) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return io_error("create temporary for", path);
  // 1. Write everything, handling short writes.
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto err = io_error("write", tmpl);
      ::close(fd);
      ::unlink(tmpl.c_str());
      return err;
    }
    done += static_cast<std::size_t>(n);
  }
  // 2. Durable and world-readable (metadata is public) before it becomes visible.
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0) {
    auto err = io_error("fsync", tmpl);
    ::close(fd);
    ::unlink(tmpl.c_str());
    return err;
  }
  ::close(fd);
  // 3. Atomic replace, then make the rename itself durable.
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    auto err = io_error("rename into", path);
    ::unlink(tmpl.c_str());
    return err;
  }
  return fsync_dir(dir);
}

Result<std::string> read_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("open", path);
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto err = io_error("read", path);
      ::close(fd);
      return err;
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return fail(Errc::length_mismatch,
                  path.string() + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace catalog
