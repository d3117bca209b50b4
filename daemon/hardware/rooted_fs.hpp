// Read-only access to one directory tree (a sysfs, procfs or /dev root) that never
// leaves it, so hardware discovery can run against the live system or a fixture tree.
//
// Paths given to RootedFs are relative to its root (a leading '/' is ignored). Every
// symlink on the way is read with readlink() and re-rooted: a relative target is
// taken from the link's directory inside the root, an absolute target is refused
// (sysfs links are relative; an absolute one would name the host's tree, not the
// injected one), ".." never climbs above the root, and at most kMaxLinks links are
// followed per lookup. Files are opened with O_NOFOLLOW | O_NONBLOCK after that
// resolution and must be regular files (so a FIFO or device planted in a tree can
// neither block nor be read); reads are bounded. No member throws (other than
// std::bad_alloc); failures read as "absent".
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace epbrokerd::hardware {

class RootedFs {
 public:
  static constexpr int kMaxLinks = 40;                // as the kernel's MAXSYMLINKS
  static constexpr std::size_t kMaxLinkBytes = 4096;  // a longer link target is refused

  // What read() does with a file longer than its bound.
  enum class Oversize {
    fail,      // the file counts as unreadable (sysfs attributes: a page at most)
    truncate,  // the first max_bytes bytes are returned (/proc/cpuinfo)
  };

  explicit RootedFs(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }

  // `rel` with every symlink resolved inside the root, as a path relative to the
  // root without symlinks, "." or ".." ("" is the root itself); std::nullopt when a
  // component is missing, a link is absolute or climbs above the root, or links nest
  // deeper than kMaxLinks.
  std::optional<std::filesystem::path> resolve(const std::filesystem::path& rel) const;

  // resolve() succeeded: the path exists inside the root (any file type).
  bool exists(const std::filesystem::path& rel) const { return resolve(rel).has_value(); }

  // Contents of the regular file at `rel` (resolved as above), at most `max_bytes`
  // bytes (see Oversize); std::nullopt when missing, not a regular file, unreadable,
  // or longer than `max_bytes` under Oversize::fail. Does not trust st_size (procfs
  // files report 0): reads until end of file or the bound.
  std::optional<std::string> read(const std::filesystem::path& rel, std::size_t max_bytes,
                                  Oversize oversize = Oversize::fail) const;

  // Names in the directory at `rel` (resolved as above), sorted, without "." and
  // "..", at most `max_entries` of them (the first ones the kernel lists); empty when
  // it is missing or not a directory.
  std::vector<std::string> list(const std::filesystem::path& rel,
                                std::size_t max_entries = 4096) const;

  // Last component of the target of the symlink at `rel`, which is itself not
  // followed (its directory is resolved as above), e.g. "nvidia" for a PCI device's
  // `driver -> ../../../bus/pci/drivers/nvidia`. The target is checked lexically:
  // std::nullopt when `rel` is not a symlink, or the target is absolute, climbs above
  // the root, or ends in "." or "..". The target need not exist.
  std::optional<std::string> link_name(const std::filesystem::path& rel) const;

 private:
  std::filesystem::path root_;
};

}  // namespace epbrokerd::hardware
