// The C API's sessions (leases) and their options.
#include <pthread.h>

#include <memory>

#include "client/src/c_api.hpp"

using namespace epbroker::capi;

extern "C" {

epbroker_session_options* epbroker_session_options_new(void) {
  try {
    return new epbroker_session_options{};
  } catch (...) {
    return nullptr;  // bad_alloc
  }
}

void epbroker_session_options_free(epbroker_session_options* options) { delete options; }

void epbroker_session_options_set_policy(epbroker_session_options* options,
                                         epbroker_policy policy) {
  // Checked by epbroker_request_session (this cannot report an error).
  if (options != nullptr) options->policy = policy;
}

epbroker_status epbroker_session_options_set_ort_version(epbroker_session_options* options,
                                                         const char* version) {
  return guard(__func__, [&] {
    require(options, "options");
    options->value.ort_version = version ? version : "";
  });
}

epbroker_status epbroker_session_options_add_provider(epbroker_session_options* options,
                                                      const char* name) {
  return guard(__func__, [&] {
    require(options, "options");
    require(name, "name");
    options->value.providers.emplace_back(name);
  });
}

void epbroker_session_options_set_download(epbroker_session_options* options, int download) {
  if (options != nullptr) options->value.download = download != 0;
}

epbroker_status epbroker_request_session(epbroker_client* client,
                                         const epbroker_session_options* options,
                                         epbroker_session** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");  // checked first: a lease nobody can release must not be taken
    epbroker::SessionOptions request;
    if (options != nullptr) {
      request = options->value;
      request.policy = policy_of(options->policy);
    }
    // The handle is allocated before the lease is taken, so that running out of memory
    // afterwards cannot leak a lease; the Session releases it if copying fails.
    auto session = std::make_unique<epbroker_session>();
    session->session = client->client.request_session(request);
    const auto& granted = session->session.providers();
    session->providers.reserve(granted.size());
    for (const auto& p : granted) session->providers.emplace_back(p);
    session->path = session->session.path();
    *out = session.release();
  });
}

const char* epbroker_session_path(const epbroker_session* s) {
  // The handle's own copy: Session::release() frees its path, and a string returned
  // before the release must stay readable until epbroker_session_free().
  return s && !s->released ? s->path.c_str() : "";
}

size_t epbroker_session_provider_count(const epbroker_session* s) {
  return s ? s->providers.size() : 0;
}

const epbroker_provider* epbroker_session_provider(const epbroker_session* s, size_t i) {
  return s && i < s->providers.size() ? &s->providers[i] : nullptr;
}

epbroker_status epbroker_session_release(epbroker_session* s) {
  return guard(__func__, [&] {
    require(s, "session");
    s->released = true;    // the path reads "" from now on; its storage stays
    s->session.release();  // empty afterwards even when it throws
  });
}

void epbroker_session_free(epbroker_session* s) {
  // ~Session releases over the bus (poll() is a cancellation point) and swallows every
  // exception, a thread cancellation's forced unwind included, after which glibc
  // aborts: the release runs with cancellation disabled, and the thread's own state
  // comes back afterwards.
  int previous = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous);
  delete s;  // ~Session releases, ignoring errors
  pthread_setcancelstate(previous, nullptr);
}

}  // extern "C"
