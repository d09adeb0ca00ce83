#pragma once
// Chart functions of the selection state (spec chart-expressions §6): GetSelectedCount,
// GetPossibleCount and GetFieldSelections. They read no record, so an object folds each call
// into a constant under its states before it plans its expressions.
#include <cstdint>
#include <string>
#include <string_view>

#include "assoc/expression.hpp"
#include "assoc/selection.hpp"
#include "assoc/set_expression.hpp"

namespace assoc {

struct StateFunction {
  const char* name;
  std::uint8_t min_args;
  std::uint8_t max_args;
};

// The state function of that name (any case), or nullptr.
const StateFunction* find_state_function(std::string_view name);

// Replaces every call of a state function in `e` by its value: its state argument names one
// of `states` ('$' the default), else the object's own state `object_state`. A field that is
// not in the model, or an argument that is no constant, throws Error with its position.
void fold_state_functions(Expression& e, const AssociativeModel& model, const NamedStates& states,
                          const std::string& object_state);

}  // namespace assoc
