// epbrokerd's one logger (spdlog), set up once by main() before any thread starts.
//
// Where records go (the target, which org.freedesktop.LogControl1's LogTarget can
// change at run time: daemon/dbus/log_control.hpp):
//   - journal: under systemd, i.e. when stderr is connected to the journal (systemd
//     sets $JOURNAL_STREAM to "DEV:INO" of that stream, see systemd.exec(5)), to
//     journald through sd_journal_sendv(), with PRIORITY= from the level (trace and
//     debug -> 7, info -> 6, warn -> 4, error -> 3), SYSLOG_IDENTIFIER=epbrokerd and
//     the record's structured fields (below), so `journalctl -u epbrokerd -p warning`
//     and `journalctl EPBROKER_PACKAGE=openvino` work;
//   - console: otherwise, to stderr, one line per record, "TIME epbrokerd[PID] LEVEL:
//     text", the structured fields appended as " NAME=value" (a value with a blank,
//     a quote, a backslash or a control character in double quotes, C-escaped);
//   - null: nowhere.
// Records below the level (epbroker.conf log_level / --log-level, or LogControl1's
// LogLevel since) are dropped. The logger is thread-safe: the bus thread, the main
// loop and the install/refresh workers all log through it, and the level and the
// target are atomics, set from the bus thread while others log.
//
// Structured fields: event() logs one record with journal fields (Field) besides
// its text: the job lines (core::job_log_fields()), and the events an admin
// filters on with a MESSAGE_ID (message_ids.hpp, explained by the catalog
// systemd/epbroker.catalog). Field names are the constants below (journald's rules:
// A-Z, 0-9 and '_', not starting with '_' or a digit, at most 64 characters);
// `_UID` and the other '_' fields are journald's own, trusted ones.
//
// Before init() nothing should be logged here: user-facing start-up errors (bad
// flags, bad configuration) are printed by main() on stderr as plain messages.
// Records logged through a default logger init() did not set up (core unit tests,
// the commit helper) lose their fields.
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/config/config.hpp"

namespace epbrokerd::log {

// Whether `fd` is the stream $JOURNAL_STREAM names: `journal_stream` (the variable's
// value, may be null) is "DEV:INO" in decimal and matches fd's st_dev and st_ino.
bool is_journal_stream(int fd, const char* journal_stream);

// Sets up the default spdlog logger as described above, at `level`, with the
// target auto_target() chooses. `force_stderr` skips the journal check (tests).
void init(config::LogLevel level, bool force_stderr = false);

// SYSLOG_IDENTIFIER= of every record, and LogControl1's SyslogIdentifier.
inline constexpr std::string_view kSyslogIdentifier = "epbrokerd";

enum class Target { journal, console, null };
// "journal", "console", "null": LogControl1's names.
std::string_view target_name(Target target);
// The target "auto" means: journal when stderr is the journal stream, else console
// (console always when init() was told force_stderr).
Target auto_target();
Target target();
void set_target(Target target);

// Whether records go to the journal now.
bool to_journal();

config::LogLevel level();
void set_level(config::LogLevel level);

// LogControl1's LogLevel names (syslog's, as systemd uses them): trace reads as
// "debug", warn as "warning", error as "err". Of the eight names, emerg, alert,
// crit and err set error, warning warn, notice and info info, debug debug.
std::string_view syslog_level_name(config::LogLevel level);
std::optional<config::LogLevel> level_from_syslog_name(std::string_view name);

// Flushes what is buffered (before _exit()).
void flush();

// The logging calls: log::info("job {} done", id) etc. (fmt syntax).
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::trace;
using spdlog::warn;
using Level = spdlog::level::level_enum;

// ---- structured fields ----

// One journal field of a record. `name` is one of the constants below (static
// storage); `value` any bytes.
struct Field {
  std::string_view name;
  std::string value;

  friend bool operator==(const Field&, const Field&) = default;
};
using Fields = std::vector<Field>;

// `base` with `over` laid on it: a field of `over` replaces the one of the same
// name in `base` (an empty value too, which the sinks then leave out), the others
// are appended. E.g. a job's fields (core::job_log_fields) with the remote or the
// package one record is about.
Fields with(Fields base, const Fields& over);

// The catalog entry (message_ids.hpp) explaining the record.
inline constexpr std::string_view kMessageId = "MESSAGE_ID";
// A job's id (Job1 /org/epbroker/Broker1/job/N) and kind (install, refresh, verify).
inline constexpr std::string_view kJob = "EPBROKER_JOB";
inline constexpr std::string_view kJobKind = "EPBROKER_JOB_KIND";
// The package, its version (the one installed, updated to, removed or damaged),
// the version before an update, and the remote it comes from. A model's history
// and verification records name the model in EPBROKER_PACKAGE and its variant
// as "VERSION/VARIANT" in EPBROKER_VERSION.
inline constexpr std::string_view kPackage = "EPBROKER_PACKAGE";
inline constexpr std::string_view kVersion = "EPBROKER_VERSION";
inline constexpr std::string_view kFromVersion = "EPBROKER_FROM_VERSION";
inline constexpr std::string_view kRemote = "EPBROKER_REMOTE";
// The uid of the bus caller who asked (from the bus credentials; 0 for the
// daemon's own work: automatic refreshes and updates).
inline constexpr std::string_view kCallerUid = "EPBROKER_CALLER_UID";
// The error's kind (org.epbroker.Error.<kind>: "Network", "VerificationFailed", ...).
inline constexpr std::string_view kError = "EPBROKER_ERROR";

// Every field name above, for tests and the catalog's check.
inline constexpr std::string_view kFieldNames[] = {
    kMessageId, kJob, kJobKind, kPackage, kVersion, kFromVersion, kRemote, kCallerUid, kError};

// Logs one record with `fields`: log::event(log::Level::info, fields, "job {} done", id).
void emit(Level level, const Fields& fields, std::string_view message);
template <typename... Args>
void event(Level level, const Fields& fields, fmt::format_string<Args...> format, Args&&... args) {
  if (!spdlog::should_log(level)) return;
  emit(level, fields, fmt::format(format, std::forward<Args>(args)...));
}

// What a record becomes (exposed for tests). In the journal: "MESSAGE=text",
// "PRIORITY=N", "SYSLOG_IDENTIFIER=epbrokerd", then each field as "NAME=value", in
// order, those with an empty value left out. On the console: the text, then " NAME=value"
// per field, quoted as said above.
std::vector<std::string> journal_record(Level level, std::string_view message,
                                        const Fields& fields);
std::string console_text(std::string_view message, const Fields& fields);

}  // namespace epbrokerd::log
