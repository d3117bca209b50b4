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

// Told where the body of a fetch_from() starts, once, before its first byte reaches
// the ChunkSink (also for an empty body). Returning an error aborts the fetch and
// that error is what fetch_from() returns.
using StartSink = std::function<Result<void>(std::uint64_t start)>;

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

  // Streams `url` from byte `offset` on: the resume of a partial download.
  // Contract: `on_start(start)` comes first, with start == offset if the server
  // honoured the range, or start == 0 if what follows is the whole resource from
  // its first byte (the caller then starts over). `max_bytes` caps the resource,
  // not this answer: start + bytes delivered never exceeds it (length_mismatch at
  // the first excess). Errors as fetch(); offset > max_bytes is invalid_argument.
  // Default: ignores the offset and delivers the whole resource through fetch(),
  // calling on_start(0) at the first byte (or at the end of an empty body), so a
  // partial download survives a fetch that fails before any byte arrives. Correct
  // for every Fetcher, just never a resume.
  virtual Result<void> fetch_from(const std::string& url, std::uint64_t offset,
                                  std::uint64_t max_bytes, const StartSink& on_start,
                                  const ChunkSink& sink);

  // Convenience: the whole body as a string, same contract as fetch().
  Result<std::string> fetch_bytes(const std::string& url, std::uint64_t max_bytes);
};

}  // namespace catalog::tuf
