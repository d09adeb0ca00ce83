// libFuzzer harness for the CSV reader: any bytes either load or throw assoc::Error; what loads
// is consistent and survives a QVD write/read round trip.
#include <cstddef>
#include <cstdint>

#include "assoc/csv.hpp"
#include "assoc/error.hpp"
#include "assoc/thread_pool.hpp"
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  assoc::set_threads(1);  // one input at a time; parallel paths are covered by the test suite
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  assoc::LoadedTable table;
  try {
    table = assoc::read_csv(reinterpret_cast<const char*>(data), size, "T", nullptr);
  } catch (const assoc::Error&) {
    return 0;
  }
  assoc::fuzz::check_loaded(table);
  assoc::fuzz::check_round_trip(std::move(table));
  return 0;
}
