// Reading QVD files: the header (qvd_header, over xml_subset), each field's symbol table
// (qvd_symbols), and the bit-stuffed records (qvd_records). Every length and offset is checked against
// the bytes present before it is used, so no input can make the reader read out of bounds or
// allocate more than the file could describe.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"
#include "assoc/utf8.hpp"
#include "qvd_header.hpp"
#include "qvd_records.hpp"
#include "qvd_symbols.hpp"

namespace assoc {

using detail::fail_qvd;
using detail::TableHeader;

// Files below this size are read on the calling thread alone: waking another costs more than
// it would take over.
constexpr std::size_t kParallelMinBytes = std::size_t{128} << 10;

LoadedTable read_qvd(const std::uint8_t* data, std::size_t size, CpuAccount* cpu) {
  CpuScope scope(cpu);
  std::optional<SerialScope> alone;
  if (size < kParallelMinBytes) alone.emplace();
  if (size == 0) fail_qvd("the file is empty");
  const void* nul = std::memchr(data, 0, size);
  if (!nul)
    fail_qvd("no NUL byte ends the XML header (a truncated file, or not a QVD file)");
  const auto header_size = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - data);
  TableHeader h = detail::parse_qvd_header(std::string_view(reinterpret_cast<const char*>(data), header_size));
  const std::uint8_t* body = data + header_size + 1;
  const std::size_t body_size = size - header_size - 1;
  detail::check_qvd_layout(h, body_size);

  const std::size_t n_fields = h.fields.size();
  std::vector<SymbolTable> symbols(n_fields);
  std::vector<std::vector<std::uint32_t>> merged(n_fields);
  std::vector<PackedIndex> indexes;
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
          symbols[f] = detail::read_qvd_symbols(h.fields[f], body, merged[f], cpu);
        } else {
          indexes = detail::read_qvd_records(h, body, cpu);
        }
      },
      cpu);

  return detail::loaded_qvd_table(std::move(h), std::move(symbols), merged, std::move(indexes), cpu);
}

}  // namespace assoc
