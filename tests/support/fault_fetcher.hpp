// A Fetcher that plays a hostile server or mirror in front of an honest one.
//
// FaultFetcher wraps another catalog::tuf::Fetcher (usually a DirFetcher over a
// repository on disk). Requests whose URL matches a registered fault get that
// fault's answer instead of (or on top of) the honest bytes: other bytes, a cut
// or extended body, data without end, or a failure. Every request is logged
// with the bytes it handed to the sink, so tests can assert what was asked for
// and that a defence stopped reading early.
//
// Not thread-safe: one test drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/tuf/fetcher.hpp"

namespace tests::support {

// What the hostile server answers for a URL. Steps apply in this order:
// `error` (fail at once), else the body (`body`, or the honest one), cut to
// `truncate_to`, then `append`, then, if `endless`, filler bytes forever.
struct Fault {
  std::optional<catalog::Errc> error;      // fail the request with this code
  std::optional<std::string> body;         // served instead of the honest bytes
  std::optional<std::size_t> truncate_to;  // keep only this many bytes
  std::string append;                      // extra bytes after the body
  bool endless = false;                    // then filler without end
};

class FaultFetcher : public catalog::tuf::Fetcher {
 public:
  // Bytes per sink call, honest and filler alike.
  static constexpr std::size_t kChunk = 4096;
  // An endless stream that nothing stops ends here (the test then sees
  // endless_limit_reached()), so a broken defence fails instead of hanging.
  static constexpr std::uint64_t kEndlessSafetyLimit = std::uint64_t{256} << 20;
  // Filler byte of endless streams.
  static constexpr char kFiller = '\xa5';

  // `inner` must outlive this object.
  explicit FaultFetcher(catalog::tuf::Fetcher& inner);

  catalog::Result<void> fetch(const std::string& url, std::uint64_t max_bytes,
                              const catalog::tuf::ChunkSink& sink) override;

  // Faults apply to every URL that ends with `url_suffix`; where several
  // match, the longest suffix wins. A later fault for the same suffix
  // replaces the earlier one. Where the honest server has no such file
  // (not_found), a fault that appends or streams starts from an empty body.
  void set_fault(const std::string& url_suffix, Fault fault);
  void serve(const std::string& url_suffix, std::string bytes);
  void append(const std::string& url_suffix, std::string bytes);
  void truncate(const std::string& url_suffix, std::size_t size);
  void endless(const std::string& url_suffix);
  void fail_with(const std::string& url_suffix, catalog::Errc code);
  void clear_fault(const std::string& url_suffix);
  void clear_faults();

  // On (default): honours the Fetcher contract like a real transport, never
  // handing over more than `max_bytes` and failing with length_mismatch at
  // the first excess. Off: a transport that ignores the cap and delivers until
  // the sink refuses, so the caller's own bound is what has to stop it.
  void set_enforce_cap(bool on) { enforce_cap_ = on; }

  struct Request {
    std::string url;
    std::uint64_t max_bytes = 0;
    std::uint64_t delivered = 0;  // bytes handed to the sink
  };
  const std::vector<Request>& log() const { return log_; }
  // fetch() calls for URLs ending with `url_suffix`.
  std::size_t requests(std::string_view url_suffix) const;
  // Bytes handed to sinks for those calls, in total.
  std::uint64_t delivered(std::string_view url_suffix) const;
  // Whether an endless stream ran to kEndlessSafetyLimit (nothing stopped it).
  bool endless_limit_reached() const { return endless_limit_reached_; }
  void reset_log();

 private:
  const Fault* find(const std::string& url) const;

  catalog::tuf::Fetcher& inner_;
  std::map<std::string, Fault> faults_;  // URL suffix -> fault
  std::vector<Request> log_;
  bool enforce_cap_ = true;
  bool endless_limit_reached_ = false;
};

// Every regular file under `dir` (recursively, hidden ones included) by its
// path relative to `dir`, with its bytes. Empty if `dir` does not exist. For
// "nothing changed / nothing left behind" checks.
std::map<std::string, std::string> read_tree(const std::filesystem::path& dir);

}  // namespace tests::support
