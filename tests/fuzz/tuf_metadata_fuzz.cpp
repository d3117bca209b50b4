// libFuzzer target: TUF metadata parsing and verification (catalog/tuf).
//
// The first byte picks a mode; the rest is the input of that mode:
//   'P' parse: one metadata file, parsed as each of the four roles; a role that
//       parses must survive to_json -> role_from_json unchanged, and its
//       canonical form must exist. Canonical JSON of any parsed JSON document.
//   'C' chain: NUL-separated metadata files fed to a TrustedSet that trusts the
//       fuzz repository's root (tests/fuzz/fuzz_support.hpp), in the Updater's
//       order (root updates, then timestamp, snapshot, targets, delegated roles;
//       each file dispatched by its "_type"), stopping at the first refusal as
//       the Updater does. Targets that join have their EP metadata parsed.
//   'S' signed chain: as 'C', but each part is a bare `signed` object that the
//       harness signs with every fixed key first, so mutations reach the rules
//       behind the signature checks (versions, rollback, pins, delegations).
// Any other first byte selects a mode by its value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/tuf/key.hpp"
#include "catalog/tuf/metadata.hpp"
#include "catalog/tuf/trusted_set.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using nlohmann::json;
namespace tuf = catalog::tuf;
using epbroker_fuzz::finding;

// At most this many files per chain: a root chain of a few versions and the rest.
constexpr std::size_t kMaxChainParts = 12;

template <typename T>
void parse_as(std::string_view bytes) {
  auto md = tuf::parse_metadata<T>(bytes);
  if (!md) return;
  // A role that parsed must come back from its own JSON form, identical.
  const json j = tuf::to_json(md->signed_);
  auto again = tuf::role_from_json<T>(j);
  if (!again) finding(std::string(T::kType) + ": to_json output refused: " + again.error().message);
  if (tuf::to_json(*again) != j) finding(std::string(T::kType) + ": to_json round trip differs");
  if (!catalog::canonical_json(j)) finding(std::string(T::kType) + ": no canonical form");
  if constexpr (std::is_same_v<T, tuf::Targets>) {
    for (const auto& [path, target] : md->signed_.targets) {
      if (target.custom.is_object()) (void)catalog::parse_ep_metadata(target.custom);
      if (md->signed_.delegations) {
        for (const auto& role : md->signed_.delegations->roles) (void)role.is_delegated_path(path);
      }
    }
  }
}

void parse_mode(std::string_view bytes) {
  parse_as<tuf::Root>(bytes);
  parse_as<tuf::Timestamp>(bytes);
  parse_as<tuf::Snapshot>(bytes);
  parse_as<tuf::Targets>(bytes);
  if (auto doc = catalog::parse_json(bytes)) {
    if (auto canon = catalog::canonical_json(*doc)) {
      // The canonical form survives a trip through ordinary JSON text (what a
      // publisher writes). (Canonical JSON itself is not always JSON: control
      // bytes in strings stay raw, as in securesystemslib.)
      auto back = catalog::parse_json(doc->dump());
      if (!back) finding("dump() output does not parse: " + back.error().message);
      auto twice = catalog::canonical_json(*back);
      if (!twice || *twice != *canon) finding("canonical form changed through dump/parse");
    }
  }
}

// The fixed keys, loaded once: (key id, private key).
const std::vector<std::pair<std::string, catalog::crypto::PrivateKey>>& signers() {
  static const auto keys = [] {
    std::vector<std::pair<std::string, catalog::crypto::PrivateKey>> out;
    for (const std::string& role : epbroker_fuzz::fixed_key_roles()) {
      auto key = epbroker_fuzz::fixed_key(role);
      out.emplace_back(tuf::Key::from_public(key.public_key()).keyid(), std::move(key));
    }
    return out;
  }();
  return keys;
}

// An envelope around `signed_text` signed by every fixed key; the text itself
// when it is not a JSON object with a canonical form.
std::string sign_all(std::string_view signed_text) {
  auto doc = catalog::parse_json(signed_text);
  if (!doc || !doc->is_object()) return std::string(signed_text);
  auto canon = catalog::canonical_json(*doc);
  if (!canon) return std::string(signed_text);
  json sigs = json::array();
  for (const auto& [keyid, key] : signers()) {
    auto sig = key.sign(*canon);
    if (!sig) finding("sign: " + sig.error().message);
    const auto* raw = reinterpret_cast<const unsigned char*>(sig->data());
    sigs.push_back(
        {{"keyid", keyid}, {"sig", catalog::crypto::to_hex(std::span(raw, sig->size()))}});
  }
  return json{{"signatures", sigs}, {"signed", *doc}}.dump();
}

std::string type_of(std::string_view bytes) {
  auto doc = catalog::parse_json(bytes);
  if (!doc || !doc->is_object()) return "";
  auto s = doc->find("signed");
  if (s == doc->end() || !s->is_object()) return "";
  auto t = s->find("_type");
  return t != s->end() && t->is_string() ? t->get<std::string>() : "";
}

// The next delegated role to load: the `n`-th role delegated by any loaded
// targets role (pre-order), as (name, delegator).
std::pair<std::string, std::string> delegated_role(const tuf::TrustedSet& set, std::size_t n) {
  std::vector<std::pair<std::string, std::string>> all;
  std::vector<std::string> todo{"targets"};
  while (!todo.empty() && all.size() < 64) {
    const std::string name = todo.back();
    todo.pop_back();
    const auto* md = set.targets(name);
    if (md == nullptr || !md->signed_.delegations) continue;
    for (const auto& r : md->signed_.delegations->roles) {
      all.emplace_back(r.name, name);
      todo.push_back(r.name);
    }
  }
  if (all.empty()) return {"vendor", "targets"};
  return all[n % all.size()];
}

void chain_mode(std::string_view data, bool resign) {
  auto set = tuf::TrustedSet::create(epbroker_fuzz::trusted_root(), epbroker_fuzz::kUpdateTime);
  if (!set) finding("the fuzz repository's root is not trusted: " + set.error().message);
  bool roots_done = false;
  std::size_t delegated = 0;
  for (std::string_view part : epbroker_fuzz::split_parts(data, kMaxChainParts)) {
    const std::string bytes = resign ? sign_all(part) : std::string(part);
    const std::string type = type_of(bytes);
    if (type == "root" && !roots_done) {
      if (auto r = set->update_root(bytes); !r) {
        if (epbroker_fuzz::verbose())
          std::fprintf(stderr, "chain stops at root: %s\n", r.error().message.c_str());
        return;
      }
      continue;
    }
    if (!roots_done) {
      roots_done = true;
      if (auto r = set->check_final_root(); !r) {
        if (epbroker_fuzz::verbose())
          std::fprintf(stderr, "chain stops at final root: %s\n", r.error().message.c_str());
        return;
      }
    }
    catalog::Result<void> ok;
    if (type == "snapshot") {
      ok = set->update_snapshot(bytes);
    } else if (type == "targets" && set->targets("targets") == nullptr) {
      ok = set->update_delegated_targets(bytes, "targets", "root");
    } else if (type == "targets") {
      const auto [name, delegator] = delegated_role(*set, delegated++);
      ok = set->update_delegated_targets(bytes, name, delegator);
    } else {
      ok = set->update_timestamp(bytes);
    }
    if (!ok) {
      if (epbroker_fuzz::verbose())
        std::fprintf(stderr, "chain stops at %s: %s\n", type.c_str(), ok.error().message.c_str());
      return;
    }
  }
  if (epbroker_fuzz::verbose()) std::fprintf(stderr, "chain accepted whole\n");
  // What the daemon does with the targets it trusts: read each one's EP metadata.
  for (const char* role : {"targets", "vendor"}) {
    const auto* md = set->targets(role);
    if (md == nullptr) continue;
    for (const auto& [path, target] : md->signed_.targets) {
      if (target.custom.is_object()) (void)catalog::parse_ep_metadata(target.custom);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] == 'P' ? 0 : data[0] == 'C' ? 1 : data[0] == 'S' ? 2 : data[0] % 3) {
    case 0:
      parse_mode(rest);
      break;
    case 1:
      chain_mode(rest, false);
      break;
    default:
      chain_mode(rest, true);
      break;
  }
  return 0;
}
