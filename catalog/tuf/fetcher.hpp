// The one door through which the TUF client workflow reaches the outside world.
//
// catalog/ never opens a socket: whoever runs the workflow hands it a Fetcher
// (the daemon: libcurl; tests: in-memory repositories with injected faults).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "catalog/error.hpp"

namespace catalog::tuf {

// Receives the body in chunks, in order. Returning an error aborts the fetch and
// that error is what fetch() returns.
using ChunkSink = std::function<Result<void>(std::span<const std::byte>)>;

class Fetcher {
 public:
  virtual ~Fetcher() = default;

  // Streams the body of `url` into `sink`.
  // Contract: never delivers more than `max_bytes` bytes in total; a body that
  // would exceed it fails with Errc::length_mismatch as soon as the excess is seen
  // (endless-data defence). Missing resources (HTTP 404/403, no file) fail with
  // Errc::not_found; any other transport or server failure with Errc::network.
  virtual Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                             const ChunkSink& sink) = 0;

  // Convenience: the whole body as a string, same contract as fetch().
  Result<std::string> fetch_bytes(const std::string& url, std::uint64_t max_bytes);
};

}  // namespace catalog::tuf
