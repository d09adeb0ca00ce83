#pragma once
// What every reader harness checks once a file was accepted: the table is internally consistent,
// it builds into a model (or the model refuses it with assoc::Error), and that model writes a QVD that reads back to the same table.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/symbol_table.hpp"

namespace assoc::fuzz {

// Aborts (a crash the fuzzer reports) when `ok` is false: a broken invariant, not bad input.
inline void require(bool ok) {
  if (!ok) std::abort();
}

// Every row's symbol index is NULL or inside the column's symbol table.
inline void check_loaded(const LoadedTable& table) {
  for (const LoadedColumn& column : table.columns) {
    require(column.index.size() == table.rows);
    for (std::size_t row = 0; row < table.rows; ++row) {
      const std::uint32_t symbol = column.index.get(row);
      require(symbol == kNull || symbol < column.symbols.size());
      if (symbol != kNull) (void)column.symbols.value(symbol);
    }
  }
}

// Builds the model, writes the (first data) table as QVD and reads it back: same rows and columns,
// and the same value in every cell.
inline void check_round_trip(LoadedTable&& loaded) {
  if (loaded.columns.empty()) return;
  std::shared_ptr<const DataModel> model;
  try {  // the model's own checks (e.g. a field named twice) refuse a table cleanly too
    ModelBuilder builder;
    builder.add(std::move(loaded));
    model = builder.build();
  } catch (const Error&) {
    return;
  }
  const Table* table = nullptr;
  for (const Table& t : model->tables()) {
    if (!t.is_system && !t.is_synthetic) {
      table = &t;
      break;
    }
  }
  if (table == nullptr) return;
  const std::vector<std::uint8_t> bytes = write_qvd(*model, *table);
  const LoadedTable again = read_qvd(bytes.data(), bytes.size());
  require(again.rows == table->rows);
  require(again.columns.size() == table->columns.size());
  for (std::size_t c = 0; c < table->columns.size(); ++c) {
    const Column& column = table->columns[c];
    const SymbolTable& symbols = model->fields()[column.field].symbols;
    const LoadedColumn& back = again.columns[c];
    for (std::size_t row = 0; row < table->rows; ++row) {
      const std::uint32_t a = column.index.get(row);
      const std::uint32_t b = back.index.get(row);
      require((a == kNull) == (b == kNull));
      if (a != kNull) require(SymbolTable::same_symbol(symbols.value(a), back.symbols.value(b)));
    }
  }
}

// One fuzzer input: `read` loads a table or throws assoc::Error (a clean refusal); what loads
// must pass the checks above.
template <class Read>
int fuzz_one_input(Read read) {
  LoadedTable table;
  try {
    table = read();
  } catch (const Error&) {
    return 0;
  }
  check_loaded(table);
  check_round_trip(std::move(table));
  return 0;
}

}  // namespace assoc::fuzz
