#include "tests/client/client_fixture.hpp"

namespace tests::client {

std::string epbrokerctl_path() { return EPBROKER_EPBROKERCTL_PATH; }
std::string session_holder_path() { return EPBROKER_SESSION_HOLDER_PATH; }

}  // namespace tests::client
