// libFuzzer harness for the QVD reader: any bytes either load or throw assoc::Error; what loads
// is consistent and survives a write/read round trip. The same bytes fed to a QvdStream in
// chunks of sizes drawn from the input give the same table or the same error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "assoc/qvd.hpp"
#include "assoc/qvd_stream.hpp"
#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"
#include "fuzz_checks.hpp"

namespace {

using assoc::fuzz::require;

// read_qvd's table, or its error message.
struct Outcome {
  std::optional<assoc::LoadedTable> table;
  std::string error;
};

template <class Read>
Outcome outcome_of(Read read) {
  Outcome o;
  try {
    o.table = read();
  } catch (const assoc::Error& e) {
    o.error = e.what();
  }
  return o;
}

void require_same(const Outcome& a, const Outcome& b) {
  require(a.error == b.error);
  require(a.table.has_value() == b.table.has_value());
  if (!a.table) return;
  const assoc::LoadedTable& x = *a.table;
  const assoc::LoadedTable& y = *b.table;
  require(x.name == y.name && x.rows == y.rows && x.columns.size() == y.columns.size());
  for (std::size_t c = 0; c < x.columns.size(); ++c) {
    const assoc::LoadedColumn& p = x.columns[c];
    const assoc::LoadedColumn& q = y.columns[c];
    require(p.name == q.name && p.symbols.size() == q.symbols.size());
    require(p.index.bit_width() == q.index.bit_width() && p.index.has_null() == q.index.has_null());
    for (std::uint32_t s = 0; s < p.symbols.size(); ++s)
      require(assoc::SymbolTable::same_symbol(p.symbols.value(s), q.symbols.value(s)));
    for (std::size_t row = 0; row < x.rows; ++row) require(p.index.get(row) == q.index.get(row));
  }
}

// The input streamed in chunks of 1 to 4096 bytes drawn from a generator seeded by the input.
assoc::LoadedTable streamed(const std::uint8_t* data, std::size_t size) {
  assoc::QvdStream stream(size);
  std::uint32_t seed = static_cast<std::uint32_t>(size) * 2654435761U ^ (size > 0 ? data[size - 1] : 0U);
  for (std::size_t at = 0; at < size;) {
    seed = seed * 1103515245U + 12345U;
    const std::size_t n = std::min<std::size_t>(size - at, 1 + (seed >> 16) % 4096);
    stream.feed(data + at, n);
    at += n;
  }
  return stream.finish();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  assoc::set_threads(1);  // one input at a time; parallel paths are covered by the test suite
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  require_same(outcome_of([&] { return assoc::read_qvd(data, size); }),
               outcome_of([&] { return streamed(data, size); }));
  return assoc::fuzz::fuzz_one_input([&] { return assoc::read_qvd(data, size); });
}
