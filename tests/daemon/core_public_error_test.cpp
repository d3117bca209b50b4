// daemon/core/public_error: what every bus client reads of a failed job (Job1.Error,
// ErrorMessage, the history's reason) quotes nothing a remote served; the journal
// gets the whole message.
#include "daemon/core/public_error.hpp"

#include <gtest/gtest.h>

#include <string>

#include "catalog/text.hpp"
#include "daemon/core/job.hpp"

namespace epbrokerd::core {
namespace {

using catalog::quote_for_message;

constexpr const char* kSecret = "AKIA-internal-secret";

TEST(PublicError, HidesEveryQuotedSpanAndItsCutMark) {
  EXPECT_EQ(hide_quoted("no quotes: kept"), "no quotes: kept");
  EXPECT_EQ(hide_quoted("key \"a\" and \"b\\\"c\" end"), "key \"<hidden>\" and \"<hidden>\" end");
  EXPECT_EQ(hide_quoted("cut " + quote_for_message(std::string(100, 'x')) + " here"),
            "cut \"<hidden>\" here");
  EXPECT_EQ(hide_quoted("open \"to the end"), "open \"<hidden>\"");
  EXPECT_EQ(hide_quoted("trailing \\ \"\\"), "trailing \\ \"<hidden>\"");
  EXPECT_EQ(hide_quoted(""), "");
}

// What the catalog's checks quote of served bytes (a duplicate JSON key, a field
// value, an archive entry) is not in the public message, whatever the bytes.
TEST(PublicError, ServedBytesQuotedByTheCatalogAreHidden) {
  const std::string hostile = std::string(kSecret) + "\" \\\" \x01\xff \"";
  for (const auto cause :
       {catalog::Errc::malformed, catalog::Errc::bad_field, catalog::Errc::not_found,
        catalog::Errc::unsafe_entry, catalog::Errc::manifest_mismatch, catalog::Errc::io}) {
    const catalog::Error e{cause, "remote r: timestamp.json JSON has a duplicate key " +
                                      quote_for_message(hostile) + "; entry " +
                                      quote_for_message(hostile, 4)};
    const std::string shown = public_message(Error(e));
    EXPECT_EQ(shown.find("AKIA"), std::string::npos) << shown;
    EXPECT_EQ(shown.rfind("remote r: timestamp.json JSON has a duplicate key", 0), 0U) << shown;
  }
}

// net/'s messages are kept whole (the status, the origin, the transport), as are
// the core's own; so are the TUF checks' words outside quotes.
TEST(PublicError, NetworkAndOwnMessagesAreKept) {
  const std::string net =
      "https://a.example/m/1.root.json: redirect refused: scheme \"file\" not supported";
  EXPECT_EQ(public_message(Error(catalog::Error{catalog::Errc::network, net})), net);
  EXPECT_EQ(public_message(Error(Errc::Busy, "\"x\" is busy")), "\"x\" is busy");
  const std::string tuf = "remote r: timestamp: version 1 < trusted 2";
  EXPECT_EQ(public_message(Error(catalog::Error{catalog::Errc::rollback, tuf})), tuf);
}

TEST(PublicError, AFailedJobShowsThePublicMessage) {
  Job job(1, JobKind::refresh, "", RequestContext{0, ""}, nullptr);
  job.fail(Error(catalog::Error{catalog::Errc::bad_field,
                                "signed.x: " + quote_for_message(kSecret) + " is not a number"}));
  const auto s = job.snapshot();
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.state, JobState::failed);
  EXPECT_EQ(s.error->message, "signed.x: \"<hidden>\" is not a number");
  EXPECT_EQ(s.error->code, Errc::VerificationFailed);
}

}  // namespace
}  // namespace epbrokerd::core
