#include "assoc/script_column.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "assoc/error.hpp"

namespace assoc {

namespace {

// Re-packs a column's rows through `remap` (old symbol index -> new index or kNull).
PackedIndex repack(const PackedIndex& index, const std::vector<std::uint32_t>& remap, std::uint32_t n_symbols,
                   CpuAccount* cpu) {
  const std::size_t n = index.size();
  std::vector<std::uint32_t> rows(n);
  std::atomic<std::size_t> nulls{0};
  parallel_ranges(
      n, 64,
      [&](std::size_t b, std::size_t e) {
        index.decode(b, e - b, rows.data() + b);
        std::size_t k = 0;
        for (std::size_t r = b; r < e; ++r) k += rows[r] == kNull || remap[rows[r]] == kNull;
        nulls += k;
      },
      cpu);
  PackedIndex out = PackedIndex::for_rows(n, n_symbols, nulls.load());
  parallel_ranges(
      n, 64, [&](std::size_t b, std::size_t e) { out.write_rows(b, e - b, rows.data() + b, remap.data()); }, cpu);
  return out;
}

// out[i] = the symbol of values[at[i]] (values[i] when `at` is null; kNull for NULL), interned
// in that order: values that are all numbers without texts go through intern_numbers at once.
void intern_in_order(SymbolTableBuilder& builder, const std::vector<ScriptValue>& values, const std::uint32_t* at,
                     std::size_t n, std::uint32_t* out) {
  const auto value = [&](std::size_t i) -> const ScriptValue& { return values[at != nullptr ? at[i] : i]; };
  bool numbers = true;
  for (std::size_t i = 0; i < n && numbers; ++i) {
    const ScriptValue& v = value(i);
    numbers = !v || (v->has_number() && !v->has_text);
  }
  if (!numbers) {
    builder.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const ScriptValue& v = value(i);
      out[i] = v ? builder.intern(*v) : kNull;
    }
    return;
  }
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const ScriptValue& v = value(i);
    x[i] = v ? v->number : std::numeric_limits<double>::quiet_NaN();  // NaN: NULL
  }
  builder.intern_numbers(x.data(), n, out);
}

}  // namespace

LoadedColumn column_from_values(std::string name, const std::vector<ScriptValue>& values,
                                 const std::int32_t* codes, std::size_t n, CpuAccount* cpu) {
  constexpr std::uint32_t kUnseen = 0xFFFFFFFEU;
  const std::size_t n_values = values.size();
  // First pass, in row order: the values rows use, numbered by first occurrence.
  std::vector<std::uint32_t> remap(n_values, kUnseen);
  std::vector<std::uint32_t> order;
  for (std::size_t r = 0; r < n; ++r) {
    const std::int32_t c = codes[r];
    if (c < 0) continue;
    if (static_cast<std::size_t>(c) >= n_values)
      throw Error("column '" + name + "': row " + std::to_string(r) + " refers to value " + std::to_string(c) +
                  " of " + std::to_string(n_values));
    if (remap[static_cast<std::size_t>(c)] == kUnseen) {
      remap[static_cast<std::size_t>(c)] = 0;
      order.push_back(static_cast<std::uint32_t>(c));
    }
  }
  // Equal values collapse into one symbol here; NULL values make NULL rows.
  SymbolTableBuilder builder;
  std::vector<std::uint32_t> symbols(order.size());
  intern_in_order(builder, values, order.data(), order.size(), symbols.data());
  bool null_values = false;
  for (std::size_t i = 0; i < order.size(); ++i) {
    remap[order[i]] = symbols[i];
    null_values = null_values || symbols[i] == kNull;
  }
  std::size_t nulls = 0;
  for (std::size_t r = 0; r < n; ++r) nulls += codes[r] < 0 || (null_values && remap[static_cast<std::size_t>(codes[r])] == kNull);
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

LoadedColumn column_mapping_symbols(std::string name, const LoadedColumn& source,
                                    const std::vector<ScriptValue>& values, CpuAccount* cpu) {
  if (values.size() != source.symbols.size())
    throw Error("column '" + name + "': " + std::to_string(values.size()) + " values for " +
                std::to_string(source.symbols.size()) + " symbols");
  SymbolTableBuilder builder;
  std::vector<std::uint32_t> remap(values.size());
  intern_in_order(builder, values, nullptr, values.size(), remap.data());
  bool same_rows = true;
  for (std::size_t k = 0; k < values.size() && same_rows; ++k) same_rows = remap[k] == k;
  LoadedColumn column;
  column.name = std::move(name);
  column.symbols = builder.finish();
  column.index = same_rows ? source.index : repack(source.index, remap, column.symbols.size(), cpu);
  return column;
}

void replace_symbols(LoadedColumn& column, const std::vector<DualView>& values, CpuAccount* cpu) {
  if (values.size() != column.symbols.size())
    throw Error("column '" + column.name + "': " + std::to_string(values.size()) + " new symbols for " +
                std::to_string(column.symbols.size()));
  SymbolTableBuilder builder;
  builder.reserve(values.size());
  std::vector<std::uint32_t> remap(values.size());
  bool merged = false;
  for (std::size_t k = 0; k < values.size(); ++k) {
    remap[k] = builder.intern(values[k]);
    merged = merged || remap[k] != k;
  }
  // The values may point into the old symbols: they are replaced only after every intern.
  column.symbols = builder.finish();
  if (merged) column.index = repack(column.index, remap, column.symbols.size(), cpu);
}

std::vector<std::uint32_t> number_candidates(const SymbolTable& symbols, std::string_view allowed, CpuAccount* cpu) {
  std::vector<std::uint32_t> out;
  if (!symbols.any_text()) return out;
  bool ok[256] = {};
  for (const char ch : allowed) ok[static_cast<unsigned char>(ch)] = true;
  const std::uint32_t n = symbols.size();
  constexpr std::uint32_t kChunks = 64;
  const std::uint32_t step = (n + kChunks - 1) / kChunks;
  std::vector<std::vector<std::uint32_t>> found(kChunks);
  parallel_for(
      kChunks,
      [&](std::size_t c) {
        const std::uint32_t begin = static_cast<std::uint32_t>(c) * step;
        const std::uint32_t end = std::min(n, begin + step);
        for (std::uint32_t k = begin; k < end; ++k) {
          if (!symbols.has_text(k) || symbols.has_number(k)) continue;
          bool all_allowed = true, digit = false;
          for (const char ch : symbols.text(k)) {
            const auto b = static_cast<unsigned char>(ch);
            all_allowed = all_allowed && ok[b];
            digit = digit || (b >= '0' && b <= '9');
          }
          if (all_allowed && digit) found[c].push_back(k);
        }
      },
      cpu);
  for (const auto& f : found) out.insert(out.end(), f.begin(), f.end());
  return out;
}

void column_codes(const LoadedColumn& column, std::int32_t* out, CpuAccount* cpu) {
  const PackedIndex& index = column.index;
  auto* rows = reinterpret_cast<std::uint32_t*>(out);
  parallel_ranges(
      index.size(), 64, [&](std::size_t b, std::size_t e) { index.decode(b, e - b, rows + b); }, cpu);
}

}  // namespace assoc
