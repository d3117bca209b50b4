// A Fetcher over a local directory: URLs "<prefix><relative path>" map to files
// under a root directory. For verifying a repository on disk, offline mirrors,
// tests and benchmarks; same contract as any Fetcher (caps, not_found).
#pragma once

#include <filesystem>
#include <string>

#include "catalog/tuf/fetcher.hpp"

namespace catalog::tuf {

class DirFetcher : public Fetcher {
 public:
  DirFetcher(std::string url_prefix, std::filesystem::path root);

  // URLs outside the prefix, or whose decoded path has an empty, "." or ".."
  // segment, are Errc::invalid_argument.
  Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                     const ChunkSink& sink) override;

 private:
  std::string prefix_;
  std::filesystem::path root_;
};

}  // namespace catalog::tuf
