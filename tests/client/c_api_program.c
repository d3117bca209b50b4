/* A C application of libepbroker's C API, built by client_c_api_integration against the
 * installed headers and library (cc -std=c99 -Wall -Wextra -Wpedantic -Werror and
 * `pkg-config --cflags --libs epbroker`), then run against a private bus.
 *
 * Usage: c_api_program BUS_ADDRESS PACKAGE
 * Lists the devices and providers, makes PACKAGE ready (printing its progress), leases
 * it in a session and prints each leased provider's library path, releases, and
 * prints the error an unknown package gives. Exit status 0 when every step did what
 * it should, 1 otherwise (with the reason on stderr). */
#include <epbroker/epbroker.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* What the progress callback counts, through its `user` pointer. */
struct progress_seen {
  unsigned reports;
  epbroker_job_state last;
};

static void on_progress(const epbroker_progress* p, void* user) {
  struct progress_seen* seen = (struct progress_seen*)user;
  ++seen->reports;
  seen->last = epbroker_progress_state(p);
  printf("progress %s %s %s %" PRIu64 "/%" PRIu64 "\n", epbroker_progress_kind(p),
         epbroker_progress_target(p), epbroker_progress_state_name(p),
         epbroker_progress_bytes_done(p), epbroker_progress_bytes_total(p));
}

static int failed(const char* what, epbroker_status status) {
  fprintf(stderr, "%s: %s (%d): %s\n", what, epbroker_status_name(status), (int)status,
          epbroker_last_error_message());
  return 1;
}

static int list(epbroker_client* client) {
  epbroker_device_list* devices;
  epbroker_provider_list* providers;
  size_t i;
  epbroker_status s = epbroker_devices(client, &devices);
  if (s != EPBROKER_OK) return failed("devices", s);
  for (i = 0; i < epbroker_device_list_size(devices); ++i) {
    const epbroker_device* d = epbroker_device_list_get(devices, i);
    printf("device %s %s %s\n", epbroker_device_id(d), epbroker_device_type(d),
           epbroker_device_name(d));
  }
  epbroker_device_list_free(devices);

  s = epbroker_providers(client, &providers);
  if (s != EPBROKER_OK) return failed("providers", s);
  for (i = 0; i < epbroker_provider_list_size(providers); ++i) {
    const epbroker_provider* p = epbroker_provider_list_get(providers, i);
    printf("provider %s %s %s\n", epbroker_provider_name(p), epbroker_provider_version(p),
           epbroker_provider_state_name(p));
  }
  epbroker_provider_list_free(providers);
  return 0;
}

static int lease(epbroker_client* client, const char* package) {
  epbroker_session_options* options = epbroker_session_options_new();
  epbroker_session* session;
  epbroker_status s;
  size_t i;
  if (options == NULL) return failed("session options", EPBROKER_ERR_NO_MEMORY);
  epbroker_session_options_set_policy(options, EPBROKER_POLICY_PREFER_CPU);
  s = epbroker_session_options_add_provider(options, package);
  if (s == EPBROKER_OK) s = epbroker_request_session(client, options, &session);
  epbroker_session_options_free(options);
  if (s != EPBROKER_OK) return failed("request_session", s);
  printf("session %s\n", epbroker_session_path(session));
  for (i = 0; i < epbroker_session_provider_count(session); ++i) {
    const epbroker_provider* p = epbroker_session_provider(session, i);
    if (epbroker_provider_state_of(p) == EPBROKER_PROVIDER_READY) {
      printf("leased %s %s\n", epbroker_provider_name(p), epbroker_provider_library_path(p));
    }
  }
  s = epbroker_session_release(session);
  epbroker_session_free(session);
  if (s != EPBROKER_OK) return failed("release", s);
  printf("released\n");
  return 0;
}

int main(int argc, char** argv) {
  epbroker_client* client;
  epbroker_provider* ready;
  struct progress_seen seen = {0, EPBROKER_JOB_UNKNOWN};
  epbroker_status s;
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: %s BUS_ADDRESS PACKAGE\n", argv[0]);
    return 2;
  }
  printf("libepbroker %s\n", epbroker_version());
  s = epbroker_client_new(argv[1], &client);
  if (s != EPBROKER_OK) return failed("connect", s);

  rc = list(client);
  if (rc == 0) {
    s = epbroker_ensure_ready(client, argv[2], on_progress, &seen, NULL, &ready);
    if (s != EPBROKER_OK) {
      rc = failed("ensure_ready", s);
    } else {
      printf("ready %s %s after %u reports\n", epbroker_provider_name(ready),
             epbroker_provider_library_path(ready), seen.reports);
      epbroker_provider_free(ready);
      if (seen.last != EPBROKER_JOB_DONE) {
        fprintf(stderr, "the last progress report is not done\n");
        rc = 1;
      }
    }
  }
  if (rc == 0) rc = lease(client, argv[2]);
  if (rc == 0) {
    ready = NULL;
    s = epbroker_ensure_ready(client, "no-such-package", NULL, NULL, NULL, &ready);
    printf("error %s %d %s: %s\n", epbroker_status_name(s), (int)s, epbroker_last_error_bus_name(),
           epbroker_last_error_message());
    if (s != EPBROKER_ERR_NOT_FOUND || ready != NULL) {
      fprintf(stderr, "an unknown package gave %s\n", epbroker_status_name(s));
      rc = 1;
    }
  }
  epbroker_client_free(client);
  return rc;
}
