#include "catalog/tuf/metadata.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/json_fields.hpp"

namespace catalog::tuf {

using nlohmann::json;
namespace js = catalog::json;

// ---- time -------------------------------------------------------------------

Result<TimePoint> parse_expires(std::string_view s) {
  // The spec's form is "YYYY-MM-DDTHH:MM:SSZ". go-tuf wrote sigstore's first
  // roots in other RFC 3339 forms ("...:12.99008-06:00", "...:02.663975009Z"),
  // so a fraction of a second (dropped: the expiry moves earlier, never
  // later) and a "+HH:MM"/"-HH:MM" offset are read too.
  auto bad = [&] { return js::field_error("expires", "expected YYYY-MM-DDTHH:MM:SSZ"); };
  auto digits = [&](std::size_t pos, std::size_t len) {
    return pos + len <= s.size() &&
           std::all_of(s.begin() + static_cast<long>(pos), s.begin() + static_cast<long>(pos + len),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  auto num = [&](std::size_t pos, std::size_t len, int& out) {
    if (!digits(pos, len)) return false;
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
    return ec == std::errc() && p == s.data() + pos + len;
  };
  // 1. The date and time, as the spec writes them.
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':') {
    return bad();
  }
  int y, mo, d, h, mi, se;
  if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) ||
      !num(17, 2, se)) {
    return bad();
  }
  // 2. An optional fraction (1 to 9 digits), then "Z" or an offset.
  std::size_t pos = 19;
  if (s[pos] == '.') {
    std::size_t n = 0;
    while (digits(pos + 1 + n, 1)) ++n;
    if (n == 0 || n > 9) return bad();
    pos += 1 + n;
  }
  int offset_minutes = 0;
  if (pos + 1 == s.size() && s[pos] == 'Z') {
    // UTC
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    int oh, om;
    if (!num(pos + 1, 2, oh) || !num(pos + 4, 2, om) || oh > 23 || om > 59) return bad();
    offset_minutes = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return bad();
  }
  std::chrono::year_month_day ymd{std::chrono::year{y},
                                  std::chrono::month{static_cast<unsigned>(mo)},
                                  std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || se > 59) return bad();
  return TimePoint{std::chrono::sys_days{ymd}} + std::chrono::hours{h} + std::chrono::minutes{mi} +
         std::chrono::seconds{se} - std::chrono::minutes{offset_minutes};
}

std::string format_expires(TimePoint t) {
  // GCC 12 has no std::format. The year is zero-padded to 4 digits, as
  // parse_expires() requires (strftime's %Y writes year 507 as "507"; found by
  // tests/fuzz/tuf_metadata).
  const auto day = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{t - day};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

// ---- pieces -----------------------------------------------------------------

namespace {

Result<void> parse_common(const json& j, std::string_view type, Common& c,
                          std::initializer_list<std::string_view> role_fields) {
  const std::string path = "signed";
  if (!j.is_object()) return js::field_error(path, "expected object");
  auto t = js::string_field(j, "_type", path);
  if (!t) return std::unexpected(t.error());
  if (*t != type) {
    return js::field_error("signed._type",
                           "expected '" + std::string(type) + "', got '" + *t + "'");
  }
  auto spec = js::string_field(j, "spec_version", path);
  if (!spec) return std::unexpected(spec.error());
  // Accept any 1.x.y: the spec promises minor versions stay compatible.
  // MAJOR.MINOR or MAJOR.MINOR.PATCH, decimal numbers only.
  std::string_view sv = *spec;
  int major = 0;
  std::size_t parts = 0;
  bool well_formed = !sv.empty();
  for (std::size_t pos = 0; well_formed && pos <= sv.size();) {
    auto dot = sv.find('.', pos);
    auto part = sv.substr(pos, dot == std::string_view::npos ? sv.npos : dot - pos);
    well_formed =
        !part.empty() && part.size() <= 9 &&
        std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (well_formed && parts == 0) std::from_chars(part.data(), part.data() + part.size(), major);
    ++parts;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (!well_formed || parts < 2 || parts > 3) {
    return js::field_error("signed.spec_version", "malformed '" + *spec + "'");
  }
  if (major != 1) {
    return fail(Errc::unsupported, "signed.spec_version: unsupported '" + *spec + "'");
  }
  c.spec_version = *spec;
  auto v = js::uint_field(j, "version", path);
  if (!v) return std::unexpected(v.error());
  if (*v == 0) return js::field_error("signed.version", "must be >= 1");
  c.version = *v;
  auto exp = js::string_field(j, "expires", path);
  if (!exp) return std::unexpected(exp.error());
  auto tp = parse_expires(*exp);
  if (!tp) return js::field_error("signed.expires", "expected YYYY-MM-DDTHH:MM:SSZ");
  c.expires = *tp;
  c.unrecognized = json::object();
  for (const auto& [k, val] : j.items()) {
    bool known = k == "_type" || k == "spec_version" || k == "version" || k == "expires";
    for (auto f : role_fields) known = known || k == f;
    if (!known) c.unrecognized[k] = val;
  }
  return {};
}

json common_json(const Common& c, std::string_view type) {
  json j = c.unrecognized;
  j["_type"] = type;
  j["spec_version"] = c.spec_version;
  j["version"] = c.version;
  j["expires"] = format_expires(c.expires);
  return j;
}

Result<std::vector<std::string>> string_list(const json& obj, std::string_view key,
                                             const std::string& path, bool unique) {
  auto arr = js::array_field(obj, key, path);
  if (!arr) return std::unexpected(arr.error());
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::size_t i = 0;
  for (const auto& e : **arr) {
    auto s = js::as_string(e, js::join(path, key) + "[" + std::to_string(i++) + "]");
    if (!s) return std::unexpected(s.error());
    if (unique && !seen.insert(*s).second) {
      return js::field_error(js::join(path, key), "duplicate entry '" + *s + "'");
    }
    out.push_back(*s);
  }
  return out;
}

Result<Role> parse_role(const json& j, const std::string& path) {
  Role r;
  auto ids = string_list(j, "keyids", path, /*unique=*/true);
  if (!ids) return std::unexpected(ids.error());
  r.keyids = std::move(*ids);
  auto th = js::uint_field(j, "threshold", path);
  if (!th) return std::unexpected(th.error());
  if (*th == 0) return js::field_error(js::join(path, "threshold"), "must be >= 1");
  r.threshold = *th;
  return r;
}

Result<KeyMap> parse_keys(const json& j, const std::string& path) {
  if (!j.is_object()) return js::field_error(path, "expected object");
  KeyMap keys;
  for (const auto& [id, kj] : j.items()) {
    auto k = Key::from_json(kj, js::join(path, id));
    if (!k) return std::unexpected(k.error());
    keys.emplace(id, std::move(*k));
  }
  return keys;
}

json keys_json(const KeyMap& keys) {
  json j = json::object();
  for (const auto& [id, k] : keys) j[id] = k.to_json();
  return j;
}

Result<std::map<std::string, std::string>> parse_hashes(const json& j, const std::string& path) {
  if (!j.is_object() || j.empty()) return js::field_error(path, "expected non-empty object");
  std::map<std::string, std::string> out;
  for (const auto& [algo, h] : j.items()) {
    auto s = js::as_string(h, js::join(path, algo));
    if (!s) return std::unexpected(s.error());
    out.emplace(algo, *s);
  }
  return out;
}

Result<MetaFile> parse_metafile(const json& j, const std::string& path) {
  MetaFile m;
  auto v = js::uint_field(j, "version", path);
  if (!v) return std::unexpected(v.error());
  if (*v == 0) return js::field_error(js::join(path, "version"), "must be >= 1");
  m.version = *v;
  auto len = js::optional_uint_field(j, "length", path);
  if (!len) return std::unexpected(len.error());
  m.length = *len;
  if (j.contains("hashes")) {
    auto h = parse_hashes(j["hashes"], js::join(path, "hashes"));
    if (!h) return std::unexpected(h.error());
    m.hashes = std::move(*h);
  }
  return m;
}

Result<TargetFile> parse_targetfile(const std::string& name, const json& j,
                                    const std::string& path) {
  TargetFile f;
  f.path = name;
  if (name.empty()) return js::field_error(path, "empty target path");
  auto len = js::uint_field(j, "length", path);
  if (!len) return std::unexpected(len.error());
  f.length = *len;
  auto hj = js::object_field(j, "hashes", path);
  if (!hj) return std::unexpected(hj.error());
  auto h = parse_hashes(**hj, js::join(path, "hashes"));
  if (!h) return std::unexpected(h.error());
  f.hashes = std::move(*h);
  auto custom = js::optional_object_field(j, "custom", path);
  if (!custom) return std::unexpected(custom.error());
  f.custom = *custom ? **custom : json();
  return f;
}

Result<DelegatedRole> parse_delegated_role(const json& rj, const std::string& rpath) {
  DelegatedRole r;
  auto base = parse_role(rj, rpath);
  if (!base) return std::unexpected(base.error());
  static_cast<Role&>(r) = std::move(*base);
  auto name = js::string_field(rj, "name", rpath);
  if (!name) return std::unexpected(name.error());
  // As python-tuf: a name is data (the Updater quotes it wherever it becomes a
  // URL or a file name), only never empty nor a top-level role's.
  if (name->empty() || *name == "root" || *name == "timestamp" || *name == "snapshot" ||
      *name == "targets") {
    return js::field_error(rpath + ".name", "invalid role name '" + *name + "'");
  }
  r.name = *name;
  auto term = js::bool_field(rj, "terminating", rpath);
  if (!term) return std::unexpected(term.error());
  r.terminating = *term;
  bool has_paths = rj.contains("paths");
  bool has_prefixes = rj.contains("path_hash_prefixes");
  if (has_paths == has_prefixes) {
    return js::field_error(rpath, "exactly one of paths and path_hash_prefixes is required");
  }
  auto list = string_list(rj, has_paths ? "paths" : "path_hash_prefixes", rpath, false);
  if (!list) return std::unexpected(list.error());
  (has_paths ? r.paths : r.path_hash_prefixes) = std::move(*list);
  return r;
}

Result<SuccinctRoles> parse_succinct_roles(const json& j, const std::string& path) {
  if (!j.is_object()) return js::wrong_type(path, "object", j);
  SuccinctRoles s;
  auto base = parse_role(j, path);
  if (!base) return std::unexpected(base.error());
  static_cast<Role&>(s) = std::move(*base);
  auto bits = js::uint_field(j, "bit_length", path);
  if (!bits) return std::unexpected(bits.error());
  if (*bits < 1 || *bits > 32) {
    return js::field_error(js::join(path, "bit_length"),
                           "must be between 1 and 32, got " + std::to_string(*bits));
  }
  s.bit_length = static_cast<std::uint32_t>(*bits);
  auto prefix = js::string_field(j, "name_prefix", path);
  if (!prefix) return std::unexpected(prefix.error());
  s.name_prefix = std::move(*prefix);
  return s;
}

Result<Delegations> parse_delegations(const json& j) {
  const std::string path = "signed.delegations";
  Delegations d;
  auto kj = js::object_field(j, "keys", path);
  if (!kj) return std::unexpected(kj.error());
  auto keys = parse_keys(**kj, path + ".keys");
  if (!keys) return std::unexpected(keys.error());
  d.keys = std::move(*keys);
  // 1. Exactly one of the two forms (TAP 15; python-tuf refuses both and neither).
  if (j.contains("roles") == j.contains("succinct_roles")) {
    return js::field_error(path, "exactly one of roles and succinct_roles is required");
  }
  if (j.contains("succinct_roles")) {
    auto s = parse_succinct_roles(j["succinct_roles"], path + ".succinct_roles");
    if (!s) return std::unexpected(s.error());
    d.succinct_roles = std::move(*s);
    return d;
  }
  // 2. Listed roles, names unique.
  auto roles = js::array_field(j, "roles", path);
  if (!roles) return std::unexpected(roles.error());
  std::set<std::string> names;
  std::size_t i = 0;
  for (const auto& rj : **roles) {
    const std::string rpath = path + ".roles[" + std::to_string(i++) + "]";
    auto r = parse_delegated_role(rj, rpath);
    if (!r) return std::unexpected(r.error());
    if (!names.insert(r->name).second) {
      return js::field_error(rpath + ".name", "duplicate role name '" + r->name + "'");
    }
    d.roles.push_back(std::move(*r));
  }
  return d;
}

}  // namespace

// ---- roles ------------------------------------------------------------------

template <>
Result<Root> role_from_json<Root>(const json& j) {
  Root r;
  if (auto c = parse_common(j, Root::kType, r, {"consistent_snapshot", "keys", "roles"}); !c) {
    return std::unexpected(c.error());
  }
  if (j.contains("consistent_snapshot")) {
    auto cs = js::bool_field(j, "consistent_snapshot", "signed");
    if (!cs) return std::unexpected(cs.error());
    r.consistent_snapshot = *cs;
  } else {
    r.consistent_snapshot = false;
  }
  auto kj = js::object_field(j, "keys", "signed");
  if (!kj) return std::unexpected(kj.error());
  auto keys = parse_keys(**kj, "signed.keys");
  if (!keys) return std::unexpected(keys.error());
  r.keys = std::move(*keys);
  auto rj = js::object_field(j, "roles", "signed");
  if (!rj) return std::unexpected(rj.error());
  for (const auto& [name, role_json] : (*rj)->items()) {
    if (name != "root" && name != "timestamp" && name != "snapshot" && name != "targets") {
      return js::field_error("signed.roles." + name, "not a top-level role");
    }
    auto role = parse_role(role_json, "signed.roles." + name);
    if (!role) return std::unexpected(role.error());
    r.roles.emplace(name, std::move(*role));
  }
  for (const char* name : {"root", "timestamp", "snapshot", "targets"}) {
    if (!r.roles.contains(name))
      return js::field_error(std::string("signed.roles.") + name, "missing");
  }
  return r;
}

template <>
Result<Timestamp> role_from_json<Timestamp>(const json& j) {
  Timestamp t;
  if (auto c = parse_common(j, Timestamp::kType, t, {"meta"}); !c)
    return std::unexpected(c.error());
  auto meta = js::object_field(j, "meta", "signed");
  if (!meta) return std::unexpected(meta.error());
  auto sj = js::object_field(**meta, "snapshot.json", "signed.meta");
  if (!sj) return std::unexpected(sj.error());
  auto m = parse_metafile(**sj, "signed.meta.snapshot.json");
  if (!m) return std::unexpected(m.error());
  t.snapshot_meta = std::move(*m);
  return t;
}

template <>
Result<Snapshot> role_from_json<Snapshot>(const json& j) {
  Snapshot s;
  if (auto c = parse_common(j, Snapshot::kType, s, {"meta"}); !c) return std::unexpected(c.error());
  auto meta = js::object_field(j, "meta", "signed");
  if (!meta) return std::unexpected(meta.error());
  for (const auto& [name, mj] : (*meta)->items()) {
    auto m = parse_metafile(mj, "signed.meta." + name);
    if (!m) return std::unexpected(m.error());
    s.meta.emplace(name, std::move(*m));
  }
  if (!s.meta.contains("targets.json"))
    return js::field_error("signed.meta.targets.json", "missing");
  return s;
}

template <>
Result<Targets> role_from_json<Targets>(const json& j) {
  Targets t;
  if (auto c = parse_common(j, Targets::kType, t, {"targets", "delegations"}); !c) {
    return std::unexpected(c.error());
  }
  auto tj = js::object_field(j, "targets", "signed");
  if (!tj) return std::unexpected(tj.error());
  for (const auto& [name, fj] : (*tj)->items()) {
    auto f = parse_targetfile(name, fj, "signed.targets." + name);
    if (!f) return std::unexpected(f.error());
    t.targets.emplace(name, std::move(*f));
  }
  auto dj = js::optional_object_field(j, "delegations", "signed");
  if (!dj) return std::unexpected(dj.error());
  if (*dj) {
    auto d = parse_delegations(**dj);
    if (!d) return std::unexpected(d.error());
    t.delegations = std::move(*d);
  }
  return t;
}

json to_json(const MetaFile& m) {
  json j = {{"version", m.version}};
  if (m.length) j["length"] = *m.length;
  if (!m.hashes.empty()) j["hashes"] = m.hashes;
  return j;
}

json to_json(const TargetFile& f) {
  json j = {{"length", f.length}, {"hashes", f.hashes}};
  if (!f.custom.is_null()) j["custom"] = f.custom;
  return j;
}

namespace {
json role_json(const Role& r) { return {{"keyids", r.keyids}, {"threshold", r.threshold}}; }
}  // namespace

json to_json(const Root& r) {
  json j = common_json(r, Root::kType);
  j["consistent_snapshot"] = r.consistent_snapshot;
  j["keys"] = keys_json(r.keys);
  json roles = json::object();
  for (const auto& [name, role] : r.roles) roles[name] = role_json(role);
  j["roles"] = roles;
  return j;
}

json to_json(const Timestamp& t) {
  json j = common_json(t, Timestamp::kType);
  j["meta"] = {{"snapshot.json", to_json(t.snapshot_meta)}};
  return j;
}

json to_json(const Snapshot& s) {
  json j = common_json(s, Snapshot::kType);
  json meta = json::object();
  for (const auto& [name, m] : s.meta) meta[name] = to_json(m);
  j["meta"] = meta;
  return j;
}

json to_json(const Targets& t) {
  json j = common_json(t, Targets::kType);
  json targets = json::object();
  for (const auto& [name, f] : t.targets) targets[name] = to_json(f);
  j["targets"] = targets;
  if (t.delegations) {
    json dj = {{"keys", keys_json(t.delegations->keys)}};
    if (const auto& s = t.delegations->succinct_roles) {
      json sj = role_json(*s);
      sj["bit_length"] = s->bit_length;
      sj["name_prefix"] = s->name_prefix;
      dj["succinct_roles"] = sj;
    } else {
      json roles = json::array();
      for (const auto& r : t.delegations->roles) {
        json rj = role_json(r);
        rj["name"] = r.name;
        rj["terminating"] = r.terminating;
        if (r.paths) rj["paths"] = *r.paths;
        if (r.path_hash_prefixes) rj["path_hash_prefixes"] = *r.path_hash_prefixes;
        roles.push_back(rj);
      }
      dj["roles"] = roles;
    }
    j["delegations"] = dj;
  }
  return j;
}

// ---- envelope ---------------------------------------------------------------

template <typename T>
Result<Metadata<T>> parse_metadata(std::string_view bytes) {
  auto doc = parse_json(bytes, std::string(T::kType) + " metadata");
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object())
    return fail(Errc::malformed, std::string(T::kType) + ": not a JSON object");
  auto sigs = js::array_field(*doc, "signatures", "");
  if (!sigs) return std::unexpected(sigs.error());
  auto signed_json = js::object_field(*doc, "signed", "");
  if (!signed_json) return std::unexpected(signed_json.error());
  Metadata<T> md;
  std::set<std::string> keyids;
  std::size_t i = 0;
  for (const auto& sj : **sigs) {
    const std::string path = "signatures[" + std::to_string(i++) + "]";
    auto keyid = js::string_field(sj, "keyid", path);
    if (!keyid) return std::unexpected(keyid.error());
    auto sig = js::string_field(sj, "sig", path);
    if (!sig) return std::unexpected(sig.error());
    // One signature per key id (TUF 1.0.34; python-tuf refuses it too): a
    // field rule like unique role keyids, so the whole file is refused here,
    // before any signature is judged.
    if (!keyids.insert(*keyid).second) {
      return js::field_error(path + ".keyid", "duplicate keyid '" + *keyid + "'");
    }
    md.signatures.push_back({*keyid, *sig});
  }
  auto role = role_from_json<T>(**signed_json);
  if (!role) return std::unexpected(role.error());
  md.signed_ = std::move(*role);
  auto canon = canonical_json(**signed_json);
  if (!canon) return std::unexpected(canon.error());
  md.canonical_signed = std::move(*canon);
  return md;
}

template Result<Metadata<Root>> parse_metadata<Root>(std::string_view);
template Result<Metadata<Timestamp>> parse_metadata<Timestamp>(std::string_view);
template Result<Metadata<Snapshot>> parse_metadata<Snapshot>(std::string_view);
template Result<Metadata<Targets>> parse_metadata<Targets>(std::string_view);

std::size_t count_signers(const Role& role, const KeyMap& keys, const std::string& canonical_signed,
                          const std::vector<Signature>& signatures) {
  // Counted by key identity, not key id: one key listed under two ids (an id
  // is only a name; a second one differs by an unrecognised field, or is just
  // not the key's hash) is still one signer.
  std::set<std::string> good;
  for (const auto& keyid : role.keyids) {
    auto key = keys.find(keyid);
    if (key == keys.end()) continue;
    const std::string identity = key->second.identity();
    if (good.contains(identity)) continue;
    for (const auto& sig : signatures) {
      if (sig.keyid == keyid && key->second.verify(canonical_signed, sig.sig)) {
        good.insert(identity);
        break;
      }
    }
  }
  return good.size();
}

Result<void> verify_threshold(std::string_view role_name, const Role& role, const KeyMap& keys,
                              const std::string& canonical_signed,
                              const std::vector<Signature>& signatures) {
  const std::size_t good = count_signers(role, keys, canonical_signed, signatures);
  if (good < role.threshold) {
    return fail(Errc::bad_signature, std::string(role_name) + ": " + std::to_string(good) + " of " +
                                         std::to_string(role.threshold) +
                                         " required signatures are valid");
  }
  return {};
}

Result<void> verify_length_and_hashes(std::string_view what, std::string_view bytes,
                                      std::optional<std::uint64_t> length,
                                      const std::map<std::string, std::string>& hashes) {
  if (length && bytes.size() != *length) {
    return fail(Errc::length_mismatch, std::string(what) + ": length " +
                                           std::to_string(bytes.size()) + ", expected " +
                                           std::to_string(*length));
  }
  for (const auto& [algo_name, expected] : hashes) {
    auto algo = crypto::hash_algo_from_name(algo_name);
    if (!algo) {
      return fail(Errc::hash_mismatch,
                  std::string(what) + ": unsupported hash algorithm '" + algo_name + "'");
    }
    crypto::Hasher h(*algo);
    h.update(bytes);
    if (h.finish_hex() != expected) {
      return fail(Errc::hash_mismatch, std::string(what) + ": " + algo_name + " mismatch");
    }
  }
  return {};
}

}  // namespace catalog::tuf
