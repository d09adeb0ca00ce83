// The scan kernels of selections: block-wise over packed columns, in parallel ranges.
#include "selection_kernels.hpp"

#include <algorithm>
#include <bit>
#include <vector>

#include "assoc/thread_pool.hpp"

namespace assoc::detail {
namespace {

constexpr std::size_t kBatch = 1024;  // rows decoded at a time (16 whole blocks)

// Adds the symbols on rows of blocks [first, last) (all rows when `rows` is null) to `acc`.
void collect_values(const PackedIndex& index, const Bitset* rows, std::size_t first, std::size_t last,
                    std::uint32_t limit, Bitset& acc) {
  const std::size_t n = index.size();
  std::uint64_t* a = acc.words();
  std::uint32_t buf[kBatch];
  if (rows == nullptr) {
    const std::size_t end = std::min(n, last * 64);
    for (std::size_t r = first * 64; r < end; r += kBatch) {
      const std::size_t k = std::min(kBatch, end - r);
      index.decode(r, k, buf);
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t x = std::min(buf[j], limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    }
    return;
  }
  const std::uint64_t* m = rows->words();
  for (std::size_t w = first; w < last; ++w) {
    std::uint64_t bits = m[w];
    if (bits == 0) continue;
    // Few rows in a block: read them one by one; many: decode the block.
    if (popcount64(bits) <= 8) {
      for (; bits != 0; bits &= bits - 1) {
        const std::uint32_t x = std::min(index.get(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))), limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    } else {
      const std::size_t k = std::min<std::size_t>(64, n - w * 64);
      index.decode(w * 64, k, buf);
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t x = std::min(buf[j], limit);
        a[x >> 6] |= ((bits >> j) & 1U) << (x & 63);
      }
    }
  }
}

}  // namespace

// Rows of a column whose symbol is in `set`. Membership is looked up in a byte per symbol
// while the field is small enough for that table to stay in cache, in the bitset otherwise.
Bitset match_rows(const PackedIndex& index, const Bitset& set) {
  const std::size_t n = index.size();
  Bitset out(n);
  const auto limit = static_cast<std::uint32_t>(set.size() - 1);
  std::vector<std::uint8_t> bytes;
  if (limit <= (1U << 17)) {
    bytes.assign(std::size_t{limit} + 1, 0);
    set.for_each([&](std::size_t i) { bytes[i] = 1; });
  }
  std::uint64_t* o = out.words();
  const std::size_t whole = n / 64;
  parallel_ranges(
      whole, 16,
      [&](std::size_t begin, std::size_t end) {
        if (bytes.empty()) {
          index.match_blocks(begin, end - begin, set.words(), limit, o + begin);
        } else {
          index.match_blocks(begin, end - begin, bytes.data(), limit, o + begin);
        }
      },
      nullptr, std::size_t{1} << 10);
  // The last, partial block.
  for (std::size_t r = whole * 64; r < n; ++r)
    if (set.test(std::min(index.get(r), limit))) out.set(r);
  return out;
}

// Symbols that occur on `rows` (null: every row) of a column.
Bitset values_on_rows(const PackedIndex& index, const Bitset* rows, std::uint32_t n_symbols) {
  Bitset out = symbol_set(n_symbols);
  const std::size_t blocks = (index.size() + 63) / 64;
  // Each task gathers into a bitset of its own, at least 256 blocks (16K rows) per task.
  const std::size_t tasks = std::max<std::size_t>(1, std::min<std::size_t>(threads() * 2, blocks / 256));
  std::vector<Bitset> partial(tasks - 1);
  parallel_for(tasks, [&](std::size_t t) {
    Bitset* acc = &out;
    if (t > 0) {
      partial[t - 1] = symbol_set(n_symbols);
      acc = &partial[t - 1];
    }
    collect_values(index, rows, blocks * t / tasks, blocks * (t + 1) / tasks, n_symbols, *acc);
  });
  for (const auto& p : partial) out.or_with(p);
  out.reset(n_symbols);
  return out;
}

}  // namespace assoc::detail
