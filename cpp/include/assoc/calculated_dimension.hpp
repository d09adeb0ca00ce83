#pragma once
// Calculated dimensions (spec chart-expressions §7): a dimension written `=expr` becomes a
// derived column of one table (a symbol table of the results and a code per record), which
// the hypercube then treats like a field. docs/hypercubes.md says what is supported.
#include <memory>
#include <string>
#include <vector>

#include "assoc/selection.hpp"
#include "assoc/set_expression.hpp"

namespace assoc {

// True when the dimension is calculated (its text starts with '=').
inline bool is_calculated_dimension(const std::string& dimension) {
  return !dimension.empty() && dimension[0] == '=';
}

// A model with one more field per calculated dimension, in the table the expression reads.
struct CalculatedModel {
  std::shared_ptr<const AssociativeModel> model;
  std::vector<std::string> fields;  // per dimension: the field the derived model holds it as
  // Per dimension: the source field a selection in its values translates to ("" for a plain
  // field dimension, or when the expression reads several fields).
  std::vector<std::string> sources;
  // Per dimension with a source field: each of its symbols' result (a symbol of the derived
  // field, kNull for NULL); empty otherwise.
  std::vector<std::vector<std::uint32_t>> source_maps;
};

// The derived model for `dimensions` under a selection state (Aggr values depend on it;
// scalar expressions do not, and their derived model is cached per model). Throws Error for
// an expression over several tables or with an aggregation outside Aggr, naming the position
// in the dimension's text (the '=' is position 0).
CalculatedModel with_calculated_dimensions(const AssociativeModel& model, const SelectionState& state,
                                           std::shared_ptr<const RowStates> rows, const NamedStates* states,
                                           const std::string& state_name, const std::vector<std::string>& dimensions);

}  // namespace assoc
