#include "assoc/script_column.hpp"

#include <algorithm>

#include "assoc/error.hpp"

namespace assoc {

LoadedColumn column_from_values(std::string name, const std::vector<DualView>& values,
                                 const std::int32_t* codes, std::size_t n, CpuAccount* cpu) {
  CpuScope scope(cpu);
  constexpr std::uint32_t kUnseen = 0xFFFFFFFEU;
  const std::size_t n_values = values.size();
  // First pass, in row order: the values rows use, numbered by first occurrence.
  std::vector<std::uint32_t> remap(n_values, kUnseen);
  std::vector<std::uint32_t> order;
  std::size_t nulls = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const std::int32_t c = codes[r];
    if (c < 0) {
      ++nulls;
      continue;
    }
    if (static_cast<std::size_t>(c) >= n_values)
      throw Error("column '" + name + "': row " + std::to_string(r) + " refers to value " + std::to_string(c) +
                  " of " + std::to_string(n_values));
    if (remap[static_cast<std::size_t>(c)] == kUnseen) {
      remap[static_cast<std::size_t>(c)] = static_cast<std::uint32_t>(order.size());
      order.push_back(static_cast<std::uint32_t>(c));
    }
  }
  // Equal values collapse into one symbol here.
  SymbolTableBuilder builder;
  builder.reserve(order.size());
  for (const std::uint32_t v : order) remap[v] = builder.intern(values[v]);
  LoadedColumn column;
  column.name = std::move(name);
  column.symbols = builder.finish();
  column.index = PackedIndex::for_rows(n, column.symbols.size(), nulls);
  // A negative code read as unsigned is kNull, which the writer turns into the NULL code.
  const auto* rows = reinterpret_cast<const std::uint32_t*>(codes);
  parallel_ranges(
      n, 64, [&](std::size_t b, std::size_t e) { column.index.write_rows(b, e - b, rows + b, remap.data()); }, cpu);
  return column;
}

void column_codes(const LoadedColumn& column, std::int32_t* out, CpuAccount* cpu) {
  const PackedIndex& index = column.index;
  auto* rows = reinterpret_cast<std::uint32_t*>(out);
  parallel_ranges(
      index.size(), 64, [&](std::size_t b, std::size_t e) { index.decode(b, e - b, rows + b); }, cpu);
}

}  // namespace assoc
