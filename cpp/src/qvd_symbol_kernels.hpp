#pragma once
// The loops that read QVD symbol sections: prefetching, and on x86-64 the SIMD kernels for
// int32 sections and runs of float64 symbols, chosen by the CPU at load time
// (ASSOC_X86_SIMD when they are built).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "qvd_number_keys.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ASSOC_X86_SIMD
#endif

namespace assoc::detail {

// Asks for the `n` bytes kPrefetchDistance past p (a prefetch never faults, even past the
// end of the data).
constexpr std::size_t kPrefetchDistance = 4096;
inline void prefetch_ahead(const std::uint8_t* p, std::size_t n) {
  const auto at = reinterpret_cast<std::uintptr_t>(p) + kPrefetchDistance;
  for (std::size_t b = 0; b < n; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + b));
}

#ifdef ASSOC_X86_SIMD
// `n` int32 symbols (type byte 1, then 4 bytes) from q into out, four at a step; non-zero when
// a type byte is not 1. `up` turns false when a value is not above the one before it (`last`
// for the first).
__attribute__((target("sse4.1"))) unsigned int32_symbols_sse41(const std::uint8_t* q, std::size_t n,
                                                              std::int32_t* out, std::int32_t last, bool& up);
// Whether the `n` int32 symbols at q are exactly first, first+1, …, first+n-1.
__attribute__((target("sse4.1"))) bool int32_range_sse41(const std::uint8_t* q, std::size_t n, std::int32_t first);
// Runs of eight float64 symbols from q, symbol i on, into out, keyed in `keys`, with single
// int32 and float64 symbols between runs; the next symbol's index (see the definition).
__attribute__((target("avx2"))) std::size_t float64_runs_avx2(const std::uint8_t*& q, const std::uint8_t* end,
                                                             double* out, std::size_t i, std::size_t n, bool& ok,
                                                             NumberKeys& keys);
// Whether the CPU has the kernels' instructions (read while the library loads).
extern const bool kHasSse41;
extern const bool kHasAvx2;

// Orders the streamed stores before whatever follows (the array handed over, or freed).
struct StreamFence {
  StreamFence() = default;
  StreamFence(const StreamFence&) = delete;
  StreamFence& operator=(const StreamFence&) = delete;
  ~StreamFence() { _mm_sfence(); }
};

// A number stored past the caches (see int32_symbols_sse41); an _mm_sfence must follow the
// last one before the array is handed over.
inline void stream_number(double* at, double v) {
  long long bits;
  std::memcpy(&bits, &v, 8);
  _mm_stream_si64(reinterpret_cast<long long*>(at), bits);
}
#endif

}  // namespace assoc::detail
