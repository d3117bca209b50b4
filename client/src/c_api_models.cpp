// The C API's models (since libepbroker 0.2): models, ensure_model with its options
// and lease, remove_model.
#include <pthread.h>

#include <memory>

#include "client/src/c_api.hpp"

epbroker_model::epbroker_model(epbroker::ModelInfo m) : value(std::move(m)) {
  variants.reserve(value.variants.size());
  for (auto& v : value.variants) variants.push_back({std::move(v)});
  value.variants.clear();
}

namespace {

// Accessors of the lease's lists (ModelLease returns them by reference).
using LeaseList = const std::vector<std::string>& (epbroker::ModelLease::*)() const noexcept;

std::size_t lease_count(const epbroker_model_lease* l, LeaseList list) noexcept {
  return l ? (l->lease.*list)().size() : 0;
}

// NULL when `i` is out of range.
const char* lease_item(const epbroker_model_lease* l, LeaseList list, std::size_t i) noexcept {
  return l && i < (l->lease.*list)().size() ? (l->lease.*list)()[i].c_str() : nullptr;
}

}  // namespace

using epbroker::ModelInfo;
using epbroker::ModelVariantInfo;
using epbroker::RemovedModel;
using namespace epbroker::capi;

extern "C" {

// ---- models ----------------------------------------------------------------------

epbroker_status epbroker_models(epbroker_client* client, epbroker_policy policy,
                                const char* ort_version, epbroker_model_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");
    *out = new_list<epbroker_model_list>(
        client->client.models(policy_of(policy), ort_version ? ort_version : ""));
  });
}

size_t epbroker_model_list_size(const epbroker_model_list* list) { return list_size(list); }
const epbroker_model* epbroker_model_list_get(const epbroker_model_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_model_list_free(epbroker_model_list* list) { delete list; }

const char* epbroker_model_name(const epbroker_model* m) { return text(m, &ModelInfo::name); }
const char* epbroker_model_version(const epbroker_model* m) { return text(m, &ModelInfo::version); }
const char* epbroker_model_publisher(const epbroker_model* m) {
  return text(m, &ModelInfo::publisher);
}
const char* epbroker_model_license(const epbroker_model* m) { return text(m, &ModelInfo::license); }
const char* epbroker_model_license_url(const epbroker_model* m) {
  return text(m, &ModelInfo::license_url);
}
const char* epbroker_model_description(const epbroker_model* m) {
  return text(m, &ModelInfo::description);
}
const char* epbroker_model_task(const epbroker_model* m) { return text(m, &ModelInfo::task); }
const char* epbroker_model_state(const epbroker_model* m) { return text(m, &ModelInfo::state); }
const char* epbroker_model_reason(const epbroker_model* m) { return text(m, &ModelInfo::reason); }
const char* epbroker_model_remote(const epbroker_model* m) { return text(m, &ModelInfo::remote); }
size_t epbroker_model_variant_count(const epbroker_model* m) { return m ? m->variants.size() : 0; }
const epbroker_variant_info* epbroker_model_variant_info(const epbroker_model* m, size_t i) {
  return m && i < m->variants.size() ? &m->variants[i] : nullptr;
}
const char* epbroker_model_planned(const epbroker_model* m) { return text(m, &ModelInfo::planned); }
const char* epbroker_model_plan_device(const epbroker_model* m) {
  return text(m, &ModelInfo::plan_device);
}
const char* epbroker_model_plan_ep(const epbroker_model* m) { return text(m, &ModelInfo::plan_ep); }
const char* epbroker_model_plan_reason(const epbroker_model* m) {
  return text(m, &ModelInfo::plan_reason);
}

const char* epbroker_variant_info_id(const epbroker_variant_info* v) {
  return text(v, &ModelVariantInfo::id);
}
size_t epbroker_variant_info_device_count(const epbroker_variant_info* v) {
  return count(v, &ModelVariantInfo::devices);
}
const char* epbroker_variant_info_device(const epbroker_variant_info* v, size_t i) {
  return item(v, &ModelVariantInfo::devices, i);
}
size_t epbroker_variant_info_ep_count(const epbroker_variant_info* v) {
  return count(v, &ModelVariantInfo::eps);
}
const char* epbroker_variant_info_ep(const epbroker_variant_info* v, size_t i) {
  return item(v, &ModelVariantInfo::eps, i);
}
const char* epbroker_variant_info_ort_min(const epbroker_variant_info* v) {
  return text(v, &ModelVariantInfo::ort_min);
}
uint32_t epbroker_variant_info_opset(const epbroker_variant_info* v) {
  return number(v, &ModelVariantInfo::opset);
}
uint64_t epbroker_variant_info_size(const epbroker_variant_info* v) {
  return number(v, &ModelVariantInfo::size);
}
int epbroker_variant_info_installed(const epbroker_variant_info* v) {
  return v && v->value.installed ? 1 : 0;
}

// ---- options ---------------------------------------------------------------------

epbroker_model_options* epbroker_model_options_new(void) {
  try {
    return new epbroker_model_options{};
  } catch (...) {
    return nullptr;  // bad_alloc
  }
}

void epbroker_model_options_free(epbroker_model_options* options) { delete options; }

epbroker_status epbroker_model_options_set_variant(epbroker_model_options* options,
                                                   const char* variant) {
  return guard(__func__, [&] {
    require(options, "options");
    options->value.variant = variant ? variant : "";
  });
}

epbroker_status epbroker_model_options_set_version(epbroker_model_options* options,
                                                   const char* version) {
  return guard(__func__, [&] {
    require(options, "options");
    options->value.version = version ? version : "";
  });
}

void epbroker_model_options_set_policy(epbroker_model_options* options, epbroker_policy policy) {
  // Checked by epbroker_ensure_model (this cannot report an error).
  if (options != nullptr) options->policy = policy;
}

epbroker_status epbroker_model_options_set_ort_version(epbroker_model_options* options,
                                                       const char* version) {
  return guard(__func__, [&] {
    require(options, "options");
    options->value.ort_version = version ? version : "";
  });
}

void epbroker_model_options_set_download(epbroker_model_options* options, int download) {
  if (options != nullptr) options->value.download = download != 0;
}

// ---- ensure_model and the lease --------------------------------------------------

epbroker_status epbroker_ensure_model(epbroker_client* client, const char* name,
                                      const epbroker_model_options* options,
                                      epbroker_progress_fn progress, void* user,
                                      const epbroker_cancel* cancel, epbroker_model_lease** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    require(out, "out");  // checked first: a lease nobody can release must not be taken
    epbroker::ModelOptions request;
    if (options != nullptr) {
      request = options->value;
      request.policy = policy_of(options->policy);
    }
    // Allocated before the lease is taken, so that running out of memory afterwards
    // cannot leak a lease; the ModelLease releases it if copying fails.
    auto lease = std::make_unique<epbroker_model_lease>();
    const TokenOf token(cancel);
    lease->lease =
        client->client.ensure_model(name, request, progress_callback(progress, user), token.get());
    lease->session_path = lease->lease.session_path();
    *out = lease.release();
  });
}

const char* epbroker_model_lease_name(const epbroker_model_lease* l) {
  return l ? l->lease.name().c_str() : "";
}
const char* epbroker_model_lease_version(const epbroker_model_lease* l) {
  return l ? l->lease.version().c_str() : "";
}
const char* epbroker_model_lease_variant(const epbroker_model_lease* l) {
  return l ? l->lease.variant().c_str() : "";
}
const char* epbroker_model_lease_path(const epbroker_model_lease* l) {
  return l ? l->lease.path().c_str() : "";
}
const char* epbroker_model_lease_main(const epbroker_model_lease* l) {
  return l ? l->lease.main().c_str() : "";
}
size_t epbroker_model_lease_file_count(const epbroker_model_lease* l) {
  return lease_count(l, &epbroker::ModelLease::files);
}
const char* epbroker_model_lease_file(const epbroker_model_lease* l, size_t i) {
  return lease_item(l, &epbroker::ModelLease::files, i);
}
size_t epbroker_model_lease_device_count(const epbroker_model_lease* l) {
  return lease_count(l, &epbroker::ModelLease::devices);
}
const char* epbroker_model_lease_device(const epbroker_model_lease* l, size_t i) {
  return lease_item(l, &epbroker::ModelLease::devices, i);
}
size_t epbroker_model_lease_ep_count(const epbroker_model_lease* l) {
  return lease_count(l, &epbroker::ModelLease::eps);
}
const char* epbroker_model_lease_ep(const epbroker_model_lease* l, size_t i) {
  return lease_item(l, &epbroker::ModelLease::eps, i);
}

const char* epbroker_model_lease_session_path(const epbroker_model_lease* l) {
  // The handle's own copy, as epbroker_session_path's: readable until freed.
  return l && !l->released ? l->session_path.c_str() : "";
}

int epbroker_model_lease_active(const epbroker_model_lease* l) {
  return l && !l->released && l->lease.active() ? 1 : 0;
}

epbroker_status epbroker_model_lease_release(epbroker_model_lease* l) {
  return guard(__func__, [&] {
    require(l, "lease");
    l->released = true;  // the session path reads "" from now on; its storage stays
    l->lease.release();  // inactive afterwards even when it throws
  });
}

void epbroker_model_lease_free(epbroker_model_lease* l) {
  // As epbroker_session_free: ~ModelLease releases over the bus (a cancellation point)
  // and swallows every exception, so the release runs with cancellation disabled.
  int previous = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous);
  delete l;  // ~ModelLease releases, ignoring errors
  pthread_setcancelstate(previous, nullptr);
}

// ---- remove_model ----------------------------------------------------------------

epbroker_status epbroker_remove_model(epbroker_client* client, const char* name,
                                      const char* version, const char* variant, int now,
                                      epbroker_removed_model_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    auto removed =
        client->client.remove_model(name, version ? version : "", variant ? variant : "", now != 0);
    if (out != nullptr) *out = new_list<epbroker_removed_model_list>(std::move(removed));
  });
}

size_t epbroker_removed_model_list_size(const epbroker_removed_model_list* list) {
  return list_size(list);
}
const epbroker_removed_model* epbroker_removed_model_list_get(
    const epbroker_removed_model_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_removed_model_list_free(epbroker_removed_model_list* list) { delete list; }
const char* epbroker_removed_model_name(const epbroker_removed_model* r) {
  return text(r, &RemovedModel::name);
}
const char* epbroker_removed_model_version(const epbroker_removed_model* r) {
  return text(r, &RemovedModel::version);
}
const char* epbroker_removed_model_variant(const epbroker_removed_model* r) {
  return text(r, &RemovedModel::variant);
}

}  // extern "C"
