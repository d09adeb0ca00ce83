#pragma once
// The parts of the function library kept in files of their own; functions.cpp registers them.
#include <span>
#include <string_view>
#include <vector>

#include "assoc/functions.hpp"

namespace assoc {

// UTF-8 text as code points (functions.cpp).
std::vector<char32_t> code_points(std::string_view s);

std::span<const ScalarFunction> calendar_functions();  // functions_calendar.cpp
std::span<const ScalarFunction> hash_functions();      // functions_hash.cpp
std::span<const ScalarFunction> codepage_functions();  // functions_codepage.cpp

}  // namespace assoc
