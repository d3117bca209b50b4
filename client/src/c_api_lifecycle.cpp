// The C API's package lifecycle calls: hold, unhold, rollback, history, gc, remove and
// reset_remote (update and verify wait on jobs: c_api_jobs.cpp).
#include <cstdlib>
#include <memory>

#include "client/src/c_api.hpp"

using epbroker::HistoryEntry;
using epbroker::RemovedVersion;
using namespace epbroker::capi;

namespace {

// A malloc'ed string that is freed unless released to the caller.
using OwnedString = std::unique_ptr<char, decltype(&std::free)>;

OwnedString owned_copy(const std::string& text) {
  return OwnedString(copy_string(text), &std::free);
}

}  // namespace

extern "C" {

epbroker_status epbroker_hold(epbroker_client* client, const char* name) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    client->client.hold(name);
  });
}

epbroker_status epbroker_unhold(epbroker_client* client, const char* name) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    client->client.unhold(name);
  });
}

epbroker_status epbroker_rollback(epbroker_client* client, const char* name, char** from,
                                  char** to) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    const auto result = client->client.rollback(name);
    // Both copies first: the outputs are written only when the call succeeds.
    auto from_copy = from ? owned_copy(result.from) : OwnedString(nullptr, &std::free);
    auto to_copy = to ? owned_copy(result.to) : OwnedString(nullptr, &std::free);
    if (from != nullptr) *from = from_copy.release();
    if (to != nullptr) *to = to_copy.release();
  });
}

// ---- history ---------------------------------------------------------------------

epbroker_status epbroker_history(epbroker_client* client, const char* name,
                                 epbroker_history_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    require(out, "out");
    *out = new_list<epbroker_history_list>(client->client.history(name ? name : ""));
  });
}

size_t epbroker_history_list_size(const epbroker_history_list* list) { return list_size(list); }
const epbroker_history_entry* epbroker_history_list_get(const epbroker_history_list* list,
                                                        size_t i) {
  return list_get(list, i);
}
void epbroker_history_list_free(epbroker_history_list* list) { delete list; }
int64_t epbroker_history_entry_time(const epbroker_history_entry* h) {
  return number(h, &HistoryEntry::time);
}
uint32_t epbroker_history_entry_uid(const epbroker_history_entry* h) {
  return number(h, &HistoryEntry::uid);
}
const char* epbroker_history_entry_action(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::action);
}
const char* epbroker_history_entry_name(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::name);
}
const char* epbroker_history_entry_from(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::from);
}
const char* epbroker_history_entry_to(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::to);
}
const char* epbroker_history_entry_result(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::result);
}
const char* epbroker_history_entry_reason(const epbroker_history_entry* h) {
  return text(h, &HistoryEntry::reason);
}

// ---- gc, remove, reset_remote ----------------------------------------------------

epbroker_status epbroker_gc(epbroker_client* client, epbroker_removed_list** out) {
  return guard(__func__, [&] {
    require(client, "client");
    auto removed = client->client.gc();
    if (out != nullptr) *out = new_list<epbroker_removed_list>(std::move(removed));
  });
}

size_t epbroker_removed_list_size(const epbroker_removed_list* list) { return list_size(list); }
const epbroker_removed* epbroker_removed_list_get(const epbroker_removed_list* list, size_t i) {
  return list_get(list, i);
}
void epbroker_removed_list_free(epbroker_removed_list* list) { delete list; }
const char* epbroker_removed_name(const epbroker_removed* r) {
  return text(r, &RemovedVersion::name);
}
const char* epbroker_removed_version(const epbroker_removed* r) {
  return text(r, &RemovedVersion::version);
}

epbroker_status epbroker_remove(epbroker_client* client, const char* name, int now) {
  return guard(__func__, [&] {
    require(client, "client");
    require(name, "name");
    client->client.remove(name, now != 0);
  });
}

epbroker_status epbroker_reset_remote(epbroker_client* client, const char* remote) {
  return guard(__func__, [&] {
    require(client, "client");
    require(remote, "remote");
    client->client.reset_remote(remote);
  });
}

}  // extern "C"
