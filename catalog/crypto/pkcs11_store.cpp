#include "catalog/crypto/pkcs11_store.hpp"

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <openssl/store.h>
#include <openssl/ui.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace catalog::crypto::detail {
namespace {

constexpr std::size_t kMaxUriSize = 4096;
constexpr int kMaxStoreObjects = 1024;  // bound on objects a store may hand back

struct LibCtxDeleter {
  void operator()(OSSL_LIB_CTX* c) const { OSSL_LIB_CTX_free(c); }
};
struct ConfDeleter {
  void operator()(CONF* c) const { NCONF_free(c); }
};
struct StoreDeleter {
  void operator()(OSSL_STORE_CTX* s) const { OSSL_STORE_close(s); }
};
struct StoreInfoDeleter {
  void operator()(OSSL_STORE_INFO* i) const { OSSL_STORE_INFO_free(i); }
};

// Every error on the thread's queue, "; "-joined; the queue is emptied.
std::string all_openssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding; nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_digit(s[i + 1]);
    const int lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// The URI without its module-path query attribute (which names the PKCS#11
// module for us, not an object for the provider), and that attribute's value.
struct SplitUri {
  std::string for_provider;
  std::string module_path;  // empty: the provider's default
  bool has_pin = false;     // pin-value= or pin-source= present
};

// Every '%' starts an escape of two hex digits (RFC 3986).
bool escapes_well_formed(std::string_view s) {
  for (std::size_t i = s.find('%'); i != std::string_view::npos; i = s.find('%', i + 1)) {
    if (i + 2 >= s.size() || hex_digit(s[i + 1]) < 0 || hex_digit(s[i + 2]) < 0) return false;
  }
  return true;
}

Result<SplitUri> split_uri(std::string_view uri) {
  SplitUri out;
  const std::size_t q = uri.find('?');
  out.for_provider = std::string(uri.substr(0, q));
  if (q == std::string_view::npos) return out;
  std::vector<std::string_view> kept;
  std::string_view query = uri.substr(q + 1);
  while (true) {
    const std::size_t amp = query.find('&');
    const std::string_view attr = query.substr(0, amp);
    if (attr.starts_with("module-path=")) {
      auto path = percent_decode(attr.substr(12));
      if (!path || path->empty()) return fail(Errc::invalid_argument, "bad module-path in URI");
      out.module_path = std::move(*path);
    } else if (!attr.empty()) {
      if (attr.starts_with("pin-value=") || attr.starts_with("pin-source=")) out.has_pin = true;
      kept.push_back(attr);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    out.for_provider += (i == 0 ? '?' : '&');
    out.for_provider += kept[i];
  }
  return out;
}

// A module path OpenSSL's config syntax carries verbatim (no quoting, no $VAR,
// no comments).
bool config_safe(std::string_view path) {
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '/' || c == '.' || c == '_' || c == '-' || c == '+';
    if (!ok) return false;
  }
  return !path.empty() && path[0] == '/';
}

// A new library context with the default provider and pkcs11-provider (for
// `module_path`, or the provider's default module when empty) active.
Result<std::shared_ptr<OSSL_LIB_CTX>> new_provider_context(const std::string& module_path) {
  // 1. The configuration, as an openssl.cnf would give it, read from memory into
  //    the new context (what OSSL_LIB_CTX_load_config does with a file).
  std::string config =
      "openssl_conf = epbroker_init\n"
      "[epbroker_init]\nproviders = epbroker_providers\n"
      "[epbroker_providers]\ndefault = epbroker_default\npkcs11 = epbroker_pkcs11\n"
      "[epbroker_default]\nactivate = 1\n"
      "[epbroker_pkcs11]\nactivate = 1\n";
  if (!module_path.empty()) config += "pkcs11-module-path = " + module_path + "\n";
  std::shared_ptr<OSSL_LIB_CTX> ctx(OSSL_LIB_CTX_new(), LibCtxDeleter{});
  if (!ctx) return fail(Errc::crypto, "OSSL_LIB_CTX_new failed: " + all_openssl_errors());
  OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr);  // registers the config modules
  std::unique_ptr<CONF, ConfDeleter> conf(NCONF_new_ex(ctx.get(), nullptr));
  BioPtr bio(BIO_new_mem_buf(config.data(), static_cast<int>(config.size())));
  long bad_line = 0;
  if (!conf || !bio || NCONF_load_bio(conf.get(), bio.get(), &bad_line) != 1) {
    return fail(Errc::crypto, "OpenSSL config: " + all_openssl_errors());
  }
  // 2. Loading activates both providers; a missing pkcs11.so fails here.
  if (CONF_modules_load(conf.get(), nullptr, 0) <= 0 ||
      OSSL_PROVIDER_available(ctx.get(), "pkcs11") != 1) {
    return fail(Errc::unsupported,
                "the OpenSSL pkcs11 provider cannot be loaded (Debian package pkcs11-provider): " +
                    all_openssl_errors());
  }
  return ctx;
}

// One context per module path, for the life of the process: a PKCS#11 module is
// initialised once per process, and a second context finalising it would break
// the first. Never freed, on purpose: at exit the module (softhsm, say) may
// already have run its own destructors, and finalising it then crashes.
Result<std::shared_ptr<OSSL_LIB_CTX>> provider_context(const std::string& module_path) {
  static std::mutex mutex;
  static auto* contexts = new std::map<std::string, std::shared_ptr<OSSL_LIB_CTX>>();
  std::lock_guard lock(mutex);
  if (auto it = contexts->find(module_path); it != contexts->end()) return it->second;
  auto ctx = new_provider_context(module_path);
  if (!ctx) return ctx;
  contexts->emplace(module_path, *ctx);
  return ctx;
}

}  // namespace

Result<TokenKey> load_token_key(std::string_view uri) {
  // 1. The URI, and the context for its module.
  if (!uri.starts_with("pkcs11:")) return fail(Errc::invalid_argument, "not a pkcs11: URI");
  if (uri.size() > kMaxUriSize) return fail(Errc::invalid_argument, "pkcs11 URI too long");
  if (!escapes_well_formed(uri)) {
    return fail(Errc::invalid_argument, "bad %-escape in the pkcs11 URI");
  }
  ERR_clear_error();
  auto split = split_uri(uri);
  if (!split) return std::unexpected(split.error());
  // Without a PIN in the URI, pkcs11-provider 1.0 falls back to OpenSSL's
  // console prompt (even under UI_null), which a tool must never show.
  if (!split->has_pin) {
    return fail(Errc::invalid_argument,
                "the pkcs11 URI needs pin-value= or pin-source= (PINs are never prompted for)");
  }
  if (!split->module_path.empty() && !config_safe(split->module_path)) {
    return fail(Errc::invalid_argument,
                "module-path must be an absolute path of letters, digits and /._+-");
  }
  auto ctx = provider_context(split->module_path);
  if (!ctx) return std::unexpected(ctx.error());
  // 2. Every private key the URI names, without ever prompting for a PIN.
  std::unique_ptr<OSSL_STORE_CTX, StoreDeleter> store(
      OSSL_STORE_open_ex(split->for_provider.c_str(), ctx->get(), nullptr, UI_null(), nullptr,
                         nullptr, nullptr, nullptr));
  if (!store) {
    return fail(Errc::not_found,
                "cannot open the PKCS#11 URI (is the module right: module-path= or "
                "PKCS11_PROVIDER_MODULE? is pin-source readable?): " +
                    all_openssl_errors());
  }
  OSSL_STORE_expect(store.get(), OSSL_STORE_INFO_PKEY);
  std::vector<PkeyPtr> keys;
  for (int i = 0; i < kMaxStoreObjects && OSSL_STORE_eof(store.get()) != 1; ++i) {
    std::unique_ptr<OSSL_STORE_INFO, StoreInfoDeleter> info(OSSL_STORE_load(store.get()));
    if (!info) {
      if (OSSL_STORE_error(store.get()) == 1) break;
      continue;
    }
    if (OSSL_STORE_INFO_get_type(info.get()) == OSSL_STORE_INFO_PKEY) {
      keys.emplace_back(OSSL_STORE_INFO_get1_PKEY(info.get()));
    }
  }
  // 3. Exactly one.
  if (keys.empty()) {
    return fail(Errc::not_found,
                "no private key at the PKCS#11 URI (unknown token or object, or "
                "wrong PIN): " +
                    all_openssl_errors());
  }
  ERR_clear_error();
  if (keys.size() > 1) {
    return fail(Errc::invalid_argument, "the PKCS#11 URI names " + std::to_string(keys.size()) +
                                            " private keys; add object= or id=");
  }
  return TokenKey{*ctx, std::move(keys.front())};
}

}  // namespace catalog::crypto::detail
