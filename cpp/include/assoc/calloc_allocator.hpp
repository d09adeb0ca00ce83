#pragma once
// An allocator for big arrays that are filled after they are sized.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace assoc {

// Allocates zeroed memory: big blocks are mapped fresh from the system, so they are zero
// without being written, and each page is first touched by whoever fills it (in parallel, when
// several threads fill one array); small ones come from calloc. Elements constructed without
// a value are left as the memory holds them, which is zero only in a fresh allocation: size
// such a vector once, when it is new, and give a value to every later element.
template <class T>
struct CallocAllocator {
  using value_type = T;
  // From this size on blocks are mapped (calloc would clear reused heap memory in one pass).
  static constexpr std::size_t kMapBytes = std::size_t{1} << 22;

  CallocAllocator() = default;
  template <class U>
  CallocAllocator(const CallocAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    if (n * sizeof(T) >= kMapBytes) {
      void* p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kMapBytes) {
      munmap(p, n * sizeof(T));
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

}  // namespace assoc
