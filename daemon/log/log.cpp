#include "daemon/log/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace epbrokerd::log {
namespace {

bool g_journal = false;

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace:
      return spdlog::level::trace;
    case config::LogLevel::debug:
      return spdlog::level::debug;
    case config::LogLevel::info:
      return spdlog::level::info;
    case config::LogLevel::warn:
      return spdlog::level::warn;
    case config::LogLevel::error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

bool parse_u64(std::string_view text, unsigned long long& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool is_journal_stream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  const std::string_view value(journal_stream);
  const auto colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  if (!parse_u64(value.substr(0, colon), dev) || !parse_u64(value.substr(colon + 1), ino)) {
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void init(config::LogLevel level, bool force_stderr) {
  // A stderr that merely inherited $JOURNAL_STREAM (e.g. redirected to a file by
  // whoever started us) does not match it, and gets plain lines.
  g_journal = !force_stderr && is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  std::shared_ptr<spdlog::logger> logger;
  if (g_journal) {
    // The journal stores time, pid and priority itself: the message only.
    logger = std::make_shared<spdlog::logger>(
        "epbrokerd", std::make_shared<spdlog::sinks::systemd_sink_mt>("epbrokerd"));
  } else {
    logger = std::make_shared<spdlog::logger>("epbrokerd",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e epbrokerd[%P] %l: %v");
  }
  logger->set_level(to_spdlog(level));
  // Warnings and errors reach the sink at once (stderr is unbuffered anyway).
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

bool to_journal() { return g_journal; }

void flush() {
  if (auto logger = spdlog::default_logger()) logger->flush();
}

}  // namespace epbrokerd::log
