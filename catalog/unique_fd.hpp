// The one owned file descriptor type (RAII, move-only), for code that works through
// descriptors (openat/O_NOFOLLOW walks, fsync, locks) rather than paths.
#pragma once

#include <unistd.h>

#include <utility>

namespace catalog {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Gives the descriptor up without closing it (to an owner that closes it itself).
  int release() { return std::exchange(fd_, -1); }
  // Closes and reports the error close() saw (a delayed write error).
  int close_checked() {
    const int rc = ::close(std::exchange(fd_, -1));
    return rc;
  }

 private:
  int fd_ = -1;
};

}  // namespace catalog
