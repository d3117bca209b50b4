// The D-Bus layer: one thin adaptor per interface (generated from dbus/*.xml),
// each method converting arguments, calling the broker core with a
// RequestContext built from the message's credentials, converting the result,
// and mapping errors through common/bus_errors. Nothing here decides policy.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/core/broker.hpp"
#include "generated/dbus/Broker1_adaptor.h"
#include "generated/dbus/Job1_adaptor.h"
#include "generated/dbus/Session1_adaptor.h"

namespace epbrokerd::dbus {

class Service;

class JobObject final
    : public sdbus::AdaptorInterfaces<org::epbroker::Job1_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ManagedObject_adaptor> {
 public:
  JobObject(sdbus::IConnection& conn, core::Broker& broker, std::uint64_t id);
  ~JobObject();
  void changed(const core::JobSnapshot& snap);

 private:
  void Cancel() override;
  std::string Kind() override;
  std::string Target() override;
  std::string State() override;
  uint64_t BytesDone() override;
  uint64_t BytesTotal() override;
  std::string Error() override;
  std::string ErrorMessage() override;
  core::JobSnapshot snap();

  core::Broker& broker_;
  std::uint64_t id_;
  std::atomic<bool> finished_{false};
};

class SessionObject final
    : public sdbus::AdaptorInterfaces<org::epbroker::Session1_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ManagedObject_adaptor> {
 public:
  SessionObject(sdbus::IConnection& conn, Service& service, std::uint64_t id);
  ~SessionObject();

 private:
  void Release() override;
  std::string Owner() override;

  Service& service_;
  std::uint64_t id_;
};

class BrokerObject final
    : public sdbus::AdaptorInterfaces<org::epbroker::Broker1_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ObjectManager_adaptor> {
 public:
  BrokerObject(sdbus::IConnection& conn, Service& service);
  ~BrokerObject();

 private:
  std::vector<std::map<std::string, sdbus::Variant>> ListDevices() override;
  std::vector<std::map<std::string, sdbus::Variant>> ListProviders() override;
  sdbus::ObjectPath EnsureProvider(const std::string& name) override;
  void RemoveProvider(const std::string& name) override;
  sdbus::ObjectPath RefreshCatalog() override;
  std::vector<std::map<std::string, sdbus::Variant>> Verify() override;
  std::tuple<sdbus::ObjectPath, std::vector<std::map<std::string, sdbus::Variant>>> RequestSession(
      const std::map<std::string, sdbus::Variant>& options) override;
  std::string Version() override;
  std::string DaemonState() override;
  uint64_t CatalogRevision() override;
  std::string CatalogExpires() override;

  Service& service_;
};

// Owns the bus objects and forwards broker events to them.
class Service final : public core::BrokerListener {
 public:
  explicit Service(sdbus::IConnection& conn);
  ~Service() override;
  // Registers /org/epbroker/Broker1 and the NameOwnerChanged watch.
  void attach(core::Broker& broker);

  core::Broker& broker() { return *broker_; }
  sdbus::IConnection& connection() { return conn_; }
  // Caller of the message being processed on `object` (bus credentials).
  static core::RequestContext context_of(sdbus::IObject& object);

  sdbus::ObjectPath publish_job(std::uint64_t id);
  sdbus::ObjectPath publish_session(std::uint64_t id);
  // Objects cannot be destroyed inside their own callbacks: queued, then reaped.
  void retire_session(std::uint64_t id);
  void reap();
  // Called (from any thread) when something the main loop watches changed: a
  // session retired, a job finished. main.cpp wakes its loop with it.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }
  void set_stopping() { stopping_ = true; }
  bool stopping() const { return stopping_; }

  void job_changed(const core::JobSnapshot& job) override;
  void providers_changed() override;
  void catalog_changed(std::uint64_t revision) override;

 private:
  sdbus::IConnection& conn_;
  core::Broker* broker_ = nullptr;
  std::unique_ptr<BrokerObject> root_;
  std::unique_ptr<sdbus::IProxy> bus_proxy_;
  // Lock order: sdbus-c++ holds its connection mutex while it dispatches a call (so
  // every adaptor method runs under it) and takes it for every emit, register and
  // unregister. So mu_ only guards these maps and is never held while calling into
  // sdbus-c++: objects are created before they are inserted, destroyed after they are
  // taken out, and signalled through a shared_ptr copy.
  std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<JobObject>> jobs_;
  std::map<std::uint64_t, std::unique_ptr<SessionObject>> sessions_;
  std::vector<std::uint64_t> retired_sessions_;
  std::function<void()> wake_;
  std::atomic<bool> stopping_{false};
};

}  // namespace epbrokerd::dbus
