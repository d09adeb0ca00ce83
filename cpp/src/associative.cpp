#include "assoc/associative.hpp"

#include <algorithm>

namespace assoc {

void link_tables(DataModel& model) {
  auto& fields = ModelAccess::fields(model);
  auto& tables = ModelAccess::tables(model);
  for (auto& f : fields) {
    f.src_tables.clear();
    f.total_count = 0;
  }
  for (std::uint32_t t = 0; t < tables.size(); ++t) {
    for (const auto& c : tables[t].columns) {
      Field& f = fields[c.field];
      f.src_tables.push_back(t);
      f.total_count = std::max<std::uint64_t>(f.total_count, c.index.non_null_count());
    }
  }
  for (auto& f : fields) f.is_key = f.src_tables.size() >= 2;
}

}  // namespace assoc
