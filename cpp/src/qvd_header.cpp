// Reading the QVD header: the XML subset, then each entry checked and converted.
#include "qvd_header.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "assoc/error.hpp"
#include "xml_subset.hpp"

namespace assoc::detail {

[[noreturn]] void fail_qvd(const std::string& what) { throw Error("invalid QVD file: " + what); }

// A name or value for an error message: quoted, and cut short when long.
std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 60;
  std::string out = "'";
  out.append(s.substr(0, kMax));
  out.append(s.size() <= kMax ? "'" : "…'");
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

const XmlElement& required(const XmlElement& parent, std::string_view name, const std::string& where) {
  const XmlElement* e = parent.child(name);
  if (!e) fail_qvd(where + " has no <" + std::string(name) + ">");
  return *e;
}

std::int64_t integer_of(const XmlElement& e, const std::string& where, std::int64_t min, std::int64_t max) {
  std::string_view t = trim(e.text);
  std::string_view digits = !t.empty() && t[0] == '+' ? t.substr(1) : t;
  std::int64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (res.ec == std::errc::result_out_of_range) fail_qvd(where + ": <" + e.name + "> " + quote(t) + " is out of range");
  if (digits.empty() || res.ec != std::errc() || res.ptr != digits.data() + digits.size())
    fail_qvd(where + ": <" + e.name + "> " + quote(t) + " is not an integer");
  if (v < min || v > max)
    fail_qvd(where + ": <" + e.name + "> " + std::string(t) + " is out of range (" + std::to_string(min) + " to " +
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

}  // namespace

TableHeader parse_qvd_header(std::string_view xml) {
  const XmlElement root = read_xml_document(xml, "QvdTableHeader", "invalid QVD file: the XML header");
  TableHeader h;
  const std::string table = "the table header";
  if (const XmlElement* name = root.child("TableName")) h.name = name->text;
  if (const XmlElement* comment = root.child("Comment")) h.comment = comment->text;
  for (const char* unsupported : {"Compression", "EncryptionInfo"}) {
    const XmlElement* e = root.child(unsupported);
    if (e && (!trim(e->text).empty() || !e->children.empty()))
      fail_qvd(std::string("<") + unsupported + "> is set: compressed or encrypted QVD files are not supported");
  }
  h.record_bytes = count_of(root, "RecordByteSize", table, std::int64_t{1} << 40);
  h.n_records = count_of(root, "NoOfRecords", table);
  h.offset = count_of(root, "Offset", table);
  h.length = count_of(root, "Length", table);
  const XmlElement& fields = required(root, "Fields", table);
  for (const auto& fe : fields.children) {
    if (fe.name != "QvdFieldHeader") fail_qvd("<Fields> holds a <" + fe.name + ">, not a <QvdFieldHeader>");
    FieldHeader f;
    f.name = required(fe, "FieldName", "field " + std::to_string(h.fields.size() + 1)).text;
    const std::string where = "field " + quote(f.name);
    f.bit_offset = count_of(fe, "BitOffset", where);
    f.bit_width = count_of(fe, "BitWidth", where);
    if (f.bit_width > 32) fail_qvd(where + ": BitWidth " + std::to_string(f.bit_width) + " is more than 32");
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
  if (h.fields.empty()) fail_qvd("the header lists no fields");
  // Qlik names a table in every header; a header without one still loads, as CSV tables do.
  if (h.name.empty()) h.name = "Table1";
  return h;
}

void check_qvd_layout(const TableHeader& h, std::uint64_t data_size) {
  if (h.n_records > 0 && h.record_bytes == 0) fail_qvd("RecordByteSize is 0 for " + std::to_string(h.n_records) + " records");
  const std::uint64_t record_bits = h.record_bytes * 8;
  struct Span {
    std::uint64_t begin, end;
    const std::string* field;
  };
  std::vector<Span> symbol_spans, bit_spans;
  for (const auto& f : h.fields) {
    const std::string where = "field " + quote(f.name);
    if (f.offset > data_size || f.length > data_size - f.offset)
      fail_qvd(where + ": its symbols (Offset " + std::to_string(f.offset) + ", Length " + std::to_string(f.length) +
           ") end past the " + std::to_string(data_size) + " bytes after the header (a truncated file?)");
    // The shortest symbol is 2 bytes (an empty text and its NUL).
    if (f.n_symbols > f.length / 2 || f.n_symbols > 0xFFFFFFFEULL)
      fail_qvd(where + ": NoOfSymbols " + std::to_string(f.n_symbols) + " cannot fit in its Length of " +
           std::to_string(f.length) + " bytes");
    if (f.bit_width > 0) {
      if (f.bit_offset > record_bits || f.bit_width > record_bits - f.bit_offset)
        fail_qvd(where + ": bits " + std::to_string(f.bit_offset) + " to " + std::to_string(f.bit_offset + f.bit_width) +
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
        fail_qvd("fields " + quote(*spans[i - 1].field) + " and " + quote(*spans[i].field) + " overlap in their " + what);
  };
  check_disjoint(symbol_spans, "symbol bytes");
  check_disjoint(bit_spans, "record bits");

  if (h.offset > data_size || h.length > data_size - h.offset)
    fail_qvd("the records (Offset " + std::to_string(h.offset) + ", Length " + std::to_string(h.length) +
         ") end past the " + std::to_string(data_size) + " bytes after the header (a truncated file?)");
  if (h.record_bytes > 0 && h.n_records > h.length / h.record_bytes)
    fail_qvd("NoOfRecords " + std::to_string(h.n_records) + " of RecordByteSize " + std::to_string(h.record_bytes) +
         " do not fit in the records' Length of " + std::to_string(h.length) + " bytes");
  // Bytes past the last symbol and record are held by nothing: a package entry padded with
  // them would cost disk and memory for data no table holds.
  std::uint64_t data_end = h.offset + h.length;
  for (const auto& span : symbol_spans) data_end = std::max(data_end, span.end);
  if (data_end < data_size)
    fail_qvd(std::to_string(data_size - data_end) + " bytes follow the symbols and records (the file ends at byte " +
             std::to_string(data_end) + " of its data)");
}

LoadedTable loaded_qvd_table(TableHeader&& h, std::vector<SymbolTable>&& symbols,
                             const std::vector<std::vector<std::uint32_t>>& merged, std::vector<PackedIndex>&& indexes,
                             CpuAccount* cpu) {
  const std::size_t n_fields = h.fields.size();
  LoadedTable t;
  t.name = std::move(h.name);
  t.rows = static_cast<std::size_t>(h.n_records);
  t.comment = std::move(h.comment);
  t.columns.resize(n_fields);
  for (std::size_t f = 0; f < n_fields; ++f) {
    LoadedColumn& c = t.columns[f];
    c.name = std::move(h.fields[f].name);
    c.symbols = std::move(symbols[f]);
    c.index = merged[f].empty() ? std::move(indexes[f]) : indexes[f].remapped(merged[f], c.symbols.size(), cpu);
    c.format = std::move(h.fields[f].format);
    c.tags = std::move(h.fields[f].tags);
    c.comment = std::move(h.fields[f].comment);
  }
  return t;
}

}  // namespace assoc::detail
