// Big zeroed blocks, mapped from the system and kept for reuse once freed.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "assoc/calloc_allocator.hpp"

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
  std::map<std::size_t, std::vector<void*>> free;  // class bytes -> kept blocks, newest last
  std::vector<std::pair<std::size_t, void*>> order;  // kept blocks, oldest first
  std::size_t kept_bytes = 0;
  std::size_t kept_limit = kDefaultKeptLimit;
  Stats counts;

  // Gives kept blocks back to the system, oldest first, until at most `limit` bytes are
  // kept. Allocates nothing, so it cannot fail.
  void shed(std::size_t limit) noexcept {
    std::size_t i = 0;
    while (kept_bytes > limit && i < order.size()) {
      const auto [bytes, p] = order[i++];
      auto& list = free.find(bytes)->second;  // every kept block is listed under its class
      list.erase(std::find(list.begin(), list.end(), p));
      kept_bytes -= bytes;
      munmap(p, bytes);
      ++counts.unmapped;
    }
    order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(i));
  }
};

thread_local int uncleared_depth = 0;

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: blocks may be freed during exit
  return *c;
}

}  // namespace

void* allocate(std::size_t bytes) {
  if (bytes > (SIZE_MAX >> 1)) throw std::bad_alloc();  // the size class would overflow
  const std::size_t mapped = class_bytes(bytes);
  Cache& c = cache();
  void* kept = nullptr;
  {
    std::lock_guard lock(c.mutex);
    auto it = c.free.find(mapped);
    if (it != c.free.end() && !it->second.empty()) {
      kept = it->second.back();
      it->second.pop_back();
      c.order.erase(std::find(c.order.begin(), c.order.end(), std::pair{mapped, kept}));
      c.kept_bytes -= mapped;
      ++c.counts.reused;
    } else {
      ++c.counts.mapped;
    }
  }
  if (kept != nullptr) {
    // The slack past `bytes` is never handed out, so it needs no clearing either.
    return uncleared_depth > 0 ? kept : std::memset(kept, 0, bytes);
  }
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::lock_guard lock(c.mutex);
    --c.counts.mapped;
    throw std::bad_alloc();
  }
#ifdef MADV_HUGEPAGE
  if (mapped >= kHugeBytes) madvise(p, mapped, MADV_HUGEPAGE);
#endif
  return p;
}

void release(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  const std::size_t mapped = class_bytes(bytes);
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  bool kept = false;
  if (mapped <= c.kept_limit) {
    try {
      auto& list = c.free[mapped];
      list.push_back(p);
      try {
        c.order.emplace_back(mapped, p);
        kept = true;
      } catch (...) {
        list.pop_back();
      }
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
