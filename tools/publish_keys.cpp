#include "tools/publish_keys.hpp"

#include <sys/stat.h>

#include <iostream>

#include "catalog/atomic_file.hpp"

namespace catalog::tools {

namespace fs = std::filesystem;

Result<crypto::KeyType> key_type_option(const Args& args) {
  const std::string name = args.get("key-type").value_or("ed25519");
  if (name == "ed25519") return crypto::KeyType::ed25519;
  if (name == "ecdsa") return crypto::KeyType::ecdsa_p256;
  if (name == "rsa") return crypto::KeyType::rsa;
  return fail(Errc::invalid_argument,
              "--key-type '" + name + "': use ed25519, ecdsa (P-256) or rsa (3072 bits)");
}

Result<crypto::PrivateKey> load_signing_key(const std::string& spec) {
  if (crypto::PrivateKey::is_uri(spec)) {
    auto key = crypto::PrivateKey::from_uri(spec);
    // The URI may carry a PIN: errors name only its path part.
    const std::string shown = spec.substr(0, spec.find('?'));
    if (!key) return fail(key.error().code, shown + ": " + key.error().message);
    return key;
  }
  auto pem = read_file(spec, 64 * 1024);
  if (!pem) return std::unexpected(pem.error());
  auto key = crypto::PrivateKey::from_pem(*pem);
  if (!key) return fail(key.error().code, spec + ": " + key.error().message);
  return key;
}

Result<crypto::PublicKey> load_public_key(const std::string& file) {
  auto pem = read_file(file, 64 * 1024);
  if (!pem) return std::unexpected(pem.error());
  auto key = crypto::PublicKey::from_pem(*pem);
  if (!key) return fail(key.error().code, file + ": " + key.error().message);
  return key;
}

Result<void> write_key(const fs::path& path, const crypto::PrivateKey& key) {
  if (fs::exists(path)) return fail(Errc::invalid_argument, path.string() + " already exists");
  auto pem = key.to_pem();
  if (!pem) return std::unexpected(pem.error());
  if (auto ok = atomic_write_file(path, *pem); !ok) return ok;
  ::chmod(path.c_str(), 0600);
  return {};
}

Result<Loaded> open_repo(const Args& args) {
  auto repo = tuf::Repository::load(*args.get("repo"));
  if (!repo) return std::unexpected(repo.error());
  Loaded l{std::move(*repo), {}};
  // 1. Every PEM file of --keys (not its subdirectories, e.g. retired/).
  if (auto dir = args.get("keys")) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(*dir, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ".pem") continue;
      auto key = load_signing_key(e.path().string());
      if (!key) return std::unexpected(key.error());
      l.key_files.emplace_back(e.path(), tuf::Key::from_public(key->public_key()).keyid());
      l.repo.add_signing_key(std::move(*key));
    }
    if (ec) return fail(Errc::io, "read keys from " + *dir + ": " + ec.message());
  }
  // 2. Each --key: one holder's key, in a file or a token.
  for (const auto& spec : args.all("key")) {
    auto key = load_signing_key(spec);
    if (!key) return std::unexpected(key.error());
    l.repo.add_signing_key(std::move(*key));
  }
  if (!args.get("keys") && args.all("key").empty()) {
    return fail(Errc::invalid_argument, "no signing key: give --keys DIR or --key KEY");
  }
  return l;
}

void print_report(const tuf::Repository::PublishReport& report) {
  for (const auto& r : report.roles) {
    std::cout << r.role << " v" << r.version << ": " << r.signers << " of " << r.threshold
              << " signature(s)";
    if (r.trusted_threshold != 0) {
      std::cout << ", trusted root's " << r.trusted_signers << " of " << r.trusted_threshold;
    }
    std::cout << (r.published ? ", published" : ", staged in staged/" + r.role + ".json") << "\n";
  }
  if (report.snapshot_published) std::cout << "snapshot and timestamp published\n";
  if (!report.waiting_for.empty()) {
    std::cout << "not yet visible to clients; waiting for " << report.waiting_for << "\n";
  }
}

}  // namespace catalog::tools
