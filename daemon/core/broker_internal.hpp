// Helpers the broker's files share (broker.cpp, broker_catalog.cpp,
// broker_install.cpp, broker_sessions.cpp); not part of the core's API.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/compat.hpp"
#include "catalog/error.hpp"
#include "catalog/tuf/updater.hpp"
#include "catalog/version.hpp"
#include "daemon/config/config.hpp"
#include "daemon/core/broker.hpp"
#include "daemon/core/job.hpp"
#include "daemon/core/variant_plan.hpp"
#include "daemon/hardware/discovery.hpp"

namespace epbrokerd::core::detail {

// The short name of an error as history's "result" says it ("NotFound").
std::string result_name(const Error& e);

// Package names as the catalog allows them; checked before any lookup.
bool valid_name(const std::string& name);

// Model variant ids as model metadata allows them ([a-z0-9][a-z0-9._-]{0,31}).
bool valid_variant_id(const std::string& id);

// The providers as plan_variant() sees them (ProviderView -> ProviderOffer); a
// view whose ort_min does not parse offers none (it is not usable).
std::vector<ProviderOffer> offers_of(const std::vector<ProviderView>& views);

// A session's lease name for a model variant ("model:NAME/VERSION/VARIANT", as
// SessionInfo::leases and <state>/leases.json keep it; a package's is
// "NAME/VERSION"), and back (nullopt for a package's or a malformed one).
struct ModelLeaseName {
  std::string name;
  std::string version;
  std::string variant;
};
std::string model_lease_name(const std::string& name, const std::string& version,
                             const std::string& variant);
std::optional<ModelLeaseName> parse_model_lease_name(const std::string& text);

// A version above every real ONNX Runtime: compatibility without the app's ORT.
catalog::Version any_ort();

// Compatibility matching's view of the machine: the devices, and where packages'
// "requires" are looked up.
catalog::MachineInfo machine_info(const std::vector<hardware::Device>& devices,
                                  const hardware::Roots& roots);

// Keeps, for each package name, only the entries of the first remote (in
// `entries`' order: remote priority) that lists it: a name belongs to the
// highest-priority remote offering it, so a lower one cannot take it over with
// a higher version or shadow it with an incompatible one.
std::vector<CatalogEntry> drop_shadowed(std::vector<CatalogEntry> entries);

// A catalog entry as state/remotes/<name>/catalog.json keeps it.
nlohmann::json entry_json(const CatalogEntry& e);

// A target of a remote's listing read as a model card: nullopt when its
// custom["epbroker"] is not model metadata (absent, an EP or runtime package,
// or invalid). Else the entry, refused (ModelEntry::refused) when its path does
// not bind its name, or when check_model_targets() against `signed_targets`
// (the listing's targets) fails. Logs nothing.
std::optional<ModelEntry> model_entry(const std::string& remote,
                                      const catalog::tuf::TargetFile& target,
                                      const catalog::ModelTargetLookup& signed_targets);

// check_model_targets()' lookup over a listing's targets (which must outlive it).
catalog::ModelTargetLookup listing_lookup(const std::vector<catalog::tuf::TargetFile>& targets);

// catalog::tuf::Updater::withheld_by() of a listing whose delegated roles failed.
using WithheldBy =
    std::function<catalog::Result<std::optional<std::string>>(const std::string& target_path)>;
// Whether a failed role withholds the card of `e` or a file of one of its
// variants (so its check is unknown, not failed). Errors: withheld_by's.
catalog::Result<bool> model_withheld(const ModelEntry& e, const WithheldBy& withheld_by);

// After a listing whose delegated roles failed: drops from `fresh` the refused
// models that model_withheld() says are withheld, then adds each of `previous`
// (the remote's models before) that is withheld and whose card `fresh` no longer
// lists. Errors: withheld_by's.
catalog::Result<void> keep_withheld_models(std::vector<ModelEntry>& fresh,
                                           std::vector<ModelEntry> previous,
                                           const WithheldBy& withheld_by);

// models_ as Broker keeps it, from entries in remote priority order: valid
// versions of a name only from the first remote listing a valid one (see
// drop_shadowed()), refused ones all kept; each name's newest version first.
std::map<std::string, std::vector<ModelEntry>> index_models(std::vector<ModelEntry> entries);

// A model entry as state/remotes/<name>/catalog.json keeps it ("models"), and
// back: nullopt when `j` is not one (its metadata no longer parses). The name
// binding is checked again on reading (a refusal it finds wins); a refusal the
// file records stays.
nlohmann::json model_json(const ModelEntry& e);
std::optional<ModelEntry> model_from_json(const std::string& remote, const nlohmann::json& j);
// The models of a catalog.json (`doc`); none when it has no "models" (written
// before models were listed).
std::vector<ModelEntry> models_from_cache(const std::string& remote, const nlohmann::json& doc);

const config::Remote* find_remote(const config::Config& c, const std::string& name);

// `job` must outlive the Updater: cancelling it stops fetches and backoff waits.
catalog::tuf::UpdaterConfig updater_config(const config::Config& c, const config::Remote& r,
                                           const Job& job);

// First use of a remote: trust its configured root, and remember which one
// (<metadata_dir>/../trusted_root.sha256: the anchor).
catalog::Result<void> ensure_trusted_root(const config::Remote& r,
                                          const std::filesystem::path& metadata_dir);

// When the remote's configured trusted_root is not the root its trusted
// metadata was anchored in (the admin replaced the file, e.g. after the
// publisher started a new root), what to tell the admin; nullopt when it is the
// same, or unknown (a state from before anchors were kept: the anchor is
// recorded now).
std::optional<std::string> anchor_changed(const config::Remote& r,
                                          const std::filesystem::path& metadata_dir);

}  // namespace epbrokerd::core::detail
