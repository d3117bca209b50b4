// Signing keys for epbroker-publish: where they come from (a --keys directory
// of PEM files, --key PEM files or PKCS#11 URIs of keys in hardware tokens),
// how new ones are written, and how a publish's outcome is told.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "catalog/crypto/signing_key.hpp"
#include "catalog/error.hpp"
#include "catalog/tuf/repository.hpp"
#include "tools/cli.hpp"

namespace catalog::tools {

// "ed25519" (default), "ecdsa" (P-256) or "rsa" (3072 bits) from --key-type.
Result<crypto::KeyType> key_type_option(const Args& args);

// One --key value: a "pkcs11:" URI (the key stays in its token) or a PEM
// private key file. Errors name the value.
Result<crypto::PrivateKey> load_signing_key(const std::string& spec);

// A PEM public key file (SubjectPublicKeyInfo) of any supported type.
Result<crypto::PublicKey> load_public_key(const std::string& file);

// Writes a private key with mode 0600; refuses to overwrite.
Result<void> write_key(const std::filesystem::path& path, const crypto::PrivateKey& key);

struct Loaded {
  tuf::Repository repo;
  std::vector<std::pair<std::filesystem::path, std::string>> key_files;  // --keys file, keyid
};

// --repo, with the keys of --keys DIR (every *.pem in it, if given) and of
// every --key. Errc::invalid_argument when neither gives a key.
Result<Loaded> open_repo(const Args& args);

// Prints what publish_or_stage() published and staged, one line per role.
void print_report(const tuf::Repository::PublishReport& report);

}  // namespace catalog::tools
