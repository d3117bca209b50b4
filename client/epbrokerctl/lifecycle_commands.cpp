// epbrokerctl: the package lifecycle's commands: providers (one row per package,
// its kept versions below), install, update, hold, unhold, rollback, history, gc,
// remove, remote reset.
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "client/epbrokerctl/commands.hpp"

namespace epbrokerctl::lifecycle {
namespace {

using nlohmann::json;

// Runs a job-waiting call with the progress view, ended also when it throws.
template <typename F>
auto with_view(ProgressView& view, F&& body) {
  try {
    auto r = body();
    view.finish();
    return r;
  } catch (...) {
    view.finish();
    throw;
  }
}

// What `providers` says of an installed package below the table; "" = nothing.
std::string details_of(const epbroker::Provider& p) {
  std::vector<std::string> notes;
  if (!p.update_available.empty()) notes.push_back("update available: " + p.update_available);
  if (p.held) notes.push_back(p.hold_reason.empty() ? "held" : "held (" + p.hold_reason + ")");
  // Every installed version once there is more than the current one.
  const bool several =
      p.versions.size() > 1 || (p.versions.size() == 1 && p.versions[0].role != "current");
  if (notes.empty() && !several) return "";
  std::ostringstream out;
  out << "  " << p.name << (notes.empty() ? "" : ": " + join(notes, "; ")) << '\n';
  if (!several) return out.str();
  Table t({"    VERSION", "ROLE", "LEASES", "WHY"});
  for (const auto& v : p.versions) {
    t.add(
        {"    " + v.version, v.role, std::to_string(v.leases), v.reason.empty() ? "-" : v.reason});
  }
  t.print(out);
  return out.str();
}

}  // namespace

int providers(Context& ctx) {
  const auto list = ctx.client.providers();
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& p : list) arr.push_back(to_json(p));
    print_json(ctx, {{"providers", arr}});
    return kOk;
  }
  if (list.empty()) {
    ctx.out << "No providers: no trusted catalog lists any yet (try `epbrokerctl refresh`).\n";
    return kOk;
  }
  Table t({"NAME", "VERSION", "STATE", "SIZE", "DEVICES", "EP"});
  std::vector<const epbroker::Provider*> unusable;
  std::string details;
  for (const auto& p : list) {
    t.add({p.name, p.version.empty() ? "-" : p.version, p.state_name, format_bytes(p.size),
           p.devices.empty() ? "-" : join(p.devices, ","), join(p.ep_names, ",")});
    if (!p.reason.empty()) unusable.push_back(&p);
    details += details_of(p);
  }
  t.print(ctx.out);
  if (!details.empty()) ctx.out << "\nVersions kept, updates, holds:\n" << details;
  if (!unusable.empty()) {
    ctx.out << "\nWhy not usable here:\n";
    for (const auto* p : unusable) ctx.out << "  " << p->name << ": " << p->reason << '\n';
  }
  return kOk;
}

int install(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  ProgressView view(ctx.err, ctx.err_is_terminal);
  epbroker::Progress last;
  const epbroker::InstallOptions options{ctx.inv.package_version, ctx.inv.allow_older};
  const epbroker::Provider p = with_view(view, [&] {
    return ctx.client.install(name, options, progress_to(ctx, view, last), ctx.cancel);
  });
  if (ctx.inv.json) {
    print_json(ctx, {{"provider", to_json(p)}, {"job", to_json(last)}});
    return kOk;
  }
  ctx.out << "installed " << p.name << " " << p.version << " (" << format_bytes(p.size) << ")\n"
          << "  library: " << p.library_path << '\n';
  if (p.kind == "runtime") {
    ctx.out
        << "  kind: runtime (ONNX Runtime itself; apps open it with epbroker::load_runtime())\n";
  } else {
    ctx.out << "  registers as: " << join(p.ep_names, ", ") << '\n';
  }
  if (p.held) ctx.out << "  held: updates skip it (`epbrokerctl unhold " << p.name << "`)\n";
  return kOk;
}

int update(Context& ctx) {
  // One view per job: a new job starts its own line (and, on a terminal, its own bar).
  std::optional<ProgressView> view;
  std::map<std::string, epbroker::Progress> last;  // by job path
  std::string job;
  const auto on_progress = [&](const epbroker::Progress& p) {
    last[p.job] = p;
    if (ctx.inv.json) return;
    if (p.job != job) {
      if (view) view->finish();
      view.emplace(ctx.err, ctx.err_is_terminal);
      job = p.job;
      ctx.err << "updating " << (p.target.empty() ? p.job : p.target) << '\n';
    }
    view->update(p);
  };
  std::vector<epbroker::UpdateChange> changes;
  try {
    changes = ctx.client.update(ctx.inv.args, ctx.inv.dry_run, on_progress, ctx.cancel);
  } catch (...) {
    if (view) view->finish();
    throw;
  }
  if (view) view->finish();
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& c : changes) {
      const auto it = last.find(c.job);
      arr.push_back(to_json(c, it == last.end() ? json(nullptr) : to_json(it->second)));
    }
    print_json(ctx, {{"dry_run", ctx.inv.dry_run}, {"changes", arr}});
    return kOk;
  }
  if (changes.empty()) {
    ctx.out << "Nothing installed to update.\n";
    return kOk;
  }
  for (const auto& c : changes) {
    ctx.out << c.name << ' ' << (c.from.empty() ? "-" : c.from);
    if (c.from != c.to) {
      ctx.out << " -> " << c.to;
      if (ctx.inv.dry_run && !c.reason.empty()) ctx.out << " (" << c.reason << ')';
    } else if (!c.reason.empty()) {
      ctx.out << " (" << c.reason << ')';
    }
    ctx.out << '\n';
  }
  if (ctx.inv.dry_run) ctx.out << "(dry run: nothing was changed)\n";
  return kOk;
}

int hold(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  ctx.client.hold(name);
  if (ctx.inv.json) {
    print_json(ctx, {{"name", name}, {"held", true}});
  } else {
    ctx.out << "held " << name << ": updates skip it until `epbrokerctl unhold " << name << "`\n";
  }
  return kOk;
}

int unhold(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  ctx.client.unhold(name);
  if (ctx.inv.json) {
    print_json(ctx, {{"name", name}, {"held", false}});
  } else {
    ctx.out << "unheld " << name << ": updates reach it again\n";
  }
  return kOk;
}

int rollback(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  const auto r = ctx.client.rollback(name);
  if (ctx.inv.json) {
    print_json(ctx, {{"name", name}, {"from", r.from}, {"to", r.to}, {"held", true}});
  } else {
    ctx.out << name << ": " << r.from << " -> " << r.to << " (held; `epbrokerctl unhold " << name
            << "` allows updates again)\n";
  }
  return kOk;
}

int history(Context& ctx) {
  const std::string name = ctx.inv.args.empty() ? std::string() : ctx.inv.args.front();
  const auto entries = ctx.client.history(name);
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& e : entries) arr.push_back(to_json(e));
    print_json(ctx, {{"history", arr}});
    return kOk;
  }
  if (entries.empty()) {
    ctx.out << (name.empty() ? "No history yet.\n" : "No history for " + name + ".\n");
    return kOk;
  }
  Table t({"TIME", "UID", "ACTION", "NAME", "VERSIONS", "RESULT", "REASON"});
  for (const auto& e : entries) {
    std::string versions = e.from.empty() ? "-" : e.from;
    if (!e.to.empty() && e.to != e.from) versions += " -> " + e.to;
    t.add({format_utc(e.time), std::to_string(e.uid), e.action, e.name, versions, e.result,
           e.reason});
  }
  t.print(ctx.out);
  return kOk;
}

int gc(Context& ctx) {
  const auto removed = ctx.client.gc();
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& r : removed) arr.push_back(to_json(r));
    print_json(ctx, {{"removed", arr}});
    return kOk;
  }
  if (removed.empty()) {
    ctx.out << "nothing to remove\n";
    return kOk;
  }
  for (const auto& r : removed) ctx.out << "removed " << r.name << ' ' << r.version << '\n';
  return kOk;
}

int remove(Context& ctx) {
  const std::string& name = ctx.inv.args.at(0);
  ctx.client.remove(name, ctx.inv.now);
  if (ctx.inv.json) {
    print_json(ctx, {{"removed", name}, {"now", ctx.inv.now}});
  } else if (ctx.inv.now) {
    ctx.out << "removed " << name << " (every version deleted now)\n";
  } else {
    ctx.out << "removed " << name
            << " (new sessions no longer get it; leased versions go when their last lease ends)\n";
  }
  return kOk;
}

int remote(Context& ctx) {
  // parse_args admits the known actions only: `reset`.
  const std::string& name = ctx.inv.args.at(0);
  ctx.client.reset_remote(name);
  if (ctx.inv.json) {
    print_json(ctx, {{"remote", name}, {"reset", true}});
  } else {
    ctx.out << "remote " << name
            << ": trusted metadata dropped; the next `epbrokerctl refresh` starts again from its "
               "configured trusted_root\n";
  }
  return kOk;
}

}  // namespace epbrokerctl::lifecycle
