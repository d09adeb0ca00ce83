// Whether a QVD field's symbols may hold one value twice, for the symbols their parse did not
// prove distinct: bitmaps over the numbers' keys, else a partitioned hash of every symbol.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/hash.hpp"
#include "qvd_number_keys.hpp"

namespace assoc::detail {
namespace {

// True when two of the keys key(0) … key(n-1) may be equal: keys that are equal for one value
// must be, others rarely are (hashes), so a true answer is checked exactly by the caller.
// Large sets are split by their top bits into parts of about a thousand keys (a part's table
// stays in the L1 cache), in parallel.
template <class Key>
bool keys_may_repeat(std::size_t n, const Key& key, CpuAccount* cpu) {
  // Open addressing over `count` keys from `at`; a key is stored with its lowest bit set, so
  // that 0 marks an empty slot (two keys differing only there count as a repeat).
  const auto repeats_in = [](const std::uint64_t* at, std::size_t count, std::vector<std::uint64_t>& slots,
                             unsigned shift) {
    std::size_t cap = 16;
    while (cap < 2 * count) cap <<= 1;
    slots.assign(cap, 0);
    const std::size_t mask = cap - 1;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t k = at[i] | 1;
      std::size_t s = (k >> shift) & mask;
      for (; slots[s] != 0; s = (s + 1) & mask)
        if (slots[s] == k) return true;
      slots[s] = k;
    }
    return false;
  };
  std::vector<std::uint64_t, CallocAllocator<std::uint64_t>> keys, parted;
  {
    big_blocks::Uncleared every_element_is_written_below;
    keys.resize(n);
    parted.resize(n);
  }
  unsigned bits = 0;
  while ((n >> bits) > 1024 && bits < 16) ++bits;
  const std::size_t parts = std::size_t{1} << bits;
  const unsigned top = 64 - bits;
  const auto part_of = [&](std::uint64_t k) { return bits == 0 ? std::size_t{0} : static_cast<std::size_t>(k >> top); };
  const std::size_t n_chunks = std::min<std::size_t>(8, std::max<std::size_t>(1, n >> 16));
  const auto chunk_begin = [&](std::size_t c) { return n * c / n_chunks; };
  std::vector<std::vector<std::size_t>> at(n_chunks, std::vector<std::size_t>(parts, 0));
  parallel_for(
      n_chunks,
      [&](std::size_t c) {
        std::vector<std::size_t>& counts = at[c];
        for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) {
          keys[i] = key(i);
          ++counts[part_of(keys[i])];
        }
      },
      cpu);
  // Each chunk's place in each part: parts one after the other, chunks in order within one.
  std::vector<std::size_t> part_start(parts + 1, 0);
  std::size_t total = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    part_start[p] = total;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      const std::size_t count = at[c][p];
      at[c][p] = total;
      total += count;
    }
  }
  part_start[parts] = total;
  parallel_for(
      n_chunks,
      [&](std::size_t c) {
        std::vector<std::size_t>& next = at[c];
        for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) parted[next[part_of(keys[i])]++] = keys[i];
      },
      cpu);
  std::atomic<bool> repeat{false};
  const std::size_t n_tasks = std::min<std::size_t>(parts, 8);
  parallel_for(
      n_tasks,
      [&](std::size_t task) {
        std::vector<std::uint64_t> slots;
        for (std::size_t p = parts * task / n_tasks, e = parts * (task + 1) / n_tasks; p < e; ++p) {
          if (repeat.load(std::memory_order_relaxed)) return;
          if (repeats_in(parted.data() + part_start[p], part_start[p + 1] - part_start[p], slots, 1))
            repeat.store(true, std::memory_order_relaxed);
        }
      },
      cpu);
  return repeat.load();
}

// Keys that meet in a KeyBitmap, which folds them onto its size (4 bits a symbol, more when the
// first symbols spread wider), may still be distinct: values spread wider than that (amounts
// in cents, ids drawn from a larger set) fold onto one another. Over their own range [lo, hi],
// when it is below kMaxBitsPerSymbol bits a symbol (the bitmap half the size of the symbols'
// numbers), a bitmap tells them apart exactly and with no hash. True when key_of(0) … key_of(n-1), each in [lo, hi], are proven distinct there.
template <class KeyOf>
bool distinct_over_range(std::size_t n, std::uint64_t lo, std::uint64_t hi, const KeyOf& key_of) {
  if (hi < lo || hi - lo >= kMaxBitsPerSymbol * n) return false;
  std::vector<std::uint64_t> words((hi - lo) / 64 + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t k = key_of(i) - lo;
    words[k >> 6] |= std::uint64_t{1} << (k & 63);
  }
  return count_bits(words.data(), words.size()) == n;
}

}  // namespace

// Whether a table's symbols may hold one value twice; false means they are distinct.
// Numbers take one pass that proves most of them distinct (unless the reader's own loops
// already took it: `proof` kKeysMet): ints that increase or whose values do not meet in a
// KeyBitmap, other numbers through NumberKeys. The rest, and texts, take a hash of each symbol.
bool symbols_may_repeat(const SymbolTable& t, Proof proof, CpuAccount* cpu) {
  const std::uint32_t n = t.size();
  if (n < 2 || t.is_int_range()) return false;
  const IntArray& ints = t.int_numbers();
  if (!ints.empty()) {
    std::size_t not_up = 0;  // a count without an exit vectorises
    for (std::uint32_t i = 1; i < n; ++i) not_up += ints[i] <= ints[i - 1];
    if (not_up == 0) return false;
    // Over the values' own range when it is narrow enough; else folded into a KeyBitmap.
    std::int32_t low = ints[0], high = ints[0];
    for (std::uint32_t i = 1; i < n; ++i) {
      low = std::min(low, ints[i]);
      high = std::max(high, ints[i]);
    }
    const auto offset = [&](std::int32_t v) {
      return static_cast<std::uint64_t>(std::int64_t{v} - std::numeric_limits<std::int32_t>::min());
    };
    if (offset(high) - offset(low) < kMaxBitsPerSymbol * n)  // exact: two values met only if one
      return !distinct_over_range(n, offset(low), offset(high), [&](std::size_t i) { return offset(ints[i]); });
    KeyBitmap seen(n);
    std::uint64_t met = 0;
    for (std::uint32_t i = 0; i < n; ++i) seen.add(static_cast<std::uint32_t>(ints[i]), met);
    if (met == 0) return false;
    return keys_may_repeat(n, [&](std::size_t i) { return mix64(static_cast<std::uint32_t>(ints[i])); }, cpu);
  }
  const NumberArray& numbers = t.double_numbers();
  if (t.all_numeric()) {
    const double scale = NumberKeys::scale_for(numbers.data(), std::min<std::size_t>(n, NumberKeys::kScaleSample));
    if (proof != Proof::kKeysMet) {
      NumberKeys keys(n);
      keys.set_scale(scale, numbers.data(), std::min<std::size_t>(n, NumberKeys::kScaleSample));
      for (std::uint32_t i = 0; i < n; ++i) keys.add(numbers[i]);
      if (keys.distinct()) return false;
    }
    // Over the keys' own range (the first symbols may not have shown all of it).
    double low = numbers[0], high = numbers[0];
    for (std::uint32_t i = 1; i < n; ++i) {
      low = numbers[i] < low ? numbers[i] : low;
      high = numbers[i] > high ? numbers[i] : high;
    }
    if (std::fabs(low * scale) < NumberKeys::kKeyed && std::fabs(high * scale) < NumberKeys::kKeyed &&
        distinct_over_range(n, NumberKeys::key(low, scale), NumberKeys::key(high, scale),
                            [&](std::size_t i) { return NumberKeys::key(numbers[i], scale); }))
      return false;
    return keys_may_repeat(n, [&](std::size_t i) { return mix64(number_key(numbers[i])); }, cpu);
  }
  // Symbols with a number are one value when their numbers are; pure texts when their texts
  // are. A number's key may meet a text's hash: the exact check then finds no repeat.
  return keys_may_repeat(
      n,
      [&](std::size_t i) {
        const auto s = static_cast<std::uint32_t>(i);
        if (t.has_number(s)) return mix64(number_key(t.number(s)));
        const std::string_view text = t.text(s);
        return hash_text(text.data(), text.size());
      },
      cpu);
}

}  // namespace assoc::detail
