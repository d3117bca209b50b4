#include "client/ep/options.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace epbroker::meta_ep {

namespace {

std::string bad(const char* var, std::string_view value, std::string_view accepted) {
  return std::string(var) + "='" + std::string(value) + "' is not " + std::string(accepted);
}

// A package name as the daemon accepts one: [a-z0-9][a-z0-9._-]{0,63}
// (catalog/metadata_fields.hpp; the daemon checks it again).
bool package_name(std::string_view s) {
  const auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 64 || !lower_alnum(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return lower_alnum(c) || c == '.' || c == '_' || c == '-'; });
}

// "a,b" -> {"a", "b"}: at most 64 package names, no spaces, none empty. Whether
// a catalog offers them is the daemon's answer (entry.cpp names the absent ones).
std::expected<std::vector<std::string>, std::string> split_names(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    if (!package_name(item) || out.size() == 64) {
      return std::unexpected(bad(kProvidersVar, text,
                                 "a comma-separated list of at most 64 package names "
                                 "([a-z0-9][a-z0-9._-]*, no spaces)"));
    }
    out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::expected<Options, std::string> read_options(
    const std::function<const char*(const char*)>& get) {
  Options out;
  if (const char* v = get(kPolicyVar); v != nullptr && *v != '\0') {
    const auto policy = parse_policy(v);
    if (!policy) {
      return std::unexpected(bad(kPolicyVar, v,
                                 "a policy (default, prefer_cpu, prefer_gpu, prefer_npu, "
                                 "max_performance, max_efficiency, min_overall_power)"));
    }
    out.policy = *policy;
  }
  if (const char* v = get(kProvidersVar); v != nullptr && *v != '\0') {
    auto names = split_names(v);
    if (!names) return std::unexpected(names.error());
    out.providers = std::move(*names);
  }
  if (const char* v = get(kInstallVar); v != nullptr && *v != '\0') {
    const std::string_view s(v);
    if (s != "0" && s != "1") return std::unexpected(bad(kInstallVar, s, "0 or 1"));
    out.install = s == "1";
  }
  out.timeout = out.install ? kDefaultInstallTimeout : kDefaultTimeout;
  if (const char* v = get(kTimeoutVar); v != nullptr && *v != '\0') {
    const std::string_view s(v);
    long long ms = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), ms);
    if (ec != std::errc() || end != s.data() + s.size() || ms < 1 || ms > kMaxTimeout.count()) {
      return std::unexpected(bad(kTimeoutVar, s, "a number of milliseconds from 1 to 3600000"));
    }
    out.timeout = std::chrono::milliseconds(ms);
  }
  return out;
}

}  // namespace epbroker::meta_ep
