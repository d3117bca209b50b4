#include "client/epbroker-run/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace epbroker_run {

namespace {

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

extern "C" void on_interrupt(int /*sig*/) { interrupt_token().cancel(); }

}  // namespace

ProgressPrinter::ProgressPrinter() : tty_(isatty(STDERR_FILENO) == 1) {}

void ProgressPrinter::operator()(const epbroker::Progress& p) {
  const int tenth = p.bytes_total > 0 ? static_cast<int>(10 * p.bytes_done / p.bytes_total) : -1;
  const bool changed = p.target != target_ || p.state != state_;
  if (!tty_ && !changed && tenth == tenth_) return;
  target_ = p.target;
  state_ = p.state;
  tenth_ = tenth;
  std::string line = "installing " + p.target + ": " + std::string(epbroker::to_string(p.state));
  if (p.bytes_total > 0) {
    line += " " + mib(p.bytes_done) + " / " + mib(p.bytes_total) + " (" +
            std::to_string(100 * p.bytes_done / p.bytes_total) + "%)";
  }
  const bool final = epbroker::is_final(p.state);
  if (tty_) {
    std::cerr << "\r\033[K" << line << (final ? "\n" : "") << std::flush;
  } else {
    std::cerr << line << "\n";
  }
}

epbroker::CancelToken& interrupt_token() {
  static epbroker::CancelToken token;
  return token;
}

InterruptScope::InterruptScope() {
  (void)interrupt_token();  // constructed before the handler can use it
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

}  // namespace epbroker_run
