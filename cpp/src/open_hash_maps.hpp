#pragma once
// Open-addressing hash maps of loaders that intern values on their own: numbers by their bits,
// texts by their hash with the texts kept by the caller. Slots are zero-filled arrays from the
// big blocks; a map grows at half full.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "assoc/big_blocks.hpp"
#include "assoc/hash.hpp"
#include "assoc/symbol_table.hpp"

namespace assoc::detail {

// The low bits of a hash that pick a merge partition; a TextMap's tags are the bits above them.
inline constexpr unsigned kPartitionBits = 6;

// [a, a+n) == [b, b+n); short texts by word loads that stay within the n bytes.
inline bool same_bytes(const char* a, const char* b, std::size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    return load64(a) == load64(b) && load64(a + n - 8) == load64(b + n - 8);
  }
  if (n >= 4) return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The text of a symbol, in the input or in the chunk's arena (unescaped quoted fields).
using SymbolText = SymbolTable::IndexedText;

// The slots of a map that holds `n` entries without growing: twice as many, or four times as
// many while that is at most `sparse` (small maps grow at a quarter full).
inline std::size_t slots_for(std::size_t n, std::size_t sparse) {
  std::size_t cap = std::bit_ceil(std::max<std::size_t>(2 * n + 1, 64));
  if (cap <= sparse && 4 * n > cap) cap *= 2;
  return cap;
}

// Open addressing on a number's key (its bits): the key sits in the slot, so a lookup touches
// one cache line.
class NumberMap {
 public:
  // Room for `n` keys without growing.
  explicit NumberMap(std::size_t n = 32) { resize(slots_for(n, kSparseSlots)); }

  // The symbol index of `key`, or kNull with `slot` set to where it goes.
  std::uint32_t find(std::uint64_t key, std::uint64_t h, std::size_t& slot) const {
    std::size_t i = h >> shift_;
    for (;;) {
      const Slot& s = slots_[i];
      if (s.index_plus_1 == 0) {
        slot = i;
        return kNull;
      }
      if (s.key == key) return s.index_plus_1 - 1;
      i = (i + 1) & mask_;
    }
  }
  void prefetch(std::uint64_t h) const { __builtin_prefetch(slots_.data() + (h >> shift_)); }
  static constexpr std::size_t kSparseSlots = std::size_t{1} << 14;
  void insert(std::size_t slot, std::uint64_t key, std::uint32_t index) {
    slots_[slot] = Slot{key, index + 1};
    // Small maps grow at a quarter full, as TextMap's do.
    if (++size_ * (slots_.size() <= kSparseSlots ? 4 : 2) > slots_.size()) resize(slots_.size() * 2);
  }

 private:
  struct Slot {
    std::uint64_t key;
    std::uint32_t index_plus_1;
  };
  void resize(std::size_t cap) {
    ZeroedArray<Slot> old(cap);
    std::swap(old, slots_);
    mask_ = cap - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(cap));
    for (const Slot& s : old) {
      if (s.index_plus_1 == 0) continue;
      std::size_t i = mix64(s.key) >> shift_;
      while (slots_[i].index_plus_1 != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  ZeroedArray<Slot> slots_;
  std::size_t size_ = 0, mask_ = 0;
  unsigned shift_ = 0;
};

// Open addressing on a text's hash: slots hold 32 hash bits beside an index into the caller's
// texts, so most mismatches are rejected without touching a text. The texts are passed in
// because their array moves as it grows.
class TextMap {
 public:
  // Room for `n` texts without growing.
  explicit TextMap(std::size_t n = 32) { resize(slots_for(n, kSparseSlots), nullptr); }

  // The index in `texts` of the text, or kNull with `slot` set to where it goes.
  std::uint32_t find(const char* p, std::uint32_t n, std::uint64_t h, const SymbolText* texts,
                     std::size_t& slot) const {
    const std::uint32_t tag = static_cast<std::uint32_t>(h >> kPartitionBits);
    std::size_t i = h >> shift_;
    for (;;) {
      const std::uint64_t s = slots_[i];
      if (s == 0) {
        slot = i;
        return kNull;
      }
      if (static_cast<std::uint32_t>(s >> 32) == tag) {
        const SymbolText& t = texts[static_cast<std::uint32_t>(s) - 1];
        if (t.size == n && same_bytes(t.data, p, n)) return static_cast<std::uint32_t>(s) - 1;
      }
      i = (i + 1) & mask_;
    }
  }
  void prefetch(std::uint64_t h) const { __builtin_prefetch(slots_.data() + (h >> shift_)); }
  static constexpr std::size_t kSparseSlots = std::size_t{1} << 15;
  void insert(std::size_t slot, std::uint64_t h, std::uint32_t index, const SymbolText* texts) {
    slots_[slot] = (std::uint64_t{static_cast<std::uint32_t>(h >> kPartitionBits)} << 32) | (index + 1);
    // Small maps grow at a quarter full: a lookup then rarely probes a second slot (a probe
    // past a tag that differs is a branch the CPU cannot foresee), at little memory.
    if (++size_ * (slots_.size() <= kSparseSlots ? 4 : 2) > slots_.size()) resize(slots_.size() * 2, texts);
  }

 private:
  void resize(std::size_t cap, const SymbolText* texts) {
    ZeroedArray<std::uint64_t> old(cap);
    std::swap(old, slots_);
    mask_ = cap - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(cap));
    for (const std::uint64_t s : old) {
      if (s == 0) continue;
      const SymbolText& t = texts[static_cast<std::uint32_t>(s) - 1];
      std::size_t i = hash_text(t.data, t.size) >> shift_;
      while (slots_[i] != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  ZeroedArray<std::uint64_t> slots_;
  std::size_t size_ = 0, mask_ = 0;
  unsigned shift_ = 0;
};

}  // namespace assoc::detail
