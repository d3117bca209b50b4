// list-providers [BUS_ADDRESS]: what epbrokerd offers this machine, as an
// application sees it through libepbroker. Without BUS_ADDRESS it talks to the
// system bus (or $EPBROKER_BUS_ADDRESS).
#include <epbroker/client.hpp>
#include <epbroker/version.hpp>

#include <iostream>

int main(int argc, char** argv) {
  epbroker::ClientOptions options;
  if (argc > 1) options.bus_address = argv[1];
  try {
    epbroker::Client client(options);
    const auto status = client.status();
    std::cout << "libepbroker " << EPBROKER_VERSION_STRING << ", epbrokerd " << status.version
              << ", catalog revision " << status.catalog_revision << "\n";
    for (const auto& d : client.devices()) {
      std::cout << "device " << d.id << " " << d.type << " " << d.name << "\n";
    }
    for (const auto& p : client.providers()) {
      std::cout << "provider " << p.name << " " << p.version << " " << epbroker::to_string(p.state);
      if (!p.reason.empty()) std::cout << " (" << p.reason << ")";
      std::cout << "\n";
    }
    return 0;
  } catch (const epbroker::Error& e) {
    std::cerr << "list-providers: " << e.what() << " [" << epbroker::errc_name(e.code()) << "]\n";
    return 1;
  }
}
