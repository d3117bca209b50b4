// The package lifecycle through the real daemon and libepbroker (and epbroker-run,
// where the catalog's test-ep is the real package): the report, that an
// installed update must reach new sessions (0.1.0 -> 0.2.0, and 0.9.0 -> 0.10.0,
// newer by semantic-version rules though not as text), while a session opened
// before keeps its version's files until it ends; and that a session of another
// (unprivileged) uid does not block an admin's remove.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/client/client_fixture.hpp"
#include "tests/ort/support/protobuf_wire.hpp"
#include "tests/support/temp_dir.hpp"

namespace tests::client {
namespace {

namespace fs = std::filesystem;
using tests::daemon::Child;
using tests::daemon::CommandResult;

constexpr uid_t kNobody = 65534;

std::string describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// Y = Relu(X), X and Y float [1,4], opset 17: a model test-ep takes whole.
std::string relu_model() {
  using tests::ort::wire::Writer;
  auto value_info = [](const std::string& name) {
    Writer shape;
    for (std::int64_t d : {1, 4}) {
      Writer dim;
      dim.int_field(1, d);  // dim_value
      shape.message_field(1, dim);
    }
    Writer tensor;
    tensor.int_field(1, 1);  // elem_type FLOAT
    tensor.message_field(2, shape);
    Writer type;
    type.message_field(1, tensor);  // tensor_type
    Writer out;
    out.bytes_field(1, name);
    out.message_field(2, type);
    return out;
  };
  Writer node;
  node.bytes_field(1, "X");
  node.bytes_field(2, "Y");
  node.bytes_field(3, "relu");
  node.bytes_field(4, "Relu");
  Writer graph;
  graph.message_field(1, node);
  graph.bytes_field(2, "relu");
  graph.message_field(11, value_info("X"));
  graph.message_field(12, value_info("Y"));
  Writer opset;
  opset.bytes_field(1, "");
  opset.int_field(2, 17);
  Writer model;
  model.int_field(1, 8);  // ir_version
  model.bytes_field(2, "epbroker-tests");
  model.message_field(7, graph);
  model.message_field(8, opset);
  return model.take();
}

class LifecycleTest : public ClientTest {
 protected:
  // start(), with automatic updates off: the test installs updates itself.
  void start_manual() {
    start();
    std::ofstream(bus_->config_dir() / "epbroker.conf", std::ios::app) << "auto_update = off\n";
  }

  epbroker::Provider row(epbroker::Client& c, const std::string& name) {
    for (auto& p : c.providers()) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "no row for " << name;
    return {};
  }
  // The installed version `version` of `name`, if listed.
  std::optional<epbroker::VersionInfo> version_info(epbroker::Client& c, const std::string& name,
                                                    const std::string& version) {
    for (const auto& v : row(c, name).versions) {
      if (v.version == version) return v;
    }
    return std::nullopt;
  }
  // A session on `name` alone; its granted, ready provider.
  epbroker::Session session(epbroker::Client& c, const std::string& name) {
    epbroker::SessionOptions o;
    o.providers = {name};
    return c.request_session(o);
  }
  static epbroker::Provider granted(const epbroker::Session& s) {
    const auto ready = s.ready_providers();
    if (ready.size() != 1) {
      ADD_FAILURE() << ready.size() << " ready providers granted";
      return {};
    }
    return ready[0];
  }

  // epbroker-run --ep EpbrokerTestEp on a one-node model: the broker part of its
  // --json report ({"registered": [{name, version, library_path, ...}]}), or null
  // when it cannot run here (no epbroker-run built, or test-ep is a stand-in).
  nlohmann::json run_app() {
#ifdef EPBROKER_RUN_PATH
    if (!catalog_->real_test_ep()) return nullptr;
    const fs::path model = app_dir_ / "relu.onnx";
    if (!fs::exists(model)) std::ofstream(model, std::ios::binary) << relu_model();
    const auto r = daemon::run_command(
        {EPBROKER_RUN_PATH, model.string(), "--ep", "EpbrokerTestEp", "--iterations", "1",
         "--warmup", "0", "--no-install", "--json", "--bus-address", address()},
        120s);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << describe(r);
    if (j.is_discarded() || !j.contains("broker")) return nlohmann::json::object();
    return j.at("broker");
#else
    return nullptr;
#endif
  }
  // What the app registered of test-ep: "VERSION LIBRARY", "" when nothing.
  std::string app_registers() {
    const auto broker = run_app();
    if (broker.is_null()) {
      std::cout << "epbroker-run: not run (not built, or test-ep is a stand-in)\n";
      return "(no app)";
    }
    std::cout << "epbroker-run: " << broker.dump() << "\n";
    for (const auto& p : broker.value("registered", nlohmann::json::array())) {
      if (p.value("name", "") == kTestEp) {
        return p.value("version", "") + " " + p.value("library_path", "");
      }
    }
    return "";
  }

  support::TempDir app_dir_;
};

// The report: 0.2.0 installed next to 0.1.0 reaches new sessions and
// the app; the old session's files stay while it lives; 0.10.0 is newer than
// 0.9.0; a version beyond keep_versions goes with its last lease.
TEST_F(LifecycleTest, AnUpdateReachesNewSessionsAndTheAppAndOldLeasesKeepTheirFiles) {
  start_manual();
  auto c = client();
  c.refresh();
  ASSERT_EQ(c.install(kTestEp).version, "0.1.0");
  epbroker::Session s1 = session(c, kTestEp);
  const auto lib1 = granted(s1).library_path;
  ASSERT_EQ(granted(s1).version, "0.1.0");
  ASSERT_TRUE(fs::exists(lib1)) << lib1;

  catalog_->publish_version(kTestEp, "0.2.0");
  c.refresh();
  EXPECT_EQ(row(c, kTestEp).update_available, "0.2.0");
  const auto installed = c.install(kTestEp);  // install NAME: the newest compatible version
  EXPECT_EQ(installed.version, "0.2.0");
  EXPECT_EQ(row(c, kTestEp).version, "0.2.0");
  EXPECT_EQ(row(c, kTestEp).update_available, "");

  // A new session, and a new app, get 0.2.0.
  epbroker::Session s2 = session(c, kTestEp);
  const auto lib2 = granted(s2).library_path;
  EXPECT_EQ(granted(s2).version, "0.2.0");
  EXPECT_NE(lib2, lib1);
  const std::string app = app_registers();
  if (app != "(no app)") {
    EXPECT_EQ(app, "0.2.0 " + lib2);
  }

  // The session opened before keeps 0.1.0, leased, its files in place ...
  auto v1 = version_info(c, kTestEp, "0.1.0");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->leases, 1U);
  EXPECT_TRUE(fs::exists(lib1));
  // ... and once it ends, 0.1.0 stays as the rollback version (keep_versions 1).
  s1.release();
  v1 = version_info(c, kTestEp, "0.1.0");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->role, "rollback");
  EXPECT_EQ(v1->leases, 0U);
  EXPECT_TRUE(fs::exists(lib1));

  // 0.9.0 then 0.10.0, by update(): 0.10.0 is the newer (not as text). s2 still
  // leases 0.2.0, which two updates later is neither current nor kept.
  catalog_->publish_version(kTestEp, "0.9.0");
  c.refresh();
  auto changes = c.update({kTestEp});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].from, "0.2.0");
  EXPECT_EQ(changes[0].to, "0.9.0");
  EXPECT_FALSE(fs::exists(lib1));  // 0.1.0: beyond keep_versions, unleased
  EXPECT_FALSE(version_info(c, kTestEp, "0.1.0"));
  catalog_->publish_version(kTestEp, "0.10.0");
  c.refresh();
  EXPECT_EQ(row(c, kTestEp).update_available, "0.10.0");
  changes = c.update({kTestEp});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].from, "0.9.0");
  EXPECT_EQ(changes[0].to, "0.10.0");
  EXPECT_EQ(row(c, kTestEp).version, "0.10.0");
  epbroker::Session s3 = session(c, kTestEp);
  EXPECT_EQ(granted(s3).version, "0.10.0");
  const std::string app10 = app_registers();
  if (app10 != "(no app)") {
    EXPECT_EQ(app10, "0.10.0 " + granted(s3).library_path);
  }
  // Nothing left to update.
  changes = c.update({kTestEp}, /*dry_run=*/true);
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].to, "0.10.0");

  // 0.2.0 is kept only for s2's lease; its files go when s2 ends.
  auto v2 = version_info(c, kTestEp, "0.2.0");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->leases, 1U);
  EXPECT_EQ(v2->role, "leased");
  EXPECT_TRUE(fs::exists(lib2));
  EXPECT_EQ(version_info(c, kTestEp, "0.9.0").value_or(epbroker::VersionInfo{}).role, "rollback");
  s2.release();
  EXPECT_TRUE(tests::daemon::wait_until([&] { return !fs::exists(lib2); }, 10s)) << lib2;
  EXPECT_FALSE(version_info(c, kTestEp, "0.2.0"));
  EXPECT_TRUE(c.gc().empty());
  EXPECT_EQ(row(c, kTestEp).versions.size(), 2U);

  // The history tells the story.
  std::vector<std::string> seen;
  for (const auto& e : c.history(kTestEp)) {
    if (e.action == "install" || e.action == "update") {
      seen.push_back(e.action + " " + e.from + ">" + e.to + " " + e.result);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"install >0.1.0 ok", "update 0.1.0>0.2.0 ok",
                                            "update 0.2.0>0.9.0 ok", "update 0.9.0>0.10.0 ok"}));
}

// A version the signed catalog withdraws is revoked: new sessions (and the app)
// get the kept older one; published again, an update makes it current again.
TEST_F(LifecycleTest, AWithdrawnVersionIsRevokedUntilPublishedAgain) {
  start_manual();
  auto c = client();
  c.refresh();
  c.install(kTestEp);
  catalog_->publish_version(kTestEp, "0.2.0");
  c.refresh();
  c.update();
  ASSERT_EQ(row(c, kTestEp).version, "0.2.0");

  catalog_->withdraw(kTestEp, "0.2.0");
  c.refresh();
  EXPECT_EQ(row(c, kTestEp).version, "0.1.0");
  EXPECT_EQ(version_info(c, kTestEp, "0.2.0").value_or(epbroker::VersionInfo{}).role, "revoked");
  epbroker::Session s = session(c, kTestEp);
  EXPECT_EQ(granted(s).version, "0.1.0");
  const std::string app = app_registers();
  if (app != "(no app)") {
    EXPECT_EQ(app, "0.1.0 " + granted(s).library_path);
  }
  bool revoked = false;
  for (const auto& e : c.history(kTestEp)) revoked |= e.action == "revoke" && e.from == "0.2.0";
  EXPECT_TRUE(revoked);

  catalog_->publish_version(kTestEp, "0.2.0");
  c.refresh();
  EXPECT_NE(version_info(c, kTestEp, "0.2.0").value_or(epbroker::VersionInfo{}).role, "revoked");
  c.update({kTestEp});
  EXPECT_EQ(row(c, kTestEp).version, "0.2.0");
}

// No unprivileged user can block an admin's removal: a session of uid 65534
// does not make remove() fail; new sessions no longer get the package, and its
// files go when that session ends. remove(name, now) deletes them at once.
TEST_F(LifecycleTest, AnUnprivilegedUsersSessionDoesNotBlockRemove) {
  start_manual();
  auto c = client();
  c.refresh();
  const std::string lib = c.install(kTestEp).library_path;
  ASSERT_TRUE(fs::exists(lib));

  // The bus client, where uid 65534 may run it (the build tree may be private).
  const fs::path bin = bus_->root() / "bin/bus_client";
  fs::create_directories(bin.parent_path());
  fs::copy_file(tests::daemon::bus_client_path(), bin, fs::copy_options::overwrite_existing);
  ASSERT_EQ(chmod(bin.parent_path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  auto hold_as_nobody = [&] {
    Child holder =
        tests::daemon::start_child({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    bin.string(), address(), "session", kTestEp});
    EXPECT_TRUE(holder.read_line(30s).value_or("").starts_with("session "));
    EXPECT_EQ(holder.read_line(10s).value_or(""), "provider test-ep ready");
    return holder;
  };

  Child holder = hold_as_nobody();
  const auto v = version_info(c, kTestEp, "0.1.0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->leases, 1U);

  // remove: it succeeds; nobody new gets it; nobody's files stay meanwhile.
  EXPECT_NO_THROW(c.remove(kTestEp));
  EXPECT_EQ(version_info(c, kTestEp, "0.1.0").value_or(epbroker::VersionInfo{}).role, "removing");
  EXPECT_TRUE(fs::exists(lib));
  {
    epbroker::Session s = session(c, kTestEp);
    EXPECT_TRUE(s.ready_providers().empty());
  }
  const auto history = c.history(kTestEp);
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history.back().action, "remove");
  EXPECT_EQ(history.back().result, "ok");
  // The files go with nobody's session.
  holder.kill_and_wait(SIGKILL);
  EXPECT_TRUE(tests::daemon::wait_until([&] { return !fs::exists(lib); }, 10s)) << lib;
  EXPECT_TRUE(row(c, kTestEp).versions.empty());
  EXPECT_EQ(row(c, kTestEp).state, epbroker::ProviderState::available);

  // remove --now: gone at once, nobody's lease or not.
  const std::string lib_again = c.install(kTestEp).library_path;
  Child holder2 = hold_as_nobody();
  EXPECT_NO_THROW(c.remove(kTestEp, /*now=*/true));
  EXPECT_FALSE(fs::exists(lib_again));
  EXPECT_TRUE(row(c, kTestEp).versions.empty());
  holder2.kill_and_wait(SIGKILL);
  const auto verify = c.verify();
  for (const auto& r : verify) EXPECT_TRUE(r.ok) << r.name << " " << r.problem;
}

}  // namespace
}  // namespace tests::client
