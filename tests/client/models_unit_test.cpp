// libepbroker's and epbrokerctl's model parts without a bus: RequestSession's reply
// with models (kind "model" dicts go to their own list, never among the
// providers), ListModels' and RemoveModel's dicts, the options of ListModels,
// EnsureModel, RequestSession and RemoveModel, and epbrokerctl's `models` and
// `model install|remove` arguments and JSON.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "client/epbrokerctl/cli.hpp"
#include "client/epbrokerctl/output.hpp"
#include "client/src/convert.hpp"
#include "common/wire.hpp"

// libsdbus-c++ exports it (sdbus::Variant builds its messages with it), but no
// installed header declares it: a message without a bus, to read a reply from.
namespace sdbus {
PlainMessage createPlainMessage();
}  // namespace sdbus

namespace tests::client {
namespace {

using epbroker::Errc;
using epbroker::detail::Dict;
namespace key = common::key;

sdbus::Variant s(const char* v) { return sdbus::Variant(std::string(v)); }
sdbus::Variant ss(std::vector<std::string> v) { return sdbus::Variant(std::move(v)); }

// RequestSession's aa{sv} read as the library reads the reply.
epbroker::detail::SessionGrants grants_of(const std::vector<Dict>& dicts) {
  auto msg = sdbus::createPlainMessage();
  msg << dicts;
  msg.seal();
  msg.rewind(true);
  return epbroker::detail::read_session_grants(msg);
}

Dict provider(const char* name) {
  return {{key::name, s(name)},
          {key::kind, s("execution_provider")},
          {key::ep_names, ss({"TestEp"})},
          {key::version, s("1.0.0")},
          {key::state, s("ready")},
          {key::library_path, s("/store/x/lib.so")}};
}

Dict model() {
  return {{key::kind, s(std::string(common::kModelKind).c_str())},
          {key::name, s("tiny-net")},
          {key::version, s("1.0")},
          {key::variant, s("int8")},
          {key::state, s("ready")},
          {key::path, s("/store/_models/tiny-net/1.0/int8")},
          {key::main, s("/store/_models/tiny-net/1.0/int8/model.onnx")},
          {key::files, ss({"labels.txt", "model.onnx"})},
          {key::devices, ss({"npu"})},
          {key::eps, ss({"TestNpuExecutionProvider"})}};
}

TEST(ModelConvert, SessionReplyRoutesModelsOutOfTheProviders) {
  Dict newer = provider("b-ep");
  newer.emplace("future_key", sdbus::Variant(std::int32_t{7}));  // a newer daemon's key
  const auto g = grants_of({provider("a-ep"), model(), newer});
  ASSERT_EQ(g.providers.size(), 2U);
  EXPECT_EQ(g.providers[0].name, "a-ep");
  EXPECT_EQ(g.providers[1].name, "b-ep");
  for (const auto& p : g.providers) {
    EXPECT_EQ(p.kind, "execution_provider");
    EXPECT_EQ(p.state, epbroker::ProviderState::ready);
    EXPECT_EQ(p.library_path, "/store/x/lib.so");
  }
  ASSERT_EQ(g.models.size(), 1U);
  const auto& m = g.models[0];
  EXPECT_EQ(m.name, "tiny-net");
  EXPECT_EQ(m.version, "1.0");
  EXPECT_EQ(m.variant, "int8");
  EXPECT_EQ(m.state, "ready");
  EXPECT_EQ(m.path, "/store/_models/tiny-net/1.0/int8");
  EXPECT_EQ(m.main, "/store/_models/tiny-net/1.0/int8/model.onnx");
  EXPECT_EQ(m.files, (std::vector<std::string>{"labels.txt", "model.onnx"}));
  EXPECT_EQ(m.devices, std::vector<std::string>{"npu"});
  EXPECT_EQ(m.eps, std::vector<std::string>{"TestNpuExecutionProvider"});
  EXPECT_TRUE(m.job.empty());
  EXPECT_TRUE(m.reason.empty());

  // Only models: no provider at all.
  const auto only = grants_of({model()});
  EXPECT_TRUE(only.providers.empty());
  EXPECT_EQ(only.models.size(), 1U);
  // A provider's dict that happens to carry a model's keys stays a provider.
  Dict odd = provider("c-ep");
  odd.emplace(key::variant, s("x"));
  odd.emplace(key::files, ss({"f"}));
  const auto still = grants_of({odd});
  ASSERT_EQ(still.providers.size(), 1U);
  EXPECT_TRUE(still.models.empty());
}

TEST(ModelConvert, AModelNotReadyAndWrongTypes) {
  Dict installing = model();
  installing[key::state] = s("installing");
  installing.erase(key::path);
  installing.erase(key::main);
  installing.erase(key::files);
  installing.emplace(key::job, sdbus::Variant(sdbus::ObjectPath("/org/epbroker/Broker1/job/3")));
  installing.emplace(key::reason, s("being installed"));
  const auto g = grants_of({installing});
  ASSERT_EQ(g.models.size(), 1U);
  EXPECT_EQ(g.models[0].state, "installing");
  EXPECT_EQ(g.models[0].job, "/org/epbroker/Broker1/job/3");
  EXPECT_EQ(g.models[0].reason, "being installed");
  EXPECT_TRUE(g.models[0].main.empty());
  EXPECT_TRUE(g.models[0].files.empty());

  // A model's own key of the wrong type is a protocol error naming it.
  Dict bad = model();
  bad[key::files] = s("model.onnx");
  try {
    grants_of({bad});
    ADD_FAILURE() << "no error for a string 'files'";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
    EXPECT_NE(e.message().find("'files'"), std::string::npos) << e.message();
  }
}

TEST(ModelConvert, ListModelsDictsWithVariantsAndPlan) {
  const Dict fp32{{key::id, s("fp32")},
                  {key::devices, ss({})},
                  {key::eps, ss({})},
                  {key::ort_min, s("1.20")},
                  {key::opset, sdbus::Variant(std::uint32_t{17})},
                  {key::size, sdbus::Variant(std::uint64_t{33})},
                  {key::installed, sdbus::Variant(true)}};
  const Dict int8{{key::id, s("int8")},
                  {key::devices, ss({"npu"})},
                  {key::eps, ss({"TestNpuExecutionProvider"})},
                  {key::size, sdbus::Variant(std::uint64_t{20})}};
  const Dict d{{key::name, s("tiny-net")},
               {key::version, s("1.0")},
               {key::publisher, s("Test")},
               {key::license, s("Apache-2.0")},
               {key::license_url, s("https://example.com/license")},
               {key::description, s("a tiny net")},
               {key::task, s("image-classification")},
               {key::state, s("available")},
               {key::remote, s("test")},
               {key::variants, sdbus::Variant(std::vector<Dict>{fp32, int8})},
               {key::planned, s("fp32")},
               {key::plan_device, s("cpu0")},
               {key::plan_ep, s("CPUExecutionProvider")},
               {key::plan_reason, s("the generic variant")},
               {"future_key", sdbus::Variant(true)}};
  const auto m = epbroker::detail::to_model_info(d);
  EXPECT_EQ(m.name, "tiny-net");
  EXPECT_EQ(m.version, "1.0");
  EXPECT_EQ(m.publisher, "Test");
  EXPECT_EQ(m.license, "Apache-2.0");
  EXPECT_EQ(m.license_url, "https://example.com/license");
  EXPECT_EQ(m.description, "a tiny net");
  EXPECT_EQ(m.task, "image-classification");
  EXPECT_EQ(m.state, "available");
  EXPECT_TRUE(m.reason.empty());
  EXPECT_EQ(m.remote, "test");
  ASSERT_EQ(m.variants.size(), 2U);
  EXPECT_EQ(m.variants[0].id, "fp32");
  EXPECT_TRUE(m.variants[0].devices.empty());
  EXPECT_EQ(m.variants[0].ort_min, "1.20");
  EXPECT_EQ(m.variants[0].opset, 17U);
  EXPECT_EQ(m.variants[0].size, 33U);
  EXPECT_TRUE(m.variants[0].installed);
  EXPECT_EQ(m.variants[1].id, "int8");
  EXPECT_EQ(m.variants[1].devices, std::vector<std::string>{"npu"});
  EXPECT_EQ(m.variants[1].eps, std::vector<std::string>{"TestNpuExecutionProvider"});
  EXPECT_EQ(m.variants[1].opset, 0U);  // missing: the default
  EXPECT_FALSE(m.variants[1].installed);
  EXPECT_EQ(m.planned, "fp32");
  EXPECT_EQ(m.plan_device, "cpu0");
  EXPECT_EQ(m.plan_ep, "CPUExecutionProvider");
  EXPECT_EQ(m.plan_reason, "the generic variant");

  // An older daemon without the plan: empty.
  const auto bare = epbroker::detail::to_model_info({{key::name, s("x")}});
  EXPECT_TRUE(bare.planned.empty());
  EXPECT_TRUE(bare.variants.empty());

  Dict wrong = d;
  wrong[key::variants] =
      sdbus::Variant(std::vector<Dict>{{{key::id, s("fp32")}, {key::opset, s("17")}}});
  try {
    epbroker::detail::to_model_info(wrong);
    ADD_FAILURE() << "no error for a string opset";
  } catch (const epbroker::Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
    EXPECT_NE(e.message().find("'opset'"), std::string::npos) << e.message();
  }

  const auto r = epbroker::detail::to_removed_model(
      {{key::name, s("tiny-net")}, {key::version, s("1.0")}, {key::variant, s("fp32")}});
  EXPECT_EQ(r.name, "tiny-net");
  EXPECT_EQ(r.version, "1.0");
  EXPECT_EQ(r.variant, "fp32");
}

TEST(ModelConvert, TheOptionsOfEachCall) {
  auto d = epbroker::detail::to_list_models_options(epbroker::Policy::default_policy, "");
  EXPECT_EQ(d.size(), 1U);
  EXPECT_EQ(d.at(key::policy).get<std::string>(), "default");
  d = epbroker::detail::to_list_models_options(epbroker::Policy::prefer_npu, "1.22.0");
  EXPECT_EQ(d.at(key::policy).get<std::string>(), "prefer_npu");
  EXPECT_EQ(d.at(key::ort_version).get<std::string>(), "1.22.0");

  epbroker::ModelOptions o;
  d = epbroker::detail::to_ensure_model_options(o);
  EXPECT_EQ(d.size(), 1U);  // policy only: the daemon's defaults for the rest
  o.variant = "int8";
  o.version = "1.0";
  o.policy = epbroker::Policy::max_efficiency;
  o.ort_version = "1.22.0";
  d = epbroker::detail::to_ensure_model_options(o);
  EXPECT_EQ(d.size(), 4U);
  EXPECT_EQ(d.at(key::variant).get<std::string>(), "int8");
  EXPECT_EQ(d.at(key::version).get<std::string>(), "1.0");
  EXPECT_EQ(d.at(key::policy).get<std::string>(), "max_efficiency");
  EXPECT_EQ(d.at(key::ort_version).get<std::string>(), "1.22.0");

  // A session for the model alone: no providers key (so none is granted), no
  // download (the install ran first), the model -> variant map.
  d = epbroker::detail::to_model_session_options("tiny-net", o);
  EXPECT_EQ(d.count(key::providers), 0U);
  EXPECT_EQ(d.count(key::download), 0U);
  EXPECT_EQ(d.count(key::variant), 0U);
  EXPECT_EQ(d.at(key::policy).get<std::string>(), "max_efficiency");
  EXPECT_EQ(d.at(key::ort_version).get<std::string>(), "1.22.0");
  EXPECT_EQ(d.at(key::models).peekValueType(), "a{ss}");
  EXPECT_EQ((d.at(key::models).get<std::map<std::string, std::string>>()),
            (std::map<std::string, std::string>{{"tiny-net", "int8"}}));
  o.variant.clear();
  d = epbroker::detail::to_model_session_options("tiny-net", o);
  EXPECT_EQ((d.at(key::models).get<std::map<std::string, std::string>>()),
            (std::map<std::string, std::string>{{"tiny-net", ""}}));

  d = epbroker::detail::to_remove_model_options("", "", false);
  EXPECT_TRUE(d.empty());
  d = epbroker::detail::to_remove_model_options("1.0", "fp32", true);
  EXPECT_EQ(d.size(), 3U);
  EXPECT_EQ(d.at(key::version).get<std::string>(), "1.0");
  EXPECT_EQ(d.at(key::variant).get<std::string>(), "fp32");
  EXPECT_TRUE(d.at(key::now).get<bool>());
}

// ---- epbrokerctl --------------------------------------------------------------------

epbrokerctl::Invocation parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "epbrokerctl");
  auto r = epbrokerctl::parse_args(args);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r.value_or(epbrokerctl::Invocation{});
}

std::string usage_error(std::vector<std::string> args) {
  args.insert(args.begin(), "epbrokerctl");
  auto r = epbrokerctl::parse_args(args);
  EXPECT_FALSE(r.has_value()) << args[1];
  const std::string e = r ? std::string() : r.error();
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  return e;
}

TEST(ModelArgs, ModelsAndModelInstallRemove) {
  auto inv = parsed({"models"});
  EXPECT_EQ(inv.command, "models");
  EXPECT_TRUE(inv.args.empty());
  EXPECT_TRUE(inv.policy.empty());
  inv = parsed({"models", "--policy", "prefer_npu", "--ort-version=1.22.0", "--json"});
  EXPECT_EQ(inv.policy, "prefer_npu");
  EXPECT_EQ(inv.ort_version, "1.22.0");
  EXPECT_TRUE(inv.json);

  inv = parsed({"model", "install", "tiny-net", "--variant", "int8", "--version", "1.0", "--policy",
                "max_performance"});
  EXPECT_EQ(inv.command, "model");
  EXPECT_EQ(inv.action, "install");
  EXPECT_EQ(inv.args, std::vector<std::string>{"tiny-net"});
  EXPECT_EQ(inv.variant, "int8");
  EXPECT_EQ(inv.model_version, "1.0");
  EXPECT_EQ(inv.policy, "max_performance");
  EXPECT_FALSE(inv.version) << "a model's --version is not the tool's";

  inv = parsed({"model", "remove", "--now", "tiny-net", "--variant=fp32"});
  EXPECT_EQ(inv.action, "remove");
  EXPECT_EQ(inv.args, std::vector<std::string>{"tiny-net"});
  EXPECT_TRUE(inv.now);
  EXPECT_EQ(inv.variant, "fp32");
  EXPECT_TRUE(inv.model_version.empty());

  // The tool's --version still answers before a command.
  EXPECT_TRUE(parsed({"--version"}).version);
  EXPECT_TRUE(parsed({"model", "install", "--help"}).help);
}

TEST(ModelArgs, UsageErrorsNameWhatIsWrong) {
  EXPECT_NE(usage_error({"models", "--policy", "fastest"}).find("unknown policy 'fastest'"),
            std::string::npos);
  EXPECT_NE(usage_error({"models", "--ort-version", "1..2"}).find("--ort-version"),
            std::string::npos);
  EXPECT_NE(usage_error({"model", "install", "x", "--version", "v1"}).find("not a version"),
            std::string::npos);
  EXPECT_NE(usage_error({"model"}).find("which action"), std::string::npos);
  EXPECT_NE(usage_error({"model", "frob"}).find("unknown action 'frob'"), std::string::npos);
  EXPECT_NE(usage_error({"model", "install"}).find("NAME"), std::string::npos);
  EXPECT_NE(usage_error({"model", "install", "x", "--now"}).find("--now"), std::string::npos);
  EXPECT_NE(usage_error({"models", "extra"}).find("'extra'"), std::string::npos);
  EXPECT_NE(usage_error({"models", "--variant", "x"}).find("--variant"), std::string::npos);
}

TEST(ModelArgs, HelpShowsTheCommandsAndTheirOptions) {
  const std::string top = epbrokerctl::tool_help();
  for (const char* s : {"models [--policy POLICY] [--ort-version VERSION]",
                        "model install NAME [--variant VARIANT] [--version VERSION] [--policy "
                        "POLICY] | remove NAME [--now] [--version VERSION] [--variant VARIANT]"}) {
    EXPECT_NE(top.find(s), std::string::npos) << s << " missing from\n" << top;
  }
  const auto* model = epbrokerctl::find_command("model");
  ASSERT_NE(model, nullptr);
  ASSERT_EQ(model->actions.size(), 2U);
  const std::string install = epbrokerctl::command_help(*model, "install");
  EXPECT_TRUE(install.starts_with("Usage: epbrokerctl model install")) << install;
  for (const char* o : {"--variant VARIANT", "--version VERSION", "--policy POLICY"}) {
    EXPECT_NE(install.find(o), std::string::npos) << o << " missing from\n" << install;
  }
}

TEST(ModelOutput, JsonShapes) {
  epbroker::ModelInfo m;
  m.name = "tiny-net";
  m.version = "1.0";
  m.license = "MIT";
  m.state = "available";
  m.variants = {{"fp32", {}, {}, "1.20", 17, 33, true}};
  m.planned = "fp32";
  m.plan_device = "cpu0";
  m.plan_ep = "CPUExecutionProvider";
  auto j = epbrokerctl::to_json(m);
  EXPECT_EQ(j["name"], "tiny-net");
  EXPECT_EQ(j["publisher"], "");
  EXPECT_TRUE(j["license_url"].is_null());
  EXPECT_TRUE(j["task"].is_null());
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["planned"], "fp32");
  EXPECT_EQ(j["plan_device"], "cpu0");
  EXPECT_EQ(j["plan_ep"], "CPUExecutionProvider");
  EXPECT_TRUE(j["plan_reason"].is_null());
  ASSERT_EQ(j["variants"].size(), 1U);
  EXPECT_EQ(j["variants"][0], nlohmann::json({{"id", "fp32"},
                                              {"devices", nlohmann::json::array()},
                                              {"eps", nlohmann::json::array()},
                                              {"ort_min", "1.20"},
                                              {"opset", 17},
                                              {"size", 33},
                                              {"installed", true}}));
  EXPECT_EQ(epbrokerctl::to_json(epbroker::RemovedModel{"a", "1.0", "fp32"}),
            nlohmann::json({{"name", "a"}, {"version", "1.0"}, {"variant", "fp32"}}));
  EXPECT_EQ(epbrokerctl::to_json(epbroker::InstalledModel{"a", "1.0", "fp32", 9}),
            nlohmann::json({{"name", "a"}, {"version", "1.0"}, {"variant", "fp32"}, {"size", 9}}));
}

}  // namespace
}  // namespace tests::client
