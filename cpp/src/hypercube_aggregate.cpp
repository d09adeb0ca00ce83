#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <type_traits>

#include "assoc/big_blocks.hpp"
#include "assoc/hypercube_aggregate.hpp"
#include "assoc/thread_pool.hpp"
#include "hypercube_accumulators.hpp"
#include "hypercube_fused.hpp"
#include "radix_sort.hpp"
#include "row_compress.hpp"

namespace assoc::detail {
namespace {

// A link's partial key per value (index symbol + 1), for a walk where each record reaches one
// tuple. Direct keys are below the slot count, so the narrowest of 8, 16 or 32 bits that holds
// them all and the marker of a value reaching nothing in an inner join (the width's largest
// number) is used: a star's 100,000-row dimension by 20 regions looks up 100 KB, which stays
// in the second-level cache, where 32-bit entries (400 KB) would not.
class LinkLookup {
 public:
  std::size_t source = 0;  // the column of codes it reads

  LinkLookup(const KeySets& sets, bool inner, std::size_t column) : source(column) {
    std::uint64_t top = 0;
    for (const std::uint64_t v : sets.one)
      if (v != kMissing) top = std::max(top, v);
    width_ = top < 0xFFU ? 1 : top < 0xFFFFU ? 2 : 4;
    if (width_ == 1) fill(sets, inner, u8_);
    if (width_ == 2) fill(sets, inner, u16_);
    if (width_ == 4) fill(sets, inner, u32_);
  }

  // Adds each record's partial key to key[i]; whether any record reaches nothing.
  bool add_keys(const std::uint32_t* codes, std::uint32_t* key, std::size_t n) const {
    if (width_ == 1) return add(u8_, codes, key, n);
    if (width_ == 2) return add(u16_, codes, key, n);
    return add(u32_, codes, key, n);
  }

  // Sets the slot of each record that reaches nothing to `trash`.
  void mark_missing(const std::uint32_t* codes, std::uint32_t* slot, std::size_t n, std::uint32_t trash) const {
    if (width_ == 1) mark(u8_, codes, slot, n, trash);
    if (width_ == 2) mark(u16_, codes, slot, n, trash);
    if (width_ == 4) mark(u32_, codes, slot, n, trash);
  }

 private:
  template <class T>
  static void fill(const KeySets& sets, bool inner, std::vector<T>& lut) {
    lut.resize(sets.one.size());
    for (std::size_t i = 0; i < lut.size(); ++i) {
      const std::uint64_t v = sets.one[i];
      lut[i] = v != kMissing ? static_cast<T>(v) : inner ? std::numeric_limits<T>::max() : T{0};
    }
  }
  template <class T>
  static bool add(const std::vector<T>& lut, const std::uint32_t* codes, std::uint32_t* key, std::size_t n) {
    const T* l = lut.data();
    unsigned missing = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const T v = l[codes[i] + 1];
      missing |= v == std::numeric_limits<T>::max() ? 1U : 0U;
      key[i] += v;
    }
    return missing != 0;
  }
  template <class T>
  static void mark(const std::vector<T>& lut, const std::uint32_t* codes, std::uint32_t* slot, std::size_t n,
                   std::uint32_t trash) {
    for (std::size_t i = 0; i < n; ++i)
      if (lut[codes[i] + 1] == std::numeric_limits<T>::max()) slot[i] = trash;
  }

  int width_ = 4;
  std::vector<std::uint8_t> u8_;
  std::vector<std::uint16_t> u16_;
  std::vector<std::uint32_t> u32_;
};

}  // namespace

const char* agg_name(AggFunc f) {
  switch (f) {
    case AggFunc::kSum: return "Sum";
    case AggFunc::kCount: return "Count";
    case AggFunc::kCountDistinct: return "Count(distinct)";
    case AggFunc::kAvg: return "Avg";
    case AggFunc::kMin: return "Min";
    case AggFunc::kMax: return "Max";
    case AggFunc::kOnly: return "Only";
  }
  return "?";
}

double empty_value(AggFunc f) {
  return f == AggFunc::kSum || f == AggFunc::kCount || f == AggFunc::kCountDistinct ? 0.0 : kNaN;
}

namespace {

// The columns a batch pass over a table reads, each once however many dimensions, links and
// terms read it.
struct BatchColumns {
  std::vector<std::uint32_t> columns;

  // The place of a column among them, added when new.
  std::size_t source_of(std::uint32_t column) {
    const auto at = std::find(columns.begin(), columns.end(), column);
    if (at != columns.end()) return static_cast<std::size_t>(at - columns.begin());
    columns.push_back(column);
    return columns.size() - 1;
  }

  // Each column's codes of rows [begin, begin+count) into codes[place]: every row's (`picked`
  // null), or only the `n` picked rows' (positions from `begin`), packed to the front: read one
  // by one where they are few (or gathered over more than a batch of rows), decoded with the
  // batch where many.
  void read(const Table& table, std::size_t begin, std::size_t count, const std::uint32_t* picked, std::size_t n,
            std::vector<std::vector<std::uint32_t>>& codes) const {
    const bool one_by_one = picked != nullptr && (n * 8 <= count || count > kBatch);
    for (std::size_t s = 0; s < columns.size(); ++s) {
      const PackedIndex& index = table.columns[columns[s]].index;
      std::uint32_t* cs = codes[s].data();
      if (one_by_one) {
        for (std::size_t i = 0; i < n; ++i) cs[i] = index.get(begin + picked[i]);
        continue;
      }
      index.decode(begin, count, cs);
      if (picked != nullptr)
        for (std::size_t i = 0; i < n; ++i) cs[i] = cs[picked[i]];
    }
  }
};

}  // namespace

NodeAggregates aggregate_node(const AssociativeModel& model, const RowStates& rows, JoinWalker& walker,
                              const std::vector<Term>& terms, std::uint64_t key_space) {
  const DataModel& data = model.data();
  const RootedTree& tree = walker.tree();
  const std::uint32_t root = tree.root;
  const bool table_root = !walker.graph().is_field(root);
  const std::size_t records =
      table_root ? data.tables()[root].rows : data.fields()[walker.graph().field_of(root)].symbols.size();
  // Keys index the slots directly while the key space is small next to the records, or no
  // larger than them with every thread's accumulators within 64 MiB (a 100,000-customer
  // group on a million rows: hashing each record cost more than clearing the slots).
  const std::uint64_t slot_bytes = (1 + 8 * std::uint64_t{std::max<std::size_t>(terms.size(), 1)}) * threads();
  const bool direct = key_space <= std::max<std::uint64_t>(std::uint64_t{1} << 16, records / 16) ||
                      (key_space <= records && key_space * slot_bytes <= (std::uint64_t{64} << 20));
  std::size_t slots = direct ? static_cast<std::size_t>(key_space) + kFirstGroup : kFirstGroup;

  std::vector<TermInput> in(terms.size());
  for (std::size_t k = 0; k < terms.size(); ++k) {
    in[k] = term_input(data, terms[k]);
    TermInput& t = in[k];
    if (t.func == AggFunc::kCountDistinct && direct) {
      t.words_per_slot = distinct_words(t.n_symbols, slots, table_root ? rows.possible[root] : records);
      // Buckets of at least 64 symbols whose part of the bitset (every slot's words for them)
      // stays within about 8 KiB, so a flush's marks share cache lines (smaller parts measured
      // no faster; larger ones slower); a mark must fit 32 bits with its slot.
      t.bucket_shift = 6;
      while ((std::uint64_t{slots} << (t.bucket_shift + 1 - 3)) <= (std::uint64_t{1} << 13) &&
             (std::uint64_t{t.n_symbols} >> t.bucket_shift) > 0)
        ++t.bucket_shift;
      if ((std::uint64_t{slots} << t.bucket_shift) > 0xFFFFFFFFULL) t.words_per_slot = 0;
      if (t.words_per_slot != 0) {
        t.slots = slots;
        t.n_buckets = (t.n_symbols >> t.bucket_shift) + 1;
        t.words_per_bucket = (std::size_t{1} << t.bucket_shift) / 64;
        {
          // Zeroed by both threads, bucket by bucket (a fresh block's pages are first touched
          // by the thread that will mostly use them, a reused one is not cleared twice).
          big_blocks::Uncleared zeroed_below;
          t.bits.resize(t.n_buckets * slots * t.words_per_bucket);
        }
        for_buckets(t, [&](std::size_t b) { std::fill_n(t.words(b, 0), slots * t.words_per_bucket, std::uint64_t{0}); });
        t.bucket_locks = std::make_unique<std::mutex[]>(t.n_buckets);
      }
    }
  }

  std::vector<JoinWalker::Link> links = walker.root_links();
  const bool functional =
      std::all_of(links.begin(), links.end(), [](const JoinWalker::Link& l) { return l.sets->functional; });
  Accumulators acc;
  std::vector<std::uint64_t> key_of_slot;  // keys of group slots when not direct
  bool totals_done = false;

  // The slot of a record read from one column: one dimension of the root and no link, or
  // one link and no dimension of the root.
  const std::vector<const DimPlace*> root_dims = walker.root_dims();
  // Several dimensions of the root and no link: the first's slot plus the others' parts.
  const bool one_source = (!root_dims.empty() && links.empty()) || (root_dims.empty() && links.size() == 1);
  if (table_root && functional && direct && one_source && slots <= 0xFFFFFFFFULL && fused_terms(terms, in)) {
    const Table& table = data.tables()[root];
    const std::uint32_t column = links.empty() ? root_dims[0]->column : links[0].column;
    const std::uint32_t bias = table.columns[column].index.has_null() ? 1U : 0U;  // NULL's code, when it has one
    // Per stored code, the record's slot: the dimension's, or the tuple its link reaches
    // (None where it reaches none, unless the join is inner).
    const std::size_t n_codes = std::size_t{data.fields()[table.columns[column].field].symbols.size()} + 1;
    std::vector<std::uint32_t> slot_of(n_codes, kTrash);
    for (std::size_t code = 0; code < n_codes - 1 + bias; ++code) {
      const std::size_t value = code + 1 - bias;  // symbol + 1, 0 for NULL
      if (links.empty()) {
        slot_of[code] = static_cast<std::uint32_t>(kFirstGroup + value * root_dims[0]->stride);
      } else {
        const std::uint64_t key = links[0].sets->one[value];
        const std::uint32_t none = walker.inner() ? kTrash : kFirstGroup;
        slot_of[code] = key != kMissing ? static_cast<std::uint32_t>(kFirstGroup + key) : none;
      }
    }
    std::vector<std::pair<std::uint32_t, std::uint64_t>> more_dims;
    for (std::size_t d = 1; d < root_dims.size(); ++d) more_dims.emplace_back(root_dims[d]->column, root_dims[d]->stride);
    // slot_of[code] = code's symbol + 3
    const bool affine = links.empty() && root_dims.size() == 1 && root_dims[0]->stride == 1;
    const std::uint64_t first_stride = links.empty() ? root_dims[0]->stride : 0;
    acc = fused_aggregate(table, rows.rows[root].get(), rows.possible[root], column, slot_of, affine, first_stride,
                          more_dims, terms, in, slots);
  } else if (table_root && functional && direct) {
    // Each record reaches exactly one tuple: its key is its own dimension codes plus one
    // look-up per link. Rows are read in batches, by several threads, each into its own
    // accumulators.
    const Table& table = data.tables()[root];
    BatchColumns read;
    std::vector<std::pair<std::size_t, std::uint32_t>> own;
    for (const DimPlace* d : walker.root_dims())
      own.emplace_back(read.source_of(d->column), static_cast<std::uint32_t>(d->stride));
    std::vector<LinkLookup> lookups;
    for (const auto& l : links) lookups.emplace_back(*l.sets, walker.inner(), read.source_of(l.column));
    std::vector<std::size_t> term_source;
    for (const auto& t : terms) term_source.push_back(read.source_of(t.column));

    const Bitset* possible = rows.rows[root].get();
    struct Scratch {
      std::vector<std::vector<std::uint32_t>> codes;
      std::vector<std::uint32_t> key;
    };
    const auto make_scratch = [&] {
      return Scratch{std::vector<std::vector<std::uint32_t>>(read.columns.size(), std::vector<std::uint32_t>(kBatch)),
                     std::vector<std::uint32_t>(kBatch)};
    };
    acc = accumulate_chunks(table.rows, possible, rows.possible[root], in, slots, make_scratch,
                            [&](Accumulators& a, std::size_t begin, std::size_t count, const std::uint32_t* picked,
                                std::size_t n, Scratch& scratch) {
        auto& [codes, key] = scratch;
        read.read(table, begin, count, picked, n, codes);  // only the possible rows go on
        std::fill(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(n), kFirstGroup);
        for (const auto& [s, stride] : own) {
          const std::uint32_t* cs = codes[s].data();
          for (std::size_t i = 0; i < n; ++i) key[i] += (cs[i] + 1) * stride;
        }
        bool missing = false;
        for (const LinkLookup& l : lookups) missing |= l.add_keys(codes[l.source].data(), key.data(), n);
        std::uint32_t* slot = key.data();
        if (missing) {
          for (const LinkLookup& l : lookups) l.mark_missing(codes[l.source].data(), slot, n, kTrash);
        }
        for (std::size_t i = 0; i < n; ++i) a.hits[slot[i]] = 1;
        for (std::size_t k = 0; k < terms.size(); ++k)
          accumulate(in[k], a.terms[k], slot, codes[term_source[k]].data(), n);
    });
  } else if (table_root && links.empty()) {
    // Every dimension in the table, and more tuples than direct slots take (a table by
    // customer and product): a batch of rows' keys made from their codes, then their slots
    // given out per key, the table's entries for the batch's keys fetched ahead together.
    const Table& table = data.tables()[root];
    const std::vector<const DimPlace*> dims = walker.root_dims();
    BatchColumns read;
    std::vector<std::size_t> dim_source, term_source;
    for (const DimPlace* d : dims) dim_source.push_back(read.source_of(d->column));
    for (const auto& t : terms) term_source.push_back(read.source_of(t.column));
    acc.resize(in, slots);
    KeyIndex slot_map;
    std::vector<std::vector<std::uint32_t>> codes(read.columns.size(), std::vector<std::uint32_t>(kBatch));
    std::vector<std::uint64_t> key(kBatch);
    std::vector<std::uint32_t> slot(kBatch), picked(kBatch);
    const Bitset* possible = rows.rows[root].get();
    for (std::size_t begin = 0; begin < table.rows; begin += kBatch) {
      const std::size_t count = std::min(kBatch, table.rows - begin);
      const std::size_t n = possible != nullptr ? row_positions(possible->words() + begin / 64, count, picked.data()) : count;
      if (n == 0) continue;
      read.read(table, begin, count, n != count ? picked.data() : nullptr, n, codes);
      std::fill_n(key.begin(), n, std::uint64_t{0});
      for (std::size_t d = 0; d < dims.size(); ++d) {
        const std::uint32_t* cs = codes[dim_source[d]].data();
        const std::uint64_t stride = dims[d]->stride;
        for (std::size_t i = 0; i < n; ++i) key[i] += std::uint64_t{cs[i] + 1} * stride;  // NULL's kNull + 1: 0
      }
      for (std::size_t i = 0; i < n; ++i) slot_map.prefetch(key[i]);
      for (std::size_t i = 0; i < n; ++i) {
        const auto [at, added] = slot_map.emplace(key[i], static_cast<std::uint32_t>(slots));
        if (added) {
          key_of_slot.push_back(key[i]);
          ++slots;
        }
        slot[i] = at;
      }
      acc.resize(in, slots);
      for (std::size_t i = 0; i < n; ++i) acc.hits[slot[i]] = 1;
      for (std::size_t k = 0; k < terms.size(); ++k)
        accumulate(in[k], acc.terms[k], slot.data(), codes[term_source[k]].data(), n);
    }
    flush_all(in, acc.terms);
  } else {
    // Any shape: records one by one, each into the slots of every tuple it reaches and once
    // into the totals.
    acc.resize(in, slots);
    KeyIndex slot_map;
    std::vector<std::uint32_t> columns;
    for (const auto& t : terms) columns.push_back(t.column);
    std::vector<std::uint32_t> entry_slot, entry_record, entry_code;
    walker.for_each_record(columns, [&](const RecordBatch& b) {
      entry_slot.clear();
      entry_record.clear();
      for (std::size_t i = 0; i < b.n; ++i) {
        entry_slot.push_back(kTotal);
        entry_record.push_back(static_cast<std::uint32_t>(i));
        for (std::uint32_t k = b.key_offsets[i]; k < b.key_offsets[i + 1]; ++k) {
          const std::uint64_t key = b.keys[k];
          std::uint32_t s;
          if (direct) {
            s = static_cast<std::uint32_t>(key + kFirstGroup);
          } else {
            const auto [at, added] = slot_map.emplace(key, static_cast<std::uint32_t>(slots));
            if (added) {
              key_of_slot.push_back(key);
              acc.resize(in, ++slots);
            }
            s = at;
          }
          entry_slot.push_back(s);
          entry_record.push_back(static_cast<std::uint32_t>(i));
        }
      }
      for (const std::uint32_t s : entry_slot) acc.hits[s] = 1;
      entry_code.resize(entry_slot.size());
      for (std::size_t k = 0; k < terms.size(); ++k) {
        for (std::size_t j = 0; j < entry_slot.size(); ++j) entry_code[j] = b.extra[k][entry_record[j]];
        accumulate(in[k], acc.terms[k], entry_slot.data(), entry_code.data(), entry_slot.size());
      }
    });
    flush_all(in, acc.terms);
    totals_done = true;
  }
  if (!totals_done) totals_from_groups(in, acc, slots);

  NodeAggregates out;
  out.values.resize(terms.size());
  out.symbols.resize(terms.size());
  std::vector<std::uint32_t> group_slots;
  for (std::size_t s = kFirstGroup; s < slots; ++s)
    if (acc.hits[s] != 0) group_slots.push_back(static_cast<std::uint32_t>(s));
  // Groups in key order. Slots given out as keys came (not direct) are read in slot order, then
  // put in key order: read in key order, each slot's accumulators would be a miss of the caches.
  std::vector<std::uint32_t> key_order;  // position in group_slots of each group, by key
  if (!direct) {
    const std::size_t n = group_slots.size();
    const auto place_bits = static_cast<unsigned>(std::bit_width(n));
    const auto key_bits = static_cast<unsigned>(std::bit_width(key_space));
    key_order.resize(n);
    if (key_bits + place_bits <= 64) {
      std::vector<std::uint64_t> tagged(n);
      for (std::size_t i = 0; i < n; ++i) tagged[i] = key_of_slot[group_slots[i] - kFirstGroup] << place_bits | i;
      radix_sort(tagged, key_bits + place_bits);
      for (std::size_t j = 0; j < n; ++j)
        key_order[j] = static_cast<std::uint32_t>(tagged[j] & ((std::uint64_t{1} << place_bits) - 1));
    } else {
      std::iota(key_order.begin(), key_order.end(), 0U);
      std::sort(key_order.begin(), key_order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return key_of_slot[group_slots[a] - kFirstGroup] < key_of_slot[group_slots[b] - kFirstGroup];
      });
    }
  }
  const auto in_key_order = [&](auto& v) {
    if (key_order.empty()) return;
    std::remove_reference_t<decltype(v)> sorted(v.size());
    for (std::size_t j = 0; j < key_order.size(); ++j) sorted[j] = v[key_order[j]];
    v.swap(sorted);
  };
  out.keys.reserve(group_slots.size());
  for (const std::uint32_t s : group_slots) out.keys.push_back(direct ? s - kFirstGroup : key_of_slot[s - kFirstGroup]);
  in_key_order(out.keys);
  for (std::size_t k = 0; k < terms.size(); ++k) {
    std::vector<std::uint64_t> distinct;
    if (in[k].func == AggFunc::kCountDistinct) distinct = distinct_counts(in[k], acc.terms[k], slots);
    std::uint32_t symbol;
    out.values[k].reserve(group_slots.size());
    for (const std::uint32_t s : group_slots) {
      out.values[k].push_back(value_of(in[k], acc.terms[k], distinct, s, symbol));
      out.symbols[k].push_back(symbol);
    }
    in_key_order(out.values[k]);
    in_key_order(out.symbols[k]);
    out.totals.push_back(value_of(in[k], acc.terms[k], distinct, kTotal, symbol));
    out.total_symbols.push_back(symbol);
  }
  return out;
}

DenseGroups aggregate_by_column(const AssociativeModel& model, const RowStates& rows, std::uint32_t table_node,
                                std::uint32_t group_column, const Term& term) {
  const DataModel& data = model.data();
  const Table& table = data.tables()[table_node];
  const std::uint32_t n_groups = data.fields()[table.columns[group_column].field].symbols.size();
  // Slot of a record: its symbol + kFirstGroup; NULL (kNull + 2 wraps to kTrash) counts nowhere.
  static_assert(kNull + kFirstGroup == kTrash);
  const std::size_t slots = std::size_t{n_groups} + kFirstGroup;
  std::vector<TermInput> in(1);
  in[0] = term_input(data, term);
  const TermInput& t = in[0];
  const PackedIndex& groups = table.columns[group_column].index;
  const PackedIndex& values = table.columns[term.column].index;
  const Bitset* possible = rows.rows[table_node].get();
  // The slots a row can reach: one per symbol, and kTrash when NULL is stored.
  const std::size_t reachable = std::size_t{n_groups} + (groups.has_null() ? 1 : 0);
  struct Scratch {
    std::vector<std::uint32_t> slot, code;
    Hits hits;
  };
  const auto make_scratch = [&] {
    return Scratch{std::vector<std::uint32_t>(kBatch), std::vector<std::uint32_t>(kBatch), Hits{nullptr, reachable}};
  };
  const Accumulators acc = accumulate_chunks(
      table.rows, possible, rows.possible[table_node], in, slots, make_scratch,
      [&](Accumulators& a, std::size_t begin, std::size_t count, const std::uint32_t* picked, std::size_t n,
          Scratch& scratch) {
    auto& [slot, code, hits] = scratch;
    if (picked != nullptr && (n * 8 <= count || count > kBatch)) {  // few, or gathered
      for (std::size_t i = 0; i < n; ++i) {
        slot[i] = groups.get(begin + picked[i]);
        code[i] = values.get(begin + picked[i]);
      }
    } else {
      groups.decode(begin, count, slot.data());
      values.decode(begin, count, code.data());
      for (std::size_t i = 0; picked != nullptr && i < n; ++i) {
        slot[i] = slot[picked[i]];
        code[i] = code[picked[i]];
      }
    }
    for (std::size_t i = 0; i < n; ++i) slot[i] += kFirstGroup;
    hits.marks = a.hits.data();  // the thread's own (one Scratch a thread)
    hits.mark(Slots{slot.data(), 0}, n);
    accumulate(in[0], a.terms[0], slot.data(), code.data(), n);
  });
  DenseGroups out;
  out.values.resize(n_groups);
  out.hits.assign(acc.hits.begin() + kFirstGroup, acc.hits.end());
  const std::vector<std::uint64_t> no_distinct;
  std::uint32_t symbol;
  for (std::uint32_t g = 0; g < n_groups; ++g) out.values[g] = value_of(t, acc.terms[0], no_distinct, g + kFirstGroup, symbol);
  return out;
}

}  // namespace assoc::detail
