#pragma once
// The hashes of the engine's in-memory hash tables (never stored): numbers by their bits,
// texts by their bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace assoc {

inline std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline std::uint32_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A 64-bit finaliser: every input bit reaches every output bit.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  return x;
}

// The hash of n bytes from p: a word at a time, short texts by loads that stay within them.
inline std::uint64_t hash_text(const char* p, std::size_t n) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL * (n + 1);
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 < n; i += 8) {
      h = (h ^ load64(p + i)) * 0xff51afd7ed558ccdULL;
      h ^= h >> 29;
    }
    h ^= load64(p + n - 8);  // the last 8 bytes, overlapping the loop's when n is not a multiple
  } else if (n >= 4) {
    h ^= (std::uint64_t{load32(p)} << 32) | load32(p + n - 4);
  } else if (n > 0) {
    h ^= (std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
         (std::uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8) | static_cast<unsigned char>(p[n - 1]);
  }
  return mix64(h);
}

// The identity of a number as a symbol: its bits, with -0 folded into 0.
inline std::uint64_t number_key(double v) {
  if (v == 0.0) v = 0.0;
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

}  // namespace assoc
