// Loopback ports for network tests.
#pragma once

#include <cstdint>

namespace tests::support {

// A loopback TCP port nobody listens on (bound to an ephemeral port, then
// closed): a connection to it is refused. Throws std::runtime_error if the
// socket calls fail.
std::uint16_t closed_port();

}  // namespace tests::support
