// remotes.d/*.conf: the [remote] section of each file, and the remotes together:
// file order, unique names, priority order (sections.hpp).
#include "daemon/config/sections.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "catalog/text.hpp"
#include "daemon/config/values.hpp"

namespace epbrokerd::config::detail {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

// The range of `priority` (docs/configuration.md); its default is Remote::priority's.
constexpr int kMinPriority = -1000;
constexpr int kMaxPriority = 1000;

// One `redirect_hosts` entry: "host" or "host:port", the host as URLs take it
// (letters, digits, '-', '.', '_', or an IPv6 literal in brackets), the port
// 1..65535. Returned in lower case. Nullopt otherwise (a scheme, a path, a
// wildcard). net/redirect_policy.cpp reads the same syntax.
std::optional<std::string> redirect_host(std::string_view s) {
  std::string_view host = s;
  std::string_view port;
  bool has_port = false;
  if (s.starts_with('[')) {
    const std::size_t close = s.find(']');
    if (close == std::string_view::npos || close < 2) return std::nullopt;
    host = s.substr(0, close + 1);
    const bool ok = std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
    if (!ok) return std::nullopt;
    const std::string_view after = s.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = after.substr(1);
      has_port = true;
    }
  } else {
    if (const std::size_t colon = s.rfind(':'); colon != std::string_view::npos) {
      host = s.substr(0, colon);
      port = s.substr(colon + 1);
      has_port = true;
    }
    const bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    });
    if (!ok) return std::nullopt;
  }
  if (has_port) {
    const auto p = parse_uint(port);
    if (!p || *p == 0 || *p > 65535) return std::nullopt;
  }
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return out;
}

// `redirect_hosts`: entries separated by blanks (as `mirrors`), at most
// kMaxRedirectHosts, none twice.
Result<std::vector<std::string>> parse_redirect_hosts(const Entry& e, const std::string& file) {
  std::vector<std::string> out;
  std::string_view rest = e.value;
  while (!(rest = trim(rest)).empty()) {
    const std::size_t end = rest.find_first_of(" \t");
    const std::string_view one = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    auto host = redirect_host(one);
    if (!host) {
      return fail(Errc::bad_field, at_key(file, e) +
                                       "expected host or host:port (no scheme, path "
                                       "or wildcard), got " +
                                       quote_for_message(one, 200));
    }
    if (std::find(out.begin(), out.end(), *host) != out.end()) {
      return fail(Errc::bad_field, at_key(file, e) + quote_for_message(one, 200) + " listed twice");
    }
    if (out.size() == kMaxRedirectHosts) {
      return fail(Errc::bad_field,
                  at_key(file, e) + "more than " + std::to_string(kMaxRedirectHosts) + " hosts");
    }
    out.push_back(std::move(*host));
  }
  return out;
}

// One remotes.d file's [remote] section; `source` is left to the caller.
Result<Remote> parse_remote_section(const Section& section, const std::string& file,
                                    const fs::path& config_dir) {
  const Entry* name = nullptr;
  const Entry* metadata_url = nullptr;
  const Entry* targets_url = nullptr;
  const Entry* mirrors = nullptr;
  const Entry* trusted_root = nullptr;
  const Entry* ca_file = nullptr;
  Remote r;
  for (const Entry& e : section.entries) {
    const std::string prefix = at_key(file, e);
    if (e.key == "name") {
      name = &e;
    } else if (e.key == "metadata_url") {
      metadata_url = &e;
    } else if (e.key == "targets_url") {
      targets_url = &e;
    } else if (e.key == "mirrors") {
      mirrors = &e;
    } else if (e.key == "trusted_root") {
      trusted_root = &e;
    } else if (e.key == "ca_file") {
      ca_file = &e;
    } else if (e.key == "allow_http") {
      auto v = parse_bool(e.value, prefix);
      if (!v) return std::unexpected(v.error());
      r.allow_http = *v;
    } else if (e.key == "enabled") {
      auto v = parse_bool(e.value, prefix);
      if (!v) return std::unexpected(v.error());
      r.enabled = *v;
    } else if (e.key == "redirect_hosts") {
      auto v = parse_redirect_hosts(e, file);
      if (!v) return std::unexpected(v.error());
      r.redirect_hosts = std::move(*v);
    } else if (e.key == "priority") {
      auto v = int_in(e.value, kMinPriority, kMaxPriority, prefix);
      if (!v) return std::unexpected(v.error());
      r.priority = *v;
    } else {
      return fail(Errc::bad_field, prefix + "unknown key in [remote]");
    }
  }
  const std::pair<const Entry*, std::string_view> required[] = {{name, "name"},
                                                                {metadata_url, "metadata_url"},
                                                                {targets_url, "targets_url"},
                                                                {trusted_root, "trusted_root"}};
  for (const auto& [entry, key] : required) {
    if (entry == nullptr) {
      return fail(Errc::bad_field,
                  at(file, section.line) + std::string(key) + ": missing (required in [remote])");
    }
  }

  if (!is_remote_name(name->value)) {
    return fail(Errc::bad_field, at_key(file, *name) + "expected [a-z0-9][a-z0-9-]{0,31}, got " +
                                     quote_for_message(name->value));
  }
  r.name = name->value;

  const auto url = [&](const Entry& e) -> Result<std::string> {
    auto u = check_url(e.value, r.allow_http);
    if (!u) return fail(Errc::bad_field, at_key(file, e) + u.error().message);
    return u;
  };
  auto m = url(*metadata_url);
  if (!m) return std::unexpected(m.error());
  auto t = url(*targets_url);
  if (!t) return std::unexpected(t.error());
  r.primary = Mirror{std::move(*m), std::move(*t)};

  if (mirrors != nullptr) {
    std::set<std::string> seen;
    std::string_view rest = mirrors->value;
    while (!(rest = trim(rest)).empty()) {
      const std::size_t end = rest.find_first_of(" \t");
      const std::string_view one = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
      auto base = check_url(one, r.allow_http);
      if (!base) return fail(Errc::bad_field, at_key(file, *mirrors) + base.error().message);
      if (!seen.insert(*base).second) {
        return fail(Errc::bad_field, at_key(file, *mirrors) + "mirror " +
                                         quote_for_message(one, 200) + " listed twice");
      }
      if (r.mirrors.size() == kMaxMirrors) {
        return fail(Errc::bad_field, at_key(file, *mirrors) + "more than " +
                                         std::to_string(kMaxMirrors) + " mirrors");
      }
      r.mirrors.push_back(Mirror{*base + "metadata/", *base + "targets/"});
    }
  }

  // Paths: relative ones against config_dir.
  const auto path = [&](const Entry& e) {
    return parse_path(e.value, config_dir, at_key(file, e));
  };
  auto root = path(*trusted_root);
  if (!root) return std::unexpected(root.error());
  r.trusted_root = std::move(*root);
  if (ca_file != nullptr) {
    auto ca = path(*ca_file);
    if (!ca) return std::unexpected(ca.error());
    r.ca_file = std::move(*ca);
  }
  return r;
}

// The *.conf files of remotes.d (not hidden ones), in name order; none if remotes.d
// does not exist.
Result<std::vector<fs::path>> list_remote_files(const fs::path& remotes_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  const fs::file_status st = fs::status(remotes_dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return fail(Errc::io, remotes_dir.string() + ": " + ec.message());
  }
  if (!fs::exists(st)) return files;
  if (!fs::is_directory(st)) return fail(Errc::io, remotes_dir.string() + ": not a directory");
  fs::directory_iterator it(remotes_dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    if (fname.starts_with('.') || !fname.ends_with(".conf")) continue;
    if (files.size() == kMaxRemoteFiles) {
      return fail(Errc::too_many, remotes_dir.string() + ": more than " +
                                      std::to_string(kMaxRemoteFiles) + " *.conf files");
    }
    files.push_back(it->path());
  }
  if (ec) return fail(Errc::io, remotes_dir.string() + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Result<std::vector<Remote>> load_remotes(const fs::path& config_dir) {
  auto files = list_remote_files(config_dir / kRemotesDirName);
  if (!files) return std::unexpected(files.error());
  std::vector<Remote> remotes;
  std::map<std::string, std::string> where_defined;  // name -> "file:line"
  for (const fs::path& f : *files) {
    const std::string file = f.string();
    auto bytes = read_config_file(f);
    if (!bytes) return std::unexpected(bytes.error());
    if (!*bytes) continue;  // removed while we listed
    auto sections = parse_ini(**bytes, file, {"remote"}, "a remotes.d file has one [remote]");
    if (!sections) return std::unexpected(sections.error());
    if (sections->empty()) {
      return fail(Errc::bad_field, at(file, 1) + "no [remote] section in this file");
    }
    auto remote = parse_remote_section(sections->front(), file, config_dir);
    if (!remote) return std::unexpected(remote.error());
    const Section& s = sections->front();
    const auto name_entry = std::find_if(s.entries.begin(), s.entries.end(),
                                         [](const Entry& e) { return e.key == "name"; });
    const std::string here = at(file, name_entry->line);
    const auto [prev, inserted] =
        where_defined.emplace(remote->name, here.substr(0, here.size() - 2));
    if (!inserted) {
      return fail(Errc::bad_field, here + "name: remote " + quote_for_message(remote->name) +
                                       " already defined at " + prev->second);
    }
    remote->source = f;
    remotes.push_back(std::move(*remote));
  }
  std::stable_sort(remotes.begin(), remotes.end(), [](const Remote& a, const Remote& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.name < b.name;
  });
  return remotes;
}

}  // namespace epbrokerd::config::detail
