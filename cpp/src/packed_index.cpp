#include "assoc/packed_index.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <mutex>
#include <string>
#include <utility>

#include "assoc/error.hpp"
#include "assoc/thread_pool.hpp"
#include "packed_index_x86.hpp"

namespace assoc {
namespace {

// Rows per block when packing from a source: a multiple of 64, so blocks share no word.
constexpr std::size_t kPackBlock = 4096;

}  // namespace

std::uint32_t PackedIndex::width_for(std::uint64_t max_code) {
  std::uint32_t w = 0;
  while (w < 64 && (max_code >> w) != 0) ++w;
  return w;
}

PackedIndex PackedIndex::remapped(const std::vector<std::uint32_t>& remap, std::uint32_t n_symbols,
                                  CpuAccount* cpu) const {
  std::vector<std::uint32_t> rows(rows_);
  parallel_ranges(
      rows_, 1,
      [&](std::size_t b, std::size_t e) {
        decode(b, e - b, rows.data() + b);
        for (std::size_t i = b; i < e; ++i) rows[i] = rows[i] == kNull ? kNull : remap[rows[i]];
      },
      cpu);
  return pack(rows.data(), rows_, n_symbols, cpu);
}

PackedIndex PackedIndex::pack(const std::uint32_t* symbols, std::size_t n, std::uint32_t n_symbols,
                              CpuAccount* cpu) {
  // Pass 1: bounds and NULLs, per chunk in parallel.
  std::atomic<std::uint64_t> nulls{0};
  std::atomic<bool> out_of_range{false};
  std::atomic<std::uint32_t> max_symbol{0};
  parallel_ranges(n, 1, [&](std::size_t b, std::size_t e) {
    std::uint64_t local_nulls = 0;
    std::uint32_t local_max = 0;
    bool bad = false;
    for (std::size_t i = b; i < e; ++i) {
      const std::uint32_t s = symbols[i];
      const bool is_null = s == kNull;
      local_nulls += is_null;
      bad |= !is_null & (s >= n_symbols);
      local_max = std::max(local_max, is_null ? 0U : s);
    }
    nulls.fetch_add(local_nulls, std::memory_order_relaxed);
    std::uint32_t seen = max_symbol.load(std::memory_order_relaxed);
    while (local_max > seen && !max_symbol.compare_exchange_weak(seen, local_max)) {
    }
    if (bad) out_of_range.store(true, std::memory_order_relaxed);
  }, cpu);
  if (out_of_range.load()) throw Error("symbol index out of range for a field with " + std::to_string(n_symbols) + " symbols");

  PackedIndex p = for_rows(n, n == nulls.load() ? 0 : max_symbol.load() + 1, nulls.load());
  if (p.width_ == 0) return p;
  // Ranges of whole 64-row blocks: each block is stored by one task, none shared.
  parallel_ranges(n, 64, [&](std::size_t b, std::size_t e) { p.write_rows(b, e - b, symbols + b); }, cpu);
  return p;
}

PackedIndex PackedIndex::for_rows(std::size_t n, std::uint32_t n_symbols, std::size_t nulls) {
  PackedIndex p;
  p.rows_ = n;
  p.non_null_ = n - nulls;
  p.bias_ = nulls > 0 ? 1U : 0U;
  // The fewest bits that hold every index this column uses, plus NULL's code when it has NULLs.
  const std::uint64_t max_code = p.non_null_ == 0 || n_symbols == 0 ? 0 : std::uint64_t{n_symbols} - 1 + p.bias_;
  p.width_ = width_for(max_code);
  p.mask_ = p.width_ == 0 ? 0 : ((std::uint64_t{1} << p.width_) - 1);
  const std::size_t data_bytes = (n * p.width_ + 7) / 8;
  p.allocate(data_bytes + 8);  // zero, untouched until written
  return p;
}

std::vector<PackedIndex> PackedIndex::pack_columns(std::size_t n, const std::vector<Layout>& layouts,
                                                   const BlockSource& source, CpuAccount* cpu) {
  ColumnPacker packer(n, layouts);
  packer.pack(0, n, source, cpu);
  return packer.finish();
}

PackedIndex::ColumnPacker::ColumnPacker(std::size_t n, std::vector<Layout> layouts)
    : n_(n), layouts_(std::move(layouts)), out_(layouts_.size()), nulls_(layouts_.size(), 0),
      out_of_range_(layouts_.size(), false) {
  const std::size_t n_columns = layouts_.size();
  for (std::size_t c = 0; c < n_columns; ++c) {
    PackedIndex& p = out_[c];
    p.rows_ = n;
    p.bias_ = layouts_[c].has_null ? 1U : 0U;
    const std::uint32_t n_symbols = layouts_[c].n_symbols;
    const std::uint64_t max_code = n_symbols == 0 ? 0 : std::uint64_t{n_symbols} - 1 + p.bias_;
    p.width_ = width_for(max_code);
    p.mask_ = p.width_ == 0 ? 0 : ((std::uint64_t{1} << p.width_) - 1);
    // Whole 64-row blocks are stored whole below; the rows after the last one are or-ed in,
    // so only their bytes (and the slack) must start at zero.
    const std::size_t size = (n * p.width_ + 7) / 8 + 8;
    {
      big_blocks::Uncleared whole_blocks_are_written_below;
      p.allocate(size);
    }
    const std::size_t whole = n / 64 * 8 * p.width_;
    std::memset(p.data_ + whole, 0, size - whole);
  }
  // Blocks of up to kPackBlock rows, fewer when there are many columns, so a task's buffer
  // stays near 1 MiB; always whole 64-row blocks, which write_rows stores without sharing.
  const std::size_t per_column = (std::size_t{1} << 18) / std::max<std::size_t>(1, n_columns);
  block_ = std::clamp<std::size_t>(per_column / 64 * 64, 64, kPackBlock);
}

void PackedIndex::ColumnPacker::pack(std::size_t begin, std::size_t end, const BlockSource& source,
                                     CpuAccount* cpu) {
  pack_codes(
      begin, end,
      [&](std::size_t b, std::size_t k, std::uint32_t* const* codes, std::uint32_t* max_codes,
          std::uint64_t* nulls) {
        source(b, k, codes);
        for (std::size_t c = 0; c < layouts_.size(); ++c) {
          const std::uint32_t bias = out_[c].bias_;
          // Codes are index + bias, kNull + 1 wrapping to 0; without a NULL code kNull stays
          // 0xFFFFFFFF, above any limit.
          std::uint32_t* col = codes[c];
          std::uint32_t max_code = 0, zeros = 0;  // a loop the compiler vectorises
          for (std::size_t i = 0; i < k; ++i) {
            const std::uint32_t code = col[i] + bias;
            col[i] = code;
            max_code = std::max(max_code, code);
            zeros += code == 0;
          }
          max_codes[c] = max_code;
          nulls[c] = bias ? zeros : 0;
        }
      },
      cpu);
}

void PackedIndex::ColumnPacker::pack_codes(std::size_t begin, std::size_t end, const CodeSource& source,
                                           CpuAccount* cpu) {
  const std::size_t n_columns = layouts_.size();
  const std::size_t block = block_;
  std::mutex totals;
  parallel_ranges(end - begin, block, [&](std::size_t b0, std::size_t e0) {
    const std::size_t b = begin + b0, e = begin + e0;
    std::vector<std::uint32_t> buffer(n_columns * block);
    std::vector<std::uint32_t*> codes(n_columns);
    for (std::size_t c = 0; c < n_columns; ++c) codes[c] = buffer.data() + c * block;
    std::vector<std::uint32_t> max_codes(n_columns);
    std::vector<std::uint64_t> block_nulls(n_columns);
    std::vector<std::uint64_t> local_nulls(n_columns, 0);
    std::vector<std::uint8_t> bad(n_columns, 0);
    bool any_bad = false;
    for (std::size_t r = b; r < e && !any_bad; r += block) {
      const std::size_t k = std::min(block, e - r);
      source(r, k, codes.data(), max_codes.data(), block_nulls.data());
      for (std::size_t c = 0; c < n_columns; ++c) {
        // Every valid code is below the layout's symbols plus NULL's code.
        if (max_codes[c] >= layouts_[c].n_symbols + out_[c].bias_) {
          bad[c] = 1;
          any_bad = true;
        } else {
          out_[c].write_codes(r, k, codes[c]);
          local_nulls[c] += block_nulls[c];
        }
      }
    }
    std::lock_guard<std::mutex> lock(totals);
    for (std::size_t c = 0; c < n_columns; ++c) {
      nulls_[c] += local_nulls[c];
      if (bad[c]) out_of_range_[c] = true;
    }
  }, cpu);
}

void PackedIndex::ColumnPacker::pack_words(std::size_t begin, std::size_t end, const WordSource& source,
                                           CpuAccount* cpu) {
  const std::size_t n_columns = layouts_.size();
  std::mutex totals;
  parallel_ranges(end - begin, block_, [&](std::size_t b0, std::size_t e0) {
    std::vector<std::uint32_t> max_codes(n_columns);
    std::vector<std::uint64_t> block_nulls(n_columns);
    std::vector<std::uint64_t> local_nulls(n_columns, 0);
    std::vector<std::uint8_t> bad(n_columns, 0);
    bool any_bad = false;
    for (std::size_t r = begin + b0; r < begin + e0 && !any_bad; r += block_) {
      const std::size_t k = std::min(block_, begin + e0 - r);
      source(r, k, max_codes.data(), block_nulls.data());
      for (std::size_t c = 0; c < n_columns; ++c) {
        if (max_codes[c] >= layouts_[c].n_symbols + out_[c].bias_) {
          bad[c] = 1;
          any_bad = true;
        }
        local_nulls[c] += block_nulls[c];
      }
    }
    std::lock_guard<std::mutex> lock(totals);
    for (std::size_t c = 0; c < n_columns; ++c) {
      nulls_[c] += local_nulls[c];
      if (bad[c]) out_of_range_[c] = true;
    }
  }, cpu);
}

std::vector<PackedIndex> PackedIndex::ColumnPacker::finish() {
  for (std::size_t c = 0; c < layouts_.size(); ++c) {
    if (out_of_range_[c])
      throw Error("column " + std::to_string(c + 1) + ": a symbol index out of range for " +
                  std::to_string(layouts_[c].n_symbols) + " symbols" +
                  (layouts_[c].has_null ? "" : ", or a NULL where the column has none"));
    out_[c].non_null_ = n_ - nulls_[c];
  }
  return std::move(out_);
}

void PackedIndex::decode_signed(std::size_t begin, std::size_t count, std::int64_t* out) const {
  constexpr std::size_t kBlock = 4096;
  std::uint32_t tmp[kBlock];
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t k = std::min(kBlock, count - b);
    decode(begin + b, k, tmp);
    for (std::size_t i = 0; i < k; ++i) out[b + i] = tmp[i] == kNull ? -1 : static_cast<std::int64_t>(tmp[i]);
  }
}

void PackedIndex::decode(std::size_t begin, std::size_t count, std::uint32_t* out) const {
  const std::uint32_t bias = bias_;
  if (width_ == 0) {
    std::fill(out, out + count, 0U - bias);
    return;
  }
  // Whole blocks in the middle of the range take the fixed-shift path.
  const std::size_t first_block = (begin + 63) / 64;
  const std::size_t end_block = (begin + count) / 64;
  if (end_block > first_block) {
    const std::size_t head = first_block * 64 - begin;
    decode(begin, head, out);
    decode_blocks(first_block, end_block - first_block, out + head);
    const std::size_t done = end_block * 64 - begin;
    begin += done;
    count -= done;
    out += done;
  }
  const std::uint8_t* data = data_;
  const std::uint64_t mask = mask_;
  const std::size_t w = width_;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t bit = (begin + i) * w;
    std::uint64_t x;
    std::memcpy(&x, data + (bit >> 3), sizeof x);
    out[i] = static_cast<std::uint32_t>((x >> (bit & 7)) & mask) - bias;
  }
}

}  // namespace assoc

namespace assoc {
namespace {

// Code j of a 64-row block of width W held in the words w[0 .. W): with W and j fixed (the
// callers' loops are unrolled) every shift is a constant.
template <unsigned W>
inline std::uint32_t block_code(const std::uint64_t* w, unsigned j) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << W) - 1;
  const unsigned bit = j * W;
  const unsigned k = bit >> 6;
  const unsigned shift = bit & 63;
  std::uint64_t v = w[k] >> shift;
  if (shift + W > 64) v |= w[(k + 1) % W] << ((64 - shift) & 63);
  return static_cast<std::uint32_t>(v & kMask);
}

// 64 rows of width W are W little-endian 64-bit words; with W fixed every shift is a constant.
template <unsigned W>
void decode_blocks_of_width(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias,
                            std::uint32_t* out) {
  for (std::size_t b = 0; b < n; ++b) {
    std::uint64_t w[W];
    std::memcpy(w, data + (first + b) * 8 * W, sizeof w);
    std::uint32_t* o = out + b * 64;
#pragma GCC unroll 64
    for (unsigned j = 0; j < 64; ++j) o[j] = block_code<W>(w, j) - bias;
  }
}

using RowMap = PackedIndex::RowMap;

template <RowMap M>
inline std::uint64_t row_code(std::uint32_t s, const std::uint32_t* remap, std::uint32_t add) {
  if constexpr (M == RowMap::kCode) {
    return s;
  } else {
    if (s == kNull) return 0;
    return static_cast<std::uint32_t>((M == RowMap::kRemap ? remap[s] : s) + add);
  }
}

// Stores the 64-row blocks [first, first+n), whole, from rows[0 .. 64n). 64 codes of W bits
// fill exactly W words; with W fixed and the loop unrolled, every shift and word boundary is a
// constant, and each word is stored once, when it is full.
template <unsigned W, RowMap M>
void write_blocks_of_width(std::uint8_t* data, std::size_t first, std::size_t n, const std::uint32_t* rows,
                           const std::uint32_t* remap, std::uint32_t add) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << W) - 1;
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint32_t* r = rows + b * 64;
    std::uint8_t* out = data + (first + b) * 8 * W;
    std::uint64_t acc = 0;
    unsigned bits = 0;
#pragma GCC unroll 64
    for (unsigned j = 0; j < 64; ++j) {
      // Codes given as such are below 2^W already (write_codes' contract).
      const std::uint64_t code = M == RowMap::kCode ? r[j] : row_code<M>(r[j], remap, add) & kMask;
      acc |= code << bits;
      bits += W;
      if (bits >= 64) {
        std::memcpy(out, &acc, 8);
        out += 8;
        bits -= 64;
        acc = bits == 0 ? 0 : code >> (W - bits);  // the code's bits that did not fit
      }
    }
  }
}

using BlockWriter = void (*)(std::uint8_t*, std::size_t, std::size_t, const std::uint32_t*, const std::uint32_t*,
                             std::uint32_t);

template <RowMap M, unsigned... Ws>
constexpr auto block_writers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockWriter, sizeof...(Ws)>{&write_blocks_of_width<Ws + 1, M>...};
}

template <RowMap M>
constexpr auto kBlockWriters = block_writers<M>(std::make_integer_sequence<unsigned, 32>{});

// Or-s one code into place, atomically: the word may be shared with another writer.
inline void or_code(std::uint8_t* data, std::size_t row, std::uint32_t w, std::uint64_t code) {
  const std::size_t bit = row * w;
  auto* word = reinterpret_cast<std::uint64_t*>(data + (bit >> 6) * 8);
  const unsigned shift = bit & 63;
  if (code == 0) return;
  __atomic_fetch_or(word, code << shift, __ATOMIC_RELAXED);
  if (shift + w > 64) __atomic_fetch_or(word + 1, code >> (64 - shift), __ATOMIC_RELAXED);
}

using BlockDecoder = void (*)(const std::uint8_t*, std::size_t, std::size_t, std::uint32_t, std::uint32_t*);

template <unsigned... Ws>
constexpr auto block_decoders(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockDecoder, sizeof...(Ws)>{&decode_blocks_of_width<Ws + 1>...};
}

constexpr auto kBlockDecoders = block_decoders(std::make_integer_sequence<unsigned, 32>{});

// Set membership of a symbol index as a bit; indexes past the last symbol (NULL) clamp to the
// set's extra entry, so no value needs a branch.
struct BitSet {
  const std::uint64_t* bits;
  std::uint32_t limit;
  std::uint8_t operator()(std::uint32_t x) const {
    x = std::min(x, limit);
    return static_cast<std::uint8_t>((bits[x >> 6] >> (x & 63)) & 1U);
  }
};

// Packs 64 bytes, each 0 or 1, into one word (byte j to bit j): eight bytes per multiply.
inline std::uint64_t pack_bytes(const std::uint8_t* bytes) {
  std::uint64_t word = 0;
  for (unsigned k = 0; k < 8; ++k) {
    std::uint64_t y;
    std::memcpy(&y, bytes + 8 * k, sizeof y);
    word |= ((y * 0x0102040810204080ULL) >> 56) << (8 * k);
  }
  return word;
}

template <unsigned W, class Set>
void match_blocks_of_width(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias, Set set,
                           std::uint64_t* out) {
  for (std::size_t b = 0; b < n; ++b) {
    std::uint64_t w[W];
    std::memcpy(w, data + (first + b) * 8 * W, sizeof w);
    std::uint8_t member[64];
#pragma GCC unroll 64
    for (unsigned j = 0; j < 64; ++j) member[j] = set(block_code<W>(w, j) - bias);
    out[b] = pack_bytes(member);
  }
}

template <class Set>
using BlockMatcher = void (*)(const std::uint8_t*, std::size_t, std::size_t, std::uint32_t, Set, std::uint64_t*);

template <class Set, unsigned... Ws>
constexpr auto block_matchers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockMatcher<Set>, sizeof...(Ws)>{&match_blocks_of_width<Ws + 1, Set>...};
}

template <class Set>
void match_blocks_with(const PackedIndex& index, std::size_t first, std::size_t n, Set set, std::uint64_t* out) {
  static constexpr auto kMatchers = block_matchers<Set>(std::make_integer_sequence<unsigned, 32>{});
  if (n == 0) return;
  if ((first + n) * 64 > index.size()) throw Error("internal: match_blocks past the last whole block");
  const std::uint32_t bias = index.has_null() ? 1U : 0U;
  if (index.bit_width() == 0) {
    std::fill(out, out + n, set(0U - bias) ? ~std::uint64_t{0} : 0);
    return;
  }
  kMatchers[index.bit_width() - 1](index.data(), first, n, bias, set, out);
}

// Code j of a 64-row block of width W read straight from the block's bytes (each word loaded
// where it is used, so that the W words need not stay in registers).
template <unsigned W>
inline std::uint32_t code_at(const std::uint8_t* block, unsigned j) {
  constexpr std::uint64_t kMask = (std::uint64_t{1} << W) - 1;
  const unsigned bit = j * W;
  const unsigned k = bit >> 6;
  const unsigned shift = bit & 63;
  std::uint64_t lo;
  std::memcpy(&lo, block + 8 * k, sizeof lo);
  std::uint64_t v = lo >> shift;
  if (shift + W > 64) {
    std::uint64_t hi;
    std::memcpy(&hi, block + 8 * (k + 1), sizeof hi);
    v |= hi << ((64 - shift) & 63);
  }
  return static_cast<std::uint32_t>(v & kMask);
}

// match_codes for width W: one look-up of the stored code per row, no bias and no clamp. Widths
// that divide a byte (1, 2, 4) look up a whole byte's codes at once in a table of 256 masks.
template <unsigned W>
void match_codes_of_width(const std::uint8_t* data, std::size_t first, std::size_t n, const std::uint8_t* code_set,
                          std::uint64_t* out) {
  if constexpr (W == 1 || W == 2 || W == 4) {
    constexpr unsigned kPerByte = 8 / W;
    std::uint8_t by_byte[256];
    for (unsigned x = 0; x < 256; ++x) {
      unsigned m = 0;
      for (unsigned k = 0; k < kPerByte; ++k) m |= unsigned{code_set[(x >> (k * W)) & ((1U << W) - 1)]} << k;
      by_byte[x] = static_cast<std::uint8_t>(m);
    }
    for (std::size_t b = 0; b < n; ++b) {
      const std::uint8_t* block = data + (first + b) * 8 * W;
      std::uint64_t word = 0;
#pragma GCC unroll 32
      for (unsigned k = 0; k < 8 * W; ++k) word |= std::uint64_t{by_byte[block[k]]} << (k * kPerByte);
      out[b] = word;
    }
  } else {
    for (std::size_t b = 0; b < n; ++b) {
      const std::uint8_t* block = data + (first + b) * 8 * W;
      std::uint64_t lo = 0, hi = 0;
#pragma GCC unroll 32
      for (unsigned j = 0; j < 32; ++j) lo |= std::uint64_t{code_set[code_at<W>(block, j)]} << j;
#pragma GCC unroll 32
      for (unsigned j = 32; j < 64; ++j) hi |= std::uint64_t{code_set[code_at<W>(block, j)]} << j;
      out[b] = lo | hi;
    }
  }
}

using CodeMatcher = void (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t*, std::uint64_t*);

template <unsigned... Ws>
constexpr auto code_matchers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<CodeMatcher, sizeof...(Ws)>{&match_codes_of_width<Ws + 1>...};
}

constexpr auto kCodeMatchers = code_matchers(std::make_integer_sequence<unsigned, PackedIndex::kMaxCodeSetWidth>{});

}  // namespace

std::vector<std::uint8_t> PackedIndex::code_set(const std::uint64_t* symbol_bits, std::uint32_t n_symbols) const {
  if (width_ > kMaxCodeSetWidth) throw Error("internal: code_set of a column too wide for one");
  std::vector<std::uint8_t> out(std::size_t{1} << width_, 0);
  const std::size_t words = (std::size_t{n_symbols} + 63) / 64;
  for (std::size_t w = 0; w < words; ++w) {
    for (std::uint64_t x = symbol_bits[w]; x != 0; x &= x - 1) {
      const std::size_t s = w * 64 + static_cast<std::size_t>(std::countr_zero(x));
      const std::size_t code = s + bias_;
      if (s < n_symbols && code < out.size()) out[code] = 1;
    }
  }
  return out;
}

void PackedIndex::match_codes(std::size_t first, std::size_t n, const std::uint8_t* code_set, std::uint64_t* out) const {
  if (n == 0) return;
  if ((first + n) * 64 > rows_) throw Error("internal: match_codes past the last whole block");
  if (width_ == 0) {
    std::fill(out, out + n, code_set[0] != 0 ? ~std::uint64_t{0} : 0);
    return;
  }
  const std::size_t k = detail::vector_match(data_, width_, first, n, vector_blocks(first, n), code_set, out);
  kCodeMatchers[width_ - 1](data_, first + k, n - k, code_set, out + k);
}

void PackedIndex::match_blocks(std::size_t first, std::size_t n, const std::uint64_t* set_bits,
                               std::uint32_t n_symbols, std::uint64_t* out) const {
  match_blocks_with(*this, first, n, BitSet{set_bits, n_symbols}, out);
}

template <PackedIndex::RowMap M>
void PackedIndex::write_mapped(std::size_t first, std::size_t count, const std::uint32_t* rows,
                               const std::uint32_t* remap, std::uint32_t add) {
  if (count == 0 || width_ == 0) return;
  if (first > rows_ || count > rows_ - first) throw Error("internal: write_rows past the last row");
  const std::uint32_t w = width_;
  std::uint8_t* data = writable();
  auto or_rows = [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) or_code(data, r, w, row_code<M>(rows[r - first], remap, add) & mask_);
  };
  const std::size_t end = first + count;
  const std::size_t block_begin = std::min(end, (first + 63) / 64 * 64);
  const std::size_t block_end = std::max(block_begin, end / 64 * 64);
  or_rows(first, block_begin);
  if (block_end > block_begin)
    kBlockWriters<M>[w - 1](data, block_begin / 64, (block_end - block_begin) / 64, rows + (block_begin - first),
                            remap, add);
  or_rows(block_end, end);
}

void PackedIndex::write_rows(std::size_t first, std::size_t count, const std::uint32_t* symbols,
                             const std::uint32_t* remap, std::uint32_t offset) {
  if (remap != nullptr) {
    write_mapped<RowMap::kRemap>(first, count, symbols, remap, bias_);
  } else {
    write_mapped<RowMap::kOffset>(first, count, symbols, nullptr, bias_ + offset);
  }
}

void PackedIndex::write_codes(std::size_t first, std::size_t count, const std::uint32_t* codes) {
  write_mapped<RowMap::kCode>(first, count, codes, nullptr, 0);
}

void PackedIndex::allocate(std::size_t size) {
  bytes_ = std::make_shared<Bytes>(size);
  data_ = bytes_->data();
}

std::uint8_t* PackedIndex::writable() {
  if (bytes_ == nullptr || bytes_.use_count() > 1) throw Error("internal: a packed index written after it was copied");
  return data_;
}

void PackedIndex::write_blocks(std::size_t first, std::size_t n, const std::uint64_t* words) {
  if ((first + n) * 64 > rows_) throw Error("internal: write_blocks past the last whole block");
  if (n != 0 && width_ != 0) std::memcpy(writable() + first * 8 * width_, words, n * 8 * width_);
}

void PackedIndex::decode_blocks(std::size_t first, std::size_t n, std::uint32_t* out) const {
  if (n == 0) return;
  if ((first + n) * 64 > rows_) throw Error("internal: decode_blocks past the last whole block");
  if (width_ == 0) {
    std::fill(out, out + n * 64, 0U - bias_);
    return;
  }
  const std::size_t k = detail::vector_decode(data_, width_, first, n, vector_blocks(first, n), bias_, out);
  kBlockDecoders[width_ - 1](data_, first + k, n - k, bias_, out + k * 64);
}

std::size_t PackedIndex::vector_blocks(std::size_t first, std::size_t n) const {
  // A group's loads read up to 16 bytes from within its block (the bytes end 8 past the rows).
  const std::size_t end = bytes_ != nullptr ? bytes_->size() : 0;
  while (n > 0 && (first + n) * 8 * width_ + 16 > end) --n;
  return n;
}

}  // namespace assoc
