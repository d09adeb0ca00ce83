// Big zeroed blocks, mapped from the system and kept for reuse once freed.
#include <sys/mman.h>
#include <unistd.h>

#include <iterator>
#include <bit>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "assoc/big_blocks.hpp"

namespace assoc::big_blocks {
namespace {

// At most this much of freed memory is kept by default: enough for the arrays of a few
// million-row tables, small beside the memory of a machine that loads them.
constexpr std::size_t kDefaultKeptLimit = std::size_t{256} << 20;
// Blocks from this size on ask the kernel for huge pages (where it hands them out on request).
constexpr std::size_t kHugeBytes = std::size_t{2} << 20;

std::size_t page_size() {
  static const std::size_t size = [] {
    const long s = sysconf(_SC_PAGESIZE);
    return s > 0 ? static_cast<std::size_t>(s) : std::size_t{4096};
  }();
  return size;
}

// The size class of a request: rounded up to one of four steps between powers of two
// (1, 1.25, 1.5, 1.75 times 2^k), then to whole pages. At most a quarter is slack, and pages
// of it that nobody writes never become resident.
std::size_t class_bytes(std::size_t bytes) {
  const int top = static_cast<int>(std::bit_width(bytes)) - 1;  // bytes >= 2^top; kMinBytes keeps top >= 20
  const std::size_t step = std::size_t{1} << (top - 2);
  const std::size_t rounded = (bytes + step - 1) / step * step;
  const std::size_t page = page_size();
  return (rounded + page - 1) / page * page;
}

struct Cache {
  std::mutex mutex;
  // Kept blocks (class bytes, address), oldest first. A few hundred at most (the limit over
  // 1 MiB), so a scan finds a class as fast as an index would, and nothing is held twice.
  std::vector<std::pair<std::size_t, void*>> kept;
  std::size_t kept_bytes = 0;
  std::size_t kept_limit = kDefaultKeptLimit;
  Stats counts;

  // The newest kept block of a class, taken out of the list; nullptr when there is none.
  void* take(std::size_t bytes) noexcept {
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      if (it->first != bytes) continue;
      void* p = it->second;
      kept.erase(std::next(it).base());
      kept_bytes -= bytes;
      return p;
    }
    return nullptr;
  }

  // Gives kept blocks back to the system, oldest first, until at most `limit` bytes are
  // kept. Allocates nothing, so it cannot fail.
  void shed(std::size_t limit) noexcept {
    std::size_t i = 0;
    for (; kept_bytes > limit && i < kept.size(); ++i) {
      munmap(kept[i].second, kept[i].first);
      kept_bytes -= kept[i].first;
      ++counts.unmapped;
    }
    kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(i));
  }
};

thread_local int uncleared_depth = 0;

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: blocks may be freed during exit
  return *c;
}

// A kept block of `mapped` bytes (nullptr: none), counted as reused or, when none, as mapped.
void* take_kept(std::size_t mapped) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  void* kept = c.take(mapped);
  ++(kept != nullptr ? c.counts.reused : c.counts.mapped);
  return kept;
}

void* map_fresh(std::size_t mapped) {
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    --c.counts.mapped;
    throw std::bad_alloc();
  }
#ifdef MADV_HUGEPAGE
  if (mapped >= kHugeBytes) madvise(p, mapped, MADV_HUGEPAGE);
#endif
  return p;
}

std::size_t checked_class(std::size_t bytes) {
  if (bytes > (SIZE_MAX >> 1)) throw std::bad_alloc();  // the size class would overflow
  return class_bytes(bytes);
}

}  // namespace

void* allocate(std::size_t bytes) {
  const std::size_t mapped = checked_class(bytes);
  if (void* kept = take_kept(mapped)) {
    // The slack past `bytes` is never handed out, so it needs no clearing either.
    return uncleared_depth > 0 ? kept : std::memset(kept, 0, bytes);
  }
  return map_fresh(mapped);
}

void* allocate_lazy(std::size_t bytes) {
  const std::size_t mapped = checked_class(bytes);
  {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    ++c.counts.mapped;
  }
  return map_fresh(mapped);
}

void release_lazy(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  munmap(p, class_bytes(bytes));
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  ++c.counts.unmapped;
}

void release(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t mapped = class_bytes(bytes);
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  bool kept = false;
  if (mapped <= c.kept_limit) {
    try {
      c.kept.emplace_back(mapped, p);
      kept = true;
    } catch (...) {  // no memory for the bookkeeping: the block goes back instead
    }
  }
  if (kept) {
    c.kept_bytes += mapped;
    c.shed(c.kept_limit);
  } else {
    munmap(p, mapped);
    ++c.counts.unmapped;
  }
}

Uncleared::Uncleared() { ++uncleared_depth; }
Uncleared::~Uncleared() { --uncleared_depth; }

Stats stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  Stats s = c.counts;
  s.kept_bytes = c.kept_bytes;
  s.kept_limit = c.kept_limit;
  return s;
}

void set_kept_limit(std::size_t bytes) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.kept_limit = bytes;
  c.shed(bytes);
}

}  // namespace assoc::big_blocks
