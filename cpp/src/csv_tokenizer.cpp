// The CSV tokenizer's cold parts: field names, error messages, the header and chunk starts.
#include "csv_tokenizer.hpp"

#include <algorithm>
#include <cstring>

#include "assoc/error.hpp"
#include "assoc/utf8.hpp"

namespace assoc::detail {

bool CsvTokenizer::standard_quoted(std::size_t& pos, const char*& field, std::size_t& len, bool& in_scratch) {
  const char* d = data_;
  std::size_t open = pos;
  while (open < size_ && is_blank(d[open])) ++open;
  if (open == size_ || (d[open] != '"' && d[open] != '\'')) return false;
  const char q = d[open];
  bool doubled = false;
  for (std::size_t i = open + 1; i < size_ && d[i] != '\n'; ++i) {
    if (d[i] != q) continue;
    if (i + 1 < size_ && d[i + 1] == q) {
      doubled = true;
      ++i;
      continue;
    }
    std::size_t e = i + 1;
    while (e < size_ && is_blank(d[e])) ++e;
    const bool crlf = e < size_ && d[e] == '\r' && (e + 1 == size_ || d[e + 1] == '\n');
    if (e < size_ && d[e] != sep_ && d[e] != '\n' && !crlf) continue;  // a quote inside the value
    high_bits_ |= 0x80;
    field = d + open + 1;
    len = i - open - 1;
    pos = crlf ? e + 1 : e;
    if (doubled) {
      scratch_.clear();
      for (std::size_t k = 0; k < len; ++k) {
        scratch_.push_back(field[k]);
        if (field[k] == q) ++k;  // the second quote of a pair
      }
      field = scratch_.data();
      len = scratch_.size();
      in_scratch = true;
    }
    return true;
  }
  return false;
}

bool CsvTokenizer::parse_names(std::size_t& pos, std::vector<std::string>& names) {
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

[[noreturn]] void throw_csv_error(const char* d, std::size_t size, const CsvParseError& e, std::size_t n_cols) {
  const std::size_t at = std::min(e.offset, size);
  const auto line = 1 + static_cast<std::size_t>(std::count(d, d + at, '\n'));
  std::string msg = "CSV line " + std::to_string(line) + ": ";
  switch (e.kind) {
    case CsvErrorKind::kInvalidUtf8:
      msg += "invalid UTF-8 (the data must be UTF-8 text)";
      break;
    case CsvErrorKind::kUnclosedQuote:
      msg += "a quoted field starts here and its closing quote is missing";
      break;
    case CsvErrorKind::kTextAfterQuote:
      msg += "text after the closing quote of a field (a quote inside a quoted field must be doubled)";
      break;
    case CsvErrorKind::kTooManyFields:
      msg += "more fields than the " + std::to_string(n_cols) + " of the header";
      break;
    case CsvErrorKind::kTooFewFields:
      msg += std::to_string(e.fields) + (e.fields == 1 ? " field" : " fields") + ", the header has " +
             std::to_string(n_cols);
      break;
    case CsvErrorKind::kFieldTooLong:
      msg += "a field longer than 4 GiB";
      break;
    case CsvErrorKind::kNulByte:
      msg += "a NUL byte (text cannot hold one; is this a binary file or UTF-16 text?)";
      break;
    case CsvErrorKind::kNone:
      msg += "malformed data";
      break;
  }
  throw Error(msg);
}

CsvHeader read_csv_header(const char* d, std::size_t size, std::size_t start, CsvQuoting quoting) {
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
    if (c == '"' && quoting != CsvQuoting::kNone) {
      quoted = !quoted;
    } else if (!quoted) {
      if (c == '\n') break;
      counts[0] += c == ',';
      counts[1] += c == ';';
      counts[2] += c == '\t';
    }
  }
  CsvHeader h;
  const char seps[3] = {',', ';', '\t'};
  std::size_t best = 0;
  for (std::size_t i = 1; i < 3; ++i)
    if (counts[i] > counts[best]) best = i;
  h.sep = seps[best];

  CsvTokenizer parser(d, size, h.sep, quoting);
  const std::size_t header_at = pos;
  const bool ok = parser.parse_names(pos, h.names);
  if (const std::size_t nul = find_nul(d, header_at, pos); nul != kNoError) parser.fail(nul, CsvErrorKind::kNulByte);
  if (ok) {
    const std::size_t bad = find_invalid_utf8(d + header_at, pos - header_at);
    if (bad != pos - header_at) parser.fail(header_at + bad, CsvErrorKind::kInvalidUtf8);
  }
  if (parser.error().offset != kNoError) throw_csv_error(d, size, parser.error(), 0);
  const auto line = 1 + static_cast<std::size_t>(std::count(d, d + header_at, '\n'));
  for (std::size_t i = 0; i < h.names.size(); ++i) {
    if (h.names[i].empty())
      throw Error("CSV line " + std::to_string(line) + ": field " + std::to_string(i + 1) +
                  " of the header has no name");
    // A QVD header (XML) holds no control character but tab, LF and CR: a name with one could
    // never be exported.
    for (const char ch : h.names[i]) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
        throw Error("CSV line " + std::to_string(line) + ": field " + std::to_string(i + 1) +
                    " of the header holds the control character " + std::to_string(c) +
                    ", which no field name can hold");
    }
    for (std::size_t j = 0; j < i; ++j)
      if (h.names[i] == h.names[j])
        throw Error("CSV line " + std::to_string(line) + ": the header names the field '" + h.names[i] +
                    "' twice");
  }
  h.body = pos;
  return h;
}

// The quotes in [p, p+n): 64 bytes at a time into a byte counter, which the compiler vectorises.
namespace {

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

}  // namespace

std::vector<std::size_t> chunk_starts(const char* d, std::size_t size, std::size_t body, std::size_t n_chunks,
                                      CpuAccount* cpu, CsvQuoting quoting) {
  std::vector<std::size_t> starts{body};
  if (n_chunks <= 1) return starts;
  std::vector<std::size_t> nominal(n_chunks + 1);
  for (std::size_t k = 0; k <= n_chunks; ++k) nominal[k] = body + (size - body) / n_chunks * k;
  nominal[n_chunks] = size;
  if (quoting != CsvQuoting::kRfc4180) {  // records are lines
    for (std::size_t k = 1; k < n_chunks; ++k) {
      const void* hit = std::memchr(d + nominal[k], '\n', size - nominal[k]);
      const std::size_t pos = hit == nullptr ? size : static_cast<std::size_t>(static_cast<const char*>(hit) - d) + 1;
      if (pos > starts.back() && pos < size) starts.push_back(pos);
    }
    return starts;
  }
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

}  // namespace assoc::detail
