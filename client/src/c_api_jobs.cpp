// The C API's waits on daemon jobs: ensure_ready, install, refresh, update and verify,
// with their progress callbacks and the cancel handle.
#include <memory>
#include <new>

#include "client/src/c_api.hpp"

namespace epbroker::capi {

ProgressCallback progress_callback(epbroker_progress_fn fn, void* user) {
  if (fn == nullptr) return {};
  return [fn, user](const Progress& p) {
    const epbroker_progress report{p};
    fn(&report, user);
  };
}

}  // namespace epbroker::capi

using epbroker::Progress;
using epbroker::UpdateChange;
using epbroker::VerifyResult;
using namespace epbroker::capi;

extern "C" {

// ---- cancellation ----------------------------------------------------------------

epbroker_cancel* epbroker_cancel_new(void) {
  try {
    return new epbroker_cancel{};
  } catch (...) {
    return nullptr;  // bad_alloc (of the handle or of the token's shared flag)
  }
}

void epbroker_cancel_trigger(epbroker_cancel* cancel) {
  // CancelToken::cancel() is one atomic store: async-signal-safe.
  if (cancel != nullptr) cancel->token.cancel();
}

int epbroker_cancel_is_triggered(const epbroker_cancel* cancel) {
  return cancel != nullptr && cancel->token.cancelled() ? 1 : 0;
}

void epbroker_cancel_free(epbroker_cancel* cancel) { delete cancel; }

// ---- progress --------------------------------------------------------------------

const char* epbroker_progress_job(const epbroker_progress* p) { return text(p, &Progress::job); }
const char* epbroker_progress_kind(const epbroker_progress* p) { return text(p, &Progress::kind); }
const char* epbroker_progress_target(const epbroker_progress* p) {
  return text(p, &Progress::target);
}
epbroker_job_state epbroker_progress_state(const epbroker_progress* p) {
  return p ? job_state_of(p->value.state) : EPBROKER_JOB_UNKNOWN;
}
const char* epbroker_progress_state_name(const epbroker_progress* p) {
  return p ? job_state_name(p->value.state) : "";
}
uint64_t epbroker_progress_bytes_done(const epbroker_progress* p) {
  return number(p, &Progress::bytes_done);
}
uint64_t epbroker_progress_bytes_total(const epbroker_progress* p) {
  return number(p, &Progress::bytes_total);
}

// ---- install, refresh ------------------------------------------------------------

epbroker_status epbroker_ensure_ready(epbroker_client* client, const char* name,
                                      epbroker_progress_fn progress, void* user,
                                      const epbroker_cancel* cancel, epbroker_provider** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    const TokenOf token(cancel);
    auto p = client->client.ensure_ready(name, progress_callback(progress, user), token.get());
    if (out != nullptr) *out = new epbroker_provider(std::move(p));
  });
}

epbroker_status epbroker_install(epbroker_client* client, const char* name, const char* version,
                                 int allow_older, epbroker_progress_fn progress, void* user,
                                 const epbroker_cancel* cancel, epbroker_provider** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    epbroker::InstallOptions options;
    if (version != nullptr) options.version = version;
    options.allow_older = allow_older != 0;
    const TokenOf token(cancel);
    auto p = client->client.install(name, options, progress_callback(progress, user), token.get());
    if (out != nullptr) *out = new epbroker_provider(std::move(p));
  });
}

epbroker_status epbroker_refresh(epbroker_client* client, epbroker_progress_fn progress, void* user,
                                 const epbroker_cancel* cancel, uint64_t* revision) {
  return guard(__func__, [&] {
    require(client, "client");
    const TokenOf token(cancel);
    const auto r = client->client.refresh(progress_callback(progress, user), token.get());
    if (revision != nullptr) *revision = r;
  });
}

// ---- update ----------------------------------------------------------------------

epbroker_status epbroker_update(epbroker_client* client, const char* const* names, size_t count,
                                int dry_run, epbroker_progress_fn progress, void* user,
                                const epbroker_cancel* cancel, epbroker_update_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    if (count > 0) require(names, "names");
    std::vector<std::string> list;
    list.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (names[i] == nullptr) throw NullArgument{"names", static_cast<std::ptrdiff_t>(i)};
      list.emplace_back(names[i]);
    }
    const TokenOf token(cancel);
    auto changes =
        client->client.update(list, dry_run != 0, progress_callback(progress, user), token.get());
    if (out != nullptr) *out = new_list<epbroker_update_list>(std::move(changes));
  });
}

size_t epbroker_update_list_size(const epbroker_update_list* list) { return list_size(list); }
const epbroker_update_change* epbroker_update_list_get(const epbroker_update_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_update_list_free(epbroker_update_list* list) { delete list; }
const char* epbroker_update_change_name(const epbroker_update_change* u) {
  return text(u, &UpdateChange::name);
}
const char* epbroker_update_change_from(const epbroker_update_change* u) {
  return text(u, &UpdateChange::from);
}
const char* epbroker_update_change_to(const epbroker_update_change* u) {
  return text(u, &UpdateChange::to);
}
const char* epbroker_update_change_reason(const epbroker_update_change* u) {
  return text(u, &UpdateChange::reason);
}
const char* epbroker_update_change_job(const epbroker_update_change* u) {
  return text(u, &UpdateChange::job);
}

// ---- verify ----------------------------------------------------------------------

epbroker_status epbroker_verify(epbroker_client* client, epbroker_progress_fn progress, void* user,
                                const epbroker_cancel* cancel, epbroker_verify_list** out,
                                int64_t* finished) {
  return guard(__func__, [&] {
    require(client, "client");
    const TokenOf token(cancel);
    auto report = client->client.verify(progress_callback(progress, user), token.get());
    if (out != nullptr) *out = new_list<epbroker_verify_list>(std::move(report.results));
    if (finished != nullptr) *finished = report.finished;
  });
}

size_t epbroker_verify_list_size(const epbroker_verify_list* list) { return list_size(list); }
const epbroker_verify_result* epbroker_verify_list_get(const epbroker_verify_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_verify_list_free(epbroker_verify_list* list) { delete list; }
const char* epbroker_verify_result_name(const epbroker_verify_result* v) {
  return text(v, &VerifyResult::name);
}
const char* epbroker_verify_result_version(const epbroker_verify_result* v) {
  return text(v, &VerifyResult::version);
}
int epbroker_verify_result_ok(const epbroker_verify_result* v) { return v && v->value.ok ? 1 : 0; }
const char* epbroker_verify_result_problem(const epbroker_verify_result* v) {
  return text(v, &VerifyResult::problem);
}

}  // extern "C"
