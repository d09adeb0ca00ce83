// CSV reader: the buffer is cut into chunks at record boundaries, each chunk is parsed on its
// own thread into per-column local symbol tables, and the local tables are then merged (in
// parallel, by slices of the key range or by hash partition) into one symbol table per column
// in first-occurrence order, while each chunk's rows are packed through its remap.
#include "assoc/csv.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/hash.hpp"
#include "assoc/number_text.hpp"
#include "assoc/packed_index.hpp"
#include "assoc/symbol_table.hpp"

namespace assoc {
namespace {

constexpr std::size_t kNoError = SIZE_MAX;
// Chunks smaller than this are not worth a thread of their own.
constexpr std::size_t kMinChunkBytes = 256 * 1024;
// Columns with fewer local symbols than this in all chunks together merge in one task.
constexpr std::size_t kPartitionThreshold = 1 << 16;
constexpr unsigned kPartitionBits = 6;

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

// A zero-filled array for hash and direct tables. Big ones are mapped on their own and asked
// for transparent huge pages: random lookups into tables of many megabytes otherwise miss the
// TLB on almost every access.
template <class T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  explicit ZeroedArray(std::size_t n) : size_(n) {
    if (n == 0) return;
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= kHugePage) {
      map_bytes_ = bytes + kHugePage;
      void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      map_ = m;
      const auto aligned = (reinterpret_cast<std::uintptr_t>(m) + kHugePage - 1) & ~(kHugePage - 1);
      data_ = reinterpret_cast<T*>(aligned);
      madvise(data_, bytes, MADV_HUGEPAGE);  // a hint: without it the table works the same
    } else {
      data_ = static_cast<T*>(std::calloc(n, sizeof(T)));
      if (data_ == nullptr) throw std::bad_alloc();
    }
  }
  ~ZeroedArray() { release(); }
  ZeroedArray(ZeroedArray&& o) noexcept { take(o); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
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
  static constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  void release() {
    if (map_ != nullptr) {
      munmap(map_, map_bytes_);
    } else {
      std::free(data_);
    }
    data_ = nullptr;
    map_ = nullptr;
    size_ = 0;
  }
  void take(ZeroedArray& o) {
    data_ = o.data_;
    map_ = o.map_;
    map_bytes_ = o.map_bytes_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.map_ = nullptr;
    o.size_ = 0;
  }
  T* data_ = nullptr;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Numbers

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

inline bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// A number read from a field. When `fixed`, the value is exactly mantissa / 10^frac (a plain
// integer or decimal of at most 15 digits), which lets narrow columns skip hashing.
struct NumberText {
  double value = 0;
  bool canonical = false;  // the text is exactly the number's canonical form
  bool fixed = false;
  std::int64_t mantissa = 0;
  unsigned frac = 0;
};

// True when [p, p+n) (n > 0) is a number as parse_number reads it. Plain integers and decimals
// of up to 15 digits take a fast path whose results equal parse_number's and is_canonical_text's.
inline bool read_number(const char* p, std::size_t n, NumberText& out) {
  const char c0 = p[0];
  if (!(is_digit(c0) || c0 == '-' || c0 == '+' || c0 == '.')) return false;
  const bool neg = c0 == '-';
  const std::size_t i = neg ? 1 : 0;
  if (c0 != '+' && n - i <= 16) {
    std::uint64_t m = 0;
    std::size_t j = i;
    for (; j < n && is_digit(p[j]); ++j) m = m * 10 + static_cast<std::uint64_t>(p[j] - '0');
    const std::size_t int_digits = j - i;
    if (int_digits > 0 && int_digits <= 15) {
      const bool lead_zero = int_digits > 1 && p[i] == '0';
      if (j == n) {
        const double x = static_cast<double>(m);
        out.value = neg ? -x : x;
        out.canonical = !lead_zero && !(neg && m == 0);  // "-0" keeps its text
        out.fixed = true;
        out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
        out.frac = 0;
        return true;
      }
      if (p[j] == '.') {
        std::size_t k = j + 1;
        for (; k < n && is_digit(p[k]); ++k) m = m * 10 + static_cast<std::uint64_t>(p[k] - '0');
        const std::size_t frac = k - j - 1;
        // With at most 15 digits the mantissa and the power of ten are exact doubles, so one
        // division rounds correctly, and the digits are the shortest text of the result.
        if (k == n && frac > 0 && int_digits + frac <= 15) {
          const double x = static_cast<double>(m) / kPow10[frac];
          out.value = neg ? -x : x;
          if (p[k - 1] == '0' || lead_zero || m == 0) {
            out.canonical = false;
          } else if (p[i] != '0' || p[j + 1] != '0') {
            out.canonical = true;  // fixed notation is shorter than scientific here
          } else {
            out.canonical = is_canonical_text(std::string_view(p, n), out.value);  // 0.0…: may be 1e-05
          }
          out.fixed = true;
          out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
          out.frac = static_cast<unsigned>(frac);
          return true;
        }
      }
    }
  }
  const std::string_view s(p, n);
  if (!parse_number(s, out.value)) return false;
  out.canonical = is_canonical_text(s, out.value);
  out.fixed = false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// UTF-8

// Offset of the first byte of [p, p+n) that is not part of valid UTF-8, or n.
std::size_t find_invalid_utf8(const char* p, std::size_t n) {
  const auto* s = reinterpret_cast<const unsigned char*>(p);
  std::size_t i = 0;
  while (i < n) {
    if (i + 8 <= n && (load64(p + i) & 0x8080808080808080ULL) == 0) {
      i += 8;
      continue;
    }
    const unsigned c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;       // no overlong forms
      if (c == 0xED) hi = 0x9F;       // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;       // nothing above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if ((s[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Symbols of one column within one chunk

// The text of a symbol, in the input or in the chunk's arena (unescaped quoted fields).
using SymbolText = SymbolTable::IndexedText;

// Open addressing on a number's key (its bits): the key sits in the slot, so a lookup touches
// one cache line.
class NumberMap {
 public:
  // Room for `n` keys without growing.
  explicit NumberMap(std::size_t n = 32) { resize(std::bit_ceil(std::max<std::size_t>(2 * n + 1, 64))); }

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
  void insert(std::size_t slot, std::uint64_t key, std::uint32_t index) {
    slots_[slot] = Slot{key, index + 1};
    if (++size_ * 2 > slots_.size()) resize(slots_.size() * 2);
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
  explicit TextMap(std::size_t n = 32) { resize(std::bit_ceil(std::max<std::size_t>(2 * n + 1, 64)), nullptr); }

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
  void insert(std::size_t slot, std::uint64_t h, std::uint32_t index, const SymbolText* texts) {
    slots_[slot] = (std::uint64_t{static_cast<std::uint32_t>(h >> kPartitionBits)} << 32) | (index + 1);
    if (++size_ * 2 > slots_.size()) resize(slots_.size() * 2, texts);
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

// Bump allocator for the texts of unescaped quoted fields that become symbols.
class Arena {
 public:
  const char* copy(const char* p, std::size_t n) {
    if (n > left_) {
      const std::size_t block = std::max<std::size_t>(n, 1 << 16);
      blocks_.push_back(std::make_unique<char[]>(block));
      next_ = blocks_.back().get();
      left_ = block;
    }
    char* out = next_;
    std::memcpy(out, p, n);
    next_ += n;
    left_ -= n;
    return out;
  }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  std::size_t left_ = 0;
};

// Numbers of a narrow range as a direct table: a number that is exactly k / 10^scale for an
// integer k is found at slots[k - lo] without hashing. Typical id, count, year and price columns
// stay in it; a column whose numbers spread too thin leaves it for the NumberMap, for good.
// A number is in one of the two, never both: once the NumberMap holds a number the scale is
// fixed, and the table's range only grows, so a number's place never changes.
class DenseNumbers {
 public:
  static constexpr std::int64_t kPow10Int[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  // kMaxKey / kPow10Int[i], so that the hot path does not divide.
  static constexpr std::int64_t kMaxKeyOver[] = {1000000000000000LL, 100000000000000LL, 10000000000000LL,
                                                 1000000000000LL,    100000000000LL,    10000000000LL,
                                                 1000000000LL};
  static constexpr unsigned kMaxScale = 6;
  // Keys stay within ±10^15, where distinct keys are distinct doubles.
  static constexpr std::int64_t kMaxKey = 1000000000000000LL;

  // Sizes the table's allowance to the rows the chunk is expected to hold.
  void expect_rows(std::size_t rows) {
    allowance_ = std::max<std::int64_t>(std::int64_t{1} << 16, 2 * static_cast<std::int64_t>(rows));
  }
  bool active() const { return active_; }
  unsigned scale() const { return scale_; }
  bool empty() const { return slots_.empty(); }
  std::int64_t min_key() const { return min_key_; }
  std::int64_t max_key() const { return max_key_; }
  // Calls f(key, symbol index) for every number in the table, in key order.
  template <class F>
  void for_each(F f) const {
    if (slots_.empty()) return;
    const std::uint32_t* s = slots_.data() + (min_key_ - lo_);
    for (std::int64_t key = min_key_; key <= max_key_; ++key, ++s)
      if (*s != 0) f(key, *s - 1);
  }

  // The slots of keys min_key() .. max_key(): symbol index + 1, 0 where the key is absent.
  const std::uint32_t* key_slots() const { return slots_.data() + (min_key_ - lo_); }

  // The key of a number at the current scale; false when it has none. Sets the scale from the
  // first number.
  bool key_of(const NumberText& t, std::int64_t& k) {
    if (!has_scale_) {
      scale_ = t.fixed ? std::min(t.frac, kMaxScale) : 0;
      has_scale_ = true;
    }
    if (t.fixed) return fixed_key(t, k);
    const double x = t.value * kPow10[scale_];
    if (!(x >= -static_cast<double>(kMaxKey) && x <= static_cast<double>(kMaxKey))) return false;
    k = static_cast<std::int64_t>(std::nearbyint(x));
    return static_cast<double>(k) / kPow10[scale_] == t.value;
  }

  // The key of a fixed number at the current scale, once the scale is set; false when it has none.
  bool fixed_key(const NumberText& t, std::int64_t& k) const {
    std::int64_t m = t.mantissa;
    unsigned frac = t.frac;
    while (frac > scale_ && m % 10 == 0) {
      m /= 10;
      --frac;
    }
    if (frac > scale_) return false;
    if (m > kMaxKeyOver[scale_ - frac] || m < -kMaxKeyOver[scale_ - frac]) return false;
    k = m * kPow10Int[scale_ - frac];
    return true;
  }
  bool has_scale() const { return has_scale_; }

  // Starts loading the slot of a key that is likely to be looked up soon. Inlined early on
  // purpose: as a call, a function whose only effect is a prefetch counts as pure and is dropped.
  [[gnu::always_inline]] void prefetch(std::int64_t k) const {
    if (k >= lo_ && k - lo_ < static_cast<std::int64_t>(slots_.size()))
      __builtin_prefetch(slots_.data() + (k - lo_));
  }

  // The slot of key k, growing the table to reach it; null when that would spread it too thin
  // (the caller then moves the table into the NumberMap).
  std::uint32_t* slot(std::int64_t k, std::size_t n_symbols) {
    if (k >= lo_ && k - lo_ < static_cast<std::int64_t>(slots_.size())) {
      min_key_ = std::min(min_key_, k);
      max_key_ = std::max(max_key_, k);
      return &slots_[static_cast<std::size_t>(k - lo_)];
    }
    return grow(k, n_symbols) ? &slots_[static_cast<std::size_t>(k - lo_)] : nullptr;
  }

  // Raises the scale (no number may be in the NumberMap yet); false when the table would spread
  // too thin.
  bool rescale(unsigned scale, std::size_t n_symbols) {
    const std::int64_t mul = kPow10Int[scale - scale_];
    if (!slots_.empty()) {
      const std::int64_t span = max_key_ - min_key_;
      if (span > (max_slots(n_symbols) - 1) / mul || min_key_ < -kMaxKey / mul || max_key_ > kMaxKey / mul)
        return false;
      ZeroedArray<std::uint32_t> fresh(static_cast<std::size_t>(span * mul + 1));
      for (std::int64_t key = min_key_; key <= max_key_; ++key)
        fresh[static_cast<std::size_t>((key - min_key_) * mul)] = slots_[static_cast<std::size_t>(key - lo_)];
      std::swap(slots_, fresh);
      min_key_ *= mul;
      max_key_ *= mul;
      lo_ = min_key_;
    }
    scale_ = scale;
    return true;
  }

  // Leaves direct addressing: calls add(slot value) for every filled slot and frees the table.
  template <class Add>
  void deactivate(Add add) {
    for (const std::uint32_t s : slots_)
      if (s != 0) add(s - 1);
    slots_ = ZeroedArray<std::uint32_t>();
    active_ = false;
  }

 private:
  // A table may hold twice as many slots as the chunk is expected to have rows (at least
  // 2^16), or 8 slots a symbol: a narrow column of a big chunk fills its table in time.
  std::int64_t max_slots(std::size_t n_symbols) const {
    return std::max(allowance_, 8 * static_cast<std::int64_t>(n_symbols + 1));
  }

  bool grow(std::int64_t k, std::size_t n_symbols) {
    const auto cap = static_cast<std::int64_t>(slots_.size());
    if (cap == 0) {
      // A big chunk's table takes its whole allowance at once, a quarter of it below the
      // first key: pages are zeroed only where keys land, and rising or falling keys (ids,
      // dates) fill it without regrowing and copying it.
      const std::int64_t first_cap = allowance_ > (std::int64_t{1} << 16) ? allowance_ : 1024;
      lo_ = first_cap > 1024 ? k - first_cap / 4 : k - 16;
      min_key_ = max_key_ = k;
      slots_ = ZeroedArray<std::uint32_t>(static_cast<std::size_t>(first_cap));
      return true;
    }
    // The keys seen, not the slack around them, count against the limit.
    const std::int64_t lo_key = std::min(min_key_, k), hi_key = std::max(max_key_, k);
    const std::int64_t need = hi_key - lo_key + 1;
    if (need > max_slots(n_symbols)) return false;
    const std::int64_t fresh_cap = std::min(std::max(need, 2 * cap), max_slots(n_symbols));
    const std::int64_t fresh_lo = k < min_key_ ? hi_key + 1 - fresh_cap : lo_key;
    ZeroedArray<std::uint32_t> fresh(static_cast<std::size_t>(fresh_cap));
    std::memcpy(fresh.data() + (min_key_ - fresh_lo), slots_.data() + (min_key_ - lo_),
                static_cast<std::size_t>(max_key_ - min_key_ + 1) * sizeof(std::uint32_t));
    std::swap(slots_, fresh);
    lo_ = fresh_lo;
    min_key_ = lo_key;
    max_key_ = hi_key;
    return true;
  }

  ZeroedArray<std::uint32_t> slots_;  // symbol index + 1 by key - lo_; 0 = empty
  std::int64_t lo_ = 0;
  std::int64_t min_key_ = 0, max_key_ = 0;  // the keys seen
  std::int64_t allowance_ = std::int64_t{1} << 16;
  unsigned scale_ = 0;
  bool has_scale_ = false;
  bool active_ = true;
};

// One column of one chunk: its local symbols in first-occurrence order and each row's local
// symbol index.
struct ChunkColumn {
  // Per symbol its number: as an int32 while every symbol is an int32 integer (the symbol
  // table's own form, 4 bytes a symbol), from the first other one on as a double (NaN: none).
  // The texts of the symbols that have one are listed apart, in symbol order.
  std::vector<std::int32_t> ints;
  std::vector<double> numbers;
  bool all_ints = true;
  std::vector<SymbolText> texts;
  std::vector<std::uint32_t> rows;
  std::size_t nulls = 0;
  DenseNumbers dense;
  NumberMap number_map;
  std::size_t hashed_numbers = 0;  // numbers in number_map
  TextMap text_map;                // the pure texts, by their index in `texts`
  std::size_t text_symbols = 0;    // pure texts

  std::size_t size() const { return all_ints ? ints.size() : numbers.size(); }
  double number(std::size_t i) const { return all_ints ? ints[i] : numbers[i]; }
  [[gnu::always_inline]] void prefetch_number(std::size_t i) const {
    __builtin_prefetch(all_ints ? static_cast<const void*>(ints.data() + i) : static_cast<const void*>(numbers.data() + i));
  }
  bool is_number(std::size_t i) const { return all_ints || numbers[i] == numbers[i]; }
  // Adds a symbol (text null: none); returns its index.
  [[gnu::always_inline]] std::uint32_t add(double number, const char* text, std::uint32_t len) {
    const auto index = static_cast<std::uint32_t>(size());
    if (all_ints && is_int32(number)) {
      ints.push_back(static_cast<std::int32_t>(number));
    } else {
      add_double(number);
    }
    if (text != nullptr) texts.push_back(SymbolText{text, len, index});
    return index;
  }
  // The SymbolTable rule for int32 symbols: integers in range, and no -0.
  static bool is_int32(double v) {
    return v >= -2147483648.0 && v <= 2147483647.0 && static_cast<double>(static_cast<std::int32_t>(v)) == v &&
           std::bit_cast<std::uint64_t>(v) != std::uint64_t{1} << 63;
  }
  [[gnu::noinline]] void add_double(double number) {
    if (all_ints) {
      numbers.reserve(ints.capacity());
      numbers.assign(ints.begin(), ints.end());
      std::vector<std::int32_t>().swap(ints);
      all_ints = false;
    }
    numbers.push_back(number);
  }
  // The numbers as a symbol table takes them: exactly as many as there are symbols.
  NumberArray number_array() const {
    return all_ints ? NumberArray(ints.begin(), ints.end()) : NumberArray(numbers.begin(), numbers.end());
  }
};

// ---------------------------------------------------------------------------------------------
// Parsing one chunk

enum class ErrorKind { kNone, kInvalidUtf8, kUnclosedQuote, kTextAfterQuote, kTooManyFields, kTooFewFields, kFieldTooLong };

struct ParseError {
  std::size_t offset = kNoError;
  ErrorKind kind = ErrorKind::kNone;
  std::size_t fields = 0;
};

// Byte mask with 0x80 in each byte of `w` equal to `c`; the lowest set bit is always exact.
inline std::uint64_t match_byte(std::uint64_t w, char c) {
  const std::uint64_t x = w ^ (0x0101010101010101ULL * static_cast<unsigned char>(c));
  return (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
}

class ChunkParser {
 public:
  ChunkParser(const char* data, std::size_t size, char sep, std::size_t n_cols)
      : data_(data), size_(size), sep_(sep), cols_(n_cols) {}

  // Parses the records that start in [begin, end) and returns where the last one ends (past
  // `end` when `begin` or `end` was not a record boundary). Stops at the first error.
  std::size_t parse(std::size_t begin, std::size_t end, std::size_t expected_rows);
  // Reads the record at `pos` as field names; returns false (with error() set) when malformed.
  bool parse_names(std::size_t& pos, std::vector<std::string>& names);

  std::vector<ChunkColumn>& columns() { return cols_; }
  std::size_t rows() const { return rows_; }
  const ParseError& error() const { return error_; }
  void fail(std::size_t offset, ErrorKind kind, std::size_t fields = 0) {
    if (offset < error_.offset) error_ = ParseError{offset, kind, fields};
  }

 private:
  // Reads the field at `pos` and moves `pos` to the separator or line end after it (or the
  // end of the data). A field with doubled quotes is unescaped into scratch_.
  bool next_field(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch);
  // Moves past a blank line at `pos`; false when the line is not blank.
  bool skip_blank_line(std::size_t& pos) const;
  // Interns one block of rows column by column: first every field is read and its table slot
  // prefetched, then the values are looked up in row order, so the cache misses of a block
  // overlap instead of stalling one by one.
  void intern_block(std::size_t n_rows);
  std::uint32_t intern_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch, const NumberText& num);
  // Adds a number as a new symbol of the column (with its text unless canonical).
  std::uint32_t add_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch, const NumberText& num);
  std::uint32_t intern_text(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch, std::uint64_t h);
  // Moves a column's numbers from direct addressing into its NumberMap.
  void leave_dense(ChunkColumn& col);

  const char* data_;
  std::size_t size_;
  char sep_;
  std::vector<ChunkColumn> cols_;
  std::size_t rows_ = 0;
  ParseError error_;
  std::uint64_t high_bits_ = 0;  // or of the bytes scanned since the block began; 0x80 for a quoted field
  std::string scratch_;
  Arena arena_;

  // The block being read: fields by column then row, unescaped texts, per-row lookup state.
  static constexpr std::size_t kBlockRows = 256;
  struct FieldRef {
    const char* p;
    std::size_t scratch_at;  // offset in block_scratch_ when in_scratch
    std::uint32_t len;
    bool in_scratch;
  };
  std::vector<FieldRef> fields_;
  std::string block_scratch_;
  NumberText numbers_[kBlockRows];
  std::uint64_t hashes_[kBlockRows];
  std::int64_t keys_[kBlockRows];
  std::uint8_t kinds_[kBlockRows];
};

inline bool ChunkParser::skip_blank_line(std::size_t& pos) const {
  if (data_[pos] == '\n') {
    ++pos;
    return true;
  }
  if (data_[pos] == '\r' && (pos + 1 == size_ || data_[pos + 1] == '\n')) {
    pos += pos + 1 == size_ ? 1 : 2;
    return true;
  }
  return false;
}

inline bool ChunkParser::next_field(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch) {
  const char* d = data_;
  const std::size_t size = size_;
  in_scratch = false;
  if (pos < size && d[pos] == '"') {
    high_bits_ |= 0x80;
    const std::size_t open = pos;
    std::size_t q = pos + 1;
    bool doubled = false;
    std::size_t close;
    for (;;) {
      const void* hit = q < size ? std::memchr(d + q, '"', size - q) : nullptr;
      if (hit == nullptr) {
        fail(open, ErrorKind::kUnclosedQuote);
        pos = size;
        return false;
      }
      const auto at = static_cast<std::size_t>(static_cast<const char*>(hit) - d);
      if (at + 1 < size && d[at + 1] == '"') {
        doubled = true;
        q = at + 2;
        continue;
      }
      close = at;
      break;
    }
    field = d + open + 1;
    len = close - open - 1;
    pos = close + 1;
    if (doubled) {
      scratch_.clear();
      for (std::size_t i = 0; i < len; ++i) {
        scratch_.push_back(field[i]);
        if (field[i] == '"') ++i;  // the second quote of a pair
      }
      field = scratch_.data();
      len = scratch_.size();
      in_scratch = true;
    }
    if (pos < size && d[pos] != sep_ && d[pos] != '\n') {
      if (d[pos] == '\r' && (pos + 1 == size || d[pos + 1] == '\n')) {
        ++pos;
      } else {
        fail(pos, ErrorKind::kTextAfterQuote);
        return false;
      }
    }
    return true;
  }
  // Unquoted: up to the separator or LF, eight bytes a step while eight are left.
  std::size_t e = pos;
  for (;;) {
    if (e + 8 <= size) {
      const std::uint64_t w = load64(d + e);
      high_bits_ |= w;
      const std::uint64_t m = match_byte(w, sep_) | match_byte(w, '\n');
      if (m != 0) {
        e += static_cast<std::size_t>(std::countr_zero(m)) >> 3;
        break;
      }
      e += 8;
    } else {
      for (; e < size && d[e] != sep_ && d[e] != '\n'; ++e) high_bits_ |= static_cast<unsigned char>(d[e]);
      break;
    }
  }
  field = d + pos;
  len = e - pos;
  if (len > 0 && field[len - 1] == '\r' && (e == size || d[e] == '\n')) --len;  // CRLF
  pos = e;
  return true;
}

bool ChunkParser::parse_names(std::size_t& pos, std::vector<std::string>& names) {
  for (;;) {
    const char* field;
    std::size_t len;
    bool in_scratch;
    if (!next_field(pos, field, len, in_scratch)) return false;
    names.emplace_back(field, len);
    if (pos < size_ && data_[pos] == sep_) {
      ++pos;
      continue;
    }
    if (pos < size_) ++pos;  // the LF
    return true;
  }
}

std::size_t ChunkParser::parse(std::size_t begin, std::size_t end, std::size_t expected_rows) {
  // Reserving only claims address space: pages are touched as symbols arrive, and the large
  // columns never copy their symbols while growing.
  for (auto& c : cols_) {
    c.rows.reserve(expected_rows);
    c.ints.reserve(expected_rows);
    c.dense.expect_rows(expected_rows);
  }
  const std::size_t n_cols = cols_.size();
  fields_.resize(n_cols * kBlockRows);
  std::size_t pos = begin;
  std::size_t block_begin = pos;
  // The block's bytes are checked as UTF-8 only when a field of it had a byte >= 0x80 or quotes.
  auto utf8_ok = [&] {
    if ((high_bits_ & 0x8080808080808080ULL) == 0) return true;
    high_bits_ = 0;
    const std::size_t bad = find_invalid_utf8(data_ + block_begin, pos - block_begin);
    if (bad == pos - block_begin) return true;
    fail(block_begin + bad, ErrorKind::kInvalidUtf8);
    return false;
  };
  while (pos < end) {
    std::size_t r = 0;
    block_scratch_.clear();
    block_begin = pos;
    high_bits_ = 0;
    while (r < kBlockRows && pos < end) {
      if (skip_blank_line(pos)) continue;
      const std::size_t record = pos;
      std::size_t col = 0;
      for (;;) {
        const char* field;
        std::size_t len;
        bool in_scratch;
        if (!next_field(pos, field, len, in_scratch)) {
          utf8_ok();
          return pos;
        }
        if (col == n_cols) {
          fail(record, ErrorKind::kTooManyFields, n_cols);
          utf8_ok();
          return pos;
        }
        if (len > 0xFFFFFFFFULL) {
          fail(record, ErrorKind::kFieldTooLong);
          utf8_ok();
          return pos;
        }
        FieldRef& f = fields_[col * kBlockRows + r];
        f.len = static_cast<std::uint32_t>(len);
        f.in_scratch = in_scratch;
        if (in_scratch) {
          f.scratch_at = block_scratch_.size();
          block_scratch_.append(field, len);
        } else {
          f.p = field;
        }
        ++col;
        if (pos < size_ && data_[pos] == sep_) {
          ++pos;
          continue;
        }
        if (pos < size_) ++pos;  // the LF
        break;
      }
      if (col != n_cols) {
        fail(record, ErrorKind::kTooFewFields, col);
        utf8_ok();
        return pos;
      }
      ++r;
    }
    if (!utf8_ok()) return pos;
    intern_block(r);
    rows_ += r;
  }
  return pos;
}

void ChunkParser::intern_block(std::size_t n_rows) {
  enum : std::uint8_t { kNullCell, kNumberCell, kKeyedCell, kTextCell };
  for (std::size_t c = 0; c < cols_.size(); ++c) {
    ChunkColumn& col = cols_[c];
    FieldRef* f = &fields_[c * kBlockRows];
    // Keys of the direct table, at its scale as the block starts (valid while it stays).
    const bool keys_known = col.dense.active() && col.dense.has_scale();
    const unsigned key_scale = col.dense.scale();
    for (std::size_t r = 0; r < n_rows; ++r) {
      if (f[r].in_scratch) f[r].p = block_scratch_.data() + f[r].scratch_at;
      if (f[r].len == 0) {
        kinds_[r] = kNullCell;
      } else if (read_number(f[r].p, f[r].len, numbers_[r])) {
        kinds_[r] = kNumberCell;
        if (col.dense.active()) {
          if (keys_known && numbers_[r].fixed && col.dense.fixed_key(numbers_[r], keys_[r])) {
            kinds_[r] = kKeyedCell;
            col.dense.prefetch(keys_[r]);
          }
        } else {
          hashes_[r] = mix64(number_key(numbers_[r].value));
          col.number_map.prefetch(hashes_[r]);
        }
      } else {
        kinds_[r] = kTextCell;
        hashes_[r] = hash_text(f[r].p, f[r].len);
        col.text_map.prefetch(hashes_[r]);
      }
    }
    for (std::size_t r = 0; r < n_rows; ++r) {
      std::uint32_t index = kNull;
      col.nulls += kinds_[r] == kNullCell;
      if (kinds_[r] == kKeyedCell && col.dense.active() && col.dense.scale() == key_scale) {
        std::uint32_t* slot = col.dense.slot(keys_[r], col.size());
        if (slot != nullptr && *slot != 0) {
          index = *slot - 1;
        } else if (slot != nullptr) {
          index = add_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
          *slot = index + 1;
        } else {
          leave_dense(col);
          index = intern_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
        }
      } else if (kinds_[r] == kNumberCell || kinds_[r] == kKeyedCell) {
        index = intern_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
      } else if (kinds_[r] == kTextCell) {
        index = intern_text(col, f[r].p, f[r].len, f[r].in_scratch, hashes_[r]);
      }
      col.rows.push_back(index);
    }
  }
}

std::uint32_t ChunkParser::add_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch,
                                      const NumberText& num) {
  const char* text = num.canonical ? nullptr : (in_scratch ? arena_.copy(p, n) : p);
  return col.add(num.value, text, num.canonical ? 0U : static_cast<std::uint32_t>(n));
}

std::uint32_t ChunkParser::intern_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch,
                                         const NumberText& num) {
  auto add = [&] { return add_number(col, p, n, in_scratch, num); };
  if (col.dense.active()) {
    std::int64_t k = 0;
    bool keyed = col.dense.key_of(num, k);
    if (!keyed && num.fixed && col.hashed_numbers == 0 && num.frac > col.dense.scale() &&
        num.frac <= DenseNumbers::kMaxScale) {
      // More fraction digits than so far: raise the scale while nothing is hashed. (A number
      // with no more digits than the scale that has no key is out of range: it is hashed.)
      if (col.dense.rescale(num.frac, col.size())) {
        keyed = col.dense.key_of(num, k);
      } else {
        leave_dense(col);
      }
    }
    if (keyed && col.dense.active()) {
      std::uint32_t* slot = col.dense.slot(k, col.size());
      if (slot != nullptr) {
        if (*slot != 0) return *slot - 1;
        const std::uint32_t index = add();
        *slot = index + 1;
        return index;
      }
      leave_dense(col);
    }
  }
  const std::uint64_t key = number_key(num.value);
  std::size_t slot = 0;
  const std::uint32_t found = col.number_map.find(key, mix64(key), slot);
  if (found != kNull) return found;
  const std::uint32_t index = add();
  col.number_map.insert(slot, key, index);
  ++col.hashed_numbers;
  return index;
}

std::uint32_t ChunkParser::intern_text(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch,
                                       std::uint64_t h) {
  const auto len = static_cast<std::uint32_t>(n);
  std::size_t slot = 0;
  const std::uint32_t found = col.text_map.find(p, len, h, col.texts.data(), slot);
  if (found != kNull) return col.texts[found].symbol;
  const std::uint32_t index = col.add(std::nan(""), in_scratch ? arena_.copy(p, n) : p, len);
  col.text_map.insert(slot, h, static_cast<std::uint32_t>(col.texts.size() - 1), col.texts.data());
  ++col.text_symbols;
  return index;
}

void ChunkParser::leave_dense(ChunkColumn& col) {
  col.dense.deactivate([&](std::uint32_t index) {
    const std::uint64_t key = number_key(col.number(index));
    std::size_t slot = 0;
    col.number_map.find(key, mix64(key), slot);
    col.number_map.insert(slot, key, index);
    ++col.hashed_numbers;
  });
}

// ---------------------------------------------------------------------------------------------
// Errors

[[noreturn]] void throw_parse_error(const char* d, std::size_t size, const ParseError& e, std::size_t n_cols) {
  const std::size_t at = std::min(e.offset, size);
  const auto line = 1 + static_cast<std::size_t>(std::count(d, d + at, '\n'));
  std::string msg = "CSV line " + std::to_string(line) + ": ";
  switch (e.kind) {
    case ErrorKind::kInvalidUtf8:
      msg += "invalid UTF-8 (the data must be UTF-8 text)";
      break;
    case ErrorKind::kUnclosedQuote:
      msg += "a quoted field starts here and its closing quote is missing";
      break;
    case ErrorKind::kTextAfterQuote:
      msg += "text after the closing quote of a field (a quote inside a quoted field must be doubled)";
      break;
    case ErrorKind::kTooManyFields:
      msg += "more fields than the " + std::to_string(n_cols) + " of the header";
      break;
    case ErrorKind::kTooFewFields:
      msg += std::to_string(e.fields) + (e.fields == 1 ? " field" : " fields") + ", the header has " +
             std::to_string(n_cols);
      break;
    case ErrorKind::kFieldTooLong:
      msg += "a field longer than 4 GiB";
      break;
    case ErrorKind::kNone:
      msg += "malformed data";
      break;
  }
  throw Error(msg);
}

// ---------------------------------------------------------------------------------------------
// Header and chunks

struct Header {
  char sep = ',';
  std::vector<std::string> names;
  std::size_t body = 0;  // offset of the first record after the header
};

Header read_header(const char* d, std::size_t size, std::size_t start) {
  std::size_t pos = start;
  for (;;) {  // blank lines before the header
    if (pos < size && d[pos] == '\n') {
      ++pos;
    } else if (pos + 1 < size && d[pos] == '\r' && d[pos + 1] == '\n') {
      pos += 2;
    } else {
      break;
    }
  }
  if (pos == size) throw Error("CSV data is empty: a header row with the field names is needed");
  // The separator: the candidate seen most often in the header line outside quotes.
  std::size_t counts[3] = {0, 0, 0};
  bool quoted = false;
  for (std::size_t e = pos; e < size; ++e) {
    const char c = d[e];
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted) {
      if (c == '\n') break;
      counts[0] += c == ',';
      counts[1] += c == ';';
      counts[2] += c == '\t';
    }
  }
  Header h;
  const char seps[3] = {',', ';', '\t'};
  std::size_t best = 0;
  for (std::size_t i = 1; i < 3; ++i)
    if (counts[i] > counts[best]) best = i;
  h.sep = seps[best];

  ChunkParser parser(d, size, h.sep, 0);
  const std::size_t header_at = pos;
  const bool ok = parser.parse_names(pos, h.names);
  if (ok) {
    const std::size_t bad = find_invalid_utf8(d + header_at, pos - header_at);
    if (bad != pos - header_at) parser.fail(header_at + bad, ErrorKind::kInvalidUtf8);
  }
  if (parser.error().offset != kNoError) throw_parse_error(d, size, parser.error(), 0);
  const auto line = 1 + static_cast<std::size_t>(std::count(d, d + header_at, '\n'));
  for (std::size_t i = 0; i < h.names.size(); ++i) {
    if (h.names[i].empty())
      throw Error("CSV line " + std::to_string(line) + ": field " + std::to_string(i + 1) +
                  " of the header has no name");
    for (std::size_t j = 0; j < i; ++j)
      if (h.names[i] == h.names[j])
        throw Error("CSV line " + std::to_string(line) + ": the header names the field '" + h.names[i] +
                    "' twice");
  }
  h.body = pos;
  return h;
}

// The quotes in [p, p+n): 64 bytes at a time into a byte counter, which the compiler vectorises.
std::size_t count_quotes(const char* p, std::size_t n) {
  std::size_t q = 0, i = 0;
  for (; i + 64 <= n; i += 64) {
    unsigned char block = 0;
    for (std::size_t j = 0; j < 64; ++j) block = static_cast<unsigned char>(block + (p[i + j] == '"'));
    q += block;
  }
  for (; i < n; ++i) q += p[i] == '"';
  return q;
}

// Chunk starts in [body, size): each right after a line end that is outside quotes, judged by
// the parity of the quotes before it. The parity is exact for RFC 4180 data; the parser checks
// every guess (a chunk must end exactly where the next one starts) and recovers when a quote
// inside an unquoted field made one wrong.
std::vector<std::size_t> chunk_starts(const char* d, std::size_t size, std::size_t body, std::size_t n_chunks,
                                      CpuAccount* cpu) {
  std::vector<std::size_t> starts{body};
  if (n_chunks <= 1) return starts;
  std::vector<std::size_t> nominal(n_chunks + 1);
  for (std::size_t k = 0; k <= n_chunks; ++k) nominal[k] = body + (size - body) / n_chunks * k;
  nominal[n_chunks] = size;
  std::vector<std::size_t> quotes(n_chunks, 0);
  parallel_for(
      n_chunks,
      [&](std::size_t k) { quotes[k] = count_quotes(d + nominal[k], nominal[k + 1] - nominal[k]); },
      cpu);
  std::size_t parity = 0;
  for (std::size_t k = 1; k < n_chunks; ++k) {
    parity += quotes[k - 1];
    std::size_t pos = nominal[k];
    bool in_quotes = (parity & 1) != 0;
    if (pos < starts.back()) {  // the previous start lies past this one's nominal place
      pos = starts.back();
      in_quotes = false;
    }
    for (; pos < size; ++pos) {
      const char c = d[pos];
      if (c == '"') {
        in_quotes = !in_quotes;
      } else if (c == '\n' && !in_quotes) {
        ++pos;
        break;
      }
    }
    if (pos > starts.back() && pos < size) starts.push_back(pos);
  }
  return starts;
}

// ---------------------------------------------------------------------------------------------
// Merging the chunks' symbol tables

struct ParsedChunk {
  std::size_t begin = 0, end = 0, stop = 0;
  std::unique_ptr<ChunkParser> parser;
};

// Rows per packing task: enough to amortise a task, few enough to spread the columns evenly.
constexpr std::size_t kPackRows = std::size_t{1} << 20;
// How many symbols ahead a hash partition's merge prefetches map slots.
constexpr std::uint32_t kPrefetchAhead = 16;
// Keys per task of a merge by key: the task's scratch arrays stay in the L2 cache.
constexpr std::int64_t kKeySlice = std::int64_t{1} << 15;

inline std::int64_t floor_div(std::int64_t n, std::int64_t d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }

// How one column merges.
struct ColumnPlan {
  // The numbers sit in direct tables in every chunk: they merge by key, in slices of the key
  // range [lo, hi] at the common scale, where chunk k's keys are its own times mul[k]. A chunk
  // whose keys span a range that no other chunk's overlaps, and that has no pure texts, is
  // alone: all its symbols are new, in its own order, and it stays out of the walk.
  bool by_key = false;
  std::int64_t lo = 0, hi = -1;
  std::vector<std::int64_t> mul;
  std::vector<std::uint8_t> alone;
  bool ints = false;       // every symbol an int32 integer without text: merged as int32
  bool texts = false;      // some symbol has a text
  unsigned part_bits = 0;  // 2^part_bits hash partitions for the symbols not merged by key
  std::vector<std::uint32_t> new_base;  // per chunk: the index of its first new symbol; then the count
};

// One column's merge state for one chunk.
struct ChunkMerge {
  std::vector<std::uint8_t> is_new;  // 1 where this is the symbol's first occurrence overall
  // Local symbol -> symbol index of the column. In a column of int32 symbols it takes the place
  // of the symbols themselves: each is read before its entry is written (step 3), and none is
  // read after that.
  std::uint32_t* remap = nullptr;
  std::unique_ptr<std::uint32_t[]> remap_storage;
  std::atomic<std::size_t> n_new{0};
  // The symbols that merge by hash, grouped by partition (ascending within one):
  std::vector<std::uint32_t> order;   // local symbol
  std::vector<std::uint32_t> text;    // its index in the chunk's texts (kNull for a number)
  std::vector<std::uint64_t> hashes;  // its hash
  std::vector<std::uint32_t> slot;    // its index within the partition
  std::vector<std::uint32_t> starts;  // partition p: order[starts[p] .. starts[p+1])
};

// One hash partition of one column: its distinct symbols in first-occurrence order.
struct PartitionMerge {
  std::vector<SymbolText> texts;       // of each symbol, to compare texts
  std::vector<std::uint64_t> owners;   // (chunk << 32) | local symbol of each first occurrence
  std::vector<std::uint32_t> global;   // symbol index of the column
};

// The symbols of a column, first occurrence first, as arrays filled in place.
struct MergedSymbols {
  IntArray ints;        // when the plan says ints
  NumberArray numbers;  // otherwise: NaN where a symbol has no number
  std::vector<std::vector<SymbolText>> texts;  // per chunk: the texts of its new symbols
  bool allocated = false;
};

ColumnPlan plan_column(std::vector<ParsedChunk>& chunks, std::size_t c) {
  ColumnPlan plan;
  const std::size_t n_chunks = chunks.size();
  auto column = [&](std::size_t k) -> const ChunkColumn& { return chunks[k].parser->columns()[c]; };
  std::size_t symbols = 0, rows = 0;
  unsigned scale = 0;
  bool by_key = true, any_key = false, all_ints = true;
  for (std::size_t k = 0; k < n_chunks; ++k) {
    const ChunkColumn& col = column(k);
    symbols += col.size();
    rows += col.rows.size();
    plan.texts |= !col.texts.empty();
    all_ints &= col.all_ints;
    by_key &= col.dense.active() && col.hashed_numbers == 0;
    if (col.dense.active() && !col.dense.empty()) {
      any_key = true;
      scale = std::max(scale, col.dense.scale());
    }
  }
  if (by_key && any_key) {
    plan.mul.assign(n_chunks, 1);
    struct Span {
      std::int64_t lo, hi;
      std::size_t k;
    };
    std::vector<Span> spans;
    for (std::size_t k = 0; k < n_chunks && by_key; ++k) {
      const DenseNumbers& dn = column(k).dense;
      if (dn.empty()) continue;
      const std::int64_t mul = DenseNumbers::kPow10Int[scale - dn.scale()];
      by_key = dn.min_key() >= -DenseNumbers::kMaxKey / mul && dn.max_key() <= DenseNumbers::kMaxKey / mul;
      plan.mul[k] = mul;
      spans.push_back(Span{dn.min_key() * mul, dn.max_key() * mul, k});
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    plan.alone.assign(n_chunks, 0);
    for (std::size_t k = 0; k < n_chunks; ++k) plan.alone[k] = column(k).size() == 0;
    for (std::size_t j = 0; j < spans.size(); ++j) {
      const bool apart = (j == 0 || spans[j - 1].hi < spans[j].lo) && (j + 1 == spans.size() || spans[j].hi < spans[j + 1].lo);
      plan.alone[spans[j].k] = apart && column(spans[j].k).text_symbols == 0;
    }
    std::int64_t lo = DenseNumbers::kMaxKey, hi = -DenseNumbers::kMaxKey;
    for (const Span& sp : spans) {
      if (plan.alone[sp.k]) continue;
      lo = std::min(lo, sp.lo);
      hi = std::max(hi, sp.hi);
    }
    // The merge walks the key range of the chunks not alone, which must not be much wider than
    // the symbols or rows.
    const std::int64_t limit = std::max({std::int64_t{1} << 16, 8 * static_cast<std::int64_t>(symbols),
                                         2 * static_cast<std::int64_t>(rows)});
    if (by_key && (lo > hi || hi - lo + 1 <= limit)) {
      plan.by_key = true;
      plan.lo = lo;
      plan.hi = hi;
    }
  }
  if (!plan.by_key) plan.alone.assign(n_chunks, 0);
  plan.ints = all_ints && !plan.texts;
  std::size_t hashed = 0;
  for (std::size_t k = 0; k < n_chunks; ++k) hashed += plan.by_key ? column(k).text_symbols : column(k).size();
  plan.part_bits = hashed >= kPartitionThreshold ? kPartitionBits : 0;
  return plan;
}

// A column's SymbolTable from its symbols, which are known to be distinct: their numbers and
// the lists (one after the other, in symbol order) of the texts of those that have one.
SymbolTable make_symbols(NumberArray&& numbers, const std::vector<const std::vector<SymbolText>*>& texts) {
  std::vector<std::span<const SymbolText>> lists;
  for (const auto* list : texts) lists.emplace_back(*list);
  return SymbolTable::of_symbols(std::move(numbers), lists);
}

// The walk over one slice [a, b) of a column's key range, chunk by chunk in order, calling
// f(chunk, key - a, local symbol) for every key a chunk holds.
template <class F>
void walk_keys(std::vector<ParsedChunk>& chunks, std::size_t c, const ColumnPlan& plan, std::int64_t a,
               std::int64_t b, F f) {
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const DenseNumbers& dn = chunks[k].parser->columns()[c].dense;
    if (dn.empty() || plan.alone[k]) continue;
    const std::int64_t mul = plan.mul[k];
    const std::int64_t y0 = std::max(dn.min_key(), -floor_div(-a, mul));
    const std::int64_t y1 = std::min(dn.max_key(), floor_div(b - 1, mul));
    const std::uint32_t* slots = dn.key_slots();
    for (std::int64_t y = y0; y <= y1; ++y) {
      const std::uint32_t s = slots[y - dn.min_key()];
      if (s != 0) f(k, static_cast<std::size_t>(y * mul - a), s - 1);
    }
  }
}

// Merges the chunks' local symbol tables into one per column (first occurrence first) and
// packs each column's rows straight from the chunks' local indexes. Every step runs as tasks
// over columns x chunks, hash partitions, slices of key ranges or ranges of rows.
void merge_chunks(std::vector<ParsedChunk>& chunks, const std::vector<std::size_t>& row_offsets, LoadedTable& table,
                  CpuAccount* cpu) {
  const std::size_t n_cols = table.columns.size();
  const std::size_t n_chunks = chunks.size();
  const std::size_t n_rows = row_offsets.back();
  auto column = [&](std::size_t c, std::size_t k) -> ChunkColumn& { return chunks[k].parser->columns()[c]; };

  std::vector<ColumnPlan> plans(n_cols);
  parallel_for(n_cols, [&](std::size_t c) { plans[c] = plan_column(chunks, c); }, cpu);
  std::vector<std::vector<ChunkMerge>> merges;
  for (std::size_t c = 0; c < n_cols; ++c) merges.emplace_back(n_chunks);
  std::vector<std::size_t> part_base(n_cols + 1, 0);
  for (std::size_t c = 0; c < n_cols; ++c) part_base[c + 1] = part_base[c] + (std::size_t{1} << plans[c].part_bits);
  std::vector<PartitionMerge> parts(part_base.back());
  auto part_column = [&](std::size_t t) {
    return static_cast<std::size_t>(std::upper_bound(part_base.begin(), part_base.end(), t) - part_base.begin()) - 1;
  };
  struct KeySlice {
    std::size_t c;
    std::int64_t a, b;
  };
  std::vector<KeySlice> slices;
  for (std::size_t c = 0; c < n_cols; ++c)
    if (plans[c].by_key)
      for (std::int64_t a = plans[c].lo; a <= plans[c].hi; a += kKeySlice)
        slices.push_back(KeySlice{c, a, std::min(plans[c].hi + 1, a + kKeySlice)});

  // The arrays of each column's symbols; a column whose chunks are all alone knows its count
  // now and allocates them beside step 1.
  std::vector<MergedSymbols> merged(n_cols);
  auto allocate_merged = [&](std::size_t c, std::size_t n) {
    if (plans[c].ints) {
      merged[c].ints.resize(n);
    } else {
      merged[c].numbers.resize(n);
    }
    if (plans[c].texts) merged[c].texts.resize(n_chunks);
    merged[c].allocated = true;
  };

  // 1. Per column and chunk: the symbols that merge by hash, grouped by partition.
  parallel_for(
      n_cols * n_chunks + n_cols,
      [&](std::size_t t) {
        if (t >= n_cols * n_chunks) {
          const std::size_t c = t - n_cols * n_chunks;
          std::size_t n = 0;
          for (std::size_t k = 0; k < n_chunks; ++k) {
            if (!plans[c].alone[k]) return;
            n += column(c, k).size();
          }
          if (n <= 0xFFFFFFFEULL) allocate_merged(c, n);
          return;
        }
        const std::size_t c = t / n_chunks, k = t % n_chunks;
        const ChunkColumn& col = column(c, k);
        ChunkMerge& m = merges[c][k];
        const std::size_t n = col.size();
        const std::size_t n_parts = std::size_t{1} << plans[c].part_bits;
        if (plans[c].alone[k]) {
          m.starts.assign(n_parts + 1, 0);
          m.n_new.store(n, std::memory_order_relaxed);
          return;
        }
        if (k == 0) {
          // The first chunk's symbols are all new, in its own order: no is_new, no remap.
          m.n_new.store(n, std::memory_order_relaxed);
        } else {
          m.is_new.assign(n, 0);
          if (col.all_ints) {
            m.remap = reinterpret_cast<std::uint32_t*>(column(c, k).ints.data());
          } else {
            m.remap_storage.reset(new std::uint32_t[n]);
            m.remap = m.remap_storage.get();
          }
        }
        std::vector<std::uint32_t> ids, text_of;
        std::vector<std::uint64_t> hashes;
        auto add = [&](std::uint32_t i, std::uint32_t text) {
          ids.push_back(i);
          text_of.push_back(text);
          if (text == kNull) {
            hashes.push_back(mix64(number_key(col.number(i))));
          } else {
            hashes.push_back(hash_text(col.texts[text].data, col.texts[text].size));
          }
        };
        if (plans[c].by_key) {
          // Only the pure texts merge by hash.
          for (std::size_t j = 0; j < col.texts.size(); ++j)
            if (!col.is_number(col.texts[j].symbol)) add(col.texts[j].symbol, static_cast<std::uint32_t>(j));
        } else {
          // Numbers (duals too) by their number, pure texts by their text.
          std::size_t j = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const bool has_text = j < col.texts.size() && col.texts[j].symbol == i;
            add(static_cast<std::uint32_t>(i), has_text && !col.is_number(i) ? static_cast<std::uint32_t>(j) : kNull);
            j += has_text;
          }
        }
        m.starts.assign(n_parts + 1, 0);
        for (const std::uint64_t h : hashes) ++m.starts[(h & (n_parts - 1)) + 1];
        for (std::size_t p = 0; p < n_parts; ++p) m.starts[p + 1] += m.starts[p];
        m.order.resize(ids.size());
        m.text.resize(ids.size());
        m.hashes.resize(ids.size());
        m.slot.assign(ids.size(), 0);
        std::vector<std::uint32_t> fill(m.starts.begin(), m.starts.end() - 1);
        for (std::size_t j = 0; j < ids.size(); ++j) {
          const std::uint32_t o = fill[hashes[j] & (n_parts - 1)]++;
          m.order[o] = ids[j];
          m.text[o] = text_of[j];
          m.hashes[o] = hashes[j];
        }
      },
      cpu);

  // 2. First occurrences: each hash partition dedupes its symbols chunk by chunk in order; each
  //    key slice marks a key new in the first chunk that holds it.
  parallel_for(
      parts.size() + slices.size(),
      [&](std::size_t t) {
        if (t >= parts.size()) {
          const KeySlice& ks = slices[t - parts.size()];
          std::vector<std::uint8_t> seen(static_cast<std::size_t>(ks.b - ks.a), 0);
          std::vector<std::size_t> n_new(n_chunks, 0);
          walk_keys(chunks, ks.c, plans[ks.c], ks.a, ks.b, [&](std::size_t k, std::size_t x, std::uint32_t i) {
            if (seen[x]) return;
            seen[x] = 1;
            if (k == 0) return;  // counted already
            merges[ks.c][k].is_new[i] = 1;
            ++n_new[k];
          });
          for (std::size_t k = 0; k < n_chunks; ++k)
            if (n_new[k] != 0) merges[ks.c][k].n_new.fetch_add(n_new[k], std::memory_order_relaxed);
          return;
        }
        const std::size_t c = part_column(t), p = t - part_base[c];
        PartitionMerge& pm = parts[t];
        // Sized for all the partition's symbols in every chunk: no regrowing.
        std::size_t n_numbers = 0, n_texts = 0;
        for (std::size_t k = 0; k < n_chunks; ++k) {
          const ChunkMerge& m = merges[c][k];
          for (std::uint32_t o = m.starts[p]; o < m.starts[p + 1]; ++o) {
            n_numbers += m.text[o] == kNull;
            n_texts += m.text[o] != kNull;
          }
        }
        NumberMap numbers(n_numbers);
        TextMap texts(n_texts);
        pm.texts.reserve(n_numbers + n_texts);
        pm.owners.reserve(n_numbers + n_texts);
        for (std::size_t k = 0; k < n_chunks; ++k) {
          ChunkMerge& m = merges[c][k];
          const ChunkColumn& col = column(c, k);
          std::size_t n_new = 0;
          const std::uint32_t end = m.starts[p + 1];
          for (std::uint32_t o = m.starts[p]; o < end; ++o) {
            if (o + kPrefetchAhead < end) {
              // The map slot and the number of a symbol a few steps ahead.
              const std::uint32_t a = o + kPrefetchAhead;
              if (m.text[a] == kNull) {
                numbers.prefetch(m.hashes[a]);
                col.prefetch_number(m.order[a]);
              } else {
                texts.prefetch(m.hashes[a]);
              }
            }
            const std::uint32_t i = m.order[o];
            const std::uint64_t h = m.hashes[o];
            const bool is_number = m.text[o] == kNull;
            const SymbolText text = is_number ? SymbolText{nullptr, 0, 0} : col.texts[m.text[o]];
            std::size_t slot = 0;
            std::uint32_t found = is_number ? numbers.find(number_key(col.number(i)), h, slot)
                                            : texts.find(text.data, text.size, h, pm.texts.data(), slot);
            if (found == kNull) {
              found = static_cast<std::uint32_t>(pm.texts.size());
              pm.texts.push_back(text);
              pm.owners.push_back((std::uint64_t{k} << 32) | i);
              if (is_number) {
                numbers.insert(slot, number_key(col.number(i)), found);
              } else {
                texts.insert(slot, h, found, pm.texts.data());
              }
              if (k != 0) {  // the first chunk's are counted already
                m.is_new[i] = 1;
                ++n_new;
              }
            }
            m.slot[o] = found;
          }
          if (n_new != 0) m.n_new.fetch_add(n_new, std::memory_order_relaxed);
        }
        std::vector<SymbolText>().swap(pm.texts);
      },
      cpu);

  // 3. Symbol indexes: first occurrences numbered in (chunk, local symbol) order, their values
  //    written in place into the column's arrays.
  for (std::size_t c = 0; c < n_cols; ++c) {
    plans[c].new_base.assign(n_chunks + 1, 0);
    for (std::size_t k = 0; k < n_chunks; ++k) {
      const std::size_t next = plans[c].new_base[k] + merges[c][k].n_new.load();
      if (next > 0xFFFFFFFEULL) throw Error("too many distinct values in one field");
      plans[c].new_base[k + 1] = static_cast<std::uint32_t>(next);
    }
  }
  parallel_for(
      n_cols,
      [&](std::size_t c) {
        if (!merged[c].allocated) allocate_merged(c, plans[c].new_base.back());
      },
      cpu);
  parallel_for(
      n_cols * n_chunks,
      [&](std::size_t t) {
        const std::size_t c = t / n_chunks, k = t % n_chunks;
        const ChunkColumn& col = column(c, k);
        ChunkMerge& m = merges[c][k];
        MergedSymbols& out = merged[c];
        const std::uint8_t* is_new = m.is_new.data();
        std::uint32_t* remap = m.remap;
        std::uint32_t next = plans[c].new_base[k];
        const std::size_t n = col.size();
        if (plans[c].alone[k] || k == 0) {
          // All new, in order (a chunk alone, or the first): the symbols are copied as they are.
          if (plans[c].ints) {
            std::copy(col.ints.begin(), col.ints.end(), out.ints.begin() + next);
          } else {
            for (std::size_t i = 0; i < n; ++i) out.numbers[next + i] = col.number(i);
            for (const SymbolText& st : col.texts) out.texts[k].push_back(SymbolText{st.data, st.size, next + st.symbol});
          }
          return;
        }
        if (plans[c].ints) {
          std::int32_t* ints = out.ints.data();
          for (std::size_t i = 0; i < n; ++i) {
            if (!is_new[i]) continue;
            const std::int32_t v = col.ints[i];  // before remap[i], which may take its place
            remap[i] = next;
            ints[next++] = v;
          }
        } else {
          double* numbers = out.numbers.data();
          std::size_t j = 0;  // the next of the chunk's texts
          for (std::size_t i = 0; i < n; ++i) {
            const bool has_text = j < col.texts.size() && col.texts[j].symbol == i;
            if (is_new[i]) {
              const double v = col.number(i);  // before remap[i], which may take its place
              remap[i] = next;
              numbers[next] = v;
              if (has_text) out.texts[k].push_back(SymbolText{col.texts[j].data, col.texts[j].size, next});
              ++next;
            }
            j += has_text;
          }
        }
      },
      cpu);

  // 4. Where a symbol occurs again, its index comes from its first occurrence: published by the
  //    partitions, carried along each key slice. Meanwhile each column's symbol table is made.
  parallel_for(
      n_cols + parts.size() + slices.size(),
      [&](std::size_t t) {
        if (t < n_cols) {
          MergedSymbols& m = merged[t];
          std::vector<const std::vector<SymbolText>*> texts;
          for (const auto& list : m.texts) texts.push_back(&list);
          table.columns[t].symbols = plans[t].ints ? SymbolTable::of_ints(std::move(m.ints))
                                                   : make_symbols(std::move(m.numbers), texts);
          m.texts.clear();
          return;
        }
        t -= n_cols;
        if (t >= parts.size()) {
          const KeySlice& ks = slices[t - parts.size()];
          std::vector<std::uint32_t> index(static_cast<std::size_t>(ks.b - ks.a));
          walk_keys(chunks, ks.c, plans[ks.c], ks.a, ks.b, [&](std::size_t k, std::size_t x, std::uint32_t i) {
            ChunkMerge& m = merges[ks.c][k];
            if (k == 0) {
              index[x] = i;
            } else if (m.is_new[i]) {
              index[x] = m.remap[i];
            } else {
              m.remap[i] = index[x];
            }
          });
          return;
        }
        const std::size_t c = part_column(t);
        PartitionMerge& pm = parts[t];
        pm.global.resize(pm.owners.size());
        for (std::size_t j = 0; j < pm.owners.size(); ++j) {
          const std::size_t owner = pm.owners[j] >> 32;
          const auto i = static_cast<std::uint32_t>(pm.owners[j]);
          pm.global[j] = owner == 0 ? i : merges[c][owner].remap[i];
        }
      },
      cpu);

  // 5. The symbols that merge by hash take their index from their partition; each column's
  //    index is allocated for its known width.
  parallel_for(
      n_cols + n_cols * n_chunks,
      [&](std::size_t t) {
        if (t < n_cols) {
          std::size_t nulls = 0;
          for (std::size_t k = 0; k < n_chunks; ++k) nulls += column(t, k).nulls;
          table.columns[t].index = PackedIndex::for_rows(n_rows, table.columns[t].symbols.size(), nulls);
          return;
        }
        t -= n_cols;
        const std::size_t c = t / n_chunks, k = t % n_chunks;
        if (k == 0) return;
        ChunkMerge& m = merges[c][k];
        const std::size_t parts_mask = (std::size_t{1} << plans[c].part_bits) - 1;
        const PartitionMerge* pm = &parts[part_base[c]];
        for (std::size_t o = 0; o < m.order.size(); ++o) {
          const std::uint32_t i = m.order[o];
          if (!m.is_new[i]) m.remap[i] = pm[m.hashes[o] & parts_mask].global[m.slot[o]];
        }
      },
      cpu);

  // 6. Each chunk's rows packed through its remap, in ranges of rows.
  struct RowRange {
    std::size_t c, k, begin, end;
  };
  std::vector<RowRange> ranges;
  for (std::size_t c = 0; c < n_cols; ++c)
    for (std::size_t k = 0; k < n_chunks; ++k)
      for (std::size_t b = 0; b < column(c, k).rows.size(); b += kPackRows)
        ranges.push_back(RowRange{c, k, b, std::min(column(c, k).rows.size(), b + kPackRows)});
  parallel_for(
      ranges.size(),
      [&](std::size_t t) {
        const RowRange& r = ranges[t];
        // A chunk alone, and the first, keep their symbols' order: their indexes only move up by
        // their first one's.
        const bool in_order = plans[r.c].alone[r.k] || r.k == 0;
        table.columns[r.c].index.write_rows(row_offsets[r.k] + r.begin, r.end - r.begin,
                                            column(r.c, r.k).rows.data() + r.begin,
                                            in_order ? nullptr : merges[r.c][r.k].remap, plans[r.c].new_base[r.k]);
      },
      cpu);
}

}  // namespace

LoadedTable read_csv(const char* data, std::size_t size, const std::string& table_name, CpuAccount* cpu) {
  CpuScope scope(cpu);
  std::size_t start = 0;
  if (size >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0) start = 3;
  const Header header = read_header(data, size, start);
  const std::size_t n_cols = header.names.size();

  // Chunks: one per thread, none smaller than kMinChunkBytes. More chunks would even out
  // uneven threads, but every chunk repeats the symbols of high-cardinality columns, which it
  // builds and the merge folds together again: measured, two chunks per thread cost more than
  // they balance.
  const std::size_t body_bytes = size - header.body;
  const std::size_t n_threads = threads();
  std::size_t n_chunks = n_threads <= 1 ? 1 : std::min<std::size_t>(n_threads, body_bytes / kMinChunkBytes);
  n_chunks = std::max<std::size_t>(n_chunks, 1);
  const std::vector<std::size_t> starts = chunk_starts(data, size, header.body, n_chunks, cpu);

  // Rows to reserve per byte, from the lines of the first 64 KiB.
  const std::size_t sample = std::min<std::size_t>(body_bytes, 1 << 16);
  const auto sample_lines =
      static_cast<std::size_t>(std::count(data + header.body, data + header.body + sample, '\n')) + 1;
  const double rows_per_byte = static_cast<double>(sample_lines) / static_cast<double>(std::max<std::size_t>(sample, 1));

  std::vector<ParsedChunk> chunks(starts.size());
  auto parse_chunk = [&](ParsedChunk& ch) {
    ch.parser = std::make_unique<ChunkParser>(data, size, header.sep, n_cols);
    const auto expected = static_cast<std::size_t>(static_cast<double>(ch.end - ch.begin) * rows_per_byte * 1.1) + 16;
    ch.stop = ch.parser->parse(ch.begin, ch.end, expected);
  };
  for (std::size_t k = 0; k < starts.size(); ++k) {
    chunks[k].begin = starts[k];
    chunks[k].end = k + 1 < starts.size() ? starts[k + 1] : size;
  }
  parallel_for(chunks.size(), [&](std::size_t k) { parse_chunk(chunks[k]); }, cpu);

  // Check the guesses in order: chunk k started at a record boundary when chunk k-1 ended there.
  // After a wrong guess the rest of the data is parsed again as one chunk.
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const ParseError& err = chunks[k].parser->error();
    if (err.offset != kNoError) throw_parse_error(data, size, err, n_cols);
    if (chunks[k].stop != chunks[k].end) {
      chunks.resize(k + 2);
      chunks[k + 1] = ParsedChunk{};
      chunks[k + 1].begin = chunks[k].stop;
      chunks[k + 1].end = size;
      parse_chunk(chunks[k + 1]);
      chunks[k].end = chunks[k].stop;
    }
  }
  chunks.erase(std::remove_if(chunks.begin(), chunks.end(), [](const ParsedChunk& ch) { return ch.begin >= ch.end && ch.parser->rows() == 0; }),
               chunks.end());
  if (chunks.empty()) {
    chunks.emplace_back();
    chunks.back().parser = std::make_unique<ChunkParser>(data, size, header.sep, n_cols);
  }

  const std::size_t n_chunks_parsed = chunks.size();
  std::vector<std::size_t> row_offsets(n_chunks_parsed + 1, 0);
  for (std::size_t k = 0; k < n_chunks_parsed; ++k) row_offsets[k + 1] = row_offsets[k] + chunks[k].parser->rows();
  const std::size_t n_rows = row_offsets.back();

  LoadedTable table;
  table.name = table_name;
  table.rows = n_rows;
  table.columns.resize(n_cols);
  for (std::size_t c = 0; c < n_cols; ++c) table.columns[c].name = header.names[c];

  if (n_chunks_parsed == 1) {
    // One chunk: its local symbols are the column's symbols.
    // One chunk: its local symbols are the column's symbols, its rows' indexes the final ones.
    std::vector<ChunkColumn>& cols = chunks[0].parser->columns();
    parallel_for(
        n_cols,
        [&](std::size_t c) {
          ChunkColumn& col = cols[c];
          // Copied to arrays of the exact size (the chunk's were reserved for every row).
          table.columns[c].symbols = col.all_ints && col.texts.empty()
                                         ? SymbolTable::of_ints(IntArray(col.ints.begin(), col.ints.end()))
                                         : make_symbols(col.number_array(), {&col.texts});
          std::vector<std::int32_t>().swap(col.ints);
          std::vector<double>().swap(col.numbers);
          table.columns[c].index = PackedIndex::for_rows(n_rows, table.columns[c].symbols.size(), col.nulls);
        },
        cpu);
    parallel_for(
        n_cols * ((n_rows + kPackRows - 1) / kPackRows),
        [&](std::size_t t) {
          const std::size_t c = t % n_cols, b = t / n_cols * kPackRows;
          table.columns[c].index.write_rows(b, std::min(n_rows, b + kPackRows) - b, cols[c].rows.data() + b);
        },
        cpu);
    return table;
  }

  merge_chunks(chunks, row_offsets, table, cpu);
  return table;
}

}  // namespace assoc
