// daemon/dbus/errors (part of epbrokerd): how the adaptors report errors. A core
// error keeps its bus name and message; an exception out of the core (a bug) is
// org.epbroker.Error.Internal, never the caller's InvalidArgument, and is logged
// with the method it escaped from.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/dbus/errors.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {
namespace {

using ::testing::HasSubstr;

sdbus::Error caught(const std::function<void()>& body) {
  try {
    body();
  } catch (const sdbus::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no sdbus::Error thrown";
  return sdbus::Error("none", "none");
}

void adaptor_method_with_a_bug() {
  guarded([] { throw std::logic_error("vector index out of range"); });
}

TEST(DbusErrorsTest, CoreErrorsKeepTheirNameAndMessage) {
  auto e = caught([] {
    value_or_throw(core::Result<void>(core::fail(core::Errc::DiskFull, "write x: No space")));
  });
  EXPECT_EQ(e.getName(), "org.epbroker.Error.DiskFull");
  EXPECT_EQ(e.getMessage(), "write x: No space");
  e = caught(
      [] { value_or_throw(core::Result<int>(catalog::fail(catalog::Errc::hash_mismatch, "h"))); });
  EXPECT_EQ(e.getName(), "org.epbroker.Error.VerificationFailed");
  // An sdbus::Error thrown inside passes through unchanged.
  e = caught([] { guarded([] { throw_bus_error({core::Errc::Busy, "held"}); }); });
  EXPECT_EQ(e.getName(), "org.epbroker.Error.Busy");
}

TEST(DbusErrorsTest, AnExceptionOutOfTheCoreIsInternalAndLogged) {
  // The log goes to stderr (force_stderr): capture it in a file.
  std::fflush(stderr);
  FILE* saved = std::tmpfile();
  ASSERT_NE(saved, nullptr);
  const int old_stderr = ::dup(2);
  ASSERT_GE(::dup2(::fileno(saved), 2), 0);
  log::init(config::LogLevel::info, /*force_stderr=*/true);
  const auto e = caught(adaptor_method_with_a_bug);
  log::flush();
  std::fflush(stderr);
  ::dup2(old_stderr, 2);
  ::close(old_stderr);

  EXPECT_EQ(e.getName(), "org.epbroker.Error.Internal");
  EXPECT_EQ(e.getMessage(), "internal error: vector index out of range");
  std::rewind(saved);
  std::stringstream logged;
  for (int c; (c = std::fgetc(saved)) != EOF;) logged << static_cast<char>(c);
  std::fclose(saved);
  EXPECT_THAT(logged.str(), HasSubstr("internal error in"));
  EXPECT_THAT(logged.str(), HasSubstr("adaptor_method_with_a_bug"));
  EXPECT_THAT(logged.str(), HasSubstr("vector index out of range"));
}

}  // namespace
}  // namespace epbrokerd::dbus
