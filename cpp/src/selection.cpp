#include "assoc/selection.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "assoc/counters.hpp"
#include "assoc/error.hpp"
#include "assoc/hash.hpp"
#include "assoc/result_cache.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// ---- selection state -------------------------------------------------------------------

void SelectionState::set(std::uint32_t field, std::vector<std::uint32_t> symbols) {
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  if (symbols.empty()) {
    fields_.erase(field);
  } else {
    fields_[field] = std::move(symbols);
  }
}

SelectionState SelectionState::without(std::uint32_t field) const {
  SelectionState s = *this;
  s.clear(field);
  return s;
}

std::vector<std::uint32_t> SelectionState::encode() const {
  std::vector<std::uint32_t> out;
  for (const auto& [field, symbols] : fields_) {
    out.push_back(field);
    out.push_back(static_cast<std::uint32_t>(symbols.size()));
    out.insert(out.end(), symbols.begin(), symbols.end());
  }
  return out;
}

// The bytes of the state vectors themselves (what the result cache accounts for).
std::size_t RowStates::byte_size() const {
  std::size_t n = 0;
  for (const auto& r : rows)
    if (r) n += r->byte_size();
  return n;
}

std::size_t FieldStates::byte_size() const {
  return selected.byte_size() + possible.byte_size() + alternative.byte_size() + selected_excluded.byte_size();
}

// ---- kernels over packed columns ---------------------------------------------------------

namespace {

constexpr std::size_t kBatch = 1024;  // rows decoded at a time (16 whole blocks)

// Symbol sets have one bit more than the field has symbols: decoded NULLs (kNull) clamp to
// that last bit, which is never set, so no value needs a branch.
Bitset symbol_set(std::uint32_t n_symbols) { return Bitset(std::size_t{n_symbols} + 1); }

// Rows of a column whose symbol is in `set`. Membership is looked up in a byte per symbol
// while the field is small enough for that table to stay in cache, in the bitset otherwise.
Bitset match_rows(const PackedIndex& index, const Bitset& set) {
  const std::size_t n = index.size();
  Bitset out(n);
  const auto limit = static_cast<std::uint32_t>(set.size() - 1);
  std::vector<std::uint8_t> bytes;
  if (limit <= (1U << 17)) {
    bytes.assign(std::size_t{limit} + 1, 0);
    set.for_each([&](std::size_t i) { bytes[i] = 1; });
  }
  std::uint64_t* o = out.words();
  const std::size_t whole = n / 64;
  parallel_ranges(
      whole, 16,
      [&](std::size_t begin, std::size_t end) {
        if (bytes.empty()) {
          index.match_blocks(begin, end - begin, set.words(), limit, o + begin);
        } else {
          index.match_blocks(begin, end - begin, bytes.data(), limit, o + begin);
        }
      },
      nullptr, std::size_t{1} << 10);
  // The last, partial block.
  for (std::size_t r = whole * 64; r < n; ++r)
    if (set.test(std::min(index.get(r), limit))) out.set(r);
  return out;
}

// Adds the symbols on rows of blocks [first, last) (all rows when `rows` is null) to `acc`.
void collect_values(const PackedIndex& index, const Bitset* rows, std::size_t first, std::size_t last,
                    std::uint32_t limit, Bitset& acc) {
  const std::size_t n = index.size();
  std::uint64_t* a = acc.words();
  std::uint32_t buf[kBatch];
  if (rows == nullptr) {
    const std::size_t end = std::min(n, last * 64);
    for (std::size_t r = first * 64; r < end; r += kBatch) {
      const std::size_t k = std::min(kBatch, end - r);
      index.decode(r, k, buf);
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t x = std::min(buf[j], limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    }
    return;
  }
  const std::uint64_t* m = rows->words();
  for (std::size_t w = first; w < last; ++w) {
    std::uint64_t bits = m[w];
    if (bits == 0) continue;
    // Few rows in a block: read them one by one; many: decode the block.
    if (popcount64(bits) <= 8) {
      for (; bits != 0; bits &= bits - 1) {
        const std::uint32_t x = std::min(index.get(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))), limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    } else {
      const std::size_t k = std::min<std::size_t>(64, n - w * 64);
      index.decode(w * 64, k, buf);
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t x = std::min(buf[j], limit);
        a[x >> 6] |= ((bits >> j) & 1U) << (x & 63);
      }
    }
  }
}

// Symbols that occur on `rows` (null: every row) of a column.
Bitset values_on_rows(const PackedIndex& index, const Bitset* rows, std::uint32_t n_symbols) {
  Bitset out = symbol_set(n_symbols);
  const std::size_t blocks = (index.size() + 63) / 64;
  // Each task gathers into a bitset of its own, at least 256 blocks (16K rows) per task.
  const std::size_t tasks = std::max<std::size_t>(1, std::min<std::size_t>(threads() * 2, blocks / 256));
  std::vector<Bitset> partial(tasks - 1);
  parallel_for(tasks, [&](std::size_t t) {
    Bitset* acc = &out;
    if (t > 0) {
      partial[t - 1] = symbol_set(n_symbols);
      acc = &partial[t - 1];
    }
    collect_values(index, rows, blocks * t / tasks, blocks * (t + 1) / tasks, n_symbols, *acc);
  });
  for (const auto& p : partial) out.or_with(p);
  out.reset(n_symbols);
  return out;
}

// ---- inference -----------------------------------------------------------------------------

// Computes the possible rows of every table for one selection state by passing messages
// along the link forest: a message is the set of a key field's values that one side allows,
// or "no constraint" (null) when that side holds no selection. Each directed edge is
// computed at most once.
class Evaluator {
 public:
  Evaluator(const AssociativeModel& model, const SelectionState& state)
      : m_(model), d_(model.data()), selected_(d_.fields().size()) {
    for (const auto& [field, symbols] : state.fields()) {
      auto set = std::make_shared<Bitset>(symbol_set(d_.fields()[field].symbols.size()));
      for (const std::uint32_t s : symbols) set->set(s);
      selected_[field] = std::move(set);
    }
    const auto& tables = d_.tables();
    edge_base_.resize(tables.size() + 1, 0);
    for (std::size_t t = 0; t < tables.size(); ++t) edge_base_[t + 1] = edge_base_[t] + tables[t].columns.size();
    const std::size_t edges = edge_base_.back();
    side_to_table_.assign(edges, -1);
    side_to_field_.assign(edges, -1);
    to_table_.resize(edges);
    to_field_.resize(edges);
    matched_.resize(edges);
    to_table_done_.assign(edges, 0);
    to_field_done_.assign(edges, 0);
  }

  std::shared_ptr<RowStates> run() {
    const auto& tables = d_.tables();
    auto out = std::make_shared<RowStates>();
    out->rows.resize(tables.size());
    out->possible.resize(tables.size());
    for (std::uint32_t t = 0; t < tables.size(); ++t) {
      const Table& table = tables[t];
      std::shared_ptr<const Bitset> rows;  // shared as it is while one constraint applies
      std::shared_ptr<Bitset> combined;
      for (std::uint32_t c = 0; c < table.columns.size(); ++c) {
        std::shared_ptr<const Bitset> matched;
        if (table.is_loose) {
          if (auto constraint = field_constraint(table.columns[c].field))
            matched = std::make_shared<Bitset>(match_rows(table.columns[c].index, *constraint));
        } else if (side_to_table(t, c)) {
          matched = match(t, c);
        }
        if (!matched) continue;
        if (!rows) {
          rows = std::move(matched);
        } else {
          if (!combined) {
            combined = std::make_shared<Bitset>(*rows);
            rows = combined;
          }
          combined->and_with(*matched);
        }
      }
      out->possible[t] = rows ? rows->count() : table.rows;
      out->rows[t] = std::move(rows);
    }
    return out;
  }

 private:
  std::size_t edge(std::uint32_t t, std::uint32_t c) const { return edge_base_[t] + c; }

  // Whether the side of the field behind column c (away from table t) holds a selection.
  bool side_to_table(std::uint32_t t, std::uint32_t c) {
    int8_t& memo = side_to_table_[edge(t, c)];
    if (memo < 0) {
      const std::uint32_t f = d_.tables()[t].columns[c].field;
      bool any = selected_[f] != nullptr;
      for (const auto& h : m_.linked_holders(f))
        if (!any && h.table != t) any = side_to_field(h.table, h.column);
      memo = any ? 1 : 0;
    }
    return memo == 1;
  }

  // Whether the side of table t (away from the field of its column c) holds a selection.
  bool side_to_field(std::uint32_t t, std::uint32_t c) {
    int8_t& memo = side_to_field_[edge(t, c)];
    if (memo < 0) {
      bool any = false;
      const auto n = static_cast<std::uint32_t>(d_.tables()[t].columns.size());
      for (std::uint32_t o = 0; o < n && !any; ++o)
        if (o != c) any = side_to_table(t, o);
      memo = any ? 1 : 0;
    }
    return memo == 1;
  }

  // The values of column c's field that its side allows table t (only when side_to_table).
  std::shared_ptr<const Bitset> to_table(std::uint32_t t, std::uint32_t c) {
    const std::size_t e = edge(t, c);
    if (!to_table_done_[e]) {
      const std::uint32_t f = d_.tables()[t].columns[c].field;
      std::shared_ptr<Bitset> acc;
      if (selected_[f]) acc = std::make_shared<Bitset>(*selected_[f]);
      for (const auto& h : m_.linked_holders(f)) {
        if (h.table == t || !side_to_field(h.table, h.column)) continue;
        const Bitset& m = *to_field(h.table, h.column);
        if (!acc) {
          acc = std::make_shared<Bitset>(m);
        } else {
          acc->and_with(m);
        }
      }
      to_table_[e] = std::move(acc);
      to_table_done_[e] = 1;
    }
    return to_table_[e];
  }

  // The values of column c's field on the rows of table t that its other sides allow (only
  // when side_to_field).
  std::shared_ptr<const Bitset> to_field(std::uint32_t t, std::uint32_t c) {
    const std::size_t e = edge(t, c);
    if (!to_field_done_[e]) {
      const Table& table = d_.tables()[t];
      std::shared_ptr<Bitset> mask;
      const Bitset* rows = nullptr;
      for (std::uint32_t o = 0; o < table.columns.size(); ++o) {
        if (o == c || !side_to_table(t, o)) continue;
        const Bitset& m = *match(t, o);
        if (rows == nullptr) {
          rows = &m;
        } else {
          if (!mask) {
            mask = std::make_shared<Bitset>(*rows);
            rows = mask.get();
          }
          mask->and_with(m);
        }
      }
      const Column& col = table.columns[c];
      to_field_[e] = std::make_shared<Bitset>(values_on_rows(col.index, rows, d_.fields()[col.field].symbols.size()));
      to_field_done_[e] = 1;
    }
    return to_field_[e];
  }

  // Rows of table t whose column c holds a value its field's side allows.
  std::shared_ptr<const Bitset> match(std::uint32_t t, std::uint32_t c) {
    const std::size_t e = edge(t, c);
    if (!matched_[e]) matched_[e] = std::make_shared<Bitset>(match_rows(d_.tables()[t].columns[c].index, *to_table(t, c)));
    return matched_[e];
  }

  // What the selections and the link graph allow for a field, as a loose table sees it.
  std::shared_ptr<const Bitset> field_constraint(std::uint32_t f) {
    std::shared_ptr<Bitset> acc;
    if (selected_[f]) acc = std::make_shared<Bitset>(*selected_[f]);
    for (const auto& h : m_.linked_holders(f)) {
      if (!side_to_field(h.table, h.column)) continue;
      const Bitset& m = *to_field(h.table, h.column);
      if (!acc) {
        acc = std::make_shared<Bitset>(m);
      } else {
        acc->and_with(m);
      }
    }
    return acc;
  }

  const AssociativeModel& m_;
  const DataModel& d_;
  std::vector<std::shared_ptr<const Bitset>> selected_;  // per field
  std::vector<std::size_t> edge_base_;                   // edges: one per table column
  std::vector<int8_t> side_to_table_, side_to_field_;
  std::vector<std::shared_ptr<const Bitset>> to_table_, to_field_;
  std::vector<std::shared_ptr<const Bitset>> matched_;
  std::vector<std::uint8_t> to_table_done_, to_field_done_;
};

enum CacheKind : std::uint32_t { kRowStates = 1, kFieldStates = 2 };

}  // namespace

// ---- the associative model -----------------------------------------------------------------

struct AssociativeModel::Lookup {
  std::unordered_map<std::uint64_t, std::uint32_t> numbers;
  std::unordered_map<std::string_view, std::uint32_t> texts;
};

std::shared_ptr<const AssociativeModel> AssociativeModel::create(std::shared_ptr<const DataModel> model) {
  if (!model) throw Error("internal: no model");
  return std::shared_ptr<const AssociativeModel>(new AssociativeModel(std::move(model)));
}

AssociativeModel::AssociativeModel(std::shared_ptr<const DataModel> model)
    : model_(std::move(model)), holders_(model_->fields().size()), linked_(model_->fields().size()),
      lookups_(model_->fields().size()) {
  const auto& tables = model_->tables();
  for (std::uint32_t t = 0; t < tables.size(); ++t) {
    for (std::uint32_t c = 0; c < tables[t].columns.size(); ++c) {
      const std::uint32_t f = tables[t].columns[c].field;
      holders_[f].push_back(Holder{t, c});
      if (!tables[t].is_loose) linked_[f].push_back(Holder{t, c});
    }
  }
}

AssociativeModel::~AssociativeModel() = default;

std::uint32_t AssociativeModel::field_id(const std::string& name) const {
  const int f = model_->find_field(name);
  if (f < 0) throw Error("no field named '" + name + "'");
  return static_cast<std::uint32_t>(f);
}

std::uint32_t AssociativeModel::table_id(const std::string& name) const {
  const int t = model_->find_table(name);
  if (t < 0) throw Error("no table named '" + name + "'");
  return static_cast<std::uint32_t>(t);
}

const AssociativeModel::Lookup& AssociativeModel::lookup(std::uint32_t field) const {
  std::lock_guard<std::mutex> lock(lookup_mutex_);
  auto& slot = lookups_.at(field);
  if (!slot) {
    auto l = std::make_unique<Lookup>();
    const SymbolTable& s = model_->fields()[field].symbols;
    l->numbers.reserve(s.any_numeric() ? s.size() : 0);
    l->texts.reserve(s.any_text() ? s.size() : 0);
    for (std::uint32_t i = 0; i < s.size(); ++i) {
      if (s.has_number(i)) l->numbers.emplace(number_key(s.number(i)), i);
      if (s.has_text(i)) l->texts.emplace(s.text(i), i);
    }
    slot = std::move(l);
  }
  return *slot;
}

void AssociativeModel::prepare_lookup(std::uint32_t field) const { lookup(field); }

std::uint32_t AssociativeModel::find_number(std::uint32_t field, double value) const {
  const Lookup& l = lookup(field);
  auto it = l.numbers.find(number_key(value));
  return it == l.numbers.end() ? kNull : it->second;
}

std::uint32_t AssociativeModel::find_text(std::uint32_t field, std::string_view text) const {
  const Lookup& l = lookup(field);
  auto it = l.texts.find(text);
  return it == l.texts.end() ? kNull : it->second;
}

std::shared_ptr<RowStates> AssociativeModel::compute_rows(const SelectionState& state) const {
  return Evaluator(*this, state).run();
}

std::shared_ptr<const RowStates> AssociativeModel::rows(const SelectionState& state) const {
  CacheKey key{this, kRowStates, 0, state.encode()};
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const RowStates>(hit);
  std::shared_ptr<const RowStates> computed = compute_rows(state);
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), weak_from_this(), computed, bytes);
  return computed;
}

std::shared_ptr<FieldStates> AssociativeModel::compute_field(const SelectionState& state, std::uint32_t field,
                                                             const RowStates& rows) const {
  const std::uint32_t n = model_->fields()[field].symbols.size();
  const auto& tables = model_->tables();
  auto values_under = [&](const RowStates& rows) {
    Bitset out = symbol_set(n);
    for (const auto& h : holders_[field])
      out.or_with(values_on_rows(tables[h.table].columns[h.column].index, rows.rows[h.table].get(), n));
    return out;
  };
  auto out = std::make_shared<FieldStates>();
  out->selected = symbol_set(n);
  auto it = state.fields().find(field);
  if (it != state.fields().end()) {
    for (const std::uint32_t s : it->second) out->selected.set(s);
    out->alternative = values_under(*this->rows(state.without(field)));
    out->alternative.and_not(out->selected);
  } else {
    out->alternative = symbol_set(n);
  }
  out->possible = values_under(rows);
  out->selected_excluded = out->selected;
  out->selected_excluded.and_not(out->possible);
  out->possible.and_not(out->selected);
  out->n_selected = out->selected.count();
  out->n_possible = out->possible.count();
  out->n_alternative = out->alternative.count();
  out->n_excluded = n - out->n_selected - out->n_possible - out->n_alternative;
  return out;
}

std::shared_ptr<const FieldStates> AssociativeModel::field_states(const SelectionState& state, std::uint32_t field,
                                                                  std::shared_ptr<const RowStates> rows) const {
  if (field >= model_->fields().size()) throw Error("internal: field out of range");
  CacheKey key{this, kFieldStates, field, state.encode()};
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const FieldStates>(hit);
  if (!rows) rows = this->rows(state);
  std::shared_ptr<const FieldStates> computed = compute_field(state, field, *rows);
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), weak_from_this(), computed, bytes);
  return computed;
}

// ---- sessions --------------------------------------------------------------------------------

Session::Session(std::shared_ptr<const AssociativeModel> model, std::string user)
    : model_(std::move(model)), user_(std::move(user)) {
  if (!model_) throw Error("internal: a session needs a model");
  Counters::instance().session_opened(user_);
}

Session::~Session() { close(); }

bool Session::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void Session::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  rows_.reset();
  Counters::instance().session_closed(user_);
}

void Session::require_open() const {
  if (closed_) throw Error("the session is closed");
}

void Session::evaluate() { rows_ = model_->rows(state_); }

void Session::select(std::uint32_t field, std::vector<std::uint32_t> symbols) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const auto& fields = model_->data().fields();
  if (field >= fields.size()) throw Error("internal: field out of range");
  for (const std::uint32_t s : symbols)
    if (s >= fields[field].symbols.size()) throw Error("internal: symbol out of range");
  Counters::instance().selection();
  state_.set(field, std::move(symbols));
  evaluate();
}

void Session::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  state_.clear();
  evaluate();
}

void Session::clear_field(std::uint32_t field) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  state_.clear(field);
  evaluate();
}

SelectionState Session::selection() const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  return state_;
}

std::shared_ptr<const FieldStates> Session::field_states(std::uint32_t field) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  return model_->field_states(state_, field, rows_);
}

std::uint64_t Session::possible_rows(std::uint32_t table) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  if (!rows_) return model_->rows(state_)->possible.at(table);
  return rows_->possible.at(table);
}

}  // namespace assoc
