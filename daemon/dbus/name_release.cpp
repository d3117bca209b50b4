#include "daemon/dbus/name_release.hpp"

#include <cstdint>
#include <utility>

#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

NameRelease::NameRelease(sdbus::IConnection& conn, std::string name)
    : name_(std::move(name)),
      bus_(sdbus::createProxy(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus")) {}

void NameRelease::start() { (void)send_first(); }

void NameRelease::before_reply() {
  // Not first, and not sent yet: the main loop is sending and may be waiting for
  // the lock held here. Send a copy rather than wait (see the header).
  if (!send_first() && stage_.load() == Stage::sending) send();
}

bool NameRelease::send_first() {
  auto expected = Stage::none;
  if (!stage_.compare_exchange_strong(expected, Stage::sending)) return false;
  send();
  stage_ = Stage::sent;
  return true;
}

void NameRelease::send() {
  try {
    // Sent now (queued behind everything sent before on this connection); the
    // answer comes on the bus thread.
    bus_->callMethodAsync("ReleaseName")
        .onInterface("org.freedesktop.DBus")
        .withArguments(name_)
        .uponReplyInvoke(
            [answer = answer_, name = name_](const sdbus::Error* error, std::uint32_t result) {
              if (answer->given.exchange(true)) return;
              if (error != nullptr) {
                log::warn("cannot release {}: {}", name, error->getMessage());
                answer->released.set_value(false);
                return;
              }
              // 1: released; 2: nobody owns it; 3: another connection does. Ours it is not.
              log::debug("released {} ({})", name, result);
              answer->released.set_value(true);
            });
  } catch (const sdbus::Error& e) {
    log::warn("cannot release {}: {}", name_, e.getMessage());
    // A failed send leaves no answer to wait for.
    if (!answer_->given.exchange(true)) answer_->released.set_value(false);
  }
}

bool NameRelease::wait(std::chrono::milliseconds timeout) {
  if (released_.wait_for(timeout) != std::future_status::ready) return false;
  return released_.get();
}

}  // namespace epbrokerd::dbus
