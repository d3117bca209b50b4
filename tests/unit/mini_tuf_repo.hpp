// A TUF repository built from JSON in memory, for Updater tests that need what
// catalog::tuf::Repository does not write: succinct_roles delegations, role
// names such as "a/b" or "..", bins signed by the wrong key. Served by
// MapFetcher, which answers exact URLs and logs every one asked for.
//
// Every role is version 1 with consistent snapshots; snapshot pins each
// targets role by length and SHA-256, timestamp pins snapshot likewise.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/crypto/signing_key.hpp"
#include "catalog/tuf/fetcher.hpp"
#include "catalog/tuf/key.hpp"
#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/updater.hpp"

namespace catalog::tuf::testing {

using nlohmann::json;

// Serves `files` (exact URL -> bytes); anything else is not_found.
class MapFetcher : public Fetcher {
 public:
  std::map<std::string, std::string> files;
  std::vector<std::string> asked;

  Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                     const ChunkSink& sink) override {
    asked.push_back(url);
    auto it = files.find(url);
    if (it == files.end()) return fail(Errc::not_found, url + ": 404");
    if (it->second.size() > max_bytes) return fail(Errc::length_mismatch, url + ": too long");
    return sink(std::as_bytes(std::span(it->second.data(), it->second.size())));
  }
  std::size_t count(const std::string& url) const {
    return static_cast<std::size_t>(std::count(asked.begin(), asked.end(), url));
  }
};

// An Ed25519 key with its TUF form.
struct Signer {
  std::shared_ptr<crypto::PrivateKey> key;
  std::string keyid;
  json key_json;

  static Signer make() {
    Signer s;
    auto k = crypto::PrivateKey::generate();
    EXPECT_TRUE(k.has_value());
    s.key = std::make_shared<crypto::PrivateKey>(std::move(k.value()));
    s.key_json = {{"keytype", "ed25519"},
                  {"scheme", "ed25519"},
                  {"keyval", {{"public", s.key->public_key().hex()}}}};
    s.keyid = Key::from_json(s.key_json, "key").value().keyid();
    return s;
  }
};

inline std::string hex_of(std::string_view raw) {
  return crypto::to_hex(std::span<const unsigned char>(
      reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
}

// `signed_json` in an envelope signed by `signers`.
inline std::string envelope(const json& signed_json, const std::vector<const Signer*>& signers) {
  const std::string canon = canonical_json(signed_json).value();
  json sigs = json::array();
  for (const Signer* s : signers) {
    sigs.push_back({{"keyid", s->keyid}, {"sig", hex_of(s->key->sign(canon).value())}});
  }
  return json{{"signatures", sigs}, {"signed", signed_json}}.dump(1);
}

class MiniRepo {
 public:
  static constexpr const char* kMeta = "repo:/metadata/";
  static constexpr const char* kTargets = "repo:/targets/";

  explicit MiniRepo(TimePoint now) : now_(now) {
    for (const char* r : {"root", "timestamp", "snapshot", "targets"}) top_[r] = Signer::make();
    targets_ = common("targets", 90);
    targets_["targets"] = json::object();
  }

  // Top-level targets' signed object (edit before publish()).
  json& targets() { return targets_; }
  // A delegated role's signed object, created empty on first use; signed by
  // `signer` at publish().
  json& role(const std::string& name, const Signer& signer) {
    auto [it, fresh] = roles_.try_emplace(name);
    if (fresh) {
      it->second.signed_json = common("targets", 90);
      it->second.signed_json["targets"] = json::object();
    }
    it->second.signer = &signer;
    return it->second.signed_json;
  }
  // A target entry for `bytes` (its length and SHA-256).
  static json target(const std::string& bytes) {
    return {{"length", bytes.size()}, {"hashes", {{"sha256", crypto::sha256_hex(bytes)}}}};
  }

  // Signs everything into `fetcher.files` under the URLs a client asks for:
  // "<N>.root.json", "timestamp.json", "1.snapshot.json", "1.<quoted role>.json".
  void publish(MapFetcher& fetcher) {
    json root = common("root", 365);
    root["consistent_snapshot"] = true;
    root["keys"] = json::object();
    root["roles"] = json::object();
    for (const auto& [name, s] : top_) {
      root["keys"][s.keyid] = s.key_json;
      root["roles"][name] = {{"keyids", {s.keyid}}, {"threshold", 1}};
    }
    root_bytes_ = envelope(root, {&top_.at("root")});
    fetcher.files[std::string(kMeta) + "1.root.json"] = root_bytes_;
    json snapshot = common("snapshot", 7);
    snapshot["meta"] = json::object();
    auto add = [&](const std::string& name, const std::string& bytes) {
      fetcher.files[std::string(kMeta) + "1." + url_quote(name, false) + ".json"] = bytes;
      snapshot["meta"][name + ".json"] = {{"version", 1},
                                          {"length", bytes.size()},
                                          {"hashes", {{"sha256", crypto::sha256_hex(bytes)}}}};
    };
    add("targets", envelope(targets_, {&top_.at("targets")}));
    for (const auto& [name, r] : roles_) add(name, envelope(r.signed_json, {r.signer}));
    const std::string snapshot_bytes = envelope(snapshot, {&top_.at("snapshot")});
    fetcher.files[std::string(kMeta) + "1.snapshot.json"] = snapshot_bytes;
    json timestamp = common("timestamp", 1);
    timestamp["meta"] = {{"snapshot.json",
                          {{"version", 1},
                           {"length", snapshot_bytes.size()},
                           {"hashes", {{"sha256", crypto::sha256_hex(snapshot_bytes)}}}}}};
    fetcher.files[std::string(kMeta) + "timestamp.json"] =
        envelope(timestamp, {&top_.at("timestamp")});
  }

  const std::string& root_bytes() const { return root_bytes_; }

 private:
  struct DelegatedMeta {
    json signed_json;
    const Signer* signer = nullptr;
  };

  json common(const char* type, int days) const {
    return {{"_type", type},
            {"spec_version", "1.0.31"},
            {"version", 1},
            {"expires", format_expires(now_ + std::chrono::days{days})}};
  }

  TimePoint now_;
  std::map<std::string, Signer> top_;
  json targets_;
  std::map<std::string, DelegatedMeta> roles_;
  std::string root_bytes_;
};

}  // namespace catalog::tuf::testing
