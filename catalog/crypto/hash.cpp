#include "catalog/crypto/hash.hpp"

#include <openssl/evp.h>

#include <cstdlib>

namespace catalog::crypto {

struct Hasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Result<HashAlgo> hash_algo_from_name(std::string_view name) {
  if (name == "sha256") return HashAlgo::sha256;
  if (name == "sha512") return HashAlgo::sha512;
  return fail(Errc::unsupported, "unsupported hash algorithm '" + std::string(name) + "'");
}

std::string_view hash_algo_name(HashAlgo algo) {
  return algo == HashAlgo::sha256 ? "sha256" : "sha512";
}

Hasher::Hasher(HashAlgo algo) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  // Allocation failure of a digest context is not recoverable in any useful way.
  if (impl_->ctx == nullptr ||
      EVP_DigestInit_ex(impl_->ctx, algo == HashAlgo::sha256 ? EVP_sha256() : EVP_sha512(),
                        nullptr) != 1) {
    std::abort();
  }
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(std::span<const std::byte> data) {
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

void Hasher::update(std::string_view data) {
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

std::string Hasher::finish_hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  return to_hex(std::span<const unsigned char>(md, len));
}

std::string to_hex(std::span<const unsigned char> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xF]);
  }
  return out;
}

Result<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return fail(Errc::malformed, "hex string of odd length");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]);
    int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return fail(Errc::malformed, "invalid hex digit");
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Hasher h(HashAlgo::sha256);
  h.update(data);
  return h.finish_hex();
}

}  // namespace catalog::crypto
