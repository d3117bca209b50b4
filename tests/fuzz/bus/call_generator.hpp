// The bus fuzzer's calls (tests/fuzz/bus_fuzz.cpp): seeded, built as raw sd-bus
// messages so any signature can be sent. What it sends, by weight per 1,000:
//   250 RequestSession with random a{sv} options: known keys with right or wrong
//       types, valid or junk policies, ort_versions and provider lists, a models
//       a{ss} (model names -> variant ids, valid-looking or hostile, rarely more
//       than the 16 allowed), unknown keys; download rarely true
//   150 Release: the calling connection's own session mostly, else another
//       connection's, a stale or a made-up session path
//    80 ListProviders / ListDevices; 70 Properties Get/GetAll/Set; 30
//       GetManagedObjects, Introspect, Peer
//    60 EnsureProvider / RemoveProvider: junk, invalid and unknown names mostly,
//       rarely test-ep or bulk-ep (a real install or removal)
//     3 RefreshCatalog / Verify; 20 Job1.Cancel of job paths
//    15 ListModels, 15 EnsureModel, 10 RemoveModel: names as for providers
//       (kModelName, the model bus_fuzz publishes, rarely: a real install or
//       removal), a{sv} options with their keys (variant, version, policy,
//       ort_version, now) of right or wrong types, valid or hostile values, and
//       unknown keys
//   110 a real member with random arguments; 187 a random member, interface and
//       object path with random arguments
// Random arguments: up to 4 complete types, nested up to 3 deep (arrays, dicts,
// structs, variants of every basic type but unix fds), strings valid UTF-8 (sd-bus
// refuses others; the integration test sends those raw). Arrays of up to 300
// elements and strings of up to 8 KiB only at the top level, so a message stays
// far below the bus's 32 MiB limit (also tested on its own, in the integration test).
#pragma once

#include <systemd/sd-bus.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace bus_fuzz {

// The model bus_fuzz publishes (variants kModelVariants), which valid-looking
// model calls name now and then.
inline constexpr const char* kModelName = "fuzz-net";
inline constexpr const char* kModelVariants[] = {"fp32", "int8"};

// What the fuzzer does with a reply.
enum class Kind { other, request_session, release, starts_job };
const char* kind_name(Kind kind);

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  std::uint32_t below(std::uint32_t n) {
    return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng_);
  }

  // Builds the next call into `m` (a new message on `bus`, to org.epbroker.Broker1).
  // `own_session` is one of the calling connection's sessions, if it has any. Sets
  // `kind`, and `object` to the session a Release targets. False if sd-bus would
  // not build it (m is then null).
  bool build(sd_bus* bus, const std::string* own_session, sd_bus_message*& m, Kind& kind,
             std::string& object);

  // A session granted to some connection: a target for the others' Releases.
  void known_session(std::string path);
  // A job path a call returned (Cancel targets up to the newest one seen).
  void known_job(const std::string& path);

 private:
  std::string random_string(std::uint32_t long_max = 8192);
  std::string random_name();
  std::string random_model_name();
  std::string random_variant();
  std::string random_member();
  std::string random_path();
  std::string session_path(const std::string* own);
  std::string job_path();
  std::string random_type(int depth);
  std::string random_signature();
  int append_basic(sd_bus_message* m, char type, int depth);
  int append(sd_bus_message* m, std::string_view type, int depth);
  int append_args(sd_bus_message* m);
  int append_options(sd_bus_message* m);
  // RequestSession's models: a{ss} as a variant's value (the "v" container open).
  int append_models(sd_bus_message* m);
  // a{sv} options of ListModels, EnsureModel or RemoveModel (`member`).
  int append_model_options(sd_bus_message* m, std::string_view member);

  std::mt19937_64 rng_;
  std::vector<std::string> sessions_;  // recent, bounded
  std::uint64_t max_job_ = 0;
};

}  // namespace bus_fuzz
