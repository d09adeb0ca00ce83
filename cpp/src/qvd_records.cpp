// QVD records: each field's bits read from every record into a packed index in one pass, in
// parallel blocks, four 64-row blocks side by side in vector lanes.
#include "qvd_records.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>
#include <cstring>
#include <string>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace assoc::detail {
namespace {

// One output word of a packed index, streamed past the caches where the CPU can: the index is
// written whole and read much later, and a plain store would first read each line it fills.
inline void put_word(std::uint8_t* at, std::uint64_t w) {
#if defined(__x86_64__) && defined(__GNUC__)
  _mm_stream_si64(reinterpret_cast<long long*>(at), static_cast<long long>(w));
#else
  std::memcpy(at, &w, 8);
#endif
}

// Records. A field's value is (record >> BitOffset) & mask, read as one 8-byte load at a
// fixed byte of the record; symbol = value + Bias, and a negative symbol is NULL.

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
      fail_qvd("field " + quote(f.name) + ": BitWidth 0 and Bias " + std::to_string(s) + " give symbol " +
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

// How a field's stored value v becomes its code in the packed index: as it is (Bias 0), raised
// by a positive Bias, or, with a negative Bias (which makes NULLs), v + Bias + 1 with 0 for NULL.
enum class Coding { kPlain, kRaised, kNullable };

// A stored value's code as `K` says; a NULL adds to `null_rows`.
template <Coding K>
inline std::uint32_t code_of(std::uint64_t v, std::int64_t bias, std::uint64_t& null_rows) {
  if constexpr (K == Coding::kNullable) {
    const std::int64_t s = static_cast<std::int64_t>(v) + bias;
    null_rows += s < 0;
    return s < 0 ? 0U : static_cast<std::uint32_t>(s + 1);
  } else if constexpr (K == Coding::kRaised) {
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(v) + bias);
  } else {
    return static_cast<std::uint32_t>(v);
  }
}

// On x86-64 Linux the packing loop is compiled twice and the CPU picks at load time: with AVX2
// its four lanes are one register each step (without, two halves).
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define ASSOC_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define ASSOC_AVX2_CLONE
#endif

// Codes of `count` rows whose stored values value_of(i) gives, as `K` says; adds the NULLs to
// `nulls` and returns the largest stored value seen, for the range check after the block.
template <Coding K, class ValueOf>
inline std::uint64_t decode_values(std::size_t count, ValueOf value_of, std::int64_t bias, std::uint32_t* out,
                                   std::uint64_t& nulls) {
  std::uint64_t max_value = 0;
  std::uint64_t null_rows = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t v = value_of(i);
    max_value = std::max(max_value, v);
    out[i] = code_of<K>(v, bias, null_rows);
  }
  nulls += null_rows;
  return max_value;
}

// Decodes `count` records starting at `rec`: the field's 8-byte load from each.
template <Coding K>
std::uint64_t decode_field(const std::uint8_t* rec, std::size_t record_bytes, std::size_t count,
                           const FieldDecoder& d, std::uint32_t* out, std::uint64_t& nulls) {
  const std::uint8_t* p = rec + d.byte;
  const std::uint32_t shift = d.shift;
  const std::uint64_t mask = d.mask;
  const auto value_of = [&](std::size_t i) {
    std::uint64_t x;
    std::memcpy(&x, p + i * record_bytes, 8);
    return (x >> shift) & mask;
  };
  return decode_values<K>(count, value_of, d.bias, out, nulls);
}

// decode_field for the coding the field's Bias calls for.
std::uint64_t decode_coded(const std::uint8_t* rec, std::size_t record_bytes, std::size_t count,
                           const FieldDecoder& d, std::uint32_t* out, std::uint64_t& nulls) {
  if (d.bias < 0) return decode_field<Coding::kNullable>(rec, record_bytes, count, d, out, nulls);
  if (d.bias > 0) return decode_field<Coding::kRaised>(rec, record_bytes, count, d, out, nulls);
  return decode_field<Coding::kPlain>(rec, record_bytes, count, d, out, nulls);
}

// Decoding and packing in one pass. Four 64-row blocks are decoded side by side, one per
// lane of a 4 x 64-bit vector: words[4 * j + lane] is row j of the lane's block. Each lane's
// codes are shifted into its W output words as they come (W fixed at compile time, so every
// shift is a constant), which stores 64 codes in W words without holding them anywhere.
using Lanes = std::uint64_t __attribute__((vector_size(32)));
using SignedLanes = std::int64_t __attribute__((vector_size(32)));
using HalfLanes = std::uint32_t __attribute__((vector_size(32)));

// Rows of the four blocks, decoded and packed: word k of lane l's block is stored at
// dst[l] + 8 * k; max4 and zeros4 get each lane's largest code and its count of code 0. With
// `Coded`, the code is max(value + add, 0) (NULL is 0); without, the value itself (add is 0).
template <unsigned W, bool Coded>
ASSOC_AVX2_CLONE void pack_lanes(const std::uint64_t* words, std::uint32_t shift, std::uint64_t mask,
                                 std::int64_t add, std::uint8_t* const* dst, std::int64_t* max4,
                                 std::int64_t* zeros4) {
  const Lanes m = {mask, mask, mask, mask};
  [[maybe_unused]] const SignedLanes a = {add, add, add, add};
  const SignedLanes zero = {0, 0, 0, 0};
  // Codes are below 2^32, so their maximum is taken over 32-bit halves (one instruction;
  // the high halves stay 0).
  HalfLanes top = {0, 0, 0, 0, 0, 0, 0, 0};
  SignedLanes zeros = zero;
  [[maybe_unused]] Lanes acc = {0, 0, 0, 0};
  [[maybe_unused]] unsigned bits = 0, k = 0;
  std::uint8_t* const d0 = dst[0];
  std::uint8_t* const d1 = dst[1];
  std::uint8_t* const d2 = dst[2];
  std::uint8_t* const d3 = dst[3];
#pragma GCC unroll 64
  for (unsigned j = 0; j < 64; ++j) {
    Lanes x;
    std::memcpy(&x, words + 4 * j, sizeof x);
    Lanes u = (x >> shift) & m;
    if constexpr (Coded) {
      SignedLanes c = reinterpret_cast<SignedLanes>(u) + a;
      c = c > zero ? c : zero;  // a NULL (value + add below 0) is code 0
      zeros -= c == zero;       // a true comparison is -1
      u = reinterpret_cast<Lanes>(c);
    }
    const HalfLanes h = reinterpret_cast<HalfLanes>(u);
    top = h > top ? h : top;
    if constexpr (W > 0) {
      acc |= u << bits;
      bits += W;
      if (bits >= 64) {
        const std::uint64_t w0 = acc[0], w1 = acc[1], w2 = acc[2], w3 = acc[3];
        put_word(d0 + 8 * k, w0);
        put_word(d1 + 8 * k, w1);
        put_word(d2 + 8 * k, w2);
        put_word(d3 + 8 * k, w3);
        ++k;
        bits -= 64;
        acc = bits == 0 ? Lanes{0, 0, 0, 0} : u >> (W - bits);  // the code's bits that did not fit
      }
    }
  }
  for (unsigned l = 0; l < 4; ++l) max4[l] = std::int64_t{std::max(top[2 * l], top[2 * l + 1])};
  std::memcpy(zeros4, &zeros, sizeof zeros);
}

using LanePacker = void (*)(const std::uint64_t*, std::uint32_t, std::uint64_t, std::int64_t, std::uint8_t* const*,
                            std::int64_t*, std::int64_t*);

template <bool Coded, unsigned... Ws>
constexpr auto lane_packers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<LanePacker, sizeof...(Ws)>{&pack_lanes<Ws, Coded>...};
}

// Indexed by the column's bit width, 0 to 32.
constexpr std::size_t kMaxLaneWidth = 32;
const auto kLanePackers = lane_packers<false>(std::make_integer_sequence<unsigned, kMaxLaneWidth + 1>{});
const auto kCodedLanePackers = lane_packers<true>(std::make_integer_sequence<unsigned, kMaxLaneWidth + 1>{});

// The load groups for pack_rows: each field's value lies in one 8-byte load, so fields are
// grouped by the byte their load starts at, as few loads a record as the layout allows (one
// for records of up to 8 bytes, whose last rows' loads read a padded copy).
void plan_word_loads(const TableHeader& h, const std::vector<FieldDecoder>& decoders, std::vector<std::size_t>& bytes,
                     std::vector<FieldWords>& fields) {
  const std::size_t n = decoders.size();
  const std::uint64_t rb = h.record_bytes;
  fields.assign(n, FieldWords{});
  std::vector<std::size_t> order;
  for (std::size_t f = 0; f < n; ++f) {
    const FieldDecoder& d = decoders[f];
    FieldWords& w = fields[f];
    if (d.constant) {
      w.nullable = d.constant_symbol == kNull;
      w.add = w.nullable ? 0 : std::int64_t{d.constant_symbol};
    } else {
      w.mask = d.mask;
      w.nullable = d.bias < 0;
      w.add = d.bias < 0 ? d.bias + 1 : d.bias;
      order.push_back(f);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return h.fields[a].bit_offset < h.fields[b].bit_offset; });
  bytes.clear();
  for (const std::size_t f : order) {
    const std::uint64_t off = h.fields[f].bit_offset, width = h.fields[f].bit_width;
    if (bytes.empty() || off + width > bytes.back() * 8 + 64) {
      const std::uint64_t b = rb <= 8 ? 0 : std::min<std::uint64_t>(off / 8, rb - 8);
      bytes.push_back(static_cast<std::size_t>(b));
    }
    fields[f].group = bytes.size() - 1;
    fields[f].shift = static_cast<std::uint32_t>(off - bytes.back() * 8);
  }
}

std::vector<PackedIndex::Layout> layouts_for(const std::vector<FieldDecoder>& decoders) {
  std::vector<PackedIndex::Layout> layouts(decoders.size());
  for (std::size_t f = 0; f < decoders.size(); ++f) {
    const FieldDecoder& d = decoders[f];
    layouts[f].n_symbols = static_cast<std::uint32_t>(d.n_symbols);
    layouts[f].has_null = d.constant ? d.constant_symbol == kNull : d.bias < 0;
  }
  return layouts;
}

std::vector<FieldDecoder> decoders_for(const TableHeader& h) {
  std::vector<FieldDecoder> decoders;
  for (const auto& f : h.fields) decoders.push_back(decoder_for(f, h.record_bytes));
  return decoders;
}

}  // namespace

template <class Fn>
void QvdRecordReader::record_runs(std::size_t begin, std::size_t count, Fn&& fn) const {
  const std::size_t end = begin + count;
  const std::size_t safe_end = std::min(end, std::max(begin, safe_rows_));
  if (safe_end > begin) fn(records_ + begin * record_bytes_, std::size_t{0}, safe_end - begin);
  if (end > safe_end) fn(tail_.data() + (safe_end - safe_rows_) * record_bytes_, safe_end - begin, end - safe_end);
}

std::vector<PackedIndex> read_qvd_records(const TableHeader& h, const std::uint8_t* body, CpuAccount* cpu) {
  QvdRecordReader reader(h, body);
  reader.decode(reader.rows(), cpu);
  return reader.finish(cpu);
}

// Records are decoded block by block, every field from the same block while it is in cache,
// straight into packed indexes whose layout the header fixes: a code for NULL when the Bias
// can make one, room for every symbol. The symbols each field really uses are tracked, to
// repack in the rare file whose header asks for more bits than its rows need.
QvdRecordReader::QvdRecordReader(const TableHeader& h, const std::uint8_t* body)
    : h_(h),
      records_(body + h.offset),
      rows_(static_cast<std::size_t>(h.n_records)),
      record_bytes_(static_cast<std::size_t>(h.record_bytes)),
      // The last rows' loads may pass the end of the file: they read from a zero-padded copy.
      safe_rows_(rows_ - std::min<std::size_t>(rows_, 8)),
      decoders_(decoders_for(h)),
      layouts_(layouts_for(decoders_)),
      max_symbol_(h.fields.size()),
      packer_(rows_, layouts_) {
  for (auto& m : max_symbol_) m.store(-1, std::memory_order_relaxed);
  bool narrow = rows_ > 0;
  for (std::size_t f = 0; f < decoders_.size(); ++f) narrow = narrow && packer_.column_width(f) <= kMaxLaneWidth;
  if (narrow) plan_word_loads(h, decoders_, group_bytes_, field_words_);
}

void QvdRecordReader::load_lanes(std::size_t r, std::size_t lanes, std::uint64_t* words) const {
  const std::size_t rb = record_bytes_;
  const std::size_t groups = group_bytes_.size();
  if (lanes == 4 && r + 256 <= safe_rows_) {
    // The common case: whole blocks in the file.
    const std::size_t lane = 64 * rb;
    // The lanes run ahead of one another, so the hardware prefetcher, which follows one
    // stream and stops at each page, leaves the later lanes waiting on memory: fetch the rows
    // two steps ahead now (a prefetch past the end of the file is dropped, never faults).
    const auto ahead = reinterpret_cast<std::uintptr_t>(records_ + r * rb) + 8 * lane;
    for (std::size_t b = 0; b < 4 * lane; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(ahead + b));
    for (std::size_t g = 0; g < groups; ++g) {
      const std::uint8_t* p = records_ + r * rb + group_bytes_[g];
      std::uint64_t* w = words + g * 256;
      for (std::size_t j = 0; j < 64; ++j, p += rb) {
        std::memcpy(&w[4 * j], p, 8);
        std::memcpy(&w[4 * j + 1], p + lane, 8);
        std::memcpy(&w[4 * j + 2], p + 2 * lane, 8);
        std::memcpy(&w[4 * j + 3], p + 3 * lane, 8);
      }
    }
    return;
  }
  for (std::size_t g = 0; g < groups; ++g) {
    std::uint64_t* w = words + g * 256;
    for (std::size_t l = 0; l < 4; ++l) {
      if (l >= lanes) {
        for (std::size_t j = 0; j < 64; ++j) w[4 * j + l] = 0;
        continue;
      }
      for (std::size_t j = 0; j < 64; ++j) std::memcpy(&w[4 * j + l], record(r + 64 * l + j) + group_bytes_[g], 8);
    }
  }
}

void QvdRecordReader::pack_rows(std::size_t begin, std::size_t count, std::uint32_t* max_codes,
                                std::uint64_t* nulls) {
  const std::size_t n_fields = field_words_.size();
  // With only constant fields nothing is loaded: their mask takes no bit of the words.
  thread_local std::vector<std::uint64_t> words;
  words.resize(std::max<std::size_t>(1, group_bytes_.size()) * 256);
  std::vector<std::int64_t> top(n_fields, 0);
  std::vector<std::uint64_t> zeros(n_fields, 0);
  std::uint64_t scratch[kMaxLaneWidth];  // the words of absent lanes
  std::int64_t max4[4], zeros4[4];
  const std::size_t end = begin + count;
  const std::size_t whole_end = begin + count / 64 * 64;
  for (std::size_t r = begin; r < whole_end;) {
    const std::size_t lanes = std::min<std::size_t>(4, (whole_end - r) / 64);
    load_lanes(r, lanes, words.data());
    for (std::size_t f = 0; f < n_fields; ++f) {
      const FieldWords& fw = field_words_[f];
      const std::uint32_t width = packer_.column_width(f);
      std::uint8_t* const data = packer_.column_bytes(f) + r / 64 * 8 * width;
      std::uint8_t* dst[4];
      for (std::size_t l = 0; l < 4; ++l)
        dst[l] = l < lanes ? data + 8 * width * l : reinterpret_cast<std::uint8_t*>(scratch);
      // A field without NULLs has Bias 0 (the header allows no positive one): its codes are
      // its values, unless it is constant.
      (fw.add != 0 || fw.nullable ? kCodedLanePackers : kLanePackers)[width](words.data() + fw.group * 256, fw.shift, fw.mask,
                                                                 fw.add, dst, max4, zeros4);
      for (std::size_t l = 0; l < lanes; ++l) {
        top[f] = std::max(top[f], max4[l]);
        zeros[f] += static_cast<std::uint64_t>(zeros4[l]);
      }
    }
    r += 64 * lanes;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  _mm_sfence();  // the streamed words are seen before the tail's plain stores and the end of the block
#endif
  if (whole_end < end) {
    // The last rows of the table, fewer than a block: one by one into a block of words, whose
    // bytes that hold them are then stored (nothing else writes that block).
    for (std::size_t f = 0; f < n_fields; ++f) {
      const FieldWords& fw = field_words_[f];
      const std::uint32_t width = packer_.column_width(f);
      std::uint64_t block[kMaxLaneWidth + 1] = {};
      for (std::size_t i = 0; i < end - whole_end; ++i) {
        std::uint64_t x = 0;
        if (fw.mask != 0) std::memcpy(&x, record(whole_end + i) + group_bytes_[fw.group], 8);
        const std::int64_t c = std::max<std::int64_t>(static_cast<std::int64_t>((x >> fw.shift) & fw.mask) + fw.add, 0);
        top[f] = std::max(top[f], c);
        zeros[f] += c == 0;
        if (width == 0) continue;
        const std::size_t bit = i * width;
        block[bit / 64] |= static_cast<std::uint64_t>(c) << (bit % 64);
        if (bit % 64 + width > 64) block[bit / 64 + 1] |= static_cast<std::uint64_t>(c) >> (64 - bit % 64);
      }
      std::memcpy(packer_.column_bytes(f) + whole_end / 64 * 8 * width, block, ((end - whole_end) * width + 7) / 8);
    }
  }
  for (std::size_t f = 0; f < n_fields; ++f) {
    const FieldWords& fw = field_words_[f];
    const FieldDecoder& d = decoders_[f];
    // Valid codes are below the symbols (plus NULL's code); past them, the rows are read
    // again to name the first bad one.
    const std::uint64_t limit = d.n_symbols + (fw.nullable ? 1 : 0);
    if (!d.constant && static_cast<std::uint64_t>(top[f]) >= limit) {
      std::vector<std::uint32_t> codes(count);
      std::uint32_t max_code = 0;
      std::uint64_t n = 0;
      decode_block(f, begin, count, codes.data(), max_code, n);  // throws
    }
    // Codes fit in 32 bits once checked.
    max_codes[f] = static_cast<std::uint32_t>(top[f]);
    nulls[f] = fw.nullable ? zeros[f] : 0;
    const std::int64_t block_max = fw.nullable ? top[f] - 1 : top[f];
    std::int64_t seen = max_symbol_[f].load(std::memory_order_relaxed);
    while (block_max > seen && !max_symbol_[f].compare_exchange_weak(seen, block_max)) {
    }
  }
}

void QvdRecordReader::decode_block(std::size_t f, std::size_t begin, std::size_t count, std::uint32_t* out,
                                   std::uint32_t& max_code, std::uint64_t& nulls) {
  const FieldDecoder& d = decoders_[f];
  std::int64_t block_max;
  nulls = 0;
  if (d.constant) {
    // The layout gives NULL a code only in an all-NULL field: code 0, else the symbol itself.
    const bool null = d.constant_symbol == kNull;
    std::fill(out, out + count, null ? 0U : d.constant_symbol);
    max_code = null ? 0U : d.constant_symbol;
    nulls = null ? count : 0;
    block_max = null ? -1 : std::int64_t{d.constant_symbol};
  } else {
    std::uint64_t m = 0;
    record_runs(begin, count, [&](const std::uint8_t* rec, std::size_t at, std::size_t n) {
      m = std::max(m, decode_coded(rec, record_bytes_, n, d, out + at, nulls));
    });
    block_max = static_cast<std::int64_t>(m) + d.bias;
    if (block_max >= static_cast<std::int64_t>(d.n_symbols)) {
      // The row's symbol index from its code (a nullable field's codes are index + 1).
      const std::uint32_t shift = d.bias < 0 ? 1U : 0U;
      const auto symbol = [&](std::uint32_t code) { return d.bias < 0 && code == 0 ? kNull : code - shift; };
      std::size_t i = 0;
      while (i < count && (symbol(out[i]) == kNull || symbol(out[i]) < d.n_symbols)) ++i;
      const std::string what = i < count ? "row " + std::to_string(begin + i) + " holds symbol index " +
                                               std::to_string(symbol(out[i]))
                                         : "a row holds symbol index " + std::to_string(block_max);
      fail_qvd("field " + quote(h_.fields[f].name) + ": " + what + ", but the field has " +
               std::to_string(d.n_symbols) + " symbols");
    }
    // Below n_symbols (checked above), so it fits.
    max_code = block_max < 0 ? 0U : static_cast<std::uint32_t>(block_max + (d.bias < 0 ? 1 : 0));
  }
  std::int64_t seen = max_symbol_[f].load(std::memory_order_relaxed);
  while (block_max > seen && !max_symbol_[f].compare_exchange_weak(seen, block_max)) {
  }
}

void QvdRecordReader::decode(std::size_t end, CpuAccount* cpu) {
  if (end <= decoded_) return;
  if (end > safe_rows_ && tail_.empty()) {
    const std::size_t tail_rows = rows_ - safe_rows_;
    tail_.assign(tail_rows * record_bytes_ + 16, 0);
    if (tail_rows > 0) std::memcpy(tail_.data(), records_ + safe_rows_ * record_bytes_, tail_rows * record_bytes_);
  }
  const std::size_t n_fields = decoders_.size();
  if (!field_words_.empty()) {
    packer_.pack_words(
        decoded_, end,
        [&](std::size_t begin, std::size_t count, std::uint32_t* max_codes, std::uint64_t* nulls) {
          pack_rows(begin, count, max_codes, nulls);
        },
        cpu);
    decoded_ = end;
    return;
  }
  // A column too wide for pack_rows (2^32 symbols or more): each field's codes from the records.
  packer_.pack_codes(
      decoded_, end,
      [&](std::size_t begin, std::size_t count, std::uint32_t* const* codes, std::uint32_t* max_codes,
          std::uint64_t* nulls) {
        for (std::size_t f = 0; f < n_fields; ++f) decode_block(f, begin, count, codes[f], max_codes[f], nulls[f]);
      },
      cpu);
  decoded_ = end;
}

std::vector<PackedIndex> QvdRecordReader::finish(CpuAccount* cpu) {
  std::vector<PackedIndex> indexes = packer_.finish();
  for (std::size_t f = 0; f < indexes.size(); ++f) {
    PackedIndex& index = indexes[f];
    const bool nulls = index.non_null_count() < rows_;
    const std::int64_t top = max_symbol_[f].load();
    const std::uint64_t max_code = top < 0 ? 0 : static_cast<std::uint64_t>(top) + (nulls ? 1 : 0);
    if (index.has_null() != nulls || index.bit_width() != PackedIndex::width_for(max_code)) {
      std::vector<std::uint32_t> all(rows_);
      index.decode(0, rows_, all.data());
      index = PackedIndex::pack(all.data(), rows_, layouts_[f].n_symbols, cpu);
    }
  }
  return indexes;
}

}  // namespace assoc::detail
