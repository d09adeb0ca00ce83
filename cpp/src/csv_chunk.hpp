#pragma once
// One chunk of a CSV body parsed on its own thread: per column, the chunk's local symbols in
// first-occurrence order (numbers of a narrow range by direct table, others by hash) and each
// row's local symbol index.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "assoc/number_text.hpp"
#include "assoc/symbol_table.hpp"
#include "csv_tokenizer.hpp"
#include "dense_numbers.hpp"
#include "open_hash_maps.hpp"

namespace assoc::detail {

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
  // Each row's local symbol index, once one differs from its row number: while every row so far
  // is its own new symbol in order (an id column), `rows` stays empty and `implicit_rows` counts.
  std::vector<std::uint32_t> rows;
  bool rows_implicit = true;
  std::size_t implicit_rows = 0;
  std::size_t nulls = 0;
  DenseNumbers dense;
  // The last `unslotted` symbols are integers (scale 0) whose keys rose strictly, each above
  // every key in `dense`: new by that alone, they are not yet written into its slots (a long id
  // column never needs them). slot_pending() writes them before `dense` is used otherwise.
  std::size_t unslotted = 0;
  NumberMap number_map;
  std::size_t hashed_numbers = 0;  // numbers in number_map
  // The smallest and the largest number of any symbol so far (+inf and -inf: none).
  double number_bottom = std::numeric_limits<double>::infinity();
  double number_top = -std::numeric_limits<double>::infinity();
  // Once the column has left `dense`: the numbers of symbols from this index on rose strictly,
  // each above every number before it (running totals, timestamps). New by that alone, they are
  // not yet in number_map (random probes of a large map are what hashing costs); hash_pending()
  // puts them there before number_map is asked. kNoneUnhashed: none.
  static constexpr std::size_t kNoneUnhashed = static_cast<std::size_t>(-1);
  std::size_t unhashed_from = kNoneUnhashed;
  TextMap text_map;                // the pure texts, by their index in `texts`
  std::size_t text_symbols = 0;    // pure texts

  void push_row(std::uint32_t index) {
    if (rows_implicit) {
      if (index == implicit_rows) {
        ++implicit_rows;
        return;
      }
      store_rows();
    }
    rows.push_back(index);
  }
  // The rows held implicitly written out.
  [[gnu::noinline]] void store_rows();
  std::size_t row_count() const { return rows_implicit ? implicit_rows : rows.size(); }

  // The highest key of the direct table, counting the unslotted symbols.
  std::int64_t max_key() const {
    return unslotted != 0 ? static_cast<std::int64_t>(number(size() - 1)) : dense.max_key();
  }
  // Writes the unslotted symbols into the direct table (or, when it would spread too thin, moves
  // it into the NumberMap and puts them there): as if each had been interned in turn.
  void slot_pending();
  // Moves the numbers from direct addressing into the NumberMap.
  void leave_dense();
  // Puts the numbers that rose (unhashed_from on) into the NumberMap.
  void hash_pending();

  std::size_t size() const { return all_ints ? ints.size() : numbers.size(); }
  double number(std::size_t i) const { return all_ints ? ints[i] : numbers[i]; }
  [[gnu::always_inline]] void prefetch_number(std::size_t i) const {
    __builtin_prefetch(all_ints ? static_cast<const void*>(ints.data() + i) : static_cast<const void*>(numbers.data() + i));
  }
  bool is_number(std::size_t i) const { return all_ints || numbers[i] == numbers[i]; }
  // Adds a symbol (text null: none); returns its index.
  [[gnu::always_inline]] std::uint32_t add(double number, const char* text, std::uint32_t len) {
    const auto index = static_cast<std::uint32_t>(size());
    number_top = number > number_top ? number : number_top;  // NaN (a text) is neither
    number_bottom = number < number_bottom ? number : number_bottom;
    if (all_ints && is_int32_symbol(number)) {
      ints.push_back(static_cast<std::int32_t>(number));
    } else {
      add_double(number);
    }
    if (text != nullptr) texts.push_back(SymbolText{text, len, index});
    return index;
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

class ChunkParser : public CsvTokenizer {
 public:
  ChunkParser(const char* data, std::size_t size, char sep, std::size_t n_cols,
              CsvQuoting quoting = CsvQuoting::kRfc4180)
      : CsvTokenizer(data, size, sep, quoting), cols_(n_cols) {}

  // Parses the records that start in [begin, end) and returns where the last one ends (past
  // `end` when `begin` or `end` was not a record boundary). Stops at the first error.
  std::size_t parse(std::size_t begin, std::size_t end, std::size_t expected_rows);

  std::vector<ChunkColumn>& columns() { return cols_; }
  std::size_t rows() const { return rows_; }

 private:
  // Interns one block of rows column by column: first every field is read and its table slot
  // prefetched, then the values are looked up in row order, so the cache misses of a block
  // overlap instead of stalling one by one.
  void intern_block(std::size_t n_rows);
  std::uint32_t intern_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch, const NumberText& num);
  // Adds a number as a new symbol of the column (with its text unless canonical).
  std::uint32_t add_number(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch, const NumberText& num);
  [[gnu::always_inline]] inline std::uint32_t intern_text(ChunkColumn& col, const char* p, std::size_t n, bool in_scratch,
                                                          std::uint64_t h);
  struct FieldRef;
  // Interns the block's first rows of a column while each is an integer above every key so far
  // (an id column): new symbols by that alone, left out of the direct table's slots. Returns
  // the first row not taken.
  [[gnu::noinline]] std::size_t intern_rising(ChunkColumn& col, const FieldRef* f, std::size_t n_rows);

  std::vector<ChunkColumn> cols_;
  std::size_t rows_ = 0;
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
  std::uint8_t scaled_[kBlockRows];  // 1: numbers_[r].value is still to be divided by 10^frac
  void finish_number(std::size_t r) {
    if (scaled_[r] != 0) numbers_[r].value /= kPow10[numbers_[r].frac];
    scaled_[r] = 0;
  }
  // What a cell of the block is: NULL, a number, a number with its direct-table key, a text.
  enum : std::uint8_t { kNullCell, kNumberCell, kKeyedCell, kTextCell };
  std::uint64_t hashes_[kBlockRows];
  std::int64_t keys_[kBlockRows];
  std::uint8_t kinds_[kBlockRows];
};

// A chunk of the body: the bytes it was given, where its parse stopped, and what it read.
struct ParsedChunk {
  std::size_t begin = 0, end = 0, stop = 0;
  std::unique_ptr<ChunkParser> parser;
};

}  // namespace assoc::detail
