// A TUF public key as metadata carries it, and signature checks against it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "catalog/crypto/ed25519.hpp"
#include "catalog/error.hpp"

namespace catalog::tuf {

struct Key {
  std::string keytype;     // "ed25519" is the only type this client verifies
  std::string scheme;      // "ed25519"
  std::string public_hex;  // keyval.public
  nlohmann::json unrecognized = nlohmann::json::object();  // kept for re-signing

  // Strict parse of {"keytype","scheme","keyval":{"public"}}. Keys of other
  // types parse (a root may list them) but never verify anything.
  static Result<Key> from_json(const nlohmann::json& j, std::string_view path);
  static Key from_public(const crypto::PublicKey& pub);
  nlohmann::json to_json() const;

  // Key id as the spec defines it: hex SHA-256 of the key's canonical JSON.
  std::string keyid() const;

  // What makes two entries one key: keytype, scheme and the public key value
  // (hex-decoded when it decodes, so "AB.." and "ab.." are one key); fields
  // not recognised do not count. Two key ids of equal identity name one
  // signer, which a threshold counts once (verify_threshold).
  std::string identity() const;

  // True only for a supported key type whose key and signature are well formed
  // and the signature is valid for `message`. Never throws.
  bool verify(std::string_view message, std::string_view signature_hex) const;
};

using KeyMap = std::map<std::string, Key>;  // keyid -> key

}  // namespace catalog::tuf
