#pragma once
// The QVD header as the reader needs it: the table's and each field's entries, read from the
// XML and checked against the bytes that follow it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc::detail {

// Throws Error("invalid QVD file: " + what).
[[noreturn]] void fail_qvd(const std::string& what);

// A name or value for an error message: quoted, and cut short when long.
std::string quote(std::string_view s);

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

// The header's entries; throws Error when the XML is malformed or an entry is missing or out
// of range.
TableHeader parse_qvd_header(std::string_view xml);

// Checks every offset, length and bit range of the header against the `data_size` bytes that
// follow it, so decoding needs no further bounds checks and allocates only what they can hold.
void check_qvd_layout(const TableHeader& h, std::uint64_t data_size);

// The table a QVD holds: the header's names, formats, tags and comments with each field's
// symbols and packed index (one per field, in header order). A field whose file symbols
// repeated a value has a non-empty `merged` map (read_qvd_symbols): its index is
// remapped to the merged symbols.
LoadedTable loaded_qvd_table(TableHeader&& h, std::vector<SymbolTable>&& symbols,
                             const std::vector<std::vector<std::uint32_t>>& merged, std::vector<PackedIndex>&& indexes,
                             CpuAccount* cpu);

}  // namespace assoc::detail
