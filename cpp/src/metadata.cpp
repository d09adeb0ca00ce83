#include "assoc/metadata.hpp"

namespace assoc {

// System tables ($$SysTable 1, $$SysTable 2) are the engine's own: `tables` lists the data
// tables (synthetic key tables included) and `src_tables` names only those, so a system
// field reports no source table. Their bytes still count in static_byte_size.
ModelMetadata describe(const DataModel& model) {
  ModelMetadata md;
  const auto& rm = model.reload_meta();
  md.cpu_time_spent_ms = rm.cpu_time_ns / 1000000;
  md.logical_cores = rm.logical_cores;
  md.total_memory = static_cast<std::int64_t>(rm.total_memory);
  md.static_byte_size = static_cast<std::int64_t>(model.static_byte_size());
  const auto& tables = model.tables();
  for (const auto& f : model.fields()) {
    FieldMetadata fm;
    fm.name = f.name;
    for (auto t : f.src_tables)
      if (!tables[t].is_system) fm.src_tables.push_back(tables[t].name);
    fm.is_system = f.is_system;
    fm.is_hidden = f.is_hidden;
    fm.cardinal = f.symbols.size();
    fm.total_count = static_cast<std::int64_t>(f.total_count);
    fm.is_numeric = f.symbols.all_numeric();
    fm.comment = f.comment;
    fm.tags = f.tags();
    fm.byte_size = static_cast<std::int64_t>(f.symbols.byte_size());
    md.fields.push_back(std::move(fm));
  }
  const auto& fields = model.fields();
  for (const auto& t : tables) {
    if (t.is_system) continue;
    TableMetadata tm;
    tm.name = t.name;
    tm.is_system = t.is_system;
    tm.is_loose = t.is_loose;
    tm.no_of_rows = static_cast<std::int64_t>(t.rows);
    tm.no_of_fields = static_cast<std::int64_t>(t.columns.size());
    for (const auto& c : t.columns) tm.no_of_key_fields += fields[c.field].is_key ? 1 : 0;
    tm.byte_size = static_cast<std::int64_t>(t.byte_size());
    tm.comment = t.comment;
    md.tables.push_back(std::move(tm));
  }
  return md;
}

}  // namespace assoc
