#pragma once
// Big blocks of zeroed memory kept for reuse, and the two ways arrays take memory from them:
// an allocator for vectors filled after they are sized, and fixed zero-filled arrays for hash
// and direct tables.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace assoc {

// Big blocks: zeroed memory in whole pages, rounded up to a size class (four a power of two),
// mapped from the system. A freed block is kept for the next request of its class, up to a
// limit on the bytes kept, so that repeated loads reuse memory whose pages are already
// present instead of faulting in fresh ones (a reused block is cleared on the way out).
namespace big_blocks {
// Blocks from this size on are big; smaller ones come from calloc.
inline constexpr std::size_t kMinBytes = std::size_t{1} << 20;

void* allocate(std::size_t bytes);            // zeroed (see Uncleared); throws std::bad_alloc
// Zeroed as each page is first touched, for tables that touch few of their pages (slots by
// key): fresh pages from the system, given back by release_lazy (not kept: kept blocks are for
// arrays that use every page, and clearing one in full would write every page).
void* allocate_lazy(std::size_t bytes);
void release_lazy(void* p, std::size_t bytes) noexcept;  // `bytes` as given to allocate_lazy
void release(void* p, std::size_t bytes) noexcept;  // `bytes` as given to allocate

struct Stats {
  std::uint64_t mapped = 0;     // blocks mapped from the system
  std::uint64_t reused = 0;     // requests served from kept blocks
  std::uint64_t unmapped = 0;   // blocks given back to the system
  std::size_t kept_bytes = 0;   // bytes of freed blocks kept now
  std::size_t kept_limit = 0;   // the most that is kept
};
Stats stats();
// Sets the most bytes of freed blocks kept for reuse (0: none); gives back any over it.
void set_kept_limit(std::size_t bytes);

// While one lives, big blocks that its thread takes from the kept ones are not cleared: for
// an array its owner writes in full before anything reads it (the clearing would be a wasted
// pass over memory). Fresh blocks are zero regardless.
class Uncleared {
 public:
  Uncleared();
  ~Uncleared();
  Uncleared(const Uncleared&) = delete;
  Uncleared& operator=(const Uncleared&) = delete;
};
}  // namespace big_blocks

// Allocates zeroed memory: big blocks as above, so that each page of a fresh one is first
// touched by whoever fills it (in parallel, when several threads fill one array); small ones
// from calloc. Elements constructed without a value are left as the memory holds them, which
// is zero only in a new allocation: size such a vector once, when it is new, and give a value
// to every later element.
template <class T>
struct CallocAllocator {
  using value_type = T;

  CallocAllocator() = default;
  template <class U>
  CallocAllocator(const CallocAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    if (n * sizeof(T) >= big_blocks::kMinBytes) return static_cast<T*>(big_blocks::allocate(n * sizeof(T)));
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= big_blocks::kMinBytes) {
      big_blocks::release(p, n * sizeof(T));
    } else {
      std::free(p);
    }
  }
  template <class U>
  void construct(U*) noexcept {}
  template <class U, class A, class... More>
  void construct(U* p, A&& a, More&&... more) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a), std::forward<More>(more)...);
  }
  template <class U>
  bool operator==(const CallocAllocator<U>&) const noexcept {
    return true;
  }
};

// A zero-filled array of fixed size for hash and direct tables, from the same memory as
// CallocAllocator: big ones are big blocks (huge pages from 2 MiB on, which random lookups into
// tables of many megabytes need to avoid missing the TLB on almost every access).
template <class T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  explicit ZeroedArray(std::size_t n) : data_(n == 0 ? nullptr : CallocAllocator<T>().allocate(n)), size_(n) {}
  // An array most of whose pages may never be touched: a big one costs only the pages used.
  struct Sparse {};
  ZeroedArray(std::size_t n, Sparse) {
    if (n == 0) return;
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    lazy_ = n * sizeof(T) >= big_blocks::kMinBytes;
    data_ = lazy_ ? static_cast<T*>(big_blocks::allocate_lazy(n * sizeof(T))) : CallocAllocator<T>().allocate(n);
    size_ = n;
  }
  ~ZeroedArray() { release(); }
  ZeroedArray(ZeroedArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), lazy_(std::exchange(o.lazy_, false)) {}
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      lazy_ = std::exchange(o.lazy_, false);
    }
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) {
      if (lazy_) {
        big_blocks::release_lazy(data_, size_ * sizeof(T));
      } else {
        CallocAllocator<T>().deallocate(data_, size_);
      }
    }
    data_ = nullptr;
    size_ = 0;
    lazy_ = false;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  bool lazy_ = false;  // from allocate_lazy
};

}  // namespace assoc
