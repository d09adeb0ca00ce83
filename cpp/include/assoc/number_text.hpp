#pragma once
// Numbers in text form: recognising them in loaded text and writing them canonically.
#include <string>
#include <string_view>

namespace assoc {

// Parses an integer or decimal number (optional sign, digits, fraction, exponent) that fills
// all of `s`; no spaces, no inf/nan, no hex. Returns false when `s` is not such a number.
bool parse_number(std::string_view s, double& out);

// The canonical text of a number: integers without a decimal point, others in the shortest
// form that reads back to the same double.
std::string format_number(double v);

// True when `text` is exactly the canonical text of `v` (so the text need not be stored).
bool is_canonical_text(std::string_view text, double v);

}  // namespace assoc
