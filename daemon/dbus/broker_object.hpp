// The Broker1 object (dbus/org.epbroker.Broker1.xml) at kObjectPath, with the
// ObjectManager for the job and session objects below it. Registered by
// Service::attach(), which also emits its signals (service.hpp).
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "generated/dbus/Broker1_adaptor.h"

namespace epbrokerd::dbus {

class Service;

class BrokerObject final
    : public sdbus::AdaptorInterfaces<org::epbroker::Broker1_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ObjectManager_adaptor> {
 public:
  BrokerObject(sdbus::IConnection& conn, Service& service);
  ~BrokerObject();

 private:
  using Dicts = std::vector<std::map<std::string, sdbus::Variant>>;
  using Options = std::map<std::string, sdbus::Variant>;
  // Methods that may need polkit are answered asynchronously (authorized_call.hpp).
  Dicts ListDevices() override;
  Dicts ListProviders() override;
  void EnsureProvider(sdbus::Result<sdbus::ObjectPath>&& result, std::string name) override;
  Dicts ListModels(const Options& options) override;
  void EnsureModel(sdbus::Result<sdbus::ObjectPath>&& result, std::string name,
                   Options options) override;
  void InstallProvider(sdbus::Result<sdbus::ObjectPath>&& result, std::string name,
                       Options options) override;
  void Update(sdbus::Result<Dicts>&& result, std::vector<std::string> names,
              Options options) override;
  void Hold(sdbus::Result<>&& result, std::string name) override;
  void Unhold(sdbus::Result<>&& result, std::string name) override;
  void Rollback(sdbus::Result<std::string, std::string>&& result, std::string name) override;
  Dicts History(const std::string& name) override;
  void CollectGarbage(sdbus::Result<Dicts>&& result) override;
  void RemoveModel(sdbus::Result<Dicts>&& result, std::string name, Options options) override;
  void RemoveProvider(sdbus::Result<>&& result, std::string name) override;
  void RemoveProviderNow(sdbus::Result<>&& result, std::string name) override;
  void ResetRemote(sdbus::Result<>&& result, std::string name) override;
  void RefreshCatalog(sdbus::Result<sdbus::ObjectPath>&& result) override;
  // Verification as a job (see the XML): StartVerify returns it, VerifyResults
  // reads what it found, Verify answers with that when it ends.
  void StartVerify(sdbus::Result<sdbus::ObjectPath>&& result) override;
  std::tuple<uint64_t, Dicts> VerifyResults(const sdbus::ObjectPath& job) override;
  void Verify(sdbus::Result<Dicts>&& result) override;
  // Answers first, then registers the session object (see the XML).
  void RequestSession(sdbus::Result<sdbus::ObjectPath, Dicts>&& result, Options options) override;
  std::string Version() override;
  std::string DaemonState() override;
  uint64_t CatalogRevision() override;
  std::string CatalogExpires() override;

  Service& service_;
};

}  // namespace epbrokerd::dbus
