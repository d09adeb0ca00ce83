// Inference by message passing: each directed edge of the link forest (a table column) is
// computed at most once, and only on the sides that hold a selection.
#include "inference.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "selection_kernels.hpp"

namespace assoc::detail {
namespace {

// Computes the possible rows of every table for one selection state by passing messages
// along the link forest: a message is the set of a key field's values that one side allows,
// or "no constraint" (null) when that side holds no selection. Each directed edge is
// computed at most once.
class Evaluator {
 public:
  Evaluator(const AssociativeModel& model, const SelectionState& state, const SelectionState* wider,
            const RowStates* wider_rows)
      : m_(model), d_(model.data()), selected_(d_.fields().size()) {
    if (wider != nullptr && wider_rows != nullptr && narrows(state, *wider) &&
        wider_rows->rows.size() == d_.tables().size()) {
      wider_ = wider;
      wider_rows_ = wider_rows;
      state_fields_ = &state.fields();
    }
    for (const auto& [field, symbols] : state.fields()) {
      auto set = std::make_shared<Bitset>(symbol_set(d_.fields()[field].symbols.size()));
      for (const std::uint32_t s : symbols) set->set(s);
      selected_[field] = std::move(set);
    }
    // A row mask's reduction holds under every selection: a reduced field's rows agree with
    // both its reduction and the state's selection.
    if (const auto& mask = state.mask()) {
      for (const auto& [field, symbols] : mask->reduction().fields()) {
        auto set = std::make_shared<Bitset>(symbol_set(d_.fields()[field].symbols.size()));
        for (const std::uint32_t s : symbols) set->set(s);
        if (selected_[field]) set->and_with(*selected_[field]);
        selected_[field] = std::move(set);
      }
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
      // A table no message leaves (loose, or linked to no other) matches its columns here
      // only, the most selective first and each later one only within the rows left: the
      // others' matches are shared with the messages they make.
      const bool alone = table.is_loose || !linked_to_others(t);
      std::shared_ptr<const Bitset> rows;  // shared as it is while one constraint applies
      std::shared_ptr<Bitset> combined;
      std::vector<std::pair<double, std::pair<std::uint32_t, std::shared_ptr<const Bitset>>>> here;
      // Such a table's rows under a wider state hold all but the fields selected otherwise.
      const bool from_wider = wider_ != nullptr && !table.is_loose && alone;
      if (from_wider) rows = wider_rows_->rows[t];
      // The constraints applied here, and the last one's column and values.
      std::size_t constraints = rows ? 1 : 0;
      RowStates::OneConstraint last;
      for (std::uint32_t c = 0; c < table.columns.size(); ++c) {
        const std::uint32_t f = table.columns[c].field;
        std::shared_ptr<const Bitset> matched;
        if (from_wider && same_selection(f)) continue;
        if (table.is_loose) {
          if (auto constraint = field_constraint(f)) here.push_back({share(*constraint, f), {c, std::move(constraint)}});
        } else if (side_to_table(t, c)) {
          if (alone) {
            auto constraint = to_table(t, c);
            here.push_back({share(*constraint, f), {c, std::move(constraint)}});
          } else {
            matched = match(t, c);
            ++constraints;
            last = {c, to_table(t, c)};
          }
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
      std::stable_sort(here.begin(), here.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& item : here) {
        const auto& [c, allowed] = item.second;
        rows = std::make_shared<const Bitset>(match_rows(table.columns[c].index, *allowed, rows.get()));
        ++constraints;
        last = {c, allowed};
      }
      if (constraints == 1) {
        if (out->constrained.empty()) out->constrained.resize(tables.size());
        out->constrained[t] = std::move(last);
      }
      out->possible[t] = rows ? rows->count() : table.rows;
      out->rows[t] = std::move(rows);
    }
    key_values(*out);
    return out;
  }

 private:
  std::size_t edge(std::uint32_t t, std::uint32_t c) const { return edge_base_[t] + c; }

  // Whether `state` narrows `wider`: the same mask, and every field `wider` selects selected
  // in `state` too, with no values more (selections are sorted).
  static bool narrows(const SelectionState& state, const SelectionState& wider) {
    if (state.mask() != wider.mask()) return false;
    for (const auto& [field, symbols] : wider.fields()) {
      auto it = state.fields().find(field);
      if (it == state.fields().end() ||
          !std::includes(symbols.begin(), symbols.end(), it->second.begin(), it->second.end()))
        return false;
    }
    return true;
  }

  // A key field's values on the possible rows, from the messages already passed: on a link
  // forest, when a selection reaches the field through any of its tables, those values are
  // its own selection (if any) and every message toward it from a side holding a selection.
  // (A table of that side keeps exactly the rows whose key the other sides allow, so its
  // values are these; a table of a side without one keeps only rows whose key is among them.)
  // A field with a loose holder, or a message not passed, is left to a scan of the rows.
  void key_values(RowStates& out) {
    const auto& fields = d_.fields();
    for (std::uint32_t f = 0; f < fields.size(); ++f) {
      const auto& linked = m_.linked_holders(f);
      if (linked.size() < 2 || linked.size() != m_.all_holders(f).size()) continue;
      std::shared_ptr<Bitset> acc;
      bool complete = true;
      for (const auto& h : linked) {
        if (!side_to_field(h.table, h.column)) continue;
        const std::size_t e = edge(h.table, h.column);
        if (!to_field_done_[e]) {
          complete = false;
          break;
        }
        if (!acc) {
          acc = std::make_shared<Bitset>(*to_field_[e]);
        } else {
          acc->and_with(*to_field_[e]);
        }
      }
      if (!complete || !acc) continue;
      if (selected_[f]) acc->and_with(*selected_[f]);
      if (out.values.empty()) out.values.resize(fields.size());
      out.values[f] = std::move(acc);
    }
  }

  // Whether field f is selected alike in the state and the wider one (not at all in both, or
  // the same values).
  bool same_selection(std::uint32_t f) const {
    const auto& mine = state_fields_;
    auto a = mine->find(f);
    auto b = wider_->fields().find(f);
    if (a == mine->end() || b == wider_->fields().end()) return a == mine->end() && b == wider_->fields().end();
    return a->second == b->second;
  }

  // Whether a field of table t links it to another table.
  bool linked_to_others(std::uint32_t t) const {
    for (const Column& col : d_.tables()[t].columns)
      for (const auto& h : m_.linked_holders(col.field))
        if (h.table != t) return true;
    return false;
  }

  // The share of field f's values a constraint allows: about the share of rows it keeps.
  double share(const Bitset& allowed, std::uint32_t f) const {
    return static_cast<double>(allowed.count()) / static_cast<double>(d_.fields()[f].symbols.size() + 1);
  }

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
      to_field_[e] = std::make_shared<Bitset>(m_.values_on(t, c, rows));
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
  const SelectionState* wider_ = nullptr;  // a wider state whose rows are known, when one is
  const RowStates* wider_rows_ = nullptr;
  const std::map<std::uint32_t, std::vector<std::uint32_t>>* state_fields_ = nullptr;
  std::vector<std::shared_ptr<const Bitset>> selected_;  // per field
  std::vector<std::size_t> edge_base_;                   // edges: one per table column
  std::vector<int8_t> side_to_table_, side_to_field_;
  std::vector<std::shared_ptr<const Bitset>> to_table_, to_field_;
  std::vector<std::shared_ptr<const Bitset>> matched_;
  std::vector<std::uint8_t> to_table_done_, to_field_done_;
};

}  // namespace

std::shared_ptr<RowStates> infer_rows(const AssociativeModel& model, const SelectionState& state,
                                      const SelectionState* wider, const RowStates* wider_rows) {
  return Evaluator(model, state, wider, wider_rows).run();
}

}  // namespace assoc::detail
