#include "daemon/core/history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "catalog/atomic_file.hpp"
#include "catalog/json_fields.hpp"
#include "catalog/unique_fd.hpp"

namespace epbrokerd::core {

namespace fs = std::filesystem;
using catalog::Errc;
using nlohmann::json;
namespace cj = catalog::json;

std::string to_line(const HistoryEntry& e) {
  json j = {
      {"time", e.time},     {"uid", e.uid},      {"action", common::history_action_name(e.action)},
      {"name", e.name},     {"from", e.from},    {"to", e.to},
      {"result", e.result}, {"reason", e.reason}};
  return j.dump();
}

catalog::Result<HistoryEntry> parse_history_line(std::string_view line) {
  auto doc = cj::parse_strict(line, "history entry", 64 << 10);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object()) return cj::wrong_type("", "object", *doc);
  HistoryEntry e;
  const json& j = *doc;
  if (!j.contains("time") || !j["time"].is_number_integer()) {
    return cj::field_error("time", "expected integer");
  }
  e.time = j["time"].get<std::int64_t>();
  auto uid = cj::uint_field(j, "uid", "");
  if (!uid) return std::unexpected(uid.error());
  e.uid = static_cast<std::uint32_t>(*uid);
  auto action = cj::string_field(j, "action", "");
  if (!action) return std::unexpected(action.error());
  auto parsed = common::parse_history_action(*action);
  if (!parsed) return cj::field_error("action", "unknown action '" + *action + "'");
  e.action = *parsed;
  for (auto [key, out] :
       {std::pair{"name", &e.name}, std::pair{"from", &e.from}, std::pair{"to", &e.to},
        std::pair{"result", &e.result}, std::pair{"reason", &e.reason}}) {
    auto s = cj::string_field(j, key, "");
    if (!s) return std::unexpected(s.error());
    *out = std::move(*s);
  }
  return e;
}

History::History(fs::path state_dir, std::uint64_t max_bytes)
    : path_(std::move(state_dir) / kHistoryFileName), max_bytes_(max_bytes) {}

catalog::Result<void> History::append(const HistoryEntry& e) {
  std::string line = to_line(e) + "\n";
  std::lock_guard lock(mu_);
  // 1. Bounded: past the limit, the newest half is kept (atomically replaced).
  std::error_code ec;
  if (const auto size = fs::file_size(path_, ec); !ec && size + line.size() > max_bytes_) {
    auto text = catalog::read_file(path_, size + 1);
    if (text) {
      std::size_t cut = text->size() / 2;
      cut = text->find('\n', cut);
      const std::string kept = cut == std::string::npos ? "" : text->substr(cut + 1);
      if (auto ok = catalog::atomic_write_file(path_, kept); !ok) return ok;
    }
  }
  // 2. One write of the whole line with O_APPEND: a crash leaves at most a torn
  //    last line, which reading skips. After such a line, a newline first, so
  //    the torn line does not swallow this one.
  catalog::UniqueFd fd(::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (fd.valid()) {
    char last = '\n';
    if (const off_t end = ::lseek(fd.get(), 0, SEEK_END); end > 0) {
      if (::pread(fd.get(), &last, 1, end - 1) == 1 && last != '\n') line.insert(0, "\n");
    }
  }
  if (!fd.valid()) {
    const int err = errno;
    return catalog::fail(catalog::errno_code(err),
                         "open " + path_.string() + ": " + std::strerror(err));
  }
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      return catalog::fail(catalog::errno_code(err),
                           "write " + path_.string() + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd.get()) != 0) {
    const int err = errno;
    return catalog::fail(catalog::errno_code(err),
                         "fdatasync " + path_.string() + ": " + std::strerror(err));
  }
  return {};
}

std::vector<HistoryEntry> History::read(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::vector<HistoryEntry> out;
  std::error_code ec;
  const auto size = fs::file_size(path_, ec);
  if (ec) return out;
  auto text = catalog::read_file(path_, size + 1);
  if (!text) return out;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    auto e = parse_history_line(line);
    if (!e) continue;  // a torn line
    if (!name.empty() && e->name != name) continue;
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace epbrokerd::core
