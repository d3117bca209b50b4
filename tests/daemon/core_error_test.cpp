// The daemon's one error table: every catalog code maps to the bus error it is
// reported as, every bus error has exactly one org.epbroker.Error.* name that maps
// back, and a catalog error converts keeping its message and code.
#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

#include "common/bus_errors.hpp"
#include "daemon/core/error.hpp"

namespace epbrokerd::core {
namespace {

using C = catalog::Errc;

TEST(CoreErrorTest, EveryCatalogCodeHasItsBusError) {
  // Written out, not computed: this is the table docs/architecture.md lists.
  const std::pair<C, Errc> table[] = {
      {C::invalid_argument, Errc::InvalidArgument},
      {C::malformed, Errc::VerificationFailed},
      {C::bad_field, Errc::VerificationFailed},
      {C::unsupported, Errc::Incompatible},
      {C::bad_signature, Errc::VerificationFailed},
      {C::expired, Errc::VerificationFailed},
      {C::rollback, Errc::VerificationFailed},
      {C::version_mismatch, Errc::VerificationFailed},
      {C::length_mismatch, Errc::VerificationFailed},
      {C::hash_mismatch, Errc::VerificationFailed},
      {C::not_found, Errc::NotFound},
      {C::network, Errc::Network},
      {C::io, Errc::Internal},
      {C::no_space, Errc::DiskFull},
      {C::crypto, Errc::Internal},
      {C::unavailable, Errc::Internal},
      {C::too_many, Errc::VerificationFailed},
      {C::too_large, Errc::VerificationFailed},
      {C::unsafe_entry, Errc::VerificationFailed},
      {C::manifest_mismatch, Errc::VerificationFailed},
      {C::busy, Errc::Busy},
      {C::cancelled, Errc::Cancelled},
  };
  std::set<std::string_view> names;
  for (const auto& [code, want] : table) {
    EXPECT_EQ(errc_of(code), want) << catalog::errc_name(code);
    names.insert(catalog::errc_name(code));
  }
  // Every catalog code is in the table: errc_name names each, and none is "unknown".
  EXPECT_EQ(names.size(), std::size(table));
  EXPECT_FALSE(names.contains("unknown"));
  EXPECT_EQ(catalog::errc_name(static_cast<C>(static_cast<int>(C::cancelled) + 1)), "unknown")
      << "a code after cancelled: add it to this table";
}

TEST(CoreErrorTest, ACatalogErrorConvertsKeepingItsMessageAndCode) {
  const Error e = catalog::Error{C::no_space, "write lib/x.so: No space left on device"};
  EXPECT_EQ(e.code, Errc::DiskFull);
  EXPECT_EQ(e.message, "write lib/x.so: No space left on device");
  EXPECT_EQ(e.cause, C::no_space);
  const Error own(Errc::Busy, "held");
  EXPECT_EQ(own.cause, std::nullopt);

  const catalog::Result<int> failed = catalog::fail(C::hash_mismatch, "x");
  const Result<int> converted = failed;  // a catalog Result where a Result is expected
  ASSERT_FALSE(converted);
  EXPECT_EQ(converted.error().code, Errc::VerificationFailed);
}

TEST(CoreErrorTest, FullDisksAreNoSpace) {
  EXPECT_EQ(catalog::errno_code(ENOSPC), C::no_space);
  EXPECT_EQ(catalog::errno_code(EDQUOT), C::no_space);
  EXPECT_EQ(catalog::errno_code(EIO), C::io);
  EXPECT_EQ(catalog::errno_code(EACCES), C::io);
}

TEST(BusErrorTableTest, EveryErrorHasOneNameThatMapsBack) {
  std::set<std::string_view> names;
  for (const Errc e : common::kAllBusErrors) {
    const std::string_view name = common::bus_error_name(e);
    EXPECT_TRUE(name.starts_with("org.epbroker.Error.")) << name;
    EXPECT_EQ(common::bus_error_from_name(name), e) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(common::kAllBusErrors));
  EXPECT_EQ(names.size(), 10U);
  EXPECT_EQ(common::bus_error_from_name("org.epbroker.Error.Nope"), std::nullopt);
  EXPECT_EQ(common::bus_error_from_name("org.freedesktop.DBus.Error.Failed"), std::nullopt);
  EXPECT_TRUE(names.contains("org.epbroker.Error.DiskFull"));
  EXPECT_TRUE(names.contains("org.epbroker.Error.Internal"));
}

}  // namespace
}  // namespace epbrokerd::core
