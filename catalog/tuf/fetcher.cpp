#include "catalog/tuf/fetcher.hpp"

namespace catalog::tuf {

Result<std::string> Fetcher::fetch_bytes(const std::string& url, std::uint64_t max_bytes) {
  std::string body;
  auto sink = [&](std::span<const std::byte> chunk) -> Result<void> {
    // Enforce the cap here too, so a Fetcher that ignores it cannot flood memory.
    if (body.size() + chunk.size() > max_bytes) {
      return fail(Errc::length_mismatch,
                  url + ": more than " + std::to_string(max_bytes) + " bytes");
    }
    body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return {};
  };
  if (auto r = fetch(url, max_bytes, sink); !r) return std::unexpected(r.error());
  return body;
}

Result<void> Fetcher::fetch_from(const std::string& url, std::uint64_t offset,
                                 std::uint64_t max_bytes, const StartSink& on_start,
                                 const ChunkSink& sink) {
  if (offset > max_bytes) {
    return fail(Errc::invalid_argument, url + ": offset " + std::to_string(offset) +
                                            " is past the cap of " + std::to_string(max_bytes));
  }
  // Told lazily: a fetch that fails before its first byte leaves the caller's
  // partial download as it was.
  bool started = false;
  auto start_once = [&]() -> Result<void> {
    if (started) return {};
    started = true;
    return on_start(0);
  };
  auto first_then_sink = [&](std::span<const std::byte> chunk) -> Result<void> {
    if (auto ok = start_once(); !ok) return ok;
    return sink(chunk);
  };
  if (auto ok = fetch(url, max_bytes, first_then_sink); !ok) return ok;
  return start_once();
}

}  // namespace catalog::tuf
