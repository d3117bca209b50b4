// Ed25519 keys and signatures over OpenSSL 3 EVP.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "catalog/error.hpp"

namespace catalog::crypto {

// Raw Ed25519 public key: exactly 32 bytes.
struct PublicKey {
  std::string raw;
  std::string hex() const;
};

// An Ed25519 private key. Move-only; the key material lives in OpenSSL.
class PrivateKey {
 public:
  // A fresh key from the OS CSPRNG.
  static Result<PrivateKey> generate();
  // PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"); Errc::malformed if not PEM,
  // Errc::unsupported if it is a key of another type.
  static Result<PrivateKey> from_pem(std::string_view pem);

  ~PrivateKey();
  PrivateKey(PrivateKey&&) noexcept;
  PrivateKey& operator=(PrivateKey&&) noexcept;

  Result<std::string> to_pem() const;
  PublicKey public_key() const;
  // 64-byte raw signature of `message`.
  Result<std::string> sign(std::string_view message) const;

 private:
  struct Impl;
  explicit PrivateKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True only when `signature` (raw, 64 bytes) is a valid Ed25519 signature of
// `message` under `key` (raw, 32 bytes). Wrong sizes are simply invalid.
bool verify_ed25519(std::string_view public_raw, std::string_view message,
                    std::string_view signature);

}  // namespace catalog::crypto
