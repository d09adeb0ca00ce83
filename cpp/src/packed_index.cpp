#include "assoc/packed_index.hpp"

#include <algorithm>
#include <atomic>
#include <string>

#include "assoc/error.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

std::uint32_t PackedIndex::width_for(std::uint64_t max_code) {
  std::uint32_t w = 0;
  while (w < 64 && (max_code >> w) != 0) ++w;
  return w;
}

PackedIndex PackedIndex::pack(const std::uint32_t* symbols, std::size_t n, std::uint32_t n_symbols,
                              CpuAccount* cpu) {
  // Pass 1: bounds and NULLs, per chunk in parallel.
  std::atomic<std::uint64_t> nulls{0};
  std::atomic<bool> out_of_range{false};
  std::atomic<std::uint32_t> max_symbol{0};
  parallel_ranges(n, 1, [&](std::size_t b, std::size_t e) {
    std::uint64_t local_nulls = 0;
    std::uint32_t local_max = 0;
    bool bad = false;
    for (std::size_t i = b; i < e; ++i) {
      const std::uint32_t s = symbols[i];
      const bool is_null = s == kNull;
      local_nulls += is_null;
      bad |= !is_null & (s >= n_symbols);
      local_max = std::max(local_max, is_null ? 0U : s);
    }
    nulls.fetch_add(local_nulls, std::memory_order_relaxed);
    std::uint32_t seen = max_symbol.load(std::memory_order_relaxed);
    while (local_max > seen && !max_symbol.compare_exchange_weak(seen, local_max)) {
    }
    if (bad) out_of_range.store(true, std::memory_order_relaxed);
  }, cpu);
  if (out_of_range.load()) throw Error("symbol index out of range for a field with " + std::to_string(n_symbols) + " symbols");

  PackedIndex p;
  p.rows_ = n;
  p.non_null_ = n - nulls.load();
  p.bias_ = nulls.load() > 0 ? 1U : 0U;
  // The fewest bits that hold every index this column uses, plus NULL's code when it has NULLs.
  const std::uint64_t max_code = p.non_null_ == 0 ? 0 : std::uint64_t{max_symbol.load()} + p.bias_;
  p.width_ = width_for(max_code);
  p.mask_ = p.width_ == 0 ? 0 : ((std::uint64_t{1} << p.width_) - 1);
  const std::size_t data_bytes = (n * p.width_ + 7) / 8;
  p.bytes_.assign(data_bytes + 8, 0);
  if (p.width_ == 0) return p;

  // Pass 2: pack. Chunks start at multiples of 8 rows, so each starts on a byte boundary
  // and no two chunks write the same byte.
  const std::uint32_t w = p.width_;
  const std::uint32_t bias = p.bias_;
  std::uint8_t* base = p.bytes_.data();
  parallel_ranges(n, 8, [&](std::size_t b, std::size_t e) {
    std::uint8_t* out = base + (b * w) / 8;
    std::uint64_t acc = 0;
    std::uint32_t bits = 0;
    for (std::size_t i = b; i < e; ++i) {
      const std::uint64_t code = static_cast<std::uint32_t>(symbols[i] + bias);  // kNull + 1 wraps to 0
      acc |= code << bits;
      bits += w;
      while (bits >= 8) {
        *out++ = static_cast<std::uint8_t>(acc);
        acc >>= 8;
        bits -= 8;
      }
    }
    if (bits > 0) *out = static_cast<std::uint8_t>(acc);
  }, cpu);
  return p;
}

void PackedIndex::decode(std::size_t begin, std::size_t count, std::uint32_t* out) const {
  const std::uint32_t bias = bias_;
  if (width_ == 0) {
    std::fill(out, out + count, 0U - bias);
    return;
  }
  const std::uint8_t* data = bytes_.data();
  const std::uint64_t mask = mask_;
  const std::size_t w = width_;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t bit = (begin + i) * w;
    std::uint64_t x;
    std::memcpy(&x, data + (bit >> 3), sizeof x);
    out[i] = static_cast<std::uint32_t>((x >> (bit & 7)) & mask) - bias;
  }
}

}  // namespace assoc
