#include "client/epbroker-run/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace epbroker_run {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "1.23 ms", or "123 us" below a tenth of a millisecond.
std::string ms(double v) { return v < 0.1 ? fixed(v * 1000.0, 1) + " us" : fixed(v, 3) + " ms"; }

std::string device_text(const DeviceLine& d) {
  std::string out = d.device.type;
  const std::string what = !d.name.empty() ? d.name : d.device.vendor;
  if (!what.empty()) out += " " + what;
  if (!d.device.library_path.empty()) out += " [" + d.device.ep_vendor + " plugin]";
  return out;
}

std::string latency_text(const Latency& l, std::int64_t batch) {
  return std::to_string(l.runs) + " runs: p50 " + ms(l.p50_ms) + ", p99 " + ms(l.p99_ms) +
         ", mean " + ms(l.mean_ms) + "; " + fixed(l.throughput, 1) + " items/s (batch " +
         std::to_string(batch) + ")";
}

nlohmann::json latency_json(const Latency& l) {
  return {{"runs", l.runs},     {"first_ms", l.first_ms}, {"p50_ms", l.p50_ms},
          {"p99_ms", l.p99_ms}, {"mean_ms", l.mean_ms},   {"throughput_per_s", l.throughput}};
}

nlohmann::json device_json(const DeviceLine& d) {
  return {{"ep", d.device.ep_name},
          {"ep_vendor", d.device.ep_vendor},
          {"type", d.device.type},
          {"vendor", d.device.vendor},
          {"vendor_id", d.device.vendor_id},
          {"device_id", d.device.device_id},
          {"name", d.name},
          {"library_path", d.device.library_path}};
}

}  // namespace

Latency summarize(std::vector<double> samples_ms, double first_ms, std::int64_t batch) {
  Latency l;
  l.first_ms = first_ms;
  l.runs = samples_ms.size();
  if (samples_ms.empty()) return l;
  std::sort(samples_ms.begin(), samples_ms.end());
  const auto rank = [&](double q) {
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples_ms.size())));
    return samples_ms[std::clamp<std::size_t>(k, 1, samples_ms.size()) - 1];
  };
  l.p50_ms = rank(0.50);
  l.p99_ms = rank(0.99);
  const double total = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0);
  l.mean_ms = total / static_cast<double>(samples_ms.size());
  l.throughput = total > 0 ? static_cast<double>(batch) * static_cast<double>(samples_ms.size()) /
                                 (total / 1000.0)
                           : 0;
  return l;
}

void print_text(std::ostream& out, const Report& r) {
  out << "model: " << r.model << " (ONNX Runtime " << r.ort_version << ")\n";
  if (const auto& c = r.catalog_model) {
    out << "  from the model catalog: " << c->name << " " << c->version << ", variant "
        << c->variant << ", leased by " << c->session_path << " in " << fixed(c->ms, 1) << " ms\n";
  }
  for (const auto& t : r.inputs) {
    out << "  input  " << t.name << " " << t.type << shape_text(t.shape) << " <- " << t.source
        << "\n";
  }
  for (const auto& t : r.outputs) {
    out << "  output " << t.name << " " << t.type << shape_text(t.shape) << "\n";
  }
  if (r.broker) {
    out << "broker: session " << r.session_path << " in " << fixed(r.broker_ms, 1) << " ms\n";
    for (const auto& p : r.registered) {
      std::string eps;
      for (const auto& e : p.ep_names) eps += (eps.empty() ? "" : ", ") + e;
      out << "  registered " << p.name << " " << p.version << " (" << eps << ")"
          << (p.already ? " [already registered]" : "") << ": " << p.library_path << "\n";
    }
    for (const auto& s : r.skipped) {
      out << "  not registered " << s.name << " [" << epbroker::to_string(s.code)
          << "]: " << s.reason << "\n";
    }
  } else {
    out << "broker: not used (ONNX Runtime's own EPs only)\n";
  }
  out << "selection: " << r.selection << "; session created in " << fixed(r.session_ms, 1)
      << " ms\n";
  out << "graph assignment (" << r.assignment_source << "):\n";
  for (const auto& p : r.parts) {
    std::string ops;
    for (const auto& [op, n] : p.ops)
      ops += (ops.empty() ? "" : ", ") + op + (n > 1 ? " x" + std::to_string(n) : "");
    out << "  " << p.ep << ": " << p.nodes << " node" << (p.nodes == 1 ? "" : "s") << " in "
        << p.subgraphs << " subgraph" << (p.subgraphs == 1 ? "" : "s") << " (" << ops << ")\n";
    for (const auto& d : p.devices) out << "      on " << device_text(d) << "\n";
    if (!p.devices_note.empty()) out << "      (" << p.devices_note << ")\n";
  }
  out << "latency: first run " << ms(r.latency.first_ms) << "; " << latency_text(r.latency, r.batch)
      << "\n";
  if (r.check) {
    const auto& c = *r.check;
    out << "check vs CPUExecutionProvider: max abs diff " << sci(c.diff.max_abs)
        << ", max rel diff " << sci(c.diff.max_rel) << " (atol " << sci(c.atol) << ", rtol "
        << sci(c.rtol) << "): " << (c.diff.within ? "within tolerance" : "OUTSIDE TOLERANCE")
        << (c.diff.note.empty() ? "" : " [" + c.diff.note + "]") << "\n";
    out << "  CPU EP alone: " << latency_text(c.cpu, r.batch);
    if (c.cpu.p50_ms > 0 && r.latency.p50_ms > 0) {
      out << "; selected/CPU p50 " << fixed(r.latency.p50_ms / c.cpu.p50_ms, 2) << "x";
    }
    out << "\n";
  }
  for (std::size_t i = 0; i < r.top_items.size(); ++i) {
    out << "top-" << r.top_items[i].size() << " of " << r.top_output << "[" << i << "]"
        << (r.softmax ? " (softmax applied)" : "") << ":";
    // One line per item: the labels, best first.
    for (const auto& s : r.top_items[i]) out << "  " << s.label << " " << fixed(s.score, 3);
    out << "\n";
  }
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["model"] = r.model;
  if (const auto& c = r.catalog_model) {
    j["catalog_model"] = {{"name", c->name},
                          {"version", c->version},
                          {"variant", c->variant},
                          {"session", c->session_path},
                          {"ms", c->ms}};
  }
  j["ort_version"] = r.ort_version;
  j["selection"] = r.selection;
  nlohmann::json broker = {{"used", r.broker}};
  if (r.broker) {
    broker["session"] = r.session_path;
    broker["ms"] = r.broker_ms;
    broker["registered"] = nlohmann::json::array();
    for (const auto& p : r.registered) {
      broker["registered"].push_back({{"name", p.name},
                                      {"version", p.version},
                                      {"ep_names", p.ep_names},
                                      {"library_path", p.library_path},
                                      {"already", p.already}});
    }
    broker["skipped"] = nlohmann::json::array();
    for (const auto& s : r.skipped) {
      broker["skipped"].push_back(
          {{"name", s.name}, {"code", epbroker::to_string(s.code)}, {"reason", s.reason}});
    }
  }
  j["broker"] = broker;
  j["session_ms"] = r.session_ms;
  j["assignment_source"] = r.assignment_source;
  j["assignment"] = nlohmann::json::array();
  for (const auto& p : r.parts) {
    nlohmann::json part = {
        {"ep", p.ep},   {"subgraphs", p.subgraphs},           {"nodes", p.nodes},
        {"ops", p.ops}, {"devices", nlohmann::json::array()}, {"devices_note", p.devices_note}};
    for (const auto& d : p.devices) part["devices"].push_back(device_json(d));
    j["assignment"].push_back(std::move(part));
  }
  auto tensors = [](const std::vector<TensorSummary>& ts, bool with_source) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& t : ts) {
      nlohmann::json x = {{"name", t.name}, {"type", t.type}, {"shape", t.shape}};
      if (with_source) x["source"] = t.source;
      a.push_back(std::move(x));
    }
    return a;
  };
  j["inputs"] = tensors(r.inputs, true);
  j["outputs"] = tensors(r.outputs, false);
  j["batch"] = r.batch;
  j["latency"] = latency_json(r.latency);
  if (r.check) {
    j["check"] = {{"max_abs", r.check->diff.max_abs},
                  {"max_rel", r.check->diff.max_rel},
                  {"atol", r.check->atol},
                  {"rtol", r.check->rtol},
                  {"within_tolerance", r.check->diff.within},
                  {"note", r.check->diff.note},
                  {"cpu_latency", latency_json(r.check->cpu)}};
  } else {
    j["check"] = nullptr;
  }
  if (!r.top.empty()) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& s : r.top)
      top.push_back({{"index", s.index}, {"label", s.label}, {"score", s.score}});
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : r.top_items) {
      nlohmann::json one = nlohmann::json::array();
      for (const auto& s : item)
        one.push_back({{"index", s.index}, {"label", s.label}, {"score", s.score}});
      items.push_back(std::move(one));
    }
    j["top"] = {{"output", r.top_output},
                {"softmax_applied", r.softmax},
                {"labels", top},
                {"items", std::move(items)}};
  } else {
    j["top"] = nullptr;
  }
  return j;
}

}  // namespace epbroker_run
