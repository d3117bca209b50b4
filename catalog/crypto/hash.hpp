// Streaming SHA-256 / SHA-512 over OpenSSL EVP.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace catalog::crypto {

enum class HashAlgo { sha256, sha512 };

// "sha256" / "sha512" -> algo; anything else Errc::unsupported.
Result<HashAlgo> hash_algo_from_name(std::string_view name);
std::string_view hash_algo_name(HashAlgo algo);

class Hasher {
 public:
  explicit Hasher(HashAlgo algo);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  void update(std::span<const std::byte> data);
  void update(std::string_view data);
  // Lower-case hex digest; the hasher must not be used afterwards.
  std::string finish_hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string to_hex(std::span<const unsigned char> bytes);
// Lower- or upper-case hex -> bytes; Errc::malformed on odd length or bad digit.
Result<std::string> from_hex(std::string_view hex);

std::string sha256_hex(std::string_view data);

}  // namespace catalog::crypto
