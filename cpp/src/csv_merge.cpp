// The merge of the CSV chunks: a plan per column (by key range or by hash partition), then six
// steps, each a parallel_for over columns x chunks, partitions, key slices or row ranges.
#include "csv_merge.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>

#include "assoc/error.hpp"
#include "assoc/hash.hpp"
#include "assoc/packed_index.hpp"

namespace assoc::detail {
namespace {

// Columns with fewer local symbols than this in all chunks together merge in one task.
constexpr std::size_t kPartitionThreshold = 1 << 16;
// How many symbols ahead a hash partition's merge prefetches map slots.
constexpr std::uint32_t kPrefetchAhead = 16;
// Keys per task of a merge by key: the task's scratch arrays stay in the L2 cache.
constexpr std::int64_t kKeySlice = std::int64_t{1} << 15;

inline std::int64_t floor_div(std::int64_t n, std::int64_t d) { return n >= 0 ? n / d : -((-n + d - 1) / d); }

// How one column merges.
struct ColumnPlan {
  // The numbers sit in direct tables in every chunk: they merge by key, in slices of the key
  // range [lo, hi] at the common scale, where chunk k's keys are its own times mul[k]. A chunk
  // whose keys span a range that no other chunk's overlaps, and that has no pure texts, is
  // alone: all its symbols are new, in its own order, and it stays out of the walk.
  bool by_key = false;
  std::int64_t lo = 0, hi = -1;
  std::vector<std::int64_t> mul;
  std::vector<std::uint8_t> alone;
  bool ints = false;       // every symbol an int32 integer without text: merged as int32
  bool texts = false;      // some symbol has a text
  unsigned part_bits = 0;  // 2^part_bits hash partitions for the symbols not merged by key
  std::vector<std::uint32_t> new_base;  // per chunk: the index of its first new symbol; then the count
};

// One column's merge state for one chunk.
struct ChunkMerge {
  std::vector<std::uint8_t> is_new;  // 1 where this is the symbol's first occurrence overall
  // Local symbol -> symbol index of the column. In a column of int32 symbols it takes the place
  // of the symbols themselves: each is read before its entry is written (step 3), and none is
  // read after that.
  std::uint32_t* remap = nullptr;
  std::unique_ptr<std::uint32_t[]> remap_storage;
  std::atomic<std::size_t> n_new{0};
  // The symbols that merge by hash, grouped by partition (ascending within one):
  std::vector<std::uint32_t> order;   // local symbol
  std::vector<std::uint32_t> text;    // its index in the chunk's texts (kNull for a number)
  std::vector<std::uint64_t> hashes;  // its hash
  std::vector<std::uint32_t> slot;    // its index within the partition
  std::vector<std::uint32_t> starts;  // partition p: order[starts[p] .. starts[p+1])
};

// One hash partition of one column: its distinct symbols in first-occurrence order.
struct PartitionMerge {
  std::vector<SymbolText> texts;       // of each symbol, to compare texts
  std::vector<std::uint64_t> owners;   // (chunk << 32) | local symbol of each first occurrence
  std::vector<std::uint32_t> global;   // symbol index of the column
};

// The symbols of a column, first occurrence first, as arrays filled in place.
struct MergedSymbols {
  IntArray ints;        // when the plan says ints
  NumberArray numbers;  // otherwise: NaN where a symbol has no number
  std::vector<std::vector<SymbolText>> texts;  // per chunk: the texts of its new symbols
  bool allocated = false;
};

// Calls apart(k) for each span's chunk k whose [lo, hi] overlaps no other span.
template <class Span, class Apart>
void mark_apart(std::vector<Span>& spans, Apart apart) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  decltype(Span::hi) highest{};
  // Sorted by lo: a later span overlaps only if the next one does; an earlier one, if the
  // highest hi before reaches this lo (not only the span just before: a wide one may).
  for (std::size_t j = 0; j < spans.size(); ++j) {
    const bool before = j == 0 || highest < spans[j].lo;
    if (before && (j + 1 == spans.size() || spans[j].hi < spans[j + 1].lo)) apart(spans[j].k);
    highest = j == 0 ? spans[j].hi : std::max(highest, spans[j].hi);
  }
}

ColumnPlan plan_once(std::vector<ParsedChunk>& chunks, std::size_t c) {
  ColumnPlan plan;
  const std::size_t n_chunks = chunks.size();
  auto column = [&](std::size_t k) -> const ChunkColumn& { return chunks[k].parser->columns()[c]; };
  std::size_t symbols = 0, rows = 0;
  unsigned scale = 0;
  bool by_key = true, any_key = false, all_ints = true;
  for (std::size_t k = 0; k < n_chunks; ++k) {
    const ChunkColumn& col = column(k);
    symbols += col.size();
    rows += col.row_count();
    plan.texts |= !col.texts.empty();
    all_ints &= col.all_ints;
    by_key &= col.dense.active() && col.hashed_numbers == 0;
    if (col.dense.active() && !col.dense.empty()) {
      any_key = true;
      scale = std::max(scale, col.dense.scale());
    }
  }
  if (by_key && any_key) {
    plan.mul.assign(n_chunks, 1);
    struct Span {
      std::int64_t lo, hi;
      std::size_t k;
    };
    std::vector<Span> spans;
    for (std::size_t k = 0; k < n_chunks && by_key; ++k) {
      const DenseNumbers& dn = column(k).dense;
      if (dn.empty()) continue;
      const std::int64_t mul = DenseNumbers::kPow10Int[scale - dn.scale()];
      by_key = dn.min_key() >= -DenseNumbers::kMaxKey / mul && column(k).max_key() <= DenseNumbers::kMaxKey / mul;
      plan.mul[k] = mul;
      spans.push_back(Span{dn.min_key() * mul, column(k).max_key() * mul, k});
    }
    plan.alone.assign(n_chunks, 0);
    for (std::size_t k = 0; k < n_chunks; ++k) plan.alone[k] = column(k).size() == 0;
    mark_apart(spans, [&](std::size_t k) { plan.alone[k] = column(k).text_symbols == 0; });
    std::int64_t lo = DenseNumbers::kMaxKey, hi = -DenseNumbers::kMaxKey;
    for (const Span& sp : spans) {
      if (plan.alone[sp.k]) continue;
      lo = std::min(lo, sp.lo);
      hi = std::max(hi, sp.hi);
    }
    // The merge walks the key range of the chunks not alone, which must not be much wider than
    // the symbols or rows.
    const std::int64_t limit = std::max({std::int64_t{1} << 16, 8 * static_cast<std::int64_t>(symbols),
                                         2 * static_cast<std::int64_t>(rows)});
    if (by_key && (lo > hi || hi - lo + 1 <= limit)) {
      plan.by_key = true;
      plan.lo = lo;
      plan.hi = hi;
    }
  }
  if (!plan.by_key) {
    // Numbers merge by hash; still, a chunk whose numbers span a range that no other chunk's
    // overlaps (rising values: running totals, timestamps), and that has no pure texts, is
    // alone (a pure text is never a number's value).
    plan.alone.assign(n_chunks, 0);
    struct Span {
      double lo, hi;
      std::size_t k;
    };
    std::vector<Span> spans;
    for (std::size_t k = 0; k < n_chunks; ++k) {
      const ChunkColumn& col = column(k);
      plan.alone[k] = col.size() == 0;
      if (col.number_bottom <= col.number_top) spans.push_back(Span{col.number_bottom, col.number_top, k});
    }
    mark_apart(spans, [&](std::size_t k) { plan.alone[k] = column(k).text_symbols == 0; });
  }
  plan.ints = all_ints && !plan.texts;
  std::size_t hashed = 0;
  for (std::size_t k = 0; k < n_chunks; ++k)
    hashed += plan.by_key ? column(k).text_symbols : plan.alone[k] ? 0 : column(k).size();
  plan.part_bits = hashed >= kPartitionThreshold ? kPartitionBits : 0;
  return plan;
}

// The plan of column c. A merge by key reads the direct tables of the chunks not alone: their
// unslotted symbols are written into them first, and when that moved a table into its NumberMap
// (too thin), the plan is made again.
ColumnPlan plan_column(std::vector<ParsedChunk>& chunks, std::size_t c) {
  ColumnPlan plan = plan_once(chunks, c);
  if (!plan.by_key) return plan;
  bool slotted = false;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    ChunkColumn& col = chunks[k].parser->columns()[c];
    if (plan.alone[k] || col.unslotted == 0) continue;
    col.slot_pending();
    slotted = true;
  }
  return slotted ? plan_once(chunks, c) : plan;
}

// Rows [b, e) of a chunk's column written into `index` from row `first` on, through `remap`
// or raised by `offset` (PackedIndex::write_rows). Rows held implicitly (row i: local symbol
// i) are written from a shared run of 0, 1, 2, ...
void write_chunk_rows(PackedIndex& index, std::size_t first, const ChunkColumn& col, std::size_t b, std::size_t e,
                      const std::uint32_t* remap, std::uint32_t offset) {
  if (!col.rows_implicit) {
    index.write_rows(first, e - b, col.rows.data() + b, remap, offset);
    return;
  }
  constexpr std::size_t kRun = std::size_t{1} << 14;
  static const std::vector<std::uint32_t> run = [] {
    std::vector<std::uint32_t> v(kRun);
    for (std::size_t i = 0; i < kRun; ++i) v[i] = static_cast<std::uint32_t>(i);
    return v;
  }();
  for (std::size_t s = b; s < e; s += kRun) {
    const std::size_t n = std::min(e - s, kRun);
    if (remap != nullptr) {
      index.write_rows(first + (s - b), n, run.data(), remap + s);
    } else {
      index.write_rows(first + (s - b), n, run.data(), nullptr, offset + static_cast<std::uint32_t>(s));
    }
  }
}

// A column's SymbolTable from its symbols, which are known to be distinct: their numbers and
// the lists (one after the other, in symbol order) of the texts of those that have one.
SymbolTable make_symbols(NumberArray&& numbers, const std::vector<const std::vector<SymbolText>*>& texts) {
  std::vector<std::span<const SymbolText>> lists;
  for (const auto* list : texts) lists.emplace_back(*list);
  return SymbolTable::of_symbols(std::move(numbers), lists);
}

// The walk over one slice [a, b) of a column's key range, chunk by chunk in order, calling
// f(chunk, key - a, local symbol) for every key a chunk holds.
template <class F>
void walk_keys(std::vector<ParsedChunk>& chunks, std::size_t c, const ColumnPlan& plan, std::int64_t a,
               std::int64_t b, F f) {
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const DenseNumbers& dn = chunks[k].parser->columns()[c].dense;
    if (dn.empty() || plan.alone[k]) continue;
    const std::int64_t mul = plan.mul[k];
    const std::int64_t y0 = std::max(dn.min_key(), -floor_div(-a, mul));
    const std::int64_t y1 = std::min(dn.max_key(), floor_div(b - 1, mul));
    const std::uint32_t* slots = dn.key_slots();
    for (std::int64_t y = y0; y <= y1; ++y) {
      const std::uint32_t s = slots[y - dn.min_key()];
      if (s != 0) f(k, static_cast<std::size_t>(y * mul - a), s - 1);
    }
  }
}

// The merge of one table's chunks, one method a step; each step is one parallel_for.
class ChunkMerger {
 public:
  ChunkMerger(std::vector<ParsedChunk>& chunks, const std::vector<std::size_t>& row_offsets, LoadedTable& table,
              CpuAccount* cpu);
  void run() {
    group_by_partition();
    find_first_occurrences();
    number_new_symbols();
    spread_first_indexes();
    remap_repeats();
    pack_rows();
  }

 private:
  // A slice [a, b) of column c's key range, merged by one task.
  struct KeySlice {
    std::size_t c;
    std::int64_t a, b;
  };
  ChunkColumn& column(std::size_t c, std::size_t k) { return chunks_[k].parser->columns()[c]; }
  // The column of hash partition t (of all columns' partitions).
  std::size_t part_column(std::size_t t) const {
    return static_cast<std::size_t>(std::upper_bound(part_base_.begin(), part_base_.end(), t) - part_base_.begin()) - 1;
  }
  void allocate_merged(std::size_t c, std::size_t n);

  void group_by_partition();
  void find_first_occurrences();
  void number_new_symbols();
  void spread_first_indexes();
  void remap_repeats();
  void pack_rows();

  std::vector<ParsedChunk>& chunks_;
  const std::vector<std::size_t>& row_offsets_;
  LoadedTable& table_;
  CpuAccount* cpu_;
  const std::size_t n_cols_, n_chunks_, n_rows_;
  std::vector<ColumnPlan> plans_;
  std::vector<std::vector<ChunkMerge>> merges_;  // per column, per chunk
  std::vector<std::size_t> part_base_;           // column c's partitions: parts_[part_base_[c] ..]
  std::vector<PartitionMerge> parts_;
  std::vector<KeySlice> slices_;
  // The arrays of each column's symbols; a column whose chunks are all alone knows its count
  // at once and allocates them beside step 1.
  std::vector<MergedSymbols> merged_;
};

ChunkMerger::ChunkMerger(std::vector<ParsedChunk>& chunks, const std::vector<std::size_t>& row_offsets,
                         LoadedTable& table, CpuAccount* cpu)
    : chunks_(chunks),
      row_offsets_(row_offsets),
      table_(table),
      cpu_(cpu),
      n_cols_(table.columns.size()),
      n_chunks_(chunks.size()),
      n_rows_(row_offsets.back()),
      plans_(n_cols_),
      part_base_(n_cols_ + 1, 0),
      merged_(n_cols_) {
  parallel_for(n_cols_, [&](std::size_t c) { plans_[c] = plan_column(chunks_, c); }, cpu_);
  for (std::size_t c = 0; c < n_cols_; ++c) merges_.emplace_back(n_chunks_);
  for (std::size_t c = 0; c < n_cols_; ++c) part_base_[c + 1] = part_base_[c] + (std::size_t{1} << plans_[c].part_bits);
  parts_ = std::vector<PartitionMerge>(part_base_.back());
  for (std::size_t c = 0; c < n_cols_; ++c)
    if (plans_[c].by_key)
      for (std::int64_t a = plans_[c].lo; a <= plans_[c].hi; a += kKeySlice)
        slices_.push_back(KeySlice{c, a, std::min(plans_[c].hi + 1, a + kKeySlice)});
}

void ChunkMerger::allocate_merged(std::size_t c, std::size_t n) {
  if (plans_[c].ints) {
    merged_[c].ints.resize(n);
  } else {
    merged_[c].numbers.resize(n);
  }
  if (plans_[c].texts) merged_[c].texts.resize(n_chunks_);
  merged_[c].allocated = true;
}

// Step 1. Per column and chunk: the symbols that merge by hash, grouped by partition.
void ChunkMerger::group_by_partition() {
  parallel_for(
      n_cols_ * n_chunks_ + n_cols_,
      [&](std::size_t t) {
        if (t >= n_cols_ * n_chunks_) {
          const std::size_t c = t - n_cols_ * n_chunks_;
          std::size_t n = 0;
          for (std::size_t k = 0; k < n_chunks_; ++k) {
            if (!plans_[c].alone[k]) return;
            n += column(c, k).size();
          }
          if (n <= 0xFFFFFFFEULL) allocate_merged(c, n);
          return;
        }
        const std::size_t c = t / n_chunks_, k = t % n_chunks_;
        const ChunkColumn& col = column(c, k);
        ChunkMerge& m = merges_[c][k];
        const std::size_t n = col.size();
        const std::size_t n_parts = std::size_t{1} << plans_[c].part_bits;
        if (plans_[c].alone[k]) {
          m.starts.assign(n_parts + 1, 0);
          m.n_new.store(n, std::memory_order_relaxed);
          return;
        }
        if (k == 0) {
          // The first chunk's symbols are all new, in its own order: no is_new, no remap.
          m.n_new.store(n, std::memory_order_relaxed);
        } else {
          m.is_new.assign(n, 0);
          if (col.all_ints) {
            m.remap = reinterpret_cast<std::uint32_t*>(column(c, k).ints.data());
          } else {
            m.remap_storage.reset(new std::uint32_t[n]);
            m.remap = m.remap_storage.get();
          }
        }
        std::vector<std::uint32_t> ids, text_of;
        std::vector<std::uint64_t> hashes;
        auto add = [&](std::uint32_t i, std::uint32_t text) {
          ids.push_back(i);
          text_of.push_back(text);
          if (text == kNull) {
            hashes.push_back(mix64(number_key(col.number(i))));
          } else {
            hashes.push_back(hash_text(col.texts[text].data, col.texts[text].size));
          }
        };
        if (plans_[c].by_key) {
          // Only the pure texts merge by hash.
          for (std::size_t j = 0; j < col.texts.size(); ++j)
            if (!col.is_number(col.texts[j].symbol)) add(col.texts[j].symbol, static_cast<std::uint32_t>(j));
        } else {
          // Numbers (duals too) by their number, pure texts by their text.
          std::size_t j = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const bool has_text = j < col.texts.size() && col.texts[j].symbol == i;
            add(static_cast<std::uint32_t>(i), has_text && !col.is_number(i) ? static_cast<std::uint32_t>(j) : kNull);
            j += has_text;
          }
        }
        m.starts.assign(n_parts + 1, 0);
        for (const std::uint64_t h : hashes) ++m.starts[(h & (n_parts - 1)) + 1];
        for (std::size_t p = 0; p < n_parts; ++p) m.starts[p + 1] += m.starts[p];
        m.order.resize(ids.size());
        m.text.resize(ids.size());
        m.hashes.resize(ids.size());
        m.slot.assign(ids.size(), 0);
        std::vector<std::uint32_t> fill(m.starts.begin(), m.starts.end() - 1);
        for (std::size_t j = 0; j < ids.size(); ++j) {
          const std::uint32_t o = fill[hashes[j] & (n_parts - 1)]++;
          m.order[o] = ids[j];
          m.text[o] = text_of[j];
          m.hashes[o] = hashes[j];
        }
      },
      cpu_);
}

// Step 2. First occurrences: each hash partition dedupes its symbols chunk by chunk in order; each
// key slice marks a key new in the first chunk that holds it.
void ChunkMerger::find_first_occurrences() {
  parallel_for(
      parts_.size() + slices_.size(),
      [&](std::size_t t) {
        if (t >= parts_.size()) {
          const KeySlice& ks = slices_[t - parts_.size()];
          std::vector<std::uint8_t> seen(static_cast<std::size_t>(ks.b - ks.a), 0);
          std::vector<std::size_t> n_new(n_chunks_, 0);
          walk_keys(chunks_, ks.c, plans_[ks.c], ks.a, ks.b, [&](std::size_t k, std::size_t x, std::uint32_t i) {
            if (seen[x]) return;
            seen[x] = 1;
            if (k == 0) return;  // counted already
            merges_[ks.c][k].is_new[i] = 1;
            ++n_new[k];
          });
          for (std::size_t k = 0; k < n_chunks_; ++k)
            if (n_new[k] != 0) merges_[ks.c][k].n_new.fetch_add(n_new[k], std::memory_order_relaxed);
          return;
        }
        const std::size_t c = part_column(t), p = t - part_base_[c];
        PartitionMerge& pm = parts_[t];
        // Sized for all the partition's symbols in every chunk: no regrowing.
        std::size_t n_numbers = 0, n_texts = 0;
        for (std::size_t k = 0; k < n_chunks_; ++k) {
          const ChunkMerge& m = merges_[c][k];
          for (std::uint32_t o = m.starts[p]; o < m.starts[p + 1]; ++o) {
            n_numbers += m.text[o] == kNull;
            n_texts += m.text[o] != kNull;
          }
        }
        NumberMap numbers(n_numbers);
        TextMap texts(n_texts);
        pm.texts.reserve(n_numbers + n_texts);
        pm.owners.reserve(n_numbers + n_texts);
        for (std::size_t k = 0; k < n_chunks_; ++k) {
          ChunkMerge& m = merges_[c][k];
          const ChunkColumn& col = column(c, k);
          std::size_t n_new = 0;
          const std::uint32_t end = m.starts[p + 1];
          for (std::uint32_t o = m.starts[p]; o < end; ++o) {
            if (o + kPrefetchAhead < end) {
              // The map slot and the number of a symbol a few steps ahead.
              const std::uint32_t a = o + kPrefetchAhead;
              if (m.text[a] == kNull) {
                numbers.prefetch(m.hashes[a]);
                col.prefetch_number(m.order[a]);
              } else {
                texts.prefetch(m.hashes[a]);
              }
            }
            const std::uint32_t i = m.order[o];
            const std::uint64_t h = m.hashes[o];
            const bool is_number = m.text[o] == kNull;
            const SymbolText text = is_number ? SymbolText{nullptr, 0, 0} : col.texts[m.text[o]];
            std::size_t slot = 0;
            std::uint32_t found = is_number ? numbers.find(number_key(col.number(i)), h, slot)
                                            : texts.find(text.data, text.size, h, pm.texts.data(), slot);
            if (found == kNull) {
              found = static_cast<std::uint32_t>(pm.texts.size());
              pm.texts.push_back(text);
              pm.owners.push_back((std::uint64_t{k} << 32) | i);
              if (is_number) {
                numbers.insert(slot, number_key(col.number(i)), found);
              } else {
                texts.insert(slot, h, found, pm.texts.data());
              }
              if (k != 0) {  // the first chunk's are counted already
                m.is_new[i] = 1;
                ++n_new;
              }
            }
            m.slot[o] = found;
          }
          if (n_new != 0) m.n_new.fetch_add(n_new, std::memory_order_relaxed);
        }
        std::vector<SymbolText>().swap(pm.texts);
      },
      cpu_);
}

// Step 3. Symbol indexes: first occurrences numbered in (chunk, local symbol) order, their values
// written in place into the column's arrays.
void ChunkMerger::number_new_symbols() {
  for (std::size_t c = 0; c < n_cols_; ++c) {
    plans_[c].new_base.assign(n_chunks_ + 1, 0);
    for (std::size_t k = 0; k < n_chunks_; ++k) {
      const std::size_t next = plans_[c].new_base[k] + merges_[c][k].n_new.load();
      if (next > 0xFFFFFFFEULL) throw Error("too many distinct values in one field");
      plans_[c].new_base[k + 1] = static_cast<std::uint32_t>(next);
    }
  }
  parallel_for(
      n_cols_,
      [&](std::size_t c) {
        if (!merged_[c].allocated) allocate_merged(c, plans_[c].new_base.back());
      },
      cpu_);
  parallel_for(
      n_cols_ * n_chunks_,
      [&](std::size_t t) {
        const std::size_t c = t / n_chunks_, k = t % n_chunks_;
        const ChunkColumn& col = column(c, k);
        ChunkMerge& m = merges_[c][k];
        MergedSymbols& out = merged_[c];
        const std::uint8_t* is_new = m.is_new.data();
        std::uint32_t* remap = m.remap;
        std::uint32_t next = plans_[c].new_base[k];
        const std::size_t n = col.size();
        if (plans_[c].alone[k] || k == 0) {
          // All new, in order (a chunk alone, or the first): the symbols are copied as they are.
          if (plans_[c].ints) {
            std::copy(col.ints.begin(), col.ints.end(), out.ints.begin() + next);
          } else {
            for (std::size_t i = 0; i < n; ++i) out.numbers[next + i] = col.number(i);
            for (const SymbolText& st : col.texts) out.texts[k].push_back(SymbolText{st.data, st.size, next + st.symbol});
          }
          return;
        }
        if (plans_[c].ints) {
          std::int32_t* ints = out.ints.data();
          for (std::size_t i = 0; i < n; ++i) {
            if (!is_new[i]) continue;
            const std::int32_t v = col.ints[i];  // before remap[i], which may take its place
            remap[i] = next;
            ints[next++] = v;
          }
        } else {
          double* numbers = out.numbers.data();
          std::size_t j = 0;  // the next of the chunk's texts
          for (std::size_t i = 0; i < n; ++i) {
            const bool has_text = j < col.texts.size() && col.texts[j].symbol == i;
            if (is_new[i]) {
              const double v = col.number(i);  // before remap[i], which may take its place
              remap[i] = next;
              numbers[next] = v;
              if (has_text) out.texts[k].push_back(SymbolText{col.texts[j].data, col.texts[j].size, next});
              ++next;
            }
            j += has_text;
          }
        }
      },
      cpu_);
}

// Step 4. Where a symbol occurs again, its index comes from its first occurrence: published by the
// partitions, carried along each key slice. Meanwhile each column's symbol table is made.
void ChunkMerger::spread_first_indexes() {
  parallel_for(
      n_cols_ + parts_.size() + slices_.size(),
      [&](std::size_t t) {
        if (t < n_cols_) {
          MergedSymbols& m = merged_[t];
          std::vector<const std::vector<SymbolText>*> texts;
          for (const auto& list : m.texts) texts.push_back(&list);
          table_.columns[t].symbols = plans_[t].ints ? SymbolTable::of_ints(std::move(m.ints))
                                                   : make_symbols(std::move(m.numbers), texts);
          m.texts.clear();
          return;
        }
        t -= n_cols_;
        if (t >= parts_.size()) {
          const KeySlice& ks = slices_[t - parts_.size()];
          std::vector<std::uint32_t> index(static_cast<std::size_t>(ks.b - ks.a));
          walk_keys(chunks_, ks.c, plans_[ks.c], ks.a, ks.b, [&](std::size_t k, std::size_t x, std::uint32_t i) {
            ChunkMerge& m = merges_[ks.c][k];
            if (k == 0) {
              index[x] = i;
            } else if (m.is_new[i]) {
              index[x] = m.remap[i];
            } else {
              m.remap[i] = index[x];
            }
          });
          return;
        }
        const std::size_t c = part_column(t);
        PartitionMerge& pm = parts_[t];
        pm.global.resize(pm.owners.size());
        for (std::size_t j = 0; j < pm.owners.size(); ++j) {
          const std::size_t owner = pm.owners[j] >> 32;
          const auto i = static_cast<std::uint32_t>(pm.owners[j]);
          pm.global[j] = owner == 0 ? i : merges_[c][owner].remap[i];
        }
      },
      cpu_);
}

// Step 5. The symbols that merge by hash take their index from their partition; each column's
// index is allocated for its known width.
void ChunkMerger::remap_repeats() {
  parallel_for(
      n_cols_ + n_cols_ * n_chunks_,
      [&](std::size_t t) {
        if (t < n_cols_) {
          std::size_t nulls = 0;
          for (std::size_t k = 0; k < n_chunks_; ++k) nulls += column(t, k).nulls;
          table_.columns[t].index = PackedIndex::for_rows(n_rows_, table_.columns[t].symbols.size(), nulls);
          return;
        }
        t -= n_cols_;
        const std::size_t c = t / n_chunks_, k = t % n_chunks_;
        if (k == 0) return;
        ChunkMerge& m = merges_[c][k];
        const std::size_t parts_mask = (std::size_t{1} << plans_[c].part_bits) - 1;
        const PartitionMerge* pm = &parts_[part_base_[c]];
        for (std::size_t o = 0; o < m.order.size(); ++o) {
          const std::uint32_t i = m.order[o];
          if (!m.is_new[i]) m.remap[i] = pm[m.hashes[o] & parts_mask].global[m.slot[o]];
        }
      },
      cpu_);
}

// Step 6. Each chunk's rows packed through its remap, in ranges of rows.
void ChunkMerger::pack_rows() {
  struct RowRange {
    std::size_t c, k, begin, end;
  };
  std::vector<RowRange> ranges;
  for (std::size_t c = 0; c < n_cols_; ++c)
    for (std::size_t k = 0; k < n_chunks_; ++k)
      for (std::size_t b = 0; b < column(c, k).row_count(); b += kPackRows)
        ranges.push_back(RowRange{c, k, b, std::min(column(c, k).row_count(), b + kPackRows)});
  parallel_for(
      ranges.size(),
      [&](std::size_t t) {
        const RowRange& r = ranges[t];
        // A chunk alone, and the first, keep their symbols' order: their indexes only move up by
        // their first one's.
        const bool in_order = plans_[r.c].alone[r.k] || r.k == 0;
        write_chunk_rows(table_.columns[r.c].index, row_offsets_[r.k] + r.begin, column(r.c, r.k), r.begin, r.end,
                         in_order ? nullptr : merges_[r.c][r.k].remap, plans_[r.c].new_base[r.k]);
      },
      cpu_);
}

// One chunk: its local symbols are the column's symbols, its rows' indexes the final ones.
void take_only_chunk(ParsedChunk& chunk, LoadedTable& table, CpuAccount* cpu) {
  const std::size_t n_cols = table.columns.size(), n_rows = table.rows;
  std::vector<ChunkColumn>& cols = chunk.parser->columns();
  parallel_for(
      n_cols,
      [&](std::size_t c) {
        ChunkColumn& col = cols[c];
        // Copied to arrays of the exact size (the chunk's were reserved for every row).
        table.columns[c].symbols = col.all_ints && col.texts.empty()
                                       ? SymbolTable::of_ints(IntArray(col.ints.begin(), col.ints.end()))
                                       : make_symbols(col.number_array(), {&col.texts});
        std::vector<std::int32_t>().swap(col.ints);
        std::vector<double>().swap(col.numbers);
        table.columns[c].index = PackedIndex::for_rows(n_rows, table.columns[c].symbols.size(), col.nulls);
      },
      cpu);
  parallel_for(
      n_cols * ((n_rows + kPackRows - 1) / kPackRows),
      [&](std::size_t t) {
        const std::size_t c = t % n_cols, b = t / n_cols * kPackRows;
        write_chunk_rows(table.columns[c].index, b, cols[c], b, std::min(n_rows, b + kPackRows), nullptr, 0);
      },
      cpu);
}

}  // namespace

void merge_chunks(std::vector<ParsedChunk>& chunks, const std::vector<std::size_t>& row_offsets, LoadedTable& table,
                  CpuAccount* cpu) {
  if (chunks.size() == 1) {
    take_only_chunk(chunks[0], table, cpu);
  } else {
    ChunkMerger(chunks, row_offsets, table, cpu).run();
  }
}

}  // namespace assoc::detail
