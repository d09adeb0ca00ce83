// libFuzzer harness for the QVD reader: any bytes either load or throw assoc::Error; what loads
// is consistent and survives a write/read round trip.
#include <cstddef>
#include <cstdint>

#include "assoc/qvd.hpp"
#include "assoc/thread_pool.hpp"
#include "fuzz_checks.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  assoc::set_threads(1);  // one input at a time; parallel paths are covered by the test suite
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return assoc::fuzz::fuzz_one_input([&] { return assoc::read_qvd(data, size); });
}
