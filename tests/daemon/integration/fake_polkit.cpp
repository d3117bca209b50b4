#include "tests/daemon/integration/fake_polkit.hpp"

#include <utility>

namespace tests::daemon {
namespace {

constexpr const char* kName = "org.freedesktop.PolicyKit1";
constexpr const char* kPath = "/org/freedesktop/PolicyKit1/Authority";
constexpr const char* kInterface = "org.freedesktop.PolicyKit1.Authority";

using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;

}  // namespace

FakePolkit::FakePolkit(const PrivateBus& bus, Mode mode) : mode_(mode) {
  conn_ = bus.connect();
  object_ = sdbus::createObject(*conn_, kPath);
  object_->registerMethod("CheckAuthorization")
      .onInterface(kInterface)
      .implementedAs([this](sdbus::Result<Answer>&& result, Subject subject, std::string action,
                            std::map<std::string, std::string> /*details*/, std::uint32_t flags,
                            std::string cancellation_id) {
        Check c;
        c.subject_kind = std::get<0>(subject);
        if (auto it = std::get<1>(subject).find("name"); it != std::get<1>(subject).end()) {
          c.subject_name = it->second.get<std::string>();
        }
        c.action = std::move(action);
        c.flags = flags;
        c.cancellation_id = std::move(cancellation_id);
        std::unique_lock lock(mu_);
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
