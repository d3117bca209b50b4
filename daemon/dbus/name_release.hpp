// Gives up the bus name when the daemon stops, from whichever thread needs it
// first: the main loop (after the idle decision, or after a SIGTERM's jobs ended)
// or the bus thread refusing a call with Busy ("exiting").
//
// Why the bus thread may do it: a caller refused with Busy is told to call again
// to reach a new instance. That holds only if the bus has processed our
// ReleaseName before it forwards the refusal: otherwise the second call is routed
// to this instance too, and refused again. The bus handles one connection's
// messages in the order they were sent, so it is enough that a ReleaseName was
// sent (not answered) before the reply is.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>

namespace epbrokerd::dbus {

class NameRelease {
 public:
  NameRelease(sdbus::IConnection& conn, std::string name);
  NameRelease(const NameRelease&) = delete;
  NameRelease& operator=(const NameRelease&) = delete;

  // Main loop: sends ReleaseName unless the bus thread did already; returns without
  // waiting for the answer.
  void start();
  // Bus thread, inside a call, before its reply: on return a ReleaseName has been
  // sent. If the main loop is sending one at that instant, a second copy is sent:
  // the main loop waits for the connection lock that the bus thread holds while it
  // dispatches, so waiting for it here would deadlock. The bus answers the later
  // copy "not ours", which is harmless.
  void before_reply();
  // Whether start() or before_reply() has begun sending.
  bool started() const { return stage_.load() != Stage::none; }
  // Waits (not on the bus thread) for the bus's answer to the first ReleaseName:
  // true once the name is no longer ours, false on timeout or error.
  bool wait(std::chrono::milliseconds timeout);

 private:
  enum class Stage { none, sending, sent };
  // Sends ReleaseName if nobody has begun to; false if somebody had.
  bool send_first();
  void send();

  std::string name_;
  std::unique_ptr<sdbus::IProxy> bus_;
  std::atomic<Stage> stage_{Stage::none};
  // Fulfilled by the first answer (answers arrive on the bus thread, one by one).
  struct Answer {
    std::atomic<bool> given{false};
    std::promise<bool> released;
  };
  std::shared_ptr<Answer> answer_ = std::make_shared<Answer>();
  std::shared_future<bool> released_ = answer_->released.get_future().share();
};

}  // namespace epbrokerd::dbus
