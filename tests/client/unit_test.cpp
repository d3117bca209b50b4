// libepbroker's and epbrokerctl's pure parts, without a bus: error mapping (the
// shared org.epbroker.Error.* table, D-Bus's own names), a{sv} conversion
// (defaults, type checks, unknown states), session options, policy names,
// epbrokerctl's argument parsing and formatting.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "client/epbrokerctl/cli.hpp"
#include "client/epbrokerctl/output.hpp"
#include "client/src/connection.hpp"
#include "client/src/convert.hpp"
#include "common/bus_errors.hpp"

namespace tests::client {
namespace {

using epbroker::Errc;
using epbroker::detail::Dict;

TEST(ClientErrors, EveryDaemonErrorNameMapsToItsKind) {
  const std::pair<common::BusError, Errc> kinds[] = {
      {common::BusError::NotFound, Errc::not_found},
      {common::BusError::NotAuthorized, Errc::not_authorized},
      {common::BusError::InvalidArgument, Errc::invalid_argument},
      {common::BusError::Incompatible, Errc::incompatible},
      {common::BusError::VerificationFailed, Errc::verification_failed},
      {common::BusError::Network, Errc::network},
      {common::BusError::Busy, Errc::busy},
      {common::BusError::Cancelled, Errc::cancelled},
      {common::BusError::DiskFull, Errc::disk_full},
      {common::BusError::Internal, Errc::internal},
  };
  // Every name the daemon can send is in this table.
  ASSERT_EQ(std::size(kinds), std::size(common::kAllBusErrors));
  for (const auto& [bus, code] : kinds) {
    const std::string name(common::bus_error_name(bus));
    const auto e = epbroker::detail::to_error(sdbus::Error(name, "the daemon's words"));
    EXPECT_EQ(e.code(), code) << name;
    EXPECT_EQ(e.message(), "the daemon's words");
    EXPECT_EQ(e.bus_name(), name);
    // The JSON/CLI name is the bus name without its prefix.
    EXPECT_EQ("org.epbroker.Error." + std::string(epbroker::errc_name(code)), name);
  }
}

TEST(ClientErrors, DbusOwnErrorsByWhatTheyMeanForACaller) {
  auto code = [](const std::string& name) {
    return epbroker::detail::to_error(sdbus::Error(name, "m")).code();
  };
  EXPECT_EQ(code("org.freedesktop.DBus.Error.ServiceUnknown"), Errc::unavailable);
  EXPECT_EQ(code("org.freedesktop.DBus.Error.NoReply"), Errc::timeout);
  EXPECT_EQ(code("org.freedesktop.DBus.Error.AccessDenied"), Errc::not_authorized);
  EXPECT_EQ(code("org.freedesktop.DBus.Error.Spawn.ChildExited"), Errc::unavailable);
  EXPECT_EQ(code("org.freedesktop.DBus.Error.UnknownMethod"), Errc::protocol);
  EXPECT_EQ(code("org.epbroker.Error.SomethingNew"), Errc::protocol);
  for (auto c : {Errc::unavailable, Errc::timeout, Errc::protocol}) {
    EXPECT_FALSE(epbroker::errc_name(c).empty());
  }
}

TEST(ClientErrors, OnlyBusyWithTheExitingMessageIsAnExitingDaemon) {
  const std::string busy(common::bus_error_name(common::BusError::Busy));
  const std::string exiting(common::kExitingMessage);
  EXPECT_TRUE(epbroker::detail::is_exiting(sdbus::Error(busy, exiting)));
  EXPECT_FALSE(epbroker::detail::is_exiting(sdbus::Error(busy, "too many sessions")));
  EXPECT_FALSE(epbroker::detail::is_exiting(sdbus::Error(busy, exiting + ".")));
  EXPECT_FALSE(epbroker::detail::is_exiting(
      sdbus::Error(std::string(common::bus_error_name(common::BusError::NotFound)), exiting)));
  EXPECT_FALSE(
      epbroker::detail::is_exiting(sdbus::Error("org.freedesktop.DBus.Error.NoReply", exiting)));
}

TEST(ClientConvert, MissingKeysDefaultWrongTypesAreProtocolErrors) {
  Dict d{{"name", sdbus::Variant(std::string("openvino"))},
         {"state", sdbus::Variant(std::string("ready"))},
         {"size", sdbus::Variant(std::uint64_t{42})},
         {"job", sdbus::Variant(sdbus::ObjectPath("/org/epbroker/Broker1/job/7"))},
         {"future_key", sdbus::Variant(std::int32_t{1})}};
  auto p = epbroker::detail::to_provider(d);
  EXPECT_EQ(p.name, "openvino");
  EXPECT_EQ(p.state, epbroker::ProviderState::ready);
  EXPECT_EQ(p.size, 42U);
  EXPECT_EQ(p.job, "/org/epbroker/Broker1/job/7");
  EXPECT_TRUE(p.ep_names.empty());
  EXPECT_TRUE(p.ort_min.empty());

  d["state"] = sdbus::Variant(std::string("hibernating"));  // a newer daemon's state
  p = epbroker::detail::to_provider(d);
  EXPECT_EQ(p.state, epbroker::ProviderState::unknown);
  EXPECT_EQ(p.state_name, "hibernating");

  d["size"] = sdbus::Variant(std::string("42"));
  try {
    epbroker::detail::to_provider(d);
    ADD_FAILURE() << "no error for a string size";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
    EXPECT_NE(e.message().find("'size'"), std::string::npos) << e.message();
  }
}

TEST(ClientConvert, SessionOptionsAndPolicies) {
  epbroker::SessionOptions o;
  auto d = epbroker::detail::to_options(o);
  EXPECT_EQ(d.at("policy").get<std::string>(), "default");
  EXPECT_FALSE(d.at("download").get<bool>());
  EXPECT_EQ(d.count("ort_version"), 0U);
  EXPECT_EQ(d.count("providers"), 0U);
  o.policy = epbroker::Policy::max_performance;
  o.ort_version = "1.22.0";
  o.providers = {"openvino"};
  o.download = true;
  d = epbroker::detail::to_options(o);
  EXPECT_EQ(d.at("policy").get<std::string>(), "max_performance");
  EXPECT_EQ(d.at("ort_version").get<std::string>(), "1.22.0");
  EXPECT_EQ(d.at("providers").get<std::vector<std::string>>(),
            std::vector<std::string>{"openvino"});
  EXPECT_TRUE(d.at("download").get<bool>());
  EXPECT_EQ(epbroker::parse_policy("prefer_npu"), epbroker::Policy::prefer_npu);
  EXPECT_EQ(epbroker::parse_policy("fastest"), std::nullopt);
}

TEST(EpbrokerctlArgs, OptionsAnywhereAndUsageErrors) {
  auto ok = epbrokerctl::parse_args(
      {"epbrokerctl", "install", "--json", "openvino", "--bus-address=unix:path=/x"});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->command, "install");
  EXPECT_EQ(ok->args, std::vector<std::string>{"openvino"});
  EXPECT_TRUE(ok->json);
  EXPECT_EQ(ok->bus_address, "unix:path=/x");

  ok = epbrokerctl::parse_args({"epbrokerctl", "help", "remove"});
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(ok->help);
  EXPECT_EQ(ok->command, "remove");
  ok = epbrokerctl::parse_args({"epbrokerctl", "--", "remove", "-odd-name"});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->args, std::vector<std::string>{"-odd-name"});

  EXPECT_FALSE(epbrokerctl::parse_args({"epbrokerctl"}).has_value());
  EXPECT_FALSE(epbrokerctl::parse_args({"epbrokerctl", "remove"}).has_value());
  EXPECT_FALSE(epbrokerctl::parse_args({"epbrokerctl", "status", "--bus-address="}).has_value());
  EXPECT_FALSE(epbrokerctl::parse_args({"epbrokerctl", "-x", "status"}).has_value());
}

TEST(EpbrokerctlArgs, HelpVersionAndWhatIsWrong) {
  auto ok = epbrokerctl::parse_args({"epbrokerctl", "--version"});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_TRUE(ok->version);
  ok = epbrokerctl::parse_args({"epbrokerctl", "install", "--help"});  // NAME not needed
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_TRUE(ok->help);
  EXPECT_EQ(ok->command, "install");
  ok = epbrokerctl::parse_args({"epbrokerctl", "--bus-address", "a", "status", "--bus-address=b"});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->bus_address, "b");  // the last one

  // Each usage error names what is wrong, on one line.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus", "status"}, "unknown option '--bogus'"},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
      {{"help", "frobnicate"}, "unknown command 'frobnicate'"},
      {{"install"}, "NAME"},
      {{"remove", "a", "b"}, "'b'"},
      {{"status", "--bus-address"}, "--bus-address"},
      {{"status", "--bus-address="}, "--bus-address"},
      {{"--json=yes", "status"}, "json"},
      {{}, "no command given"},
  };
  for (auto [args, says] : cases) {
    args.insert(args.begin(), "epbrokerctl");
    const auto r = epbrokerctl::parse_args(args);
    ASSERT_FALSE(r.has_value()) << args.back();
    EXPECT_NE(r.error().find(says), std::string::npos) << r.error();
    EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
  }
}

TEST(EpbrokerctlArgs, HelpListsEveryCommandAndOption) {
  const std::string top = epbrokerctl::tool_help();
  for (const auto& c : epbrokerctl::commands()) {
    EXPECT_NE(top.find(std::string(c.name)), std::string::npos) << c.name;
    EXPECT_NE(top.find(std::string(c.summary)), std::string::npos) << c.name;
    const std::string one = epbrokerctl::command_help(c);
    EXPECT_TRUE(one.starts_with("Usage: epbrokerctl " + std::string(c.name))) << one;
    EXPECT_NE(one.find(std::string(c.details)), std::string::npos) << one;
    EXPECT_NE(one.find("--bus-address"), std::string::npos) << one;
  }
  for (const char* s : {"install NAME", "help [COMMAND]", "--json", "--bus-address ADDRESS",
                        "$EPBROKER_BUS_ADDRESS", "-h,--help", "--version", "Exit status: 0 ok"}) {
    EXPECT_NE(top.find(s), std::string::npos) << s << " missing from\n" << top;
  }
}

TEST(EpbrokerctlOutput, BytesDurationsAndPlainProgress) {
  EXPECT_EQ(epbrokerctl::format_bytes(0), "0 B");
  EXPECT_EQ(epbrokerctl::format_bytes(1023), "1023 B");
  EXPECT_EQ(epbrokerctl::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(epbrokerctl::format_bytes(std::uint64_t{40} << 20), "40.0 MiB");
  EXPECT_EQ(epbrokerctl::format_duration(std::chrono::seconds(65)), "1:05");
  EXPECT_EQ(epbrokerctl::format_duration(std::chrono::seconds(3725)), "1:02:05");

  // Off a terminal: one line per state change, none in between within a second,
  // except the last line held back of a state, written when the state changes.
  std::ostringstream out;
  epbrokerctl::ProgressView view(out, /*terminal=*/false);
  epbroker::Progress p;
  p.state = epbroker::JobState::downloading;
  p.bytes_total = 1000;
  for (std::uint64_t done : {0U, 100U, 200U, 300U}) {
    p.bytes_done = done;
    view.update(p);
  }
  p.state = epbroker::JobState::done;
  p.bytes_done = 1000;
  view.update(p);
  view.finish();
  // (A rate is shown only after half a second of download.)
  const std::string text = out.str();
  EXPECT_TRUE(
      text.starts_with("downloading: 0 B / 1000 B (0%)\ndownloading: 300 B / 1000 B (30%)"
                       "\ndone: 1000 B / 1000 B (100%)"))
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
}

}  // namespace
}  // namespace tests::client
