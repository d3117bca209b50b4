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

  void apply(const JobEvent& e) {
    if (!e.bad.empty()) throw Error(Errc::protocol, e.bad);
    if (!e.finished) {
      merge(e.changed);
      return;
    }
    if (!e.error.empty()) error = e.error;
    if (!e.message.empty()) message = e.message;
    set_state(e.state);
  }
};

// The generated Job1 proxy, for GetAll and Cancel. Like BrokerProxy it never
// calls registerProxy(): the job's signals come through the JobWatch.
class JobProxy final
    : public sdbus::ProxyInterfaces<org::epbroker::Job1_proxy, sdbus::Properties_proxy> {
 public:
  JobProxy(sdbus::IConnection& bus, const std::string& path)
      : ProxyInterfaces(bus, kBusName, path) {}

 private:
  void onFinished(const std::string&, const std::string&, const std::string&) override {}
  void onPropertiesChanged(const std::string&, const Dict&,
                           const std::vector<std::string>&) override {}
};

bool same(const Progress& a, const Progress& b) {
  return a.state == b.state && a.bytes_done == b.bytes_done && a.bytes_total == b.bytes_total;
}

}  // namespace

JobWatch::JobWatch(Connection& conn) : conn_(conn) {
  // One rule for both signals; sd_bus_add_match waits for the bus's reply, so
  // the subscription is in force when the constructor returns.
  const std::string rule = std::string("type='signal',sender='") + kBusName + "',path_namespace='" +
                           kBrokerPath + "/job'";
  slot_ = checked(
      [&] { return conn_.bus->addMatch(rule, [this](sdbus::Message& msg) { on_signal(msg); }); });
}

JobWatch::~JobWatch() = default;

bool JobWatch::wanted(const std::string& path) const {
  return path == path_ || std::find(kept_.begin(), kept_.end(), path) != kept_.end();
}

void JobWatch::follow(const std::string& path) {
  path_ = path;
  std::erase_if(events_, [&](const JobEvent& e) { return !wanted(e.path); });
}

void JobWatch::keep(std::vector<std::string> paths) {
  kept_ = std::move(paths);
  std::erase_if(events_, [&](const JobEvent& e) { return !wanted(e.path); });
}

bool JobWatch::next(JobEvent& out) {
  // The followed job's oldest event; those of kept jobs wait for their turn.
  const auto it = std::find_if(events_.begin(), events_.end(),
                               [&](const JobEvent& e) { return e.path == path_; });
  if (it == events_.end()) return false;
  out = std::move(*it);
  events_.erase(it);
  return true;
}

// Runs inside processPendingRequest() on the waiting thread; never throws
// (sd-bus is C): a signal it cannot read becomes an event that says why.
void JobWatch::on_signal(sdbus::Message& msg) {
  JobEvent e;
  e.path = msg.getPath();
  const bool filtering = !path_.empty() || !kept_.empty();
  if (filtering ? !wanted(e.path) : events_.size() >= kMaxPending) return;
  const std::string interface = msg.getInterfaceName();
  const std::string member = msg.getMemberName();
  try {
    if (interface == "org.freedesktop.DBus.Properties" && member == "PropertiesChanged") {
      std::string changed_interface;
      std::vector<std::string> invalidated;
      msg >> changed_interface >> e.changed >> invalidated;
      if (changed_interface != kJobInterface) return;
    } else if (interface == kJobInterface && member == "Finished") {
      e.finished = true;
      msg >> e.state >> e.error >> e.message;
    } else {
      return;
    }
  } catch (const std::exception& x) {
    e.bad = std::string("unreadable ") + member + " signal of " + e.path + ": " + x.what();
  }
  events_.push_back(std::move(e));
}

Progress wait_for_job(JobWatch& watch, const std::string& path, const ProgressCallback& on_progress,
                      const CancelToken& cancel) {
  Connection& conn = watch.connection();
  Tracker t;
  t.p.job = path;
  std::optional<Progress> reported;
  auto report = [&] {
    if (!on_progress || (reported && same(*reported, t.p))) return;
    reported = t.p;
    on_progress(t.p);
  };
  // Applies the job's events received so far, one report per event, in order.
  // Returns whether there was any.
  auto apply_events = [&] {
    bool any = false;
    for (JobEvent e; watch.next(e); any = true) {
      t.apply(e);
      report();
    }
    return any;
  };
  auto drain = [&] {
    bool any = apply_events();  // queued before follow()
    while (checked([&] { return conn.bus->processPendingRequest(); })) {
      any = apply_events() || any;
    }
    return any;
  };

  // 1. The job's properties. Signals carry only what changed, so Kind and
  // Target come from here; the rest waits for step 3 (it may be newer than
  // the signals still to be reported).
  watch.follow(path);
  JobProxy proxy(*conn.bus, path);
  auto get_all = [&] {
    try {
      return proxy.GetAll(kJobInterface);
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
  const Dict first = get_all();
  Dict identity;
  for (const char* key : {"Kind", "Target"}) {
    if (auto it = first.find(key); it != first.end()) identity.insert(*it);
  }
  t.merge(identity);

  // 2. What the job did before now, step by step: the watch has had every
  // signal since before the call that started it.
  drain();

  // 3. The snapshot: a job with nothing to do was over before the call
  // returned, and may have sent no signal to this watch. Stale parts are
  // dropped by the Tracker.
  t.merge(first);
  report();

  // 4. Drive the connection until the job is final.
  bool cancel_sent = false;
  auto cancel_deadline = Clock::time_point::max();
  auto last_news = Clock::now();
  while (!is_final(t.p.state)) {
    if (drain()) last_news = Clock::now();
    if (is_final(t.p.state)) break;

    if (cancel.cancelled() && !cancel_sent) {
      cancel_sent = true;
      cancel_deadline = Clock::now() + kCancelGrace;
      try {
        proxy.Cancel();
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
      t.merge(get_all());
      report();
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

  // 5. The outcome.
  if (t.p.state == JobState::done) return t.p;
  if (t.p.state == JobState::cancelled) {
    throw Error(Errc::cancelled, t.message.empty() ? "the job was cancelled" : t.message, t.error);
  }
  if (t.error.empty())
    throw Error(Errc::protocol, "job failed without an error name: " + t.message);
  throw to_error(sdbus::Error(t.error, t.message));
}

}  // namespace epbroker::detail
