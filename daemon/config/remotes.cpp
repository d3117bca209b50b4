// remotes.d/*.conf: the [remote] section of each file, and the remotes together:
// file order, unique names, priority order (sections.hpp).
#include "daemon/config/sections.hpp"

#include <algorithm>
#include <map>
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
