#pragma once
// Linking tables by shared field names: synthetic keys, key fields, loose tables and the
// system tables, the model-wide passes that run once when a model is built.
//
// Rules (what Qlik users expect):
// - Synthetic keys. While two tables share two or more fields, the largest such shared set
//   (ties: the first pair of tables in load order) moves out of every table that holds all of
//   it into a new table `$Syn N Table`, which holds each combination that occurs once, and
//   a field `$Syn N` that the tables keep in place of the shared fields. A synthetic key table
//   may itself share fields with another table, which gives further synthetic keys.
//   NULL key parts take part in a combination: rows that agree on every part, NULLs included,
//   share one `$Syn N` value (so no value of a part is lost); a row whose parts are all NULL
//   gets a NULL `$Syn N` and links nothing.
// - Key fields: a field held by two or more data tables.
// - Loose tables: while the links (tables and key fields as a bipartite graph) hold a cycle,
//   the largest table on a cycle (ties: the first in load order) becomes loose.
// - System tables: `$$SysTable 1` holds one row per data table and column ($Table, $Field,
//   $FieldNo), `$$SysTable 2` one row per data table ($Table, $Rows, $Fields); they link to
//   each other through `$Table` and to no data table. Their fields are system and hidden.
#include "assoc/data_model.hpp"

namespace assoc {

// Runs every pass above on a model whose tables are loaded; fills src_tables and totals.
void link_tables(DataModel& model);

}  // namespace assoc
