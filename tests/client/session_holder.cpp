// A libepbroker client run as a child process by client_integration, to be killed:
//
//   client_session_holder ADDRESS NAME...   Client(ADDRESS).request_session({NAME...});
//                                           prints "session PATH", one
//                                           "provider NAME STATE" per provider, then
//                                           "holding", and keeps the Session until killed
//
// Errors print "error CODE: MESSAGE" and exit 1; usage errors exit 2.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: client_session_holder ADDRESS NAME...\n";
    return 2;
  }
  try {
    epbroker::Client client(epbroker::ClientOptions{argv[1]});
    epbroker::SessionOptions options;
    options.providers.assign(argv + 2, argv + argc);
    epbroker::Session session = client.request_session(options);
    std::cout << "session " << session.path() << "\n";
    for (const auto& p : session.providers()) {
      std::cout << "provider " << p.name << " " << epbroker::to_string(p.state) << "\n";
    }
    std::cout << "holding" << std::endl;
    while (true) pause();  // until killed
  } catch (const epbroker::Error& e) {
    std::cout << "error " << epbroker::errc_name(e.code()) << ": " << e.message() << std::endl;
    return 1;
  }
}
