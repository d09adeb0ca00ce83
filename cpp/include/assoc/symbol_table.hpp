#pragma once
// One field's distinct values (symbols), in first-occurrence order.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/dual.hpp"

namespace assoc {

// The number arrays of a symbol table: big ones are filled after they are sized.
using IntArray = std::vector<std::int32_t, CallocAllocator<std::int32_t>>;
using NumberArray = std::vector<double, CallocAllocator<double>>;

// The rule for numbers kept as int32 symbols: integers in int32's range, and not -0 (whose
// sign an int32 would lose).
inline bool is_int32_symbol(double v) {
  return v >= -2147483648.0 && v <= 2147483647.0 && static_cast<double>(static_cast<std::int32_t>(v)) == v &&
         !(v == 0.0 && std::signbit(v));
}

class SymbolTable {
 public:
  std::uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  bool has_number(std::uint32_t i) const {
    return !ints_.empty() || int_range_ || (!numbers_.empty() && numbers_[i] == numbers_[i]);
  }
  // The numeric part; NaN when the symbol has none.
  double number(std::uint32_t i) const {
    if (!ints_.empty()) return ints_[i];
    if (int_range_) return static_cast<double>(std::int64_t{range_first_} + std::int64_t{i});
    return numbers_.empty() ? std::numeric_limits<double>::quiet_NaN() : numbers_[i];
  }
  bool has_text(std::uint32_t i) const {
    return all_text_ || (!text_mask_.empty() && ((text_mask_[i >> 6] >> (i & 63)) & 1U));
  }
  std::string_view text(std::uint32_t i) const {
    return std::string_view(text_.data() + text_offsets_[i], text_offsets_[i + 1] - text_offsets_[i]);
  }
  DualView value(std::uint32_t i) const;

  // Summary flags, computed once when the table is finished.
  bool all_numeric() const { return all_numeric_; }
  bool all_integer() const { return all_integer_; }
  bool any_numeric() const { return any_numeric_; }
  bool all_ascii() const { return all_ascii_; }
  bool any_text() const { return any_text_; }

  // Bytes of the arrays that hold the symbols (their allocated capacity).
  std::size_t byte_size() const;

  // The numbers as held, for loops over many rows: int32 integers, or doubles (NaN where a
  // symbol has none); at most one is non-empty, and both are for an integer range (below).
  const IntArray& int_numbers() const { return ints_; }
  // A table of consecutive integers (symbol i is range_first() + i) holds no array at all.
  bool is_int_range() const { return int_range_; }
  std::int32_t range_first() const { return range_first_; }
  const NumberArray& double_numbers() const { return numbers_; }

  // A table of pure texts that are distinct already (as a file's are), without hashing:
  // `offsets` holds size()+1 offsets into `text`. (Numbers: of_numbers, of_ints.)
  static SymbolTable of_texts(std::vector<char> text, std::vector<std::uint32_t> offsets);

  // Symbols equal in the engine's sense: same number when both are numeric, same text when both are pure text.
  static bool same_symbol(const DualView& a, const DualView& b);

  // A table of numbers without text that the caller knows to be distinct, taken over without a
  // copy (for loaders that deduplicate on their own). `all_finite`: the caller has checked that
  // no number is NaN or infinite, which spares a pass over them.
  static SymbolTable of_numbers(NumberArray&& numbers, bool all_finite = false);
  // The same for int32 integers (kept as int32: no pass through doubles).
  static SymbolTable of_ints(IntArray&& ints);
  // The `n` consecutive integers first, first+1, …, first+n-1 (the last within int32), held as
  // the range alone: what of_ints would hold for them, without the array.
  static SymbolTable of_int_range(std::int32_t first, std::uint32_t n);
  // The text of one symbol, for of_symbols.
  struct IndexedText {
    const char* data;
    std::uint32_t size;
    std::uint32_t symbol;
    std::string_view text() const { return std::string_view(data, size); }
  };
  // The same for symbols of which some have a text: `numbers` (NaN where a symbol has none)
  // taken over, and the texts in ascending symbol order, given as lists one after the other.
  static SymbolTable of_symbols(NumberArray&& numbers, const std::vector<std::span<const IndexedText>>& texts);

 private:
  friend class SymbolTableBuilder;
  // `numbers_finite`: no number is NaN (known to the caller).
  void finish(bool numbers_finite = false);

  std::uint32_t size_ = 0;
  // Numbers: one of ints_ (every symbol an int32 integer) or numbers_ (NaN where a symbol has
  // no number); both empty when no symbol has a number.
  IntArray ints_;
  NumberArray numbers_;
  // Or neither: symbol i is range_first_ + i (of_int_range).
  std::int32_t range_first_ = 0;
  bool int_range_ = false;
  std::vector<std::uint64_t> text_mask_;     // bit i: symbol i has a text; empty when all or none have
  std::vector<std::uint32_t> text_offsets_;  // size()+1 offsets into text_ when any symbol has text
  std::vector<char> text_;  // UTF-8 texts back to back
  bool all_text_ = false;
  bool all_numeric_ = false, all_integer_ = false, any_numeric_ = false, all_ascii_ = false,
       any_text_ = false;
};

// Builds a symbol table, giving each distinct value its index (first occurrence first).
// The hash index lives only here; a finished SymbolTable holds no hash.
class SymbolTableBuilder {
 public:
  SymbolTableBuilder();
  // Starts from an existing table (to merge more values into it).
  explicit SymbolTableBuilder(SymbolTable&& from);
  ~SymbolTableBuilder();
  SymbolTableBuilder(SymbolTableBuilder&&) noexcept;
  SymbolTableBuilder& operator=(SymbolTableBuilder&&) noexcept;

  // Returns the symbol index of v, adding it when new.
  std::uint32_t intern(const DualView& v);
  std::uint32_t intern_number(double v) { return intern(DualView::of_number(v)); }
  std::uint32_t intern_text(std::string_view t) { return intern(DualView::of_text(t)); }
  // Interns each of `n` numbers into `out` (NaN: NULL, kNull; the caller refuses infinities),
  // as intern would, faster while the table holds numbers alone: the numbers are compared as
  // they are stored, and numbers into a table begun empty that are whole multiples of one
  // power of ten (1 to 10^-4) spanning at most max(2n, 65,536) of them are found by their
  // value in an array rather than a hash.
  void intern_numbers(const double* values, std::size_t n, std::uint32_t* out);
  // Interns every symbol of `table` in order into `out` (one per symbol): a table of numbers
  // alone through intern_numbers (merging a field's symbols from another table or file).
  void intern_table(const SymbolTable& table, std::uint32_t* out);
  // Appends v as a new symbol without looking for an equal one (file formats whose symbols are distinct).
  std::uint32_t append(const DualView& v);
  std::uint32_t size() const { return table_.size_; }
  void reserve(std::size_t n_symbols, std::size_t text_bytes = 0);

  SymbolTable finish();

 private:
  // Rebuilds the hash at `capacity` slots (a power of two) from the symbols so far.
  void rehash(std::size_t capacity);
  std::uint64_t hash_of(const DualView& v) const;
  std::uint32_t find_or_add(const DualView& v);
  std::uint32_t push(const DualView& v);
  // Whether every symbol so far is a number without a text (none yet counts).
  bool numbers_alone() const { return table_.text_offsets_.empty() && table_.numbers_.size() == table_.size_; }
  // A new symbol of a table of numbers alone.
  std::uint32_t push_number(double v);
  // intern_numbers into an empty table by an array indexed by value (number * scale, for the
  // least power of ten up to 10^4 that makes the numbers whole); false (nothing done) when
  // some number is not whole so, the keys span too much, or two numbers share a key.
  bool intern_by_value(const double* values, std::size_t n, std::uint32_t* out);
  // Makes the hash again when symbols were added without it.
  void ensure_hash();

  SymbolTable table_;
  std::vector<std::uint32_t> slots_;  // open addressing: symbol index + 1, 0 = empty
  std::size_t mask_ = 0;
  bool hashing_ = true;
  bool hash_stale_ = false;  // symbols were added without the hash (intern_by_value)
};

}  // namespace assoc
