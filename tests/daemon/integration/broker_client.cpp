#include "tests/daemon/integration/broker_client.hpp"

#include <gtest/gtest.h>

namespace tests::daemon {

BrokerProxy::BrokerProxy(sdbus::IConnection& conn)
    : ProxyInterfaces(conn, kBrokerName, kBrokerPath) {
  registerProxy();
}

BrokerProxy::~BrokerProxy() { unregisterProxy(); }

JobLog::JobLog(sdbus::IConnection& conn) {
  const std::string rule = std::string("type='signal',sender='") + kBrokerName +
                           "',path_namespace='" + kBrokerPath + "/job'";
  slot_ = conn.addMatch(rule, [this](sdbus::Message& msg) {
    JobEvent ev;
    ev.path = msg.getPath();
    ev.member = msg.getMemberName();
    if (ev.member == "PropertiesChanged") {
      std::string iface;
      std::map<std::string, sdbus::Variant> changed;
      msg >> iface >> changed;
      if (iface != kJobInterface) return;
      if (auto it = changed.find("State"); it != changed.end()) {
        ev.state = it->second.get<std::string>();
      }
      if (auto it = changed.find("BytesDone"); it != changed.end()) {
        ev.bytes_done = it->second.get<std::uint64_t>();
      }
      if (auto it = changed.find("BytesTotal"); it != changed.end()) {
        ev.bytes_total = it->second.get<std::uint64_t>();
      }
    } else if (ev.member == "Finished") {
      std::string state;
      std::string message;
      msg >> state >> ev.error >> message;
      ev.state = state;
    } else {
      return;
    }
    std::lock_guard lock(mu_);
    events_.push_back(std::move(ev));
  });
}

std::vector<JobEvent> JobLog::events(const std::string& path) const {
  std::lock_guard lock(mu_);
  std::vector<JobEvent> out;
  for (const auto& e : events_) {
    if (e.path == path) out.push_back(e);
  }
  return out;
}

std::optional<JobEvent> JobLog::finished(const std::string& path) const {
  std::lock_guard lock(mu_);
  for (const auto& e : events_) {
    if (e.path == path && e.member == "Finished") return e;
  }
  return std::nullopt;
}

sdbus::Variant job_property(sdbus::IConnection& conn, const std::string& path,
                            const std::string& name) {
  auto proxy = sdbus::createProxy(conn, kBrokerName, path);
  return proxy->getProperty(name).onInterface(kJobInterface);
}

std::string wait_job(sdbus::IConnection& conn, const std::string& path, const JobLog* log,
                     std::chrono::milliseconds timeout) {
  std::string state;
  wait_until(
      [&] {
        if (log) {
          if (auto f = log->finished(path)) {
            state = *f->state;
            return true;
          }
        }
        state = job_property(conn, path, "State").get<std::string>();
        return state == "done" || state == "failed" || state == "cancelled";
      },
      timeout);
  if (state != "done" && state != "failed" && state != "cancelled") {
    ADD_FAILURE() << "job " << path << " not finished within " << timeout.count() << " ms (state "
                  << state << ")";
    return "";
  }
  return state;
}

namespace {

template <typename T>
T get(const Dict& d, const std::string& key, const char* type) {
  auto it = d.find(key);
  if (it == d.end()) {
    ADD_FAILURE() << "no key '" << key << "'";
    return T{};
  }
  if (it->second.peekValueType() != type) {
    ADD_FAILURE() << "key '" << key << "' has type " << it->second.peekValueType() << ", not "
                  << type;
    return T{};
  }
  return it->second.get<T>();
}

}  // namespace

std::string str(const Dict& d, const std::string& key) { return get<std::string>(d, key, "s"); }

std::vector<std::string> strs(const Dict& d, const std::string& key) {
  return get<std::vector<std::string>>(d, key, "as");
}

std::uint64_t u64(const Dict& d, const std::string& key) { return get<std::uint64_t>(d, key, "t"); }

std::optional<Dict> find_named(const Dicts& list, const std::string& name) {
  for (const auto& d : list) {
    auto it = d.find("name");
    if (it != d.end() && it->second.peekValueType() == "s" &&
        it->second.get<std::string>() == name) {
      return d;
    }
  }
  return std::nullopt;
}

std::optional<std::uint32_t> leases_of(const Dict& row, const std::string& version) {
  const auto it = row.find("versions");
  if (it == row.end()) return std::nullopt;
  for (const auto& v : it->second.get<Dicts>()) {
    if (str(v, "version") == version) return v.at("leases").get<std::uint32_t>();
  }
  return std::nullopt;
}

std::string role_of(const Dict& row, const std::string& version) {
  const auto it = row.find("versions");
  if (it == row.end()) return "";
  for (const auto& v : it->second.get<Dicts>()) {
    if (str(v, "version") == version) return str(v, "role");
  }
  return "";
}

}  // namespace tests::daemon
