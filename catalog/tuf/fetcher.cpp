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

}  // namespace catalog::tuf
