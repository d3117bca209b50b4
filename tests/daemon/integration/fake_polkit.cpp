#include "tests/daemon/integration/fake_polkit.hpp"

#include <pwd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <utility>

namespace tests::daemon {
namespace {

constexpr const char* kName = "org.freedesktop.PolicyKit1";
constexpr const char* kPath = "/org/freedesktop/PolicyKit1/Authority";
constexpr const char* kInterface = "org.freedesktop.PolicyKit1.Authority";
// polkitd's refusal of an untrusted caller (polkitbackendinteractiveauthority.c).
constexpr const char* kNotAuthorized = "org.freedesktop.PolicyKit1.Error.NotAuthorized";
constexpr const char* kUntrustedSubject =
    "Only trusted callers (e.g. uid 0 or an action owner) can use CheckAuthorization() for "
    "subjects belonging to other identities";
constexpr const char* kUntrustedDetails =
    "Only trusted callers (e.g. uid 0 or an action owner) can use CheckAuthorization() and "
    "pass details";
constexpr std::string_view kOwnerKey = "org.freedesktop.policykit.owner";

using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `text` without its XML comments (a comment may quote an annotation).
std::string without_comments(std::string text) {
  for (auto at = text.find("<!--"); at != std::string::npos; at = text.find("<!--", at)) {
    const auto end = text.find("-->", at);
    text.erase(at, end == std::string::npos ? std::string::npos : end + 3 - at);
  }
  return text;
}

// The value of attribute `name` in the start tag `tag` ("" if absent).
std::string attribute(std::string_view tag, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  const auto at = tag.find(key);
  if (at == std::string_view::npos) return {};
  const auto end = tag.find('"', at + key.size());
  return std::string(tag.substr(at + key.size(), end - at - key.size()));
}

std::optional<uid_t> uid_of_user(const FakePolkitPolicy& policy, const std::string& name) {
  if (auto it = policy.users.find(name); it != policy.users.end()) return it->second;
  uid_t uid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), uid);
  if (ec == std::errc() && end == name.data() + name.size()) return uid;
  if (const struct passwd* pw = ::getpwnam(name.c_str())) return pw->pw_uid;
  return std::nullopt;  // polkitd warns and skips it
}

}  // namespace

std::filesystem::path installed_polkit_policy() {
  return std::filesystem::path(EPBROKER_INTEGRATION_SOURCE_DIR) / "dbus/org.epbroker.policy";
}

std::map<std::string, std::vector<uid_t>> polkit_action_owners(const FakePolkitPolicy& policy) {
  std::map<std::string, std::vector<uid_t>> out;
  const std::string text = without_comments(read_all(policy.file));
  for (auto at = text.find("<action "); at != std::string::npos;
       at = text.find("<action ", at + 1)) {
    const auto tag_end = text.find('>', at);
    const auto end = text.find("</action>", at);
    if (tag_end == std::string::npos || end == std::string::npos) break;
    const std::string id = attribute(std::string_view(text).substr(at, tag_end - at), "id");
    auto& owners = out[id];
    const std::string_view body = std::string_view(text).substr(tag_end, end - tag_end);
    for (auto a = body.find("<annotate "); a != std::string_view::npos;
         a = body.find("<annotate ", a + 1)) {
      const auto a_end = body.find('>', a);
      const auto close = body.find("</annotate>", a);
      if (a_end == std::string_view::npos || close == std::string_view::npos) break;
      if (attribute(body.substr(a, a_end - a), "key") != kOwnerKey) continue;
      std::istringstream identities(std::string(body.substr(a_end + 1, close - a_end - 1)));
      for (std::string identity; identities >> identity;) {
        constexpr std::string_view kUser = "unix-user:";
        if (!identity.starts_with(kUser)) continue;  // a group never equals a caller
        if (auto uid = uid_of_user(policy, identity.substr(kUser.size()))) owners.push_back(*uid);
      }
    }
  }
  return out;
}

FakePolkit::FakePolkit(const PrivateBus& bus, Mode mode, FakePolkitPolicy policy)
    : mode_(mode), owners_(polkit_action_owners(policy)) {
  lookup_ = bus.connect();
  conn_ = bus.connect();
  object_ = sdbus::createObject(*conn_, kPath);
  object_->registerMethod("CheckAuthorization")
      .onInterface(kInterface)
      .implementedAs([this](sdbus::Result<Answer>&& result, Subject subject, std::string action,
                            std::map<std::string, std::string> details, std::uint32_t flags,
                            std::string cancellation_id) {
        Check c;
        c.subject_kind = std::get<0>(subject);
        if (auto it = std::get<1>(subject).find("name"); it != std::get<1>(subject).end()) {
          c.subject_name = it->second.get<std::string>();
        }
        c.action = std::move(action);
        c.flags = flags;
        c.cancellation_id = std::move(cancellation_id);
        // 1. Who asks, for whom: polkitd's rule for trusted callers.
        if (const sdbus::Message* msg = object_->getCurrentlyProcessedMessage()) {
          c.caller_uid = uid_of(msg->getSender());
        }
        c.subject_uid = uid_of(c.subject_name);
        std::unique_lock lock(mu_);
        const bool same_user = c.caller_uid == c.subject_uid && details.empty();
        const auto& owners = owners_[c.action];
        const bool trusted = c.caller_uid == 0 ||
                             std::find(owners.begin(), owners.end(), c.caller_uid) != owners.end();
        if (!same_user && !trusted) {
          c.untrusted = true;
          c.answered = true;
          checks_.push_back(std::move(c));
          lock.unlock();
          result.returnError(sdbus::Error(kNotAuthorized,
                                          details.empty() ? kUntrustedSubject : kUntrustedDetails));
          return;
        }
        // 2. The answer the test set.
        if (mode_ == Mode::hold) {
          checks_.push_back(std::move(c));
          held_.emplace_back(checks_.size() - 1, std::move(result));
          return;
        }
        const bool granted = mode_ == Mode::grant;
        c.answered = true;
        checks_.push_back(std::move(c));
        lock.unlock();
        result.returnResults(Answer{granted, false, {}});
      });
  object_->registerMethod("CancelCheckAuthorization")
      .onInterface(kInterface)
      .implementedAs([this](const std::string& id) {
        std::lock_guard lock(mu_);
        cancelled_.push_back(id);
      });
  object_->finishRegistration();
  conn_->requestName(kName);
}

FakePolkit::~FakePolkit() {
  // Held calls are messages of the connection: dropped (unanswered) before it.
  object_.reset();
  held_.clear();
  conn_.reset();
  lookup_.reset();
}

uid_t FakePolkit::uid_of(const std::string& name) const {
  try {
    auto bus = sdbus::createProxy(*lookup_, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    std::uint32_t uid = 0;
    bus->callMethod("GetConnectionUnixUser")
        .onInterface("org.freedesktop.DBus")
        .withArguments(name)
        .storeResultsTo(uid);
    return uid;
  } catch (const sdbus::Error&) {
    return static_cast<uid_t>(-1);
  }
}

void FakePolkit::set_mode(Mode mode) {
  std::lock_guard lock(mu_);
  mode_ = mode;
}

std::vector<FakePolkit::Check> FakePolkit::checks() const {
  std::lock_guard lock(mu_);
  return checks_;
}

std::vector<std::string> FakePolkit::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

bool FakePolkit::wait_checks(std::size_t n, std::chrono::milliseconds timeout) const {
  return wait_until([&] { return checks().size() >= n; }, timeout);
}

std::size_t FakePolkit::answer(bool granted) {
  std::vector<std::pair<std::size_t, sdbus::Result<Answer>>> held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_);
    for (const auto& [index, result] : held) checks_[index].answered = true;
  }
  for (auto& [index, result] : held) result.returnResults(Answer{granted, false, {}});
  return held.size();
}

std::size_t FakePolkit::pending() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace tests::daemon
