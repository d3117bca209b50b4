// The Session1 object (dbus/org.epbroker.Session1.xml): one per open session, at
// session_path(id), registered by Service::publish_session() after RequestSession
// answered, and destroyed by Service::reap() once the session ended.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>

#include "generated/dbus/Session1_adaptor.h"

namespace epbrokerd::dbus {

class Service;

class SessionObject final : public sdbus::AdaptorInterfaces<org::epbroker::Session1_adaptor,
                                                            sdbus::ManagedObject_adaptor> {
 public:
  SessionObject(sdbus::IConnection& conn, Service& service, std::uint64_t id);
  ~SessionObject();

 private:
  void Release() override;

  Service& service_;
  std::uint64_t id_;
};

}  // namespace epbrokerd::dbus
