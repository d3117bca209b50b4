#include "catalog/package/prefetch_reader.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

namespace catalog::package {

PrefetchReader::PrefetchReader(ArchiveReader& inner, std::size_t chunk_bytes,
                               std::size_t max_queued_bytes)
    : inner_(inner),
      chunk_bytes_(std::max<std::size_t>(chunk_bytes, 1)),
      max_queued_bytes_(max_queued_bytes) {}

Result<std::unique_ptr<PrefetchReader>> PrefetchReader::start(ArchiveReader& inner,
                                                              std::size_t chunk_bytes,
                                                              std::size_t max_queued_bytes) {
  try {
    std::unique_ptr<PrefetchReader> r(new PrefetchReader(inner, chunk_bytes, max_queued_bytes));
    r->thread_ = std::thread([p = r.get()] { p->produce(); });
    return r;
  } catch (const std::exception& e) {
    return fail(Errc::io, std::string("cannot start the read-ahead thread: ") + e.what());
  }
}

PrefetchReader::~PrefetchReader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  space_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// ---- background thread ------------------------------------------------------------

void PrefetchReader::produce() {
  using Kind = Item::Kind;
  try {
    while (true) {
      // 1. The next header, or the end / an error (then the thread is done).
      auto entry = inner_.next();
      if (!entry) {
        push(Item{Kind::error, {}, {}, std::move(entry.error())});
        return;
      }
      if (!*entry) {
        push(Item{Kind::end_of_archive, {}, {}, {}});
        return;
      }
      if (!push(Item{Kind::entry, std::move(**entry), {}, {}})) return;
      // 2. All of its data, chunk by chunk.
      while (true) {
        std::vector<std::byte> buf = take_buffer();
        buf.resize(chunk_bytes_);
        auto n = inner_.read(buf);
        if (!n) {
          push(Item{Kind::error, {}, {}, std::move(n.error())});
          return;
        }
        if (*n == 0) {
          if (!push(Item{Kind::end_of_data, {}, {}, {}})) return;
          break;
        }
        buf.resize(*n);
        if (!push(Item{Kind::data, {}, std::move(buf), {}})) return;
      }
    }
  } catch (const std::exception& e) {  // memory exhaustion at most
    push(Item{Kind::error, {}, {}, Error{Errc::io, std::string("read-ahead: ") + e.what()}});
  }
}

bool PrefetchReader::push(Item item) {
  std::unique_lock lock(mutex_);
  space_cv_.wait(lock, [&] { return stop_ || queued_bytes_ < max_queued_bytes_; });
  if (stop_) return false;
  queued_bytes_ += item.data.size();
  queue_.push_back(std::move(item));
  lock.unlock();
  items_cv_.notify_one();
  return true;
}

std::vector<std::byte> PrefetchReader::take_buffer() {
  std::lock_guard lock(mutex_);
  if (free_buffers_.empty()) return {};
  std::vector<std::byte> buf = std::move(free_buffers_.back());
  free_buffers_.pop_back();
  return buf;
}

// ---- caller side ---------------------------------------------------------------------

PrefetchReader::Item PrefetchReader::pop() {
  if (final_) return *final_;
  std::unique_lock lock(mutex_);
  items_cv_.wait(lock, [&] { return !queue_.empty(); });
  Item item = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= item.data.size();
  lock.unlock();
  space_cv_.notify_one();
  if (item.kind == Item::Kind::end_of_archive || item.kind == Item::Kind::error) final_ = item;
  return item;
}

void PrefetchReader::recycle(std::vector<std::byte> buf) {
  if (buf.capacity() < chunk_bytes_) return;
  std::lock_guard lock(mutex_);
  if (free_buffers_.size() < max_queued_bytes_ / chunk_bytes_ + 2) {
    free_buffers_.push_back(std::move(buf));
  }
}

Result<std::optional<EntryInfo>> PrefetchReader::next() {
  using Kind = Item::Kind;
  // 1. Skip what is left of the current entry's data.
  recycle(std::exchange(current_, {}));
  offset_ = 0;
  while (in_entry_) {
    Item item = pop();
    if (item.kind == Kind::data) {
      recycle(std::move(item.data));
    } else if (item.kind == Kind::end_of_data) {
      in_entry_ = false;
    } else if (item.kind == Kind::error) {
      return std::unexpected(std::move(item.error));
    } else {
      in_entry_ = false;  // not produced: data always ends with end_of_data
    }
  }
  // 2. The next header.
  Item item = pop();
  switch (item.kind) {
    case Kind::entry:
      in_entry_ = true;
      return std::optional<EntryInfo>(std::move(item.info));
    case Kind::error:
      return std::unexpected(std::move(item.error));
    default:
      return std::optional<EntryInfo>();
  }
}

Result<std::size_t> PrefetchReader::read(std::span<std::byte> buf) {
  using Kind = Item::Kind;
  while (offset_ == current_.size()) {
    if (!in_entry_) return 0;
    recycle(std::exchange(current_, {}));
    offset_ = 0;
    Item item = pop();
    if (item.kind == Kind::data) {
      current_ = std::move(item.data);
    } else if (item.kind == Kind::error) {
      in_entry_ = false;
      return std::unexpected(std::move(item.error));
    } else {
      in_entry_ = false;  // end_of_data
      return 0;
    }
  }
  const std::size_t n = std::min(buf.size(), current_.size() - offset_);
  std::memcpy(buf.data(), current_.data() + offset_, n);
  offset_ += n;
  return n;
}

}  // namespace catalog::package
