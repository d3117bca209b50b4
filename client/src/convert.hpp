// libepbroker internals: the daemon's a{sv} dictionaries to the public structs.
// Unknown keys are ignored and missing ones keep their defaults (a newer or older
// daemon); a known key of another type is Error(protocol) naming the key.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <map>
#include <string>
#include <vector>

#include "epbroker/client.hpp"

namespace epbroker::detail {

using Dict = std::map<std::string, sdbus::Variant>;

Device to_device(const Dict& d);
Provider to_provider(const Dict& d);
// Reads an aa{sv} of providers at `m`'s read position straight into Providers, by
// the same rules as to_provider(), without an sdbus::Variant per value (each is a
// message of its own: decoding through them cost more than the call's round trip).
std::vector<Provider> read_providers(sdbus::Message& m);
VerifyResult to_verify_result(const Dict& d);
// The lifecycle's dictionaries (ListProviders' versions, Update, History,
// CollectGarbage), by the same rules.
VersionInfo to_version_info(const Dict& d);
UpdateChange to_update_change(const Dict& d);
HistoryEntry to_history_entry(const Dict& d);
RemovedVersion to_removed_version(const Dict& d);

ProviderState parse_provider_state(const std::string& s);
JobState parse_job_state(const std::string& s);

// The a{sv} RequestSession takes.
Dict to_options(const SessionOptions& options);
// The a{sv} InstallProvider takes: only what differs from the daemon's defaults.
Dict to_install_options(const InstallOptions& options);
// The a{sv} Update takes.
Dict to_update_options(bool dry_run);

}  // namespace epbroker::detail
