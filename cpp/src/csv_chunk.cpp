// Parsing one CSV chunk: records are read a block of rows at a time, then interned column by
// column with the lookups of a block overlapped.
#include "csv_chunk.hpp"

#include <bit>
#include <cmath>

#include "assoc/hash.hpp"
#include "assoc/utf8.hpp"

namespace assoc::detail {
namespace {

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;

// The bytes of `w` (first in memory lowest) that equal `c`: 0x80 in each, exactly.
inline std::uint64_t bytes_equal(std::uint64_t w, char c) {
  const std::uint64_t x = w ^ (kOnes * static_cast<unsigned char>(c));
  return ~(((x & (0x7F * kOnes)) + 0x7F * kOnes) | x | 0x7F * kOnes);
}

// The value of the n digits (1..8) in the low n bytes of `w`, or false when one of them is not
// a digit. Eight digits are combined with three multiplications (as simdjson does).
inline bool digits_value(std::uint64_t w, std::size_t n, std::uint64_t& value) {
  const std::uint64_t keep = n == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * n)) - 1;
  w = (w & keep) | ('0' * kOnes & ~keep);
  // Every byte 0x30..0x39: high nibble 3, and adding 6 keeps it 3 (no byte carries).
  if ((w & 0xF0 * kOnes) != '0' * kOnes || ((w + 6 * kOnes) & 0xF0 * kOnes) != '0' * kOnes) return false;
  std::uint64_t t = (w - '0' * kOnes) << (8 * (8 - n));  // leading zero digits
  t = t * 10 + (t >> 8);
  t = (((t & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
       (((t >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
  value = t;
  return true;
}

// read_number for a field of at most eight digits (one of them may be a decimal point, after
// an optional minus) whose bytes can be read eight at a time (`wide`: 16 bytes readable from p):
// the same result, without a branch per digit. Anything else goes to read_number. A decimal's
// value is left unscaled (`scaled` set: divide it by 10^frac), as most of them are found in a
// direct table by their mantissa and never need it.
inline bool read_field_number(const char* p, std::size_t n, bool wide, NumberText& out, std::uint8_t& scaled) {
  scaled = 0;
  const char c0 = p[0];
  if (!(is_digit(c0) || c0 == '-' || c0 == '.' || c0 == '+')) return false;
  const bool neg = c0 == '-';
  const std::size_t digits = n - (neg ? 1 : 0);
  if constexpr (std::endian::native == std::endian::little) {
    if (wide && digits >= 1 && digits <= 8 && c0 != '+' && c0 != '.') {
      const char* q = p + (neg ? 1 : 0);
      const std::uint64_t w = load64(q);
      const std::uint64_t keep = digits == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * digits)) - 1;
      const std::uint64_t dots = bytes_equal(w, '.') & keep;
      std::uint64_t m = 0;
      if (dots == 0) {
        if (digits_value(w, digits, m)) {
          const double x = static_cast<double>(m);
          out.value = neg ? -x : x;
          out.canonical = !(digits > 1 && q[0] == '0') && !(neg && m == 0);
          out.fixed = true;
          out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
          out.frac = 0;
          return true;
        }
      } else {
        const auto dot = static_cast<std::size_t>(std::countr_zero(dots)) >> 3;
        const std::size_t frac = digits - dot - 1;
        // The digits after the point moved down over it: digits - 1 of them in all.
        const std::uint64_t below = (std::uint64_t{1} << (8 * dot)) - 1;
        const std::uint64_t joined = (w & below) | ((w >> 8) & ~below);
        if (dot > 0 && frac > 0 && digits_value(joined, digits - 1, m)) {
          const bool lead_zero = dot > 1 && q[0] == '0';
          if (q[digits - 1] == '0' || lead_zero || m == 0) {
            out.canonical = false;
          } else if (q[0] != '0' || q[dot + 1] != '0') {
            out.canonical = true;
          } else {
            return read_number(p, n, out);  // 0.0…: the shortest text may be scientific
          }
          const auto x = static_cast<double>(m);
          out.value = neg ? -x : x;  // over 10^frac, which (-a)/b = -(a/b) allows to defer
          scaled = 1;
          out.fixed = true;
          out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
          out.frac = static_cast<unsigned>(frac);
          return true;
        }
      }
    }
  }
  return read_number(p, n, out);
}

}  // namespace

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
  if (const std::size_t nul = find_nul(data_, begin, end); nul != kNoError) {
    fail(nul, CsvErrorKind::kNulByte);
    return begin;
  }
  std::size_t block_begin = pos;
  // The block's bytes are checked as UTF-8 only when a field of it had a byte >= 0x80 or quotes.
  auto utf8_ok = [&] {
    if (high_bits_ == 0) return true;
    const std::size_t bad = find_invalid_utf8(data_ + block_begin, pos - block_begin);
    if (bad == pos - block_begin) return true;
    fail(block_begin + bad, CsvErrorKind::kInvalidUtf8);
    return false;
  };
  while (pos < end) {
    std::size_t r = 0;
    block_scratch_.clear();
    block_begin = pos;
    restart_high_bits();
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
          fail(record, CsvErrorKind::kTooManyFields, n_cols);
          utf8_ok();
          return pos;
        }
        if (len > 0xFFFFFFFFULL) {
          fail(record, CsvErrorKind::kFieldTooLong);
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
        fail(record, CsvErrorKind::kTooFewFields, col);
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
  for (std::size_t c = 0; c < cols_.size(); ++c) {
    ChunkColumn& col = cols_[c];
    FieldRef* f = &fields_[c * kBlockRows];
    // Keys of the direct table, at its scale as the block starts (valid while it stays).
    const bool keys_known = col.dense.active() && col.dense.has_scale();
    const unsigned key_scale = col.dense.scale();
    const char* const data_end = data_ + size_;
    // The key whose slot was prefetched last; while a column's keys rise above its table (ids)
    // no slot is read, so none is prefetched.
    std::int64_t last_line = col.unslotted != 0 ? INT64_MAX : INT64_MIN;
    const double top_before = col.number_top;
    for (std::size_t r = 0; r < n_rows; ++r) {
      if (f[r].in_scratch) f[r].p = block_scratch_.data() + f[r].scratch_at;
      if (f[r].len == 0) {
        kinds_[r] = kNullCell;
      } else if (read_field_number(f[r].p, f[r].len, !f[r].in_scratch && data_end - f[r].p >= 16, numbers_[r],
                                   scaled_[r])) {
        kinds_[r] = kNumberCell;
        if (col.dense.active()) {
          if (keys_known && numbers_[r].fixed && col.dense.fixed_key(numbers_[r], keys_[r])) {
            kinds_[r] = kKeyedCell;
            // One prefetch a cache line of slots: rising keys (ids, dates) share lines.
            if ((keys_[r] >> 4) != (last_line >> 4) && last_line != INT64_MAX) {
              col.dense.prefetch(keys_[r]);
              last_line = keys_[r];
            }
          }
        } else {
          finish_number(r);
          hashes_[r] = mix64(number_key(numbers_[r].value));
          // A number above every one before the block may be one that rises: no probe then.
          if (numbers_[r].value <= top_before) col.number_map.prefetch(hashes_[r]);
        }
      } else {
        kinds_[r] = kTextCell;
        hashes_[r] = hash_text(f[r].p, f[r].len);
        col.text_map.prefetch(hashes_[r]);
      }
    }
    std::size_t r = 0;
    if (keys_known && key_scale == 0 && col.all_ints && col.dense.active() && !col.dense.empty())
      r = intern_rising(col, f, n_rows);
    for (; r < n_rows; ++r) {
      std::uint32_t index = kNull;
      col.nulls += kinds_[r] == kNullCell;
      if (col.unslotted != 0) col.slot_pending();
      if (kinds_[r] == kKeyedCell && col.dense.active() && col.dense.scale() == key_scale) {
        std::uint32_t* slot = col.dense.slot(keys_[r], col.size());
        if (slot != nullptr && *slot != 0) {
          index = *slot - 1;
        } else if (slot != nullptr) {
          finish_number(r);
          index = add_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
          *slot = index + 1;
        } else {
          col.leave_dense();
          finish_number(r);
          index = intern_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
        }
      } else if (kinds_[r] == kNumberCell || kinds_[r] == kKeyedCell) {
        finish_number(r);
        index = intern_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]);
      } else if (kinds_[r] == kTextCell) {
        index = intern_text(col, f[r].p, f[r].len, f[r].in_scratch, hashes_[r]);
      }
      col.push_row(index);
    }
  }
}

std::size_t ChunkParser::intern_rising(ChunkColumn& col, const FieldRef* f, std::size_t n_rows) {
  std::int64_t top = col.max_key();
  std::size_t r = 0;
  const std::size_t first = col.unslotted;
  for (; r < n_rows && kinds_[r] == kKeyedCell && keys_[r] > top && keys_[r] <= INT32_MAX &&
              keys_[r] >= INT32_MIN;
       ++r) {
    top = keys_[r];
    // At scale 0 the key is the integer itself; -0 ("-0", "-0.0") is left to add_number.
    if (numbers_[r].canonical) {
      col.push_row(static_cast<std::uint32_t>(col.ints.size()));
      col.ints.push_back(static_cast<std::int32_t>(top));
    } else {
      finish_number(r);  // "12.0" is read as 120 over 10
      col.push_row(add_number(col, f[r].p, f[r].len, f[r].in_scratch, numbers_[r]));
      if (!col.all_ints) {
        ++r;
        break;
      }
    }
  }
  col.unslotted = first + r;
  return r;
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
        col.leave_dense();
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
      col.leave_dense();
    }
  }
  if (!col.dense.active() && num.value > col.number_top) {  // above every number: new
    if (col.unhashed_from == ChunkColumn::kNoneUnhashed) col.unhashed_from = col.size();
    return add();
  }
  col.hash_pending();
  const std::uint64_t key = number_key(num.value);
  std::size_t slot = 0;
  const std::uint32_t found = col.number_map.find(key, mix64(key), slot);
  if (found != kNull) return found;
  const std::uint32_t index = add();
  col.number_map.insert(slot, key, index);
  ++col.hashed_numbers;
  return index;
}

void ChunkColumn::hash_pending() {
  if (unhashed_from == kNoneUnhashed) return;
  const std::size_t n = size();
  for (std::size_t i = unhashed_from; i < n; ++i) {
    if (!is_number(i)) continue;  // a text added among them
    const std::uint64_t key = number_key(number(i));
    std::size_t slot = 0;
    number_map.find(key, mix64(key), slot);
    number_map.insert(slot, key, static_cast<std::uint32_t>(i));
    ++hashed_numbers;
  }
  unhashed_from = kNoneUnhashed;
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

void ChunkColumn::leave_dense() {
  slot_pending();
  dense.deactivate([&](std::uint32_t index) {
    const std::uint64_t key = number_key(number(index));
    std::size_t slot = 0;
    number_map.find(key, mix64(key), slot);
    number_map.insert(slot, key, index);
    ++hashed_numbers;
  });
}

void ChunkColumn::slot_pending() {
  if (unslotted == 0) return;
  const std::size_t n = size();
  std::size_t i = n - unslotted;
  unslotted = 0;
  for (; i < n && dense.active(); ++i) {
    std::uint32_t* slot = dense.slot(static_cast<std::int64_t>(number(i)), i);
    if (slot == nullptr) {
      leave_dense();
      break;
    }
    *slot = static_cast<std::uint32_t>(i) + 1;
  }
  for (; i < n; ++i) {  // after leaving the table: hashed, as intern_number would
    const std::uint64_t key = number_key(number(i));
    std::size_t slot = 0;
    number_map.find(key, mix64(key), slot);
    number_map.insert(slot, key, static_cast<std::uint32_t>(i));
    ++hashed_numbers;
  }
}

void ChunkColumn::store_rows() {
  rows.resize(implicit_rows);
  for (std::size_t i = 0; i < implicit_rows; ++i) rows[i] = static_cast<std::uint32_t>(i);
  rows_implicit = false;
}

}  // namespace assoc::detail
