// The builder of a hypercube, private to the hypercube sources: it plans each measure over
// the aggregations it needs (hypercube_plan.cpp, hypercube_aggr.cpp, hypercube_window.cpp),
// computes them per node and gathers their columns (hypercube_inputs.cpp), then orders the
// rows (hypercube.cpp).
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "assoc/associative.hpp"
#include "assoc/expression.hpp"
#include "assoc/expression_plan.hpp"
#include "assoc/functions.hpp"
#include "assoc/hypercube.hpp"
#include "assoc/hypercube_aggregate.hpp"
#include "assoc/hypercube_join.hpp"
#include "assoc/inter_record.hpp"
#include "assoc/set_expression.hpp"

namespace assoc {

namespace detail {

using Slot = std::pair<std::uint32_t, std::uint32_t>;  // a node and a record set

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A TOTAL <…> aggregation inside another aggregation whose list names dimensions of the
// chart: its value per combination of those dimensions (keys projected onto them in the key
// space of the outer aggregation's part), and over every record for the totals row.
struct RowLookup {
  std::vector<std::uint8_t> keep;  // per chart dimension
  std::unordered_map<std::uint64_t, Value> values;
  Value empty;  // where a combination has no record
  Value all;
};

// An aggregation the per-node accumulators cannot compute (an expression argument, TOTAL, a
// function beyond Sum/Count/Avg/Min/Max/Only): its arguments are evaluated per record of its
// node (once per distinct value when they read one field) and reduced by the registry.
struct GenericTerm {
  const AggregateFunction* fn = nullptr;
  bool distinct = false;
  bool total = false;
  std::vector<std::uint8_t> keep_dim;  // TOTAL <…>: per chart dimension, 1 when it still groups
  std::vector<std::uint32_t> fields;   // the record inputs of the plans
  Plan value;
  Plan weight;
  bool has_weight = false;
  std::vector<Value> params;  // constant arguments by position (NULL for the record ones)
  // TOTAL <…> aggregations inside the argument (§4): each a value per row of the dimensions
  // it keeps, read by the plans after the record inputs.
  std::vector<RowLookup> lookups;
};

// Per generic term, its value per group key and over every record once.
struct GenericResults {
  std::vector<std::uint64_t> keys;  // the keys the records of non-TOTAL terms reach
  std::vector<std::unordered_map<std::uint64_t, Value>> values;
  std::vector<Value> totals;
};

// One input of a measure's plan: an aggregation at a node, fast or generic; or an
// aggregation over Aggr results (aggr >= 0); or an inter-record function (window >= 0).
struct MeasureInput {
  std::uint32_t node = 0;
  std::size_t term = 0;
  bool generic = false;
  std::uint32_t set = 0;  // the record set it reads: 0 the object's state, else a set expression
  std::int32_t aggr = -1;
  std::int32_t window = -1;
  // A TOTAL aggregation that keeps no chart dimension: every row reads the term's total.
  bool whole = false;
};

// An aggregation over Aggr results, or a bare Aggr (read as Only): its virtual table is a
// nested hypercube over the Aggr dimensions whose measures are the Aggr expressions, joined
// back to the chart rows on the dimension codes (through the data when the chart has
// dimensions the Aggr lacks: each virtual row in its first chart row, or in all of them with
// NODISTINCT). Its plans read the Aggr values, then the Aggr dimensions' values, per virtual row.
struct AggrTerm {
  AggKind kind = AggKind::kOnly;
  // Set analysis (§2.9): the Aggr's own set makes its virtual rows (0: none, the rows follow
  // its aggregations); the outer aggregation's set keeps the virtual rows its records reach
  // (0: the object's state, which keeps them all) and links them to the chart rows; the
  // outer scope's set is inherited by the aggregations inside Aggr.
  std::uint32_t aggr_set = 0;
  std::uint32_t outer_set = 0;
  std::shared_ptr<const SetNode> scope;
  bool distinct = false;
  bool nodistinct = false;
  std::vector<std::string> dims;
  std::vector<std::string> sorts;  // per dimension: "asc", "desc", "load" or "" (default)
  std::vector<std::uint32_t> dim_fields;
  std::vector<std::uint32_t> aggr_nodes;
  std::vector<std::size_t> field_dims;  // plan inputs after the Aggr values: their dimension
  Plan value;
  Plan weight;
  bool has_weight = false;
  std::vector<Value> params;
  // Dense: one unsorted Aggr dimension over a plain Sum, Count, Avg, Min or Max of a field of
  // a table that holds the dimension, read as is by Sum, Count, Avg, Min, Max or Only (or a
  // bare Aggr), no set anywhere: computed per symbol of the dimension (compute_aggr_dense).
  bool dense = false;
  Term dense_term;
  std::uint32_t dense_table = 0;
};

// An inter-record function of a measure (§5), or a Range function over such functions.
struct Window {
  InterRecordKind kind = InterRecordKind::kRowNo;
  bool total = false;
  Plan arg;  // over the measure's inputs
  std::int64_t offset = 1;
  std::int64_t count = 1;
  Plan count_plan;  // a count given per row
  bool dynamic_count = false;
  int mode = 0;
  int fmt = 0;
  std::size_t column = 0;
  // A Range function whose arguments are windows (count values each) or plans.
  const ScalarFunction* range = nullptr;
  std::vector<std::int32_t> range_windows;  // per argument: index in `parts`, or -1 for a plan
  std::vector<Plan> range_plans;
  std::vector<Window> parts;
};

// The segments of the sorted rows an inter-record function reads: `rows` lists the display
// positions segment by segment, each segment in display order; per display position, `at` is
// its index in `rows` and [first, last) its segment's range there.
struct Segments {
  bool none = false;
  std::vector<std::size_t> rows, at, first, last;
};

// A measure: its syntax tree, its plan over aggregation results, and where each input is computed.
struct MeasurePlan {
  Expression expr;
  Plan plan;
  std::vector<MeasureInput> inputs;
  std::vector<Window> windows;
};


}  // namespace detail

using detail::AggFunc;
using detail::AggrTerm;
using detail::DimPlace;
using detail::GenericResults;
using detail::GenericTerm;
using detail::JoinWalker;
using detail::KeyIndex;
using detail::LinkGraph;
using detail::lower;
using detail::MeasureInput;
using detail::MeasurePlan;
using detail::RowLookup;
using detail::Segments;
using detail::NodeAggregates;
using detail::RootedTree;
using detail::Slot;
using detail::Term;
using detail::Window;

class HypercubeBuilder {
 public:
  HypercubeBuilder(const AssociativeModel& model, const SelectionState& state, const HypercubeSpec& spec,
                   std::shared_ptr<const RowStates> rows, const NamedStates* states, std::string state_name)
      : model_(model), data_(model.data()), state_(state), graph_(model), cube_(std::make_shared<Hypercube>()),
        rows_(std::move(rows)), states_(states), state_name_(states ? std::move(state_name) : std::string("$")) {
    cube_->spec_ = spec;
    if (!states_) {  // the object's state alone, as the default state
      own_states_.emplace("$", state_);
      states_ = &own_states_;
    }
  }
  // A nested cube (an Aggr's virtual table): its measures are subtrees of parsed expressions,
  // each under the outer set of its scope. It reads the states of the cube that holds it.
  // `tuples`: its rows are the dimension combinations these records reach; `within`: it
  // keeps the rows these records reach.
  struct Nested {
    std::vector<std::pair<Expression, std::uint32_t>> exprs;
    std::vector<std::shared_ptr<const SetNode>> scopes;
    std::shared_ptr<const RowStates> tuples;
    std::shared_ptr<const RowStates> within;
  };
  HypercubeBuilder(const AssociativeModel& model, const SelectionState& state, const HypercubeSpec& spec,
                   std::shared_ptr<const RowStates> rows, const NamedStates* states, std::string state_name,
                   Nested nested)
      : HypercubeBuilder(model, state, spec, std::move(rows), states, std::move(state_name)) {
    nested_ = std::move(nested);
  }

  std::shared_ptr<Hypercube> run();

 private:
  // --- hypercube.cpp: the dimensions' places, the rows' keys, their order
  // Places each dimension at its node and groups the dimensions by the part of the forest
  // that holds them, parts in the order of their first dimension. A tuple key is each part's
  // key times the part's base (the product of the earlier parts' key spaces); within a part,
  // dimension d adds (symbol + 1) x its stride there. With one part, the strides are the
  // products of the earlier dimensions' symbol counts + 1.
  void place_dimensions();

  // The part holding a node's dimensions, or kNoPart when it holds none.
  std::size_t part_of_node(std::uint32_t node) const;

  // A measure's value per row (`rows`, indexes below `n`, in the order to evaluate them),
  // with texts kept where any row has one, and its total.
  template <class Rows, class ValueAt>
  void store_values(std::size_t m, std::size_t n, const Rows& rows, ValueAt&& value_at, Value total) {
    std::vector<double>& values = cube_->values_[m];
    values.resize(n);
    std::vector<std::string> texts(n);
    std::vector<std::uint8_t> flags(n, 0);
    bool any_text = false;
    for (const std::size_t r : rows) {
      Value v = value_at(r);
      values[r] = v.num;
      if (v.has_text) {
        texts[r] = std::move(v.text);
        flags[r] = 1;
        any_text = true;
      }
    }
    if (any_text) {
      cube_->texts_[m] = std::move(texts);
      cube_->text_flags_[m] = std::move(flags);
    }
    cube_->totals_[m] = total.num;
    cube_->total_values_[m] = std::move(total);
  }
  bool has_none(std::uint64_t key) const;

  // The rows' tuple keys, sorted: the cross product of each part's combinations.
  std::vector<std::uint64_t> row_keys(const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const;

  // One part's combinations as keys of that part, sorted and distinct: the tuples of the
  // inner join of the possible rows of the part of the forest that links its dimensions, and
  // those the records of its aggregations reach. The inner walk is skipped when an
  // aggregation's table lies on that tree: its rows reach every such tuple anyway (a key
  // field's records are its values, which miss the tuples of rows where it is NULL).
  std::vector<std::uint64_t> part_keys(std::size_t p,
                                       const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const;

  // A part's combinations of the inner join of these records (the walk of part_keys).
  std::vector<std::uint64_t> inner_keys(std::size_t p, const RowStates& rows) const;

  // The tuple keys these records reach, sorted: the cross product of each part's inner keys.
  std::vector<std::uint64_t> tuple_keys(const RowStates& rows) const;

  // Orders rows as the spec says, then by each dimension in turn.
  void sort_rows(std::vector<std::size_t>& order) const;

  // Dimension d's sort key per row (key order) under its direction (asc, desc, load): rows
  // show by ascending key; NaN (None) last.
  std::vector<double> dim_sort_key(std::size_t d, const std::string& direction) const;

  // Dimension d's direction in the spec's sort ("asc" when it names none).
  std::string dim_direction(std::size_t d) const;

  // Each row's rank of its value among the values shown: numbers ascending, then texts in
  // code-point order; NaN for None.
  std::vector<double> value_ranks(std::uint32_t field, const std::vector<std::uint32_t>& codes) const;
  void apply_order(const std::vector<std::size_t>& order);

  // --- hypercube_plan.cpp: measures bound to plans over aggregations, record sets
  [[noreturn]] static void fail(const std::string& text, std::size_t pos, const std::string& what);
  std::uint32_t field_index(const std::string& text, const ExprNode& x) const;

  // A field's column at a node: its column in a table, kIdentity at its key-field node.
  std::uint32_t column_at(std::uint32_t node, std::uint32_t field) const;
  MeasureInput fast_input(AggFunc func, std::uint32_t field, std::uint32_t set);

  // Throws for what may not stand inside an aggregation's argument (this phase): another
  // aggregation, a set expression.
  void check_argument(const std::string& text, const Expression& e, std::uint32_t n) const;
  void collect_fields(const std::string& text, const Expression& e, std::uint32_t n,
                      std::vector<std::pair<std::uint32_t, std::size_t>>& out) const;

  // The node whose records an aggregation of these fields reads: the one table holding them
  // all (a key field alone: its key-field node; no field: the largest table).
  std::uint32_t node_for(const std::string& text, const ExprNode& agg,
                         const std::vector<std::pair<std::uint32_t, std::size_t>>& fields) const;
  MeasureInput plan_aggregation(const std::string& text, const Expression& e, std::uint32_t n);
  void plan_measures();
  // TOTAL inside another aggregation (not inside Aggr, whose own cube folds its): computed
  // first, over all the records of its set (and its scope's) under the selections. Alone,
  // or when TOTAL <…> names no dimension of the cube, by a cube of no dimensions; it then
  // stands in the expression as a constant. TOTAL <…> naming dimensions of the cube: by a
  // cube over those dimensions, each row reading its combination's value (lookups_).
  void fold_inner_totals(Expression& e, std::uint32_t n, bool inside_aggregation);

  // Per node, the outer set of its scope (§2.8): a scope's set inherits its enclosing one.
  void mark_scopes(const std::string& text, const Expression& e, std::uint32_t n,
                   const std::shared_ptr<const SetNode>& outer);

  // The number of a record set (0: the object's state).
  std::uint32_t intern_set(const std::shared_ptr<const SetNode>& set);

  // Each record set's possible rows, once per distinct set.
  void evaluate_sets();

  static bool is_aggr_call(const ExprNode& x) { return x.kind == ExprNode::Kind::kCall && lower(x.name) == "aggr"; }

  // An inter-record function that reads other rows (Above, Below, Top, Bottom, Before, …).
  static bool is_shift_call(const ExprNode& x);

  // A Range function with an Above/Below/Top/Bottom argument: it reads several rows.
  static bool is_range_over_rows(const Expression& e, std::uint32_t n);

  // Binds an expression at measure level: aggregations, bare fields (Only), Aggr, and the
  // inter-record functions (not inside another's argument: `in_window`).
  Plan bind_measure(const std::string& text, const Expression& e, std::uint32_t root, MeasurePlan& plan, bool in_window);
  static bool is_constant(const Expression& e, std::uint32_t n);
  double constant_arg(const std::string& text, const Expression& e, std::uint32_t node, const std::string& what) const;

  // --- hypercube_aggr.cpp: aggregations over Aggr (nested cubes)
  // An aggregation over Aggr results (`agg` its node), or a bare Aggr (agg == aggr node).
  std::int32_t plan_aggr_term(const std::string& text, const Expression& e, std::uint32_t agg, std::uint32_t first_aggr,
                              std::uint32_t outer_set);
  static constexpr std::uint32_t kFieldInput = 1U << 30;

  // The first Aggr call in an aggregation's arguments (not inside another aggregation), or -1.
  static std::int64_t find_aggr(const Expression& e, std::uint32_t agg);

  // An Aggr dimension's sort words as a sort direction of the nested cube.
  std::string aggr_sort(const std::string& text, const ExprNode& d) const;

  // An Aggr term's column over the chart rows (`keys`) and its total (§4).
  void compute_aggr(const AggrTerm& t, const std::vector<std::uint64_t>& keys);

  // Marks a term dense when its shape allows (see AggrTerm::dense).
  void plan_dense_aggr(const Expression& e, const ExprNode& outer, const ExprNode& aggr, AggrTerm& t) const;

  // A dense term's column and total, as compute_aggr makes them, without the nested cube: the
  // inner aggregation per symbol of the Aggr dimension in one pass over its table, each
  // virtual row's chart rows through the link sets of the data. False (nothing computed)
  // where the chart's dimensions lie apart from the Aggr dimension's, or its symbols far
  // outnumber the table's rows.
  bool compute_aggr_dense(const AggrTerm& t, const std::vector<std::uint64_t>& keys);

  // The expression an Aggr term's nodes belong to.
  const Expression& aggr_expression(const AggrTerm& t) const;

  // --- hypercube_inputs.cpp: each input of a measure as a column over the rows
  // The key a row (or a record) has at a node once TOTAL <…> keeps only some dimensions:
  // `key` is in the part's key space.
  std::uint64_t project(std::uint64_t key, std::size_t p, const std::vector<std::uint8_t>& keep) const;

  // A row's key in the key space of a node's part.
  std::uint64_t part_key(std::uint64_t row_key, std::size_t p) const;
  // Each row's group among a node's aggregates (KeyIndex::kAbsent where the node has none), for
  // the rows' keys `keys` (sorted, unique) and the node's part `p`.
  std::vector<std::uint32_t> groups_of_rows(const NodeAggregates& agg, const std::vector<std::uint64_t>& keys,
                                            std::size_t p) const;

  // The generic terms of one node: each possible record's argument values, gathered per
  // group key it reaches (projected for TOTAL <…>), then reduced per group and over all.
  GenericResults run_generic(Slot slot, const std::vector<GenericTerm>& terms);

  // A measure that is one fast aggregation: its numbers straight from the accumulators (and,
  // for Only, its symbols).
  void fast_measure(std::size_t m, const MeasureInput& input, const std::map<Slot, NodeAggregates>& by_node,
                    const std::vector<std::uint64_t>& keys);

  // One input of a measure as values per row; returns its total.
  Value input_column(const MeasureInput& input, const std::map<Slot, NodeAggregates>& by_node,
                     const std::map<Slot, GenericResults>& generic, const std::vector<std::uint64_t>& keys,
                     std::vector<Value>& out) const;

  // --- hypercube_window.cpp: inter-record functions on the sorted rows
  // An inter-record function, or a Range function over them (§5).
  Window plan_window(const std::string& text, const Expression& e, std::uint32_t n, MeasurePlan& plan, bool in_range);

  // A row's value of measure m (Column(n)), from the cube's columns (row in key order).
  Value measure_value(std::size_t m, std::size_t r) const;

  // A measure with inter-record functions, on the sorted rows `order` (row indexes in key order).
  void window_measure(std::size_t m, std::vector<std::vector<Value>>& columns, std::vector<Value>& totals,
                      const std::vector<std::size_t>& order);

  // A window's argument per row (key order): the input's column when the argument is one
  // input (`columns`, the measure's inputs), else evaluated per row into `storage`.
  template <typename Eval>
  static const std::vector<Value>& arg_column(const Window& w, Eval& eval_at, const std::vector<std::size_t>& order,
                                              const std::vector<std::vector<Value>>& columns, std::vector<Value>& storage);

  // The segments an inter-record function reads (§5), over the display positions of `order`:
  // down a column (`horizontal` false) or across a pivot's columns; with TOTAL, the whole
  // column or row. `none` when the function has no segment there (across columns outside a pivot).
  Segments segments(bool horizontal, bool total, const std::vector<std::size_t>& order) const;

  // Above/Below/Top/Bottom/Before/After/First/Last at display position `pos`: the c-th value
  // of its range, nullptr for NULL (outside the segment).
  static const Value* shifted(const Window& w, const std::vector<Value>& a, const std::vector<std::size_t>& order,
                              const Segments& s, std::size_t pos, std::int64_t c);

  // Whether two rows (key order) share every dimension value but the last.
  // A straight table's segment: the codes of every dimension but the last in sort order.
  std::vector<const std::vector<std::uint32_t>*> segment_key() const;

  const AssociativeModel& model_;
  const DataModel& data_;
  const SelectionState& state_;
  LinkGraph graph_;
  std::shared_ptr<Hypercube> cube_;
  std::shared_ptr<const RowStates> rows_;
  std::vector<DimPlace> dims_;
  std::vector<std::uint32_t> dim_nodes_;
  // A part of the forest that holds dimensions: its nodes, its key space, its base in a row's
  // key, and every dimension placed with its stride within the part (0 for other parts').
  struct Part {
    std::vector<std::uint8_t> reached;
    std::uint64_t space = 1;
    std::uint64_t base = 1;
    std::vector<DimPlace> dims;
  };
  static constexpr std::size_t kNoPart = ~std::size_t{0};
  std::vector<Part> parts_;
  const std::vector<DimPlace> no_dims_;
  std::uint64_t key_space_ = 1;
  // Per node and record set, the aggregations it computes, and the other aggregations.
  std::map<Slot, std::vector<Term>> terms_;
  // The slots of terms read per row (not only as a TOTAL): their records bring chart rows.
  std::set<Slot> grouped_slots_;
  std::map<Slot, std::vector<GenericTerm>> generic_;
  // Set analysis: the states sets name, the record sets the aggregations read (0: the object's
  // state, rows_), each distinct set once, and per expression node the set of its scope.
  const NamedStates* states_ = nullptr;
  NamedStates own_states_;
  std::string state_name_;
  std::vector<std::shared_ptr<const SetNode>> sets_{nullptr};
  std::map<std::string, std::uint32_t> set_index_;
  std::vector<std::shared_ptr<const RowStates>> set_rows_;
  std::vector<std::shared_ptr<const SetNode>> scope_;
  std::string set_text_;  // the text of the measure that wrote each set, for errors
  std::vector<std::string> set_texts_{""};
  std::vector<MeasurePlan> measures_;
  Nested nested_;
  // The current measure's TOTAL <…> aggregations inside another: node -> its lookup.
  std::unordered_map<std::uint32_t, RowLookup> lookups_;
  std::vector<AggrTerm> aggr_terms_;
  std::vector<std::vector<Value>> aggr_columns_;  // per Aggr term, per row (in key order)
  std::vector<Value> aggr_totals_;
};

}  // namespace assoc
