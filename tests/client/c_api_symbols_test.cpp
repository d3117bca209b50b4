// libepbroker's exported symbols (client/libepbroker.map): every function
// <epbroker/epbroker.h> declares, and every C++ symbol libepbroker.so.0 exported before
// the C API existed, are exported with version EPBROKER_0.1; the symbols added for
// models, C++ (<epbroker/models.hpp>) and C (the header's models section), with
// EPBROKER_0.2; nothing else is exported (no sdbus-c++, spdlog or standard-library
// symbol).
#include <cxxabi.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* kVersion = "EPBROKER_0.1";

// The C++ ABI of libepbroker.so.0 before the C API (nm -D of that build, less the
// standard library's template instances it exported by accident): mangled names.
constexpr const char* kCxxSymbols[] = {
    "_ZN8epbroker11CancelTokenC1Ev",
    "_ZN8epbroker11CancelTokenC2Ev",
    "_ZN8epbroker12parse_policyESt17basic_string_viewIcSt11char_traitsIcEE",
    "_ZN8epbroker5ErrorC1ENS_4ErrcENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES7_",
    "_ZN8epbroker5ErrorC2ENS_4ErrcENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEES7_",
    "_ZN8epbroker6Client12ensure_readyERKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client12reset_remoteERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client15request_sessionERKNS_14SessionOptionsE",
    "_ZN8epbroker6Client2gcEv",
    "_ZN8epbroker6Client4holdERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client6removeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client6removeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb",
    "_ZN8epbroker6Client6statusEv",
    "_ZN8epbroker6Client6unholdERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client6updateERKSt6vectorINSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEESaIS7_EEbRKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client6verifyERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client6verifyEv",
    "_ZN8epbroker6Client7devicesEv",
    "_ZN8epbroker6Client7historyERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client7installERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_"
    "14InstallOptionsERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client7refreshERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client8rollbackERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZN8epbroker6Client9providersEv",
    "_ZN8epbroker6ClientC1ENS_13ClientOptionsE",
    "_ZN8epbroker6ClientC1EOS0_",
    "_ZN8epbroker6ClientC2ENS_13ClientOptionsE",
    "_ZN8epbroker6ClientC2EOS0_",
    "_ZN8epbroker6ClientD1Ev",
    "_ZN8epbroker6ClientD2Ev",
    "_ZN8epbroker6ClientaSEOS0_",
    "_ZN8epbroker7Session7releaseEv",
    "_ZN8epbroker7SessionC1EOS0_",
    "_ZN8epbroker7SessionC1ESt10shared_ptrINS_6detail10ConnectionEENSt7__cxx1112basic_"
    "stringIcSt11char_traitsIcESaIcEEESt6vectorINS_8ProviderESaISC_EE",
    "_ZN8epbroker7SessionC1Ev",
    "_ZN8epbroker7SessionC2EOS0_",
    "_ZN8epbroker7SessionC2ESt10shared_ptrINS_6detail10ConnectionEENSt7__cxx1112basic_"
    "stringIcSt11char_traitsIcESaIcEEESt6vectorINS_8ProviderESaISC_EE",
    "_ZN8epbroker7SessionC2Ev",
    "_ZN8epbroker7SessionD1Ev",
    "_ZN8epbroker7SessionD2Ev",
    "_ZN8epbroker7SessionaSEOS0_",
    "_ZN8epbroker8is_finalENS_8JobStateE",
    "_ZN8epbroker9errc_nameENS_4ErrcE",
    "_ZN8epbroker9to_stringENS_13ProviderStateE",
    "_ZN8epbroker9to_stringENS_6PolicyE",
    "_ZN8epbroker9to_stringENS_8JobStateE",
    "_ZNK8epbroker11CancelToken6cancelEv",
    "_ZNK8epbroker11CancelToken9cancelledEv",
    "_ZNK8epbroker6Client11bus_addressB5cxx11Ev",
    "_ZNK8epbroker7Session15ready_providersEv",
    "_ZTIN8epbroker5ErrorE",
    "_ZTSN8epbroker5ErrorE",
    "_ZTVN8epbroker5ErrorE",
};

// The C++ symbols added in EPBROKER_0.2 (models): mangled names.
constexpr const char* kVersion02 = "EPBROKER_0.2";
constexpr const char* kCxxSymbols02[] = {
    "_ZN8epbroker6Client6modelsENS_6PolicyERKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEE",
    "_ZN8epbroker6Client12ensure_modelERKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEERKNS_12ModelOptionsERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client13install_modelERKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEERKNS_12ModelOptionsERKSt8functionIFvRKNS_8ProgressEEERKNS_11CancelTokenE",
    "_ZN8epbroker6Client12remove_modelERKNSt7__cxx1112basic_stringIcSt11char_"
    "traitsIcESaIcEEES8_S8_b",
    "_ZN8epbroker10ModelLeaseC1Ev",
    "_ZN8epbroker10ModelLeaseC2Ev",
    "_ZN8epbroker10ModelLeaseC1EOS0_",
    "_ZN8epbroker10ModelLeaseC2EOS0_",
    "_ZN8epbroker10ModelLeaseD1Ev",
    "_ZN8epbroker10ModelLeaseD2Ev",
    "_ZN8epbroker10ModelLeaseaSEOS0_",
    "_ZNK8epbroker10ModelLease4nameB5cxx11Ev",
    "_ZNK8epbroker10ModelLease7versionB5cxx11Ev",
    "_ZNK8epbroker10ModelLease7variantB5cxx11Ev",
    "_ZNK8epbroker10ModelLease4pathB5cxx11Ev",
    "_ZNK8epbroker10ModelLease4mainB5cxx11Ev",
    "_ZNK8epbroker10ModelLease5filesB5cxx11Ev",
    "_ZNK8epbroker10ModelLease7devicesB5cxx11Ev",
    "_ZNK8epbroker10ModelLease3epsB5cxx11Ev",
    "_ZNK8epbroker10ModelLease12session_pathB5cxx11Ev",
    "_ZNK8epbroker10ModelLease6activeEv",
    "_ZN8epbroker10ModelLease7releaseEv",
};

// The C functions added in EPBROKER_0.2 (the header's models section).
constexpr const char* kCSymbols02[] = {
    "epbroker_models",
    "epbroker_model_list_size",
    "epbroker_model_list_get",
    "epbroker_model_list_free",
    "epbroker_model_name",
    "epbroker_model_version",
    "epbroker_model_publisher",
    "epbroker_model_license",
    "epbroker_model_license_url",
    "epbroker_model_description",
    "epbroker_model_task",
    "epbroker_model_state",
    "epbroker_model_reason",
    "epbroker_model_remote",
    "epbroker_model_variant_count",
    "epbroker_model_variant_info",
    "epbroker_model_planned",
    "epbroker_model_plan_device",
    "epbroker_model_plan_ep",
    "epbroker_model_plan_reason",
    "epbroker_variant_info_id",
    "epbroker_variant_info_device_count",
    "epbroker_variant_info_device",
    "epbroker_variant_info_ep_count",
    "epbroker_variant_info_ep",
    "epbroker_variant_info_ort_min",
    "epbroker_variant_info_opset",
    "epbroker_variant_info_size",
    "epbroker_variant_info_installed",
    "epbroker_model_options_new",
    "epbroker_model_options_free",
    "epbroker_model_options_set_variant",
    "epbroker_model_options_set_version",
    "epbroker_model_options_set_policy",
    "epbroker_model_options_set_ort_version",
    "epbroker_model_options_set_download",
    "epbroker_ensure_model",
    "epbroker_model_lease_name",
    "epbroker_model_lease_version",
    "epbroker_model_lease_variant",
    "epbroker_model_lease_path",
    "epbroker_model_lease_main",
    "epbroker_model_lease_file_count",
    "epbroker_model_lease_file",
    "epbroker_model_lease_device_count",
    "epbroker_model_lease_device",
    "epbroker_model_lease_ep_count",
    "epbroker_model_lease_ep",
    "epbroker_model_lease_session_path",
    "epbroker_model_lease_active",
    "epbroker_model_lease_release",
    "epbroker_model_lease_free",
    "epbroker_remove_model",
    "epbroker_removed_model_list_size",
    "epbroker_removed_model_list_get",
    "epbroker_removed_model_list_free",
    "epbroker_removed_model_name",
    "epbroker_removed_model_version",
    "epbroker_removed_model_variant",
};

// The functions the C header declares.
std::set<std::string> header_functions() {
  std::ifstream in(EPBROKER_C_HEADER);
  std::stringstream text;
  text << in.rdbuf();
  const std::string header = text.str();
  std::set<std::string> out;
  const std::regex declaration(R"(EPBROKER_C_API[^;(]*?\b(epbroker_[a-z0-9_]+)\()");
  for (std::sregex_iterator it(header.begin(), header.end(), declaration), end; it != end; ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// `name` demangled (itself when it is not a C++ name).
std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

class Library {
 public:
  Library() : handle_(dlopen(EPBROKER_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* handle() const { return handle_; }

 private:
  void* handle_;
};

TEST(CApiSymbols, EveryHeaderFunctionIsExportedWithItsVersion) {
  Library lib;
  ASSERT_NE(lib.handle(), nullptr) << dlerror();
  const auto functions = header_functions();
  EXPECT_GE(functions.size(), 130U + std::size(kCSymbols02)) << "the header was not parsed";
  const std::set<std::string> added(std::begin(kCSymbols02), std::end(kCSymbols02));
  for (const auto& f : functions) {
    const char* version = added.count(f) != 0 ? kVersion02 : kVersion;
    EXPECT_NE(dlvsym(lib.handle(), f.c_str(), version), nullptr) << f << "@" << version;
  }
  // The list of 0.2 functions names only functions the header declares.
  for (const auto& f : added) EXPECT_EQ(functions.count(f), 1U) << f << " is not in the header";
}

TEST(CApiSymbols, TheCxxAbiIsKeptWithItsVersion) {
  Library lib;
  ASSERT_NE(lib.handle(), nullptr) << dlerror();
  for (const char* symbol : kCxxSymbols) {
    EXPECT_NE(dlvsym(lib.handle(), symbol, kVersion), nullptr) << symbol << "@" << kVersion;
  }
}

TEST(CApiSymbols, TheModelApiHasVersion02) {
  Library lib;
  ASSERT_NE(lib.handle(), nullptr) << dlerror();
  std::vector<const char*> symbols(std::begin(kCxxSymbols02), std::end(kCxxSymbols02));
  symbols.insert(symbols.end(), std::begin(kCSymbols02), std::end(kCSymbols02));
  for (const char* symbol : symbols) {
    EXPECT_NE(dlvsym(lib.handle(), symbol, kVersion02), nullptr) << symbol << "@" << kVersion02;
    // Not also (or instead) in the released node.
    EXPECT_EQ(dlvsym(lib.handle(), symbol, kVersion), nullptr) << symbol << "@" << kVersion;
  }
}

TEST(CApiSymbols, NothingElseIsExported) {
  // Mangled (no -C), to tell the 0.2 symbols by their names.
  const std::string command =
      std::string("nm -D --defined-only --with-symbol-versions '") + EPBROKER_LIBRARY_PATH + "'";
  std::set<std::string> added(std::begin(kCxxSymbols02), std::end(kCxxSymbols02));
  added.insert(std::begin(kCSymbols02), std::end(kCSymbols02));
  std::set<std::string> seen02;
  std::unique_ptr<FILE, decltype(&pclose)> nm(popen(command.c_str(), "r"), &pclose);
  ASSERT_NE(nm, nullptr);
  const std::regex ours(
      R"(^(epbroker_[a-z0-9_]+|epbroker::.*|(typeinfo|typeinfo name|vtable) for epbroker::.*)$)");
  std::size_t count = 0;
  char line[4096];
  while (std::fgets(line, sizeof line, nm.get())) {
    std::string l(line);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    // "ADDRESS TYPE NAME@@VERSION"
    const auto type_at = l.find(' ');
    ASSERT_NE(type_at, std::string::npos) << l;
    std::string name = l.substr(type_at + 3);
    // The versions' own (absolute) symbols, as nm prints them with or without a version.
    bool version_symbol = false;
    for (const std::string v : {kVersion, kVersion02}) {
      version_symbol = version_symbol || name == v || name == v + "@@" + v;
    }
    if (version_symbol) continue;
    const auto at = name.rfind("@@");
    ASSERT_NE(at, std::string::npos) << "unversioned: " << l;
    const std::string version = name.substr(at + 2);
    name.resize(at);
    if (added.count(name) != 0) {
      EXPECT_EQ(version, kVersion02) << l;
      seen02.insert(name);
    } else {
      EXPECT_EQ(version, kVersion) << l;
    }
    EXPECT_TRUE(std::regex_match(demangled(name), ours)) << "exported by accident: " << l;
    ++count;
  }
  EXPECT_GE(count, std::size(kCxxSymbols) + 130) << "nm listed too little";
  EXPECT_EQ(seen02, added) << "a 0.2 symbol is missing";
}

}  // namespace
