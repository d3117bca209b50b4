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
  std::vector<std::map<std::string, sdbus::Variant>> ListDevices() override;
  std::vector<std::map<std::string, sdbus::Variant>> ListProviders() override;
  sdbus::ObjectPath EnsureProvider(const std::string& name) override;
  sdbus::ObjectPath InstallProvider(const std::string& name,
                                    const std::map<std::string, sdbus::Variant>& options) override;
  std::vector<std::map<std::string, sdbus::Variant>> Update(
      const std::vector<std::string>& names,
      const std::map<std::string, sdbus::Variant>& options) override;
  void Hold(const std::string& name) override;
  void Unhold(const std::string& name) override;
  std::tuple<std::string, std::string> Rollback(const std::string& name) override;
  std::vector<std::map<std::string, sdbus::Variant>> History(const std::string& name) override;
  std::vector<std::map<std::string, sdbus::Variant>> CollectGarbage() override;
  void RemoveProvider(const std::string& name) override;
  void RemoveProviderNow(const std::string& name) override;
  void ResetRemote(const std::string& name) override;
  sdbus::ObjectPath RefreshCatalog() override;
  std::vector<std::map<std::string, sdbus::Variant>> Verify() override;
  // Answers first, then registers the session object (see the XML).
  void RequestSession(
      sdbus::Result<sdbus::ObjectPath, std::vector<std::map<std::string, sdbus::Variant>>>&& result,
      std::map<std::string, sdbus::Variant> options) override;
  std::string Version() override;
  std::string DaemonState() override;
  uint64_t CatalogRevision() override;
  std::string CatalogExpires() override;

  Service& service_;
};

}  // namespace epbrokerd::dbus
