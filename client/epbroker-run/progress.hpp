// epbroker-run's install progress on stderr, and Ctrl-C (or SIGTERM) as a cancel
// of the install job it waits for; shared by the providers (acquire.hpp) and the
// model (model_fetch.hpp).
#pragma once

#include <signal.h>

#include <string>

#include <epbroker/client.hpp>

namespace epbroker_run {

// On a terminal one line rewritten in place, otherwise a line per state change
// and per 10% of the download: "installing TARGET: STATE x / y MiB (z%)".
class ProgressPrinter {
 public:
  ProgressPrinter();
  void operator()(const epbroker::Progress& p);

 private:
  bool tty_;
  std::string target_;
  epbroker::JobState state_ = epbroker::JobState::unknown;
  int tenth_ = -1;
};

// The token SIGINT/SIGTERM cancel while an InterruptScope lives (cancel() is one
// atomic store: async-signal-safe). Constructed on first use, before any handler
// can run.
epbroker::CancelToken& interrupt_token();

// SIGINT/SIGTERM cancel interrupt_token() while this lives; the previous handlers
// after.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace epbroker_run
