// Writing QVD files with the header layout, symbol types and record packing that Qlik uses,
// so that Qlik and other QVD tools read them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/symbol_table.hpp"

namespace assoc {
namespace {

// The Qlik build whose header layout this writes (EncryptionInfo, TableTags and
// ProfilingData after Comment); readers may key what they expect on it.
constexpr const char* kQvBuildNo = "50689";

// Element text: markup escaped, and CR as a reference because XML readers turn a raw CR into LF.
void append_xml_text(std::string& out, std::string_view s, const std::string& what) {
  for (const char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default: {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 && c != '\t' && c != '\n')
          throw Error(what + " holds the control character " + std::to_string(c) +
                      ", which a QVD header (XML) cannot hold");
        out += ch;
      }
    }
  }
}

// One header line: `indent` spaces, <name>text</name>, CRLF.
void element(std::string& out, int indent, const char* name, std::string_view text, const std::string& what) {
  out.append(static_cast<std::size_t>(indent), ' ');
  out += '<';
  out += name;
  out += '>';
  append_xml_text(out, text, what);
  out += "</";
  out += name;
  out += ">\r\n";
}

void open_line(std::string& out, int indent, const char* tag) {
  out.append(static_cast<std::size_t>(indent), ' ');
  out += tag;
  out += "\r\n";
}

// A symbol with its type byte: 1 int32, 2 float64, 4 text, 5 int32 + text, 6 float64 + text.
void append_symbol(std::vector<std::uint8_t>& out, const SymbolTable& symbols, std::uint32_t i,
                   const std::string& field) {
  const bool has_text = symbols.has_text(i);
  if (symbols.has_number(i)) {
    const double d = symbols.number(i);
    if (is_int32_symbol(d)) {
      out.push_back(has_text ? 5 : 1);
      const auto v = static_cast<std::int32_t>(d);
      const auto* b = reinterpret_cast<const std::uint8_t*>(&v);
      out.insert(out.end(), b, b + 4);
    } else {
      out.push_back(has_text ? 6 : 2);
      const auto* b = reinterpret_cast<const std::uint8_t*>(&d);
      out.insert(out.end(), b, b + 8);
    }
  } else {
    out.push_back(4);
  }
  if (has_text) {
    const std::string_view t = symbols.text(i);
    if (std::memchr(t.data(), 0, t.size()))
      throw Error("field '" + field + "': a text holds a NUL character, which a QVD symbol cannot hold");
    out.insert(out.end(), t.begin(), t.end());
    out.push_back(0);
  }
}

// What one column becomes in the file.
struct FieldOut {
  const Field* field = nullptr;
  const PackedIndex* index = nullptr;
  std::vector<std::uint32_t> code_of;  // shared symbol index -> stored value (NULL stores 0)
  std::uint32_t n_used = 0;
  bool has_null = false;
  std::uint32_t width = 0;
  std::uint64_t bit_offset = 0;
  std::vector<std::uint8_t> symbol_bytes;
  std::vector<std::string> tags;
};

constexpr std::size_t kRowBlock = 4096;

// The table's own symbols of one column, in first-occurrence order, and their bytes and tags.
void prepare_field(FieldOut& out, std::size_t rows) {
  const Field& f = *out.field;
  const SymbolTable& shared = f.symbols;
  std::vector<std::uint32_t> local(shared.size(), kNull);
  std::vector<std::uint32_t> used;
  std::uint32_t block[kRowBlock];
  for (std::size_t r = 0; r < rows; r += kRowBlock) {
    const std::size_t k = std::min(kRowBlock, rows - r);
    out.index->decode(r, k, block);
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint32_t s = block[i];
      if (s == kNull) {
        out.has_null = true;
      } else if (local[s] == kNull) {
        local[s] = static_cast<std::uint32_t>(used.size());
        used.push_back(s);
      }
    }
  }
  out.n_used = static_cast<std::uint32_t>(used.size());
  // With NULLs Qlik stores symbol + 2 under Bias -2, keeping 0 for NULL.
  const std::uint32_t shift = out.has_null ? 2 : 0;
  out.code_of.assign(shared.size(), 0);
  for (std::uint32_t k = 0; k < out.n_used; ++k) out.code_of[used[k]] = k + shift;
  if (out.has_null) {
    out.width = std::max<std::uint32_t>(1, PackedIndex::width_for(std::uint64_t{out.n_used} + 1));
  } else {
    out.width = out.n_used <= 1 ? 0 : PackedIndex::width_for(out.n_used - 1);
  }

  // The tags of the symbols this table holds, derived as the engine derives every field's.
  SymbolTableBuilder sub;
  for (const std::uint32_t s : used) {
    append_symbol(out.symbol_bytes, shared, s, f.name);
    sub.append(shared.value(s));
  }
  Field own;
  own.symbols = sub.finish();
  own.format = f.format;
  own.source_tags = f.source_tags;
  own.is_key = f.is_key;
  out.tags = own.tags();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return std::string(buf, n);
}

}  // namespace

std::vector<std::uint8_t> write_qvd(const DataModel& model, const Table& table, const QvdAnnotations& annotations) {
  const std::size_t rows = table.rows;
  std::vector<FieldOut> fields(table.columns.size());
  for (std::size_t c = 0; c < fields.size(); ++c) {
    fields[c].field = &model.fields()[table.columns[c].field];
    fields[c].index = &table.columns[c].index;
    if (fields[c].index->size() != rows)
      throw Error("table '" + table.name + "': field '" + fields[c].field->name + "' has " +
                  std::to_string(fields[c].index->size()) + " rows, the table " + std::to_string(rows));
  }
  parallel_for(fields.size(), [&](std::size_t c) { prepare_field(fields[c], rows); });
  for (auto& f : fields) {
    auto untags = annotations.field_untags.find(f.field->name);
    if (untags != annotations.field_untags.end())
      for (const auto& tag : untags->second) f.tags.erase(std::remove(f.tags.begin(), f.tags.end(), tag), f.tags.end());
    auto tags = annotations.field_tags.find(f.field->name);
    if (tags == annotations.field_tags.end()) continue;
    for (const auto& tag : tags->second) {
      if (std::find(f.tags.begin(), f.tags.end(), tag) != f.tags.end()) continue;
      // $key (a field a script's other tables share) leads, as in the model's own tags.
      f.tags.insert(tag == "$key" ? f.tags.begin() : f.tags.end(), tag);
    }
  }

  std::uint64_t bits = 0;
  for (auto& f : fields) {
    f.bit_offset = f.width == 0 ? 0 : bits;  // a constant field takes no bits: Qlik puts it at 0
    bits += f.width;
  }
  // Whole bytes per record, and at least one, as Qlik writes even for constant fields.
  const std::size_t record_bytes = std::max<std::size_t>(1, static_cast<std::size_t>((bits + 7) / 8));

  std::string header;
  header += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\r\n";
  open_line(header, 1, "<QvdTableHeader>");
  const std::string table_what = "table '" + table.name + "'";
  element(header, 3, "QvBuildNo", kQvBuildNo, table_what);
  element(header, 3, "CreatorDoc", "", table_what);
  element(header, 3, "CreateUtcTime", utc_now(), table_what);
  element(header, 3, "SourceCreateUtcTime", "", table_what);
  element(header, 3, "SourceFileUtcTime", "", table_what);
  element(header, 3, "SourceFileSize", "-1", table_what);
  element(header, 3, "StaleUtcTime", "", table_what);
  element(header, 3, "TableName", table.name, "the name of " + table_what);
  open_line(header, 3, "<Fields>");
  std::size_t symbol_offset = 0;
  for (const auto& f : fields) {
    const Field& field = *f.field;
    const std::string what = "field '" + field.name + "'";
    open_line(header, 5, "<QvdFieldHeader>");
    element(header, 7, "FieldName", field.name, "the name of " + what);
    element(header, 7, "BitOffset", std::to_string(f.bit_offset), what);
    element(header, 7, "BitWidth", std::to_string(f.width), what);
    element(header, 7, "Bias", f.has_null ? "-2" : "0", what);
    open_line(header, 7, "<NumberFormat>");
    element(header, 9, "Type", field.format.type, what);
    element(header, 9, "nDec", std::to_string(field.format.n_dec), what);
    element(header, 9, "UseThou", std::to_string(field.format.use_thou), what);
    element(header, 9, "Fmt", field.format.fmt, what);
    element(header, 9, "Dec", field.format.dec, what);
    element(header, 9, "Thou", field.format.thou, what);
    open_line(header, 7, "</NumberFormat>");
    element(header, 7, "NoOfSymbols", std::to_string(f.n_used), what);
    element(header, 7, "Offset", std::to_string(symbol_offset), what);
    element(header, 7, "Length", std::to_string(f.symbol_bytes.size()), what);
    const auto comment = annotations.field_comments.find(field.name);
    element(header, 7, "Comment", comment == annotations.field_comments.end() ? field.comment : comment->second, what);
    if (f.tags.empty()) {
      element(header, 7, "Tags", "", what);
    } else {
      open_line(header, 7, "<Tags>");
      for (const auto& tag : f.tags) element(header, 9, "String", tag, what);
      open_line(header, 7, "</Tags>");
    }
    open_line(header, 5, "</QvdFieldHeader>");
    symbol_offset += f.symbol_bytes.size();
  }
  open_line(header, 3, "</Fields>");
  element(header, 3, "Compression", "", table_what);
  element(header, 3, "RecordByteSize", std::to_string(record_bytes), table_what);
  element(header, 3, "NoOfRecords", std::to_string(rows), table_what);
  element(header, 3, "Offset", std::to_string(symbol_offset), table_what);
  element(header, 3, "Length", std::to_string(rows * record_bytes), table_what);
  element(header, 3, "Lineage", "", table_what);
  element(header, 3, "Comment", annotations.table_comment.value_or(table.comment), table_what);
  element(header, 3, "EncryptionInfo", "", table_what);
  element(header, 3, "TableTags", "", table_what);
  element(header, 3, "ProfilingData", "", table_what);
  open_line(header, 1, "</QvdTableHeader>");

  const std::size_t records_at = header.size() + 1 + symbol_offset;
  std::vector<std::uint8_t> out(records_at + rows * record_bytes, 0);
  std::memcpy(out.data(), header.data(), header.size());  // the NUL after it is already there
  std::size_t at = header.size() + 1;
  for (const auto& f : fields) {
    if (!f.symbol_bytes.empty()) std::memcpy(out.data() + at, f.symbol_bytes.data(), f.symbol_bytes.size());
    at += f.symbol_bytes.size();
  }

  // Records: each row's values ORed into its own RecordByteSize bytes, so row ranges can be
  // written in parallel without sharing a byte.
  std::uint8_t* records = out.data() + records_at;
  parallel_ranges(rows, 1, [&](std::size_t b, std::size_t e) {
    std::uint32_t block[kRowBlock];
    for (std::size_t r0 = b; r0 < e; r0 += kRowBlock) {
      const std::size_t k = std::min(kRowBlock, e - r0);
      for (const auto& f : fields) {
        if (f.width == 0) continue;
        f.index->decode(r0, k, block);
        const std::uint32_t shift = static_cast<std::uint32_t>(f.bit_offset & 7);
        const std::size_t n_bytes = (shift + f.width + 7) / 8;
        std::uint8_t* p = records + r0 * record_bytes + f.bit_offset / 8;
        const std::uint32_t* code_of = f.code_of.data();
        for (std::size_t i = 0; i < k; ++i, p += record_bytes) {
          const std::uint32_t s = block[i];
          const std::uint64_t v = std::uint64_t{s == kNull ? 0U : code_of[s]} << shift;
          for (std::size_t j = 0; j < n_bytes; ++j) p[j] |= static_cast<std::uint8_t>(v >> (8 * j));
        }
      }
    }
  });
  return out;
}

}  // namespace assoc
