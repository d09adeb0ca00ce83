#pragma once
// Selections and their logical inference: which rows and values stay possible.
//
// Semantics (Qlik's associative logic):
// - Tables and fields form a bipartite link graph (a forest once loose tables are cut out);
//   a field held by two or more tables that are not loose links them.
// - A row agrees with a selection when its value of the selected field is selected (NULL
//   never is). Selections reach other tables only through key fields.
// - A row is possible when it agrees with every selection in its table and, towards each
//   side of the link graph that holds a selection, its key value occurs on a possible row of
//   that side. So within the part of the tree that connects the selections a row must link to
//   possible rows on every side; a table outside that part is reduced only through its link
//   towards it (a customer with no orders stays possible after selecting its region, and is
//   excluded once an order field is selected too). A NULL key links nothing.
// - A loose table takes no part in propagation: its rows are reduced by its own fields'
//   selections and by what the link graph allows for each of its key fields, and it passes
//   nothing on.
// - A value is possible when it occurs on a possible row; alternative when it is not
//   selected and would be possible were its own field's selection cleared; excluded
//   otherwise. A selected value stays selected even when other selections leave no possible
//   row for it.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/bitset.hpp"
#include "assoc/data_model.hpp"

namespace assoc {

class RowMask;

// A session's selections: per field, the selected symbols (sorted, unique; empty only after
// set_empty), and the session's row mask when section access reduces it (every state of the
// session carries the same one; no selection clears it).
class SelectionState {
 public:
  // Sets a field's selection; an empty list clears it.
  void set(std::uint32_t field, std::vector<std::uint32_t> symbols);
  // Selects no value of a field (set analysis' empty element set): no row agrees with it.
  void set_empty(std::uint32_t field) {
    fields_[field].clear();
    searches_.erase(field);
  }
  void clear(std::uint32_t field) {
    fields_.erase(field);
    searches_.erase(field);
  }
  void clear() {
    fields_.clear();
    searches_.clear();
  }
  // The search text that made a field's selection (GetFieldSelections and the current
  // selections show it); any other change of the field's selection forgets it. A field
  // without a selection keeps none.
  void set_search(std::uint32_t field, std::string text);
  const std::string* search(std::uint32_t field) const {
    const auto it = searches_.find(field);
    return it == searches_.end() ? nullptr : &it->second;
  }
  bool empty() const { return fields_.empty(); }
  bool has(std::uint32_t field) const { return fields_.count(field) != 0; }
  const std::map<std::uint32_t, std::vector<std::uint32_t>>& fields() const { return fields_; }
  // The same state without one field's selection.
  SelectionState without(std::uint32_t field) const;
  // One flat encoding per state, the result cache's key (the mask's serial included).
  std::vector<std::uint32_t> encode() const;
  // Section access: the rows the state may reach at all (null: every row).
  const std::shared_ptr<const RowMask>& mask() const { return mask_; }
  void set_mask(std::shared_ptr<const RowMask> mask) { mask_ = std::move(mask); }
  // The state with no selection and the same mask (set identifier 1).
  SelectionState unselected() const {
    SelectionState s;
    s.mask_ = mask_;
    return s;
  }

 private:
  std::map<std::uint32_t, std::vector<std::uint32_t>> fields_;
  std::map<std::uint32_t, std::string> searches_;
  std::shared_ptr<const RowMask> mask_;
};

// The possible rows of every table under one selection state.
struct RowStates {
  std::vector<std::shared_ptr<const Bitset>> rows;  // per table; null: every row is possible
  std::vector<std::uint64_t> possible;              // per table: possible rows
  // Per field, its values on the possible rows where the inference found them on the way (a
  // key field that a selection reaches through a linked table); null, or absent: not found.
  std::vector<std::shared_ptr<const Bitset>> values;
  const Bitset* values_of(std::uint32_t field) const { return field < values.size() ? values[field].get() : nullptr; }
  // Per table whose possible rows one constraint made: exactly the rows whose column `column`
  // holds one of the values `allowed` (so that column's values on them are `allowed` less
  // those it never holds). Absent, or null `allowed`: rows made otherwise.
  struct OneConstraint {
    std::uint32_t column = 0;
    std::shared_ptr<const Bitset> allowed;
  };
  std::vector<OneConstraint> constrained;
  const OneConstraint* constraint_of(std::uint32_t table) const {
    return table < constrained.size() && constrained[table].allowed ? &constrained[table] : nullptr;
  }
  std::size_t byte_size() const;
};

// The four states of a field's value under a selection state.
// The four states partition a field's values (kValueStates); kSelectedExcluded is the part of
// kSelected that other selections exclude (Qlik's XS).
enum class ValueState : std::uint8_t { kSelected, kPossible, kAlternative, kExcluded, kSelectedExcluded };
inline constexpr ValueState kValueStates[] = {ValueState::kSelected, ValueState::kPossible, ValueState::kAlternative,
                                              ValueState::kExcluded};
// "selected", "possible", "alternative", "excluded".
std::string_view name_of(ValueState state);
// The state of that name; throws Error for any other name.
ValueState value_state_named(std::string_view name);

// One field's values under one selection state: bitsets over its symbols (each has one bit
// more, for NULL, which is never set). Every symbol is in exactly one of the four, but under
// a row mask a symbol off the mask's rows is in none.
struct FieldStates {
  Bitset selected;
  Bitset possible;     // not selected, on a possible row
  Bitset alternative;  // not selected, possible were the field's own selection cleared
  Bitset excluded;     // none of the above
  Bitset selected_excluded;  // selected, but on no possible row (other selections exclude it)
  std::uint64_t n_selected = 0, n_possible = 0, n_alternative = 0, n_excluded = 0, n_selected_excluded = 0;
  const Bitset& values(ValueState state) const;
  std::uint64_t count(ValueState state) const;
  std::size_t byte_size() const;
};

// A built model with what inference needs: the link graph and value look-ups. Results are
// kept in the engine's ResultCache, keyed by this object and the selection state.
class AssociativeModel : public std::enable_shared_from_this<AssociativeModel> {
 public:
  static std::shared_ptr<const AssociativeModel> create(std::shared_ptr<const DataModel> model);
  ~AssociativeModel();
  AssociativeModel(const AssociativeModel&) = delete;
  AssociativeModel& operator=(const AssociativeModel&) = delete;

  const DataModel& data() const { return *model_; }
  const std::shared_ptr<const DataModel>& data_ptr() const { return model_; }
  // A number no other model of this process has had: what a cache of facts about the model
  // (kept outside the engine) may key on, where an address could be reused once it is freed.
  std::uint64_t serial() const { return serial_; }

  // Field and table by name; throw Error when unknown.
  std::uint32_t field_id(const std::string& name) const;
  std::uint32_t table_id(const std::string& name) const;
  // The symbol of a number (any symbol with that numeric part) or of a text (a symbol with
  // that text; the first when several have it), kNull when the field has none.
  std::uint32_t find_number(std::uint32_t field, double value) const;
  std::uint32_t find_text(std::uint32_t field, std::string_view text) const;
  // The symbol of a value: by its number when it has one (numeric parts decide), else by its
  // text; kNull for NULL (no number, no text) and for a value the field does not have.
  std::uint32_t find_value(std::uint32_t field, const DualView& value) const;
  // Builds a field's value look-up ahead of find_* (heavy for large fields).
  void prepare_lookup(std::uint32_t field) const;
  // The symbols whose text is one of `texts`, in order, each with the position in `texts` of
  // the text it has: a stored text compares as it is, a number without one by its canonical
  // text (section access matches values on their texts). One pass over the field's symbols.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> symbols_with_texts(std::uint32_t field,
                                                                          const std::vector<std::string>& texts) const;

  // Each of a field's symbols' rank in value order (numbers by number, then texts bytewise;
  // the order a dimension sorts by): made on first ask and kept, the model being fixed.
  std::shared_ptr<const std::vector<std::uint32_t>> value_ranks(std::uint32_t field) const;
  // The same when made already, else null.
  std::shared_ptr<const std::vector<std::uint32_t>> value_ranks_found(std::uint32_t field) const;

  // Possible rows of every table (computed, or found in the result cache).
  std::shared_ptr<const RowStates> rows(const SelectionState& state) const;
  // The same given the rows of a wider state that `state` narrows (the same mask; every field
  // `wider` selects is selected in `state` too, with no values more): a table linked to no
  // other starts from the wider state's rows and matches only the fields whose selection
  // differs. Any other `wider` is not used.
  std::shared_ptr<const RowStates> rows(const SelectionState& state, const SelectionState& wider,
                                        const std::shared_ptr<const RowStates>& wider_rows) const;
  // One field's value states (found in the result cache, or computed from `rows`, the row
  // states of `state` when the caller has them).
  std::shared_ptr<const FieldStates> field_states(const SelectionState& state, std::uint32_t field,
                                                  std::shared_ptr<const RowStates> rows = nullptr) const;

  struct Holder {
    std::uint32_t table;
    std::uint32_t column;
  };
  // Tables holding a field: linked ones (not loose, not alone) and the rest.
  const std::vector<Holder>& linked_holders(std::uint32_t field) const { return linked_[field]; }
  const std::vector<Holder>& all_holders(std::uint32_t field) const { return holders_[field]; }

  // A field's values on the possible rows of `rows` (every table holding it): those the
  // inference found on the way, else a scan of each holder's column.
  Bitset values_on_possible(std::uint32_t field, const RowStates& rows) const;

  // The values column `column` of table `table` holds on `rows` (null: every row; those are
  // found once per column and kept, the model being fixed), a set of its field's symbols.
  Bitset values_on(std::uint32_t table, std::uint32_t column, const Bitset* rows) const;
  // The values column `column` of table `table` holds on any row when they were found before
  // (values_on with null rows); null otherwise.
  std::shared_ptr<const Bitset> values_found_on(std::uint32_t table, std::uint32_t column) const;

 private:
  struct Lookup;
  explicit AssociativeModel(std::shared_ptr<const DataModel> model);
  const Lookup& lookup(std::uint32_t field) const;
  std::shared_ptr<RowStates> compute_rows(const SelectionState& state, const SelectionState* wider = nullptr,
                                          const RowStates* wider_rows = nullptr) const;
  std::shared_ptr<FieldStates> compute_field(const SelectionState& state, std::uint32_t field,
                                             const RowStates& rows) const;

  std::shared_ptr<const DataModel> model_;
  std::uint64_t serial_;
  std::vector<std::vector<Holder>> holders_;  // per field, every table holding it
  std::vector<std::vector<Holder>> linked_;   // per field, holders that are not loose
  mutable std::mutex lookup_mutex_;
  mutable std::vector<std::unique_ptr<Lookup>> lookups_;
  mutable std::mutex ranks_mutex_;
  mutable std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> ranks_;  // per field
  mutable std::mutex column_mutex_;
  mutable std::vector<std::vector<std::shared_ptr<const Bitset>>> column_values_;  // per table, column
};

// Section access (docs/scripts.md): the rows one user's reduction leaves, as if the others were
// never loaded. It is the possible rows of the reduction (per field, the symbols it keeps)
// taken as a selection, computed once and shared by every session of that reduction; a
// session's states carry it, inference applies the reduction under every selection (so no
// selection, set expression or alternate state reaches past it), and a field's values off the
// mask's rows are in no value state at all. Per session over the shared model: no copy.
class RowMask {
 public:
  // The mask of `reduction` (its fields' kept symbols; a field absent is whole).
  static std::shared_ptr<const RowMask> create(std::shared_ptr<const AssociativeModel> model,
                                               const SelectionState& reduction);
  const AssociativeModel& model() const { return *model_; }
  const SelectionState& reduction() const { return reduction_; }
  // The rows kept, per table (null: every row).
  const std::shared_ptr<const RowStates>& rows() const { return rows_; }
  // The symbols of a field on kept rows (its values as the user sees the app; made on first
  // use). The NULL bit is never set.
  const Bitset& values(std::uint32_t field) const;
  // How many of a field's symbols are on kept rows.
  std::uint64_t cardinal(std::uint32_t field) const { return values(field).count(); }
  // Metadata's byte_size (DESIGN.md §3) of the app as the user holds it, counted from the
  // arrays it would have: a field's symbol table of only its values(), in their order; one
  // column of a table packed for only the kept rows, its codes those of that symbol table.
  // What the mask keeps whole is the model's own size.
  std::size_t field_byte_size(std::uint32_t field) const;
  std::size_t column_byte_size(std::uint32_t table, std::uint32_t column) const;
  // Unique per mask made (the result cache's key for what is computed under it).
  std::uint64_t serial() const { return serial_; }

 private:
  RowMask() = default;
  std::uint64_t serial_ = 0;
  std::shared_ptr<const AssociativeModel> model_;
  SelectionState reduction_;
  std::shared_ptr<const RowStates> rows_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Bitset>> values_;  // per field, made on first use
};

// One user's selection states in an app: the default state "$" and any number of named
// alternate states (DESIGN.md §2c), each an independent selection; any number of sessions per
// app. Calls on one session are serialised; sessions are independent of each other. Every
// call taking `state` names one of the session's states; an unknown name throws Error.
class Session {
 public:
  // `mask`: the user's section access reduction (null: none).
  Session(std::shared_ptr<const AssociativeModel> model, std::string user,
          std::shared_ptr<const RowMask> mask = nullptr);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& user() const { return user_; }
  const AssociativeModel& model() const { return *model_; }
  const std::shared_ptr<const RowMask>& mask() const { return mask_; }
  bool closed() const;
  // Ends the session (once; later calls do nothing).
  void close();

  // Adds an alternate state with no selection (an existing name, "$" included: no change).
  // Names are non-empty and not "1" or "0" (set identifiers).
  void add_state(const std::string& name);
  // Removes an alternate state ("$" cannot be removed).
  void remove_state(const std::string& name);
  // "$" first, then the alternate states by name.
  std::vector<std::string> state_names() const;
  // Every state's selection, by name ("$" included), as set expressions see them.
  std::map<std::string, SelectionState> selections() const;

  // Replaces a field's selection with `symbols` (an empty list clears it) and computes the
  // new state. Under a mask, symbols off its rows are dropped first (none left: cleared).
  void select(std::uint32_t field, std::vector<std::uint32_t> symbols, const std::string& state = "$");
  // Replaces a field's selection with the symbols of `values` (find_value); values the field
  // does not have, and NULLs, are ignored.
  void select_values(std::uint32_t field, const std::vector<DualView>& values, const std::string& state = "$");
  // Replaces a field's selection with symbols given by index (QIX element numbers); indexes
  // outside the symbol table are ignored.
  void select_indices(std::uint32_t field, const std::vector<std::int64_t>& indices, const std::string& state = "$");
  // Records the search text that made a field's present selection (none: nothing kept).
  void set_search(std::uint32_t field, std::string text, const std::string& state = "$");
  // The search text of a field's selection, "" when it was not made by a search.
  std::string search(std::uint32_t field, const std::string& state = "$") const;
  // The symbols selected in a field, ascending: the selection as made, read without inference
  // (field_states(...).selected holds the same).
  std::vector<std::uint32_t> selected(std::uint32_t field, const std::string& state = "$") const;
  void clear(const std::string& state = "$");
  void clear_field(std::uint32_t field, const std::string& state = "$");
  SelectionState selection(const std::string& state = "$") const;
  // The selection state and its possible rows, as one consistent pair.
  std::pair<SelectionState, std::shared_ptr<const RowStates>> snapshot(const std::string& state = "$") const;

  std::shared_ptr<const FieldStates> field_states(std::uint32_t field, const std::string& state = "$") const;
  std::uint64_t possible_rows(std::uint32_t table, const std::string& state = "$") const;

 private:
  struct State {
    SelectionState selection;
    std::shared_ptr<const RowStates> rows;
  };
  void require_open() const;
  State& slot(const std::string& name);
  const State& slot(const std::string& name) const;
  void evaluate(State& s);

  std::shared_ptr<const AssociativeModel> model_;
  std::string user_;
  std::shared_ptr<const RowMask> mask_;
  mutable std::mutex mutex_;
  std::map<std::string, State> states_;  // "$" always
  bool closed_ = false;
};

}  // namespace assoc
