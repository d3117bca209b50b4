#include "daemon/dbus/log_control.hpp"

#include "daemon/dbus/errors.hpp"
#include "daemon/dbus/service.hpp"
#include "daemon/log/log.hpp"

namespace epbrokerd::dbus {

LogControl::LogControl(sdbus::IConnection& conn) : AdaptorInterfaces(conn, kLogControlPath) {
  registerAdaptor();
}

LogControl::~LogControl() { unregisterAdaptor(); }

std::string LogControl::authorize_set(const char* property) {
  const auto ctx = Service::context_of(getObject());
  if (ctx.uid != 0) {
    log::info("refused setting LogControl1.{} to {} (uid {}): root only", property, ctx.sender,
              ctx.uid);
    throw_bus_error({core::Errc::NotAuthorized, std::string("only root may set LogControl1.") +
                                                    property + " (uid " + std::to_string(ctx.uid) +
                                                    ")"});
  }
  return ctx.sender + " (uid " + std::to_string(ctx.uid) + ")";
}

std::string LogControl::LogLevel() {
  return guarded([] { return std::string(log::syslog_level_name(log::level())); });
}

void LogControl::LogLevel(const std::string& value) {
  guarded([&] {
    const std::string who = authorize_set("LogLevel");
    const auto level = log::level_from_syslog_name(value);
    if (!level) {
      throw_bus_error(
          {core::Errc::InvalidArgument,
           "LogLevel: '" + value +
               "' is not one of emerg, alert, crit, err, warning, notice, info, debug"});
    }
    log::set_level(*level);
    // At info, so that it shows whatever the new level (unless err or above).
    log::info("log level set to {} by {}", log::syslog_level_name(*level), who);
  });
}

std::string LogControl::LogTarget() {
  return guarded([] { return std::string(log::target_name(log::target())); });
}

void LogControl::LogTarget(const std::string& value) {
  guarded([&] {
    const std::string who = authorize_set("LogTarget");
    log::Target target = log::Target::console;
    if (value == "auto") {
      target = log::auto_target();
    } else if (value == "journal") {
      target = log::Target::journal;
    } else if (value == "console") {
      target = log::Target::console;
    } else if (value == "null") {
      target = log::Target::null;
    } else {
      throw_bus_error({core::Errc::InvalidArgument,
                       "LogTarget: '" + value + "' is not one of journal, console, null, auto"});
    }
    // Said where the records went so far, and where they go from now on.
    log::info("log target set to {} by {}", log::target_name(target), who);
    log::set_target(target);
    log::info("log target set to {} by {}", log::target_name(target), who);
  });
}

std::string LogControl::SyslogIdentifier() { return std::string(log::kSyslogIdentifier); }

}  // namespace epbrokerd::dbus
