// What /proc says about a process (the daemon under attack or load): resident
// memory and open descriptors, for tests, the bus fuzzer and the load bench.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tests::daemon {

// A "Vm...:" field of /proc/PID/status in kB; -1 when the process is gone.
inline long status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// Whether `pid` runs (a zombie, not yet reaped by its parent, counts as gone).
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Resident memory (VmRSS) of `pid` in kB; -1 when the process is gone.
inline long rss_kb(pid_t pid) { return status_kb(pid, "VmRSS"); }

// Address space (VmSize) of `pid` in kB: grows by a thread's whole stack (8 MiB)
// for every thread that exited but was not joined.
inline long vm_kb(pid_t pid) { return status_kb(pid, "VmSize"); }

// Open file descriptors of `pid`; -1 when the process is gone.
inline long fd_count(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
  if (ec) return -1;
  long n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return -1;
    ++n;
  }
  return n;
}

// Whether `pid` runs with AddressSanitizer (GCC links libasan dynamically): its
// RSS and VmSize then include ASan's shadow memory and quarantine of freed blocks,
// so bounds on them say nothing about the daemon's own memory.
inline bool under_asan(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("/libasan.so") != std::string::npos) return true;
  }
  return false;
}

}  // namespace tests::daemon
