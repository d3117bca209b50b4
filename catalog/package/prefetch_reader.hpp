// Read-ahead over another ArchiveReader on a background thread, so that
// decompression overlaps with what the caller does with the data (hashing and
// writing, in the extractor).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "catalog/error.hpp"
#include "catalog/package/archive_reader.hpp"

namespace catalog::package {

// Behaves exactly like `inner` (same entries, data and errors, in the same
// order) while a background thread calls `inner` ahead of the caller, holding at
// most `max_queued_bytes` of data (plus one chunk) in memory. `inner` must not be
// used by anyone else while this reader lives; it is only called from the
// background thread. Destroying the reader stops and joins the thread (after the
// call to `inner` in progress, if any, returns).
class PrefetchReader final : public ArchiveReader {
 public:
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{8} << 20;

  // Starts the thread. Errors: Errc::io when it cannot be started (callers can
  // fall back to `inner` itself).
  static Result<std::unique_ptr<PrefetchReader>> start(
      ArchiveReader& inner, std::size_t chunk_bytes = kDefaultChunkBytes,
      std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);

  ~PrefetchReader() override;
  PrefetchReader(const PrefetchReader&) = delete;
  PrefetchReader& operator=(const PrefetchReader&) = delete;

  Result<std::optional<EntryInfo>> next() override;
  Result<std::size_t> read(std::span<std::byte> buf) override;

 private:
  struct Item {
    enum class Kind { entry, data, end_of_data, end_of_archive, error };
    Kind kind = Kind::end_of_archive;
    EntryInfo info;               // Kind::entry
    std::vector<std::byte> data;  // Kind::data
    Error error{};                // Kind::error
  };

  PrefetchReader(ArchiveReader& inner, std::size_t chunk_bytes, std::size_t max_queued_bytes);

  // Background thread.
  void produce();
  bool push(Item item);  // false once stopped
  std::vector<std::byte> take_buffer();

  // Caller side.
  Item pop();  // the next item, or the final one again once the stream ended
  void recycle(std::vector<std::byte> buf);

  ArchiveReader& inner_;
  const std::size_t chunk_bytes_;
  const std::size_t max_queued_bytes_;

  std::mutex mutex_;
  std::condition_variable items_cv_;                  // an item was queued
  std::condition_variable space_cv_;                  // room in the queue, or stop
  std::deque<Item> queue_;                            // guarded by mutex_
  std::size_t queued_bytes_ = 0;                      // guarded by mutex_
  std::vector<std::vector<std::byte>> free_buffers_;  // guarded by mutex_
  bool stop_ = false;                                 // guarded by mutex_

  // Caller-side state (only the caller's thread).
  std::optional<Item> final_;       // end_of_archive or error, once seen
  bool in_entry_ = false;           // data of the current entry not all seen
  std::vector<std::byte> current_;  // data chunk being handed out
  std::size_t offset_ = 0;

  std::thread thread_;  // last: started once everything else exists
};

}  // namespace catalog::package
