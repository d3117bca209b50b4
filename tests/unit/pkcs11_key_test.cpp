// Keys in a PKCS#11 token (PrivateKey::from_uri): a SoftHSM token of the test's
// own, reached through OpenSSL 3's pkcs11-provider. Needs the Debian packages
// softhsm2 and pkcs11-provider (scripts/bootstrap.sh installs them); without
// them every test fails, naming the package.
#include <openssl/crypto.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "catalog/tuf/key.hpp"
#include "tests/support/temp_dir.hpp"

namespace catalog::crypto {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kSoftHsmModule = "/usr/lib/softhsm/libsofthsm2.so";
constexpr const char* kPin = "1234";

std::string hex(std::string_view raw) {
  return to_hex(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(raw.data()),
                                               raw.size()));
}

// Runs a shell command; its exit status, with stdout and stderr in `output`.
int run(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The directory OpenSSL loads providers from.
fs::path openssl_modules_dir() {
  if (const char* env = std::getenv("OPENSSL_MODULES")) return env;
  std::string text = OpenSSL_version(OPENSSL_MODULES_DIR);  // MODULESDIR: "/usr/lib/..."
  const std::size_t open = text.find('"');
  const std::size_t close = text.rfind('"');
  if (open == std::string::npos || close <= open) return {};
  return text.substr(open + 1, close - open - 1);
}

// Empty when softhsm2 and pkcs11-provider are installed; else what is missing.
std::string missing_packages() {
  std::string out;
  std::string ignored;
  if (run("softhsm2-util --version", ignored) != 0 || !fs::exists(kSoftHsmModule)) {
    out += "softhsm2-util or " + std::string(kSoftHsmModule) +
           " not found: install the Debian package softhsm2. ";
  }
  if (!fs::exists(openssl_modules_dir() / "pkcs11.so")) {
    out += "pkcs11.so not found in " + openssl_modules_dir().string() +
           ": install the Debian package pkcs11-provider (bookworm-backports).";
  }
  return out;
}

class Pkcs11KeyTest : public ::testing::Test {
 protected:
  // One token per process, made before any test logs in: T, PIN 1234, with
  // keys "ec" (P-256), "rsa" (3072 bits) and "ed" (Ed25519).
  static void SetUpTestSuite() {
    setup_error_ = missing_packages();
    if (!setup_error_.empty()) return;
    dir_ = std::make_unique<tests::support::TempDir>();
    // 1. A SoftHSM configuration of our own; the module reads it at first load.
    tests::support::write_file(*dir_ / "softhsm2.conf",
                               "directories.tokendir = " + (*dir_ / "tokens").string() +
                                   "\nobjectstore.backend = file\nlog.level = ERROR\n");
    fs::create_directories(*dir_ / "tokens");
    setenv("SOFTHSM2_CONF", (*dir_ / "softhsm2.conf").c_str(), 1);
    unsetenv("PKCS11_PROVIDER_MODULE");  // it would override the URI's module-path
    std::string out;
    if (run("softhsm2-util --init-token --free --label T --pin 1234 --so-pin 5678", out) != 0) {
      setup_error_ = "softhsm2-util --init-token failed: " + out;
      return;
    }
    // 2. Keys made here, imported into the token.
    struct KeyToImport {
      const char* label;
      const char* id;
      KeyType type;
    };
    for (const KeyToImport& k :
         {KeyToImport{"ec", "01", KeyType::ecdsa_p256}, KeyToImport{"rsa", "02", KeyType::rsa},
          KeyToImport{"ed", "03", KeyType::ed25519}}) {
      auto key = PrivateKey::generate(k.type);
      auto pem = key ? key->to_pem() : Result<std::string>(std::unexpected(key.error()));
      if (!pem) {
        setup_error_ = "key generation failed: " + pem.error().message;
        return;
      }
      const fs::path file = *dir_ / (std::string(k.label) + ".pem");
      tests::support::write_file(file, *pem);
      const std::string command = "softhsm2-util --import " + file.string() +
                                  " --token T --label " + k.label + " --id " + k.id + " --pin " +
                                  kPin;
      if (run(command, out) != 0) {
        setup_error_ = command + " failed: " + out;
        return;
      }
      fs::remove(file);
      public_keys_[k.label] = key->public_key();
    }
    tests::support::write_file(*dir_ / "pin", "1234");
    // 3. Before any login of this process (a token stays logged in for the process).
    wrong_pin_first_.emplace(PrivateKey::from_uri(uri("ec", "pin-value=0000")));
  }

  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  // A URI for object `label` of token T through SoftHSM, with `query` added.
  static std::string uri(std::string_view label, std::string_view query = "pin-value=1234") {
    return "pkcs11:token=T;object=" + std::string(label) + ";type=private?" + std::string(query) +
           "&module-path=" + kSoftHsmModule;
  }

  static PrivateKey load(std::string_view label) {
    auto key = PrivateKey::from_uri(uri(label));
    EXPECT_TRUE(key.has_value()) << label << ": " << key.error().message;
    if (!key) std::abort();
    return std::move(*key);
  }

  static inline std::string setup_error_;
  static inline std::unique_ptr<tests::support::TempDir> dir_;
  static inline std::map<std::string, PublicKey> public_keys_;  // label -> imported key's
  static inline std::optional<Result<PrivateKey>> wrong_pin_first_;
};

TEST_F(Pkcs11KeyTest, EcdsaKeySignsAndVerifies) {
  const PrivateKey key = load("ec");
  EXPECT_TRUE(key.in_token());
  EXPECT_EQ(key.type(), KeyType::ecdsa_p256);
  // The token's key is the imported one.
  EXPECT_EQ(key.public_key().raw, public_keys_.at("ec").raw);
  auto sig = key.sign("signed bytes");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_EQ(static_cast<unsigned char>((*sig)[0]), 0x30u);  // DER, as securesystemslib writes
  EXPECT_TRUE(verify(public_keys_.at("ec"), Scheme::ecdsa_sha2_nistp256, "signed bytes", *sig));
  EXPECT_FALSE(verify(public_keys_.at("ec"), Scheme::ecdsa_sha2_nistp256, "signed byteS", *sig));
  // A second signature differs (ECDSA is randomised) and verifies too.
  auto again = key.sign("signed bytes");
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(*again, *sig);
  EXPECT_TRUE(verify(key.public_key(), Scheme::ecdsa_sha2_nistp256, "signed bytes", *again));
}

TEST_F(Pkcs11KeyTest, RsaKeySignsWithBothSchemes) {
  const PrivateKey key = load("rsa");
  EXPECT_EQ(key.type(), KeyType::rsa);
  EXPECT_EQ(key.public_key().raw, public_keys_.at("rsa").raw);
  for (Scheme scheme : {Scheme::rsassa_pss_sha256, Scheme::rsa_pkcs1v15_sha256}) {
    auto sig = key.sign("m", scheme);
    ASSERT_TRUE(sig.has_value()) << scheme_name(scheme) << ": " << sig.error().message;
    EXPECT_EQ(sig->size(), 384u);
    EXPECT_TRUE(verify(public_keys_.at("rsa"), scheme, "m", *sig)) << scheme_name(scheme);
    const Scheme other = scheme == Scheme::rsassa_pss_sha256 ? Scheme::rsa_pkcs1v15_sha256
                                                             : Scheme::rsassa_pss_sha256;
    EXPECT_FALSE(verify(public_keys_.at("rsa"), other, "m", *sig)) << scheme_name(scheme);
  }
}

TEST_F(Pkcs11KeyTest, Ed25519KeySignsAndVerifies) {
  const PrivateKey key = load("ed");
  EXPECT_EQ(key.type(), KeyType::ed25519);
  EXPECT_EQ(key.public_key().raw, public_keys_.at("ed").raw);
  auto sig = key.sign("m");
  ASSERT_TRUE(sig.has_value()) << sig.error().message;
  EXPECT_TRUE(verify(public_keys_.at("ed"), Scheme::ed25519, "m", *sig));
}

TEST_F(Pkcs11KeyTest, TokenKeyIsTheSameTufKey) {
  const PrivateKey key = load("ec");
  const tuf::Key tuf_key = tuf::Key::from_public(key.public_key());
  EXPECT_EQ(tuf_key.keyid(), tuf::Key::from_public(public_keys_.at("ec")).keyid());
  EXPECT_TRUE(tuf_key.verify("metadata", hex(key.sign("metadata").value_or(""))));
}

TEST_F(Pkcs11KeyTest, TokenKeyStaysInTheToken) {
  PrivateKey key = load("ec");
  auto pem = key.to_pem();
  ASSERT_FALSE(pem.has_value());
  EXPECT_EQ(pem.error().code, Errc::unsupported);
  auto sig = key.sign("m", Scheme::rsassa_pss_sha256);
  ASSERT_FALSE(sig.has_value());
  EXPECT_EQ(sig.error().code, Errc::unsupported);
  // A moved key still signs through its provider.
  PrivateKey moved(std::move(key));
  EXPECT_TRUE(verify(public_keys_.at("ec"), Scheme::ecdsa_sha2_nistp256, "m",
                     moved.sign("m").value_or("")));
}

TEST_F(Pkcs11KeyTest, PinFromFile) {
  auto key = PrivateKey::from_uri(uri("ec", "pin-source=file:" + (*dir_ / "pin").string()));
  ASSERT_TRUE(key.has_value()) << key.error().message;
  EXPECT_EQ(key->public_key().raw, public_keys_.at("ec").raw);
  // A pin-source that cannot be read finds nothing.
  auto missing = PrivateKey::from_uri(uri("ec", "pin-source=file:" + (*dir_ / "none").string()));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

TEST_F(Pkcs11KeyTest, WrongPinIsNotFound) {
  ASSERT_TRUE(wrong_pin_first_.has_value());
  ASSERT_FALSE(wrong_pin_first_->has_value());
  EXPECT_EQ(wrong_pin_first_->error().code, Errc::not_found);
  EXPECT_THAT(wrong_pin_first_->error().message, HasSubstr("wrong PIN"));
}

TEST_F(Pkcs11KeyTest, UnknownObjectOrTokenIsNotFound) {
  for (const std::string& bad :
       {uri("nope"),
        std::string("pkcs11:token=X;object=ec;type=private?pin-value=1234") +
            "&module-path=" + kSoftHsmModule,
        std::string("pkcs11:token=T;object=ec;type=private?pin-value=1234"
                    "&module-path=/nonexistent/libnone.so")}) {
    auto key = PrivateKey::from_uri(bad);
    ASSERT_FALSE(key.has_value()) << bad;
    EXPECT_EQ(key.error().code, Errc::not_found) << bad << ": " << key.error().message;
  }
}

TEST_F(Pkcs11KeyTest, BadUrisAreInvalidArguments) {
  const std::string module = std::string("&module-path=") + kSoftHsmModule;
  struct Case {
    std::string uri;
    const char* message;
  };
  for (const Case& c : {
           Case{"/etc/key.pem", "not a pkcs11: URI"},
           Case{"pkcs11:token=T;object=ec?module-path=" + std::string(kSoftHsmModule), "PIN"},
           Case{"pkcs11:token=T;object=e%zz?pin-value=1234" + module, "%-escape"},
           Case{"pkcs11:token=T;type=private?pin-value=1234" + module, "names 3 private keys"},
           Case{"pkcs11:token=T;object=ec?pin-value=1234&module-path=lib.so", "module-path"},
           Case{"pkcs11:token=T;object=ec?pin-value=1234&module-path=/a$b.so", "module-path"},
       }) {
    auto key = PrivateKey::from_uri(c.uri);
    ASSERT_FALSE(key.has_value()) << c.uri;
    EXPECT_EQ(key.error().code, Errc::invalid_argument) << c.uri << ": " << key.error().message;
    EXPECT_THAT(key.error().message, HasSubstr(c.message)) << c.uri;
  }
}

TEST_F(Pkcs11KeyTest, MissingProviderIsUnsupported) {
  // OpenSSL looks for providers where OPENSSL_MODULES says, at each load: an
  // empty directory has no pkcs11.so. (A module path not used before, so that
  // a new library context loads the provider.)
  fs::create_directories(*dir_ / "no-modules");
  setenv("OPENSSL_MODULES", (*dir_ / "no-modules").c_str(), 1);
  auto key = PrivateKey::from_uri(
      "pkcs11:token=T;object=ec?pin-value=1234&module-path=/usr/lib/softhsm/./libsofthsm2.so");
  unsetenv("OPENSSL_MODULES");
  ASSERT_FALSE(key.has_value());
  EXPECT_EQ(key.error().code, Errc::unsupported) << key.error().message;
  EXPECT_THAT(key.error().message, HasSubstr("pkcs11-provider"));
}

TEST(Pkcs11UriTest, IsUri) {
  EXPECT_TRUE(PrivateKey::is_uri("pkcs11:token=T;object=k"));
  EXPECT_TRUE(PrivateKey::is_uri("pkcs11:"));
  EXPECT_FALSE(PrivateKey::is_uri("PKCS11:token=T"));
  EXPECT_FALSE(PrivateKey::is_uri("keys/root.pem"));
  EXPECT_FALSE(PrivateKey::is_uri(" pkcs11:token=T"));
  EXPECT_FALSE(PrivateKey::is_uri(""));
}

}  // namespace
}  // namespace catalog::crypto
