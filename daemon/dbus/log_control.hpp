// org.freedesktop.LogControl1 at /org/freedesktop/LogControl1 (systemd's interface,
// dbus/org.freedesktop.LogControl1.xml): `systemctl service-log-level epbrokerd
// debug` and `systemctl service-log-target epbrokerd console` change the daemon's
// log level and target (log/log.hpp) while it runs. systemctl finds the daemon
// by the unit's BusName= (org.epbroker.Broker1).
//
// Reading is open to every caller. Setting is for root (uid 0, from the bus
// credentials) only, whatever polkit says: a debug log tells more than the bus API
// does (paths, remotes, every caller's calls). Anyone else gets
// org.epbroker.Error.NotAuthorized; a value outside the interface's names,
// org.epbroker.Error.InvalidArgument. Each change is logged with who made it.
// Setters run on the bus thread; the level and the target are atomics there.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <string>

#include "generated/dbus/LogControl1_adaptor.h"

namespace epbrokerd::dbus {

inline constexpr const char* kLogControlPath = "/org/freedesktop/LogControl1";

class LogControl final : public sdbus::AdaptorInterfaces<org::freedesktop::LogControl1_adaptor> {
 public:
  explicit LogControl(sdbus::IConnection& conn);
  ~LogControl();

 private:
  std::string LogLevel() override;
  void LogLevel(const std::string& value) override;
  std::string LogTarget() override;
  void LogTarget(const std::string& value) override;
  std::string SyslogIdentifier() override;

  // Throws NotAuthorized unless the caller of the Set being processed is root;
  // "CALLER (uid N)" for the log line otherwise.
  std::string authorize_set(const char* property);
};

}  // namespace epbrokerd::dbus
