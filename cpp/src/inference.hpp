#pragma once
// Logical inference: the possible rows of every table under one selection state.
#include <memory>

#include "assoc/selection.hpp"

namespace assoc::detail {

// Computes the possible rows of every table for `state` by passing messages along the link
// forest (rules: selection.hpp).
std::shared_ptr<RowStates> infer_rows(const AssociativeModel& model, const SelectionState& state);

}  // namespace assoc::detail
