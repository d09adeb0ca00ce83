#pragma once
// The CSV tokenizer: fields of RFC 4180 records (quoted or not, LF or CRLF line ends) read from
// the input in place, and where an error was first found. Also the header row and where the
// body may be cut into chunks that start at record boundaries.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "assoc/csv.hpp"
#include "assoc/hash.hpp"
#include "assoc/thread_pool.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace assoc::detail {

inline constexpr std::size_t kNoError = SIZE_MAX;

enum class CsvErrorKind { kNone, kInvalidUtf8, kUnclosedQuote, kTextAfterQuote, kTooManyFields, kTooFewFields, kFieldTooLong,
                          kNulByte };

struct CsvParseError {
  std::size_t offset = kNoError;
  CsvErrorKind kind = CsvErrorKind::kNone;
  std::size_t fields = 0;
};

// The stops of the 64 bytes at `p` (all readable): bit i set where p[i] is `sep` or LF. `high`
// gets a bit set for each byte >= 0x80. SSE2 (the x86-64 baseline) compares 16 bytes a step;
// elsewhere a portable loop does the same.
inline std::uint64_t stop_mask64(const char* p, char sep, std::uint64_t& high) {
#if defined(__SSE2__)
  const __m128i vsep = _mm_set1_epi8(sep), vlf = _mm_set1_epi8('\n');
  std::uint64_t stops = 0, hi = 0;
  for (int i = 0; i < 4; ++i) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(x, vsep), _mm_cmpeq_epi8(x, vlf));
    stops |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(hit))) << (16 * i);
    hi |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(x))) << (16 * i);
  }
  high = hi;
  return stops;
#else
  std::uint64_t stops = 0, hi = 0;
  for (unsigned i = 0; i < 64; ++i) {
    stops |= static_cast<std::uint64_t>(p[i] == sep || p[i] == '\n') << i;
    hi |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i]) >> 7) << i;
  }
  high = hi;
  return stops;
#endif
}

// Reads fields from the input; the first error found (by offset) is kept.
class CsvTokenizer {
 public:
  CsvTokenizer(const char* data, std::size_t size, char sep, CsvQuoting quoting = CsvQuoting::kRfc4180)
      : data_(data), size_(size), sep_(sep), quoting_(quoting) {}

  // Reads the field at `pos` and moves `pos` to the separator or line end after it (or the
  // end of the data). A field with doubled quotes is unescaped into scratch_.
  bool next_field(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch);
  // Moves past a blank line at `pos`; false when the line is not blank.
  bool skip_blank_line(std::size_t& pos) const;
  // Reads the record at `pos` as field names; returns false (with error() set) when malformed.
  bool parse_names(std::size_t& pos, std::vector<std::string>& names);

  // Where the first separator or LF at or after `pos` is (the end of the data when none is).
  std::size_t next_stop(std::size_t pos);

  const CsvParseError& error() const { return error_; }
  void fail(std::size_t offset, CsvErrorKind kind, std::size_t fields = 0) {
    if (offset < error_.offset) error_ = CsvParseError{offset, kind, fields};
  }

 protected:
  // Standard quoting: reads the field at `pos` when it is quoted (blanks, a quote, text, the
  // same quote, blanks, then the separator or the line end); false leaves it unquoted.
  bool standard_quoted(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch);
  bool is_blank(char c) const { return (c == ' ' || c == '\t') && c != sep_; }
  // Classifies the 64-byte block at offset `b` (fewer bytes at the end of the data).
  void load_stops(std::size_t b);
  // Starts a new span of bytes to check as UTF-8: only the block held may have shown a high byte
  // in it so far.
  void restart_high_bits() { high_bits_ = stops_high_ ? 0x80 : 0; }

  const char* data_;
  std::size_t size_;
  char sep_;
  CsvQuoting quoting_;
  CsvParseError error_;
  std::uint64_t high_bits_ = 0;  // 0x80 once a byte >= 0x80 or a quoted field was seen since the restart
  // The stops of one 64-byte block of the input (offsets from data_), found 64 bytes at a time.
  std::size_t stops_at_ = SIZE_MAX;
  std::uint64_t stops_ = 0;
  bool stops_high_ = false;  // the block holds a byte >= 0x80
  std::string scratch_;
};

inline bool CsvTokenizer::skip_blank_line(std::size_t& pos) const {
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

inline bool CsvTokenizer::next_field(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch) {
  const char* d = data_;
  const std::size_t size = size_;
  in_scratch = false;
  if (quoting_ == CsvQuoting::kStandard) {
    if (pos < size && (d[pos] == '"' || d[pos] == '\'' || is_blank(d[pos])) && standard_quoted(pos, field, len, in_scratch))
      return true;
  } else if (quoting_ == CsvQuoting::kRfc4180 && pos < size && d[pos] == '"') {
    high_bits_ |= 0x80;
    const std::size_t open = pos;
    std::size_t q = pos + 1;
    bool doubled = false;
    std::size_t close;
    for (;;) {
      const void* hit = q < size ? std::memchr(d + q, '"', size - q) : nullptr;
      if (hit == nullptr) {
        fail(open, CsvErrorKind::kUnclosedQuote);
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
        fail(pos, CsvErrorKind::kTextAfterQuote);
        return false;
      }
    }
    return true;
  }
  // Unquoted: up to the separator or LF.
  const std::size_t e = next_stop(pos);
  field = d + pos;
  len = e - pos;
  // CRLF: a CR before the line end (the separator, more often, comes first in the test).
  if ((e == size || d[e] == '\n') && len > 0 && field[len - 1] == '\r') --len;
  pos = e;
  return true;
}

inline void CsvTokenizer::load_stops(std::size_t b) {
  std::uint64_t high = 0;
  if (size_ - b >= 64) {
    stops_ = stop_mask64(data_ + b, sep_, high);
  } else {
    stops_ = 0;
    for (std::size_t i = 0; i < size_ - b; ++i) {
      const char c = data_[b + i];
      stops_ |= static_cast<std::uint64_t>(c == sep_ || c == '\n') << i;
      high |= static_cast<unsigned char>(c) >> 7;
    }
  }
  stops_at_ = b;
  stops_high_ = high != 0;
  if (stops_high_) high_bits_ |= 0x80;
}

inline std::size_t CsvTokenizer::next_stop(std::size_t pos) {
  if (pos >= size_) return size_;
  std::size_t b = pos & ~std::size_t{63};
  if (b != stops_at_) load_stops(b);
  std::uint64_t m = stops_ & (~std::uint64_t{0} << (pos - b));
  while (m == 0) {
    b += 64;
    if (b >= size_) return size_;
    load_stops(b);
    m = stops_;
  }
  return b + static_cast<std::size_t>(std::countr_zero(m));
}

// Where the first NUL byte in [begin, end) is, or kNoError. A NUL can be held by no text (QVD
// files end texts with it), so the reader refuses it wherever it stands.
inline std::size_t find_nul(const char* d, std::size_t begin, std::size_t end) {
  const void* hit = begin < end ? std::memchr(d + begin, 0, end - begin) : nullptr;
  return hit == nullptr ? kNoError : static_cast<std::size_t>(static_cast<const char*>(hit) - d);
}

// Throws the Error that names the line of `e` and what is wrong there.
[[noreturn]] void throw_csv_error(const char* d, std::size_t size, const CsvParseError& e, std::size_t n_cols);

// The header row: the separator it uses, the field names, and where the body starts.
struct CsvHeader {
  char sep = ',';
  std::vector<std::string> names;
  std::size_t body = 0;  // offset of the first record after the header
};

// Reads the header row at `start` (past blank lines); throws Error when it is malformed.
CsvHeader read_csv_header(const char* d, std::size_t size, std::size_t start,
                          CsvQuoting quoting = CsvQuoting::kRfc4180);

// Chunk starts in [body, size): each right after a line end that is outside quotes, judged by
// the parity of the quotes before it (RFC 4180; with other quoting every line end ends a
// record). The parity is exact for RFC 4180 data; the parser checks every guess (a chunk must
// end exactly where the next one starts) and recovers when a quote inside an unquoted field
// made one wrong.
std::vector<std::size_t> chunk_starts(const char* d, std::size_t size, std::size_t body, std::size_t n_chunks,
                                      CpuAccount* cpu, CsvQuoting quoting = CsvQuoting::kRfc4180);

}  // namespace assoc::detail
