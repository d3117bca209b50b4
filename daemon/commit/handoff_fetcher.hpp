// A Fetcher over the TUF metadata the daemon persisted (a directory descriptor it
// handed over), serving it as a remote would: the commit helper runs the whole
// TUF workflow over it, from its own trust anchor, so the daemon's files count
// only as far as their signatures do.
//
// URL "handoff:/<file>" maps to a file of the directory (no other component):
//   <N>.root.json                 -> <N>.root.json   (the root chain, Updater keeps it)
//   timestamp.json                -> timestamp.json
//   <V>.<role>.json (consistent)  -> <role>.json     (the version is checked by TUF)
//   <role>.json                   -> <role>.json
// Each file is opened with O_NOFOLLOW | O_NONBLOCK below the descriptor and must
// be a regular file: a symlink, FIFO, device or directory planted there is
// Errc::not_found (no path is resolved, nothing blocks). Reads are capped as the
// Fetcher contract says.
#pragma once

#include <string>

#include "catalog/tuf/fetcher.hpp"

namespace epbrokerd::commit {

inline constexpr std::string_view kHandoffBaseUrl = "handoff:/";

class HandoffFetcher : public catalog::tuf::Fetcher {
 public:
  // `dir_fd` is borrowed and must outlive the fetcher.
  explicit HandoffFetcher(int dir_fd) : dir_fd_(dir_fd) {}

  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override;

 private:
  int dir_fd_;
};

}  // namespace epbrokerd::commit
