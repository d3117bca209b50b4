// epbrokerctl: the models' commands: models (one row per model version, what this
// machine gets below), model install, model remove.
#include <ostream>

#include "client/epbrokerctl/commands.hpp"

namespace epbrokerctl::models {
namespace {

using nlohmann::json;

// --policy as parsed (parse_args admitted known names only); default when not given.
epbroker::Policy policy_of(const Invocation& inv) {
  return epbroker::parse_policy(inv.policy).value_or(epbroker::Policy::default_policy);
}

// "fp32*, int8": the variants, `*` marking the installed ones.
std::string variants_of(const epbroker::ModelInfo& m) {
  std::vector<std::string> ids;
  for (const auto& v : m.variants) ids.push_back(v.id + (v.installed ? "*" : ""));
  return ids.empty() ? "-" : join(ids, ", ");
}

// What `models` says of a model below the table.
std::string plan_of(const epbroker::ModelInfo& m) {
  std::string out = m.name + " " + m.version + ": ";
  if (m.state != "available") {
    out += m.state + (m.reason.empty() ? "" : ": " + m.reason) + '\n';
    return out;
  }
  if (m.planned.empty()) {
    out += "no variant fits this machine\n";
  } else {
    out += "this machine gets: " + m.planned;
    if (!m.plan_device.empty()) out += " on " + m.plan_device;
    if (!m.plan_ep.empty()) out += " via " + m.plan_ep;
    out += '\n';
  }
  if (!m.plan_reason.empty()) out += "  why: " + m.plan_reason + '\n';
  return out;
}

int install(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  epbroker::ModelOptions options;
  options.variant = ctx.inv.variant;
  options.version = ctx.inv.model_version;
  options.policy = policy_of(ctx.inv);
  ProgressView view(ctx.err, ctx.err_is_terminal);
  epbroker::Progress last;
  epbroker::InstalledModel m;
  try {
    m = ctx.client.install_model(name, options, progress_to(ctx, view, last), ctx.cancel);
  } catch (...) {
    view.finish();
    throw;
  }
  view.finish();
  if (ctx.inv.json) {
    print_json(ctx, {{"model", to_json(m)}, {"job", to_json(last)}});
    return kOk;
  }
  ctx.out << "installed model " << m.name << " " << m.version << ", variant " << m.variant << " ("
          << format_bytes(m.size) << ")\n";
  return kOk;
}

int remove(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  const auto removed =
      ctx.client.remove_model(name, ctx.inv.model_version, ctx.inv.variant, ctx.inv.now);
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& r : removed) arr.push_back(to_json(r));
    print_json(ctx, {{"removed", arr}, {"now", ctx.inv.now}});
    return kOk;
  }
  for (const auto& r : removed) {
    ctx.out << "removed model " << r.name << " " << r.version << ", variant " << r.variant << '\n';
  }
  return kOk;
}

}  // namespace

int list(Context& ctx) {
  const auto list = ctx.client.models(policy_of(ctx.inv), ctx.inv.ort_version);
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& m : list) arr.push_back(to_json(m));
    print_json(ctx, {{"models", arr}});
    return kOk;
  }
  if (list.empty()) {
    ctx.out << "No models: no trusted catalog lists any yet (try `epbrokerctl refresh`).\n";
    return kOk;
  }
  Table t({"NAME", "VERSION", "LICENSE", "TASK", "VARIANTS"});
  std::string plans;
  bool any_installed = false;
  for (const auto& m : list) {
    t.add({m.name, m.version, m.license.empty() ? "-" : m.license, m.task.empty() ? "-" : m.task,
           variants_of(m)});
    for (const auto& v : m.variants) any_installed = any_installed || v.installed;
    plans += plan_of(m);
  }
  t.print(ctx.out);
  if (any_installed) ctx.out << "(* installed)\n";
  ctx.out << "\nOn this machine (policy " << epbroker::to_string(policy_of(ctx.inv))
          << (ctx.inv.ort_version.empty() ? "" : ", ONNX Runtime " + ctx.inv.ort_version) << "):\n"
          << plans;
  return kOk;
}

int model(Context& ctx) {
  // parse_args admits the known actions only.
  if (ctx.inv.action == "install") return install(ctx);
  return remove(ctx);
}

}  // namespace epbrokerctl::models
