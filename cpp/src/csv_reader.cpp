// CSV reader: the buffer is cut into chunks at record boundaries, each chunk is parsed on its
// own thread into per-column local symbol tables (csv_chunk), and the local tables are then
// merged into one symbol table per column in first-occurrence order (csv_merge).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "assoc/csv.hpp"
#include "assoc/error.hpp"
#include "csv_chunk.hpp"
#include "csv_merge.hpp"
#include "csv_tokenizer.hpp"

namespace assoc {
namespace {

// Chunks smaller than this are not worth a thread of their own.
constexpr std::size_t kMinChunkBytes = 256 * 1024;

using detail::ChunkParser;
using detail::ParsedChunk;

}  // namespace

LoadedTable read_csv(const char* data, std::size_t size, const std::string& table_name, CpuAccount* cpu,
                     CsvQuoting quoting) {
  CpuScope scope(cpu);
  std::size_t start = 0;
  if (size >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0) start = 3;
  const detail::CsvHeader header = detail::read_csv_header(data, size, start, quoting);
  const std::size_t n_cols = header.names.size();

  // Chunks: one per thread, none smaller than kMinChunkBytes. More chunks would even out
  // uneven threads, but every chunk repeats the symbols of high-cardinality columns, which it
  // builds and the merge folds together again: measured, two chunks per thread cost more than
  // they balance.
  const std::size_t body_bytes = size - header.body;
  const std::size_t n_threads = threads();
  std::size_t n_chunks = n_threads <= 1 ? 1 : std::min<std::size_t>(n_threads, body_bytes / kMinChunkBytes);
  n_chunks = std::max<std::size_t>(n_chunks, 1);
  const std::vector<std::size_t> starts = detail::chunk_starts(data, size, header.body, n_chunks, cpu, quoting);

  // Rows to reserve per byte, from the lines of the first 64 KiB.
  const std::size_t sample = std::min<std::size_t>(body_bytes, 1 << 16);
  const auto sample_lines =
      static_cast<std::size_t>(std::count(data + header.body, data + header.body + sample, '\n')) + 1;
  const double rows_per_byte = static_cast<double>(sample_lines) / static_cast<double>(std::max<std::size_t>(sample, 1));

  std::vector<ParsedChunk> chunks(starts.size());
  auto parse_chunk = [&](ParsedChunk& ch) {
    ch.parser = std::make_unique<ChunkParser>(data, size, header.sep, n_cols, quoting);
    const auto expected = static_cast<std::size_t>(static_cast<double>(ch.end - ch.begin) * rows_per_byte * 1.1) + 16;
    ch.stop = ch.parser->parse(ch.begin, ch.end, expected);
  };
  for (std::size_t k = 0; k < starts.size(); ++k) {
    chunks[k].begin = starts[k];
    chunks[k].end = k + 1 < starts.size() ? starts[k + 1] : size;
  }
  parallel_for(chunks.size(), [&](std::size_t k) { parse_chunk(chunks[k]); }, cpu);

  // Check the guesses in order: chunk k started at a record boundary when chunk k-1 ended there.
  // After a wrong guess the rest of the data is parsed again as one chunk.
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const detail::CsvParseError& err = chunks[k].parser->error();
    if (err.offset != detail::kNoError) detail::throw_csv_error(data, size, err, n_cols);
    if (chunks[k].stop != chunks[k].end) {
      chunks.resize(k + 2);
      chunks[k + 1] = ParsedChunk{};
      chunks[k + 1].begin = chunks[k].stop;
      chunks[k + 1].end = size;
      parse_chunk(chunks[k + 1]);
      chunks[k].end = chunks[k].stop;
    }
  }
  chunks.erase(std::remove_if(chunks.begin(), chunks.end(), [](const ParsedChunk& ch) { return ch.begin >= ch.end && ch.parser->rows() == 0; }),
               chunks.end());
  if (chunks.empty()) {
    chunks.emplace_back();
    chunks.back().parser = std::make_unique<ChunkParser>(data, size, header.sep, n_cols, quoting);
  }

  const std::size_t n_chunks_parsed = chunks.size();
  std::vector<std::size_t> row_offsets(n_chunks_parsed + 1, 0);
  for (std::size_t k = 0; k < n_chunks_parsed; ++k) row_offsets[k + 1] = row_offsets[k] + chunks[k].parser->rows();
  const std::size_t n_rows = row_offsets.back();

  LoadedTable table;
  table.name = table_name;
  table.rows = n_rows;
  table.columns.resize(n_cols);
  for (std::size_t c = 0; c < n_cols; ++c) table.columns[c].name = header.names[c];

  detail::merge_chunks(chunks, row_offsets, table, cpu);
  return table;
}

}  // namespace assoc
