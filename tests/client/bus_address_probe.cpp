// client_bus_address_probe: which bus libepbroker picks when the application names
// none (ClientOptions{}), for secure_env_test, which runs copies of it as an
// unprivileged user with and without a file capability. Prints
//
//   secure 0|1             getauxval(AT_SECURE): whether the kernel ran it as
//                          privileged (setuid, setgid, file capabilities)
//   bus ADDRESS            connected; Client::bus_address() ("" = system bus)
//   unavailable MESSAGE    could not connect; the message names what it tried
//                          ("cannot connect to ADDRESS: ..." or "... the system bus: ...")
//
// and exits 0 either way (1 on any other error).
#include <sys/auxv.h>

#include <cstdlib>
#include <exception>
#include <iostream>

#include "epbroker/client.hpp"

namespace {

int probe() {
  std::cout << "secure " << ::getauxval(AT_SECURE) << "\n";
  try {
    epbroker::Client client;
    std::cout << "bus " << client.bus_address() << "\n";
    return 0;
  } catch (const epbroker::Error& e) {
    std::cout << "unavailable " << e.what() << "\n";
    return e.code() == epbroker::Errc::unavailable ? 0 : 1;
  } catch (const std::exception& e) {
    std::cout << "error " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main() {
  const int code = probe();
  std::cout.flush();
  // No exit-time handlers: in a sanitizer build LeakSanitizer's exit check
  // cannot attach to a privileged (non-dumpable) process and would fail it.
  std::_Exit(code);
}
