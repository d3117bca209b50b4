#include "client/epbrokerctl/commands.hpp"

#include <algorithm>
#include <ctime>
#include <ostream>
#include <sstream>

#include "client/epbrokerctl/output.hpp"

namespace epbrokerctl {
namespace {

using nlohmann::json;

std::string hex4(std::uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", v);
  return buf;
}

// ---- devices ----------------------------------------------------------------------------

int devices(Context& ctx) {
  const auto list = ctx.client.devices();
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& d : list) arr.push_back(to_json(d));
    print_json(ctx, {{"devices", arr}});
    return kOk;
  }
  Table t({"ID", "TYPE", "VENDOR", "NAME", "DRIVER", "DETAILS"});
  for (const auto& d : list) {
    std::string details;
    if (d.type == "cpu") {
      details =
          std::to_string(d.cores) + " cores, " + std::to_string(d.threads) + " threads, " + d.arch;
      // The extensions EPs care about most, if present.
      std::vector<std::string> notable;
      for (const char* isa : {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "sve"}) {
        if (std::find(d.isa.begin(), d.isa.end(), isa) != d.isa.end()) notable.push_back(isa);
      }
      if (!notable.empty()) details += "; " + join(notable, " ");
    } else {
      details = d.bus_path.empty() ? "" : "pci " + d.bus_path;
      details += " [" + hex4(d.vendor_id) + ":" + hex4(d.device_id) + "]";
      if (!d.node.empty()) details += " " + d.node;
    }
    std::string driver = d.driver;
    if (!d.driver_version.empty()) driver += " " + d.driver_version;
    t.add({d.id, d.type, d.vendor, d.name, driver.empty() ? "-" : driver, details});
  }
  t.print(ctx.out);
  return kOk;
}

// ---- refresh (a job) / verify / status --------------------------------------------------

int refresh(Context& ctx) {
  ProgressView view(ctx.err, ctx.err_is_terminal);
  epbroker::Progress last;
  try {
    ctx.client.refresh(progress_to(ctx, view, last), ctx.cancel);
  } catch (...) {
    view.finish();
    throw;
  }
  view.finish();
  const auto s = ctx.client.status();
  if (ctx.inv.json) {
    print_json(
        ctx,
        {{"job", to_json(last)},
         {"catalog",
          {{"revision", s.catalog_revision},
           {"expires", s.catalog_expires.empty() ? json(nullptr) : json(s.catalog_expires)}}}});
    return kOk;
  }
  ctx.out << "catalog revision " << s.catalog_revision;
  if (!s.catalog_expires.empty()) ctx.out << ", expires " << s.catalog_expires;
  ctx.out << '\n';
  return kOk;
}

int verify(Context& ctx) {
  // Progress on stderr as install shows it; the output below is unchanged.
  ProgressView view(ctx.err, ctx.err_is_terminal);
  epbroker::Progress last;
  const auto asked_at = std::time(nullptr);
  epbroker::VerifyReport report;
  try {
    report = ctx.client.verify(progress_to(ctx, view, last), ctx.cancel);
  } catch (...) {
    view.finish();
    throw;
  }
  view.finish();
  const auto& results = report.results;
  const bool ok = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.ok; });
  if (ctx.inv.json) {
    json arr = json::array();
    for (const auto& r : results) arr.push_back(to_json(r));
    print_json(ctx, {{"ok", ok}, {"results", arr}});
  } else if (results.empty()) {
    ctx.out << "Nothing installed.\n";
  } else {
    Table t({"NAME", "VERSION", "RESULT"});
    for (const auto& r : results) t.add({r.name, r.version, r.ok ? "ok" : "DAMAGED: " + r.problem});
    t.print(ctx.out);
    // A model variant's row has version "VERSION/VARIANT" (a package version has no '/').
    const bool damaged_package = std::any_of(results.begin(), results.end(), [](const auto& r) {
      return !r.ok && r.version.find('/') == std::string::npos;
    });
    const bool damaged_model = std::any_of(results.begin(), results.end(), [](const auto& r) {
      return !r.ok && r.version.find('/') != std::string::npos;
    });
    if (damaged_package) ctx.out << "\nRepair a damaged package with `epbrokerctl install NAME`.\n";
    if (damaged_model) {
      ctx.out << (damaged_package ? "" : "\n")
              << "Repair a damaged model variant with `epbrokerctl model install NAME --version "
                 "VERSION --variant VARIANT`.\n";
    }
    // The daemon answered with an earlier verification's result (a new one starts
    // at most every 10 minutes without org.epbroker.manage): said on stderr.
    if (report.finished != 0 && report.finished < asked_at - 1) {
      ctx.err << "(the result of the verification that ended at " << format_utc(report.finished)
              << ": a new one starts at most every 10 minutes, at any time for root)\n";
    }
  }
  return ok ? kOk : kFailed;
}

int status(Context& ctx) {
  const auto s = ctx.client.status();
  const auto list = ctx.client.providers();
  std::size_t installed = 0;
  std::uint64_t store_bytes = 0;
  for (const auto& p : list) {
    if (p.state != epbroker::ProviderState::ready) continue;
    ++installed;
    store_bytes += p.size;
  }
  std::vector<const epbroker::JobInfo*> running;
  for (const auto& j : s.jobs) {
    if (!epbroker::is_final(j.progress.state)) running.push_back(&j);
  }
  if (ctx.inv.json) {
    json jobs = json::array();
    for (const auto& j : s.jobs) jobs.push_back(to_json(j));
    const auto& addr = ctx.client.bus_address();
    print_json(
        ctx, {{"bus_address", addr.empty() ? json(nullptr) : json(addr)},
              {"daemon", {{"version", s.version}, {"state", s.daemon_state}}},
              {"catalog",
               {{"revision", s.catalog_revision},
                {"expires", s.catalog_expires.empty() ? json(nullptr) : json(s.catalog_expires)}}},
              {"store", {{"installed", installed}, {"bytes", store_bytes}}},
              {"sessions", s.sessions},
              {"jobs", jobs}});
    return kOk;
  }
  const auto& addr = ctx.client.bus_address();
  ctx.out << "daemon:    epbrokerd " << s.version << " (" << s.daemon_state << ")\n"
          << "bus:       " << (addr.empty() ? "system bus" : addr) << '\n'
          << "catalog:   ";
  if (s.catalog_revision == 0) {
    ctx.out << "never refreshed (run `epbrokerctl refresh`)\n";
  } else {
    ctx.out << "revision " << s.catalog_revision << ", expires "
            << (s.catalog_expires.empty() ? "-" : s.catalog_expires) << '\n';
  }
  ctx.out << "store:     " << installed << (installed == 1 ? " provider" : " providers")
          << " installed, " << format_bytes(store_bytes) << '\n'
          << "sessions:  " << s.sessions << '\n'
          << "jobs:      "
          << (running.empty() ? std::string("none running")
                              : std::to_string(running.size()) + " running")
          << '\n';
  for (const auto* j : running) {
    const auto& p = j->progress;
    ctx.out << "  " << p.kind << (p.target.empty() ? "" : " " + p.target) << ": "
            << epbroker::to_string(p.state) << ", " << format_bytes(p.bytes_done);
    if (p.bytes_total > 0) ctx.out << " / " << format_bytes(p.bytes_total);
    ctx.out << '\n';
  }
  return kOk;
}

}  // namespace

void print_json(Context& ctx, const json& doc) { ctx.out << doc.dump(2) << '\n'; }

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

epbroker::ProgressCallback progress_to(Context& ctx, ProgressView& view, epbroker::Progress& last) {
  return [&ctx, &view, &last](const epbroker::Progress& p) {
    last = p;
    if (!ctx.inv.json) view.update(p);
  };
}

int run_command(Context& ctx) {
  const std::string& c = ctx.inv.command;
  if (c == "devices") return devices(ctx);
  if (c == "providers") return lifecycle::providers(ctx);
  if (c == "models") return models::list(ctx);
  if (c == "model") return models::model(ctx);
  if (c == "install") return lifecycle::install(ctx);
  if (c == "update") return lifecycle::update(ctx);
  if (c == "hold") return lifecycle::hold(ctx);
  if (c == "unhold") return lifecycle::unhold(ctx);
  if (c == "rollback") return lifecycle::rollback(ctx);
  if (c == "history") return lifecycle::history(ctx);
  if (c == "gc") return lifecycle::gc(ctx);
  if (c == "remove") return lifecycle::remove(ctx);
  if (c == "remote") return lifecycle::remote(ctx);
  if (c == "refresh") return refresh(ctx);
  if (c == "verify") return verify(ctx);
  if (c == "status") return status(ctx);
  return kUsage;  // parse_args() admits known commands only
}

}  // namespace epbrokerctl
