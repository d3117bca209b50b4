// The strict INI syntax of epbrokerd's configuration files (ini.hpp).
#include "daemon/config/ini.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "catalog/text.hpp"
#include "daemon/config/config.hpp"

namespace epbrokerd::config::detail {
namespace {

namespace fs = std::filesystem;
using catalog::Errc;
using catalog::fail;
using catalog::quote_for_message;

bool is_key(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '_'; });
}

std::string hex_byte(unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[c >> 4] + kDigits[c & 0xf];
}

}  // namespace

std::string at(const std::string& file, std::size_t line) {
  return file + ":" + std::to_string(line) + ": ";
}

std::string at_key(const std::string& file, const Entry& e) {
  return at(file, e.line) + e.key + ": ";
}

std::string_view trim(std::string_view s) { return catalog::trim(s, " \t"); }

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Result<std::optional<std::string>> read_config_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(Errc::io, path.string() + ": cannot open: " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(Errc::io, path.string() + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return fail(Errc::io, path.string() + ": not a regular file");
  std::string bytes;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::io, path.string() + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > kMaxFileBytes) {
      return fail(Errc::too_large,
                  path.string() + ": larger than " + std::to_string(kMaxFileBytes) + " bytes");
    }
  }
  return std::optional<std::string>(std::move(bytes));
}

Result<std::vector<Section>> parse_ini(std::string_view text, const std::string& file,
                                       std::initializer_list<std::string_view> allowed,
                                       std::string_view hint) {
  std::vector<Section> sections;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    const std::string loc = at(file, line_no);

    if (raw.size() > kMaxLineBytes) {
      return fail(Errc::bad_field,
                  loc + "line longer than " + std::to_string(kMaxLineBytes) + " bytes");
    }
    for (const char ch : raw) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '\r') {
        return fail(Errc::bad_field, loc + "carriage return (CRLF line ends are not accepted)");
      }
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return fail(Errc::bad_field, loc + "control character " + hex_byte(c));
      }
    }
    if (!catalog::utf8_length(raw)) return fail(Errc::bad_field, loc + "not valid UTF-8");

    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;

    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        return fail(Errc::bad_field, loc + "malformed section header " + quote_for_message(line));
      }
      const std::string_view name = line.substr(1, line.size() - 2);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string msg =
            loc + "unknown section " + quote_for_message("[" + std::string(name) + "]");
        if (!hint.empty()) msg += std::string(" (") + std::string(hint) + ")";
        return fail(Errc::bad_field, msg);
      }
      for (const Section& s : sections) {
        if (s.name == name) {
          return fail(Errc::bad_field, loc + "section [" + std::string(name) +
                                           "] given twice (first at line " +
                                           std::to_string(s.line) + ")");
        }
      }
      sections.push_back(Section{std::string(name), line_no, {}});
      continue;
    }

    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return fail(Errc::bad_field, loc + "expected \"key = value\" or \"[section]\", got " +
                                       quote_for_message(line));
    }
    const std::string_view key = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    if (!is_key(key)) {
      return fail(Errc::bad_field,
                  loc + "invalid key " + quote_for_message(key) + " (expected [a-z0-9_]+)");
    }
    if (sections.empty()) {
      return fail(Errc::bad_field, loc + std::string(key) + ": key outside any section");
    }
    Section& current = sections.back();
    for (const Entry& e : current.entries) {
      if (e.key == key) {
        return fail(Errc::bad_field, loc + std::string(key) +
                                         ": duplicate key (first set at line " +
                                         std::to_string(e.line) + ")");
      }
    }
    current.entries.push_back(Entry{std::string(key), std::string(value), line_no});
  }
  return sections;
}

}  // namespace epbrokerd::config::detail
