// libepbroker internals: what the C API (<epbroker/epbroker.h>) is made of. The opaque
// handles are plain structs around the C++ API's value types (<epbroker/client.hpp>),
// and every C function runs its body through guard(), which turns each exception into
// an epbroker_status and the thread's last error. Nothing here is installed.
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "epbroker/client.hpp"
#include "epbroker/epbroker.h"
#include "epbroker/error.hpp"

// ---- the opaque handles (global names: the header declares them so) ----------------
// Each one that wraps a C++ value keeps it in `value`; accessors read from there, so
// their strings live exactly as long as the handle.

struct epbroker_cancel {
  epbroker::CancelToken token;
};

struct epbroker_progress {
  epbroker::Progress value;
};

struct epbroker_client {
  epbroker::Client client;
};

struct epbroker_device {
  epbroker::Device value;
};

struct epbroker_version_info {
  epbroker::VersionInfo value;
};

struct epbroker_provider {
  explicit epbroker_provider(epbroker::Provider p);

  epbroker::Provider value;
  // value.versions as handles, built once (epbroker_provider_version_info points here).
  std::vector<epbroker_version_info> versions;
};

struct epbroker_job_info {
  epbroker_progress progress;
  std::string error;
  std::string error_message;
};

struct epbroker_daemon_status {
  epbroker::Status value;  // without its jobs: those are in `jobs`
  std::vector<epbroker_job_info> jobs;
};

struct epbroker_update_change {
  epbroker::UpdateChange value;
};

struct epbroker_history_entry {
  epbroker::HistoryEntry value;
};

struct epbroker_removed {
  epbroker::RemovedVersion value;
};

struct epbroker_verify_result {
  epbroker::VerifyResult value;
};

struct epbroker_session_options {
  // Kept as the caller gave it; checked when a session is requested (the setter
  // cannot fail).
  epbroker_policy policy = EPBROKER_POLICY_DEFAULT;
  epbroker::SessionOptions value;
};

struct epbroker_session {
  epbroker::Session session;
  // A copy of session.providers(): still readable after release (which empties those).
  std::vector<epbroker_provider> providers;
  // A copy of session.path(), which release() frees: epbroker_session_path()'s string
  // must stay valid until the handle is freed. Cleared (not freed) by release.
  std::string path;
  bool released = false;
};

// Models (since libepbroker 0.2).
struct epbroker_variant_info {
  epbroker::ModelVariantInfo value;
};

struct epbroker_model {
  explicit epbroker_model(epbroker::ModelInfo m);

  epbroker::ModelInfo value;  // without its variants: those are in `variants`
  std::vector<epbroker_variant_info> variants;
};

struct epbroker_model_options {
  // Kept as the caller gave it; checked when a model is ensured (the setter cannot
  // fail).
  epbroker_policy policy = EPBROKER_POLICY_DEFAULT;
  epbroker::ModelOptions value;
};

struct epbroker_model_lease {
  epbroker::ModelLease lease;
  // A copy of lease.session_path(), which release() frees (as epbroker_session's path).
  std::string session_path;
  bool released = false;
};

struct epbroker_removed_model {
  epbroker::RemovedModel value;
};

// The lists: a vector of handles.
template <typename Item>
struct epbroker_list_of {
  std::vector<Item> items;
};
struct epbroker_device_list : epbroker_list_of<epbroker_device> {};
struct epbroker_provider_list : epbroker_list_of<epbroker_provider> {};
struct epbroker_update_list : epbroker_list_of<epbroker_update_change> {};
struct epbroker_history_list : epbroker_list_of<epbroker_history_entry> {};
struct epbroker_removed_list : epbroker_list_of<epbroker_removed> {};
struct epbroker_verify_list : epbroker_list_of<epbroker_verify_result> {};
struct epbroker_model_list : epbroker_list_of<epbroker_model> {};
struct epbroker_removed_model_list : epbroker_list_of<epbroker_removed_model> {};

namespace epbroker::capi {

// ---- errors (c_api_errors.cpp) -------------------------------------------------------

// Thrown by require(): a NULL where an argument is required (`index` >= 0: an element
// of that array argument).
struct NullArgument {
  const char* name;
  std::ptrdiff_t index = -1;
};

// Throws NullArgument{name} when `p` is NULL.
inline void require(const void* p, const char* name) {
  if (p == nullptr) throw NullArgument{name};
}

// The status for an Errc: static_cast<int>(code) + 1.
epbroker_status status_of(Errc code) noexcept;

// Records the thread's last error and returns `status`. Never throws: if the message
// cannot be copied, "out of memory" is kept instead.
epbroker_status fail(epbroker_status status, const std::string& message,
                     const std::string& bus_name = {}) noexcept;

// The current exception (called inside a catch block of guard()) as a status and the
// thread's last error. `function` names the C function for local messages.
epbroker_status fail_current(const char* function) noexcept;

// Runs `body` and returns EPBROKER_OK, or, for whatever it throws, the status that
// fail_current() gives: no exception leaves a C function. The one exception is
// thread cancellation (abi::__forced_unwind), which must unwind to the thread's start.
template <typename Body>
epbroker_status guard(const char* function, Body&& body) {
  try {
    std::forward<Body>(body)();
    return EPBROKER_OK;
  } catch (abi::__forced_unwind&) {
    throw;  // pthread_cancel: not an error; swallowing it would abort the process
  } catch (...) {
    return fail_current(function);
  }
}

// ---- values (c_api_values.cpp) -------------------------------------------------------

epbroker_job_state job_state_of(JobState state) noexcept;
// The words of to_string(JobState), as C strings (static storage).
const char* job_state_name(JobState state) noexcept;
// Policy for a C value; throws Error(invalid_argument) for a value not in the enum.
Policy policy_of(epbroker_policy policy);
epbroker_policy c_policy_of(Policy policy) noexcept;

// A copy of `text` in malloc'ed memory (for epbroker_string_free); throws bad_alloc.
char* copy_string(const std::string& text);

// Moves `values` into a new list of handles `List` (each handle built from a value).
template <typename List, typename Value>
List* new_list(std::vector<Value>&& values) {
  auto* list = new List;
  try {
    list->items.reserve(values.size());
    for (auto& v : values) list->items.emplace_back(std::move(v));
  } catch (...) {
    delete list;
    throw;
  }
  return list;
}

// Accessor helpers: a NULL handle reads as "" / 0 / no items, never a crash.
template <typename Handle, typename Value>
const char* text(const Handle* h, std::string Value::*field) noexcept {
  return h ? (h->value.*field).c_str() : "";
}

template <typename Handle, typename Value, typename Number>
Number number(const Handle* h, Number Value::*field) noexcept {
  return h ? h->value.*field : Number{};
}

template <typename Handle, typename Value>
std::size_t count(const Handle* h, std::vector<std::string> Value::*field) noexcept {
  return h ? (h->value.*field).size() : 0;
}

// NULL when `i` is out of range.
template <typename Handle, typename Value>
const char* item(const Handle* h, std::vector<std::string> Value::*field, std::size_t i) noexcept {
  return h && i < (h->value.*field).size() ? (h->value.*field)[i].c_str() : nullptr;
}

template <typename List>
std::size_t list_size(const List* list) noexcept {
  return list ? list->items.size() : 0;
}

// NULL when `i` is out of range.
template <typename List>
auto list_get(const List* list, std::size_t i) noexcept -> decltype(&list->items[0]) {
  return list && i < list->items.size() ? &list->items[i] : nullptr;
}

// ---- jobs (c_api_jobs.cpp) -----------------------------------------------------------

// The C callback as a ProgressCallback (empty when `fn` is NULL): each report is
// copied into an epbroker_progress that lives for the callback's duration.
ProgressCallback progress_callback(epbroker_progress_fn fn, void* user);

// The token a call waits on: the caller's, or one of its own that never fires.
class TokenOf {
 public:
  explicit TokenOf(const epbroker_cancel* cancel) : caller_(cancel) {
    if (caller_ == nullptr) own_.emplace();
  }
  const CancelToken& get() const { return caller_ ? caller_->token : *own_; }

 private:
  const epbroker_cancel* caller_;
  std::optional<CancelToken> own_;
};

}  // namespace epbroker::capi
