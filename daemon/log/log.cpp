#include "daemon/log/log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

namespace epbrokerd::log {
namespace {

// The fields of the record being logged by emit() on this thread, read by the sink
// (spdlog's synchronous logger calls its sinks on the logging thread): each thread
// has its own, so nothing is shared.
thread_local const Fields* t_fields = nullptr;

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

int priority_of(Level level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LOG_DEBUG;
    case spdlog::level::info:
      return LOG_INFO;
    case spdlog::level::warn:
      return LOG_WARNING;
    case spdlog::level::err:
      return LOG_ERR;
    case spdlog::level::critical:
      return LOG_CRIT;
    case spdlog::level::off:
    case spdlog::level::n_levels:
      return LOG_INFO;
  }
  return LOG_INFO;
}

bool parse_u64(std::string_view text, unsigned long long& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == '"' || c == '\\' || c == 0x7f) return true;
  }
  return false;
}

void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// The one sink: the journal, stderr or nowhere, as the target says now.
class Sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit Sink(Target target) : target_(target) {}
  Target target() const { return target_.load(); }
  void set_target(Target target) { target_.store(target); }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    static const Fields kNone;
    const Fields& fields = t_fields != nullptr ? *t_fields : kNone;
    const std::string_view text(msg.payload.data(), msg.payload.size());
    switch (target_.load()) {
      case Target::journal: {
        const auto record = journal_record(msg.level, text, fields);
        std::vector<iovec> iov;
        iov.reserve(record.size());
        for (const auto& f : record) {
          iov.push_back({const_cast<char*>(f.data()), f.size()});
        }
        // A journal that is gone loses the record; nothing else can be done with it.
        (void)sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
        return;
      }
      case Target::console: {
        spdlog::memory_buf_t line;
        if (fields.empty()) {
          formatter_->format(msg, line);
        } else {
          const std::string with_fields = console_text(text, fields);
          spdlog::details::log_msg copy(msg);
          copy.payload = spdlog::string_view_t(with_fields.data(), with_fields.size());
          formatter_->format(copy, line);
        }
        std::fwrite(line.data(), 1, line.size(), stderr);
        std::fflush(stderr);
        return;
      }
      case Target::null:
        return;
    }
  }
  void flush_() override { std::fflush(stderr); }

 private:
  std::atomic<Target> target_;
};

// Set by init(), before any thread starts; never replaced (spdlog's free functions
// read the default logger without a lock).
std::shared_ptr<Sink> g_sink;
bool g_force_stderr = false;

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

Target auto_target() {
  // A stderr that merely inherited $JOURNAL_STREAM (e.g. redirected to a file by
  // whoever started us) does not match it, and gets plain lines.
  const bool journal =
      !g_force_stderr && is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  return journal ? Target::journal : Target::console;
}

void init(config::LogLevel level, bool force_stderr) {
  g_force_stderr = force_stderr;
  g_sink = std::make_shared<Sink>(auto_target());
  auto logger = std::make_shared<spdlog::logger>(std::string(kSyslogIdentifier), g_sink);
  // The console's lines; the journal stores time, pid and priority itself.
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e epbrokerd[%P] %l: %v");
  logger->set_level(to_spdlog(level));
  // Warnings and errors reach the sink at once (stderr is unbuffered anyway).
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

std::string_view target_name(Target target) {
  switch (target) {
    case Target::journal:
      return "journal";
    case Target::console:
      return "console";
    case Target::null:
      return "null";
  }
  return "console";
}

Target target() { return g_sink ? g_sink->target() : Target::console; }

void set_target(Target target) {
  if (g_sink) g_sink->set_target(target);
}

bool to_journal() { return target() == Target::journal; }

config::LogLevel level() {
  switch (spdlog::default_logger_raw()->level()) {
    case spdlog::level::trace:
      return config::LogLevel::trace;
    case spdlog::level::debug:
      return config::LogLevel::debug;
    case spdlog::level::info:
      return config::LogLevel::info;
    case spdlog::level::warn:
      return config::LogLevel::warn;
    case spdlog::level::err:
    case spdlog::level::critical:
    case spdlog::level::off:
    case spdlog::level::n_levels:
      return config::LogLevel::error;
  }
  return config::LogLevel::info;
}

void set_level(config::LogLevel level) {
  spdlog::default_logger_raw()->set_level(to_spdlog(level));
}

std::string_view syslog_level_name(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace:
    case config::LogLevel::debug:
      return "debug";
    case config::LogLevel::info:
      return "info";
    case config::LogLevel::warn:
      return "warning";
    case config::LogLevel::error:
      return "err";
  }
  return "info";
}

std::optional<config::LogLevel> level_from_syslog_name(std::string_view name) {
  if (name == "emerg" || name == "alert" || name == "crit" || name == "err") {
    return config::LogLevel::error;
  }
  if (name == "warning") return config::LogLevel::warn;
  if (name == "notice" || name == "info") return config::LogLevel::info;
  if (name == "debug") return config::LogLevel::debug;
  return std::nullopt;
}

Fields with(Fields base, const Fields& over) {
  for (const auto& f : over) {
    auto same =
        std::find_if(base.begin(), base.end(), [&](const Field& b) { return b.name == f.name; });
    if (same != base.end()) {
      same->value = f.value;
    } else {
      base.push_back(f);
    }
  }
  return base;
}

void flush() {
  if (auto logger = spdlog::default_logger()) logger->flush();
}

void emit(Level level, const Fields& fields, std::string_view message) {
  auto* logger = spdlog::default_logger_raw();
  if (!logger->should_log(level)) return;
  // For the sink, on this thread, for this record only.
  struct Scope {
    explicit Scope(const Fields& f) : saved(std::exchange(t_fields, &f)) {}
    ~Scope() { t_fields = saved; }
    const Fields* saved;
  } scope(fields);
  logger->log(level, spdlog::string_view_t(message.data(), message.size()));
}

std::vector<std::string> journal_record(Level level, std::string_view message,
                                        const Fields& fields) {
  std::vector<std::string> out;
  out.reserve(3 + fields.size());
  out.push_back("MESSAGE=" + std::string(message));
  out.push_back("PRIORITY=" + std::to_string(priority_of(level)));
  out.push_back("SYSLOG_IDENTIFIER=" + std::string(kSyslogIdentifier));
  for (const auto& f : fields) {
    if (f.value.empty()) continue;
    out.push_back(std::string(f.name) + "=" + f.value);
  }
  return out;
}

std::string console_text(std::string_view message, const Fields& fields) {
  std::string out(message);
  for (const auto& f : fields) {
    if (f.value.empty()) continue;
    out += ' ';
    out += f.name;
    out += '=';
    if (needs_quotes(f.value)) {
      append_quoted(out, f.value);
    } else {
      out += f.value;
    }
  }
  return out;
}

}  // namespace epbrokerd::log
