#include "tests/fuzz/bus/call_generator.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace bus_fuzz {

namespace {

constexpr const char* kDest = "org.epbroker.Broker1";
constexpr const char* kRoot = "/org/epbroker/Broker1";
constexpr const char* kBroker = "org.epbroker.Broker1";
constexpr const char* kSession = "org.epbroker.Session1";
constexpr const char* kJob = "org.epbroker.Job1";
constexpr const char* kProps = "org.freedesktop.DBus.Properties";

constexpr std::array kBasic = {'y', 'b', 'n', 'q', 'i', 'u', 'x', 't', 'd', 's', 'o', 'g'};
constexpr std::array kPolicies = {"default",          "prefer_cpu",      "prefer_gpu",
                                  "prefer_npu",       "max_performance", "max_efficiency",
                                  "min_overall_power"};
constexpr std::array kPackages = {"test-ep", "bulk-ep", "foreign-ep", "no-such-ep"};
constexpr std::array kInterfaces = {kBroker, kSession, kJob, "org.epbroker.Broker2", ""};
constexpr std::array kProperties = {
    "Version", "DaemonState", "CatalogRevision", "CatalogExpires", "State",        "Kind",
    "Target",  "BytesDone",   "BytesTotal",      "Error",          "ErrorMessage", "Owner"};
constexpr std::array kSignatures = {"", "s", "as", "a{sv}", "aa{sv}", "(ss)", "v", "a(yv)", "x"};

struct Member {
  int path;  // 0 broker, 1 session, 2 job, 3 any
  const char* interface;
  const char* member;
};
constexpr std::array kMembers = {
    Member{0, kBroker, "ListDevices"},
    Member{0, kBroker, "ListProviders"},
    Member{0, kBroker, "EnsureProvider"},
    Member{0, kBroker, "RemoveProvider"},
    Member{0, kBroker, "RefreshCatalog"},
    Member{0, kBroker, "Verify"},
    Member{0, kBroker, "RequestSession"},
    Member{0, kBroker, "ListModels"},
    Member{0, kBroker, "EnsureModel"},
    Member{0, kBroker, "RemoveModel"},
    Member{1, kSession, "Release"},
    Member{2, kJob, "Cancel"},
    Member{3, kProps, "Get"},
    Member{3, kProps, "GetAll"},
    Member{3, kProps, "Set"},
    Member{0, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"},
    Member{3, "org.freedesktop.DBus.Introspectable", "Introspect"},
    Member{3, "org.freedesktop.DBus.Peer", "Ping"},
};

// The length of the complete type at the start of `sig`.
std::size_t complete_length(std::string_view sig) {
  if (sig.empty()) return 0;
  if (sig[0] == 'a') return 1 + complete_length(sig.substr(1));
  if (sig[0] != '(' && sig[0] != '{') return 1;
  int depth = 0;
  for (std::size_t i = 0; i < sig.size(); ++i) {
    if (sig[i] == '(' || sig[i] == '{') ++depth;
    if (sig[i] == ')' || sig[i] == '}') --depth;
    if (depth == 0) return i + 1;
  }
  return sig.size();
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::request_session:
      return "RequestSession";
    case Kind::release:
      return "Release";
    case Kind::starts_job:
      return "EnsureProvider/EnsureModel/RefreshCatalog";
    case Kind::other:
      break;
  }
  return "other";
}

void Generator::known_session(std::string path) {
  if (sessions_.size() >= 256) sessions_.erase(sessions_.begin());
  sessions_.push_back(std::move(path));
}

void Generator::known_job(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return;
  try {
    max_job_ = std::max<std::uint64_t>(max_job_, std::stoull(path.substr(slash + 1)));
  } catch (const std::exception&) {
  }
}

std::string Generator::random_string(std::uint32_t long_max) {
  switch (below(12)) {
    case 0:
      return "";
    case 1:
      return kPackages[below(kPackages.size())];
    case 2:
      return kPolicies[below(kPolicies.size())];
    case 3:
      return std::string(1 + below(long_max), 'a');
    case 4:
      return "\xc3\xbc"
             "n"
             "\xc3\xaf"
             "c"
             "\xc3\xb8"
             "d"
             "\xc3\xa9"
             " \xe2\x98\x83 \xf0\x9f\x98\x80";  // üïcødé ☃ 😀
    case 5:
      return "../../etc/passwd";
    case 6:
      return "%s%s%n%x";
    case 7:
      return std::string(kRoot) + "/session/" + std::to_string(below(100));
    default: {
      std::string s(below(80), ' ');
      for (auto& c : s) c = static_cast<char>(32 + below(95));  // printable ASCII
      return s;
    }
  }
}

std::string Generator::random_name() {
  const std::uint32_t r = below(1000);
  if (r < 10) return "test-ep";
  if (r < 12) return "bulk-ep";
  if (r < 100) return "foreign-ep";
  if (r < 500) return "pkg-" + std::to_string(below(1000));  // unknown: NotFound
  return random_string();                                    // mostly InvalidArgument
}

std::string Generator::random_model_name() {
  const std::uint32_t r = below(1000);
  if (r < 10) return kModelName;   // a real install or removal
  if (r < 100) return "tiny-net";  // unknown: NotFound
  if (r < 400) return "model-" + std::to_string(below(1000));
  if (r < 450) return std::string(kModelName) + "/fp32";  // a path, not a name
  if (r < 500) return "_blobs";                           // the store's own directory
  return random_string();                                 // mostly InvalidArgument
}

std::string Generator::random_variant() {
  switch (below(10)) {
    case 0:
    case 1:
    case 2:
      return kModelVariants[below(2)];
    case 3:
      return "";
    case 4:
      return "FP32";  // not an id: upper case
    case 5:
      return "../../trust";
    case 6:
      return std::string(33, 'v');  // one past the longest id
    default:
      return random_string(64);
  }
}

std::string Generator::random_member() {
  static constexpr std::string_view first = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
  static constexpr std::string_view rest =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789";
  std::string s(1, first[below(first.size())]);
  for (std::uint32_t n = below(30); n > 0; --n) s += rest[below(rest.size())];
  return s;
}

std::string Generator::random_path() {
  switch (below(6)) {
    case 0:
      return "/";
    case 1:
      return kRoot;
    case 2:
      return std::string(kRoot) + "/" + random_member();
    case 3:
      return "/org/freedesktop/DBus";
    default: {
      std::string p;
      for (std::uint32_t n = 1 + below(4); n > 0; --n) p += "/" + random_member();
      return p;
    }
  }
}

std::string Generator::session_path(const std::string* own) {
  const std::uint32_t r = below(100);
  if (own && r < 75) return *own;
  if (!sessions_.empty() && r < 95)
    return sessions_[below(static_cast<std::uint32_t>(sessions_.size()))];
  return std::string(kRoot) + "/session/" + std::to_string(below(100'000));
}

std::string Generator::job_path() {
  return std::string(kRoot) + "/job/" +
         std::to_string(
             below(static_cast<std::uint32_t>(std::min<std::uint64_t>(max_job_, 1000)) + 3));
}

std::string Generator::random_type(int depth) {
  const std::uint32_t r = below(100);
  if (depth >= 3 || r < 60) return std::string(1, kBasic[below(kBasic.size())]);
  if (r < 75) return "a" + random_type(depth + 1);
  if (r < 85) {
    return "a{" + std::string(1, kBasic[below(kBasic.size())]) + random_type(depth + 1) + "}";
  }
  if (r < 93) {
    std::string s = "(";
    for (std::uint32_t n = 1 + below(3); n > 0; --n) s += random_type(depth + 1);
    return s + ")";
  }
  return "v";
}

std::string Generator::random_signature() {
  std::string s;
  for (std::uint32_t n = below(5); n > 0; --n) s += random_type(0);
  return s;
}

int Generator::append_basic(sd_bus_message* m, char type, int depth) {
  const std::uint64_t bits = rng_();
  switch (type) {
    case 'y': {
      const auto v = static_cast<std::uint8_t>(bits);
      return sd_bus_message_append_basic(m, type, &v);
    }
    case 'b': {
      const int v = static_cast<int>(bits & 1);
      return sd_bus_message_append_basic(m, type, &v);
    }
    case 'n':
    case 'q': {
      const auto v = static_cast<std::uint16_t>(bits);
      return sd_bus_message_append_basic(m, type, &v);
    }
    case 'i':
    case 'u': {
      const auto v = static_cast<std::uint32_t>(below(4) == 0 ? bits : bits % 8);
      return sd_bus_message_append_basic(m, type, &v);
    }
    case 'x':
    case 't': {
      return sd_bus_message_append_basic(m, type, &bits);
    }
    case 'd': {
      constexpr std::array special = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN(), 1e308};
      const double v =
          below(2) ? special[below(special.size())] : std::ldexp(static_cast<double>(bits), -32);
      return sd_bus_message_append_basic(m, type, &v);
    }
    case 'o': {
      const std::string v = random_path();
      return sd_bus_message_append_basic(m, type, v.c_str());
    }
    case 'g': {
      const std::string v = below(2) ? kSignatures[below(kSignatures.size())] : random_type(0);
      return sd_bus_message_append_basic(m, type, v.c_str());
    }
    default: {
      const std::string v = random_string(depth == 0 ? 8192 : 64);
      return sd_bus_message_append_basic(m, 's', v.c_str());
    }
  }
}

int Generator::append(sd_bus_message* m, std::string_view type, int depth) {
  if (type[0] == 'a') {
    const std::string element(type.substr(1, complete_length(type.substr(1))));
    int r = sd_bus_message_open_container(m, 'a', element.c_str());
    // Long arrays only at the top: nested ones stay small, so that no message
    // comes near the bus's 32 MiB limit (dbus-daemon drops a sender past it).
    const std::uint32_t n = below(100) < 90 ? below(5) : below(depth == 0 ? 300 : 8);
    for (std::uint32_t i = 0; r >= 0 && i < n; ++i) {
      if (element[0] == '{') {
        const std::string inner = element.substr(1, element.size() - 2);
        r = sd_bus_message_open_container(m, 'e', inner.c_str());
        if (r >= 0) r = append(m, inner.substr(0, 1), depth + 1);
        if (r >= 0) r = append(m, std::string_view(inner).substr(1), depth + 1);
        if (r >= 0) r = sd_bus_message_close_container(m);
      } else {
        r = append(m, element, depth + 1);
      }
    }
    return r < 0 ? r : sd_bus_message_close_container(m);
  }
  if (type[0] == '(') {
    const std::string inner(type.substr(1, complete_length(type) - 2));
    int r = sd_bus_message_open_container(m, 'r', inner.c_str());
    for (std::string_view rest = inner; r >= 0 && !rest.empty();) {
      const std::size_t len = complete_length(rest);
      r = append(m, rest.substr(0, len), depth + 1);
      rest.remove_prefix(len);
    }
    return r < 0 ? r : sd_bus_message_close_container(m);
  }
  if (type[0] == 'v') {
    const std::string inner = random_type(depth + 1);
    int r = sd_bus_message_open_container(m, 'v', inner.c_str());
    if (r >= 0) r = append(m, inner, depth + 1);
    return r < 0 ? r : sd_bus_message_close_container(m);
  }
  return append_basic(m, type[0], depth);
}

int Generator::append_args(sd_bus_message* m) {
  const std::string sig = random_signature();
  int r = 0;
  for (std::string_view rest = sig; r >= 0 && !rest.empty();) {
    const std::size_t len = complete_length(rest);
    r = append(m, rest.substr(0, len), 0);
    rest.remove_prefix(len);
  }
  return r;
}

int Generator::append_options(sd_bus_message* m) {
  int r = sd_bus_message_open_container(m, 'a', "{sv}");
  for (std::uint32_t n = below(5); r >= 0 && n > 0; --n) {
    r = sd_bus_message_open_container(m, 'e', "sv");
    const std::uint32_t which = below(12);
    std::string key = which < 3    ? "policy"
                      : which == 3 ? "ort_version"
                      : which < 6  ? "providers"
                      : which == 6 ? "download"
                      : which == 7 ? std::string(kPolicies[0]) /* unknown */
                      : which < 10 ? random_string()
                                   : "models";
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key.c_str());
    if (r < 0) break;
    const bool wrong_type = below(10) == 0;
    if (wrong_type || (which >= 7 && which < 10)) {
      const std::string t = random_type(1);
      r = sd_bus_message_open_container(m, 'v', t.c_str());
      if (r >= 0) r = append(m, t, 1);
    } else if (key == "policy") {
      const std::string v = below(5) ? kPolicies[below(kPolicies.size())] : random_string();
      r = sd_bus_message_append(m, "v", "s", v.c_str());
      if (r >= 0) r = sd_bus_message_close_container(m);
      continue;
    } else if (key == "ort_version") {
      const std::string v = below(4)
                                ? "1." + std::to_string(below(40)) + "." + std::to_string(below(3))
                                : random_string();
      r = sd_bus_message_append(m, "v", "s", v.c_str());
      if (r >= 0) r = sd_bus_message_close_container(m);
      continue;
    } else if (key == "models") {
      r = sd_bus_message_open_container(m, 'v', "a{ss}");
      if (r >= 0) r = append_models(m);
    } else if (key == "providers") {
      r = sd_bus_message_open_container(m, 'v', "as");
      if (r >= 0) r = sd_bus_message_open_container(m, 'a', "s");
      const std::uint32_t count = below(50) == 0 ? 65 + below(100) : below(4);
      for (std::uint32_t i = 0; r >= 0 && i < count; ++i) {
        const std::string v = below(8) ? kPackages[below(kPackages.size())] : random_string();
        r = sd_bus_message_append_basic(m, 's', v.c_str());
      }
      if (r >= 0) r = sd_bus_message_close_container(m);
    } else {  // download: true only rarely (it starts installs)
      r = sd_bus_message_append(m, "v", "b", below(50) == 0 ? 1 : 0);
      if (r >= 0) r = sd_bus_message_close_container(m);
      continue;
    }
    if (r >= 0) r = sd_bus_message_close_container(m);  // the variant
    if (r >= 0) r = sd_bus_message_close_container(m);  // the entry
  }
  return r < 0 ? r : sd_bus_message_close_container(m);
}

int Generator::append_models(sd_bus_message* m) {
  int r = sd_bus_message_open_container(m, 'a', "{ss}");
  // Rarely more than the 16 a session may ask for.
  const std::uint32_t count = below(50) == 0 ? 17 + below(20) : below(4);
  for (std::uint32_t i = 0; r >= 0 && i < count; ++i) {
    const std::string name = random_model_name();
    const std::string variant = random_variant();
    r = sd_bus_message_append(m, "{ss}", name.c_str(), variant.c_str());
  }
  return r < 0 ? r : sd_bus_message_close_container(m);
}

int Generator::append_model_options(sd_bus_message* m, std::string_view member) {
  // The keys `member` knows (ListModels: policy, ort_version; EnsureModel: also
  // variant, version; RemoveModel: version, variant, now).
  std::vector<std::string_view> keys;
  if (member == "RemoveModel") {
    keys = {"version", "variant", "now"};
  } else {
    keys = {"policy", "ort_version"};
    if (member == "EnsureModel") keys.insert(keys.end(), {"variant", "version"});
  }
  int r = sd_bus_message_open_container(m, 'a', "{sv}");
  for (std::uint32_t n = below(4); r >= 0 && n > 0; --n) {
    r = sd_bus_message_open_container(m, 'e', "sv");
    const std::uint32_t which = below(10);
    const std::string key = which < 8
                                ? std::string(keys[below(static_cast<std::uint32_t>(keys.size()))])
                            : which == 8 ? std::string("models") /* another method's */
                                         : random_string();
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key.c_str());
    if (r < 0) break;
    std::string value;
    if (below(10) == 0 || which >= 8) {  // a wrong type, or an unknown key
      const std::string t = random_type(1);
      r = sd_bus_message_open_container(m, 'v', t.c_str());
      if (r >= 0) r = append(m, t, 1);
      if (r >= 0) r = sd_bus_message_close_container(m);
    } else if (key == "now") {  // true only rarely (it removes a leased variant)
      r = sd_bus_message_append(m, "v", "b", below(20) == 0 ? 1 : 0);
    } else {
      if (key == "policy") {
        value = below(5) ? kPolicies[below(kPolicies.size())] : random_string();
      } else if (key == "ort_version") {
        value = below(4) ? "1." + std::to_string(below(40)) + "." + std::to_string(below(3))
                         : random_string();
      } else if (key == "variant") {
        value = random_variant();
      } else {  // version
        constexpr std::array versions = {"1.0", "2.0", "", "1..0", "../1.0", "1.0/fp32"};
        value = below(4) ? versions[below(versions.size())] : random_string(64);
      }
      r = sd_bus_message_append(m, "v", "s", value.c_str());
    }
    if (r >= 0) r = sd_bus_message_close_container(m);  // the entry
  }
  return r < 0 ? r : sd_bus_message_close_container(m);
}

bool Generator::build(sd_bus* bus, const std::string* own_session, sd_bus_message*& m, Kind& kind,
                      std::string& object) {
  m = nullptr;
  kind = Kind::other;
  object.clear();
  std::string path = kRoot;
  std::string interface = kBroker;
  std::string member;
  int args = 0;  // 0 none, 1 random, 2 options, 3 a name, 4 Properties args,
                 // 5 model options, 6 a model name and model options
  const std::uint32_t r = below(1000);
  if (r < 250) {
    member = "RequestSession";
    kind = Kind::request_session;
    args = 2;
  } else if (r < 400) {
    path = object = session_path(own_session);
    interface = kSession;
    member = "Release";
    kind = Kind::release;
  } else if (r < 450) {
    member = "ListProviders";
  } else if (r < 480) {
    member = "ListDevices";
  } else if (r < 550) {
    const std::uint32_t p = below(3);
    path = p == 0 ? kRoot : p == 1 ? session_path(own_session) : job_path();
    interface = kProps;
    member = below(10) == 0 ? "Set" : below(2) ? "Get" : "GetAll";
    args = 4;
  } else if (r < 560) {
    interface = "org.freedesktop.DBus.ObjectManager";
    member = "GetManagedObjects";
  } else if (r < 570) {
    path = below(2) ? random_path() : session_path(own_session);
    interface = "org.freedesktop.DBus.Introspectable";
    member = "Introspect";
  } else if (r < 580) {
    interface = "org.freedesktop.DBus.Peer";
    member = below(2) ? "Ping" : "GetMachineId";
  } else if (r < 620) {
    member = "EnsureProvider";
    kind = Kind::starts_job;
    args = 3;
  } else if (r < 640) {
    member = "RemoveProvider";
    args = 3;
  } else if (r < 641) {
    member = "RefreshCatalog";
    kind = Kind::starts_job;
  } else if (r < 643) {
    member = "Verify";
  } else if (r < 663) {
    path = job_path();
    interface = kJob;
    member = "Cancel";
  } else if (r < 678) {
    member = "ListModels";
    args = 5;
  } else if (r < 693) {
    member = "EnsureModel";
    kind = Kind::starts_job;
    args = 6;
  } else if (r < 703) {
    member = "RemoveModel";
    args = 6;
  } else if (r < 813) {
    const Member& mm = kMembers[below(kMembers.size())];
    path = mm.path == 0   ? std::string(kRoot)
           : mm.path == 1 ? session_path(own_session)
           : mm.path == 2 ? job_path()
                          : random_path();
    interface = mm.interface;
    member = mm.member;
    args = 1;
  } else {
    const std::uint32_t p = below(4);
    path = p == 0 ? random_path() : p == 1 ? session_path(own_session) : kRoot;
    interface = below(3) ? kInterfaces[below(kInterfaces.size())] : "org.x" + random_member();
    member = below(3) ? random_member() : kMembers[below(kMembers.size())].member;
    args = 1;
  }
  int rc = sd_bus_message_new_method_call(bus, &m, kDest, path.c_str(),
                                          interface.empty() ? nullptr : interface.c_str(),
                                          member.c_str());
  if (rc >= 0) {
    switch (args) {
      case 1:
        rc = append_args(m);
        break;
      case 2:
        rc = append_options(m);
        break;
      case 3: {
        const std::string name = random_name();
        rc = sd_bus_message_append_basic(m, 's', name.c_str());
        break;
      }
      case 5:
        rc = append_model_options(m, member);
        break;
      case 6: {
        const std::string name = random_model_name();
        rc = sd_bus_message_append_basic(m, 's', name.c_str());
        if (rc >= 0) rc = append_model_options(m, member);
        break;
      }
      case 4: {
        const std::string i = below(8) ? kInterfaces[below(kInterfaces.size())] : random_member();
        const std::string p = below(8) ? kProperties[below(kProperties.size())] : random_member();
        if (member == "GetAll") {
          rc = sd_bus_message_append_basic(m, 's', i.c_str());
        } else if (member == "Get") {
          rc = sd_bus_message_append(m, "ss", i.c_str(), p.c_str());
        } else {
          rc = sd_bus_message_append(m, "ssv", i.c_str(), p.c_str(), "s", "idle");
        }
        break;
      }
      default:
        break;
    }
  }
  if (rc < 0) {
    m = sd_bus_message_unref(m);
    return false;
  }
  return true;
}

}  // namespace bus_fuzz
