// The associative model: selection states, value look-ups, and the cached row and field
// states of a selection state.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "assoc/error.hpp"
#include "assoc/hash.hpp"
#include "assoc/number_text.hpp"
#include "assoc/result_cache.hpp"
#include "assoc/selection.hpp"
#include "assoc/value_order.hpp"
#include "inference.hpp"
#include "selection_kernels.hpp"

namespace assoc {
namespace {

using detail::symbol_set;
using detail::values_on_rows;

enum CacheKind : std::uint32_t { kRowStates = 1, kFieldStates = 2 };

}  // namespace

void SelectionState::set(std::uint32_t field, std::vector<std::uint32_t> symbols) {
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  searches_.erase(field);
  if (symbols.empty()) {
    fields_.erase(field);
  } else {
    fields_[field] = std::move(symbols);
  }
}

void SelectionState::set_search(std::uint32_t field, std::string text) {
  if (has(field) && !fields_.at(field).empty() && !text.empty()) {
    searches_[field] = std::move(text);
  } else {
    searches_.erase(field);
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
  // Search texts (a state function shows them): after a marker no field id reaches, each
  // field, its text's length and its bytes, four to a word.
  for (const auto& [field, text] : searches_) {
    out.push_back(0xFFFFFFFEU);
    out.push_back(field);
    out.push_back(static_cast<std::uint32_t>(text.size()));
    for (std::size_t i = 0; i < text.size(); i += 4) {
      std::uint32_t word = 0;
      for (std::size_t k = i; k < std::min(text.size(), i + 4); ++k)
        word |= static_cast<std::uint32_t>(static_cast<unsigned char>(text[k])) << (8 * (k - i));
      out.push_back(word);
    }
  }
  if (mask_) {  // no field id is this large: the mask's part cannot be read as selections
    out.push_back(0xFFFFFFFFU);
    out.push_back(static_cast<std::uint32_t>(mask_->serial()));
    out.push_back(static_cast<std::uint32_t>(mask_->serial() >> 32));
  }
  return out;
}

std::shared_ptr<const RowMask> RowMask::create(std::shared_ptr<const AssociativeModel> model,
                                               const SelectionState& reduction) {
  if (!model) throw Error("internal: a row mask needs a model");
  if (reduction.mask()) throw Error("internal: a reduction is plain selections");
  static std::atomic<std::uint64_t> serials{0};
  std::shared_ptr<RowMask> mask(new RowMask());
  mask->serial_ = ++serials;
  mask->rows_ = detail::infer_rows(*model, reduction);
  mask->reduction_ = reduction;
  mask->values_.resize(model->data().fields().size());
  mask->model_ = std::move(model);
  return mask;
}

const Bitset& RowMask::values(std::uint32_t field) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = values_.at(field);
  if (!slot) {
    slot = std::make_unique<Bitset>(model_->values_on_possible(field, *rows_));
  }
  return *slot;
}

std::size_t RowMask::field_byte_size(std::uint32_t field) const {
  const SymbolTable& symbols = model_->data().fields().at(field).symbols;
  const Bitset& kept = values(field);
  if (kept.count() == symbols.size()) return symbols.byte_size();
  SymbolTableBuilder own;
  for (std::uint32_t s = 0; s < symbols.size(); ++s)
    if (kept.test(s)) own.append(symbols.value(s));
  return own.finish().byte_size();
}

std::size_t RowMask::column_byte_size(std::uint32_t table, std::uint32_t column) const {
  const Table& t = model_->data().tables().at(table);
  const Column& c = t.columns.at(column);
  const Bitset* rows = rows_->rows.at(table).get();
  const Bitset& kept = values(c.field);
  const auto n_symbols = static_cast<std::uint32_t>(kept.count());
  if (rows == nullptr && n_symbols == model_->data().fields()[c.field].symbols.size()) return c.index.byte_size();
  // The user's code of each kept symbol: its rank among them.
  std::vector<std::uint32_t> code(model_->data().fields()[c.field].symbols.size(), kNull);
  std::uint32_t next = 0;
  for (std::uint32_t s = 0; s < code.size(); ++s)
    if (kept.test(s)) code[s] = next++;
  std::vector<std::uint32_t> decoded(t.rows);
  c.index.decode(0, t.rows, decoded.data());
  std::vector<std::uint32_t> own;
  own.reserve(rows == nullptr ? t.rows : rows_->possible.at(table));
  for (std::size_t r = 0; r < t.rows; ++r)
    if (rows == nullptr || rows->test(r)) own.push_back(decoded[r] == kNull ? kNull : code[decoded[r]]);
  return PackedIndex::pack(own.data(), own.size(), n_symbols).byte_size();
}

// The bytes of the state vectors themselves (what the result cache accounts for).
std::size_t RowStates::byte_size() const {
  std::size_t n = 0;
  for (const auto& r : rows)
    if (r) n += r->byte_size();
  for (const auto& v : values)
    if (v) n += v->byte_size();
  for (const auto& c : constrained)
    if (c.allowed) n += c.allowed->byte_size();
  return n;
}

std::size_t FieldStates::byte_size() const {
  return selected.byte_size() + possible.byte_size() + alternative.byte_size() + excluded.byte_size() +
         selected_excluded.byte_size();
}

namespace {

// Per ValueState, in its order: the bitset, the count and the name.
constexpr Bitset FieldStates::*kStateValues[] = {&FieldStates::selected, &FieldStates::possible,
                                                 &FieldStates::alternative, &FieldStates::excluded,
                                                 &FieldStates::selected_excluded};
constexpr std::uint64_t FieldStates::*kStateCounts[] = {&FieldStates::n_selected, &FieldStates::n_possible,
                                                        &FieldStates::n_alternative, &FieldStates::n_excluded,
                                                        &FieldStates::n_selected_excluded};
constexpr std::string_view kStateNames[] = {"selected", "possible", "alternative", "excluded", "selected_excluded"};
constexpr ValueState kNamedStates[] = {ValueState::kSelected, ValueState::kPossible, ValueState::kAlternative,
                                       ValueState::kExcluded, ValueState::kSelectedExcluded};

}  // namespace

const Bitset& FieldStates::values(ValueState state) const { return this->*kStateValues[static_cast<std::size_t>(state)]; }

std::uint64_t FieldStates::count(ValueState state) const { return this->*kStateCounts[static_cast<std::size_t>(state)]; }

std::string_view name_of(ValueState state) { return kStateNames[static_cast<std::size_t>(state)]; }

ValueState value_state_named(std::string_view name) {
  for (const ValueState s : kNamedStates)
    if (name_of(s) == name) return s;
  throw Error("unknown state '" + std::string(name) +
              "' (selected, possible, alternative, excluded or selected_excluded)");
}

struct AssociativeModel::Lookup {
  std::unordered_map<std::uint64_t, std::uint32_t> numbers;
  std::unordered_map<std::string_view, std::uint32_t> texts;
};

std::shared_ptr<const AssociativeModel> AssociativeModel::create(std::shared_ptr<const DataModel> model) {
  if (!model) throw Error("internal: no model");
  return std::shared_ptr<const AssociativeModel>(new AssociativeModel(std::move(model)));
}

namespace {
std::atomic<std::uint64_t> next_serial{1};
}  // namespace

AssociativeModel::AssociativeModel(std::shared_ptr<const DataModel> model)
    : model_(std::move(model)),
      serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      holders_(model_->fields().size()), linked_(model_->fields().size()),
      lookups_(model_->fields().size()), ranks_(model_->fields().size()), column_values_(model_->tables().size()) {
  const auto& tables = model_->tables();
  for (std::uint32_t t = 0; t < tables.size(); ++t) column_values_[t].resize(tables[t].columns.size());
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

std::shared_ptr<const std::vector<std::uint32_t>> AssociativeModel::value_ranks_found(std::uint32_t field) const {
  std::lock_guard<std::mutex> lock(ranks_mutex_);
  return ranks_.at(field);
}

std::shared_ptr<const std::vector<std::uint32_t>> AssociativeModel::value_ranks(std::uint32_t field) const {
  if (auto found = value_ranks_found(field)) return found;
  // Sorted outside the lock (a field of millions of values takes a tenth of a second): two
  // threads asking at once may both sort, and the first kept is used.
  const SymbolTable& symbols = model_->fields().at(field).symbols;
  std::vector<std::uint32_t> order(symbols.size());
  std::iota(order.begin(), order.end(), 0U);
  detail::sort_by_value(symbols, order);
  auto ranks = std::make_shared<std::vector<std::uint32_t>>(order.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) (*ranks)[order[i]] = i;
  std::lock_guard<std::mutex> lock(ranks_mutex_);
  auto& slot = ranks_.at(field);
  if (!slot) slot = std::move(ranks);
  return slot;
}

Bitset AssociativeModel::values_on_possible(std::uint32_t field, const RowStates& rows) const {
  if (const Bitset* found = rows.values_of(field)) return *found;
  // A field of one table whose rows one constraint on its column made (a selection of the
  // field alone): the values allowed that the column holds at all, when those are known.
  if (holders_[field].size() == 1) {
    const Holder& h = holders_[field].front();
    const RowStates::OneConstraint* one = rows.constraint_of(h.table);
    if (one != nullptr && one->column == h.column) {
      if (auto held = values_found_on(h.table, h.column)) {
        Bitset out = *held;
        out.and_with(*one->allowed);
        return out;
      }
    }
  }
  Bitset out = symbol_set(model_->fields()[field].symbols.size());
  for (const auto& h : holders_[field]) out.or_with(values_on(h.table, h.column, rows.rows[h.table].get()));
  return out;
}

std::shared_ptr<const Bitset> AssociativeModel::values_found_on(std::uint32_t table, std::uint32_t column) const {
  std::lock_guard<std::mutex> lock(column_mutex_);
  return column_values_.at(table).at(column);
}

Bitset AssociativeModel::values_on(std::uint32_t table, std::uint32_t column, const Bitset* rows) const {
  const Column& col = model_->tables().at(table).columns.at(column);
  const std::uint32_t n = model_->fields()[col.field].symbols.size();
  std::shared_ptr<const Bitset> kept;
  {
    std::lock_guard<std::mutex> lock(column_mutex_);
    kept = column_values_[table][column];
  }
  // A scan stops once it has found every value the column holds (all the field's symbols until
  // the column's own are known).
  if (rows != nullptr) return values_on_rows(col.index, rows, n, kept ? kept->count() : n);
  if (!kept) {  // made outside the lock: two threads may both make it, alike
    kept = std::make_shared<const Bitset>(values_on_rows(col.index, nullptr, n, n));
    std::lock_guard<std::mutex> lock(column_mutex_);
    if (!column_values_[table][column]) column_values_[table][column] = kept;
  }
  return *kept;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> AssociativeModel::symbols_with_texts(
    std::uint32_t field, const std::vector<std::string>& texts) const {
  const SymbolTable& s = model_->fields().at(field).symbols;
  std::unordered_map<std::string_view, std::uint32_t> wanted_texts;
  std::unordered_map<double, std::uint32_t> wanted_numbers;  // texts that are some number's canonical text
  for (std::uint32_t i = 0; i < texts.size(); ++i) {
    const std::string& t = texts[i];
    wanted_texts.emplace(t, i);
    double v = 0;
    if (parse_number(t, v) && is_canonical_text(t, v)) wanted_numbers.emplace(v, i);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::uint32_t i = 0; i < s.size(); ++i) {
    if (s.has_text(i)) {
      if (auto it = wanted_texts.find(s.text(i)); it != wanted_texts.end()) out.emplace_back(i, it->second);
    } else if (s.has_number(i)) {
      if (auto it = wanted_numbers.find(s.number(i)); it != wanted_numbers.end()) out.emplace_back(i, it->second);
    }
  }
  return out;
}

std::uint32_t AssociativeModel::find_number(std::uint32_t field, double value) const {
  if (std::isnan(value)) return kNull;
  const Lookup& l = lookup(field);
  auto it = l.numbers.find(number_key(value));
  return it == l.numbers.end() ? kNull : it->second;
}

std::uint32_t AssociativeModel::find_text(std::uint32_t field, std::string_view text) const {
  const Lookup& l = lookup(field);
  auto it = l.texts.find(text);
  return it == l.texts.end() ? kNull : it->second;
}

std::uint32_t AssociativeModel::find_value(std::uint32_t field, const DualView& value) const {
  if (value.has_number()) return find_number(field, value.number);
  return value.has_text ? find_text(field, value.text) : kNull;
}

std::shared_ptr<RowStates> AssociativeModel::compute_rows(const SelectionState& state, const SelectionState* wider,
                                                          const RowStates* wider_rows) const {
  return detail::infer_rows(*this, state, wider, wider_rows);
}

std::shared_ptr<const RowStates> AssociativeModel::rows(const SelectionState& state) const {
  return rows(state, state, nullptr);
}

std::shared_ptr<const RowStates> AssociativeModel::rows(const SelectionState& state, const SelectionState& wider,
                                                        const std::shared_ptr<const RowStates>& wider_rows) const {
  if (state.mask() && state.fields().empty()) return state.mask()->rows();  // the mask's own rows
  CacheKey key{this, kRowStates, 0, state.encode()};
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const RowStates>(hit);
  std::shared_ptr<const RowStates> computed =
      wider_rows ? compute_rows(state, &wider, wider_rows.get()) : compute_rows(state);
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), weak_from_this(), computed, bytes);
  return computed;
}

std::shared_ptr<FieldStates> AssociativeModel::compute_field(const SelectionState& state, std::uint32_t field,
                                                             const RowStates& rows) const {
  const std::uint32_t n = model_->fields()[field].symbols.size();
  auto out = std::make_shared<FieldStates>();
  out->selected = symbol_set(n);
  auto it = state.fields().find(field);
  if (it != state.fields().end()) {
    for (const std::uint32_t s : it->second) out->selected.set(s);
    out->alternative = values_on_possible(field, *this->rows(state.without(field)));
    out->alternative.and_not(out->selected);
  } else {
    out->alternative = symbol_set(n);
  }
  // With no selection under a mask the possible values are the mask's own (made once).
  const bool unselected = state.mask() && state.fields().empty();
  out->possible = unselected ? state.mask()->values(field) : values_on_possible(field, rows);
  out->selected_excluded = out->selected;
  out->selected_excluded.and_not(out->possible);
  out->possible.and_not(out->selected);
  out->excluded = symbol_set(n);
  out->excluded.set_first(n);
  out->excluded.and_not(out->selected);
  out->excluded.and_not(out->possible);
  out->excluded.and_not(out->alternative);
  if (const auto& mask = state.mask()) {  // values off the mask's rows are in no state
    const Bitset& shown = mask->values(field);
    for (Bitset* b : {&out->selected, &out->possible, &out->alternative, &out->excluded, &out->selected_excluded})
      b->and_with(shown);
  }
  out->n_selected = out->selected.count();
  out->n_possible = out->possible.count();
  out->n_alternative = out->alternative.count();
  out->n_excluded = out->excluded.count();
  out->n_selected_excluded = out->selected_excluded.count();
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

}  // namespace assoc
