#pragma once
// The one error type of the engine: every bad input ends here, and the bindings
// turn it into assoc.Error.
#include <stdexcept>
#include <string>

namespace assoc {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace assoc
