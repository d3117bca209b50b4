#include "tests/support/fault_fetcher.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>
#include <system_error>
#include <utility>

namespace tests::support {

using catalog::Errc;
using catalog::Result;

FaultFetcher::FaultFetcher(catalog::tuf::Fetcher& inner) : inner_(inner) {}

void FaultFetcher::set_fault(const std::string& url_suffix, Fault fault) {
  faults_.insert_or_assign(url_suffix, std::move(fault));
}

void FaultFetcher::serve(const std::string& url_suffix, std::string bytes) {
  Fault f;
  f.body = std::move(bytes);
  set_fault(url_suffix, std::move(f));
}

void FaultFetcher::append(const std::string& url_suffix, std::string bytes) {
  Fault f;
  f.append = std::move(bytes);
  set_fault(url_suffix, std::move(f));
}

void FaultFetcher::truncate(const std::string& url_suffix, std::size_t size) {
  Fault f;
  f.truncate_to = size;
  set_fault(url_suffix, std::move(f));
}

void FaultFetcher::endless(const std::string& url_suffix) {
  Fault f;
  f.endless = true;
  set_fault(url_suffix, std::move(f));
}

void FaultFetcher::fail_with(const std::string& url_suffix, Errc code) {
  Fault f;
  f.error = code;
  set_fault(url_suffix, std::move(f));
}

void FaultFetcher::clear_fault(const std::string& url_suffix) { faults_.erase(url_suffix); }

void FaultFetcher::clear_faults() { faults_.clear(); }

void FaultFetcher::reset_log() {
  log_.clear();
  endless_limit_reached_ = false;
}

const Fault* FaultFetcher::find(const std::string& url) const {
  const Fault* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [suffix, fault] : faults_) {
    if (url.ends_with(suffix) && (best == nullptr || suffix.size() > best_len)) {
      best = &fault;
      best_len = suffix.size();
    }
  }
  return best;
}

std::size_t FaultFetcher::requests(std::string_view url_suffix) const {
  return static_cast<std::size_t>(std::count_if(
      log_.begin(), log_.end(), [&](const Request& r) { return r.url.ends_with(url_suffix); }));
}

std::uint64_t FaultFetcher::delivered(std::string_view url_suffix) const {
  std::uint64_t total = 0;
  for (const auto& r : log_) {
    if (r.url.ends_with(url_suffix)) total += r.delivered;
  }
  return total;
}

Result<void> FaultFetcher::fetch(const std::string& url, std::uint64_t max_bytes,
                                 const catalog::tuf::ChunkSink& sink) {
  log_.push_back(Request{url, max_bytes, 0});
  const std::size_t index = log_.size() - 1;
  auto counting = [&](std::span<const std::byte> chunk) -> Result<void> {
    log_[index].delivered += chunk.size();
    return sink(chunk);
  };
  constexpr auto kNoCap = std::numeric_limits<std::uint64_t>::max();

  const Fault* fault = find(url);
  if (fault == nullptr) return inner_.fetch(url, enforce_cap_ ? max_bytes : kNoCap, counting);
  if (fault->error) return catalog::fail(*fault->error, url + ": injected fault");

  // 1. The body: the fault's own, or the honest one.
  std::string body;
  if (fault->body) {
    body = *fault->body;
  } else {
    auto honest = inner_.fetch_bytes(url, kNoCap);
    if (honest) {
      body = std::move(*honest);
    } else if (honest.error().code != Errc::not_found ||
               (fault->append.empty() && !fault->endless)) {
      return std::unexpected(honest.error());
    }
  }
  if (fault->truncate_to && *fault->truncate_to < body.size()) body.resize(*fault->truncate_to);
  body += fault->append;

  // 2. Delivered in chunks, capped like a real transport unless told not to.
  std::uint64_t sent = 0;
  auto deliver = [&](std::string_view bytes) -> Result<void> {
    if (enforce_cap_ && sent + bytes.size() > max_bytes) {
      return catalog::fail(Errc::length_mismatch,
                           url + ": more than " + std::to_string(max_bytes) + " bytes");
    }
    sent += bytes.size();
    return counting(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  };
  for (std::size_t off = 0; off < body.size(); off += kChunk) {
    if (auto ok = deliver(std::string_view(body).substr(off, kChunk)); !ok) return ok;
  }
  if (!fault->endless) return {};

  // 3. Data without end, until someone refuses it.
  const std::string filler(kChunk, kFiller);
  while (sent < kEndlessSafetyLimit) {
    if (auto ok = deliver(filler); !ok) return ok;
  }
  endless_limit_reached_ = true;
  return {};
}

std::map<std::string, std::string> read_tree(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out.emplace(std::filesystem::relative(it->path(), dir).string(), ss.str());
  }
  return out;
}

}  // namespace tests::support
