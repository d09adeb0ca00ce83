// Reading QVD files: a strict XML header reader, symbol tables, and bit-stuffed records
// decoded in parallel blocks. Every length and offset is checked against the bytes present
// before it is used, so no input can make the reader read out of bounds or allocate more
// than the file could describe.
#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {
namespace {

static_assert(std::endian::native == std::endian::little, "QVD numbers and records are little-endian");

[[noreturn]] void fail(const std::string& what) { throw Error("invalid QVD file: " + what); }

// A name or value for an error message: quoted, and cut short when long.
std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 60;
  if (s.size() <= kMax) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kMax)) + "…'";
}

// True when s[0, n) is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(const unsigned char* s, std::size_t n) {
  static constexpr std::uint32_t kMinCodePoint[5] = {0, 0, 0x80, 0x800, 0x10000};
  std::size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {  // ASCII runs 8 bytes at a time: most QVD text is ASCII
      std::uint64_t w;
      std::memcpy(&w, s + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1FU;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0FU;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07U;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3FU);
    }
    if (cp < kMinCodePoint[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---------------------------------------------------------------------------------------
// The XML subset of QVD headers: a prolog (declaration, comments, processing instructions),
// one element tree with optional attributes (read and ignored), text with the five
// predefined entities, character references and CDATA. No DTD, so no entity expansion.

struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  const XmlElement* child(std::string_view n) const {
    for (const auto& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string_view doc) : s_(doc) {}

  // Reads the document; its root element must be named `root`.
  XmlElement read_document(std::string_view root) {
    check_characters();
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_misc();
    if (at_end() || s_[pos_] != '<') error("no root element");
    XmlElement e;
    read_element(e, 0, root);
    skip_misc();
    if (!at_end()) error("content after the root element");
    return e;
  }

 private:
  static constexpr int kMaxDepth = 32;

  [[noreturn]] void error(const std::string& what) const {
    fail("the XML header is malformed at byte " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= s_.size(); }
  bool starts(std::string_view t) const { return s_.substr(pos_, t.size()) == t; }

  // The header must be UTF-8 without the control characters XML 1.0 forbids.
  void check_characters() {
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    for (std::size_t i = 0; i < s_.size(); ++i) {
      if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') {
        pos_ = i;
        error("control character " + std::to_string(p[i]) + " is not allowed in XML");
      }
    }
    if (!valid_utf8(p, s_.size())) error("the header is not valid UTF-8");
  }

  bool skip_space() {
    const std::size_t start = pos_;
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    return pos_ > start;
  }

  // Moves past the next `end`.
  void skip_past(std::string_view end, const char* what) {
    const std::size_t at = s_.find(end, pos_);
    if (at == std::string_view::npos) error(std::string("unterminated ") + what);
    pos_ = at + end.size();
  }

  // Whitespace, comments and processing instructions between elements.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<!")) {
        error("document type declarations are not allowed in a QVD header");
      } else {
        return;
      }
    }
  }

  static bool name_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
  }
  static bool name_char(unsigned char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

  std::string_view read_name() {
    const std::size_t start = pos_;
    if (at_end() || !name_start(static_cast<unsigned char>(s_[pos_]))) error("expected a name");
    while (!at_end() && name_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  void expect(char c) {
    if (at_end() || s_[pos_] != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  // An entity or character reference at '&', decoded into `out`.
  void read_reference(std::string& out) {
    const std::size_t semi = s_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) error("'&' that starts no reference (write &amp;)");
    const std::string_view ref = s_.substr(pos_ + 1, semi - pos_ - 1);
    if (ref == "amp") {
      out += '&';
    } else if (ref == "lt") {
      out += '<';
    } else if (ref == "gt") {
      out += '>';
    } else if (ref == "quot") {
      out += '"';
    } else if (ref == "apos") {
      out += '\'';
    } else if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      std::uint32_t cp = 0;
      const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      const bool allowed = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
      if (digits.empty() || res.ec != std::errc() || res.ptr != digits.data() + digits.size() || !allowed)
        error("bad character reference &" + std::string(ref) + ";");
      append_utf8(out, cp);
    } else {
      error("unknown entity &" + std::string(ref) + ";");
    }
    pos_ = semi + 1;
  }

  // Character data up to the next '<' (or `quote` in an attribute value), with references
  // decoded and line ends normalised to '\n' as XML requires.
  void read_chars(std::string& out, char quote) {
    while (!at_end()) {
      const char c = s_[pos_];
      if (c == '<' || c == quote) return;
      if (c == '&') {
        read_reference(out);
      } else if (c == '\r') {
        out += '\n';
        ++pos_;
        if (!at_end() && s_[pos_] == '\n') ++pos_;
      } else {
        std::size_t end = pos_ + 1;
        while (end < s_.size() && s_[end] != '<' && s_[end] != '&' && s_[end] != '\r' && s_[end] != quote) ++end;
        out.append(s_.data() + pos_, end - pos_);
        pos_ = end;
      }
    }
  }

  void read_element(XmlElement& e, int depth, std::string_view root) {
    if (depth > kMaxDepth) error("elements nested deeper than " + std::to_string(kMaxDepth));
    ++pos_;  // '<'
    e.name = std::string(read_name());
    if (depth == 0 && e.name != root)
      fail("the XML header's root element is <" + e.name + ">, not <" + std::string(root) +
           "> (a damaged file, or not a QVD file)");
    for (;;) {  // attributes: read for well-formedness, not used
      const bool space = skip_space();
      if (at_end()) error("unterminated start tag <" + e.name + ">");
      if (starts("/>")) {
        pos_ += 2;
        return;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      if (!space) error("expected whitespace before an attribute of <" + e.name + ">");
      read_name();
      skip_space();
      expect('=');
      skip_space();
      if (at_end() || (s_[pos_] != '"' && s_[pos_] != '\'')) error("attribute value without quotes");
      const char q = s_[pos_++];
      std::string ignored;
      read_chars(ignored, q);
      if (at_end() || s_[pos_] != q) error("'<' in an attribute value, or an unterminated attribute value");
      ++pos_;
    }
    for (;;) {  // content
      if (at_end()) error("<" + e.name + "> is never closed");
      if (s_[pos_] != '<') {
        read_chars(e.text, '<');
      } else if (starts("</")) {
        pos_ += 2;
        const std::string_view closing = read_name();
        if (closing != e.name) error("</" + std::string(closing) + "> closes <" + e.name + ">");
        skip_space();
        expect('>');
        return;
      } else if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<![CDATA[")) {
        pos_ += 9;
        const std::size_t end = s_.find("]]>", pos_);
        if (end == std::string_view::npos) error("unterminated CDATA section");
        for (std::size_t i = pos_; i < end; ++i) {  // line ends normalised here too
          if (s_[i] == '\r') {
            e.text += '\n';
            if (i + 1 < end && s_[i + 1] == '\n') ++i;
          } else {
            e.text += s_[i];
          }
        }
        pos_ = end + 3;
      } else if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<!")) {
        error("declarations are not allowed inside elements");
      } else {
        e.children.emplace_back();
        read_element(e.children.back(), depth + 1, root);
      }
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------
// The header as the decoder needs it.

struct FieldHeader {
  std::string name;
  std::uint64_t bit_offset = 0, bit_width = 0, n_symbols = 0, offset = 0, length = 0;
  std::int64_t bias = 0;
  NumberFormat format;
  std::vector<std::string> tags;
  std::string comment;
};

struct TableHeader {
  std::string name;
  std::string comment;
  std::vector<FieldHeader> fields;
  std::uint64_t record_bytes = 0, n_records = 0, offset = 0, length = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

const XmlElement& required(const XmlElement& parent, std::string_view name, const std::string& where) {
  const XmlElement* e = parent.child(name);
  if (!e) fail(where + " has no <" + std::string(name) + ">");
  return *e;
}

std::int64_t integer_of(const XmlElement& e, const std::string& where, std::int64_t min, std::int64_t max) {
  std::string_view t = trim(e.text);
  std::string_view digits = !t.empty() && t[0] == '+' ? t.substr(1) : t;
  std::int64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (res.ec == std::errc::result_out_of_range) fail(where + ": <" + e.name + "> " + quote(t) + " is out of range");
  if (digits.empty() || res.ec != std::errc() || res.ptr != digits.data() + digits.size())
    fail(where + ": <" + e.name + "> " + quote(t) + " is not an integer");
  if (v < min || v > max)
    fail(where + ": <" + e.name + "> " + std::string(t) + " is out of range (" + std::to_string(min) + " to " +
         std::to_string(max) + ")");
  return v;
}

std::uint64_t count_of(const XmlElement& parent, std::string_view name, const std::string& where,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  return static_cast<std::uint64_t>(integer_of(required(parent, name, where), where, 0, max));
}

NumberFormat number_format_of(const XmlElement* e, const std::string& where) {
  NumberFormat f;
  if (!e) return f;
  auto text = [&](std::string_view name, std::string& out) {
    if (const XmlElement* c = e->child(name)) out = c->text;
  };
  auto number = [&](std::string_view name, int& out) {
    const XmlElement* c = e->child(name);
    if (c && !trim(c->text).empty()) out = static_cast<int>(integer_of(*c, where, -1000000, 1000000));
  };
  text("Type", f.type);
  f.type = std::string(trim(f.type));
  if (f.type.empty()) f.type = "UNKNOWN";
  number("nDec", f.n_dec);
  number("UseThou", f.use_thou);
  text("Fmt", f.fmt);
  text("Dec", f.dec);
  text("Thou", f.thou);
  return f;
}

TableHeader parse_header(std::string_view xml) {
  const XmlElement root = XmlReader(xml).read_document("QvdTableHeader");
  TableHeader h;
  const std::string table = "the table header";
  if (const XmlElement* name = root.child("TableName")) h.name = name->text;
  if (const XmlElement* comment = root.child("Comment")) h.comment = comment->text;
  for (const char* unsupported : {"Compression", "EncryptionInfo"}) {
    const XmlElement* e = root.child(unsupported);
    if (e && (!trim(e->text).empty() || !e->children.empty()))
      fail(std::string("<") + unsupported + "> is set: compressed or encrypted QVD files are not supported");
  }
  h.record_bytes = count_of(root, "RecordByteSize", table, std::int64_t{1} << 40);
  h.n_records = count_of(root, "NoOfRecords", table);
  h.offset = count_of(root, "Offset", table);
  h.length = count_of(root, "Length", table);
  const XmlElement& fields = required(root, "Fields", table);
  for (const auto& fe : fields.children) {
    if (fe.name != "QvdFieldHeader") fail("<Fields> holds a <" + fe.name + ">, not a <QvdFieldHeader>");
    FieldHeader f;
    f.name = required(fe, "FieldName", "field " + std::to_string(h.fields.size() + 1)).text;
    const std::string where = "field " + quote(f.name);
    f.bit_offset = count_of(fe, "BitOffset", where);
    f.bit_width = count_of(fe, "BitWidth", where);
    if (f.bit_width > 32) fail(where + ": BitWidth " + std::to_string(f.bit_width) + " is more than 32");
    // Qlik writes 0, or -2 when the field has NULLs; a positive Bias has no meaning.
    f.bias = integer_of(required(fe, "Bias", where), where, -(std::int64_t{1} << 32), 0);
    f.n_symbols = count_of(fe, "NoOfSymbols", where);
    f.offset = count_of(fe, "Offset", where);
    f.length = count_of(fe, "Length", where);
    f.format = number_format_of(fe.child("NumberFormat"), where);
    if (const XmlElement* comment = fe.child("Comment")) f.comment = comment->text;
    if (const XmlElement* tags = fe.child("Tags"))
      for (const auto& t : tags->children)
        if (t.name == "String") f.tags.push_back(std::string(trim(t.text)));
    h.fields.push_back(std::move(f));
  }
  if (h.fields.empty()) fail("the header lists no fields");
  // Qlik names a table in every header; a header without one still loads, as CSV tables do.
  if (h.name.empty()) h.name = "Table1";
  return h;
}

// Checks every offset, length and bit range of the header against the `data_size` bytes that
// follow it, so decoding needs no further bounds checks and allocates only what they can hold.
void check_layout(const TableHeader& h, std::uint64_t data_size) {
  if (h.n_records > 0 && h.record_bytes == 0) fail("RecordByteSize is 0 for " + std::to_string(h.n_records) + " records");
  const std::uint64_t record_bits = h.record_bytes * 8;
  struct Span {
    std::uint64_t begin, end;
    const std::string* field;
  };
  std::vector<Span> symbol_spans, bit_spans;
  for (const auto& f : h.fields) {
    const std::string where = "field " + quote(f.name);
    if (f.offset > data_size || f.length > data_size - f.offset)
      fail(where + ": its symbols (Offset " + std::to_string(f.offset) + ", Length " + std::to_string(f.length) +
           ") end past the " + std::to_string(data_size) + " bytes after the header (a truncated file?)");
    // The shortest symbol is 2 bytes (an empty text and its NUL).
    if (f.n_symbols > f.length / 2 || f.n_symbols > 0xFFFFFFFEULL)
      fail(where + ": NoOfSymbols " + std::to_string(f.n_symbols) + " cannot fit in its Length of " +
           std::to_string(f.length) + " bytes");
    if (f.bit_width > 0) {
      if (f.bit_offset > record_bits || f.bit_width > record_bits - f.bit_offset)
        fail(where + ": bits " + std::to_string(f.bit_offset) + " to " + std::to_string(f.bit_offset + f.bit_width) +
             " lie past the RecordByteSize of " + std::to_string(h.record_bytes) + " bytes");
      bit_spans.push_back({f.bit_offset, f.bit_offset + f.bit_width, &f.name});
    }
    if (f.length > 0) symbol_spans.push_back({f.offset, f.offset + f.length, &f.name});
  }
  // Overlaps would let a small file claim the same bytes many times over (and Qlik never
  // writes them): each field owns its symbol bytes and its record bits.
  auto check_disjoint = [](std::vector<Span>& spans, const char* what) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].begin < spans[i - 1].end)
        fail("fields " + quote(*spans[i - 1].field) + " and " + quote(*spans[i].field) + " overlap in their " + what);
  };
  check_disjoint(symbol_spans, "symbol bytes");
  check_disjoint(bit_spans, "record bits");

  if (h.offset > data_size || h.length > data_size - h.offset)
    fail("the records (Offset " + std::to_string(h.offset) + ", Length " + std::to_string(h.length) +
         ") end past the " + std::to_string(data_size) + " bytes after the header (a truncated file?)");
  if (h.record_bytes > 0 && h.n_records > h.length / h.record_bytes)
    fail("NoOfRecords " + std::to_string(h.n_records) + " of RecordByteSize " + std::to_string(h.record_bytes) +
         " do not fit in the records' Length of " + std::to_string(h.length) + " bytes");
}

// ---------------------------------------------------------------------------------------
// Symbols.

// The NUL-terminated UTF-8 text at p, which must end before `end`; p moves past the NUL.
std::string_view read_text(const std::uint8_t*& p, const std::uint8_t* end, const std::string& where,
                           std::uint64_t i) {
  const void* nul = std::memchr(p, 0, static_cast<std::size_t>(end - p));
  if (!nul) fail(where + ": the text of symbol " + std::to_string(i) + " has no terminating NUL in the field's bytes");
  const auto n = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - p);
  if (!valid_utf8(p, n)) fail(where + ": the text of symbol " + std::to_string(i) + " is not valid UTF-8");
  std::string_view t(reinterpret_cast<const char*>(p), n);
  p += n + 1;
  return t;
}

// A section of symbols that all have type `Type` (1: int32, 2: float64) at a fixed stride,
// parsed in parallel chunks straight into the table's array; nothing when a symbol has
// another type (or, for float64, is not finite).
template <class T, std::uint8_t Type>
std::optional<SymbolTable> read_fixed_symbols(const std::uint8_t* p, std::size_t n, CpuAccount* cpu) {
  constexpr std::size_t kStride = 1 + sizeof(T);
  constexpr std::size_t kMinChunk = std::size_t{1} << 16;
  std::vector<T, CallocAllocator<T>> values;
  {
    big_blocks::Uncleared every_element_is_written_below;
    values.resize(n);
  }
  std::atomic<bool> other{false};
  parallel_ranges(
      n, 1,
      [&](std::size_t begin, std::size_t end) {
        const std::uint8_t* q = p + kStride * begin;
        T* out = values.data();
        unsigned bad = 0;  // a loop without an exit: no branch per symbol
        for (std::size_t i = begin; i < end; ++i, q += kStride) {
          bad |= q[0] ^ Type;
          std::memcpy(&out[i], q + 1, sizeof(T));
          if constexpr (std::is_floating_point_v<T>) bad |= !(std::fabs(out[i]) <= std::numeric_limits<T>::max());
        }
        if (bad) other.store(true, std::memory_order_relaxed);
      },
      cpu, kMinChunk);
  if (other.load()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    return SymbolTable::of_numbers(std::move(values));
  } else {
    return SymbolTable::of_ints(std::move(values));
  }
}

// Fields whose symbols are all int32, all float64 or all text (the common case) are read by
// tight loops straight into the table's arrays. Anything else, or anything wrong, returns
// nothing and takes the general path, which also names the exact problem.
std::optional<SymbolTable> read_plain_symbols(const FieldHeader& f, const std::uint8_t* data, CpuAccount* cpu) {
  const std::uint8_t* const p = data + f.offset;
  const auto n = static_cast<std::size_t>(f.n_symbols);
  const auto length = static_cast<std::size_t>(f.length);
  if (n == 0 || length == 0) return std::nullopt;
  switch (p[0]) {
    case 1:
    case 2: {
      if (p[0] == 1 && length == 5 * n) {
        if (auto t = read_fixed_symbols<std::int32_t, 1>(p, n, cpu)) return t;
      } else if (p[0] == 2 && length == 9 * n) {
        if (auto t = read_fixed_symbols<double, 2>(p, n, cpu)) return t;
      }
      // Numbers: float64, with int32 where a value is an integer (as Qlik writes them), parsed
      // straight into the table's array.
      NumberArray numbers;
      {
        big_blocks::Uncleared every_element_is_written_below;  // or the table is dropped
        numbers.resize(n);
      }
      double* out = numbers.data();
      const std::uint8_t* q = p;
      const std::uint8_t* const end = p + length;
      bool ok = true;
      std::size_t i = 0;
      // Runs of eight float64 symbols are checked with one branch (the common case).
      const auto run_fits = [&] { return end - q >= 72 && n - i >= 8; };
      for (; i < n; ++i) {
        while (run_fits()) {
          unsigned types = 0;
          for (std::size_t k = 0; k < 8; ++k) types |= q[9 * k] ^ 2U;
          if (types) break;
          for (std::size_t k = 0; k < 8; ++k) {
            std::memcpy(&out[i + k], q + 9 * k + 1, 8);
            ok &= std::fabs(out[i + k]) <= std::numeric_limits<double>::max();
          }
          q += 72;
          i += 8;
        }
        if (i == n) break;
        if (end - q >= 9 && *q == 2) {
          std::memcpy(&out[i], q + 1, 8);
          ok &= std::isfinite(out[i]);
          q += 9;
        } else if (end - q >= 5 && *q == 1) {
          std::int32_t v;
          std::memcpy(&v, q + 1, 4);
          out[i] = v;
          q += 5;
        } else {
          return std::nullopt;
        }
      }
      if (!ok || q != end) return std::nullopt;
      return SymbolTable::of_numbers(std::move(numbers));
    }
    case 4: {
      // Type bytes and NULs are ASCII, so the section is valid UTF-8 exactly when every text is.
      if (length > 0xFFFFFFFFULL || !valid_utf8(p, length)) return std::nullopt;
      std::vector<char> text;
      text.reserve(length - 2 * n);
      std::vector<std::uint32_t> offsets;
      offsets.reserve(n + 1);
      offsets.push_back(0);
      const std::uint8_t* q = p;
      const std::uint8_t* const end = p + length;
      for (std::size_t i = 0; i < n; ++i) {
        if (q == end || *q != 4) return std::nullopt;
        ++q;
        const auto* nul = static_cast<const std::uint8_t*>(std::memchr(q, 0, static_cast<std::size_t>(end - q)));
        if (!nul) return std::nullopt;
        text.insert(text.end(), q, nul);
        offsets.push_back(static_cast<std::uint32_t>(text.size()));
        q = nul + 1;
      }
      if (q != end) return std::nullopt;
      return SymbolTable::of_texts(std::move(text), std::move(offsets));
    }
    default:
      return std::nullopt;
  }
}

SymbolTable read_symbols(const FieldHeader& f, const std::uint8_t* data, CpuAccount* cpu) {
  if (auto plain = read_plain_symbols(f, data, cpu)) return std::move(*plain);
  const std::string where = "field " + quote(f.name);
  const std::uint8_t* p = data + f.offset;
  const std::uint8_t* const end = p + f.length;
  SymbolTableBuilder b;
  auto need = [&](std::size_t n, std::uint64_t i) {
    if (static_cast<std::size_t>(end - p) < n)
      fail(where + ": symbol " + std::to_string(i) + " runs past the field's Length of " + std::to_string(f.length) +
           " bytes");
  };
  auto finite = [&](double d, std::uint64_t i) {
    if (!std::isfinite(d)) fail(where + ": symbol " + std::to_string(i) + " is not a finite number");
    return d;
  };
  for (std::uint64_t i = 0; i < f.n_symbols; ++i) {
    need(1, i);
    const std::uint8_t type = *p++;
    switch (type) {
      case 1: {  // int32
        need(4, i);
        std::int32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        b.append(DualView::of_number(v));
        break;
      }
      case 2: {  // float64
        need(8, i);
        double v;
        std::memcpy(&v, p, 8);
        p += 8;
        b.append(DualView::of_number(finite(v, i)));
        break;
      }
      case 4:  // text
        b.append(DualView::of_text(read_text(p, end, where, i)));
        break;
      case 5: {  // int32 and text
        need(4, i);
        std::int32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        b.append(DualView::of_dual(v, read_text(p, end, where, i)));
        break;
      }
      case 6: {  // float64 and text
        need(8, i);
        double v;
        std::memcpy(&v, p, 8);
        p += 8;
        b.append(DualView::of_dual(finite(v, i), read_text(p, end, where, i)));
        break;
      }
      default:
        fail(where + ": symbol " + std::to_string(i) + " has the unknown type byte " + std::to_string(type));
    }
  }
  if (p != end)
    fail(where + ": " + std::to_string(end - p) + " bytes of its Length are left after its " +
         std::to_string(f.n_symbols) + " symbols");
  return b.finish();
}

// ---------------------------------------------------------------------------------------
// Records. A field's value is (record >> BitOffset) & mask, read as one 8-byte load at a
// fixed byte of the record; symbol = value + Bias, and a negative symbol is NULL.

struct FieldDecoder {
  std::size_t byte = 0;     // first byte of the 8-byte load, from the record's start
  std::uint32_t shift = 0;  // bit position of the value in the load
  std::uint64_t mask = 0;
  std::int64_t bias = 0;
  std::uint64_t n_symbols = 0;
  bool constant = false;        // BitWidth 0: the same symbol (or NULL) on every row
  std::uint32_t constant_symbol = kNull;
};

FieldDecoder decoder_for(const FieldHeader& f, std::uint64_t record_bytes) {
  FieldDecoder d;
  d.bias = f.bias;
  d.n_symbols = f.n_symbols;
  if (f.bit_width == 0) {
    d.constant = true;
    const std::int64_t s = f.bias;
    // An all-NULL field has no symbols at all.
    if (s < 0 || f.n_symbols == 0) {
      d.constant_symbol = kNull;
    } else if (static_cast<std::uint64_t>(s) >= f.n_symbols) {
      fail("field " + quote(f.name) + ": BitWidth 0 and Bias " + std::to_string(s) + " give symbol " +
           std::to_string(s) + " of " + std::to_string(f.n_symbols));
    } else {
      d.constant_symbol = static_cast<std::uint32_t>(s);
    }
    return d;
  }
  // Keep the load inside the record when the record has 8 bytes or more; shorter records
  // load past their end, which the caller pads for the last rows.
  d.byte = static_cast<std::size_t>(f.bit_offset / 8);
  if (record_bytes >= 8) d.byte = std::min<std::size_t>(d.byte, static_cast<std::size_t>(record_bytes - 8));
  d.shift = static_cast<std::uint32_t>(f.bit_offset - d.byte * 8);
  d.mask = (std::uint64_t{1} << f.bit_width) - 1;
  return d;
}

// Decodes `count` records starting at `rec` into symbol indexes (kNull for NULL) and
// returns the largest stored value seen, for the range check after the block.
// On x86-64 Linux the loop is compiled twice and the CPU picks at load time: with AVX2 the
// shift, mask and maximum run four values at a time (the strided loads stay scalar), which
// took 17 % off a single-threaded load of a 6-field, 1M-row file.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define ASSOC_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define ASSOC_AVX2_CLONE
#endif

template <bool kBiased>
ASSOC_AVX2_CLONE std::uint64_t decode_field(const std::uint8_t* rec, std::size_t record_bytes, std::size_t count,
                                            const FieldDecoder& d, std::uint32_t* out) {
  const std::uint8_t* p = rec + d.byte;
  const std::uint32_t shift = d.shift;
  const std::uint64_t mask = d.mask;
  const std::int64_t bias = d.bias;
  std::uint64_t max_value = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t x;
    std::memcpy(&x, p + i * record_bytes, 8);
    const std::uint64_t v = (x >> shift) & mask;
    max_value = std::max(max_value, v);
    if constexpr (kBiased) {
      const std::int64_t s = static_cast<std::int64_t>(v) + bias;
      out[i] = s < 0 ? kNull : static_cast<std::uint32_t>(s);
    } else {
      out[i] = static_cast<std::uint32_t>(v);
    }
  }
  return max_value;
}

}  // namespace

LoadedTable read_qvd(const std::uint8_t* data, std::size_t size, CpuAccount* cpu) {
  CpuScope scope(cpu);
  if (size == 0) fail("the file is empty");
  const void* nul = std::memchr(data, 0, size);
  if (!nul)
    fail("no NUL byte ends the XML header (a truncated file, or not a QVD file)");
  const auto header_size = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - data);
  TableHeader h = parse_header(std::string_view(reinterpret_cast<const char*>(data), header_size));
  const std::uint8_t* body = data + header_size + 1;
  const std::size_t body_size = size - header_size - 1;
  check_layout(h, body_size);

  const std::size_t n_fields = h.fields.size();
  const auto rows = static_cast<std::size_t>(h.n_records);
  const auto record_bytes = static_cast<std::size_t>(h.record_bytes);
  const std::uint8_t* records = body + h.offset;
  std::vector<FieldDecoder> decoders;
  for (const auto& f : h.fields) decoders.push_back(decoder_for(f, h.record_bytes));

  // The last rows' loads may pass the end of the file: they read from a zero-padded copy.
  const std::size_t tail_rows = std::min<std::size_t>(rows, 8);
  const std::size_t safe_rows = rows - tail_rows;
  std::vector<std::uint8_t> tail(tail_rows * record_bytes + 16, 0);
  if (tail_rows > 0) std::memcpy(tail.data(), records + safe_rows * record_bytes, tail_rows * record_bytes);

  // Records are decoded block by block, every field from the same block while it is in cache,
  // straight into packed indexes whose layout the header fixes: a code for NULL when the Bias
  // can make one, room for every symbol. The symbols each field really uses are tracked, to
  // repack in the rare file whose header asks for more bits than its rows need.
  std::vector<SymbolTable> symbols(n_fields);
  std::vector<PackedIndex> indexes(n_fields);
  std::vector<std::atomic<std::int64_t>> max_symbol(n_fields);
  for (auto& m : max_symbol) m.store(-1, std::memory_order_relaxed);
  auto decode_block = [&](std::size_t f, std::size_t begin, std::size_t count, std::uint32_t* out) {
    const FieldDecoder& d = decoders[f];
    std::int64_t block_max;
    if (d.constant) {
      std::fill(out, out + count, d.constant_symbol);
      block_max = d.constant_symbol == kNull ? -1 : std::int64_t{d.constant_symbol};
    } else {
      // Rows before the padded tail read the file, rows in it the copy.
      const std::size_t end = begin + count;
      const std::size_t safe_end = std::min(end, std::max(begin, safe_rows));
      const bool biased = d.bias != 0;
      std::uint64_t m = 0;
      if (safe_end > begin) {
        const std::uint8_t* rec = records + begin * record_bytes;
        m = biased ? decode_field<true>(rec, record_bytes, safe_end - begin, d, out)
                   : decode_field<false>(rec, record_bytes, safe_end - begin, d, out);
      }
      if (end > safe_end) {
        const std::uint8_t* rec = tail.data() + (safe_end - safe_rows) * record_bytes;
        std::uint32_t* o = out + (safe_end - begin);
        m = std::max(m, biased ? decode_field<true>(rec, record_bytes, end - safe_end, d, o)
                               : decode_field<false>(rec, record_bytes, end - safe_end, d, o));
      }
      block_max = static_cast<std::int64_t>(m) + d.bias;
      if (block_max >= static_cast<std::int64_t>(d.n_symbols)) {
        std::size_t i = 0;
        while (i < count && (out[i] == kNull || out[i] < d.n_symbols)) ++i;
        const std::string what = i < count ? "row " + std::to_string(begin + i) + " holds symbol index " +
                                                 std::to_string(out[i])
                                           : "a row holds symbol index " + std::to_string(block_max);
        fail("field " + quote(h.fields[f].name) + ": " + what + ", but the field has " +
             std::to_string(d.n_symbols) + " symbols");
      }
    }
    std::int64_t seen = max_symbol[f].load(std::memory_order_relaxed);
    while (block_max > seen && !max_symbol[f].compare_exchange_weak(seen, block_max)) {
    }
  };
  auto pack_records = [&] {
    std::vector<PackedIndex::Layout> layouts(n_fields);
    for (std::size_t f = 0; f < n_fields; ++f) {
      const FieldDecoder& d = decoders[f];
      layouts[f].n_symbols = static_cast<std::uint32_t>(d.n_symbols);
      layouts[f].has_null = d.constant ? d.constant_symbol == kNull : d.bias < 0;
    }
    indexes = PackedIndex::pack_columns(
        rows, layouts,
        [&](std::size_t begin, std::size_t count, std::uint32_t* const* out) {
          for (std::size_t f = 0; f < n_fields; ++f) decode_block(f, begin, count, out[f]);
        },
        cpu);
    for (std::size_t f = 0; f < n_fields; ++f) {
      PackedIndex& index = indexes[f];
      const bool nulls = index.non_null_count() < rows;
      const std::int64_t top = max_symbol[f].load();
      const std::uint64_t max_code = top < 0 ? 0 : static_cast<std::uint64_t>(top) + (nulls ? 1 : 0);
      if (index.has_null() != nulls || index.bit_width() != PackedIndex::width_for(max_code)) {
        std::vector<std::uint32_t> all(rows);
        index.decode(0, rows, all.data());
        index = PackedIndex::pack(all.data(), rows, layouts[f].n_symbols, cpu);
      }
    }
  };

  // One task per field's symbols, largest first, beside one task for all records, which packs
  // in parallel blocks of its own.
  std::vector<std::size_t> by_length(n_fields);
  for (std::size_t i = 0; i < n_fields; ++i) by_length[i] = i;
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](std::size_t a, std::size_t b) { return h.fields[a].length > h.fields[b].length; });
  parallel_for(
      n_fields + 1,
      [&](std::size_t task) {
        if (task < n_fields) {
          const std::size_t f = by_length[task];
          symbols[f] = read_symbols(h.fields[f], body, cpu);
        } else {
          pack_records();
        }
      },
      cpu);

  LoadedTable t;
  t.name = std::move(h.name);
  t.rows = rows;
  t.comment = std::move(h.comment);
  t.columns.resize(n_fields);
  for (std::size_t f = 0; f < n_fields; ++f) {
    LoadedColumn& c = t.columns[f];
    c.name = std::move(h.fields[f].name);
    c.symbols = std::move(symbols[f]);
    c.index = std::move(indexes[f]);
    c.format = std::move(h.fields[f].format);
    c.tags = std::move(h.fields[f].tags);
    c.comment = std::move(h.fields[f].comment);
  }
  return t;
}

}  // namespace assoc
