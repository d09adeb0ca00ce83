// Tables out through the Arrow C stream interface: a text field goes out as a dictionary array
// whose dictionary is the field's symbol table and whose indices are the packed index decoded;
// numbers as int64 or float64; NULL as validity bits. One batch holds every row; each column is
// written in one pass over its rows, a few thousand rows at a time.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "assoc/arrow_c.hpp"
#include "assoc/big_blocks.hpp"
#include "assoc/error.hpp"
#include "assoc/number_text.hpp"
#include "row_compress.hpp"

namespace assoc {

namespace {

// Memory of one buffer: 16-byte aligned at least, never empty (so never null).
using Bytes = std::vector<std::uint8_t, CallocAllocator<std::uint8_t>>;

// A buffer of `n` bytes that its maker writes in full: a reused big block is not cleared
// first (that would be a second pass over it); the padding after the `n` bytes is zeroed.
Bytes make_bytes(std::size_t n) {
  big_blocks::Uncleared every_byte_is_written;
  Bytes b(std::max<std::size_t>(n, 8) + 8);
  std::fill(b.begin() + static_cast<std::ptrdiff_t>(n), b.end(), std::uint8_t{0});
  return b;
}

// What a column becomes.
enum class OutKind : std::uint8_t { kInt64, kFloat64, kText, kDual };

struct ColumnPlan {
  OutKind kind = OutKind::kFloat64;
  bool large_text = false;  // the dictionary's texts need 64-bit offsets
};

// --- schemas

struct SchemaData {
  std::string format, name;
  std::vector<std::unique_ptr<ArrowSchema>> children;
  std::vector<ArrowSchema*> pointers;
  std::unique_ptr<ArrowSchema> dictionary;
};

// The release callback of a schema or array we made: releases its children and dictionary,
// then frees what `private_data` (a Data) owns.
template <class Struct, class Data>
void release_made(Struct* s) {
  if (s == nullptr || s->release == nullptr) return;
  auto* d = static_cast<Data*>(s->private_data);
  for (auto& c : d->children)
    if (c->release != nullptr) c->release(c.get());
  if (d->dictionary && d->dictionary->release != nullptr) d->dictionary->release(d->dictionary.get());
  delete d;
  s->release = nullptr;
}

void release_schema(ArrowSchema* s) { release_made<ArrowSchema, SchemaData>(s); }

void make_schema(ArrowSchema* out, std::string format, std::string name, std::int64_t flags,
                 std::vector<std::unique_ptr<ArrowSchema>> children = {}, std::unique_ptr<ArrowSchema> dictionary = {}) {
  auto* d = new SchemaData{std::move(format), std::move(name), std::move(children), {}, std::move(dictionary)};
  for (auto& c : d->children) d->pointers.push_back(c.get());
  out->format = d->format.c_str();
  out->name = d->name.c_str();
  out->metadata = nullptr;
  out->flags = flags;
  out->n_children = static_cast<std::int64_t>(d->children.size());
  out->children = d->pointers.empty() ? nullptr : d->pointers.data();
  out->dictionary = d->dictionary.get();
  out->release = &release_schema;
  out->private_data = d;
}

std::unique_ptr<ArrowSchema> new_schema(std::string format, std::string name, std::int64_t flags,
                                        std::unique_ptr<ArrowSchema> dictionary = {}) {
  auto s = std::make_unique<ArrowSchema>();
  make_schema(s.get(), std::move(format), std::move(name), flags, {}, std::move(dictionary));
  return s;
}

std::unique_ptr<ArrowSchema> text_schema(const std::string& name, bool large) {
  return new_schema("i", name, ARROW_FLAG_NULLABLE, new_schema(large ? "U" : "u", "", 0));
}

std::unique_ptr<ArrowSchema> column_schema(const std::string& name, const ColumnPlan& plan) {
  switch (plan.kind) {
    case OutKind::kInt64: return new_schema("l", name, ARROW_FLAG_NULLABLE);
    case OutKind::kFloat64: return new_schema("g", name, ARROW_FLAG_NULLABLE);
    case OutKind::kText: return text_schema(name, plan.large_text);
    case OutKind::kDual: {
      std::vector<std::unique_ptr<ArrowSchema>> kids;
      kids.push_back(new_schema("g", "number", ARROW_FLAG_NULLABLE));
      kids.push_back(text_schema("text", plan.large_text));
      auto s = std::make_unique<ArrowSchema>();
      make_schema(s.get(), "+s", name, ARROW_FLAG_NULLABLE, std::move(kids));
      return s;
    }
  }
  return nullptr;
}

// --- arrays

struct ArrayData {
  std::vector<Bytes> owned;
  std::vector<const void*> buffers;
  std::vector<std::unique_ptr<ArrowArray>> children;
  std::vector<ArrowArray*> pointers;
  std::unique_ptr<ArrowArray> dictionary;
};

void release_array(ArrowArray* a) { release_made<ArrowArray, ArrayData>(a); }

// An array over `data`; buffers[i] is data->owned[slots[i]], or null for a slot of -1.
std::unique_ptr<ArrowArray> new_array(std::int64_t length, std::int64_t null_count, std::unique_ptr<ArrayData> data,
                                      const std::vector<int>& slots) {
  auto a = std::make_unique<ArrowArray>();
  for (const int s : slots) data->buffers.push_back(s < 0 ? nullptr : data->owned[static_cast<std::size_t>(s)].data());
  for (auto& c : data->children) data->pointers.push_back(c.get());
  a->length = length;
  a->null_count = null_count;
  a->offset = 0;
  a->n_buffers = static_cast<std::int64_t>(data->buffers.size());
  a->n_children = static_cast<std::int64_t>(data->children.size());
  a->buffers = data->buffers.data();
  a->children = data->pointers.empty() ? nullptr : data->pointers.data();
  a->dictionary = data->dictionary.get();
  a->release = &release_array;
  a->private_data = data.release();
  return a;
}

// The dictionary of a field: each symbol's text (a number without one in its canonical form).
template <typename Offset>
std::unique_ptr<ArrowArray> text_dictionary(const SymbolTable& symbols) {
  const std::uint32_t n = symbols.size();
  auto d = std::make_unique<ArrayData>();
  std::string scratch;
  std::size_t total = 0;
  for (std::uint32_t k = 0; k < n; ++k)
    total += symbols.has_text(k) ? symbols.text(k).size() : format_number(symbols.number(k)).size();
  d->owned.push_back(make_bytes((std::size_t{n} + 1) * sizeof(Offset)));
  d->owned.push_back(make_bytes(total));
  auto* offsets = reinterpret_cast<Offset*>(d->owned[0].data());
  char* chars = reinterpret_cast<char*>(d->owned[1].data());
  std::size_t at = 0;
  for (std::uint32_t k = 0; k < n; ++k) {
    offsets[k] = static_cast<Offset>(at);
    std::string_view t;
    if (symbols.has_text(k)) {
      t = symbols.text(k);
    } else {
      scratch = format_number(symbols.number(k));
      t = scratch;
    }
    std::memcpy(chars + at, t.data(), t.size());
    at += t.size();
  }
  offsets[n] = static_cast<Offset>(at);
  return new_array(n, 0, std::move(d), {-1, 0, 1});
}

bool needs_large_text(const SymbolTable& symbols) {
  std::size_t total = 0;
  for (std::uint32_t k = 0; k < symbols.size(); ++k)
    total += symbols.has_text(k) ? symbols.text(k).size() : 24;
  return total > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
}

ColumnPlan plan_of(const ArrowExportColumn& c, ArrowDuals duals) {
  ColumnPlan p;
  if (c.symbols == nullptr) return p;  // numbers: float64
  p.large_text = needs_large_text(*c.symbols);
  const SymbolTable& s = c.typed_by != nullptr ? *c.typed_by : *c.symbols;
  const bool numbers_only = !s.any_text();
  const bool texts_only = !s.any_numeric() && s.size() > 0;
  if (numbers_only) {
    p.kind = OutKind::kFloat64;
    if (s.all_integer() && s.size() > 0) {
      p.kind = OutKind::kInt64;
      for (std::uint32_t k = 0; k < s.size() && p.kind == OutKind::kInt64; ++k)
        if (std::abs(s.number(k)) >= 9.2e18) p.kind = OutKind::kFloat64;
    }
  } else if (texts_only) {
    p.kind = OutKind::kText;
  } else if (duals == ArrowDuals::kStruct) {
    p.kind = OutKind::kDual;
  } else if (duals == ArrowDuals::kNumber && s.all_numeric()) {
    p.kind = s.all_integer() ? OutKind::kInt64 : OutKind::kFloat64;
    for (std::uint32_t k = 0; k < s.size() && p.kind == OutKind::kInt64; ++k)
      if (std::abs(s.number(k)) >= 9.2e18) p.kind = OutKind::kFloat64;
  } else {
    p.kind = OutKind::kText;  // some values have no number, or texts were asked for
  }
  return p;
}

// The codes of the rows a filter keeps (as int32, -1 for NULL): chunks of whole words, each
// written where the kept rows before it end.
Bytes filtered_codes(const ArrowExportColumn& c, const ArrowExportTable& t, std::size_t out_rows, CpuAccount* cpu) {
  Bytes out = make_bytes(out_rows * 4);
  auto* codes = reinterpret_cast<std::uint32_t*>(out.data());
  const PackedIndex& index = *c.index;
  const Bitset& keep = *t.row_filter;
  constexpr std::size_t kChunkWords = 1024;
  constexpr std::size_t kSparse = 16;  // under one kept row in this many, rows are read one by one
  const std::size_t n_words = keep.word_count();
  const std::size_t n_chunks = (n_words + kChunkWords - 1) / kChunkWords;
  std::vector<std::size_t> starts(n_chunks + 1, 0);
  for (std::size_t k = 0; k < n_chunks; ++k) {
    std::size_t n = 0;
    for (std::size_t w = k * kChunkWords; w < std::min(n_words, (k + 1) * kChunkWords); ++w)
      n += popcount64(keep.words()[w]);
    starts[k + 1] = starts[k] + n;
  }
  if (starts[n_chunks] != out_rows) throw Error("column '" + c.name + "': the row filter changed");
  parallel_for(
      n_chunks,
      [&](std::size_t k) {
        const std::size_t first = k * kChunkWords * 64;
        const std::size_t end = std::min(t.rows, (k + 1) * kChunkWords * 64);
        std::size_t at = starts[k];
        if ((starts[k + 1] - starts[k]) * kSparse >= end - first) {
          // Many rows kept: every row of the chunk decoded at once, the kept ones packed to
          // the front (in the chunk's own buffer: a pack may write past what it keeps), then
          // copied to their place.
          const std::size_t count = end - first;
          const std::unique_ptr<std::uint32_t[]> rows(new std::uint32_t[(count + 15) / 16 * 16]);
          index.decode(first, count, rows.get());
          const std::size_t kept = detail::compress_rows(keep.words() + k * kChunkWords, count, rows.get(), rows.get());
          std::memcpy(codes + at, rows.get(), kept * sizeof(std::uint32_t));
          return;
        }
        // Few rows kept (a narrow selection): only the kept rows are read.
        const std::size_t last_word = std::min(n_words, (k + 1) * kChunkWords);
        for (std::size_t w = k * kChunkWords; w < last_word; ++w) {
          std::uint64_t bits = keep.words()[w];
          while (bits != 0) {
            const auto j = static_cast<std::size_t>(__builtin_ctzll(bits));
            bits &= bits - 1;
            codes[at++] = index.get(w * 64 + j);
          }
        }
      },
      cpu);
  return out;
}

// Rows per step of a column's one pass: a step's codes and values stay in the first-level
// cache while its values and validity bits are made.
constexpr std::size_t kStepRows = 4096;

// Stores `n` values of 4 or 8 bytes from a step (in the cache) to their place in an output
// buffer, with stores that bypass the cache where the machine has them: the buffers are far
// bigger than the cache and read later by another library, and an ordinary store first reads
// each line it overwrites (twice the memory traffic). fence_stores() ends a thread's share.
template <typename T>
void stream_store(T* to, const T* from, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  constexpr std::size_t kPerStore = 16 / sizeof(T);
  for (; i < n && (reinterpret_cast<std::uintptr_t>(to + i) & 15U) != 0; ++i) to[i] = from[i];
  for (; i + kPerStore <= n; i += kPerStore)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
#endif
  for (; i < n; ++i) to[i] = from[i];
}

inline void fence_stores() {
#if defined(__SSE2__)
  _mm_sfence();  // the streamed stores are seen before the thread reports its range done
#endif
}

// One pass over a symbol column's output rows: per step of at most kStepRows rows [b, e)
// (b a multiple of 64), step(b, e, codes) with those rows' codes (NULL as kNull) at codes[0..),
// the column's symbol map applied, in a scratch buffer the step may change. With `dst`, the
// codes as the step leaves them are then stored to dst + b.
template <typename Step>
void for_each_step(const ArrowExportColumn& c, const ArrowExportTable& t, std::size_t out_rows, std::uint32_t* dst,
                   CpuAccount* cpu, Step&& step) {
  const std::uint32_t* source = nullptr;  // every output row's code, when already at hand
  Bytes filtered;
  if (c.codes != nullptr) {
    if (c.codes->size() != out_rows)
      throw Error("column '" + c.name + "': codes of " + std::to_string(c.codes->size()) + " rows");
    source = c.codes->data();
  } else if (c.index->size() != t.rows) {
    throw Error("column '" + c.name + "': an index of " + std::to_string(c.index->size()) + " rows");
  } else if (t.row_filter != nullptr) {
    filtered = filtered_codes(c, t, out_rows, cpu);
    source = reinterpret_cast<const std::uint32_t*>(filtered.data());
  }
  parallel_ranges(
      out_rows, 64,
      [&](std::size_t b, std::size_t e) {
        const std::vector<std::uint32_t>* map = c.symbol_map;
        std::vector<std::uint32_t> scratch(kStepRows);
        std::uint32_t* codes = scratch.data();
        for (std::size_t s = b; s < e; s += kStepRows) {
          const std::size_t n = std::min(e, s + kStepRows) - s;
          if (source != nullptr) {
            std::copy(source + s, source + s + n, codes);
          } else {
            c.index->decode(s, n, codes);
          }
          if (map != nullptr) {
            for (std::size_t i = 0; i < n; ++i) codes[i] = codes[i] < map->size() ? (*map)[codes[i]] : kNull;
          }
          step(s, s + n, codes);
          if (dst != nullptr) stream_store(dst + s, codes, n);
        }
        fence_stores();
      },
      cpu);
}

// The validity bits of rows [b, e) (b a multiple of 8) from valid(j), which also writes row
// j's value; returns the NULL count. Every array's bitmap is written by this one loop.
template <typename Valid>
std::int64_t write_validity(std::size_t b, std::size_t e, std::uint8_t* validity, Valid&& valid) {
  std::int64_t nulls = 0;
  for (std::size_t r = b; r < e; r += 8) {
    unsigned byte = 0;
    const std::size_t stop = std::min(e, r + 8);
    for (std::size_t j = r; j < stop; ++j) {
      const bool ok = valid(j);
      byte |= static_cast<unsigned>(ok) << (j - r);
      nulls += !ok;
    }
    validity[r >> 3] = static_cast<std::uint8_t>(byte);
  }
  return nulls;
}

// Each symbol's number at code + 1 (kNull + 1 wraps to 0, NULL's entry), and whether it has
// one: a row's value is a lookup, with no branch.
template <typename T>
struct NumberLookup {
  std::vector<T> value;
  std::vector<std::uint8_t> has;
  bool every_symbol_has_one = true;

  explicit NumberLookup(const SymbolTable& symbols)
      : value(std::size_t{symbols.size()} + 1), has(std::size_t{symbols.size()} + 1) {
    for (std::uint32_t k = 0; k < symbols.size(); ++k) {
      has[k + 1] = symbols.has_number(k);
      value[k + 1] = has[k + 1] ? static_cast<T>(symbols.number(k)) : T{};
      every_symbol_has_one = every_symbol_has_one && has[k + 1] != 0;
    }
  }
  bool write(std::uint32_t code, T* out) const {
    const std::uint32_t at = code + 1;
    *out = value[at];
    return has[at] != 0;
  }
};

// A dictionary index: NULL indexes 0, its validity bit clear.
inline bool text_index(std::uint32_t& code) {
  const bool ok = code != kNull;
  code = ok ? code : 0;
  return ok;
}

// Whether a column of a packed index may have NULL rows (a filter keeps a subset of its rows;
// codes given and a symbol map may hold NULLs).
bool may_be_null(const ArrowExportColumn& c) {
  return c.codes != nullptr || c.symbol_map != nullptr || c.index->has_null();
}

// A numeric array: each row's symbol number (int64 or float64), NULL where a row has none.
// A column with no NULL row and a number in every symbol has no bitmap: its values are a
// plain lookup of the codes' numbers. A step's values are made in the cache, then stored.
template <typename T>
std::unique_ptr<ArrowArray> number_array(const ArrowExportColumn& c, const ArrowExportTable& t, std::size_t n,
                                         CpuAccount* cpu) {
  const NumberLookup<T> lookup(*c.symbols);
  const bool nulls_possible = may_be_null(c) || !lookup.every_symbol_has_one;
  auto d = std::make_unique<ArrayData>();
  d->owned.push_back(make_bytes(nulls_possible ? (n + 7) / 8 : 0));
  d->owned.push_back(make_bytes(n * sizeof(T)));
  std::uint8_t* validity = d->owned[0].data();
  T* values = reinterpret_cast<T*>(d->owned[1].data());
  const T* number_of = lookup.value.data() + 1;  // code k's number at number_of[k]
  std::atomic<std::int64_t> nulls{0};
  for_each_step(c, t, n, nullptr, cpu, [&](std::size_t b, std::size_t e, const std::uint32_t* codes) {
    alignas(16) T step_values[kStepRows];
    if (nulls_possible) {
      nulls += write_validity(b, e, validity,
                              [&](std::size_t j) { return lookup.write(codes[j - b], step_values + (j - b)); });
    } else {
      for (std::size_t i = 0; i < e - b; ++i) step_values[i] = number_of[codes[i]];
    }
    stream_store(values + b, step_values, e - b);
  });
  const std::int64_t nn = nulls.load();
  return new_array(static_cast<std::int64_t>(n), nn, std::move(d), {nn == 0 ? -1 : 0, 1});
}

// A dictionary array over a field: indices are the codes (NULL rows index 0, their bit clear).
// A packed index without a NULL code has no NULL row (a filter keeps a subset of them): its
// codes go out as they are, with no bitmap (a symbol map may make NULLs: it has one).
std::unique_ptr<ArrowArray> text_array(const ArrowExportColumn& c, bool large, const ArrowExportTable& t, std::size_t n,
                                       CpuAccount* cpu) {
  const bool nulls_possible = may_be_null(c);
  auto d = std::make_unique<ArrayData>();
  d->owned.push_back(make_bytes(nulls_possible ? (n + 7) / 8 : 0));
  d->owned.push_back(make_bytes(n * 4));
  std::uint8_t* validity = d->owned[0].data();
  auto* idx = reinterpret_cast<std::uint32_t*>(d->owned[1].data());
  std::atomic<std::int64_t> nulls{0};
  for_each_step(c, t, n, idx, cpu, [&](std::size_t b, std::size_t e, std::uint32_t* codes) {
    if (nulls_possible)
      nulls += write_validity(b, e, validity, [&](std::size_t j) { return text_index(codes[j - b]); });
  });
  d->dictionary = large ? text_dictionary<std::int64_t>(*c.symbols) : text_dictionary<std::int32_t>(*c.symbols);
  const std::int64_t nn = nulls.load();
  return new_array(static_cast<std::int64_t>(n), nn, std::move(d), {nn == 0 ? -1 : 0, 1});
}

// A dual as a struct of its number (float64) and its text (a dictionary array), NULL where the
// row has no value: the three arrays written in one pass.
std::unique_ptr<ArrowArray> dual_array(const ArrowExportColumn& c, bool large, const ArrowExportTable& t, std::size_t n,
                                       CpuAccount* cpu) {
  const bool nulls_possible = may_be_null(c);
  const NumberLookup<double> lookup(*c.symbols);
  auto number = std::make_unique<ArrayData>();
  number->owned.push_back(make_bytes((n + 7) / 8));
  number->owned.push_back(make_bytes(n * 8));
  auto text = std::make_unique<ArrayData>();
  text->owned.push_back(make_bytes(nulls_possible ? (n + 7) / 8 : 0));
  text->owned.push_back(make_bytes(n * 4));
  auto dual = std::make_unique<ArrayData>();
  dual->owned.push_back(make_bytes(nulls_possible ? (n + 7) / 8 : 0));
  std::uint8_t* number_validity = number->owned[0].data();
  auto* values = reinterpret_cast<double*>(number->owned[1].data());
  std::uint8_t* text_validity = text->owned[0].data();
  auto* idx = reinterpret_cast<std::uint32_t*>(text->owned[1].data());
  std::uint8_t* dual_validity = dual->owned[0].data();
  std::atomic<std::int64_t> number_nulls{0}, nulls{0};
  for_each_step(c, t, n, idx, cpu, [&](std::size_t b, std::size_t e, std::uint32_t* codes) {
    number_nulls +=
        write_validity(b, e, number_validity, [&](std::size_t j) { return lookup.write(codes[j - b], values + j); });
    if (!nulls_possible) return;
    nulls += write_validity(b, e, text_validity, [&](std::size_t j) { return text_index(codes[j - b]); });
    std::copy(text_validity + b / 8, text_validity + (e + 7) / 8, dual_validity + b / 8);
  });
  text->dictionary = large ? text_dictionary<std::int64_t>(*c.symbols) : text_dictionary<std::int32_t>(*c.symbols);
  const std::int64_t nn = number_nulls.load(), tn = nulls.load();
  dual->children.push_back(new_array(static_cast<std::int64_t>(n), nn, std::move(number), {nn == 0 ? -1 : 0, 1}));
  dual->children.push_back(new_array(static_cast<std::int64_t>(n), tn, std::move(text), {tn == 0 ? -1 : 0, 1}));
  return new_array(static_cast<std::int64_t>(n), tn, std::move(dual), {tn == 0 ? -1 : 0});
}

// A float64 array of plain numbers, NaN as NULL.
std::unique_ptr<ArrowArray> measure_array(const std::vector<double>& in, CpuAccount* cpu) {
  const std::size_t n = in.size();
  auto d = std::make_unique<ArrayData>();
  d->owned.push_back(make_bytes((n + 7) / 8));
  d->owned.push_back(make_bytes(n * 8));
  std::uint8_t* validity = d->owned[0].data();
  auto* values = reinterpret_cast<double*>(d->owned[1].data());
  std::atomic<std::int64_t> nulls{0};
  parallel_ranges(
      n, 64,
      [&](std::size_t b, std::size_t e) {
        nulls += write_validity(b, e, validity, [&](std::size_t j) {
          const bool ok = !std::isnan(in[j]);
          values[j] = ok ? in[j] : 0.0;
          return ok;
        });
      },
      cpu);
  const std::int64_t nn = nulls.load();
  return new_array(static_cast<std::int64_t>(n), nn, std::move(d), {nn == 0 ? -1 : 0, 1});
}

std::unique_ptr<ArrowArray> column_array(const ArrowExportColumn& c, const ColumnPlan& plan, const ArrowExportTable& t,
                                         std::size_t out_rows, CpuAccount* cpu) {
  if (c.symbols == nullptr) {
    if (c.numbers == nullptr || c.numbers->size() != out_rows)
      throw Error("column '" + c.name + "': numbers of the wrong length");
    return measure_array(*c.numbers, cpu);
  }
  switch (plan.kind) {
    case OutKind::kInt64: return number_array<std::int64_t>(c, t, out_rows, cpu);
    case OutKind::kFloat64: return number_array<double>(c, t, out_rows, cpu);
    case OutKind::kText: return text_array(c, plan.large_text, t, out_rows, cpu);
    case OutKind::kDual: return dual_array(c, plan.large_text, t, out_rows, cpu);
  }
  return nullptr;
}

std::size_t output_rows(const ArrowExportTable& t) {
  if (t.row_filter == nullptr) return t.rows;
  if (t.row_filter->size() != t.rows) throw Error("a row filter of the wrong size");
  return t.row_filter->count();
}

std::vector<ColumnPlan> plans_of(const ArrowExportTable& t, ArrowDuals duals) {
  std::vector<ColumnPlan> plans;
  for (const auto& c : t.columns) plans.push_back(plan_of(c, duals));
  return plans;
}

void write_schema(const ArrowExportTable& t, const std::vector<ColumnPlan>& plans, ArrowSchema* out) {
  std::vector<std::unique_ptr<ArrowSchema>> kids;
  for (std::size_t c = 0; c < t.columns.size(); ++c) kids.push_back(column_schema(t.columns[c].name, plans[c]));
  make_schema(out, "+s", "", 0, std::move(kids));
}

// --- the stream: one batch, made before the stream is handed out.

struct StreamData {
  ArrowExportTable shape;  // names and plans only: no pointers into the source are used later
  std::vector<ColumnPlan> plans;
  std::unique_ptr<ArrowArray> batch;
  std::string error;
};

int stream_schema(ArrowArrayStream* s, ArrowSchema* out) {
  auto* d = static_cast<StreamData*>(s->private_data);
  try {
    write_schema(d->shape, d->plans, out);
    return 0;
  } catch (const std::exception& e) {
    d->error = e.what();
    return 12;  // ENOMEM: the only way making a schema fails
  }
}

int stream_next(ArrowArrayStream* s, ArrowArray* out) {
  auto* d = static_cast<StreamData*>(s->private_data);
  if (d->batch) {
    *out = *d->batch;
    d->batch->release = nullptr;  // moved to the consumer
    d->batch.reset();
  } else {
    std::memset(out, 0, sizeof *out);  // end of stream: a released array
  }
  return 0;
}

const char* stream_error(ArrowArrayStream* s) {
  auto* d = static_cast<StreamData*>(s->private_data);
  return d->error.empty() ? nullptr : d->error.c_str();
}

void stream_release(ArrowArrayStream* s) {
  if (s == nullptr || s->release == nullptr) return;
  auto* d = static_cast<StreamData*>(s->private_data);
  if (d->batch && d->batch->release != nullptr) d->batch->release(d->batch.get());
  delete d;
  s->release = nullptr;
}

}  // namespace

void export_arrow_schema(const ArrowExportTable& table, ArrowDuals duals, ArrowSchema* out) {
  write_schema(table, plans_of(table, duals), out);
}

void export_arrow_stream(const ArrowExportTable& table, ArrowDuals duals, ArrowArrayStream* out, CpuAccount* cpu) {
  auto d = std::make_unique<StreamData>();
  d->plans = plans_of(table, duals);
  const std::size_t rows = output_rows(table);
  auto data = std::make_unique<ArrayData>();
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    data->children.push_back(column_array(table.columns[c], d->plans[c], table, rows, cpu));
    ArrowExportColumn name_only;
    name_only.name = table.columns[c].name;
    d->shape.columns.push_back(std::move(name_only));
  }
  d->shape.rows = rows;
  d->batch = new_array(static_cast<std::int64_t>(rows), 0, std::move(data), {-1});
  out->get_schema = &stream_schema;
  out->get_next = &stream_next;
  out->get_last_error = &stream_error;
  out->release = &stream_release;
  out->private_data = d.release();
}

}  // namespace assoc
