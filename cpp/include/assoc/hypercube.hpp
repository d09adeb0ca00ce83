#pragma once
// Hypercubes: aggregation under selections (Qlik's hypercube, embedded). DESIGN.md §2b holds
// the semantics; docs/hypercubes.md says how they run.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "assoc/selection.hpp"
#include "assoc/set_expression.hpp"
#include "assoc/value.hpp"

namespace assoc {

// What a hypercube shows: dimensions (field names), measures (expressions), order, suppression.
struct HypercubeSpec {
  std::vector<std::string> dimensions;
  std::vector<std::string> measures;
  // Column (dimension name or measure expression as given) and "asc", "desc" or, for a
  // dimension, "load" (symbol order). Columns not named sort after, dimensions in order.
  std::vector<std::pair<std::string, std::string>> sort;
  bool suppress_zero = false;
  bool suppress_missing = false;
  // Rows left in key order, not sorted: for the engine's own cubes whose order nobody reads
  // (an Aggr's virtual table under an order-free aggregation). Cubes with inter-record
  // functions are sorted all the same.
  bool unordered = false;
  // A pivot table's cube: its dimensions on top, by position in `dimensions`, outer first (the
  // others are on the left). The inter-record functions read its column and row segments (§5).
  bool pivot = false;
  std::vector<std::uint32_t> pivot_top;

  // One flat encoding per spec, for the result cache's key.
  std::vector<std::uint32_t> encode() const;
};

class Hypercube;

// A symbol's value (its number and text); NULL for kNull or a code past the table.
inline Value symbol_value(const SymbolTable& symbols, std::uint32_t code) {
  if (code == kNull || code >= symbols.size()) return Value::null();
  Value v;
  v.num = symbols.number(code);
  if (symbols.has_text(code)) {
    v.text = std::string(symbols.text(code));
    v.has_text = true;
  }
  return v;
}
// Row r's value of measure m of a computed cube: an Only measure's symbol, a text with its
// number, or the number.
Value cube_value(const DataModel& data, const Hypercube& cube, std::size_t m, std::size_t r);

// A computed hypercube: rows sorted, dimension values as symbol indexes, measure values as numbers.
class Hypercube {
 public:
  std::size_t size() const { return rows_; }
  const HypercubeSpec& spec() const { return spec_; }
  // The field each dimension shows.
  std::uint32_t dimension_field(std::size_t d) const { return dim_fields_.at(d); }
  // Each row's symbol index of dimension d, kNull for None.
  const std::vector<std::uint32_t>& codes(std::size_t d) const { return codes_.at(d); }
  // Each row's value of measure m, NaN for NULL.
  const std::vector<double>& values(std::size_t m) const { return values_.at(m); }
  // For a measure that is a single Only(F): the field F (the row values are its symbols),
  // else kNull.
  std::uint32_t only_field(std::size_t m) const { return only_fields_.at(m); }
  // For such a measure, each row's symbol of F (kNull for NULL); empty otherwise.
  const std::vector<std::uint32_t>& only_symbols(std::size_t m) const { return only_symbols_.at(m); }
  // The measure over every possible record (NaN for NULL), and its symbol for an Only measure.
  double total(std::size_t m) const { return totals_.at(m); }
  std::uint32_t total_symbol(std::size_t m) const { return total_symbols_.at(m); }
  // A measure's text on row r when its value has one (a text or a dual), else nullptr.
  const std::string* text(std::size_t m, std::size_t r) const {
    const auto& flags = text_flags_.at(m);
    return flags.empty() || !flags[r] ? nullptr : &texts_[m][r];
  }
  // The measure's total as a value (its text included), for measures that are not one Only.
  const Value& total_value(std::size_t m) const { return total_values_.at(m); }
  std::size_t byte_size() const;
  // With calculated dimensions: the model holding their derived columns (dimension_field and
  // the Only fields index its fields), else null (the cube's own model).
  const std::shared_ptr<const AssociativeModel>& derived_model() const { return derived_model_; }
  // A calculated dimension's one source field (a selection in its values selects there), "" else.
  const std::string& calculated_source(std::size_t d) const {
    static const std::string none;
    return d < sources_.size() ? sources_[d] : none;
  }
  // For such a dimension: each symbol of the source field's result (a symbol of the
  // dimension's derived field, kNull for NULL); empty for other dimensions.
  const std::vector<std::uint32_t>& calculated_source_map(std::size_t d) const {
    static const std::vector<std::uint32_t> none;
    return d < source_maps_.size() ? source_maps_[d] : none;
  }

 private:
  friend class HypercubeBuilder;
  friend std::shared_ptr<const Hypercube> compute_hypercube(const AssociativeModel&, const SelectionState&,
                                                           const HypercubeSpec&, std::shared_ptr<const RowStates>,
                                                           const NamedStates*, const std::string&);
  std::shared_ptr<const AssociativeModel> derived_model_;
  std::vector<std::string> sources_;
  std::vector<std::vector<std::uint32_t>> source_maps_;
  HypercubeSpec spec_;
  std::size_t rows_ = 0;
  std::vector<std::uint32_t> dim_fields_;
  std::vector<std::vector<std::uint32_t>> codes_;
  std::vector<std::vector<double>> values_;
  std::vector<std::uint32_t> only_fields_;
  std::vector<std::vector<std::uint32_t>> only_symbols_;
  std::vector<double> totals_;
  std::vector<std::uint32_t> total_symbols_;
  std::vector<std::vector<std::string>> texts_;        // per measure: empty, or per row
  std::vector<std::vector<std::uint8_t>> text_flags_;  // per measure: empty, or per row 1 with a text
  std::vector<Value> total_values_;
};

// The hypercube of `spec` under a selection state: found in the engine's result cache, or
// computed (on the thread pool) and cached. `rows` are the state's possible rows when the
// caller holds them. Unknown fields and malformed expressions throw Error.
std::shared_ptr<const Hypercube> hypercube(const AssociativeModel& model, const SelectionState& state,
                                           const HypercubeSpec& spec,
                                           std::shared_ptr<const RowStates> rows = nullptr);
// The same with the states set expressions may name: `states` holds "$" and the alternate
// states (null: "$" is `state`), and `state_name` is the name of `state`, the object's state
// that aggregations with no set identifier read.
std::shared_ptr<const Hypercube> hypercube(const AssociativeModel& model, const SelectionState& state,
                                           const HypercubeSpec& spec, std::shared_ptr<const RowStates> rows,
                                           const NamedStates* states, const std::string& state_name = "$");

}  // namespace assoc
