#include "daemon/hardware/libraries.hpp"

#include <glob.h>
#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "catalog/text.hpp"

namespace epbrokerd::hardware {

namespace {

namespace fs = std::filesystem;

std::string this_arch() {
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.machine) : std::string();
}

// "x86_64" -> "x86_64-linux-gnu": Debian's multiarch directory name.
std::string triplet(const std::string& arch) {
  if (arch == "armv7l") return "arm-linux-gnueabihf";
  return arch.empty() ? std::string() : arch + "-linux-gnu";
}

// An ld.so.conf line without its comment and the blanks around it.
std::string strip_comment(const std::string& line) {
  return std::string(catalog::trim(std::string_view(line).substr(0, line.find('#')), " \t\r"));
}

std::string read_bounded(const fs::path& p, std::size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::string s(max_bytes, '\0');
  in.read(s.data(), static_cast<std::streamsize>(max_bytes));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

class ConfReader {
 public:
  ConfReader(const fs::path& root, std::vector<std::string>& dirs) : root_(root), dirs_(dirs) {}

  // `conf`: an absolute path inside the root ("/etc/ld.so.conf").
  void read(const std::string& conf, int depth) {
    if (depth > LibraryLocator::kMaxIncludeDepth) return;
    std::istringstream lines(
        read_bounded(root_ / fs::path(conf).relative_path(), LibraryLocator::kMaxConfBytes));
    const std::string here = fs::path(conf).parent_path().string();
    for (std::string line; std::getline(lines, line);) {
      line = strip_comment(line);
      if (line.empty()) continue;
      if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
        std::istringstream patterns(line.substr(8));
        for (std::string pattern; patterns >> pattern;) {
          if (pattern.front() != '/') pattern = here + "/" + pattern;
          for (const auto& file : expand(pattern)) read(file, depth + 1);
        }
      } else if (line.front() == '/') {
        add(line.substr(0, line.find_first_of(" \t=:")));  // old "dir=TYPE" forms too
      }
    }
  }

  void add(std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dirs_.size() >= LibraryLocator::kMaxDirs) return;
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
  }

 private:
  // The files inside the root matching `pattern` (absolute inside the root),
  // sorted, as absolute paths inside the root.
  std::vector<std::string> expand(const std::string& pattern) const {
    std::vector<std::string> out;
    const std::string prefix = root_.string() == "/" ? "" : root_.string();
    glob_t g{};
    if (::glob((prefix + pattern).c_str(), 0, nullptr, &g) == 0) {
      for (std::size_t i = 0; i < g.gl_pathc && out.size() < LibraryLocator::kMaxDirs; ++i) {
        out.emplace_back(std::string(g.gl_pathv[i]).substr(prefix.size()));
      }
    }
    ::globfree(&g);
    return out;
  }

  const fs::path& root_;
  std::vector<std::string>& dirs_;
};

}  // namespace

LibraryLocator::LibraryLocator(std::filesystem::path root, std::string arch)
    : root_(std::move(root)), arch_(arch.empty() ? this_arch() : std::move(arch)) {}

std::vector<std::string> LibraryLocator::directories() const {
  std::vector<std::string> dirs;
  ConfReader conf(root_, dirs);
  conf.read("/etc/ld.so.conf", 0);
  if (const std::string t = triplet(arch_); !t.empty()) {
    conf.add("/lib/" + t);
    conf.add("/usr/lib/" + t);
  }
  for (const char* d : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) conf.add(d);
  return dirs;
}

bool LibraryLocator::has(const std::string& soname) const {
  if (soname.empty() || soname == "." || soname == ".." || soname.find('/') != std::string::npos) {
    return false;
  }
  for (const auto& dir : directories()) {
    std::error_code ec;
    if (fs::is_regular_file(root_ / fs::path(dir).relative_path() / soname, ec)) return true;
  }
  return false;
}

}  // namespace epbrokerd::hardware
