#include "tools/publish_commands.hpp"

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <set>

#include "catalog/atomic_file.hpp"
#include "catalog/canonical_json.hpp"
#include "catalog/crypto/hash.hpp"
#include "catalog/ep_metadata.hpp"
#include "catalog/model_metadata.hpp"
#include "catalog/name_binding.hpp"
#include "catalog/package/extract.hpp"
#include "catalog/package/manifest.hpp"
#include "catalog/package/model_pack.hpp"
#include "catalog/package/pack.hpp"
#include "catalog/tuf/dir_fetcher.hpp"
#include "catalog/tuf/repository.hpp"
#include "catalog/tuf/updater.hpp"
#include "tools/publish_keys.hpp"

namespace catalog::tools {
namespace {

namespace fs = std::filesystem;
using tuf::Repository;

int usage(const std::string& cmd, const std::string& msg) {
  std::cerr << "epbroker-publish " << cmd << ": " << msg << "\nTry 'epbroker-publish " << cmd
            << " --help'.\n";
  return 2;
}

int failure(const std::string& cmd, const Error& e) {
  std::cerr << "epbroker-publish " << cmd << ": " << errc_name(e.code) << ": " << e.message << "\n";
  return 1;
}

tuf::TimePoint now() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

// Applies --*-days options; false (with a message) on a bad number.
bool apply_lifetimes(const Args& args, Repository& repo, const std::string& cmd) {
  struct Opt {
    const char* name;
    std::chrono::seconds* field;
  } opts[] = {{"root-days", &repo.root_lifetime},
              {"targets-days", &repo.targets_lifetime},
              {"snapshot-days", &repo.snapshot_lifetime},
              {"timestamp-days", &repo.timestamp_lifetime}};
  for (const auto& o : opts) {
    auto v = args.get(o.name);
    if (!v) continue;
    unsigned days = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), days);
    if (ec != std::errc() || p != v->data() + v->size() || days == 0 || days > 36500) {
      usage(cmd, std::string("--") + o.name + " must be a number of days between 1 and 36500");
      return false;
    }
    *o.field = std::chrono::days{days};
  }
  return true;
}

// Strict EP metadata from the --metadata file; errors name the file.
Result<EpMetadata> load_metadata(const Args& args) {
  const std::string file = *args.get("metadata");
  auto text = read_file(file, 1 << 20);
  if (!text) return std::unexpected(text.error());
  auto meta = parse_ep_metadata_text(*text);
  if (!meta) return fail(meta.error().code, file + ": " + meta.error().message);
  return meta;
}

// SHA-256 and size of a file, streamed.
Result<std::pair<std::string, std::uint64_t>> hash_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(Errc::io, "open " + p.string());
  crypto::Hasher hasher(crypto::HashAlgo::sha256);
  std::vector<char> buf(1 << 20);
  std::uint64_t size = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    hasher.update(std::string_view(buf.data(), n));
    size += n;
  }
  if (in.bad()) return fail(Errc::io, "read " + p.string());
  return std::pair{hasher.finish_hex(), size};
}

// The targets of `role` ("targets" or a delegated role), or nullptr.
tuf::Targets* role_targets(Repository& repo, const std::string& role) {
  if (role == "targets") return &repo.targets;
  auto it = repo.delegated.find(role);
  return it == repo.delegated.end() ? nullptr : &it->second;
}

// The model metadata of a target's custom field, when it is a model's.
std::optional<ModelMetadata> model_of(const tuf::TargetFile& t) {
  if (t.custom.is_null() || !t.custom.is_object() || !t.custom.contains("epbroker")) {
    return std::nullopt;
  }
  auto m = parse_model_metadata(t.custom);
  if (!m) return std::nullopt;
  return std::move(*m);
}

// Where add-model publishes the card of a model version.
std::string model_target_path(const ModelMetadata& m) {
  return m.name + "/" + m.name + "-" + m.version.text + ".model.json";
}

bool is_inside(const fs::path& inner, const fs::path& outer) {
  const auto rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

bool require(const Args& args, const std::string& cmd, std::initializer_list<const char*> names,
             int& rc) {
  for (const char* n : names) {
    if (!args.get(n)) {
      rc = usage(cmd, std::string("--") + n + " is required");
      return false;
    }
  }
  return true;
}

}  // namespace

int cmd_init(const Args& args) {
  int rc = 0;
  if (!require(args, "init", {"repo", "keys"}, rc)) return rc;
  if (!args.positionals.empty()) return usage("init", "unexpected argument");
  unsigned nkeys = 1, threshold = 1;
  for (auto [name, out] :
       {std::pair{"root-keys", &nkeys}, std::pair{"root-threshold", &threshold}}) {
    if (auto v = args.get(name)) {
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
      if (ec != std::errc() || p != v->data() + v->size() || *out == 0 || *out > 16) {
        return usage("init", std::string("--") + name + " must be between 1 and 16");
      }
    }
  }
  const auto& holders = args.all("root-public-key");
  if (!holders.empty()) {
    if (args.get("root-keys"))
      return usage("init", "--root-keys and --root-public-key exclude each other");
    nkeys = static_cast<unsigned>(holders.size());
  }
  if (threshold > nkeys) return usage("init", "--root-threshold exceeds the number of root keys");
  auto key_type = key_type_option(args);
  if (!key_type) return usage("init", key_type.error().message);
  const fs::path repo_dir = *args.get("repo"), keys_dir = *args.get("keys");
  if (fs::exists(repo_dir / "metadata") || fs::exists(repo_dir / "staged")) {
    return failure("init", {Errc::invalid_argument, (repo_dir / "metadata").string() + " exists"});
  }
  // 1. Root keys: generated here, or only the public keys of their holders.
  std::vector<crypto::PublicKey> holder_keys;
  for (const auto& file : holders) {
    auto pub = load_public_key(file);
    if (!pub) return failure("init", pub.error());
    holder_keys.push_back(std::move(*pub));
  }
  const bool consistent = !args.has("no-consistent-snapshot");
  auto repo =
      holder_keys.empty()
          ? Repository::create(now(), nkeys, threshold, consistent, *key_type)
          : Repository::create_with_root_keys(now(), holder_keys, threshold, consistent, *key_type);
  if (!repo) return failure("init", repo.error());
  if (!apply_lifetimes(args, *repo, "init")) return 2;
  // 2. Keys first (0700 directory, 0600 files), never overwriting one.
  std::error_code ec;
  fs::create_directories(keys_dir, ec);
  if (ec) return failure("init", {Errc::io, "create " + keys_dir.string() + ": " + ec.message()});
  ::chmod(keys_dir.c_str(), 0700);
  for (const char* role : {"root", "timestamp", "snapshot", "targets"}) {
    const auto& ids = repo->root.roles.at(role).keyids;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const crypto::PrivateKey* key = repo->signing_key_for(ids[i]);
      if (key == nullptr) continue;  // a holder's key
      const std::string file = ids.size() == 1
                                   ? std::string(role) + ".pem"
                                   : std::string(role) + "-" + std::to_string(i + 1) + ".pem";
      if (auto ok = write_key(keys_dir / file, *key); !ok) return failure("init", ok.error());
    }
  }
  // 3. Version 1 of every role, or root v1 staged for its holders to sign.
  if (!holder_keys.empty()) {
    for (const auto& spec : args.all("key")) {
      auto key = load_signing_key(spec);
      if (!key) return failure("init", key.error());
      repo->add_signing_key(std::move(*key));
    }
    auto report = repo->publish_or_stage(repo_dir, now());
    if (!report) return failure("init", report.error());
    print_report(*report);
    std::cout << "keys for timestamp, snapshot and targets in " << keys_dir.string()
              << "; root holders sign with 'epbroker-publish sign root --repo " << repo_dir.string()
              << " --keys " << keys_dir.string() << " --key KEY'\n";
    return 0;
  }
  if (auto ok = repo->publish(tuf::directory_writer(repo_dir), now()); !ok) {
    return failure("init", ok.error());
  }
  std::cout << "created repository " << repo_dir.string() << " (root: " << threshold << " of "
            << nkeys << " keys, consistent snapshots "
            << (repo->root.consistent_snapshot ? "on" : "off") << ")\n"
            << "keys in " << keys_dir.string()
            << "; trusted root for clients: " << (repo_dir / "metadata/1.root.json").string()
            << "\n";
  return 0;
}

int cmd_pack(const Args& args) {
  int rc = 0;
  if (!require(args, "pack", {"dir", "metadata", "output"}, rc)) return rc;
  if (!args.positionals.empty()) return usage("pack", "unexpected argument");
  const fs::path output = *args.get("output");
  const bool gzip = args.has("gzip");
  const std::string suffix = gzip ? ".tar.gz" : ".tar.zst";
  if (!output.filename().string().ends_with(suffix)) {
    return usage("pack", "--output must end with " + suffix);
  }
  // 1. EP metadata, strictly; then the package.
  auto meta = load_metadata(args);
  if (!meta) return failure("pack", meta.error());
  if (auto ok =
          package::pack_directory(*args.get("dir"), *meta, output,
                                  gzip ? package::Compression::gzip : package::Compression::zstd);
      !ok) {
    return failure("pack", ok.error());
  }
  // 2. What was written, read back through the package reader.
  auto manifest = package::read_package_manifest(output);
  if (!manifest) return failure("pack", manifest.error());
  auto hashed = hash_file(output);
  if (!hashed) return failure("pack", hashed.error());
  std::cout << "packed " << output.string() << " (" << meta->name << " " << meta->version.text
            << ", " << manifest->files.size() << " file(s), " << hashed->second << " bytes, sha256 "
            << hashed->first << ")\n";
  return 0;
}

int cmd_pack_model(const Args& args) {
  int rc = 0;
  if (!require(args, "pack-model", {"dir", "metadata", "output"}, rc)) return rc;
  if (!args.positionals.empty()) return usage("pack-model", "unexpected argument");
  const fs::path dir = *args.get("dir"), output = *args.get("output");
  const std::string card_file = *args.get("metadata");
  {
    std::error_code ec;
    const fs::path out_dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
    const fs::path real_dir = fs::weakly_canonical(dir, ec);
    const fs::path real_out = fs::weakly_canonical(out_dir, ec);
    if (!ec && (real_out == real_dir || is_inside(real_out, real_dir))) {
      return failure("pack-model",
                     {Errc::invalid_argument,
                      output.string() + ": the card must be written outside " + dir.string()});
    }
  }
  // 1. The card without sizes and hashes, as JSON (its rules are checked once filled).
  auto text = read_file(card_file, kMaxModelMetadataTextBytes);
  if (!text) return failure("pack-model", text.error());
  auto card = parse_json(*text, card_file);
  if (!card) return failure("pack-model", card.error());
  // 2. Every variant's files, hashed, and the whole card checked.
  auto meta = package::describe_model_directory(dir, *card);
  if (!meta) {
    return failure("pack-model", {meta.error().code, card_file + ": " + meta.error().message});
  }
  const std::string out_text = to_json(*meta).dump(2) + "\n";
  if (auto ok = atomic_write_file(output, out_text); !ok) return failure("pack-model", ok.error());
  std::set<std::string> distinct;
  std::size_t files = 0;
  for (const auto& v : meta->variants) {
    files += v.files.size();
    for (const auto& f : v.files) distinct.insert(f.sha256);
  }
  std::cout << "packed " << output.string() << " (" << meta->name << " " << meta->version.text
            << ", " << meta->variants.size() << " variant(s), " << files << " file(s), "
            << distinct.size() << " distinct)\n";
  return 0;
}

int cmd_add(const Args& args) {
  int rc = 0;
  if (!require(args, "add", {"repo", "metadata"}, rc)) return rc;
  if (args.positionals.size() != 1) return usage("add", "expected exactly one PACKAGE");
  const fs::path package = args.positionals[0];
  // 1. EP metadata, strictly; an EP package's manifest must agree with it.
  auto meta = load_metadata(args);
  if (!meta) return failure("add", meta.error());
  if (catalog::package::looks_like_package(package)) {
    auto manifest = catalog::package::read_package_manifest(package);
    if (!manifest) {
      return failure("add",
                     {manifest.error().code, package.string() + ": " + manifest.error().message});
    }
    if (auto ok = catalog::package::check_manifest_matches(*manifest, *meta); !ok) {
      return failure("add", {ok.error().code, package.string() + ": " + ok.error().message});
    }
  }
  const std::string path =
      args.get("target-path").value_or(meta->name + "/" + package.filename().string());
  // Clients trust package NAME only from target paths "NAME/..." (issue 17):
  // anything else would be refused by every epbrokerd, so it is not published.
  if (auto ok = check_name_binding(meta->name, path); !ok) {
    return failure(
        "add", {ok.error().code, ok.error().message + " (use --target-path " + meta->name + "/" +
                                     package.filename().string() + " or leave it out)"});
  }
  // 2. The package bytes.
  auto bytes = read_file(package, std::uint64_t{4} << 30);
  if (!bytes) return failure("add", bytes.error());
  auto loaded = open_repo(args);
  if (!loaded) return failure("add", loaded.error());
  Repository& repo = loaded->repo;
  if (!apply_lifetimes(args, repo, "add")) return 2;
  const std::size_t size = bytes->size();
  const std::string sha = crypto::sha256_hex(*bytes);
  // 3. Into targets, then publish targets -> snapshot -> timestamp.
  if (auto ok = repo.add_target(path, std::move(*bytes), to_json(*meta),
                                args.get("role").value_or("targets"));
      !ok) {
    return failure("add", ok.error());
  }
  auto report = repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("add", report.error());
  std::cout << "added " << path << " (" << meta->name << " " << meta->version.text << ", " << size
            << " bytes, sha256 " << sha << "); targets v" << repo.targets.version << ", snapshot v"
            << repo.snapshot.version << ", timestamp v" << repo.timestamp.version << "\n";
  print_report(*report);
  return 0;
}

int cmd_add_model(const Args& args) {
  int rc = 0;
  if (!require(args, "add-model", {"repo", "model", "dir"}, rc)) return rc;
  if (!args.positionals.empty()) return usage("add-model", "unexpected argument");
  const std::string card_file = *args.get("model");
  const std::string role = args.get("role").value_or("targets");
  // 1. The card, strictly, and the files against it.
  auto card = read_file(card_file, kMaxModelMetadataTextBytes);
  if (!card) return failure("add-model", card.error());
  auto meta = parse_model_metadata_text(*card);
  if (!meta) {
    return failure("add-model", {meta.error().code, card_file + ": " + meta.error().message});
  }
  auto blobs = package::check_model_directory(*args.get("dir"), *meta);
  if (!blobs) return failure("add-model", blobs.error());
  // Clients trust model NAME only from target paths "NAME/..." (as packages).
  const std::string path = model_target_path(*meta);
  if (auto ok = check_name_binding(meta->name, path); !ok) return failure("add-model", ok.error());
  auto loaded = open_repo(args);
  if (!loaded) return failure("add-model", loaded.error());
  Repository& repo = loaded->repo;
  if (!apply_lifetimes(args, repo, "add-model")) return 2;
  tuf::Targets* t = role_targets(repo, role);
  if (t == nullptr)
    return failure("add-model", {Errc::not_found, "no targets role '" + role + "'"});
  // 2. A published version is never changed: clients may hold its files.
  const std::string card_sha = crypto::sha256_hex(*card);
  if (auto it = t->targets.find(path); it != t->targets.end()) {
    const auto h = it->second.hashes.find("sha256");
    if (h == it->second.hashes.end() || h->second != card_sha) {
      return failure("add-model",
                     {Errc::invalid_argument,
                      meta->name + " " + meta->version.text + " is already published as " + path +
                          " with another card; publish a new version (or remove this one first)"});
    }
  }
  // 3. Each distinct content once, then the card; one new targets version.
  std::size_t added = 0, kept = 0;
  for (const auto& blob : *blobs) {
    const std::string blob_path = model_blob_path(meta->name, blob.sha256);
    if (auto it = t->targets.find(blob_path);
        it != t->targets.end() && it->second.length == blob.size &&
        it->second.hashes.contains("sha256") && it->second.hashes.at("sha256") == blob.sha256) {
      ++kept;  // signed and stored already (another version or variant)
      continue;
    }
    auto bytes = read_file(blob.source, std::uint64_t{4} << 30);
    if (!bytes) return failure("add-model", bytes.error());
    if (bytes->size() != blob.size || crypto::sha256_hex(*bytes) != blob.sha256) {
      return failure("add-model",
                     {Errc::hash_mismatch, blob.source.string() + ": changed while adding"});
    }
    if (auto ok = repo.add_target(blob_path, std::move(*bytes), nullptr, role); !ok) {
      return failure("add-model", ok.error());
    }
    ++added;
  }
  if (auto ok = repo.add_target(path, *card, to_json(*meta), role); !ok) {
    return failure("add-model", ok.error());
  }
  auto report = repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("add-model", report.error());
  std::cout << "added " << path << " (" << meta->name << " " << meta->version.text << ", "
            << meta->variants.size() << " variant(s), " << blobs->size()
            << " distinct file(s): " << added << " new, " << kept << " already signed); targets v"
            << repo.targets.version << ", snapshot v" << repo.snapshot.version << ", timestamp v"
            << repo.timestamp.version << "\n";
  print_report(*report);
  return 0;
}

int cmd_remove(const Args& args) {
  int rc = 0;
  if (!require(args, "remove", {"repo"}, rc)) return rc;
  if (args.positionals.size() != 1) return usage("remove", "expected exactly one TARGET_PATH");
  auto loaded = open_repo(args);
  if (!loaded) return failure("remove", loaded.error());
  if (!apply_lifetimes(args, loaded->repo, "remove")) return 2;
  Repository& repo = loaded->repo;
  const std::string role = args.get("role").value_or("targets");
  const std::string& path = args.positionals[0];
  // A model version takes its files along, unless another model still lists them.
  std::optional<ModelMetadata> model;
  if (tuf::Targets* t = role_targets(repo, role); t != nullptr) {
    if (auto it = t->targets.find(path); it != t->targets.end()) model = model_of(it->second);
  }
  if (auto ok = repo.remove_target(path, role); !ok) return failure("remove", ok.error());
  std::size_t blobs_removed = 0;
  if (model) {
    std::set<std::string> referenced;
    auto collect = [&](const tuf::Targets& targets) {
      for (const auto& [_, target] : targets.targets) {
        if (auto other = model_of(target)) {
          for (const auto& v : other->variants) {
            for (const auto& f : v.files) referenced.insert(model_blob_path(other->name, f.sha256));
          }
        }
      }
    };
    collect(repo.targets);
    for (const auto& [_, targets] : repo.delegated) collect(targets);
    std::set<std::string> own;
    for (const auto& v : model->variants) {
      for (const auto& f : v.files) own.insert(model_blob_path(model->name, f.sha256));
    }
    tuf::Targets* t = role_targets(repo, role);
    for (const auto& blob : own) {
      if (referenced.contains(blob) || !t->targets.contains(blob)) continue;
      if (auto ok = repo.remove_target(blob, role); !ok) return failure("remove", ok.error());
      ++blobs_removed;
    }
  }
  auto report = loaded->repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("remove", report.error());
  std::cout << "removed " << path;
  if (model) std::cout << " and " << blobs_removed << " file(s) no other model lists";
  std::cout << "; targets v" << repo.targets.version << "\n";
  print_report(*report);
  return 0;
}

int cmd_timestamp(const Args& args) {
  int rc = 0;
  if (!require(args, "timestamp", {"repo"}, rc)) return rc;
  if (!args.positionals.empty()) return usage("timestamp", "unexpected argument");
  auto loaded = open_repo(args);
  if (!loaded) return failure("timestamp", loaded.error());
  if (!apply_lifetimes(args, loaded->repo, "timestamp")) return 2;
  // Also publishes what holders finished signing (staged roles at threshold).
  auto report = loaded->repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("timestamp", report.error());
  print_report(*report);
  if (!report->snapshot_published) return 1;
  std::cout << "snapshot v" << loaded->repo.snapshot.version << " expires "
            << tuf::format_expires(loaded->repo.snapshot.expires) << ", timestamp v"
            << loaded->repo.timestamp.version << " expires "
            << tuf::format_expires(loaded->repo.timestamp.expires) << "\n";
  return 0;
}

int cmd_rotate(const Args& args) {
  int rc = 0;
  if (!require(args, "rotate", {"repo", "keys"}, rc)) return rc;
  if (args.positionals.size() != 1) return usage("rotate", "expected exactly one ROLE");
  const std::string role = args.positionals[0];
  if (role != "root" && role != "timestamp" && role != "snapshot" && role != "targets") {
    return usage("rotate", "ROLE must be root, timestamp, snapshot or targets");
  }
  auto loaded = open_repo(args);
  if (!loaded) return failure("rotate", loaded.error());
  Repository& repo = loaded->repo;
  if (!apply_lifetimes(args, repo, "rotate")) return 2;
  const auto old_ids = repo.root.roles.at(role).keyids;
  // 1. The new key: given or generated, written beside the others.
  auto key_type = key_type_option(args);
  if (!key_type) return usage("rotate", key_type.error().message);
  auto new_key = args.get("new-key");
  auto key = new_key ? load_signing_key(*new_key) : crypto::PrivateKey::generate(*key_type);
  if (!key) return failure("rotate", key.error());
  const std::string new_id = tuf::Key::from_public(key->public_key()).keyid();
  const fs::path keys_dir = *args.get("keys");
  const fs::path new_file = keys_dir / (role + "-" + new_id.substr(0, 8) + ".pem");
  if (!(new_key && crypto::PrivateKey::is_uri(*new_key)) && !fs::exists(new_file)) {
    if (auto ok = write_key(new_file, *key); !ok) return failure("rotate", ok.error());
  }
  // 2. New root (signed by old and new root keys), re-signed role, snapshot, timestamp.
  if (auto ok = repo.rotate(role, std::move(*key)); !ok) return failure("rotate", ok.error());
  auto report = repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("rotate", report.error());
  print_report(*report);
  if (repo.is_staged("root")) return 0;  // the old keys still sign until it is out
  // 3. Retire the old key files only once the new state is published.
  std::error_code ec;
  fs::create_directories(keys_dir / "retired", ec);
  for (const auto& [path, id] : loaded->key_files) {
    if (std::find(old_ids.begin(), old_ids.end(), id) == old_ids.end() || id == new_id) continue;
    bool still_used = false;
    for (const auto& [_, r] : repo.root.roles) {
      still_used |= std::find(r.keyids.begin(), r.keyids.end(), id) != r.keyids.end();
    }
    if (!still_used) fs::rename(path, keys_dir / "retired" / path.filename(), ec);
  }
  std::cout << "rotated " << role << " to key " << new_id.substr(0, 16) << "...; root v"
            << repo.root.version << "\n";
  return 0;
}

int cmd_delegate(const Args& args) {
  int rc = 0;
  if (!require(args, "delegate", {"repo"}, rc)) return rc;
  if (args.positionals.size() != 1) return usage("delegate", "expected exactly one ROLE name");
  if (args.all("paths").empty()) return usage("delegate", "--paths is required");
  const std::string name = args.positionals[0];
  auto loaded = open_repo(args);
  if (!loaded) return failure("delegate", loaded.error());
  Repository& repo = loaded->repo;
  if (!apply_lifetimes(args, repo, "delegate")) return 2;
  // 1. The delegated role's key: the vendor's public key, or generated here.
  const auto public_key = args.get("public-key");
  if (!public_key && !args.get("keys")) {
    return usage("delegate", "--keys (to keep a new key) or --public-key is required");
  }
  auto key_type = key_type_option(args);
  if (!key_type) return usage("delegate", key_type.error().message);
  std::string key_id;
  fs::path key_file;
  if (public_key) {
    auto pub = load_public_key(*public_key);
    if (!pub) return failure("delegate", pub.error());
    if (auto ok = repo.add_delegation(name, args.all("paths"), *pub, args.has("terminating"));
        !ok) {
      return failure("delegate", ok.error());
    }
  } else {
    key_file = fs::path(*args.get("keys")) / (name + ".pem");
    if (fs::exists(key_file)) {
      return failure("delegate", {Errc::invalid_argument, key_file.string() + " already exists"});
    }
    auto key = crypto::PrivateKey::generate(*key_type);
    if (!key) return failure("delegate", key.error());
    key_id = tuf::Key::from_public(key->public_key()).keyid();
    if (auto ok =
            repo.add_delegation(name, args.all("paths"), std::move(*key), args.has("terminating"));
        !ok) {
      return failure("delegate", ok.error());
    }
  }
  // 2. Publish targets + snapshot + timestamp; the new role too once signed.
  auto report = repo.publish_or_stage(*args.get("repo"), now());
  if (!report) return failure("delegate", report.error());
  // 3. A generated key is kept only once the delegation is out.
  if (!key_id.empty()) {
    if (auto ok = write_key(key_file, *repo.signing_key_for(key_id)); !ok) {
      return failure("delegate", ok.error());
    }
  }
  std::cout << "delegated " << name << " for";
  for (const auto& p : args.all("paths")) std::cout << " " << p;
  std::cout << "; targets v" << repo.targets.version << "\n";
  print_report(*report);
  if (public_key) {
    std::cout << "the holder of its key signs it: 'epbroker-publish sign " << name
              << " --repo DIR --key KEY'\n";
  }
  return 0;
}

int cmd_verify(const Args& args) {
  int rc = 0;
  if (!require(args, "verify", {"repo"}, rc)) return rc;
  const fs::path repo_dir = *args.get("repo");
  const fs::path root = args.get("root").value_or((repo_dir / "metadata/1.root.json").string());
  // 1. A scratch client that trusts only `root`.
  char tmpl[] = "/tmp/epbroker-verify-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return failure("verify", {Errc::io, "mkdtemp failed"});
  const fs::path scratch = tmpl;
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(scratch, ec);
  };
  auto root_bytes = read_file(root, 512'000);
  if (!root_bytes) {
    cleanup();
    return failure("verify", root_bytes.error());
  }
  fs::create_directories(scratch / "meta");
  if (auto ok = atomic_write_file(scratch / "meta/root.json", *root_bytes); !ok) {
    cleanup();
    return failure("verify", ok.error());
  }
  tuf::DirFetcher fetcher("repo:/", repo_dir);
  tuf::UpdaterConfig config;
  config.metadata_dir = scratch / "meta";
  config.metadata_base_url = "repo:/metadata/";
  config.target_base_url = "repo:/targets/";
  config.target_dir = scratch / "targets";
  tuf::Updater updater(config, fetcher);
  // 2. The whole workflow, then every target and its EP metadata.
  int failures = 0;
  if (auto ok = updater.refresh(); !ok) {
    cleanup();
    return failure("verify", ok.error());
  }
  const auto& t = *updater.trusted();
  std::cout << "root v" << t.root().signed_.version << ", timestamp v"
            << t.timestamp()->signed_.version << ", snapshot v" << t.snapshot()->signed_.version
            << ", targets v" << t.targets("targets")->signed_.version << ": signatures, versions, "
            << "hashes and expiry OK\n";
  auto targets = updater.all_targets();
  if (!targets) {
    cleanup();
    return failure("verify", targets.error());
  }
  // Models: their files must be signed targets, as clients check.
  std::map<std::string, ModelTargetInfo> signed_targets;
  for (const auto& target : *targets) {
    auto h = target.hashes.find("sha256");
    signed_targets.emplace(
        target.path, ModelTargetInfo{target.length, h == target.hashes.end() ? "" : h->second});
  }
  const ModelTargetLookup lookup = [&](std::string_view p) -> std::optional<ModelTargetInfo> {
    auto it = signed_targets.find(std::string(p));
    if (it == signed_targets.end()) return std::nullopt;
    return it->second;
  };
  for (const auto& target : *targets) {
    auto path = updater.download_target(target);
    std::string status = "OK";
    if (!path) {
      status = std::string(errc_name(path.error().code)) + ": " + path.error().message;
    } else if (!target.custom.is_null() && target.custom.contains("epbroker")) {
      std::string name;
      if (auto m = parse_ep_metadata(target.custom); m) {
        name = m->name;
      } else if (m.error().code != Errc::unsupported) {
        status = "EP metadata: " + m.error().message;
      } else if (auto model = parse_model_metadata(target.custom); model) {
        name = model->name;
        if (auto ok = check_model_targets(*model, lookup); !ok) {
          status = "model " + std::string(errc_name(ok.error().code)) + ": " + ok.error().message;
        }
      } else if (model.error().code != Errc::unsupported) {
        status = "model metadata: " + model.error().message;
      } else {
        status = "EP metadata: " + m.error().message;
      }
      if (status == "OK") {
        if (auto bound = check_name_binding(name, target.path); !bound) {
          status = "refused by clients: " + bound.error().message;
        }
      }
    }
    if (path) fs::remove(*path);
    if (status != "OK") ++failures;
    std::cout << "  " << target.path << " (" << target.length << " bytes): " << status << "\n";
  }
  cleanup();
  std::cout << targets->size() << " target(s), " << failures << " problem(s)\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace catalog::tools
