// SHA-256 / SHA-512 hashing and hex helpers.
#include "catalog/crypto/hash.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace catalog::crypto {
namespace {

using ::testing::HasSubstr;

// FIPS 180-2 / NIST example digests.
constexpr std::string_view kSha256Empty =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kSha256Abc =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr std::string_view kSha256MillionA =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
constexpr std::string_view kSha512Empty =
    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
    "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e";
constexpr std::string_view kSha512Abc =
    "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
    "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f";
constexpr std::string_view kSha512MillionA =
    "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
    "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b";

std::string digest(HashAlgo algo, std::string_view data) {
  Hasher h(algo);
  h.update(data);
  return h.finish_hex();
}

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

TEST(HashTest, KnownDigests) {
  EXPECT_EQ(digest(HashAlgo::sha256, ""), kSha256Empty);
  EXPECT_EQ(digest(HashAlgo::sha256, "abc"), kSha256Abc);
  EXPECT_EQ(digest(HashAlgo::sha512, ""), kSha512Empty);
  EXPECT_EQ(digest(HashAlgo::sha512, "abc"), kSha512Abc);
  EXPECT_EQ(sha256_hex(""), kSha256Empty);
  EXPECT_EQ(sha256_hex("abc"), kSha256Abc);
}

TEST(HashTest, HasherWithoutUpdateHashesEmptyInput) {
  Hasher h256(HashAlgo::sha256);
  EXPECT_EQ(h256.finish_hex(), kSha256Empty);
  Hasher h512(HashAlgo::sha512);
  EXPECT_EQ(h512.finish_hex(), kSha512Empty);
}

TEST(HashTest, ByteSpanOverloadMatchesString) {
  Hasher h(HashAlgo::sha256);
  h.update(bytes_of("abc"));
  EXPECT_EQ(h.finish_hex(), kSha256Abc);
}

TEST(HashTest, StreamingInPiecesEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data.push_back(static_cast<char>((i * 131 + 7) % 256));
  for (HashAlgo algo : {HashAlgo::sha256, HashAlgo::sha512}) {
    const std::string one_shot = digest(algo, data);
    for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{127},
                              std::size_t{128}, std::size_t{1000}, data.size()}) {
      Hasher h(algo);
      for (std::size_t off = 0; off < data.size(); off += piece) {
        const std::string_view chunk = std::string_view(data).substr(off, piece);
        // Alternate the two overloads; empty updates are no-ops.
        if ((off / piece) % 2 == 0) {
          h.update(chunk);
        } else {
          h.update(bytes_of(chunk));
        }
        h.update(std::string_view());
      }
      EXPECT_EQ(h.finish_hex(), one_shot) << hash_algo_name(algo) << " piece " << piece;
    }
  }
}

TEST(HashTest, StreamingMillionA) {
  const std::string chunk(1000, 'a');
  Hasher h256(HashAlgo::sha256);
  Hasher h512(HashAlgo::sha512);
  for (int i = 0; i < 1000; ++i) {
    h256.update(chunk);
    h512.update(chunk);
  }
  EXPECT_EQ(h256.finish_hex(), kSha256MillionA);
  EXPECT_EQ(h512.finish_hex(), kSha512MillionA);
}

TEST(HashTest, MovedHasherKeepsState) {
  Hasher a(HashAlgo::sha256);
  a.update("ab");
  Hasher b(std::move(a));
  b.update("c");
  EXPECT_EQ(b.finish_hex(), kSha256Abc);

  Hasher c(HashAlgo::sha256);
  c.update("a");
  Hasher d(HashAlgo::sha512);
  d = std::move(c);
  d.update("bc");
  EXPECT_EQ(d.finish_hex(), kSha256Abc);
}

TEST(HashTest, AlgorithmNames) {
  auto a = hash_algo_from_name("sha256");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, HashAlgo::sha256);
  auto b = hash_algo_from_name("sha512");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, HashAlgo::sha512);
  EXPECT_EQ(hash_algo_name(HashAlgo::sha256), "sha256");
  EXPECT_EQ(hash_algo_name(HashAlgo::sha512), "sha512");
}

TEST(HashTest, UnknownAlgorithmIsUnsupported) {
  for (const std::string_view name :
       {"md5", "sha1", "SHA256", "sha-256", "sha384", "", "sha256 "}) {
    auto r = hash_algo_from_name(name);
    ASSERT_FALSE(r.has_value()) << name;
    EXPECT_EQ(r.error().code, Errc::unsupported) << name;
    EXPECT_THAT(r.error().message, HasSubstr("'" + std::string(name) + "'"));
  }
}

TEST(HexTest, ToHexIsLowerCase) {
  const unsigned char raw[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  EXPECT_EQ(to_hex(raw), "00017f80abff");
  EXPECT_EQ(to_hex(std::span<const unsigned char>()), "");
}

TEST(HexTest, RoundTripsEveryByte) {
  unsigned char all[256];
  for (std::size_t i = 0; i < 256; ++i) all[i] = static_cast<unsigned char>(i);
  const std::string hex = to_hex(all);
  ASSERT_EQ(hex.size(), 512u);
  auto back = from_hex(hex);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 256u);
  for (std::size_t i = 0; i < 256; ++i) {
    EXPECT_EQ(static_cast<unsigned char>((*back)[i]), all[i]) << i;
  }
}

TEST(HexTest, FromHexAcceptsBothCases) {
  auto lower = from_hex("00abcdef7f");
  auto upper = from_hex("00ABCDEF7F");
  auto mixed = from_hex("00aBcDeF7f");
  ASSERT_TRUE(lower && upper && mixed);
  EXPECT_EQ(*lower, std::string("\x00\xab\xcd\xef\x7f", 5));
  EXPECT_EQ(*upper, *lower);
  EXPECT_EQ(*mixed, *lower);
  auto empty = from_hex("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, "");
}

TEST(HexTest, FromHexOddLength) {
  for (const std::string_view bad : {"a", "abc", "00112"}) {
    auto r = from_hex(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed);
    EXPECT_THAT(r.error().message, HasSubstr("odd length"));
  }
}

TEST(HexTest, FromHexBadDigit) {
  for (const std::string_view bad : {"0g", "g0", "zz", " 0", "0x", "-1", "00:1", "ab\n0"}) {
    auto r = from_hex(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::malformed) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("invalid hex digit"));
  }
  auto nul = from_hex(std::string_view("0\0", 2));
  ASSERT_FALSE(nul.has_value());
  EXPECT_EQ(nul.error().code, Errc::malformed);
}

}  // namespace
}  // namespace catalog::crypto
