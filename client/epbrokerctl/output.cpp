#include "client/epbrokerctl/output.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <ostream>

namespace epbrokerctl {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < kUnits.size()) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string format_duration(std::chrono::seconds s) {
  const auto total = s.count() < 0 ? 0 : s.count();
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  }
  return buf;
}

std::string format_utc(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  char buf[32];
  if (gmtime_r(&t, &tm) == nullptr ||
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return std::to_string(unix_seconds);
  }
  return buf;
}

namespace {

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

json to_json(const epbroker::Device& d) {
  json out = {{"id", d.id},
              {"type", d.type},
              {"vendor_id", d.vendor_id},
              {"device_id", d.device_id},
              {"vendor", d.vendor},
              {"name", d.name},
              {"driver", d.driver},
              {"driver_version", d.driver_version},
              {"bus_path", d.bus_path},
              {"discrete", d.discrete},
              {"node", d.node},
              {"cpu", nullptr}};
  if (d.type == "cpu") {
    out["cpu"] = {{"arch", d.arch}, {"cores", d.cores}, {"threads", d.threads}, {"isa", d.isa}};
  }
  return out;
}

json to_json(const epbroker::Provider& p) {
  json versions = json::array();
  for (const auto& v : p.versions) versions.push_back(to_json(v));
  return {{"name", p.name},
          {"ep_names", p.ep_names},
          {"version", p.version},
          {"vendor", p.vendor},
          {"state", p.state_name},
          {"devices", p.devices},
          {"size", p.size},
          {"library_path", or_null(p.library_path)},
          {"reason", or_null(p.reason)},
          {"remote", or_null(p.remote)},
          {"job", or_null(p.job)},
          {"versions", versions},
          {"update_available", or_null(p.update_available)},
          {"held", p.held},
          {"hold_reason", or_null(p.hold_reason)}};
}

json to_json(const epbroker::VersionInfo& v) {
  return {{"version", v.version},
          {"role", v.role},
          {"reason", or_null(v.reason)},
          {"leases", v.leases}};
}

json to_json(const epbroker::HistoryEntry& h) {
  return {{"time", format_utc(h.time)}, {"timestamp", h.time}, {"uid", h.uid},
          {"action", h.action},         {"name", h.name},      {"from", or_null(h.from)},
          {"to", or_null(h.to)},        {"result", h.result},  {"reason", or_null(h.reason)}};
}

json to_json(const epbroker::RemovedVersion& r) {
  return {{"name", r.name}, {"version", r.version}};
}

json to_json(const epbroker::ModelVariantInfo& v) {
  return {{"id", v.id},
          {"devices", v.devices},
          {"eps", v.eps},
          {"ort_min", v.ort_min},
          {"opset", v.opset},
          {"size", v.size},
          {"installed", v.installed}};
}

json to_json(const epbroker::ModelInfo& m) {
  json variants = json::array();
  for (const auto& v : m.variants) variants.push_back(to_json(v));
  return {{"name", m.name},
          {"version", m.version},
          {"publisher", m.publisher},
          {"license", m.license},
          {"license_url", or_null(m.license_url)},
          {"description", or_null(m.description)},
          {"task", or_null(m.task)},
          {"state", m.state},
          {"reason", or_null(m.reason)},
          {"remote", or_null(m.remote)},
          {"variants", variants},
          {"planned", or_null(m.planned)},
          {"plan_device", or_null(m.plan_device)},
          {"plan_ep", or_null(m.plan_ep)},
          {"plan_reason", or_null(m.plan_reason)}};
}

json to_json(const epbroker::InstalledModel& m) {
  return {{"name", m.name}, {"version", m.version}, {"variant", m.variant}, {"size", m.size}};
}

json to_json(const epbroker::RemovedModel& r) {
  return {{"name", r.name}, {"version", r.version}, {"variant", r.variant}};
}

json to_json(const epbroker::UpdateChange& c, const json& job) {
  return {{"name", c.name},
          {"from", or_null(c.from)},
          {"to", or_null(c.to)},
          {"changed", c.from != c.to},
          {"reason", or_null(c.reason)},
          {"job", job}};
}

json to_json(const epbroker::Progress& p) {
  return {{"path", p.job},
          {"kind", p.kind},
          {"target", p.target},
          {"state", std::string(epbroker::to_string(p.state))},
          {"bytes_done", p.bytes_done},
          {"bytes_total", p.bytes_total}};
}

json to_json(const epbroker::JobInfo& j) {
  json out = to_json(j.progress);
  out["error"] = or_null(j.error);
  out["error_message"] = or_null(j.error_message);
  return out;
}

json to_json(const epbroker::VerifyResult& r) {
  return {{"name", r.name}, {"version", r.version}, {"ok", r.ok}, {"problem", or_null(r.problem)}};
}

// ---- Table ----------------------------------------------------------------------------

Table::Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void Table::add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

// ---- ProgressView -----------------------------------------------------------------------

ProgressView::ProgressView(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

void ProgressView::update(const epbroker::Progress& p) {
  const auto now = Clock::now();
  if (!started_ && p.bytes_done > 0) {
    started_ = true;
    start_ = now;
    start_bytes_ = p.bytes_done;
  }
  std::string rate;
  std::string eta;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  if (started_ && seconds >= 0.5 && p.bytes_done > start_bytes_) {
    const double bps = static_cast<double>(p.bytes_done - start_bytes_) / seconds;
    rate = format_bytes(static_cast<std::uint64_t>(bps)) + "/s";
    if (p.bytes_total > p.bytes_done && bps > 0) {
      const auto left = static_cast<double>(p.bytes_total - p.bytes_done) / bps;
      eta = "ETA " + format_duration(std::chrono::seconds(static_cast<long long>(left + 0.5)));
    }
  }
  const std::string state(epbroker::to_string(p.state));
  // A refresh job moves no counted bytes: its state says it all.
  std::string amount;
  if (p.bytes_done > 0 || p.bytes_total > 0) amount = format_bytes(p.bytes_done);
  if (p.bytes_total > 0) amount += " / " + format_bytes(p.bytes_total);
  int percent = -1;
  if (p.bytes_total > 0) {
    percent = static_cast<int>(std::min<std::uint64_t>(100, p.bytes_done * 100 / p.bytes_total));
  }

  const bool state_changed = p.state != last_state_;
  if (terminal_) {
    // Redraw at most 10 times a second (the daemon reports every chunk).
    if (!state_changed && now - last_line_ < std::chrono::milliseconds(100)) return;
    last_line_ = now;
    constexpr int kBar = 24;
    std::string bar;
    if (percent >= 0) {
      const int filled = percent * kBar / 100;
      bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(kBar - filled), '-') + "] ";
      bar += std::to_string(percent) + "%";
    }
    std::string line = state;
    line.resize(std::max<std::size_t>(line.size(), 12), ' ');
    line += bar;
    if (!amount.empty()) line += "  " + amount;
    if (!rate.empty()) line += "  " + rate;
    if (!eta.empty()) line += "  " + eta;
    // \r, the line, then clear to the end of the line (ESC [ K).
    out_ << '\r' << line << "\x1b[K" << std::flush;
    drawn_ = true;
  } else {
    std::string line = amount.empty() ? state : state + ": " + amount;
    if (percent >= 0) line += " (" + std::to_string(percent) + "%)";
    if (!rate.empty()) line += ", " + rate;
    if (!eta.empty()) line += ", " + eta;
    if (!state_changed && now - last_line_ < std::chrono::seconds(1)) {
      held_ = std::move(line);
    } else {
      if (state_changed && !held_.empty()) out_ << held_ << '\n';
      held_.clear();
      out_ << line << '\n' << std::flush;
      last_line_ = now;
    }
  }
  last_state_ = p.state;
}

void ProgressView::finish() {
  if (drawn_) out_ << '\n' << std::flush;
  drawn_ = false;
}

}  // namespace epbrokerctl
