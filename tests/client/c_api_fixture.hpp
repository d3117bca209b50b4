// What the C API's tests on the private bus share: owning pointers for the C handles,
// the thread's last error as one line, and a client fixture that connects and finds a
// provider's row.
#pragma once

#include <memory>
#include <string>

#include "epbroker/epbroker.h"
#include "tests/client/client_fixture.hpp"

namespace tests::client::capi {

// A deleter calling one of the C API's _free functions.
template <auto Free>
struct Freer {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using ClientPtr = std::unique_ptr<epbroker_client, Freer<epbroker_client_free>>;
using ProviderPtr = std::unique_ptr<epbroker_provider, Freer<epbroker_provider_free>>;
using ProvidersPtr = std::unique_ptr<epbroker_provider_list, Freer<epbroker_provider_list_free>>;
using SessionPtr = std::unique_ptr<epbroker_session, Freer<epbroker_session_free>>;
using OptionsPtr = std::unique_ptr<epbroker_session_options, Freer<epbroker_session_options_free>>;
using StatusPtr = std::unique_ptr<epbroker_daemon_status, Freer<epbroker_daemon_status_free>>;
using UpdatesPtr = std::unique_ptr<epbroker_update_list, Freer<epbroker_update_list_free>>;

// "BUS_NAME: message" of the thread's last failing call.
inline std::string last_error() {
  return std::string(epbroker_last_error_bus_name()) + ": " + epbroker_last_error_message();
}

class CApiClientTest : public ClientTest {
 protected:
  // A C client of this test's bus (a failed test when it cannot connect).
  ClientPtr connect() {
    epbroker_client* c = nullptr;
    EXPECT_EQ(epbroker_client_new(address().c_str(), &c), EPBROKER_OK) << last_error();
    return ClientPtr(c);
  }

  // Provider `name` as epbroker_providers lists it now (the list stays alive in `keep`).
  const epbroker_provider* row(epbroker_client* c, const std::string& name, ProvidersPtr& keep) {
    epbroker_provider_list* list = nullptr;
    EXPECT_EQ(epbroker_providers(c, &list), EPBROKER_OK) << last_error();
    keep.reset(list);
    for (size_t i = 0; i < epbroker_provider_list_size(list); ++i) {
      const auto* p = epbroker_provider_list_get(list, i);
      if (epbroker_provider_name(p) == name) return p;
    }
    ADD_FAILURE() << "no provider " << name;
    return nullptr;
  }
};

}  // namespace tests::client::capi
