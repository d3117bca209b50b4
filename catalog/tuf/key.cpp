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
  k.keytype = *keytype;
  k.scheme = *scheme;
  // keyval.public is required of the key types this client knows, and
  // optional for the others (which never verify).
  if ((*keyval)->contains("public") || crypto::key_type_from_name(k.keytype)) {
    auto pub = json::string_field(**keyval, "public", json::join(path, "keyval"));
    if (!pub) return std::unexpected(pub.error());
    k.public_hex = *pub;
  } else {
    k.has_public = false;
  }
  for (const auto& [name, value] : (*keyval)->items()) {
    if (name != "public") k.keyval_unrecognized[name] = value;
  }
  for (const auto& [name, value] : j.items()) {
    if (name != "keytype" && name != "scheme" && name != "keyval") k.unrecognized[name] = value;
  }
  return k;
}

Key Key::from_public(const crypto::PublicKey& pub) {
  return from_public(pub, crypto::default_scheme(pub.type));
}

Key Key::from_public(const crypto::PublicKey& pub, crypto::Scheme scheme) {
  // securesystemslib: raw hex for Ed25519, SubjectPublicKeyInfo PEM otherwise.
  std::string value = pub.type == crypto::KeyType::ed25519 ? pub.hex() : pub.pem().value_or("");
  return Key{std::string(crypto::key_type_name(pub.type)), std::string(crypto::scheme_name(scheme)),
             std::move(value), nlohmann::json::object()};
}

nlohmann::json Key::to_json() const {
  nlohmann::json j = unrecognized;
  j["keytype"] = keytype;
  j["scheme"] = scheme;
  j["keyval"] = keyval_unrecognized;
  if (has_public) j["keyval"]["public"] = public_hex;
  return j;
}

std::optional<crypto::Scheme> Key::scheme_id() const {
  const auto id = crypto::scheme_from_name(scheme);
  const auto type = crypto::key_type_from_name(keytype);
  if (!id || !type || crypto::key_type_of(*id) != *type) return std::nullopt;
  return id;
}

Result<crypto::PublicKey> Key::public_key() const {
  // 1. The key type comes from the (supported) keytype/scheme pair.
  const auto id = scheme_id();
  if (!id) {
    return fail(Errc::unsupported,
                "key type '" + keytype + "' with scheme '" + scheme + "' is not supported");
  }
  const crypto::KeyType type = crypto::key_type_of(*id);
  // 2. keyval.public: PEM, else hex.
  if (!public_hex.starts_with("-----BEGIN")) return crypto::PublicKey::from_hex(type, public_hex);
  auto pub = crypto::PublicKey::from_pem(public_hex);
  if (!pub) return pub;
  if (pub->type != type) {
    return fail(Errc::malformed,
                "keyval.public is not a " + std::string(crypto::key_type_name(type)) + " key");
  }
  return pub;
}

std::string Key::keyid() const {
  // to_json() has only strings and objects, so canonicalisation cannot fail.
  return crypto::sha256_hex(canonical_json(to_json()).value_or(""));
}

std::string Key::identity() const {
  // Each part length-prefixed, so no two different tuples give one string; the
  // two forms start with different tags, so they never meet either.
  auto part = [](std::string_view tag, std::string_view v) {
    return std::string(tag) + std::to_string(v.size()) + ':' + std::string(v);
  };
  if (auto pub = public_key()) {
    return part("T", crypto::key_type_name(pub->type)) + part("K", pub->raw);
  }
  auto raw = crypto::from_hex(public_hex);
  return part("t", keytype) + part("s", scheme) + (raw ? part("k", *raw) : part("x", public_hex)) +
         part("v", keyval_unrecognized.dump()) + part("p", has_public ? "1" : "0");
}

bool Key::verify(std::string_view message, std::string_view signature_hex) const {
  const auto id = scheme_id();
  if (!id) return false;
  auto pub = public_key();
  auto sig = crypto::from_hex(signature_hex);
  if (!pub || !sig) return false;
  return crypto::verify(*pub, *id, message, *sig);
}

}  // namespace catalog::tuf
