// A TUF public key as metadata carries it, and signature checks against it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/crypto/public_key.hpp"
#include "catalog/error.hpp"

namespace catalog::tuf {

// The key types and schemes this client verifies (crypto::verify does the work):
//   keytype "ed25519"                         scheme "ed25519"              keyval.public hex
//   keytype "ecdsa" (or "ecdsa-sha2-nistp256") scheme "ecdsa-sha2-nistp256"  PEM, or hex of a
//                                              SEC1 point or DER SPKI
//   keytype "rsa"                              scheme "rsassa-pss-sha256" or
//                                              "rsa-pkcs1v15-sha256"       PEM, or hex DER SPKI
// keyval.public is PEM when it starts with "-----BEGIN", hex otherwise.
struct Key {
  std::string keytype;     // "ed25519", "ecdsa", "ecdsa-sha2-nistp256", "rsa", or any other
  std::string scheme;      // see above
  std::string public_hex;  // keyval.public as written: hex or PEM (the name is historical)
  nlohmann::json unrecognized = nlohmann::json::object();  // kept for re-signing
  // keyval members other than "public", kept for re-signing (a sigstore-oidc
  // key's identity and issuer, say).
  nlohmann::json keyval_unrecognized = nlohmann::json::object();
  // False only for a key of an unsupported keytype whose keyval has no "public"
  // (RSTUF writes sigstore-oidc keys so); such a key never verifies.
  bool has_public = true;

  // Strict parse of {"keytype","scheme","keyval":{"public"}}. Keys of other
  // types and schemes parse (a root may list them) but never verify anything;
  // for them alone keyval.public may be absent.
  static Result<Key> from_json(const nlohmann::json& j, std::string_view path);
  // The key as securesystemslib writes it (SSlibKey.from_crypto): ed25519 ->
  // "ed25519"/"ed25519"/hex; ecdsa -> "ecdsa"/"ecdsa-sha2-nistp256"/SPKI PEM;
  // rsa -> "rsa"/"rsassa-pss-sha256"/SPKI PEM. `pub` must be well formed (as
  // every PublicKey crypto returns is).
  static Key from_public(const crypto::PublicKey& pub);
  // The same with another scheme for the key (rsa-pkcs1v15-sha256); `scheme`
  // must fit pub.type.
  static Key from_public(const crypto::PublicKey& pub, crypto::Scheme scheme);
  nlohmann::json to_json() const;

  // The scheme, when keytype and scheme are a supported pair (table above).
  std::optional<crypto::Scheme> scheme_id() const;
  // The parsed public key: Errc::unsupported when scheme_id() is nullopt;
  // Errc::malformed (or unsupported) when keyval.public does not parse as a key
  // of the scheme's type.
  Result<crypto::PublicKey> public_key() const;

  // Key id as the spec defines it: hex SHA-256 of the key's canonical JSON.
  std::string keyid() const;

  // What makes two entries one key. For a supported key whose public value
  // parses: the key type and the canonical public key (so hex and PEM, PEM line
  // wrapping, "ecdsa" and "ecdsa-sha2-nistp256", and the two RSA schemes of one
  // key are one key). Otherwise: keytype, scheme and the public value
  // (hex-decoded when it decodes). Fields not recognised never count. Two key
  // ids of equal identity name one signer, which a threshold counts once
  // (verify_threshold).
  std::string identity() const;

  // True only for a supported key type and scheme whose key and signature
  // (hex, either case) are well formed and the signature is valid for
  // `message`. Never throws.
  bool verify(std::string_view message, std::string_view signature_hex) const;
};

using KeyMap = std::map<std::string, Key>;  // keyid -> key

}  // namespace catalog::tuf
