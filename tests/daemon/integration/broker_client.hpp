// Test-side clients of epbrokerd: the generated Broker1 proxy with its signals
// counted, a recorder of every Job1 signal (subscribed before a job exists, so no
// PropertiesChanged is missed), and small readers for the a{sv} dictionaries.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "generated/dbus/Broker1_proxy.h"
#include "tests/daemon/integration/private_bus.hpp"

namespace tests::daemon {

using Dict = std::map<std::string, sdbus::Variant>;
using Dicts = std::vector<Dict>;

class BrokerProxy final
    : public sdbus::ProxyInterfaces<org::epbroker::Broker1_proxy, sdbus::Properties_proxy> {
 public:
  explicit BrokerProxy(sdbus::IConnection& conn);
  ~BrokerProxy();

  std::atomic<int> providers_changed{0};
  std::atomic<int> catalog_changed{0};
  std::atomic<std::uint64_t> last_revision{0};

 private:
  void onProvidersChanged() override { ++providers_changed; }
  void onCatalogChanged(const uint64_t& revision) override {
    last_revision = revision;
    ++catalog_changed;
  }
  void onPropertiesChanged(const std::string&, const std::map<std::string, sdbus::Variant>&,
                           const std::vector<std::string>&) override {}
};

// One Job1 signal as received.
struct JobEvent {
  std::string path;
  std::string member;  // "PropertiesChanged" or "Finished"
  std::optional<std::string> state;
  std::optional<std::uint64_t> bytes_done;
  std::optional<std::uint64_t> bytes_total;
  std::string error;  // Finished only
};

// Records PropertiesChanged and Finished of every object under
// /org/epbroker/Broker1/job from construction on.
class JobLog {
 public:
  explicit JobLog(sdbus::IConnection& conn);
  std::vector<JobEvent> events(const std::string& path) const;
  std::optional<JobEvent> finished(const std::string& path) const;

 private:
  mutable std::mutex mu_;
  std::vector<JobEvent> events_;
  sdbus::Slot slot_;
};

// A job's property (interface org.epbroker.Job1) read now.
sdbus::Variant job_property(sdbus::IConnection& conn, const std::string& path,
                            const std::string& name);

// Waits until job `path` is final (done|failed|cancelled), by its Finished signal when
// `log` saw it, else by polling State; returns the final state ("" on timeout).
std::string wait_job(sdbus::IConnection& conn, const std::string& path, const JobLog* log = nullptr,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Readers of a{sv} entries; a missing key or another type fails the calling test.
std::string str(const Dict& d, const std::string& key);
std::vector<std::string> strs(const Dict& d, const std::string& key);
std::uint64_t u64(const Dict& d, const std::string& key);
// The dict whose "name" is `name`, if any.
std::optional<Dict> find_named(const Dicts& list, const std::string& name);
// How many sessions lease `version`, as a ListProviders row's versions[] says;
// nullopt when the row lists no such version (not installed: its files are gone).
std::optional<std::uint32_t> leases_of(const Dict& row, const std::string& version);
// The role of `version` in a ListProviders row's versions[] ("" when not listed).
std::string role_of(const Dict& row, const std::string& version);

}  // namespace tests::daemon
