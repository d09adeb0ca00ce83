#pragma once
// Logical inference: the possible rows of every table under one selection state.
#include <memory>

#include "assoc/selection.hpp"

namespace assoc::detail {

// Computes the possible rows of every table for `state` by passing messages along the link
// forest (rules: selection.hpp). With the rows of a wider state (see AssociativeModel::rows),
// a table linked to no other starts from them and matches only the fields selected otherwise.
std::shared_ptr<RowStates> infer_rows(const AssociativeModel& model, const SelectionState& state,
                                      const SelectionState* wider = nullptr, const RowStates* wider_rows = nullptr);

}  // namespace assoc::detail
