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

// A model RequestSession granted (a dict of kind "model" in its reply).
struct GrantedModel {
  std::string name;
  std::string version;
  std::string variant;
  std::string state;               // ready | available | installing | incompatible | refused
  std::string path;                // the variant's directory; ready only
  std::string main;                // its main file, absolute; ready only
  std::vector<std::string> files;  // relative to path; ready only
  std::vector<std::string> devices;
  std::vector<std::string> eps;
  std::string job;     // installing only
  std::string reason;  // not ready only
};

// RequestSession's reply: the providers, and apart from them the models (kind
// "model"), each in the daemon's order.
struct SessionGrants {
  std::vector<Provider> providers;
  std::vector<GrantedModel> models;
};
// Reads the aa{sv} of RequestSession's reply at `m`'s read position: providers
// straight into Providers by the same rules as to_provider(), without an
// sdbus::Variant per value (each is a message of its own: decoding through them
// cost more than the call's round trip); a dict whose kind is "model" into
// models instead, so that Session::providers() never holds a model.
SessionGrants read_session_grants(sdbus::Message& m);

// Broker1.ListModels' dictionaries (and their variants), RemoveModel's, by the
// same rules.
ModelInfo to_model_info(const Dict& d);
ModelVariantInfo to_model_variant(const Dict& d);
RemovedModel to_removed_model(const Dict& d);
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
// The a{sv} ListModels takes.
Dict to_list_models_options(Policy policy, const std::string& ort_version);
// The a{sv} EnsureModel takes: variant and version when given, policy,
// ort_version when given.
Dict to_ensure_model_options(const ModelOptions& options);
// The a{sv} RequestSession takes to lease model `name`'s variant (options.variant,
// "" = the planned one) and no provider.
Dict to_model_session_options(const std::string& name, const ModelOptions& options);
// The a{sv} RemoveModel takes: version and variant when given, now when set.
Dict to_remove_model_options(const std::string& version, const std::string& variant, bool now);

}  // namespace epbroker::detail
