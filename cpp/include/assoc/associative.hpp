#pragma once
// Linking tables by shared field names: key fields, and the model-wide passes that follow
// from them.
#include "assoc/data_model.hpp"

namespace assoc {

// Marks key fields (a field held by two or more tables) and fills per-field totals.
void link_tables(DataModel& model);

}  // namespace assoc
