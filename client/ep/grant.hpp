// The broker's answer for one registration of libepbroker_ep.so: a session (the
// lease) and, for each provider it considered, the library to load or why not.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "client/ep/options.hpp"
#include "client/ep/ort_glue.hpp"

namespace epbroker::meta_ep {

// A granted provider this ORT may load.
struct Usable {
  std::string name;          // package name: the registration name its library is given
  std::string library_path;  // in the store (libepbroker checked it)
  std::string version;
  std::vector<std::string> ep_names;
};

struct Grant {
  Session session;  // leases every `usable` library's files while it lives
  std::vector<Usable> usable;
  std::vector<SkippedProvider> skipped;  // with <epbroker/ort.hpp>'s codes and reasons
};

// Connects to the broker ($EPBROKER_BUS_ADDRESS, else the system bus), installs
// what is missing when options.install (progress on stderr), and requests a
// session for an app whose ONNX Runtime is `ort_version`, with options.policy and
// options.providers; each provider is then usable or skipped by the rule of
// <epbroker/ort.hpp> (detail::unusable).
//
// Bounded: the conversation runs on a thread of its own and the caller waits at
// most options.timeout. Past it the caller gets an error, the thread's install
// wait is cancelled, and whatever session it still gets is released on that
// thread (the library is linked -z nodelete, so its code outlives an unload).
//
// Errors (a sentence for the log): no bus or daemon, a refusal (with the
// org.epbroker.Error name), an unreadable ORT version, the timeout.
std::expected<Grant, std::string> request_grant(const Options& options,
                                                const std::string& ort_version);

}  // namespace epbroker::meta_ep
