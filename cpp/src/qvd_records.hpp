#pragma once
// QVD records: per row, each field's symbol index at a fixed bit offset of a fixed-size
// record. A field's value is (record >> BitOffset) & mask, read as one 8-byte load at a fixed
// byte of the record; symbol = value + Bias, and a negative symbol is NULL.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "assoc/packed_index.hpp"
#include "assoc/thread_pool.hpp"
#include "qvd_header.hpp"

namespace assoc::detail {

// The records after the header (`body` = the bytes after its NUL, layout checked) as one packed
// index per field, with a code for NULL only where a row is NULL and the fewest bits that hold
// the symbols the rows use. Throws Error when a row names a symbol its field lacks.
std::vector<PackedIndex> read_qvd_records(const TableHeader& h, const std::uint8_t* body, CpuAccount* cpu);

// How one field's symbol index is read from a record.
struct FieldDecoder {
  std::size_t byte = 0;     // first byte of the 8-byte load, from the record's start
  std::uint32_t shift = 0;  // bit position of the value in the load
  std::uint64_t mask = 0;
  std::int64_t bias = 0;
  std::uint64_t n_symbols = 0;
  bool constant = false;        // BitWidth 0: the same symbol (or NULL) on every row
  std::uint32_t constant_symbol = kNull;
};

// How the packing decoder reads one field: the stored value is (word >> shift) & mask, where
// `word` is the 8-byte load at byte bytes[group] of the record; its code is max(value + add, 0),
// which is 0 for NULL when `nullable`. A constant field has mask 0 and its code in `add`.
struct FieldWords {
  std::size_t group = 0;
  std::uint32_t shift = 0;
  std::uint64_t mask = 0;
  std::int64_t add = 0;
  bool nullable = false;
};

// read_qvd_records in steps, for records still arriving: rows are decoded range by range once
// their bytes are present, then finish() gives the indexes.
class QvdRecordReader {
 public:
  // `h` and `body` (whose layout is checked, though its bytes may not all be there yet) must
  // outlive the reader.
  QvdRecordReader(const TableHeader& h, const std::uint8_t* body);
  QvdRecordReader(const QvdRecordReader&) = delete;
  QvdRecordReader& operator=(const QvdRecordReader&) = delete;

  std::size_t rows() const { return rows_; }
  // Decodes rows [decoded(), end): `end` is a multiple of 64 or rows(), and the bytes of rows
  // below min(rows(), end + ready_margin()) must be present.
  void decode(std::size_t end, CpuAccount* cpu);
  std::size_t decoded() const { return decoded_; }
  // Rows past a range whose bytes a decode may read (a short record's 8-byte load).
  static constexpr std::size_t ready_margin() { return 8; }
  // The packed indexes, once every row is decoded.
  std::vector<PackedIndex> finish(CpuAccount* cpu);

 private:
  // Rows [begin, begin+count) of field f as packed-index codes, their largest code and NULLs;
  // throws naming the first row whose symbol index is past the field's symbols.
  void decode_block(std::size_t f, std::size_t begin, std::size_t count, std::uint32_t* out, std::uint32_t& max_code,
                    std::uint64_t& nulls);
  // Rows [begin, begin+count) as at most two runs of whole records: fn(first record, the run's
  // first row counted from `begin`, rows), the rows before the padded tail read from the file,
  // those in it from the copy.
  template <class Fn>
  void record_runs(std::size_t begin, std::size_t count, Fn&& fn) const;
  // The first byte of row r's record: in the file, or in the padded copy of the last rows.
  const std::uint8_t* record(std::size_t r) const {
    return r < safe_rows_ ? records_ + r * record_bytes_ : tail_.data() + (r - safe_rows_) * record_bytes_;
  }
  // Rows [begin, begin+count) decoded and packed in one pass (pack_words' source), four
  // 64-row blocks at a time, one block per vector lane.
  void pack_rows(std::size_t begin, std::size_t count, std::uint32_t* max_codes, std::uint64_t* nulls);
  // Loads the 8-byte words of the four blocks from row r (the last `4 - lanes` blocks absent:
  // zero) into words[g * 256 + 4 * j + lane], for each load group g.
  void load_lanes(std::size_t r, std::size_t lanes, std::uint64_t* words) const;

  const TableHeader& h_;
  const std::uint8_t* records_;
  std::size_t rows_, record_bytes_, safe_rows_, decoded_ = 0;
  std::vector<FieldDecoder> decoders_;
  // For pack_rows: the byte of each load group, and each field's place in them; empty when
  // a column is too wide for it (then decode packs through codes).
  std::vector<std::size_t> group_bytes_;
  std::vector<FieldWords> field_words_;
  std::vector<PackedIndex::Layout> layouts_;
  std::vector<std::uint8_t> tail_;
  std::vector<std::atomic<std::int64_t>> max_symbol_;
  PackedIndex::ColumnPacker packer_;
};

}  // namespace assoc::detail
