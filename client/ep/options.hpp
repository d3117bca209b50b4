// What libepbroker_ep.so asks the broker for, read from the environment of the
// process that loads it (docs/meta-ep.md lists the variables). ORT's
// RegisterExecutionProviderLibrary takes only a name and a path, so the
// environment is the one channel every language binding shares.
#pragma once

#include <chrono>
#include <expected>
#include <functional>
#include <string>
#include <vector>

#include <epbroker/client.hpp>

namespace epbroker::meta_ep {

inline constexpr const char* kPolicyVar = "EPBROKER_EP_POLICY";        // a policy word
inline constexpr const char* kProvidersVar = "EPBROKER_EP_PROVIDERS";  // "a,b"; unset = all
inline constexpr const char* kInstallVar = "EPBROKER_EP_INSTALL";      // "1" installs
inline constexpr const char* kTimeoutVar = "EPBROKER_EP_TIMEOUT_MS";   // overall bound

// Bounds of the whole conversation with the daemon (connect, optional installs,
// RequestSession): without installs a daemon that is up answers in milliseconds,
// and activation takes about a second; installs are downloads.
inline constexpr std::chrono::milliseconds kDefaultTimeout{10'000};
inline constexpr std::chrono::milliseconds kDefaultInstallTimeout{600'000};
inline constexpr std::chrono::milliseconds kMaxTimeout{3'600'000};

struct Options {
  Policy policy = Policy::default_policy;
  std::vector<std::string> providers;  // package names; empty = every compatible one
  bool install = false;                // install missing ones first, progress on stderr
  std::chrono::milliseconds timeout = kDefaultTimeout;
};

// Reads the variables through `get` (nullptr = unset). An unreadable value is an
// error naming the variable and what it accepts; nothing is guessed.
std::expected<Options, std::string> read_options(
    const std::function<const char*(const char*)>& get);

}  // namespace epbroker::meta_ep
