#include "assoc/symbol_table.hpp"

#include <cmath>
#include <cstring>

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
  if (hashing_) {
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
  for (std::uint32_t i = 0; i < table_.size_; ++i) {
    std::size_t s = hash_of(table_.value(i)) & mask_;
    while (slots_[s] != 0) s = (s + 1) & mask_;
    slots_[s] = i + 1;
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

std::uint32_t SymbolTableBuilder::intern(const DualView& v) {
  if (!v.has_number() && !v.has_text) throw Error("a NULL value cannot be a symbol");
  if (!hashing_) throw Error("internal: intern after append on one symbol table");
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
