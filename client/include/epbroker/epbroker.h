/* libepbroker's C API: epbrokerd's client for C and for every language that calls C
 * (Python's ctypes, Rust, Go, C#...). C99; the same library as the C++ API
 * (<epbroker/client.hpp>), which stays beside it: see docs/c-api.md.
 *
 *   epbroker_client *c;
 *   if (epbroker_client_new(NULL, &c) != EPBROKER_OK) die(epbroker_last_error_message());
 *   epbroker_provider *p;
 *   epbroker_ensure_ready(c, "openvino", on_progress, my_data, NULL, &p);
 *   epbroker_session_options *o = epbroker_session_options_new();
 *   epbroker_session_options_set_policy(o, EPBROKER_POLICY_MAX_PERFORMANCE);
 *   epbroker_session *s;
 *   epbroker_request_session(c, o, &s);
 *   for (size_t i = 0; i < epbroker_session_provider_count(s); ++i) ...
 *   epbroker_session_free(s);  (ends the lease)
 *   epbroker_session_options_free(o); epbroker_provider_free(p); epbroker_client_free(c);
 *
 * Conventions:
 * - Every call that can fail returns epbroker_status: EPBROKER_OK, or a code with the
 *   meaning of epbroker::Errc (<epbroker/error.hpp>). The failing call's message (the
 *   daemon's own when it answered) is kept per thread: epbroker_last_error_message().
 *   Output parameters are written only on EPBROKER_OK.
 * - A NULL where an argument is required gives EPBROKER_ERR_INVALID_ARGUMENT, with a
 *   message naming the function and the argument. Output parameters documented "may
 *   be NULL" are optional: pass NULL when the result is not wanted.
 * - Handles are opaque. What a function returns through `T **out` belongs to the
 *   caller and is freed with that type's _free function (each accepts NULL).
 * - Accessors (epbroker_provider_name() ...) return values borrowed from their handle:
 *   strings are never NULL ("" when the daemon said nothing), valid until the handle
 *   (or the list holding it) is freed. Given a NULL handle they return "" (strings),
 *   0 (numbers, counts) or NULL (handles, indexed strings), and never crash.
 *   Strings returned through `char **out` are the caller's and are freed with
 *   epbroker_string_free() (it is free(); any language's FFI can call either).
 * - No C++ exception ever leaves a function: an epbroker::Error becomes its status,
 *   std::bad_alloc EPBROKER_ERR_NO_MEMORY, anything else (a bug) EPBROKER_ERR_INTERNAL.
 *   Only a thread's cancellation (pthread_cancel) unwinds through them, as it must.
 * - Blocking and threads are as the C++ API documents them (client.hpp): every call is
 *   a synchronous D-Bus round trip on the calling thread; a client is used by one
 *   thread at a time (a session counts as part of its client); progress callbacks run
 *   on the calling thread, inside the call. The functions without a client (names,
 *   options, cancel handles, accessors) are safe on any thread, each handle used by
 *   one thread at a time.
 *   epbroker_cancel_trigger() may be called from any thread and from a signal handler.
 * - A session keeps its client's bus connection open after epbroker_client_free():
 *   the lease lives until epbroker_session_release() or epbroker_session_free(), or
 *   the process's end. So does a model lease (epbroker_model_lease_release(),
 *   epbroker_model_lease_free()).
 * - Symbols are versioned (client/libepbroker.map): new functions are added in new
 *   version nodes and never change, so the SONAME stays libepbroker.so.0.
 */
#ifndef EPBROKER_EPBROKER_H
#define EPBROKER_EPBROKER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EPBROKER_C_API __attribute__((visibility("default")))
#else
#define EPBROKER_C_API
#endif

/* ---- status codes, messages, memory -------------------------------------------- */

/* Values never change; new codes are added at the end. 1..13 are epbroker::Errc + 1. */
typedef enum epbroker_status {
  EPBROKER_OK = 0,
  EPBROKER_ERR_NOT_FOUND = 1,           /* NotFound: no such package, job, session or remote */
  EPBROKER_ERR_NOT_AUTHORIZED = 2,      /* NotAuthorized: polkit or the daemon's policy */
  EPBROKER_ERR_INVALID_ARGUMENT = 3,    /* InvalidArgument: a bad name, option, value, or NULL */
  EPBROKER_ERR_INCOMPATIBLE = 4,        /* Incompatible: cannot run on this machine or ORT */
  EPBROKER_ERR_VERIFICATION_FAILED = 5, /* VerificationFailed: signature, hash, manifest */
  EPBROKER_ERR_NETWORK = 6,             /* Network: a catalog or package could not be fetched */
  EPBROKER_ERR_BUSY = 7,                /* Busy: refused while held (a lease, a limit) */
  EPBROKER_ERR_CANCELLED = 8,           /* Cancelled: the job or the wait was cancelled */
  EPBROKER_ERR_UNAVAILABLE = 9,         /* no bus, or the daemon cannot be reached/started */
  EPBROKER_ERR_TIMEOUT = 10,            /* the daemon did not answer in time */
  EPBROKER_ERR_PROTOCOL = 11,           /* an answer this library does not understand */
  EPBROKER_ERR_DISK_FULL = 12,          /* DiskFull: the daemon's disk or quota is full */
  EPBROKER_ERR_INTERNAL = 13,           /* Internal: the daemon failed on its own side */
  EPBROKER_ERR_NO_MEMORY = 14           /* this process ran out of memory */
} epbroker_status;

/* "OK", "NotFound", "NotAuthorized", ..., "Internal", "NoMemory" (epbrokerctl's JSON
 * names); "Unknown" for a value not listed above. Static storage. */
EPBROKER_C_API const char* epbroker_status_name(epbroker_status status);

/* The message of the last call on this thread that did not return EPBROKER_OK ("" if
 * none; calls that succeed leave it as it is). Valid until the next failing call on
 * this thread. */
EPBROKER_C_API const char* epbroker_last_error_message(void);
/* The D-Bus error name received with it ("org.epbroker.Error.NotFound", ...), "" for a
 * local error. Same lifetime. */
EPBROKER_C_API const char* epbroker_last_error_bus_name(void);

/* Frees a string returned through `char **out`. NULL is ignored. */
EPBROKER_C_API void epbroker_string_free(char* string);

/* The library's version ("0.1.0"). Static storage. */
EPBROKER_C_API const char* epbroker_version(void);

/* ---- enumerations --------------------------------------------------------------- */

/* Device policies (ONNX Runtime's OrtExecutionProviderDevicePolicy has the same names). */
typedef enum epbroker_policy {
  EPBROKER_POLICY_DEFAULT = 0,
  EPBROKER_POLICY_PREFER_CPU = 1,
  EPBROKER_POLICY_PREFER_GPU = 2,
  EPBROKER_POLICY_PREFER_NPU = 3,
  EPBROKER_POLICY_MAX_PERFORMANCE = 4,
  EPBROKER_POLICY_MAX_EFFICIENCY = 5,
  EPBROKER_POLICY_MIN_OVERALL_POWER = 6
} epbroker_policy;

/* "default", "prefer_cpu", ...; "" for a value not listed. Static storage. */
EPBROKER_C_API const char* epbroker_policy_name(epbroker_policy policy);
/* The inverse; EPBROKER_ERR_INVALID_ARGUMENT for an unknown word. */
EPBROKER_C_API epbroker_status epbroker_policy_parse(const char* name, epbroker_policy* out);

typedef enum epbroker_provider_state {
  EPBROKER_PROVIDER_READY = 0,
  EPBROKER_PROVIDER_AVAILABLE = 1,
  EPBROKER_PROVIDER_INSTALLING = 2,
  EPBROKER_PROVIDER_INCOMPATIBLE = 3,
  EPBROKER_PROVIDER_REVOKED = 4,
  EPBROKER_PROVIDER_REFUSED = 5,
  EPBROKER_PROVIDER_UNKNOWN = 6 /* a state this library does not know: see state_name */
} epbroker_provider_state;

typedef enum epbroker_job_state {
  EPBROKER_JOB_QUEUED = 0,
  EPBROKER_JOB_DOWNLOADING = 1,
  EPBROKER_JOB_VERIFYING = 2,
  EPBROKER_JOB_INSTALLING = 3,
  EPBROKER_JOB_DONE = 4,
  EPBROKER_JOB_FAILED = 5,
  EPBROKER_JOB_CANCELLED = 6,
  EPBROKER_JOB_UNKNOWN = 7
} epbroker_job_state;

/* ---- cancellation -------------------------------------------------------------- */

/* A flag that stops a wait (ensure_ready, install, update, refresh, verify,
 * ensure_model). */
typedef struct epbroker_cancel epbroker_cancel;

/* NULL when out of memory. One handle may serve several calls; once triggered it
 * stays triggered (a call given it returns EPBROKER_ERR_CANCELLED at once). */
EPBROKER_C_API epbroker_cancel* epbroker_cancel_new(void);
/* Sets the flag. Async-signal-safe and thread-safe (one atomic store); the flag stays
 * set. */
EPBROKER_C_API void epbroker_cancel_trigger(epbroker_cancel* cancel);
/* 1 once triggered, else 0. */
EPBROKER_C_API int epbroker_cancel_is_triggered(const epbroker_cancel* cancel);
/* Not while a call waits on it. */
EPBROKER_C_API void epbroker_cancel_free(epbroker_cancel* cancel);

/* ---- progress ------------------------------------------------------------------ */

/* A job's progress (see epbroker::Progress). Borrowed: valid during the callback. */
typedef struct epbroker_progress epbroker_progress;

EPBROKER_C_API const char* epbroker_progress_job(const epbroker_progress* p);
EPBROKER_C_API const char* epbroker_progress_kind(
    const epbroker_progress* p); /* install|refresh|verify|model */
EPBROKER_C_API const char* epbroker_progress_target(const epbroker_progress* p);
EPBROKER_C_API epbroker_job_state epbroker_progress_state(const epbroker_progress* p);
EPBROKER_C_API const char* epbroker_progress_state_name(const epbroker_progress* p);
EPBROKER_C_API uint64_t epbroker_progress_bytes_done(const epbroker_progress* p);
EPBROKER_C_API uint64_t epbroker_progress_bytes_total(const epbroker_progress* p);

/* Called on the waiting thread with the job's state first, at every change, and last
 * with the final state. `user` is the pointer given with the callback. The callback
 * must not call into the same client. */
typedef void (*epbroker_progress_fn)(const epbroker_progress* progress, void* user);

/* ---- the client ---------------------------------------------------------------- */

typedef struct epbroker_client epbroker_client;

/* Connects to `bus_address` ("unix:path=..."), or when NULL or "" to
 * $EPBROKER_BUS_ADDRESS if set, else the system bus. EPBROKER_ERR_UNAVAILABLE if the
 * bus cannot be reached. Does not contact the daemon yet. */
EPBROKER_C_API epbroker_status epbroker_client_new(const char* bus_address, epbroker_client** out);
EPBROKER_C_API void epbroker_client_free(epbroker_client* client);

/* ---- devices ------------------------------------------------------------------- */

typedef struct epbroker_device epbroker_device;
typedef struct epbroker_device_list epbroker_device_list;

EPBROKER_C_API epbroker_status epbroker_devices(epbroker_client* client,
                                                epbroker_device_list** out);
EPBROKER_C_API size_t epbroker_device_list_size(const epbroker_device_list* list);
/* NULL when i is out of range. */
EPBROKER_C_API const epbroker_device* epbroker_device_list_get(const epbroker_device_list* list,
                                                               size_t i);
EPBROKER_C_API void epbroker_device_list_free(epbroker_device_list* list);

EPBROKER_C_API const char* epbroker_device_id(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_type(const epbroker_device* d); /* cpu|gpu|npu */
EPBROKER_C_API uint16_t epbroker_device_vendor_id(const epbroker_device* d);
EPBROKER_C_API uint16_t epbroker_device_device_id(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_vendor(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_name(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_driver(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_driver_version(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_bus_path(const epbroker_device* d);
EPBROKER_C_API int epbroker_device_discrete(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_node(const epbroker_device* d);
EPBROKER_C_API size_t epbroker_device_isa_count(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_isa(const epbroker_device* d,
                                               size_t i); /* NULL out of range */
EPBROKER_C_API uint32_t epbroker_device_cores(const epbroker_device* d);
EPBROKER_C_API uint32_t epbroker_device_threads(const epbroker_device* d);
EPBROKER_C_API const char* epbroker_device_arch(const epbroker_device* d);

/* ---- providers ----------------------------------------------------------------- */

typedef struct epbroker_provider epbroker_provider;
typedef struct epbroker_provider_list epbroker_provider_list;
typedef struct epbroker_version_info epbroker_version_info;

EPBROKER_C_API epbroker_status epbroker_providers(epbroker_client* client,
                                                  epbroker_provider_list** out);
EPBROKER_C_API size_t epbroker_provider_list_size(const epbroker_provider_list* list);
EPBROKER_C_API const epbroker_provider* epbroker_provider_list_get(
    const epbroker_provider_list* list, size_t i);
EPBROKER_C_API void epbroker_provider_list_free(epbroker_provider_list* list);
/* For a provider returned alone (epbroker_ensure_ready, epbroker_install). */
EPBROKER_C_API void epbroker_provider_free(epbroker_provider* provider);

EPBROKER_C_API const char* epbroker_provider_name(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_kind(
    const epbroker_provider* p); /* execution_provider|runtime */
EPBROKER_C_API size_t epbroker_provider_ep_name_count(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_ep_name(const epbroker_provider* p, size_t i);
EPBROKER_C_API const char* epbroker_provider_version(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_vendor(const epbroker_provider* p);
EPBROKER_C_API epbroker_provider_state epbroker_provider_state_of(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_state_name(const epbroker_provider* p);
EPBROKER_C_API size_t epbroker_provider_device_count(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_device(const epbroker_provider* p, size_t i);
EPBROKER_C_API uint64_t epbroker_provider_size(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_library_path(
    const epbroker_provider* p); /* ready only */
EPBROKER_C_API const char* epbroker_provider_reason(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_remote(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_job(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_ort_min(const epbroker_provider* p);
EPBROKER_C_API size_t epbroker_provider_version_count(const epbroker_provider* p);
EPBROKER_C_API const epbroker_version_info* epbroker_provider_version_info(
    const epbroker_provider* p, size_t i);
EPBROKER_C_API const char* epbroker_provider_update_available(const epbroker_provider* p);
EPBROKER_C_API int epbroker_provider_held(const epbroker_provider* p);
EPBROKER_C_API const char* epbroker_provider_hold_reason(const epbroker_provider* p);

EPBROKER_C_API const char* epbroker_version_info_version(const epbroker_version_info* v);
EPBROKER_C_API const char* epbroker_version_info_role(const epbroker_version_info* v);
EPBROKER_C_API const char* epbroker_version_info_reason(const epbroker_version_info* v);
EPBROKER_C_API uint32_t epbroker_version_info_leases(const epbroker_version_info* v);

/* ---- the daemon's status ------------------------------------------------------- */

typedef struct epbroker_daemon_status epbroker_daemon_status;
typedef struct epbroker_job_info epbroker_job_info;

EPBROKER_C_API epbroker_status epbroker_status_get(epbroker_client* client,
                                                   epbroker_daemon_status** out);
EPBROKER_C_API void epbroker_daemon_status_free(epbroker_daemon_status* status);
EPBROKER_C_API const char* epbroker_daemon_status_version(const epbroker_daemon_status* s);
EPBROKER_C_API const char* epbroker_daemon_status_state(
    const epbroker_daemon_status* s); /* idle|busy|stopping */
EPBROKER_C_API uint64_t epbroker_daemon_status_catalog_revision(const epbroker_daemon_status* s);
EPBROKER_C_API const char* epbroker_daemon_status_catalog_expires(const epbroker_daemon_status* s);
EPBROKER_C_API size_t epbroker_daemon_status_sessions(const epbroker_daemon_status* s);
EPBROKER_C_API size_t epbroker_daemon_status_job_count(const epbroker_daemon_status* s);
EPBROKER_C_API const epbroker_job_info* epbroker_daemon_status_job(const epbroker_daemon_status* s,
                                                                   size_t i);
EPBROKER_C_API const epbroker_progress* epbroker_job_info_progress(const epbroker_job_info* j);
EPBROKER_C_API const char* epbroker_job_info_error(const epbroker_job_info* j);
EPBROKER_C_API const char* epbroker_job_info_error_message(const epbroker_job_info* j);

/* ---- jobs: install, refresh --------------------------------------------------- */

/* epbroker::Client::ensure_ready: installs `name` unless ready and waits for its job.
 * `progress` may be NULL; `cancel` may be NULL. `out` may be NULL (the provider is
 * not wanted). */
EPBROKER_C_API epbroker_status epbroker_ensure_ready(epbroker_client* client, const char* name,
                                                     epbroker_progress_fn progress, void* user,
                                                     const epbroker_cancel* cancel,
                                                     epbroker_provider** out);

/* epbroker::Client::install: `version` NULL or "" for the newest compatible one;
 * `allow_older` non-zero allows a downgrade. `progress`, `cancel` and `out` may be
 * NULL. */
EPBROKER_C_API epbroker_status epbroker_install(epbroker_client* client, const char* name,
                                                const char* version, int allow_older,
                                                epbroker_progress_fn progress, void* user,
                                                const epbroker_cancel* cancel,
                                                epbroker_provider** out);

/* epbroker::Client::refresh; `revision` (may be NULL) receives the catalog revision.
 * `progress` and `cancel` may be NULL. */
EPBROKER_C_API epbroker_status epbroker_refresh(epbroker_client* client,
                                                epbroker_progress_fn progress, void* user,
                                                const epbroker_cancel* cancel, uint64_t* revision);

/* ---- lifecycle ----------------------------------------------------------------- */

typedef struct epbroker_update_change epbroker_update_change;
typedef struct epbroker_update_list epbroker_update_list;

/* epbroker::Client::update: `names` has `count` package names (count 0: every installed
 * package; `names` may then be NULL); `dry_run` non-zero only lists. `progress`,
 * `cancel` and `out` may be NULL. After waiting for every job it started, returns the
 * first job's error, if any (`out` is then not written). */
EPBROKER_C_API epbroker_status epbroker_update(epbroker_client* client, const char* const* names,
                                               size_t count, int dry_run,
                                               epbroker_progress_fn progress, void* user,
                                               const epbroker_cancel* cancel,
                                               epbroker_update_list** out);
EPBROKER_C_API size_t epbroker_update_list_size(const epbroker_update_list* list);
EPBROKER_C_API const epbroker_update_change* epbroker_update_list_get(
    const epbroker_update_list* list, size_t i);
EPBROKER_C_API void epbroker_update_list_free(epbroker_update_list* list);
EPBROKER_C_API const char* epbroker_update_change_name(const epbroker_update_change* u);
EPBROKER_C_API const char* epbroker_update_change_from(const epbroker_update_change* u);
EPBROKER_C_API const char* epbroker_update_change_to(const epbroker_update_change* u);
EPBROKER_C_API const char* epbroker_update_change_reason(const epbroker_update_change* u);
EPBROKER_C_API const char* epbroker_update_change_job(const epbroker_update_change* u);

EPBROKER_C_API epbroker_status epbroker_hold(epbroker_client* client, const char* name);
EPBROKER_C_API epbroker_status epbroker_unhold(epbroker_client* client, const char* name);

/* epbroker::Client::rollback: `from` and `to` (each may be NULL) receive the versions;
 * free them with epbroker_string_free(). */
EPBROKER_C_API epbroker_status epbroker_rollback(epbroker_client* client, const char* name,
                                                 char** from, char** to);

typedef struct epbroker_history_entry epbroker_history_entry;
typedef struct epbroker_history_list epbroker_history_list;

/* `name` NULL or "" for every package's history. */
EPBROKER_C_API epbroker_status epbroker_history(epbroker_client* client, const char* name,
                                                epbroker_history_list** out);
EPBROKER_C_API size_t epbroker_history_list_size(const epbroker_history_list* list);
EPBROKER_C_API const epbroker_history_entry* epbroker_history_list_get(
    const epbroker_history_list* list, size_t i);
EPBROKER_C_API void epbroker_history_list_free(epbroker_history_list* list);
EPBROKER_C_API int64_t epbroker_history_entry_time(const epbroker_history_entry* h);
EPBROKER_C_API uint32_t epbroker_history_entry_uid(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_action(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_name(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_from(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_to(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_result(const epbroker_history_entry* h);
EPBROKER_C_API const char* epbroker_history_entry_reason(const epbroker_history_entry* h);

typedef struct epbroker_removed epbroker_removed;
typedef struct epbroker_removed_list epbroker_removed_list;

/* epbroker::Client::gc: what it deleted. `out` may be NULL. */
EPBROKER_C_API epbroker_status epbroker_gc(epbroker_client* client, epbroker_removed_list** out);
EPBROKER_C_API size_t epbroker_removed_list_size(const epbroker_removed_list* list);
EPBROKER_C_API const epbroker_removed* epbroker_removed_list_get(const epbroker_removed_list* list,
                                                                 size_t i);
EPBROKER_C_API void epbroker_removed_list_free(epbroker_removed_list* list);
EPBROKER_C_API const char* epbroker_removed_name(const epbroker_removed* r);
EPBROKER_C_API const char* epbroker_removed_version(const epbroker_removed* r);

/* epbroker::Client::remove; `now` non-zero: RemoveProviderNow. */
EPBROKER_C_API epbroker_status epbroker_remove(epbroker_client* client, const char* name, int now);
EPBROKER_C_API epbroker_status epbroker_reset_remote(epbroker_client* client, const char* remote);

typedef struct epbroker_verify_result epbroker_verify_result;
typedef struct epbroker_verify_list epbroker_verify_list;

/* epbroker::Client::verify with progress; `finished` (may be NULL) receives when that
 * verification ended (unix seconds). `progress`, `cancel` and `out` may be NULL. */
EPBROKER_C_API epbroker_status epbroker_verify(epbroker_client* client,
                                               epbroker_progress_fn progress, void* user,
                                               const epbroker_cancel* cancel,
                                               epbroker_verify_list** out, int64_t* finished);
EPBROKER_C_API size_t epbroker_verify_list_size(const epbroker_verify_list* list);
EPBROKER_C_API const epbroker_verify_result* epbroker_verify_list_get(
    const epbroker_verify_list* list, size_t i);
EPBROKER_C_API void epbroker_verify_list_free(epbroker_verify_list* list);
EPBROKER_C_API const char* epbroker_verify_result_name(const epbroker_verify_result* v);
EPBROKER_C_API const char* epbroker_verify_result_version(const epbroker_verify_result* v);
EPBROKER_C_API int epbroker_verify_result_ok(const epbroker_verify_result* v);
EPBROKER_C_API const char* epbroker_verify_result_problem(const epbroker_verify_result* v);

/* ---- sessions (leases) -------------------------------------------------------- */

typedef struct epbroker_session_options epbroker_session_options;
typedef struct epbroker_session epbroker_session;

/* Defaults: EPBROKER_POLICY_DEFAULT, no ORT version check, every compatible provider,
 * no download. NULL when out of memory. */
EPBROKER_C_API epbroker_session_options* epbroker_session_options_new(void);
EPBROKER_C_API void epbroker_session_options_free(epbroker_session_options* options);
/* A value outside epbroker_policy makes epbroker_request_session() fail with
 * EPBROKER_ERR_INVALID_ARGUMENT (this setter cannot report it). */
EPBROKER_C_API void epbroker_session_options_set_policy(epbroker_session_options* options,
                                                        epbroker_policy policy);
/* The application's ONNX Runtime version ("1.30.0"); NULL or "" = not checked. */
EPBROKER_C_API epbroker_status
epbroker_session_options_set_ort_version(epbroker_session_options* options, const char* version);
/* Adds a package name (none added: every compatible provider). */
EPBROKER_C_API epbroker_status
epbroker_session_options_add_provider(epbroker_session_options* options, const char* name);
EPBROKER_C_API void epbroker_session_options_set_download(epbroker_session_options* options,
                                                          int download);

/* A lease on the providers `options` select (NULL: the defaults). `out` is required:
 * checked before the lease is taken. */
EPBROKER_C_API epbroker_status epbroker_request_session(epbroker_client* client,
                                                        const epbroker_session_options* options,
                                                        epbroker_session** out);
/* Its D-Bus path; "" once released. */
EPBROKER_C_API const char* epbroker_session_path(const epbroker_session* s);
/* Every provider the daemon considered, policy order first: ready ones are leased and
 * have a library_path; the others say why not (reason) or are installing (job). Still
 * readable after release. */
EPBROKER_C_API size_t epbroker_session_provider_count(const epbroker_session* s);
EPBROKER_C_API const epbroker_provider* epbroker_session_provider(const epbroker_session* s,
                                                                  size_t i);
/* Ends the lease now; the session is released afterwards even when this fails. */
EPBROKER_C_API epbroker_status epbroker_session_release(epbroker_session* s);
/* Releases (errors ignored) and frees. */
EPBROKER_C_API void epbroker_session_free(epbroker_session* s);

/* ---- models (since libepbroker 0.2: symbol version EPBROKER_0.2) ---------------- */

/* ML models the daemon brokers beside the providers (<epbroker/models.hpp>). A model
 * version has variants (files built for some devices or EPs, or for any); a model
 * lease keeps one installed variant's files in place while it lives. */

typedef struct epbroker_model epbroker_model;
typedef struct epbroker_model_list epbroker_model_list;
typedef struct epbroker_variant_info epbroker_variant_info;

/* epbroker::Client::models: every model version the trusted catalogs list, newest
 * first per name, with the variant a session with `policy` and `ort_version` (NULL or
 * "" = not checked) gets on this machine. EPBROKER_ERR_INVALID_ARGUMENT for a policy
 * outside epbroker_policy or a malformed ort_version. */
EPBROKER_C_API epbroker_status epbroker_models(epbroker_client* client, epbroker_policy policy,
                                               const char* ort_version, epbroker_model_list** out);
EPBROKER_C_API size_t epbroker_model_list_size(const epbroker_model_list* list);
EPBROKER_C_API const epbroker_model* epbroker_model_list_get(const epbroker_model_list* list,
                                                             size_t i);
EPBROKER_C_API void epbroker_model_list_free(epbroker_model_list* list);

EPBROKER_C_API const char* epbroker_model_name(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_version(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_publisher(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_license(const epbroker_model* m); /* SPDX */
EPBROKER_C_API const char* epbroker_model_license_url(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_description(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_task(const epbroker_model* m);
/* "available", or "refused" (never installable: see reason); a newer daemon may send
 * other words. */
EPBROKER_C_API const char* epbroker_model_state(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_reason(const epbroker_model* m); /* refused only */
EPBROKER_C_API const char* epbroker_model_remote(const epbroker_model* m);
EPBROKER_C_API size_t epbroker_model_variant_count(const epbroker_model* m);
EPBROKER_C_API const epbroker_variant_info* epbroker_model_variant_info(const epbroker_model* m,
                                                                        size_t i);
/* The plan for epbroker_models()' policy and ORT version: the variant ("" when none
 * fits), on which device (an epbroker_device_id) and through which EP, and why (or why
 * none fits). */
EPBROKER_C_API const char* epbroker_model_planned(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_plan_device(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_plan_ep(const epbroker_model* m);
EPBROKER_C_API const char* epbroker_model_plan_reason(const epbroker_model* m);

/* One variant of a model. Devices and EPs empty: built for any. */
EPBROKER_C_API const char* epbroker_variant_info_id(const epbroker_variant_info* v);
EPBROKER_C_API size_t epbroker_variant_info_device_count(const epbroker_variant_info* v);
EPBROKER_C_API const char* epbroker_variant_info_device(const epbroker_variant_info* v,
                                                        size_t i); /* cpu|gpu|npu */
EPBROKER_C_API size_t epbroker_variant_info_ep_count(const epbroker_variant_info* v);
EPBROKER_C_API const char* epbroker_variant_info_ep(const epbroker_variant_info* v, size_t i);
EPBROKER_C_API const char* epbroker_variant_info_ort_min(const epbroker_variant_info* v);
EPBROKER_C_API uint32_t epbroker_variant_info_opset(const epbroker_variant_info* v);
EPBROKER_C_API uint64_t epbroker_variant_info_size(const epbroker_variant_info* v); /* bytes */
/* 1 when the store has it (of this version), else 0. */
EPBROKER_C_API int epbroker_variant_info_installed(const epbroker_variant_info* v);

typedef struct epbroker_model_options epbroker_model_options;
typedef struct epbroker_model_lease epbroker_model_lease;

/* Defaults: the variant planned for this machine, the newest valid version,
 * EPBROKER_POLICY_DEFAULT, no ORT version check, download. NULL when out of memory. */
EPBROKER_C_API epbroker_model_options* epbroker_model_options_new(void);
EPBROKER_C_API void epbroker_model_options_free(epbroker_model_options* options);
/* A variant id ("fp32"), installed whatever this machine has; NULL or "" = the one
 * planned for this machine. */
EPBROKER_C_API epbroker_status epbroker_model_options_set_variant(epbroker_model_options* options,
                                                                  const char* variant);
/* NULL or "" = the newest valid version. */
EPBROKER_C_API epbroker_status epbroker_model_options_set_version(epbroker_model_options* options,
                                                                  const char* version);
/* The policy the variant is planned with. A value outside epbroker_policy makes
 * epbroker_ensure_model() fail with EPBROKER_ERR_INVALID_ARGUMENT (this setter cannot
 * report it). */
EPBROKER_C_API void epbroker_model_options_set_policy(epbroker_model_options* options,
                                                      epbroker_policy policy);
/* The application's ONNX Runtime version ("1.30.0"); NULL or "" = not checked. */
EPBROKER_C_API epbroker_status
epbroker_model_options_set_ort_version(epbroker_model_options* options, const char* version);
/* Non-zero (the default): install the variant when it is not installed; 0: lease it
 * only if installed, else EPBROKER_ERR_NOT_FOUND. */
EPBROKER_C_API void epbroker_model_options_set_download(epbroker_model_options* options,
                                                        int download);

/* epbroker::Client::ensure_model: installs a variant of model `name` unless installed
 * (waiting for its job as epbroker_ensure_ready does; progress kind "model", target
 * "NAME/VARIANT") and leases it. `options` NULL: the defaults. `progress` and `cancel`
 * may be NULL. `out` is required: checked before anything is installed or leased.
 * EPBROKER_ERR_NOT_FOUND: no such model, version or variant (or, without download,
 * not installed); EPBROKER_ERR_INCOMPATIBLE: no variant fits; EPBROKER_ERR_BUSY:
 * installing for another caller. */
EPBROKER_C_API epbroker_status epbroker_ensure_model(epbroker_client* client, const char* name,
                                                     const epbroker_model_options* options,
                                                     epbroker_progress_fn progress, void* user,
                                                     const epbroker_cancel* cancel,
                                                     epbroker_model_lease** out);
/* What the lease grants; still readable after release. */
EPBROKER_C_API const char* epbroker_model_lease_name(const epbroker_model_lease* l);
EPBROKER_C_API const char* epbroker_model_lease_version(const epbroker_model_lease* l);
EPBROKER_C_API const char* epbroker_model_lease_variant(const epbroker_model_lease* l);
/* The variant's directory in the store (absolute). */
EPBROKER_C_API const char* epbroker_model_lease_path(const epbroker_model_lease* l);
/* Its main file (absolute): the one to open with ONNX Runtime. */
EPBROKER_C_API const char* epbroker_model_lease_main(const epbroker_model_lease* l);
/* Every file of the variant, relative to the path (the main file among them). */
EPBROKER_C_API size_t epbroker_model_lease_file_count(const epbroker_model_lease* l);
EPBROKER_C_API const char* epbroker_model_lease_file(const epbroker_model_lease* l, size_t i);
/* What the variant is built for: device types and EP names (none: any). */
EPBROKER_C_API size_t epbroker_model_lease_device_count(const epbroker_model_lease* l);
EPBROKER_C_API const char* epbroker_model_lease_device(const epbroker_model_lease* l, size_t i);
EPBROKER_C_API size_t epbroker_model_lease_ep_count(const epbroker_model_lease* l);
EPBROKER_C_API const char* epbroker_model_lease_ep(const epbroker_model_lease* l, size_t i);
/* The D-Bus path of the lease's session; "" once released. */
EPBROKER_C_API const char* epbroker_model_lease_session_path(const epbroker_model_lease* l);
/* 1 until released, else 0. */
EPBROKER_C_API int epbroker_model_lease_active(const epbroker_model_lease* l);
/* Ends the lease now; the lease is released afterwards even when this fails. */
EPBROKER_C_API epbroker_status epbroker_model_lease_release(epbroker_model_lease* l);
/* Releases (errors ignored) and frees. */
EPBROKER_C_API void epbroker_model_lease_free(epbroker_model_lease* l);

typedef struct epbroker_removed_model epbroker_removed_model;
typedef struct epbroker_removed_model_list epbroker_removed_model_list;

/* epbroker::Client::remove_model: removes the installed variants of model `name` of
 * `version` and `variant` (each NULL or "" = every installed one). A leased variant is
 * refused with EPBROKER_ERR_BUSY and nothing is removed, unless `now` is non-zero.
 * EPBROKER_ERR_NOT_FOUND unless something matches. `out` (may be NULL) receives each
 * variant removed. */
EPBROKER_C_API epbroker_status epbroker_remove_model(epbroker_client* client, const char* name,
                                                     const char* version, const char* variant,
                                                     int now, epbroker_removed_model_list** out);
EPBROKER_C_API size_t epbroker_removed_model_list_size(const epbroker_removed_model_list* list);
EPBROKER_C_API const epbroker_removed_model* epbroker_removed_model_list_get(
    const epbroker_removed_model_list* list, size_t i);
EPBROKER_C_API void epbroker_removed_model_list_free(epbroker_removed_model_list* list);
EPBROKER_C_API const char* epbroker_removed_model_name(const epbroker_removed_model* r);
EPBROKER_C_API const char* epbroker_removed_model_version(const epbroker_removed_model* r);
EPBROKER_C_API const char* epbroker_removed_model_variant(const epbroker_removed_model* r);

#ifdef __cplusplus
}
#endif

#endif /* EPBROKER_EPBROKER_H */
