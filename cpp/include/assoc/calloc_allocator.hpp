#pragma once
// An allocator for big arrays that are filled after they are sized.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace assoc {

// Allocates with calloc, whose big blocks are fresh pages that are zero without being written:
// a vector sized with it is all zero, and each page is first touched by whoever fills it (in
// parallel, when several threads fill one array). Elements constructed without a value are
// left as the memory holds them, which is zero only in a fresh allocation: size such a vector
// once, when it is new, and give a value to every later element.
template <class T>
struct CallocAllocator {
  using value_type = T;
  CallocAllocator() = default;
  template <class U>
  CallocAllocator(const CallocAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
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
