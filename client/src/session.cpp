#include <utility>

#include "client/src/connection.hpp"
#include "epbroker/client.hpp"
#include "generated/dbus/Session1_proxy.h"

namespace epbroker {
namespace {

// The generated Session1 proxy (no signals, so no registration).
class SessionProxy final : public sdbus::ProxyInterfaces<org::epbroker::Session1_proxy> {
 public:
  SessionProxy(sdbus::IConnection& bus, const std::string& path)
      : ProxyInterfaces(bus, detail::kBusName, path) {}
  ~SessionProxy() { unregisterProxy(); }
};

}  // namespace

Session::Session() noexcept = default;

Session::Session(std::shared_ptr<detail::Connection> conn, std::string path,
                 std::vector<Provider> providers)
    : conn_(std::move(conn)), path_(std::move(path)), providers_(std::move(providers)) {}

Session::~Session() {
  try {
    release();
  } catch (...) {
    // The daemon ends the session anyway when this connection closes.
  }
}

Session::Session(Session&& other) noexcept
    : conn_(std::move(other.conn_)),
      path_(std::exchange(other.path_, {})),
      providers_(std::move(other.providers_)) {}

Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    try {
      release();
    } catch (...) {
    }
    conn_ = std::move(other.conn_);
    path_ = std::exchange(other.path_, {});
    providers_ = std::move(other.providers_);
  }
  return *this;
}

std::vector<Provider> Session::ready_providers() const {
  std::vector<Provider> out;
  for (const auto& p : providers_) {
    if (p.state == ProviderState::ready) out.push_back(p);
  }
  return out;
}

void Session::release() {
  if (path_.empty() || !conn_) return;
  const std::string path = std::exchange(path_, {});
  auto conn = std::move(conn_);  // the connection closes with the last holder
  providers_.clear();
  detail::checked([&] { SessionProxy(*conn->bus, path).Release(); });
}

}  // namespace epbroker
