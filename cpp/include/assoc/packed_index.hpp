#pragma once
// Per table and field: each row's symbol index, bit-stuffed in the fewest bits that hold
// every symbol index plus NULL.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/dual.hpp"

namespace assoc {

class CpuAccount;

class PackedIndex {
 public:
  PackedIndex() = default;
  // A copy shares the packed bytes: an index is written only while it is made, before anything
  // copies it (a model copied to take a derived column shares every index it had). Writing to
  // an index whose bytes are shared throws Error.
  PackedIndex(const PackedIndex&) = default;
  PackedIndex& operator=(const PackedIndex&) = default;
  PackedIndex(PackedIndex&& other) noexcept { *this = std::move(other); }
  PackedIndex& operator=(PackedIndex&& other) noexcept {
    bytes_ = std::move(other.bytes_);
    data_ = std::exchange(other.data_, nullptr);
    rows_ = std::exchange(other.rows_, 0);
    non_null_ = std::exchange(other.non_null_, 0);
    mask_ = std::exchange(other.mask_, 0);
    width_ = std::exchange(other.width_, 0);
    bias_ = std::exchange(other.bias_, 0);
    return *this;
  }
  ~PackedIndex() = default;

  // Packs symbol indexes (kNull for NULL) of `n` rows; `n_symbols` bounds every index.
  // Worker threads charge their CPU time to `cpu` when one is given.
  static PackedIndex pack(const std::uint32_t* symbols, std::size_t n, std::uint32_t n_symbols,
                          CpuAccount* cpu = nullptr);
  // The layout of one column packed by pack_columns, fixed beforehand (as a file header gives
  // it): every symbol index is below `n_symbols`, and NULL has a code only when `has_null`.
  struct Layout {
    std::uint32_t n_symbols = 0;
    bool has_null = false;
  };
  // Writes the symbol indexes (kNull for NULL) of rows [begin, begin+count) of every column c
  // to out[c].
  using BlockSource = std::function<void(std::size_t begin, std::size_t count, std::uint32_t* const* out)>;
  // Writes the codes of rows [begin, begin+count) of every column c to codes[c] (the symbol
  // index, plus 1 where the layout gives NULL a code, 0 for NULL), its largest code to
  // max_codes[c] and its count of NULLs to nulls[c].
  using CodeSource = std::function<void(std::size_t begin, std::size_t count, std::uint32_t* const* codes,
                                        std::uint32_t* max_codes, std::uint64_t* nulls)>;
  // Packs `n` rows of several columns that `source` produces block by block, in parallel, so
  // the rows are visited once for all columns and no column's indexes are ever held whole.
  // An index outside its column's layout throws Error.
  static std::vector<PackedIndex> pack_columns(std::size_t n, const std::vector<Layout>& layouts,
                                               const BlockSource& source, CpuAccount* cpu = nullptr);
  class ColumnPacker;
  // Bit width needed for codes 0..max_code.
  static std::uint32_t width_for(std::uint64_t max_code);

  // An index of `n` rows to be written with write_rows, for a column whose indexes are known up
  // front: all below `n_symbols` and the highest used, `nulls` rows NULL. The width is the one
  // pack would choose for such rows.
  static PackedIndex for_rows(std::size_t n, std::uint32_t n_symbols, std::size_t nulls);
  // Writes rows [first, first+count) from symbol indexes (kNull for NULL), each first looked up
  // in `remap` when one is given, else raised by `offset`. Each row is written once. Calls on
  // disjoint row ranges may run on several threads at once: whole 64-row blocks are stored, the
  // words of a block shared with another range are or-ed in atomically.
  void write_rows(std::size_t first, std::size_t count, const std::uint32_t* symbols,
                  const std::uint32_t* remap = nullptr, std::uint32_t offset = 0);
  // How write_rows and write_codes turn a row's value into its code: taken as it is, or a
  // symbol index raised by an offset, or looked up in a remap table and raised; kNull is 0.
  enum class RowMap { kCode, kOffset, kRemap };
  // The same for rows whose codes are known already (symbol index + 1 when NULL has a code,
  // 0 for NULL), each below 2^bit_width().
  void write_codes(std::size_t first, std::size_t count, const std::uint32_t* codes);
  // Writes the whole 64-row blocks [first, first+n) from their packed words as they are,
  // bit_width() words a block as decode_blocks reads them: a one-bit column's words are row
  // sets, as match_codes and match_blocks write them. Calls on disjoint blocks may run on
  // several threads at once.
  void write_blocks(std::size_t first, std::size_t n, const std::uint64_t* words);

  std::size_t size() const { return rows_; }
  std::uint32_t bit_width() const { return width_; }
  // True when NULL has a code of its own (code 0; symbols are stored as index + 1).
  bool has_null() const { return bias_ != 0; }
  std::uint64_t non_null_count() const { return non_null_; }
  // The same rows with each symbol index i replaced by remap[i] (NULL stays NULL), packed
  // anew for `n_symbols`: every remap[i] must be below it.
  PackedIndex remapped(const std::vector<std::uint32_t>& remap, std::uint32_t n_symbols,
                       CpuAccount* cpu = nullptr) const;

  // Symbol index of one row, kNull for NULL.
  std::uint32_t get(std::size_t row) const {
    if (width_ == 0) return 0U - bias_;
    const std::size_t bit = row * width_;
    std::uint64_t w;
    std::memcpy(&w, data_ + (bit >> 3), sizeof w);
    return static_cast<std::uint32_t>((w >> (bit & 7)) & mask_) - bias_;
  }
  // Decodes rows [begin, begin+count) to symbol indexes (kNull for NULL) — branch-free per value.
  // Whole 64-row blocks go through decode_blocks.
  void decode(std::size_t begin, std::size_t count, std::uint32_t* out) const;
  // Asks the CPU to bring rows [begin, begin+count)'s bytes into its second-level cache ahead
  // of their decoding (rows past the last are left out). A pass that decodes chunk after chunk
  // and works on each in between asks for a chunk or two ahead: the hardware's own stream
  // prefetch stops while the work runs, and each chunk's loads would otherwise wait on memory.
  void prefetch(std::size_t begin, std::size_t count) const {
    const std::size_t end = rows_ - begin < count ? rows_ : begin + count;  // begin past the last: none
    const std::size_t first = begin * width_ / 8;
    const std::size_t lines = begin < end ? ((end * width_ + 7) / 8 - first + 63) / 64 : 0;
    const std::uint8_t* at = data_ + first;
    for (std::size_t i = 0; i < lines; ++i) {
#if defined(__x86_64__) && defined(__GNUC__)
      // As an instruction of its own: GCC 12 drops a __builtin_prefetch loop under a condition.
      asm volatile("prefetcht1 %0" : : "m"(at[64 * i]));
#else
      __builtin_prefetch(at + 64 * i, 0, 2);
#endif
    }
  }
  // Decodes rows [begin, begin+count) to signed codes: the symbol index, -1 for NULL.
  void decode_signed(std::size_t begin, std::size_t count, std::int64_t* out) const;
  // Decodes the 64-row blocks [first, first+n) (rows first*64 …), which must lie within
  // size(): a block of width w is w whole 64-bit words, read with shifts fixed per width.
  void decode_blocks(std::size_t first, std::size_t n, std::uint32_t* out) const;
  // Which rows of the whole 64-row blocks [first, first+n) hold a symbol of a set, one word
  // per block (bit j: row j of the block). The set is a bitset with an entry for index
  // `n_symbols` (where NULL lands) that must be 0. Decoding and look-up are fused per width, so
  // no row's index is stored on the way.
  void match_blocks(std::size_t first, std::size_t n, const std::uint64_t* set_bits, std::uint32_t n_symbols,
                    std::uint64_t* out) const;
  // Widest column whose codes a code set (below) covers: 2^17 bytes, one per code.
  static constexpr std::uint32_t kMaxCodeSetWidth = 17;
  // A set of symbols (bits for indexes below `n_symbols`) as one 0/1 byte per stored code,
  // 2^bit_width() of them: the code of NULL and codes no symbol has are 0. Only for columns of
  // bit_width() <= kMaxCodeSetWidth.
  std::vector<std::uint8_t> code_set(const std::uint64_t* symbol_bits, std::uint32_t n_symbols) const;
  // match_blocks with a code set: one look-up per row of the code as stored (no bias, no
  // clamp); widths 1, 2 and 4 look up a whole byte's rows at once.
  void match_codes(std::size_t first, std::size_t n, const std::uint8_t* code_set, std::uint64_t* out) const;

  // Bytes of the packed data (allocated capacity), counted once for each index that shares them.
  std::size_t byte_size() const { return bytes_ ? bytes_->capacity() : 0; }
  const std::uint8_t* data() const { return data_; }
  // Whether this index and `other` share their packed bytes (one is a copy of the other).
  bool shares_bytes_with(const PackedIndex& other) const { return bytes_ != nullptr && bytes_ == other.bytes_; }

 private:
  // write_rows and write_codes: rows [first, first+count) mapped to codes as `M` says.
  template <RowMap M>
  void write_mapped(std::size_t first, std::size_t count, const std::uint32_t* rows, const std::uint32_t* remap,
                    std::uint32_t add);

  using Bytes = std::vector<std::uint8_t, CallocAllocator<std::uint8_t>>;
  // How many of the whole blocks [first, first+n) a vector kernel may read: loads of 16 bytes
  // from within a block must end within the bytes (the last block's may not).
  std::size_t vector_blocks(std::size_t first, std::size_t n) const;
  // New packed bytes of `size`, zero unless allocated under big_blocks::Uncleared.
  void allocate(std::size_t size);
  // The bytes to write to; throws Error when a copy shares them.
  std::uint8_t* writable();

  // rows_*width_ bits, plus 8 bytes of slack for 64-bit loads; shared by copies
  std::shared_ptr<Bytes> bytes_;
  std::uint8_t* data_ = nullptr;  // bytes_->data()
  std::size_t rows_ = 0;
  std::uint64_t non_null_ = 0;
  std::uint64_t mask_ = 0;
  std::uint32_t width_ = 0;
  std::uint32_t bias_ = 0;
};

// pack_columns in steps: the columns are laid out up front, then row ranges are packed as their
// source can produce them (a file still arriving), then finish() checks and hands them over.
class PackedIndex::ColumnPacker {
 public:
  ColumnPacker(std::size_t n, std::vector<Layout> layouts);
  // Packs rows [begin, end) in parallel; `begin` is a multiple of 64 and so is `end`, unless it
  // is the last row. Each row is packed once; calls for disjoint ranges may not overlap in time.
  void pack(std::size_t begin, std::size_t end, const BlockSource& source, CpuAccount* cpu = nullptr);
  // The same from a source that gives the codes themselves (no pass over them to add the bias).
  void pack_codes(std::size_t begin, std::size_t end, const CodeSource& source, CpuAccount* cpu = nullptr);
  // Column c's bytes and bit width, for a source that stores the packed bits itself.
  std::uint8_t* column_bytes(std::size_t c) { return out_[c].writable(); }
  std::uint32_t column_width(std::size_t c) const { return out_[c].width_; }
  // Writes rows [begin, begin+count) of every column c itself: row r's code at bit
  // r * column_width(c) of column_bytes(c), each word of a whole 64-row block stored whole, the
  // bits of the rows after the last whole block or-ed in; gives each column's largest code and
  // its count of NULLs (codes 0 where the layout gives NULL a code).
  using WordSource =
      std::function<void(std::size_t begin, std::size_t count, std::uint32_t* max_codes, std::uint64_t* nulls)>;
  // pack_codes for such a source: no codes are held between decoding and packing.
  void pack_words(std::size_t begin, std::size_t end, const WordSource& source, CpuAccount* cpu = nullptr);
  // The packed columns once every row is packed; an index outside its column's layout throws Error.
  std::vector<PackedIndex> finish();

 private:
  std::size_t n_;
  std::size_t block_;
  std::vector<Layout> layouts_;
  std::vector<PackedIndex> out_;
  std::vector<std::uint64_t> nulls_;
  std::vector<bool> out_of_range_;
};

// Whether vector kernels may run: ASSOC_SIMD=0 in the environment says no (the portable code
// then runs everywhere; the tests run both). Each kernel also asks the CPU for its extensions.
bool simd_allowed();
// Whether AVX2 kernels may run: the CPU (and its OS) runs AVX2 and simd_allowed().
bool avx2_kernels();
// Whether AVX-512 kernels may run: not with ASSOC_SIMD=0, nor with ASSOC_SIMD=avx2 (the AVX2
// kernels then run where the CPU has both, as on one without AVX-512; the tests run them so).
bool avx512_allowed();

}  // namespace assoc
