#include "client/src/job_wait.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

#include "client/src/convert.hpp"
#include "generated/dbus/Job1_proxy.h"

namespace epbroker::detail {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kJobInterface = "org.epbroker.Job1";
// How often the wait wakes up to look at the cancel token.
constexpr auto kTick = 100ms;
// Without any signal for this long, the properties are read again: a lost
// daemon shows up as an error instead of an endless wait.
constexpr auto kRecheck = 5s;
// After Job1.Cancel, how long the job may take to end.
constexpr auto kCancelGrace = 30s;

// Forward order of the job's states; a final state is never left.
int rank(JobState s) {
  switch (s) {
    case JobState::queued:
      return 0;
    case JobState::downloading:
      return 1;
    case JobState::verifying:
      return 2;
    case JobState::installing:
      return 3;
    case JobState::done:
    case JobState::failed:
    case JobState::cancelled:
      return 4;
    case JobState::unknown:
      break;
  }
  return -1;
}

// The job as seen so far. Updates arrive from a snapshot (GetAll) and from
// signals that may have been queued before it, so each field only moves forward:
// a lower BytesDone or an earlier state is a stale update and is dropped.
struct Tracker {
  Progress p;
  std::string error;
  std::string message;
  bool touched = false;             // a signal arrived since the wait last looked
  std::optional<Error> bad_update;  // a malformed signal (thrown by the wait, not the handler)

  void set_state(const std::string& text) {
    const JobState s = parse_job_state(text);
    if (is_final(p.state) || rank(s) < rank(p.state)) return;
    p.state = s;
  }

  void merge(const Dict& props) {
    auto get = [&](const char* key, const char* sig) -> const sdbus::Variant* {
      auto it = props.find(key);
      if (it == props.end()) return nullptr;
      if (it->second.peekValueType() != sig) {
        throw Error(Errc::protocol, std::string("Job1.") + key + " has an unexpected type");
      }
      return &it->second;
    };
    if (auto* v = get("Kind", "s")) p.kind = v->get<std::string>();
    if (auto* v = get("Target", "s")) p.target = v->get<std::string>();
    if (auto* v = get("BytesDone", "t")) p.bytes_done = std::max(p.bytes_done, v->get<uint64_t>());
    if (auto* v = get("BytesTotal", "t")) {
      p.bytes_total = std::max(p.bytes_total, v->get<uint64_t>());
    }
    if (auto* v = get("Error", "s"); v && !v->get<std::string>().empty()) {
      error = v->get<std::string>();
    }
    if (auto* v = get("ErrorMessage", "s"); v && !v->get<std::string>().empty()) {
      message = v->get<std::string>();
    }
    if (auto* v = get("State", "s")) set_state(v->get<std::string>());
  }
};

// The generated Job1 proxy; its signals feed a Tracker. Handlers run inside
// processPendingRequest() on the waiting thread, and never throw (sd-bus is C).
class JobProxy final
    : public sdbus::ProxyInterfaces<org::epbroker::Job1_proxy, sdbus::Properties_proxy> {
 public:
  JobProxy(sdbus::IConnection& bus, const std::string& path, Tracker& tracker)
      : ProxyInterfaces(bus, kBusName, path), tracker_(tracker) {
    registerProxy();  // AddMatch for Finished and PropertiesChanged on this path
  }
  ~JobProxy() { unregisterProxy(); }

 private:
  void onFinished(const std::string& state, const std::string& error,
                  const std::string& message) override {
    if (!error.empty()) tracker_.error = error;
    if (!message.empty()) tracker_.message = message;
    tracker_.set_state(state);
    tracker_.touched = true;
  }
  void onPropertiesChanged(const std::string& interface, const Dict& changed,
                           const std::vector<std::string>&) override {
    if (interface != kJobInterface) return;
    try {
      tracker_.merge(changed);
    } catch (const epbroker::Error& e) {  // (Error alone names Job1_proxy::Error)
      tracker_.bad_update = e;
    }
    tracker_.touched = true;
  }

  Tracker& tracker_;
};

bool same(const Progress& a, const Progress& b) {
  return a.state == b.state && a.bytes_done == b.bytes_done && a.bytes_total == b.bytes_total;
}

}  // namespace

Progress wait_for_job(Connection& conn, const std::string& path,
                      const ProgressCallback& on_progress, const CancelToken& cancel) {
  Tracker t;
  t.p.job = path;
  // 1. Subscribe first, then read: a job may be over before we subscribed.
  std::optional<JobProxy> proxy;
  checked([&] { proxy.emplace(*conn.bus, path, t); });
  auto reread = [&] {
    try {
      t.merge(proxy->GetAll(kJobInterface));
    } catch (const sdbus::Error& e) {
      if (e.getName() == "org.freedesktop.DBus.Error.UnknownObject" ||
          e.getName() == "org.freedesktop.DBus.Error.UnknownInterface" ||
          e.getName() == "org.freedesktop.DBus.Error.UnknownMethod") {
        throw Error(Errc::unavailable, "job " + path + " is gone (did epbrokerd restart?)",
                    e.getName());
      }
      throw to_error(e);
    }
  };
  reread();

  std::optional<Progress> reported;
  auto report = [&] {
    if (!on_progress || (reported && same(*reported, t.p))) return;
    reported = t.p;
    on_progress(t.p);
  };
  report();

  // 2. Drive the connection until the job is final.
  bool cancel_sent = false;
  auto cancel_deadline = Clock::time_point::max();
  auto last_news = Clock::now();
  while (!is_final(t.p.state)) {
    checked([&] {
      while (conn.bus->processPendingRequest()) {
      }
    });
    if (t.bad_update) throw *t.bad_update;
    if (t.touched) {
      t.touched = false;
      last_news = Clock::now();
    }
    report();
    if (is_final(t.p.state)) break;

    if (cancel.cancelled() && !cancel_sent) {
      cancel_sent = true;
      cancel_deadline = Clock::now() + kCancelGrace;
      try {
        proxy->Cancel();
      } catch (const sdbus::Error& e) {
        // Not ours to cancel (another caller started this shared install), or
        // already gone: stop waiting; the job goes on for whoever started it.
        throw Error(Errc::cancelled,
                    "stopped waiting for " + path + "; it was not cancelled: " + e.getMessage(),
                    e.getName());
      }
      continue;
    }
    if (Clock::now() > cancel_deadline) {
      throw Error(Errc::cancelled, "stopped waiting for " + path + ": it did not end within " +
                                       std::to_string(kCancelGrace.count()) +
                                       " s of the cancel request");
    }
    if (Clock::now() - last_news > kRecheck) {
      reread();
      last_news = Clock::now();
      continue;
    }
    const auto poll_data = checked([&] { return conn.bus->getEventLoopPollData(); });
    int timeout = poll_data.getPollTimeout();
    const int tick = static_cast<int>(kTick.count());
    if (timeout < 0 || timeout > tick) timeout = tick;
    pollfd fd{poll_data.fd, poll_data.events, 0};
    if (poll(&fd, 1, timeout) < 0 && errno != EINTR) {
      throw Error(Errc::unavailable, "lost the bus connection while waiting for " + path);
    }
  }

  // 3. The outcome.
  if (t.p.state == JobState::done) return t.p;
  if (t.p.state == JobState::cancelled) {
    throw Error(Errc::cancelled, t.message.empty() ? "the job was cancelled" : t.message, t.error);
  }
  if (t.error.empty())
    throw Error(Errc::protocol, "job failed without an error name: " + t.message);
  throw to_error(sdbus::Error(t.error, t.message));
}

}  // namespace epbroker::detail
