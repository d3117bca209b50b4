// The daemon reads remotes signed with every key type TUF repositories use
// (issue 19): the same catalog signed with Ed25519, ECDSA P-256 or RSA keys
// refreshes, lists test-ep and installs it, through the real daemon and its
// commit helper.
#include <gtest/gtest.h>

#include <string>

#include "catalog/atomic_file.hpp"
#include "tests/daemon/integration/fixture.hpp"

namespace tests::daemon {
namespace {

using catalog::crypto::KeyType;

class KeyTypesTest : public CatalogTest, public ::testing::WithParamInterface<KeyType> {};

TEST_P(KeyTypesTest, RefreshesAndInstallsFromARemoteSignedWithTheseKeys) {
  catalog_ = std::make_unique<TestCatalog>(GetParam());
  // 1. The served root really is signed with this key type.
  const std::string scheme(
      catalog::crypto::scheme_name(catalog::crypto::default_scheme(GetParam())));
  const auto root = catalog::read_file(catalog_->trusted_root(), 1 << 20);
  ASSERT_TRUE(root.has_value());
  ASSERT_NE(root->find("\"scheme\": \"" + scheme + "\""), std::string::npos) << *root;
  // 2. Refresh, list, install.
  start();
  refresh();
  EXPECT_EQ(str(provider(kTestEp), "state"), "available");
  install(kTestEp);
  EXPECT_EQ(str(provider(kTestEp), "state"), "ready");
}

INSTANTIATE_TEST_SUITE_P(EveryKeyType, KeyTypesTest,
                         ::testing::Values(KeyType::ed25519, KeyType::ecdsa_p256, KeyType::rsa),
                         [](const ::testing::TestParamInfo<KeyType>& param) {
                           return std::string(catalog::crypto::key_type_name(param.param));
                         });

}  // namespace
}  // namespace tests::daemon
