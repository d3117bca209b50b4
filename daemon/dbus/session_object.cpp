#include "daemon/dbus/session_object.hpp"

#include "daemon/dbus/convert.hpp"
#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

SessionObject::SessionObject(sdbus::IConnection& conn, Service& service, std::uint64_t id)
    : AdaptorInterfaces(conn, session_path(id)), service_(service), id_(id) {
  registerAdaptor();
  emitInterfacesAddedSignal({org::epbroker::Session1_adaptor::INTERFACE_NAME});
}

SessionObject::~SessionObject() {
  emitInterfacesRemovedSignal({org::epbroker::Session1_adaptor::INTERFACE_NAME});
  unregisterAdaptor();
}

void SessionObject::Release() {
  guarded([&] {
    const auto call = service_.enter_call(getObject(), "Session1.Release", false);
    const auto ctx = Service::context_of(getObject());
    value_or_throw(service_.broker().release_session(ctx, id_));
    log::debug("session {}: released by {}", id_, ctx.sender);
    service_.retire_session(id_);
  });
}

}  // namespace epbrokerd::dbus
