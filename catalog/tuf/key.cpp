#include "catalog/tuf/key.hpp"

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/json_fields.hpp"

namespace catalog::tuf {

Result<Key> Key::from_json(const nlohmann::json& j, std::string_view path) {
  Key k;
  auto keytype = json::string_field(j, "keytype", path);
  if (!keytype) return std::unexpected(keytype.error());
  auto scheme = json::string_field(j, "scheme", path);
  if (!scheme) return std::unexpected(scheme.error());
  auto keyval = json::object_field(j, "keyval", path);
  if (!keyval) return std::unexpected(keyval.error());
  auto pub = json::string_field(**keyval, "public", json::join(path, "keyval"));
  if (!pub) return std::unexpected(pub.error());
  k.keytype = *keytype;
  k.scheme = *scheme;
  k.public_hex = *pub;
  for (const auto& [name, value] : j.items()) {
    if (name != "keytype" && name != "scheme" && name != "keyval") k.unrecognized[name] = value;
  }
  return k;
}

Key Key::from_public(const crypto::PublicKey& pub) {
  return Key{"ed25519", "ed25519", pub.hex(), nlohmann::json::object()};
}

nlohmann::json Key::to_json() const {
  nlohmann::json j = unrecognized;
  j["keytype"] = keytype;
  j["scheme"] = scheme;
  j["keyval"] = {{"public", public_hex}};
  return j;
}

std::string Key::keyid() const {
  // to_json() has only strings and objects, so canonicalisation cannot fail.
  return crypto::sha256_hex(canonical_json(to_json()).value_or(""));
}

std::string Key::identity() const {
  // Each part length-prefixed, so no two different triples give one string.
  auto part = [](std::string_view tag, std::string_view v) {
    return std::string(tag) + std::to_string(v.size()) + ':' + std::string(v);
  };
  auto raw = crypto::from_hex(public_hex);
  return part("t", keytype) + part("s", scheme) + (raw ? part("k", *raw) : part("x", public_hex));
}

bool Key::verify(std::string_view message, std::string_view signature_hex) const {
  if (keytype != "ed25519" || scheme != "ed25519") return false;
  auto pub = crypto::from_hex(public_hex);
  auto sig = crypto::from_hex(signature_hex);
  if (!pub || !sig) return false;
  return crypto::verify_ed25519(*pub, message, *sig);
}

}  // namespace catalog::tuf
