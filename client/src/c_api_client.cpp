// The C API's client: connecting, devices, providers and the daemon's status.
#include <memory>

#include "client/src/c_api.hpp"

using epbroker::Status;
using namespace epbroker::capi;

extern "C" {

epbroker_status epbroker_client_new(const char* bus_address, epbroker_client** out) {
  return guard(__func__, [&] {
    require(out, "out");
    epbroker::ClientOptions options;
    if (bus_address != nullptr) options.bus_address = bus_address;  // "" = the default
    *out = new epbroker_client{epbroker::Client(std::move(options))};
  });
}

void epbroker_client_free(epbroker_client* client) { delete client; }

epbroker_status epbroker_devices(epbroker_client* client, epbroker_device_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");
    *out = new_list<epbroker_device_list>(client->client.devices());
  });
}

epbroker_status epbroker_providers(epbroker_client* client, epbroker_provider_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");
    *out = new_list<epbroker_provider_list>(client->client.providers());
  });
}

// ---- the daemon's status ---------------------------------------------------------

epbroker_status epbroker_status_get(epbroker_client* client, epbroker_daemon_status** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");
    auto status = std::make_unique<epbroker_daemon_status>();
    status->value = client->client.status();
    status->jobs.reserve(status->value.jobs.size());
    for (auto& j : status->value.jobs) {
      status->jobs.push_back(
          {{std::move(j.progress)}, std::move(j.error), std::move(j.error_message)});
    }
    status->value.jobs.clear();
    *out = status.release();
  });
}

void epbroker_daemon_status_free(epbroker_daemon_status* status) { delete status; }

const char* epbroker_daemon_status_version(const epbroker_daemon_status* s) {
  return text(s, &Status::version);
}
const char* epbroker_daemon_status_state(const epbroker_daemon_status* s) {
  return text(s, &Status::daemon_state);
}
uint64_t epbroker_daemon_status_catalog_revision(const epbroker_daemon_status* s) {
  return number(s, &Status::catalog_revision);
}
const char* epbroker_daemon_status_catalog_expires(const epbroker_daemon_status* s) {
  return text(s, &Status::catalog_expires);
}
size_t epbroker_daemon_status_sessions(const epbroker_daemon_status* s) {
  return number(s, &Status::sessions);
}
size_t epbroker_daemon_status_job_count(const epbroker_daemon_status* s) {
  return s ? s->jobs.size() : 0;
}
const epbroker_job_info* epbroker_daemon_status_job(const epbroker_daemon_status* s, size_t i) {
  return s && i < s->jobs.size() ? &s->jobs[i] : nullptr;
}
const epbroker_progress* epbroker_job_info_progress(const epbroker_job_info* j) {
  return j ? &j->progress : nullptr;
}
const char* epbroker_job_info_error(const epbroker_job_info* j) {
  return j ? j->error.c_str() : "";
}
const char* epbroker_job_info_error_message(const epbroker_job_info* j) {
  return j ? j->error_message.c_str() : "";
}

}  // extern "C"
