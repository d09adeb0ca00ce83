#include "assoc/symbol_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/hash.hpp"

namespace assoc {

DualView SymbolTable::value(std::uint32_t i) const {
  DualView v;
  v.number = number(i);
  if (has_text(i)) {
    v.text = text(i);
    v.has_text = true;
  }
  return v;
}

bool SymbolTable::same_symbol(const DualView& a, const DualView& b) {
  if (a.has_number() || b.has_number()) {
    return a.has_number() && b.has_number() && number_key(a.number) == number_key(b.number);
  }
  return a.text == b.text;
}

std::size_t SymbolTable::byte_size() const {
  return ints_.capacity() * sizeof(std::int32_t) + numbers_.capacity() * sizeof(double) +
         text_mask_.capacity() * sizeof(std::uint64_t) + text_offsets_.capacity() * sizeof(std::uint32_t) +
         text_.capacity();
}

SymbolTable SymbolTable::of_texts(std::vector<char> text, std::vector<std::uint32_t> offsets) {
  if (offsets.empty() || offsets.size() - 1 > 0xFFFFFFFEULL || offsets.front() != 0 || offsets.back() != text.size())
    throw Error("internal: text offsets do not match the texts");
  SymbolTable t;
  t.size_ = static_cast<std::uint32_t>(offsets.size() - 1);
  if (t.size_ > 0) {
    t.text_ = std::move(text);
    t.text_offsets_ = std::move(offsets);
    t.all_text_ = true;
  }
  t.finish();
  return t;
}

void SymbolTable::finish(bool numbers_finite) {
  any_numeric_ = false;
  all_numeric_ = size_ > 0;
  all_integer_ = size_ > 0;
  bool fits_int32 = true;
  if (ints_.empty() && !int_range_) {
    // Every symbol is looked at while a property about integers can still hold; once none
    // can (at once, for a field of fractions), only whether each has a number is left.
    std::uint32_t i = 0;
    for (; i < size_ && (all_integer_ || fits_int32); ++i) {
      const double v = numbers_.empty() ? std::nan("") : numbers_[i];
      if (std::isnan(v)) {
        all_numeric_ = all_integer_ = fits_int32 = false;
        continue;
      }
      any_numeric_ = true;
      if (std::trunc(v) != v) all_integer_ = false;
      if (!is_int32_symbol(v)) fits_int32 = false;
    }
    if (i < size_) {
      std::size_t nans = 0;  // a count without an exit vectorises
      if (!numbers_finite)
        for (std::uint32_t j = numbers_.empty() ? size_ : i; j < size_; ++j) nans += numbers_[j] != numbers_[j];
      if (numbers_.empty() || nans > 0) all_numeric_ = false;
      if (!numbers_.empty() && nans < size_ - i) any_numeric_ = true;
    }
  } else {
    any_numeric_ = size_ > 0;
  }
  any_text_ = all_text_ || !text_mask_.empty();
  unsigned char high_bits = 0;  // an OR over all bytes vectorises; an early exit would not
  for (const char c : text_) high_bits |= static_cast<unsigned char>(c);
  all_ascii_ = high_bits < 0x80;
  // A text-free table of int32 integers keeps 4 bytes a symbol instead of 8.
  if (all_numeric_ && all_integer_ && fits_int32 && !numbers_.empty()) {
    ints_.resize(size_);
    for (std::uint32_t i = 0; i < size_; ++i) ints_[i] = static_cast<std::int32_t>(numbers_[i]);
    NumberArray().swap(numbers_);
  }
  if (!text_mask_.empty()) {
    bool all = true;
    for (std::uint32_t i = 0; i < size_ && all; ++i) all = (text_mask_[i >> 6] >> (i & 63)) & 1U;
    if (all) {
      std::vector<std::uint64_t>().swap(text_mask_);
      all_text_ = true;
    }
  }
  ints_.shrink_to_fit();
  numbers_.shrink_to_fit();
  text_mask_.shrink_to_fit();
  text_offsets_.shrink_to_fit();
  text_.shrink_to_fit();
}

SymbolTable SymbolTable::of_numbers(NumberArray&& numbers, bool all_finite) {
  if (numbers.size() > 0xFFFFFFFEULL) throw Error("too many distinct values in one field");
  SymbolTable t;
  t.size_ = static_cast<std::uint32_t>(numbers.size());
  t.numbers_ = std::move(numbers);
  t.finish(all_finite);
  if (t.size_ > 0 && !t.all_numeric_) throw Error("a NULL value cannot be a symbol");  // a NaN among them
  return t;
}

SymbolTable SymbolTable::of_symbols(NumberArray&& numbers, const std::vector<std::span<const IndexedText>>& texts) {
  std::size_t text_bytes = 0, n_texts = 0;
  std::int64_t last = -1;
  const std::size_t n = numbers.size();
  for (const auto& list : texts) {
    for (const IndexedText& t : list) {
      if (t.symbol >= n || static_cast<std::int64_t>(t.symbol) <= last) throw Error("internal: symbol texts out of order");
      last = t.symbol;
      text_bytes += t.size;
    }
    n_texts += list.size();
  }
  if (n_texts == 0) return of_numbers(std::move(numbers));
  if (n > 0xFFFFFFFEULL) throw Error("too many distinct values in one field");
  if (text_bytes > 0xFFFFFFFFULL) throw Error("the texts of one field exceed 4 GiB");
  SymbolTable t;
  t.size_ = static_cast<std::uint32_t>(n);
  t.text_.reserve(text_bytes);
  t.text_offsets_.resize(n + 1);
  t.text_mask_.assign((n + 63) / 64, 0);
  std::uint32_t offset = 0;
  std::size_t i = 0;
  bool any_number = false;
  // Symbols up to `end` have no text: they need a number.
  auto numbers_up_to = [&](std::size_t end) {
    for (; i < end; ++i) {
      t.text_offsets_[i] = offset;
      if (std::isnan(numbers[i])) throw Error("a NULL value cannot be a symbol");
      any_number = true;
    }
  };
  for (const auto& list : texts) {
    for (const IndexedText& x : list) {
      numbers_up_to(x.symbol);
      t.text_offsets_[i] = offset;
      t.text_.insert(t.text_.end(), x.data, x.data + x.size);
      offset += x.size;
      t.text_mask_[i >> 6] |= 1ULL << (i & 63);
      any_number |= !std::isnan(numbers[i]);
      ++i;
    }
  }
  numbers_up_to(n);
  t.text_offsets_[n] = offset;
  if (any_number) t.numbers_ = std::move(numbers);
  t.finish();
  return t;
}

SymbolTable SymbolTable::of_ints(IntArray&& ints) {
  if (ints.size() > 0xFFFFFFFEULL) throw Error("too many distinct values in one field");
  SymbolTable t;
  t.size_ = static_cast<std::uint32_t>(ints.size());
  t.ints_ = std::move(ints);
  t.finish();
  return t;
}

SymbolTable SymbolTable::of_int_range(std::int32_t first, std::uint32_t n) {
  if (n > 0xFFFFFFFEU || std::int64_t{first} + std::int64_t{n} - 1 > std::numeric_limits<std::int32_t>::max())
    throw Error("internal: an integer range past int32");
  SymbolTable t;
  t.size_ = n;
  t.range_first_ = first;
  t.int_range_ = n > 0;
  t.finish();
  return t;
}

SymbolTableBuilder::SymbolTableBuilder() { slots_.assign(16, 0); mask_ = 15; }

SymbolTableBuilder::SymbolTableBuilder(SymbolTable&& from) : table_(std::move(from)) {
  // Back to the growable representation.
  if (table_.int_range_) {
    table_.numbers_.resize(table_.size_);
    for (std::uint32_t i = 0; i < table_.size_; ++i) table_.numbers_[i] = table_.number(i);
    table_.int_range_ = false;
  }
  if (!table_.ints_.empty()) {
    table_.numbers_.assign(table_.ints_.begin(), table_.ints_.end());
    IntArray().swap(table_.ints_);
  }
  if (table_.all_text_) {
    table_.text_mask_.assign((table_.size_ + 64) / 64, ~0ULL);
    table_.all_text_ = false;
  }
  std::size_t cap = 16;
  while (cap < static_cast<std::size_t>(table_.size_) * 2) cap <<= 1;
  rehash(cap);
}

SymbolTableBuilder::~SymbolTableBuilder() = default;
SymbolTableBuilder::SymbolTableBuilder(SymbolTableBuilder&&) noexcept = default;
SymbolTableBuilder& SymbolTableBuilder::operator=(SymbolTableBuilder&&) noexcept = default;

void SymbolTableBuilder::reserve(std::size_t n_symbols, std::size_t text_bytes) {
  table_.text_.reserve(text_bytes);
  if (hashing_ && !hash_stale_) {
    std::size_t cap = slots_.size();
    while (cap < n_symbols * 2) cap <<= 1;
    if (cap != slots_.size()) rehash(cap);
  }
}

std::uint64_t SymbolTableBuilder::hash_of(const DualView& v) const {
  if (v.has_number()) return mix64(number_key(v.number));
  return hash_text(v.text.data(), v.text.size());
}

void SymbolTableBuilder::rehash(std::size_t capacity) {
  slots_.assign(capacity, 0);
  mask_ = capacity - 1;
  const bool numbers = numbers_alone();
  for (std::uint32_t i = 0; i < table_.size_; ++i) {
    std::size_t s = (numbers ? mix64(number_key(table_.numbers_[i])) : hash_of(table_.value(i))) & mask_;
    while (slots_[s] != 0) s = (s + 1) & mask_;
    slots_[s] = i + 1;
  }
}

void SymbolTableBuilder::ensure_hash() {
  if (!hash_stale_) return;
  std::size_t cap = 16;
  while (cap < static_cast<std::size_t>(table_.size_) * 2) cap <<= 1;
  rehash(cap);
  hash_stale_ = false;
}

std::uint32_t SymbolTableBuilder::push_number(double v) {
  if (table_.size_ == 0xFFFFFFFEU) throw Error("too many distinct values in one field");
  table_.numbers_.push_back(v);
  return table_.size_++;
}

bool SymbolTableBuilder::intern_by_value(const double* values, std::size_t n, std::uint32_t* out) {
  constexpr double kWhole = 4503599627370496.0;  // 2^52: every multiple of a half below is a double
  // The scale: the smallest power of ten up to 10^4 that makes the first numbers whole.
  constexpr double kScales[] = {1, 10, 100, 1000, 10000};
  const auto whole = [](double y) { return std::fabs(y - std::nearbyint(y)) <= 1e-9 * std::max(1.0, std::fabs(y)); };
  double scale = 0;
  for (const double candidate : kScales) {
    bool all = true;
    for (std::size_t i = 0, seen = 0; i < n && seen < 64 && all; ++i) {
      if (values[i] != values[i]) continue;
      all = whole(values[i] * candidate);
      ++seen;
    }
    if (all) {
      scale = candidate;
      break;
    }
  }
  if (scale == 0) return false;
  // Each number's key, round(number * scale): the span of the keys, every number near one.
  double lo = kWhole, hi = -kWhole;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = values[i];
    if (x != x) continue;  // NaN: NULL
    const double y = x * scale;
    if (!(std::fabs(y) < kWhole) || !whole(y)) return false;
    lo = std::min(lo, y);
    hi = std::max(hi, y);
  }
  lo = std::nearbyint(lo);
  hi = std::nearbyint(hi);
  if (lo > hi || hi - lo >= std::max(2.0 * static_cast<double>(n), 65536.0)) return false;
  const auto first = static_cast<std::int64_t>(lo);
  const auto span = static_cast<std::size_t>(hi - lo) + 1;
  // Per key from the lowest: its symbol + 1, 0 while it has none.
  std::vector<std::uint32_t> symbol(span, 0);
  table_.numbers_.reserve(std::min(n, span));  // never grown (nor copied when finished)
  for (std::size_t i = 0; i < n; ++i) {
    const double x = values[i];
    if (x != x) {
      out[i] = kNull;
      continue;
    }
    std::uint32_t& s = symbol[static_cast<std::size_t>(static_cast<std::int64_t>(std::nearbyint(x * scale)) - first)];
    if (s == 0) {
      s = push_number(x) + 1;
    } else if (number_key(table_.numbers_[s - 1]) != number_key(x)) {
      // Two numbers with one key (0.3 and 0.1 + 0.2): the hash finds them apart instead.
      table_.numbers_.clear();
      table_.size_ = 0;
      return false;
    }
    out[i] = s - 1;
  }
  hash_stale_ = true;
  return true;
}

void SymbolTableBuilder::intern_numbers(const double* values, std::size_t n, std::uint32_t* out) {
  if (!hashing_) throw Error("internal: intern after append on one symbol table");
  SymbolTable& t = table_;
  if (!numbers_alone()) {  // symbols with texts: one by one
    for (std::size_t i = 0; i < n; ++i) out[i] = values[i] != values[i] ? kNull : intern_number(values[i]);
    return;
  }
  if (t.size_ == 0 && intern_by_value(values, n, out)) return;
  ensure_hash();
  // Each value's hash is made kAhead values before its turn, and its slot asked for then (a
  // large table's slots miss the cache).
  constexpr std::size_t kAhead = 8;
  std::uint64_t hashes[kAhead];
  const auto hash_at = [&](std::size_t i) { return mix64(number_key(values[i])); };
  for (std::size_t i = 0; i < std::min(n, kAhead); ++i) hashes[i] = hash_at(i);
  // After this many values, a column whose values were nearly all new gets its hash sized for
  // the rest at once, rather than doubled (and every symbol placed again) step by step.
  constexpr std::size_t kSample = 4096;
  const std::uint32_t size_before = t.size_;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t hash = hashes[i % kAhead];
    if (i + kAhead < n) {
      const std::uint64_t ahead = hash_at(i + kAhead);
      hashes[i % kAhead] = ahead;
      __builtin_prefetch(&slots_[ahead & mask_]);
    }
    if (i == kSample && (t.size_ - size_before) * 4 >= kSample * 3) {
      std::size_t cap = slots_.size();
      while (cap < (static_cast<std::size_t>(t.size_) + n - i) * 2) cap <<= 1;
      if (cap != slots_.size()) rehash(cap);
    }
    const double x = values[i];
    if (x != x) {
      out[i] = kNull;
      continue;
    }
    const std::uint64_t key = number_key(x);
    std::size_t s = hash & mask_;
    std::uint32_t found = kNull;
    for (std::uint32_t slot; (slot = slots_[s]) != 0; s = (s + 1) & mask_) {
      if (number_key(t.numbers_[slot - 1]) == key) {
        found = slot - 1;
        break;
      }
    }
    if (found == kNull) {
      found = push_number(x);
      slots_[s] = found + 1;
      if (static_cast<std::size_t>(t.size_) * 2 > slots_.size()) rehash(slots_.size() * 2);
    }
    out[i] = found;
  }
}

std::uint32_t SymbolTableBuilder::append(const DualView& v) {
  hashing_ = false;  // appended symbols are not in the hash: no intern after this
  std::vector<std::uint32_t>().swap(slots_);
  return push(v);
}

std::uint32_t SymbolTableBuilder::push(const DualView& v) {
  if (!v.has_number() && !v.has_text) throw Error("a NULL value cannot be a symbol");
  SymbolTable& t = table_;
  if (t.size_ == 0xFFFFFFFEU) throw Error("too many distinct values in one field");
  const std::uint32_t i = t.size_;
  if (v.has_number()) {
    if (t.numbers_.empty() && i > 0) t.numbers_.assign(i, std::nan(""));
    t.numbers_.push_back(v.number);
  } else if (!t.numbers_.empty()) {
    t.numbers_.push_back(std::nan(""));
  }
  if (v.has_text) {
    if (t.text_offsets_.empty()) {
      t.text_offsets_.assign(i + 1, 0);
      t.text_mask_.assign((i + 64) / 64, 0);
    }
    if (t.text_.size() + v.text.size() > 0xFFFFFFFFULL) throw Error("the texts of one field exceed 4 GiB");
    t.text_.insert(t.text_.end(), v.text.begin(), v.text.end());
    t.text_offsets_.push_back(static_cast<std::uint32_t>(t.text_.size()));
    if (t.text_mask_.size() * 64 <= i) t.text_mask_.push_back(0);
    t.text_mask_[i >> 6] |= 1ULL << (i & 63);
  } else if (!t.text_offsets_.empty()) {
    t.text_offsets_.push_back(static_cast<std::uint32_t>(t.text_.size()));
    if (t.text_mask_.size() * 64 <= i) t.text_mask_.push_back(0);
  }
  t.size_ = i + 1;
  return i;
}

std::uint32_t SymbolTableBuilder::find_or_add(const DualView& v) {
  std::size_t s = hash_of(v) & mask_;
  for (;;) {
    const std::uint32_t slot = slots_[s];
    if (slot == 0) break;
    if (SymbolTable::same_symbol(table_.value(slot - 1), v)) return slot - 1;
    s = (s + 1) & mask_;
  }
  const std::uint32_t i = push(v);
  slots_[s] = i + 1;
  if (static_cast<std::size_t>(table_.size_) * 2 > slots_.size()) rehash(slots_.size() * 2);
  return i;
}

void SymbolTableBuilder::intern_table(const SymbolTable& table, std::uint32_t* out) {
  const std::uint32_t n = table.size();
  if (table.all_numeric() && !table.any_text()) {
    std::vector<double> numbers(n);
    for (std::uint32_t s = 0; s < n; ++s) numbers[s] = table.number(s);
    intern_numbers(numbers.data(), n, out);
    return;
  }
  for (std::uint32_t s = 0; s < n; ++s) out[s] = intern(table.value(s));
}

std::uint32_t SymbolTableBuilder::intern(const DualView& v) {
  if (!v.has_number() && !v.has_text) throw Error("a NULL value cannot be a symbol");
  if (!hashing_) throw Error("internal: intern after append on one symbol table");
  ensure_hash();
  return find_or_add(v);
}

SymbolTable SymbolTableBuilder::finish() {
  SymbolTable out = std::move(table_);
  table_ = SymbolTable();
  std::vector<std::uint32_t>().swap(slots_);
  out.finish();
  return out;
}

}  // namespace assoc
