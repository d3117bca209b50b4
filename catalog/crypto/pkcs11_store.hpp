// Internal to catalog/crypto: private keys of PKCS#11 tokens through OpenSSL 3's
// pkcs11-provider, in library contexts of our own (see PrivateKey::from_uri).
#pragma once

#include <openssl/types.h>

#include <memory>
#include <string_view>

#include "catalog/crypto/evp_key.hpp"
#include "catalog/error.hpp"

namespace catalog::crypto::detail {

struct TokenKey {
  // The library context the provider lives in; `pkey` must go before it.
  std::shared_ptr<OSSL_LIB_CTX> libctx;
  PkeyPtr pkey;
};

// The one private key `uri` names; errors as PrivateKey::from_uri documents.
Result<TokenKey> load_token_key(std::string_view uri);

}  // namespace catalog::crypto::detail
