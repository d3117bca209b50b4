// epbrokerd's one logger (spdlog), set up once by main() before any thread starts.
//
// Where records go:
//   - under systemd, i.e. when stderr is connected to the journal (systemd sets
//     $JOURNAL_STREAM to "DEV:INO" of that stream, see systemd.exec(5)): to journald
//     through sd_journal_send(), with PRIORITY= from the level (trace and debug ->
//     7, info -> 6, warn -> 4, error -> 3) and SYSLOG_IDENTIFIER=epbrokerd, so
//     `journalctl -u epbrokerd -p warning` works;
//   - otherwise: to stderr, one line per record, "TIME epbrokerd[PID] LEVEL: text".
// Records below the configured level (epbroker.conf log_level / --log-level) are
// dropped. The logger is thread-safe: the bus thread, the main loop and the
// install/refresh workers all log through it.
//
// Before init() nothing should be logged here: user-facing start-up errors (bad
// flags, bad configuration) are printed by main() on stderr as plain messages.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "daemon/config/config.hpp"

namespace epbrokerd::log {

// Whether `fd` is the stream $JOURNAL_STREAM names: `journal_stream` (the variable's
// value, may be null) is "DEV:INO" in decimal and matches fd's st_dev and st_ino.
bool is_journal_stream(int fd, const char* journal_stream);

// Sets up the default spdlog logger as described above, at `level`.
// `force_stderr` skips the journal check (tests).
void init(config::LogLevel level, bool force_stderr = false);

// Whether init() chose the journal.
bool to_journal();

// Flushes what is buffered (before _exit()).
void flush();

// The logging calls: log::info("job {} done", id) etc. (fmt syntax).
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::trace;
using spdlog::warn;

}  // namespace epbrokerd::log
